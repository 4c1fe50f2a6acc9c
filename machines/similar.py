"""Similar issues for the labeling page: an item's nearest neighbours among the study's items by
the cosine of their TF-IDF (title, body and comments), with the near-copies flagged as duplicate
candidates for screening.

The neighbours of every item are computed together, the first time a page asks, and kept in the
cache under the study and the state of its items' texts, so that a page view costs one query to
read that state and one to read its five neighbours. What a page shows of the neighbours is
decided here too: their titles, always; their gold labels, only where the study allows it and
never of an item the viewer still has to label; never people's or machines' labels.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from django.contrib.auth.models import AbstractBaseUser
from django.core.cache import cache
from django.db.models import Count, Max

from corpus.models import Issue
from labeling.models import Assignment, Resolution, Study, StudyItem
from machines.classical import study_item_texts
from machines.prompts import sha256_of

TOP = 5
DUPLICATE_SCORE = 0.8  # cosine from which a neighbour is flagged as a duplicate candidate
CACHE_SECONDS = 24 * 60 * 60
CHUNK = 512  # rows of the similarity matrix computed at once (CHUNK x items floats)
VECTORISER = {"sublinear_tf": True, "stop_words": "english", "max_features": 200_000}
INDEX_VERSION = 1  # bumped when the computation changes, so that no stale index is served


@dataclass(frozen=True)
class SimilarIssue:
    item_id: int
    issue: Issue
    score: float
    duplicate: bool
    # (dimension name, category names) of the item's gold labels, when shown
    gold: list[tuple[str, list[str]]] = field(default_factory=list)


def neighbours_of(texts: list[str], *, top: int = TOP) -> list[list[tuple[int, float]]]:
    """For each text, the `top` most similar other texts as (index, cosine), best first;
    texts sharing no word with any other have none."""
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


def study_corpus_state(*, study: Study) -> str:
    """A short hash that changes when the study's items or their issues change (an issue is
    stored again when a sync finds it changed, new comments included). One query."""
    state = StudyItem.objects.filter(study=study).aggregate(
        n=Count("id"), latest_item=Max("id"), latest_issue=Max("issue__stored_at")
    )
    return sha256_of(state)[:16]


def study_neighbours(*, study: Study) -> dict[int, list[tuple[int, float]]]:
    """item id -> its nearest neighbours (item id, cosine) among the study's items, from the
    cache when the study's texts have not changed since it was computed."""
    key = f"machines:similar:{INDEX_VERSION}:{study.pk}:{study_corpus_state(study=study)}"
    table = cache.get(key)
    if table is None:
        item_ids, texts = study_item_texts(study=study)
        table = {
            item_ids[row]: [(item_ids[other], score) for other, score in found]
            for row, found in enumerate(neighbours_of(texts))
        }
        cache.set(key, table, CACHE_SECONDS)
    return table


def item_similar_issues(
    *, study: Study, item: StudyItem, user: AbstractBaseUser
) -> list[SimilarIssue]:
    """The item's similar issues as the labeling page shows them to this person."""
    neighbours = study_neighbours(study=study).get(item.pk, [])
    if not neighbours:
        return []
    ids = [other for other, _ in neighbours]
    items = {
        other.pk: other
        for other in StudyItem.objects.filter(study=study, pk__in=ids).select_related(
            "issue__repository"
        )
    }
    gold = _gold_shown(study=study, user=user, item_ids=ids)
    return [
        SimilarIssue(
            item_id=other,
            issue=items[other].issue,
            score=score,
            duplicate=score >= DUPLICATE_SCORE,
            gold=gold.get(other, []),
        )
        for other, score in neighbours
        if other in items
    ]


def _gold_shown(
    *, study: Study, user: AbstractBaseUser, item_ids: list[int]
) -> dict[int, list[tuple[str, list[str]]]]:
    """The gold labels of these items that the page may show: none unless the study allows
    it, and none of an item this person has an unsubmitted assignment of (a tie-breaker, a
    relabeling): that would tell them the answer before they gave theirs."""
    if not study.show_similar_gold:
        return {}
    open_items = set(
        Assignment.objects.filter(item_id__in=item_ids, annotator=user)
        .exclude(status=Assignment.Status.SUBMITTED)
        .values_list("item_id", flat=True)
    )
    shown: dict[int, list[tuple[str, list[str]]]] = {}
    resolutions = (
        Resolution.objects.filter(item_id__in=set(item_ids) - open_items)
        .select_related("dimension")
        .prefetch_related("categories")
        .order_by("item_id", "dimension__position")
    )
    for resolution in resolutions:
        names = sorted(category.name for category in resolution.categories.all())
        shown.setdefault(resolution.item_id, []).append((resolution.dimension.name, names))
    return shown
