"""Similar issues for the labeling page: an item's nearest neighbours among the study's items
(machines.similar), with the near-copies flagged as duplicate candidates for screening.

A page view costs one query to read its five neighbours and, at most once in STATE_SECONDS per
study, one to read the state of the study's texts (a count over its items, which grows with the
study: kept in the cache, so that an item's page does not count the study each time). A study of
up to INLINE_MAX_ITEMS items computes an index that is out of date in the request (about a
second at that size); a larger one queues machines.tasks.similar_index_task and serves its
latest index meanwhile (or none, the first time), so no request grows with the study.
What a page shows of the neighbours is decided here too: their titles, always; their gold labels,
only where the study allows it and never of an item the viewer still has to label; never
people's or machines' labels.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from django.contrib.auth.models import AbstractBaseUser
from django.core.cache import cache

from common.prepared import PreparedQuery
from corpus.models import Issue
from corpus.selectors import issue_text_fields_of
from labeling.models import Assignment, Resolution, Study, StudyItem
from machines.similar import (
    CorpusState,
    Neighbours,
    study_corpus_state,
    study_neighbours_compute,
)

DUPLICATE_SCORE = 0.8  # cosine from which a neighbour is flagged as a duplicate candidate
INLINE_MAX_ITEMS = 2_000
QUEUED_SECONDS = 10 * 60  # a queued computation is not queued again meanwhile
# How long the state of a study's texts is trusted: new items and changed texts reach the
# similar issues within this time.
STATE_SECONDS = 60


@dataclass(frozen=True)
class SimilarIssue:
    item_id: int
    issue: Issue
    score: float
    duplicate: bool
    # (dimension name, category names) of the item's gold labels, when shown
    gold: list[tuple[str, list[str]]] = field(default_factory=list)


def study_neighbours(*, study: Study) -> Neighbours:
    """The study's index for its texts as they stand; for a large study whose index is out of
    date, the latest one while the new one is computed in the background."""
    state = study_corpus_state_recent(study=study)
    table = _table_read(state.cache_key)
    if table is not None:
        return table
    if state.items <= INLINE_MAX_ITEMS:
        return study_neighbours_compute(study=study, state=state)
    # cache.add: one queued computation per state, whatever the number of pages asking.
    if cache.add(f"{state.cache_key}:queued", True, QUEUED_SECONDS):
        # Imported here: the tasks bring Celery, which a process that sends none does not load.
        from machines.tasks import similar_index_task

        similar_index_task.delay(study.pk)
        table = cache.get(state.cache_key)  # computed already where tasks run inline
        if table is not None:
            return table
    return cache.get(state.latest_cache_key) or {}


# The tables this process read last, by cache key (a key names one state of a study's texts,
# so its table never changes): unpickling a study's whole table from the shared cache took some
# 20 ms of each page view at 2,000 items. Served only while the shared cache still holds the key.
_TABLES_READ: dict[str, Neighbours] = {}
TABLES_READ_MAX = 8


def _table_read(key: str) -> Neighbours | None:
    table = _TABLES_READ.get(key)
    if table is not None and cache.has_key(key):
        return table
    table = cache.get(key)
    if table is not None:
        if len(_TABLES_READ) >= TABLES_READ_MAX:
            _TABLES_READ.pop(next(iter(_TABLES_READ)))
        _TABLES_READ[key] = table
    return table


def study_corpus_state_recent(*, study: Study) -> CorpusState:
    """The state of the study's texts as read at most STATE_SECONDS ago."""
    key = state_cache_key(study.pk)
    state = cache.get(key)
    if state is None:
        state = study_corpus_state(study=study)
        cache.set(key, state, STATE_SECONDS)
    return state


def state_cache_key(study_id: int) -> str:
    return f"machines:similar:state:{study_id}"


def item_similar_issues(
    *, study: Study, item: StudyItem, user: AbstractBaseUser
) -> list[SimilarIssue]:
    """The item's similar issues as the labeling page shows them to this person."""
    neighbours = study_neighbours(study=study).get(item.pk, [])
    if not neighbours:
        return []
    ids = [int(other) for other, _ in neighbours]
    items = {other.pk: other for other in _NEIGHBOUR_ITEMS(study_id=study.pk, ids=ids)}
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


# Every labeling page reads them: built and compiled once for each number of neighbours
# (common.prepared). The panel shows a neighbour's name and title: not its texts, the largest
# columns.
_NEIGHBOUR_ITEMS = PreparedQuery(
    lambda *, study_id, ids: (
        StudyItem.objects.filter(study_id=study_id, pk__in=ids)
        .select_related("issue__repository")
        .defer(*issue_text_fields_of("issue"))
    ),
    values=("study_id", "ids"),
)


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
