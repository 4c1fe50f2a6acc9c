"""The similar-issues index of a study: every item's nearest neighbours among the study's items
by the cosine of their TF-IDF (title, body and comments). What the labeling page shows of it is
machines.similar_panel's.

The neighbours of every item are computed together and kept in the cache under the study and the
state of its items' texts (`CorpusState`), and as the study's latest index, which a page serves
while a newer one is computed in the background (machines.tasks.similar_index_task).
"""

from __future__ import annotations

from dataclasses import dataclass

from django.core.cache import cache
from django.db.models import Count, Max

from labeling.models import Study, StudyItem
from machines.prompts import sha256_of

TOP = 5
CACHE_SECONDS = 24 * 60 * 60
CHUNK = 512  # rows of the similarity matrix computed at once (CHUNK x items floats)
VECTORISER = {"sublinear_tf": True, "stop_words": "english", "max_features": 200_000}
INDEX_VERSION = 2  # bumped when the computation changes, so that no stale index is served

Neighbours = dict[int, list[tuple[int, float]]]


@dataclass(frozen=True)
class CorpusState:
    """Where a study's texts stand: `key` changes when its items or their issues change (an
    issue is stored again when a sync finds it changed, new comments included)."""

    study_id: int
    key: str
    items: int

    @property
    def cache_key(self) -> str:
        return f"machines:similar:{INDEX_VERSION}:{self.study_id}:{self.key}"

    @property
    def latest_cache_key(self) -> str:
        return f"machines:similar:{INDEX_VERSION}:{self.study_id}:latest"


def neighbours_of(texts: list[str], *, top: int = TOP) -> list[list[tuple[int, float]]]:
    """For each text, the `top` most similar other texts as (index, cosine), best first;
    texts sharing no word with any other have none."""
    # Here, not with the module: the item page imports it, and numpy and scikit-learn are for
    # the computation alone.
    import numpy as np
    from sklearn.feature_extraction.text import TfidfVectorizer

    empty: list[list[tuple[int, float]]] = [[] for _ in texts]
    if len(texts) < 2:
        return empty
    try:
        matrix = TfidfVectorizer(dtype=np.float32, **VECTORISER).fit_transform(texts)
    except ValueError:  # no word at all (every text empty or stop words only)
        return empty
    transposed = matrix.T.tocsc()
    n = matrix.shape[0]
    keep = min(top, n - 1)
    for start in range(0, n, CHUNK):
        # Rows are L2-normalised: their dot product is the cosine.
        block = (matrix[start : start + CHUNK] @ transposed).toarray()
        rows = np.arange(block.shape[0])
        block[rows, rows + start] = -1.0  # not its own neighbour
        best = np.argpartition(-block, keep - 1, axis=1)[:, :keep]
        for row, candidates in enumerate(best):
            scores = block[row, candidates]
            order = np.argsort(-scores, kind="stable")
            empty[start + row] = [
                (int(candidates[i]), round(float(scores[i]), 4)) for i in order if scores[i] > 0
            ]
    return empty


def study_corpus_state(*, study: Study) -> CorpusState:
    """Where the study's texts stand. One query."""
    state = StudyItem.objects.filter(study=study).aggregate(
        n=Count("id"), latest_item=Max("id"), latest_issue=Max("issue__stored_at")
    )
    return CorpusState(study_id=study.pk, key=sha256_of(state)[:16], items=state["n"])


def study_neighbours_compute(*, study: Study, state: CorpusState | None = None) -> Neighbours:
    """Compute the study's index (item id -> its nearest neighbours as (item id, cosine)) and
    keep it in the cache, under the state its texts were read in (`state`, when the caller read
    it just now) and as the study's latest."""
    from machines.classical import study_item_texts  # with numpy, as in neighbours_of

    state = state or study_corpus_state(study=study)
    item_ids, texts = study_item_texts(study=study)
    table = {
        item_ids[row]: [(item_ids[other], score) for other, score in found]
        for row, found in enumerate(neighbours_of(texts))
    }
    cache.set_many({state.cache_key: table, state.latest_cache_key: table}, CACHE_SECONDS)
    return table
