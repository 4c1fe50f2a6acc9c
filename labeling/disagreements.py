"""Reads of resolution: the disagreement queue with its counts, an item side by side for its
adjudicator, and what an annotator sees of an item's outcome after submitting.

The rule that turns labels into outcomes is `labeling.resolution_rules`; the access rules are
`labeling.access`. Every function reads a fixed number of queries whatever the study size.
"""

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from typing import NamedTuple

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import (
    BooleanField,
    CharField,
    Count,
    F,
    JSONField,
    Prefetch,
    Q,
    QuerySet,
    Value,
)

from common.prepared import PreparedQuery
from labeling.access import item_blind_annotators
from labeling.models import (
    Annotation,
    Assignment,
    DiscussionComment,
    Resolution,
    Study,
    StudyItem,
)
from labeling.resolution_rules import (
    DimensionOutcome,
    DimensionState,
    Relabel,
    annotator_answers,
    conflict_label,
    item_outcomes,
)
from labeling.selectors import rows_with_categories_carried, study_dimensions
from taxonomy.models import Category, CodebookVersion, Dimension

# item id -> annotator username -> dimension key -> category keys, of every submitted assignment
ItemLabels = dict[int, dict[str, dict[str, frozenset[str]]]]


class ItemLabelsRead(NamedTuple):
    labels: ItemLabels
    relabels: dict[int, Relabel]
    tiebroken: set[int]  # the items with a tie-breaker's submitted labels
    gold: dict[int, dict[str, frozenset[str]]]  # as `item_gold` gives it
    assignments: list[tuple]  # as `item_assignment_rows` gives them


def item_assignment_rows(*, item_ids: list[int]) -> list[tuple]:
    """(item id, annotator's username, status, dimension keys, is tie-breaker) of every
    assignment of these items that was not skipped: what `item_labels_read` reads of them."""
    return _assignment_rows(Assignment.objects.filter(item_id__in=item_ids))


def item_labels_read(
    *, item_ids: list[int], assignments: list[tuple] | None = None
) -> ItemLabelsRead:
    """The items' labels (`ItemLabels`), `item_relabels`, the items a tie-breaker settled (as
    `items_majority_decides` reads them), `item_gold` and `item_assignment_rows`, in one
    statement: whoever needs one of an item's outcomes needs them all. `assignments` when the
    caller read the items' `item_assignment_rows` already (they are not read again)."""
    labels: dict[int, dict[str, dict[str, set[str]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(set))
    )
    gold: dict[int, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    with_assignments = assignments is None
    if with_assignments and len(item_ids) == 1:
        rows = _ONE_ITEMS_ROWS(item_id=item_ids[0])  # every submit reads its item's so
    else:
        rows = _item_rows(item_ids=item_ids, with_assignments=with_assignments)
    assignments = [] if with_assignments else assignments
    for item_id, username, status, scope, is_tiebreaker, dimension_key, category_key in rows:
        if status is not None:
            assignments.append((item_id, username, status, scope, is_tiebreaker))
            continue
        if username is None:
            keys = gold[item_id][dimension_key]
        else:
            keys = labels[item_id][username][dimension_key]
        if category_key is not None:
            keys.add(category_key)
    tiebroken = set()
    # Annotators who submitted without any annotation row still count as having answered.
    for item_id, username, status, _, is_tiebreaker in assignments:
        if status == Assignment.Status.SUBMITTED:
            labels[item_id][username]
            if is_tiebreaker:
                tiebroken.add(item_id)
    read = {
        item_id: {
            username: {key: frozenset(keys) for key, keys in by_dimension.items()}
            for username, by_dimension in by_annotator.items()
        }
        for item_id, by_annotator in labels.items()
    }
    return ItemLabelsRead(
        read, _relabels_from(assignments), tiebroken, _gold_frozen(gold), assignments
    )


def _item_rows(*, item_ids: list[int], with_assignments: bool) -> QuerySet:
    """The rows `item_labels_read` reads: the items' submitted labels and gold labels, and
    their assignments when asked. Three kinds of row in one UNION ALL, told apart by their
    NULLs: an assignment's has a status; a label's has no status and an annotator; a gold
    label's has neither (a user's username is required, an assignment's status too)."""
    none = {
        "no_status": Value(None, output_field=CharField()),
        "no_scope": Value(None, output_field=JSONField()),
        "no_tiebreak": Value(None, output_field=BooleanField()),
    }
    submitted = (
        Annotation.objects.filter(
            assignment__item_id__in=item_ids,
            assignment__status=Assignment.Status.SUBMITTED,
        )
        .annotate(**none)
        .values_list(
            "assignment__item_id",
            "assignment__annotator__username",
            "no_status",
            "no_scope",
            "no_tiebreak",
            "dimension__key",
            "categories__key",
        )
        .order_by()
    )
    decided = (
        Resolution.objects.filter(item_id__in=item_ids)
        .annotate(no_annotator=Value(None, output_field=CharField()), **none)
        .values_list(
            "item_id",
            "no_annotator",
            "no_status",
            "no_scope",
            "no_tiebreak",
            "dimension__key",
            "categories__key",
        )
        .order_by()
    )
    if not with_assignments:
        return submitted.union(decided, all=True)
    # First: the union's columns take their types (and their conversions) from it.
    return (
        _assignments_not_skipped(Assignment.objects.filter(item_id__in=item_ids))
        .annotate(
            no_dimension=Value(None, output_field=CharField()),
            no_category=Value(None, output_field=CharField()),
        )
        .values_list(*_ASSIGNMENT_ROW, "no_dimension", "no_category")
        .order_by()
        .union(submitted, decided, all=True)
    )


# One item's rows, with its assignments: built and compiled once (common.prepared); Django took
# longer to build the union's SQL than the database to run it.
_ONE_ITEMS_ROWS = PreparedQuery(
    lambda *, item_id: _item_rows(item_ids=[item_id], with_assignments=True), values=("item_id",)
)


def item_gold(*, item_ids: list[int]) -> dict[int, dict[str, frozenset[str]]]:
    """item id -> dimension key -> gold category keys, of the resolutions of these items."""
    gold: dict[int, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for item_id, dimension_key, category_key in (
        Resolution.objects.filter(item_id__in=item_ids)
        .values_list("item_id", "dimension__key", "categories__key")
        .order_by()
    ):
        keys = gold[item_id][dimension_key]
        if category_key is not None:
            keys.add(category_key)
    return _gold_frozen(gold)


def _gold_frozen(gold: dict[int, dict[str, set[str]]]) -> dict[int, dict[str, frozenset[str]]]:
    return {
        item_id: {key: frozenset(keys) for key, keys in by_dimension.items()}
        for item_id, by_dimension in gold.items()
    }


def items_majority_decides(
    *, study: Study, item_ids: list[int], tiebroken: set[int] | None = None
) -> set[int]:
    """The items among these where a strict majority decides: all of them under the study's
    majority rule, else those a tie-breaker labeled (`tiebroken`, when the caller read them
    with `item_labels_read`)."""
    if study.resolution_rule == Study.ResolutionRule.MAJORITY:
        return set(item_ids)
    if tiebroken is not None:
        return tiebroken & set(item_ids)
    return set(
        Assignment.objects.filter(
            item_id__in=item_ids, is_tiebreaker=True, status=Assignment.Status.SUBMITTED
        )
        .values_list("item_id", flat=True)
        .order_by()
    )


def item_relabels(*, item_ids: list[int]) -> dict[int, Relabel]:
    """item id -> the assignments that label only some of its dimensions (see
    `resolution_rules.Relabel`), of the items that have any, in one query."""
    return _relabels_from(
        _assignment_rows(
            Assignment.objects.filter(item_id__in=item_ids, dimension_keys__isnull=False)
        )
    )


_ASSIGNMENT_ROW = ("item_id", "annotator__username", "status", "dimension_keys", "is_tiebreaker")


def _assignment_rows(assignments: QuerySet[Assignment]) -> list[tuple]:
    return list(_assignments_not_skipped(assignments).values_list(*_ASSIGNMENT_ROW).order_by())


def _assignments_not_skipped(assignments: QuerySet[Assignment]) -> QuerySet[Assignment]:
    return assignments.exclude(status=Assignment.Status.SKIPPED)


def _relabels_from(rows: list[tuple]) -> dict[int, Relabel]:
    """`item_relabels` out of `_assignment_rows`. A tie-breaker's counts once submitted only:
    the dimensions may be decided while it labels, as for any tie-breaker. Skipped ones count
    nowhere."""
    scopes: dict[int, dict[str, frozenset[str]]] = defaultdict(dict)
    pending: dict[int, set[str]] = defaultdict(set)
    for item_id, username, status, keys, is_tiebreaker in rows:
        if keys is None:
            continue
        if status == Assignment.Status.SUBMITTED:
            scopes[item_id][username] = frozenset(keys)
        elif not is_tiebreaker:
            pending[item_id].update(keys)
    return {
        item_id: Relabel(scopes=scopes.get(item_id, {}), pending=frozenset(pending[item_id]))
        for item_id in scopes.keys() | pending.keys()
    }


def item_relabeling(*, item: StudyItem) -> list[Assignment]:
    """The unfinished assignments of the item that label only the dimensions an adjudicator's
    decision opened, by annotator, with them."""
    return list(
        Assignment.objects.filter(
            item=item,
            dimension_keys__isnull=False,
            is_tiebreaker=False,
            status__in=[Assignment.Status.TODO, Assignment.Status.DRAFT],
        )
        .select_related("annotator")
        .order_by("annotator__username")
    )


def item_outcomes_for(
    *, item: StudyItem, dimensions: list[Dimension], read: ItemLabelsRead | None = None
) -> list[DimensionOutcome]:
    """The state of each dimension of one item, from the database (see resolution_rules);
    `read` when the caller has read the item's labels already (`item_labels_read`)."""
    read = read or item_labels_read(item_ids=[item.id])
    majority = items_majority_decides(
        study=item.study, item_ids=[item.id], tiebroken=read.tiebroken
    )
    return item_outcomes(
        dimensions=dimensions,
        labels=read.labels.get(item.id, {}),
        gold=read.gold.get(item.id, {}),
        majority_decides=bool(majority),
        relabel=read.relabels.get(item.id, Relabel()),
        needed=item.annotators_needed,
    )


# The disagreement queue


@dataclass(frozen=True)
class DisagreementFilter:
    dimension: str | None = None  # a dimension key
    conflict: str | None = None  # a `conflict_label`, e.g. "api_misuse vs configuration_error"
    round_name: str | None = None
    repository: str | None = None  # "owner/name"

    def matches(self, row: "Disagreement", *, ignoring: str | None = None) -> bool:
        wanted = {
            "dimension": (self.dimension, row.dimension.key),
            "conflict": (self.conflict, row.conflict),
            "round": (self.round_name, row.round_name),
            "repository": (self.repository, row.repository),
        }
        return all(
            value is None or value == actual
            for name, (value, actual) in wanted.items()
            if name != ignoring
        )


@dataclass(frozen=True)
class Disagreement:
    """One open dimension of an item in resolution: who said what."""

    item: StudyItem
    dimension: Dimension
    answers: dict[str, frozenset[str] | None]  # annotator -> keys, None: did not apply to them
    conflict: str
    round_name: str
    repository: str


def disagreement_list(
    *, study: Study, filters: DisagreementFilter | None = None
) -> list[Disagreement]:
    """The open disagreements of a study (items in resolution, dimensions without a gold label
    that apply), oldest item first, matching the filters."""
    return disagreement_queue(study=study, filters=filters)[0]


def disagreement_counts(
    *, study: Study, filters: DisagreementFilter | None = None
) -> dict[str, dict[str, int]]:
    """How many open disagreements each filter value leaves, the other filters applied (the
    numbers beside each choice of the queue's filters)."""
    return disagreement_queue(study=study, filters=filters)[1]


def disagreement_queue(
    *, study: Study, filters: DisagreementFilter | None = None
) -> tuple[list[Disagreement], dict[str, dict[str, int]]]:
    """`disagreement_list` and `disagreement_counts` from one reading of the study."""
    filters = filters or DisagreementFilter()
    rows = _disagreements(study)
    facets = {
        "dimension": lambda row: row.dimension.key,
        "conflict": lambda row: row.conflict,
        "round": lambda row: row.round_name,
        "repository": lambda row: row.repository,
    }
    counts = {
        name: dict(
            sorted(
                Counter(value(row) for row in rows if filters.matches(row, ignoring=name)).items()
            )
        )
        for name, value in facets.items()
    }
    return [row for row in rows if filters.matches(row)], counts


def _disagreements(study: Study) -> list[Disagreement]:
    items = list(
        StudyItem.objects.filter(study=study, status=StudyItem.Status.IN_RESOLUTION)
        .select_related("issue__repository", "round")
        .order_by("id")
    )
    item_ids = [item.id for item in items]
    labels, relabels, tiebroken, gold, _ = item_labels_read(item_ids=item_ids)
    majority = items_majority_decides(study=study, item_ids=item_ids, tiebroken=tiebroken)
    dimensions = study_dimensions(study=study)
    rows = []
    for item in items:
        item_answers = labels.get(item.id, {})
        relabel = relabels.get(item.id)
        for outcome in item_outcomes(
            dimensions=dimensions,
            labels=item_answers,
            gold=gold.get(item.id, {}),
            majority_decides=item.id in majority,
            relabel=relabel,
            needed=item.annotators_needed,
        ):
            if outcome.state != DimensionState.OPEN:
                continue
            answers = annotator_answers(outcome.dimension, item_answers, dimensions, relabel)
            rows.append(
                Disagreement(
                    item=item,
                    dimension=outcome.dimension,
                    answers=dict(sorted(answers.items())),
                    conflict=conflict_label(list(answers.values())),
                    round_name=item.round.name,
                    repository=item.issue.repository.full_name,
                )
            )
    return rows


# One item, side by side


@dataclass
class AnnotatorColumn:
    """What one annotator said on one dimension, with how long the whole item took them."""

    annotator: str
    applies: bool
    categories: list[Category]
    unsure: bool = False
    rationale: str = ""
    evidence: str = ""
    proposal: str = ""
    seconds_spent: int = 0
    is_tiebreaker: bool = False


@dataclass
class DimensionRow:
    dimension: Dimension
    state: DimensionState
    columns: list[AnnotatorColumn]
    # The categories any annotator chose, with their definitions, in codebook order.
    involved: list[Category]
    # Every category of the dimension, for a decision that none of the annotators proposed.
    choices: list[Category]
    resolution: Resolution | None = None
    revisions: list = field(default_factory=list)


@dataclass
class ItemResolutionView:
    item: StudyItem
    rows: list[DimensionRow]
    discussion: list[DiscussionComment]
    # Annotators of the study who have not seen the item (tie-breaker candidates).
    candidates: list[AbstractBaseUser]
    unfinished: list[Assignment]  # assignments not submitted yet (a tie-breaker at work)


def item_resolution_view(*, item: StudyItem) -> ItemResolutionView:
    """Everything an adjudicator weighs: every annotator's labels side by side per dimension
    (rationale, unsure, evidence, time spent), the definitions of the categories involved, the
    gold labels so far with their history, and the discussion."""
    study = item.study
    dimensions = study_dimensions(study=study)
    assignments = list(
        Assignment.objects.filter(item=item)
        .select_related("annotator")
        .prefetch_related(
            Prefetch(
                "annotations",
                queryset=Annotation.objects.select_related("dimension").prefetch_related(
                    "categories"
                ),
            )
        )
        .order_by("assigned_at", "id")
    )
    submitted = [a for a in assignments if a.status == Assignment.Status.SUBMITTED]
    read = item_labels_read(item_ids=[item.id])
    labels = read.labels.get(item.id, {})
    relabel = read.relabels.get(item.id, Relabel())
    resolutions = {
        r.dimension_id: r
        for r in Resolution.objects.filter(item=item)
        .select_related("decided_by")
        .prefetch_related("categories", "revisions__changed_by")
    }
    outcomes = item_outcomes_for(item=item, dimensions=dimensions, read=read)
    categories_by_dimension: dict[int, list[Category]] = defaultdict(list)
    for category in Category.objects.filter(
        dimension__version_id=study.codebook_version_id
    ).order_by("dimension__position", "position"):
        categories_by_dimension[category.dimension_id].append(category)
    rows = []
    for outcome in outcomes:
        dimension = outcome.dimension
        answers = annotator_answers(dimension, labels, dimensions, relabel)
        columns = []
        for assignment in submitted:
            if assignment.dimension_keys is not None and dimension.key not in (
                assignment.dimension_keys
            ):
                continue  # not asked of them: the dimension was settled when they got the item
            annotation = next(
                (a for a in assignment.annotations.all() if a.dimension_id == dimension.id), None
            )
            name = assignment.annotator.get_username()
            columns.append(
                AnnotatorColumn(
                    annotator=name,
                    applies=answers.get(name) is not None,
                    categories=sorted(
                        annotation.categories.all() if annotation else [],
                        key=lambda c: c.position,
                    ),
                    unsure=bool(annotation and annotation.unsure),
                    rationale=annotation.rationale if annotation else "",
                    evidence=annotation.evidence if annotation else "",
                    proposal=annotation.proposal if annotation else "",
                    seconds_spent=assignment.seconds_spent,
                    is_tiebreaker=assignment.is_tiebreaker,
                )
            )
        chosen = {c.id for column in columns for c in column.categories}
        resolution = resolutions.get(dimension.id)
        if resolution is not None:
            chosen |= {c.id for c in resolution.categories.all()}
        rows.append(
            DimensionRow(
                dimension=dimension,
                state=outcome.state,
                columns=columns,
                involved=[c for c in categories_by_dimension[dimension.id] if c.id in chosen],
                choices=categories_by_dimension[dimension.id],
                resolution=resolution,
                revisions=list(resolution.revisions.all()) if resolution else [],
            )
        )
    return ItemResolutionView(
        item=item,
        rows=rows,
        discussion=discussion_of(item=item),
        candidates=tiebreaker_candidates(item=item),
        unfinished=[a for a in assignments if a.status != Assignment.Status.SUBMITTED],
    )


def discussion_of(*, item: StudyItem) -> list[DiscussionComment]:
    return list(
        DiscussionComment.objects.filter(item=item)
        .select_related("author")
        .order_by("created_at", "id")
    )


def item_gold_list(*, item: StudyItem, version: CodebookVersion) -> list[Resolution]:
    """The gold labels of an item so far, in codebook order, with who decided and how, and
    their categories carried (`resolution.categories.all()`), in one query: the categories come
    from the study's codebook `version` as it is kept (taxonomy.selectors.categories_of_version).
    One of another version, which a codebook change left to be decided again, is read besides.
    """
    return rows_with_categories_carried(_GOLD_OF_ITEM(item_id=item.pk), version=version)


# Every page of an item its annotator submitted reads it: built and compiled once.
_GOLD_OF_ITEM = PreparedQuery(
    lambda *, item_id: (
        Resolution.objects.filter(item_id=item_id)
        .select_related("dimension", "decided_by")
        .annotate(chosen_category_id=F("categories__id"))
        .order_by("dimension__position", "id")
    ),
    values=("item_id",),
)


def tiebreaker_candidates(*, item: StudyItem) -> list[AbstractBaseUser]:
    """The annotators who may still label the item blind (`access.item_blind_annotators`:
    never one who labeled it, decided or discussed it, or oversees the study), fewest
    unfinished assignments first. A tie-breaker, and the annotators of what an adjudicator's
    decision opened, come from them."""
    return list(
        item_blind_annotators(item=item)
        .annotate(
            unfinished=Count(
                "assignments",
                filter=Q(assignments__status__in=[Assignment.Status.TODO, Assignment.Status.DRAFT]),
                distinct=True,
            )
        )
        .order_by("unfinished", "username")
    )
