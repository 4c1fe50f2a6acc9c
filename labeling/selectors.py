"""Reads: a user's studies and queue, the labeling page's data. Who may see what is decided in
labeling.access."""

import copy
import functools
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import TypeVar

from django.contrib.auth.models import AbstractBaseUser
from django.db import connection
from django.db.models import Count, F, Q, QuerySet

from common.prepared import PreparedQuery, prefetched_carry
from corpus.models import Issue, IssueComment, LinkedFix
from corpus.selectors import issue_text_fields_of, issue_thread
from labeling.access import study_list_visible_to
from labeling.models import (
    Annotation,
    Assignment,
    Resolution,
    Round,
    Study,
    StudyEvent,
    StudyItem,
)
from taxonomy.models import CodebookVersion, Dimension
from taxonomy.selectors import (
    categories_by_id,
    category_codebook_order,
    dimensions_of_version,
)


def study_list_for_user(*, user: AbstractBaseUser) -> QuerySet[Study]:
    """The studies the user may see (labeling.access), each with its number of items, newest
    first."""
    return (
        study_list_visible_to(user=user)
        .annotate(n_items=Count("items"))
        .order_by("-created_at", "-id")
    )


@dataclass
class QueueProgress:
    total: int
    done: int
    drafts: int
    todo: int
    skipped: int

    @property
    def percent(self) -> int:
        return round(100 * self.done / self.total) if self.total else 0


QUEUE_FILTERS = {
    "todo": [Assignment.Status.TODO],
    "drafts": [Assignment.Status.DRAFT],
    "done": [Assignment.Status.SUBMITTED],
    "skipped": [Assignment.Status.SKIPPED],
}


def queue_for_annotator(
    *,
    study: Study,
    user: AbstractBaseUser,
    status_filter: str | None = None,
    held_back: Collection[int] = (),
) -> QuerySet[Assignment]:
    """The annotator's assignments in the study, by item; not those of rounds `held_back` by
    the pilot gate (labeling.pilot_gate)."""
    # The assignment's own study, so that the database walks one's assignments in the study in
    # item order (assignment_queue_order) instead of sorting the study's items.
    assignments = (
        Assignment.objects.filter(study=study, annotator=user)
        .select_related("item__issue__repository")
        .defer(*issue_text_fields_of("item__issue"))
    )
    if held_back:
        assignments = assignments.exclude(item__round_id__in=held_back)
    if status_filter in QUEUE_FILTERS:
        assignments = assignments.filter(status__in=QUEUE_FILTERS[status_filter])
    return assignments.order_by("item_id")


def assignment_held_next(
    *, study: Study, user: AbstractBaseUser, held_back: Collection[int] = ()
) -> Assignment | None:
    """The annotator's own unfinished assignment to work on next (drafts, then to-do, oldest
    item first), or None; none of the rounds `held_back` by the pilot gate. Reads only: opening
    the next item by a link must not claim one."""
    rounds = sorted(held_back)
    found = Assignment.objects.raw(
        _held_next_sql(len(rounds), ranged=_ranged(), gated=False),
        _held_next_params(study, user, rounds),
    )
    return _draft_or_todo(found)


@dataclass(frozen=True)
class HeldNext:
    assignment: Assignment | None
    # A main round of the study may wait for its pilot (labeling.pilot_gate): `assignment` is
    # None, and the caller asks the gate which rounds to hold back.
    gate_may_wait: bool


def assignment_held_next_ungated(*, study: Study, user: AbstractBaseUser) -> HeldNext:
    """assignment_held_next, when no round of the study waits for its pilot, in the statement
    that checks that none does: one statement at every submit where the rounds' read made two.
    A round may wait when it is a main round not yet open after a pilot round with a target
    (labeling.pilot_gate); then nothing else is read, and `gate_may_wait` says so."""
    params = [study.pk, Round.Kind.MAIN, Round.Kind.PILOT]
    params += _held_next_params(study, user, [])
    found = list(Assignment.objects.raw(_held_next_sql(0, ranged=_ranged(), gated=True), params))
    if any(row.gate_may_wait for row in found):
        return HeldNext(assignment=None, gate_may_wait=True)
    return HeldNext(
        assignment=_draft_or_todo(row for row in found if row.pk is not None),
        gate_may_wait=False,
    )


def _ranged() -> bool:
    return connection.vendor == "postgresql"  # the status as a range: see _held_next_sql


def _held_next_params(study: Study, user: AbstractBaseUser, rounds: list[int]) -> list:
    params: list = []
    for status in (Assignment.Status.DRAFT, Assignment.Status.TODO):
        params += [user.pk, study.pk, study.pk, StudyItem.Status.OPEN]
        params += [StudyItem.Status.IN_RESOLUTION, *rounds]
        params += [status, status] if _ranged() else [status]
    return params


def _draft_or_todo(found: Iterable[Assignment]) -> Assignment | None:
    held = {assignment.status: assignment for assignment in found}
    return held.get(Assignment.Status.DRAFT) or held.get(Assignment.Status.TODO)


@functools.cache
def _held_next_sql(held_back: int, *, ranged: bool, gated: bool) -> str:
    """The statement of assignment_held_next, for a number of rounds held back; `gated`, that
    of assignment_held_next_ungated. Written as SQL: it runs after every submit, and the ORM
    took ten times longer to build it (1.7 ms) than SQLite to run it.

    The first draft and the first to-do are two subqueries of one statement, each a walk of the
    index (annotator, status, item) from the study's first item: every item of the study has an
    id at least that one's. Without that bound, an annotator holding thousands of items of
    other studies, or of this one, had them all joined and sorted at every submit (20 ms of
    PostgreSQL at 10k items). An item in resolution still waits for a tie-breaker's labels.
    On PostgreSQL the status is a range rather than equal to a constant: equated, it drops out
    of the ordering, and PostgreSQL walked the item index instead, filtering every assignment
    of the study's items up to the annotator's first to-do (all of them once none was left:
    8 ms at 20k items). SQLite keeps the equality, which lets it start the walk at the study's
    first item.

    The gate's check is labeling.pilot_gate's rule (_gated, _has_target) in SQL: a main round
    not yet open after a pilot round with a target κ, its own or a dimension's. An empty
    `dimension_targets` is stored as '{}' by both databases."""
    assignment, item = Assignment._meta.db_table, StudyItem._meta.db_table
    not_held = f" AND i.round_id NOT IN ({', '.join(['%s'] * held_back)})" if held_back else ""
    status = "a.status BETWEEN %s AND %s" if ranged else "a.status = %s"
    first = f"""(
        SELECT a.id FROM {assignment} a INNER JOIN {item} i ON a.item_id = i.id
        WHERE a.annotator_id = %s AND i.study_id = %s
        AND a.item_id >= (SELECT id FROM {item} WHERE study_id = %s ORDER BY id LIMIT 1)
        AND i.status IN (%s, %s){not_held} AND {status}
        ORDER BY a.status, a.item_id LIMIT 1
    )"""  # noqa: S608 (table names and placeholders only)
    if not gated:
        return f"SELECT * FROM {assignment} WHERE id = {first} OR id = {first}"  # noqa: S608 (the same)
    rounds = Round._meta.db_table
    waits = f"""EXISTS (
        SELECT 1 FROM {rounds} m
        WHERE m.study_id = %s AND m.kind = %s AND m.gate_opened_at IS NULL AND EXISTS (
            SELECT 1 FROM {rounds} p
            WHERE p.study_id = m.study_id AND p.kind = %s AND p.position < m.position
            AND (p.target_kappa IS NOT NULL OR p.dimension_targets <> '{{}}')
        )
    )"""  # noqa: S608 (the same)
    return (
        f"SELECT g.gate_may_wait, n.* FROM (SELECT {waits} AS gate_may_wait) g "  # noqa: S608
        f"LEFT JOIN {assignment} n ON NOT g.gate_may_wait AND (n.id = {first} OR n.id = {first})"
    )


def queue_progress(*, study: Study, user: AbstractBaseUser) -> QueueProgress:
    counts = Assignment.objects.filter(study=study, annotator=user).aggregate(
        total=Count("id"),
        done=Count("id", filter=Q(status=Assignment.Status.SUBMITTED)),
        drafts=Count("id", filter=Q(status=Assignment.Status.DRAFT)),
        todo=Count("id", filter=Q(status=Assignment.Status.TODO)),
        skipped=Count("id", filter=Q(status=Assignment.Status.SKIPPED)),
    )
    return QueueProgress(**counts)


@dataclass
class LabelingPage:
    assignment: Assignment
    issue: Issue
    fixes: list[LinkedFix]
    comments: list[IssueComment]
    dimensions: list[Dimension]
    annotations: dict[int, Annotation]  # by dimension id; only the annotator's own


def labeling_page(*, assignment: Assignment, study: Study) -> LabelingPage:
    """Everything the labeling page shows, in a fixed number of queries."""
    issue = assignment.item.issue  # fetched with the assignment
    thread = issue_thread(issue=issue)
    # Categories are not loaded: the page takes each dimension's tree from the cache.
    dimensions = assignment_dimensions(assignment=assignment, study=study)
    return LabelingPage(
        assignment=assignment,
        issue=issue,
        fixes=thread.fixes,
        comments=thread.comments,
        dimensions=dimensions,
        annotations=assignment_annotations(assignment=assignment, version=study.codebook_version),
    )


def assignment_annotations(
    *, assignment: Assignment, version: CodebookVersion
) -> dict[int, Annotation]:
    """The assignment's annotations by dimension id, each with its categories, `version` being
    its study's codebook version (one query; none for an assignment never saved, which has
    none: Assignment.version)."""
    if not assignment.version:
        return {}
    annotations = _annotations_read(assignment_id=assignment.pk, version=version, shown=False)
    return {annotation.dimension_id: annotation for annotation in annotations}


def assignment_labels_carry(*, assignment: Assignment, version: CodebookVersion) -> None:
    """The assignment's annotations, each with its dimension and its categories, carried as
    `assignment.annotations` as `prefetch_related` carries them, in the order
    AssignmentSerializer shows them (by dimension; categories by position), `version` being
    its study's codebook version: one query, none for an assignment never saved."""
    annotations = (
        _annotations_read(assignment_id=assignment.pk, version=version, shown=True)
        if assignment.version
        else []
    )
    prefetched_carry(assignment, "annotations", annotations)


def _annotations_read(
    *, assignment_id: int, version: CodebookVersion, shown: bool
) -> list[Annotation]:
    """An assignment's annotations with their categories carried, in one query: the categories
    come from the codebook `version` as it is kept (taxonomy.selectors.categories_by_id).
    `shown`: with their dimensions, ordered as shown. Kept compiled: every labeling page and
    save reads them."""
    rows = _ANNOTATIONS_OF(assignment_id=assignment_id, shown=shown)
    return rows_with_categories_carried(rows, version=version)


Label = TypeVar("Label", Annotation, Resolution)


def rows_with_categories_carried(rows: Iterable[Label], *, version: CodebookVersion) -> list[Label]:
    """Labels (annotations or gold labels) read with their categories joined, a row per category
    (`chosen_category_id`, None for a label with none), as one instance each, in the rows'
    order, with their categories carried (`label.categories.all()`) in codebook order. The
    categories come from `version` as it is kept (taxonomy.selectors.categories_by_id)."""
    labels: dict[int, Label] = {}
    chosen: dict[int, list[int]] = {}
    for row in rows:
        labels.setdefault(row.pk, row)
        if row.chosen_category_id is not None:
            chosen.setdefault(row.pk, []).append(row.chosen_category_id)
    categories = categories_by_id(version=version, ids=(i for ids in chosen.values() for i in ids))
    for pk, label in labels.items():
        ordered = sorted((categories[i] for i in chosen.get(pk, [])), key=category_codebook_order)
        prefetched_carry(label, "categories", ordered)
    return list(labels.values())


def _annotations_of(*, assignment_id: int, shown: bool) -> QuerySet[Annotation]:
    annotations = Annotation.objects.filter(assignment_id=assignment_id).annotate(
        chosen_category_id=F("categories__id")
    )
    if shown:
        return annotations.select_related("dimension").order_by("dimension__position", "id")
    # Unordered: read by dimension, and the default ordering would join the dimensions only to
    # sort them.
    return annotations.order_by()


_ANNOTATIONS_OF = PreparedQuery(_annotations_of, values=("assignment_id",))


def study_overview_counts(*, study: Study) -> dict[str, int]:
    """How many items the study has, how many wait in resolution and how many have their gold
    labels, and how many changed upstream since labeled (one query)."""
    return StudyItem.objects.filter(study=study).aggregate(
        items=Count("id"),
        in_resolution=Count("id", filter=Q(status=StudyItem.Status.IN_RESOLUTION)),
        resolved=Count("id", filter=Q(status=StudyItem.Status.RESOLVED)),
        changed_upstream=Count("id", filter=Q(changed_upstream_at__isnull=False)),
    )


def study_dimensions(*, study: Study) -> list[Dimension]:
    """The dimensions of the study's codebook version, in order, each `required` as the study
    says (`Study.required_dimensions`) or, when it says nothing, as the codebook does. Copies,
    so that the cached dimensions of the version stay as published."""
    dimensions = dimensions_of_version(version=study.codebook_version)
    if study.required_dimensions is None:
        return dimensions
    required = set(study.required_dimensions)
    study_view = []
    for dimension in dimensions:
        as_the_study_says = copy.copy(dimension)
        as_the_study_says.required = dimension.key in required
        study_view.append(as_the_study_says)
    return study_view


def assignment_dimensions(*, assignment: Assignment, study: Study) -> list[Dimension]:
    """The dimensions the assignment asks, as `study_dimensions` gives them: all of them, or
    only its `dimension_keys` (what an adjudicator's decision opened, for annotators who have
    not seen the item). Those were settled for them, so a condition on one of them is left out
    of the copies: the page asks the dimension without showing the settled answer."""
    dimensions = study_dimensions(study=study)
    if assignment.dimension_keys is None:
        return dimensions
    asked = set(assignment.dimension_keys)
    shown = []
    for dimension in dimensions:
        if dimension.key not in asked:
            continue
        as_asked = copy.copy(dimension)
        as_asked.applies_when = {
            key: keys for key, keys in dimension.applies_when.items() if key in asked
        }
        shown.append(as_asked)
    return shown


def study_event_list(*, study: Study, limit: int | None = None) -> QuerySet[StudyEvent]:
    """The study's activity log, newest first, with each act's actor."""
    events = StudyEvent.objects.filter(study=study).select_related("actor").order_by("-at", "-id")
    return events[:limit] if limit is not None else events


def study_event_data(event: StudyEvent) -> dict:
    """One act of the log as plain data (the API, the export)."""
    return {
        "at": event.at.isoformat(),
        "actor": event.actor.get_username() if event.actor is not None else None,
        "action": event.action,
        "what": event.get_action_display(),
        "reason": event.reason,
        "details": event.details,
    }


def study_has_gold_labels(*, study: Study) -> bool:
    """Whether any item of the study has a gold label yet: the report counts only those."""
    return Resolution.objects.filter(item__study=study).exists()
