"""Writes of resolution: gold labels out of submitted labels, adjudicators' decisions, the
discussion of an item, and tie-breakers. Every change to a resolution is a revision.

An item goes to resolution once every one of its assignments is submitted (at least k of them):
dimensions answered alike become consensus resolutions at once, a majority decides where the
study says so (or a tie-breaker labeled the item), and the rest wait in the disagreement queue
for an adjudicator or a manager. From then on the annotators' labels no longer change.

A decision may make dimensions apply that the annotators did not answer: they screened the item
out, the adjudicator screens it in. Unless the study leaves those to the adjudicator
(`Study.screen_in_override`), they go back to labeling by annotators who have not seen the item
(`access.item_blind_annotators`), as many as the item needs, who are asked only those; the item
waits for them as for a tie-breaker, and their labels are then resolved as usual.
"""

from collections import defaultdict

from django.contrib.auth.models import AbstractBaseUser
from django.db import connection, transaction

from common.bulk import bulk_create_with_rows
from common.exceptions import ApplicationError, ConflictError, PermissionDeniedError
from common.text import strip_nul
from labeling.access import (
    item_can_discuss,
    item_can_resolve,
    study_roles,
)
from labeling.disagreements import (
    item_assignment_rows,
    item_labels_read,
    item_outcomes_for,
    item_relabels,
    items_majority_decides,
    tiebreaker_candidates,
)
from labeling.models import (
    Assignment,
    DiscussionComment,
    Resolution,
    ResolutionRevision,
    Study,
    StudyItem,
)
from labeling.resolution_rules import (
    DimensionOutcome,
    DimensionState,
    Relabel,
    item_outcomes,
    relabel_plan,
)
from labeling.selectors import study_dimensions
from labeling.services.holders import items_holders_recount
from labeling.services.lifecycle import study_check_open
from taxonomy.models import Category, Dimension
from taxonomy.selectors import categories_by_key

MAX_NOTE = 20_000
MAX_COMMENT = 10_000
DECISION_METHODS = (
    Resolution.Method.ADJUDICATED,
    Resolution.Method.DISCUSSION,
    Resolution.Method.MAJORITY,
)
AUTOMATIC_NOTES = {
    DimensionState.CONSENSUS: "all annotators chose the same",
    DimensionState.MAJORITY: "a strict majority of the annotators chose this",
}


# No savepoint of its own: its callers' transactions roll back whole on an error (a submit's
# has its savepoint), and a savepoint's two statements were a tenth of a submit's queries.
@transaction.atomic(savepoint=False)
def item_resolution_update(*, item: StudyItem, read_in_transaction: bool = False) -> StudyItem:
    """Bring an item's resolution up to date with its submitted labels and decisions.

    Nothing happens while an assignment is still to do or a draft, or fewer annotators than the
    item needs (k, or one for an item outside the study's overlap) submitted. Then consensus
    and majority outcomes are recorded, and the item is resolved when every dimension that
    applies has its gold label, else it is in resolution. Locks the item row, so that two
    annotators submitting at once cannot both miss each other's submission.

    `read_in_transaction`: the caller read `item`, with its study and the study's codebook
    version, earlier in this transaction and has not changed it since. SQLite has no row locks,
    and its transactions are serializable: that item is still current there and is not read
    again. PostgreSQL reads it again, with the lock.
    """
    if not read_in_transaction or connection.vendor == "postgresql":
        item = (
            StudyItem.objects.select_for_update(of=("self",))
            .select_related("study__codebook_version")
            .get(pk=item.pk)
        )
    # Read in a statement of their own, after the lock: under READ COMMITTED a statement that
    # waited for the lock still reads with the snapshot it started with, so assignments read
    # beside the lock would miss the submission it waited for, and two last submissions at once
    # would both leave the item open. The assignments give the counts here and, once the item
    # is complete, the labels' relabels and tie-breakers; the labels and gold labels come with
    # them, in the same statement, whether or not the item is complete (a few rows).
    read = item_labels_read(item_ids=[item.pk])
    if not _complete(read.assignments, needed=item.annotators_needed):
        return item
    dimensions = study_dimensions(study=item.study)
    outcomes = item_outcomes_for(item=item, dimensions=dimensions, read=read)
    _resolutions_write_automatic(
        item=item, outcomes=[o for o in outcomes if o.state in AUTOMATIC_NOTES]
    )
    status = _status_of(outcomes)
    if item.status != status:
        item.status = status
        item.save(update_fields=["status"])
    return item


def _complete(assignments: list[tuple], *, needed: int) -> bool:
    """Whether an item's assignments (`item_assignment_rows`, of this item only) are all
    submitted, by as many annotators as it needs."""
    statuses = [status for _, _, status, _, _ in assignments]
    return (
        Assignment.Status.TODO not in statuses
        and Assignment.Status.DRAFT not in statuses
        and statuses.count(Assignment.Status.SUBMITTED) >= needed
    )


OPEN_STATES = {DimensionState.OPEN, DimensionState.WAITING, DimensionState.RELABELING}


def _status_of(outcomes: list[DimensionOutcome]) -> str:
    if any(outcome.state in OPEN_STATES for outcome in outcomes):
        return StudyItem.Status.IN_RESOLUTION
    return StudyItem.Status.RESOLVED


@transaction.atomic
def items_resolution_update(*, study: Study, item_ids: list[int]) -> None:
    """`item_resolution_update` for many items of one study (an import's): the assignments,
    labels, gold labels and rules of them all read in a few queries, instead of a few per item;
    only the items with a consensus or majority outcome to record write one by one."""
    items = list(
        StudyItem.objects.select_for_update(of=("self",))
        .filter(study=study, pk__in=item_ids)
        .order_by("pk")
    )
    assignments: dict[int, list[tuple]] = defaultdict(list)
    for row in item_assignment_rows(item_ids=[item.id for item in items]):
        assignments[row[0]].append(row)
    ready = [
        item
        for item in items
        if _complete(assignments.get(item.id, []), needed=item.annotators_needed)
    ]
    if not ready:
        return
    ready_ids = [item.id for item in ready]
    dimensions = study_dimensions(study=study)
    labels, relabels, tiebroken, gold, _ = item_labels_read(
        item_ids=ready_ids, assignments=[row for i in ready_ids for row in assignments[i]]
    )
    majority = items_majority_decides(study=study, item_ids=ready_ids, tiebroken=tiebroken)
    by_status: dict[str, list[int]] = {}
    for item in ready:
        item.study = study
        outcomes = item_outcomes(
            dimensions=dimensions,
            labels=labels.get(item.id, {}),
            gold=gold.get(item.id, {}),
            majority_decides=item.id in majority,
            relabel=relabels.get(item.id, Relabel()),
            needed=item.annotators_needed,
        )
        _resolutions_write_automatic(
            item=item, outcomes=[o for o in outcomes if o.state in AUTOMATIC_NOTES]
        )
        status = _status_of(outcomes)
        if item.status != status:
            by_status.setdefault(status, []).append(item.id)
    for status, ids in by_status.items():
        StudyItem.objects.filter(pk__in=ids).update(status=status)


@transaction.atomic
def resolution_decide(
    *,
    item: StudyItem,
    dimension_key: str,
    user: AbstractBaseUser,
    category_keys: list[str],
    method: str,
    note: str = "",
    expected_version: int | None = None,
) -> Resolution:
    """Record the gold label of an item on a dimension, decided by an adjudicator or a manager.

    Any categories of the dimension may be chosen, not only those the annotators proposed.
    `expected_version` is the version of the resolution the decider saw (0 or None: none yet);
    when someone decided meanwhile, ConflictError carries their decision and nothing changes.
    Deciding again is allowed (a revision keeps the earlier decision). A decision that makes
    dimensions apply which the annotators did not answer sends them to annotators who have not
    seen the item (`_item_relabel`); when the study has too few of them, ApplicationError says
    so and nothing changes. A dimension those annotators are labeling is not decided meanwhile.
    """
    item = (
        StudyItem.objects.select_for_update(of=("self",))
        .select_related("study__codebook_version")
        .get(pk=item.pk)
    )
    if not item_can_resolve(roles=study_roles(study=item.study, user=user)):
        raise PermissionDeniedError("Only the study's adjudicators and managers resolve items.")
    study_check_open(study_id=item.study_id)
    if item.status == StudyItem.Status.OPEN:
        raise ApplicationError(
            "This item is still being labeled: it can be resolved once every annotator submitted."
        )
    dimension = next(
        (d for d in study_dimensions(study=item.study) if d.key == dimension_key),
        None,
    )
    if dimension is None:
        raise ApplicationError(
            f"Unknown dimension {dimension_key!r} for this study's codebook.",
            extra={"dimension": dimension_key},
        )
    if method not in DECISION_METHODS:
        raise ApplicationError(
            f"The method is one of {', '.join(DECISION_METHODS)}.", extra={"method": method}
        )
    keys = sorted(set(category_keys))
    known = set(
        Category.objects.filter(dimension=dimension, key__in=keys).values_list("key", flat=True)
    )
    unknown = [key for key in keys if key not in known]
    if unknown:
        raise ApplicationError(
            f"{', '.join(unknown)} is not a category of {dimension.name}.",
            extra={"categories": unknown},
        )
    if not dimension.multi_label and len(keys) > 1:
        raise ApplicationError(f"{dimension.name} takes one category.")
    if not dimension.multi_label and dimension.required and not keys:
        raise ApplicationError(f"{dimension.name} needs a category.")
    states = {
        outcome.dimension.key: outcome.state
        for outcome in item_outcomes_for(item=item, dimensions=study_dimensions(study=item.study))
    }
    if states.get(dimension.key) == DimensionState.RELABELING:
        raise ApplicationError(
            f"{dimension.name} of this item is being labeled by annotators who have not seen "
            "it; decide it once they have submitted.",
            extra={"dimension": dimension.key},
        )
    current = Resolution.objects.select_for_update().filter(item=item, dimension=dimension).first()
    seen = expected_version or 0
    if (current.version if current else 0) != seen:
        raise ConflictError(
            f"{dimension.name} of this item was decided meanwhile; see that decision first.",
            extra={"resolution": resolution_data(current) if current else None},
        )
    resolution = _resolution_write(
        item=item,
        dimension=dimension,
        category_keys=keys,
        method=method,
        note=strip_nul(note or "").strip()[:MAX_NOTE],
        user=user,
    )
    _item_relabel(item=item, decided=dimension, user=user)
    item_resolution_update(item=item)
    return resolution


def _item_relabel(*, item: StudyItem, decided: Dimension, user: AbstractBaseUser) -> None:
    """After a decision: withdraw the relabeling that no longer applies, and give the dimensions
    the decision made apply, which fewer annotators answered than the item needs, to as many
    annotators who have not seen it (blind), asked only those dimensions. The caller holds the
    item's row lock and has written the decision; an error rolls it back with everything."""
    dimensions = study_dimensions(study=item.study)
    read = item_labels_read(item_ids=[item.id])
    labels = read.labels.get(item.id, {})
    relabel = read.relabels.get(item.id, Relabel())
    outcomes = item_outcomes_for(item=item, dimensions=dimensions, read=read)
    _relabeling_withdraw(item=item, outcomes=outcomes, decided=decided)
    if item.study.screen_in_override != Study.ScreenInOverride.RELABEL:
        return
    scope, needed = relabel_plan(
        dimensions=dimensions,
        outcomes=outcomes,
        labels=labels,
        relabel=relabel,
        needed=item.annotators_needed,
    )
    if not needed:
        return
    names = ", ".join(d.name for d in dimensions if d.key in scope)
    candidates = tiebreaker_candidates(item=item)
    if len(candidates) < needed:
        raise ApplicationError(
            f"With this decision {names} apply, which {needed} more annotator"
            f"{'s' if needed > 1 else ''} must label blind; the study has {len(candidates)} "
            "annotator(s) who have not seen the item. Add annotators to the study, or have a "
            "manager set the study so that the adjudicator decides what a screen-in opens.",
            extra={"dimensions": scope, "needed": needed, "available": len(candidates)},
        )
    reason = f"blind relabeling after {user.get_username()} decided {decided.name}"
    Assignment.objects.bulk_create(
        [
            Assignment(
                item=item,
                study_id=item.study_id,
                annotator=annotator,
                dimension_keys=scope,
                selection_reason=reason[:200],
            )
            for annotator in candidates[:needed]
        ]
    )
    items_holders_recount(item_ids=[item.id])
    if item.status != StudyItem.Status.IN_RESOLUTION:
        item.status = StudyItem.Status.IN_RESOLUTION
        item.save(update_fields=["status"])


def _relabeling_withdraw(
    *, item: StudyItem, outcomes: list[DimensionOutcome], decided: Dimension
) -> None:
    """Skip the unfinished relabeling of dimensions that no longer apply (the screening was
    decided again, out): their drafts stay in the history, as for any skipped assignment."""
    gone = {o.dimension.key for o in outcomes if o.state == DimensionState.NOT_APPLICABLE}
    for assignment in Assignment.objects.filter(
        item=item,
        dimension_keys__isnull=False,
        status__in=[Assignment.Status.TODO, Assignment.Status.DRAFT],
    ):
        if set(assignment.dimension_keys) <= gone:
            assignment.status = Assignment.Status.SKIPPED
            assignment.skip_reason = (
                "withdrawn: the dimensions it was to label no longer apply after "
                f"{decided.name} was decided again"
            )
            assignment.version += 1
            assignment.save(update_fields=["status", "skip_reason", "version"])


def _resolution_write(
    *,
    item: StudyItem,
    dimension: Dimension,
    category_keys: list[str],
    method: str,
    note: str,
    user: AbstractBaseUser | None,
) -> Resolution:
    resolution, created = Resolution.objects.get_or_create(
        item=item, dimension=dimension, defaults={"method": method}
    )
    previous_keys = None if created else sorted(c.key for c in resolution.categories.all())
    previous_method = "" if created else resolution.method
    resolution.method = method
    resolution.note = note
    resolution.decided_by = user
    resolution.version += 1
    resolution.save(update_fields=["method", "note", "decided_by", "version", "updated_at"])
    resolution.categories.set(Category.objects.filter(dimension=dimension, key__in=category_keys))
    ResolutionRevision.objects.create(
        resolution=resolution,
        category_keys=category_keys,
        method=method,
        note=note,
        previous_category_keys=previous_keys,
        previous_method=previous_method,
        changed_by=user,
    )
    return resolution


def _resolutions_write_automatic(*, item: StudyItem, outcomes: list[DimensionOutcome]) -> None:
    """Record each consensus or majority outcome as the dimension's gold label, with its
    revision, in a constant number of queries however many dimensions there are: every submit
    that completes an item comes here (each one of a study with k = 1). The outcomes are of
    dimensions without a resolution (`item_outcomes` calls a dimension with one resolved), so
    every resolution is new; the caller holds the item's row lock, so none appears meanwhile."""
    if not outcomes:
        return
    # The version's categories as the label saves read them (kept for a published version).
    categories = categories_by_key(version=item.study.codebook_version)
    resolutions_create(
        [
            (
                Resolution(
                    item=item,
                    dimension=outcome.dimension,
                    method=Resolution.Method(outcome.state.value),
                    note=AUTOMATIC_NOTES[outcome.state],
                    version=1,
                ),
                keys,
                # As `categories.set` of a filter: a key the dimension lacks is no category.
                [
                    categories[(outcome.dimension.id, key)].id
                    for key in keys
                    if (outcome.dimension.id, key) in categories
                ],
            )
            for outcome in outcomes
            for keys in [sorted(outcome.categories or ())]
        ]
    )


def resolutions_create(created: list[tuple[Resolution, list[str], list[int]]]) -> None:
    """New gold labels, each given as an unsaved resolution, the category keys its first
    revision records and the ids of its categories: saved with their categories and that
    revision, in three queries however many there are (one on PostgreSQL)."""
    bulk_create_with_rows(
        Resolution,
        [resolution for resolution, _, _ in created],
        [
            (
                Resolution.categories.through,
                "resolution",
                [
                    {"resolution": resolution, "category_id": category_id}
                    for resolution, _, category_ids in created
                    for category_id in category_ids
                ],
            ),
            (
                ResolutionRevision,
                "resolution",
                [
                    {
                        "resolution": resolution,
                        "category_keys": keys,
                        "method": resolution.method,
                        "note": resolution.note,
                    }
                    for resolution, keys, _ in created
                ],
            ),
        ],
    )


def resolution_data(resolution: Resolution) -> dict:
    """A resolution as plain data (for a conflict's details and the API)."""
    return {
        "dimension": resolution.dimension.key,
        "categories": sorted(c.key for c in resolution.categories.all()),
        "method": resolution.method,
        "note": resolution.note,
        "decided_by": resolution.decided_by.get_username() if resolution.decided_by else None,
        "version": resolution.version,
        "updated_at": resolution.updated_at.isoformat(),
    }


@transaction.atomic
def discussion_comment_add(
    *, item: StudyItem, user: AbstractBaseUser, body: str
) -> DiscussionComment:
    """Add to an item's discussion: its study's adjudicators and managers, and the annotators of
    the item once they submitted their own labels."""
    item = StudyItem.objects.select_related("study").get(pk=item.pk)
    if not item_can_discuss(item=item, user=user):
        raise PermissionDeniedError(
            "The discussion of an item is for its adjudicators, its managers and the annotators "
            "who submitted it."
        )
    study_check_open(study_id=item.study_id)
    text = strip_nul(body or "").strip()
    if not text:
        raise ApplicationError("Write something to add to the discussion.")
    if len(text) > MAX_COMMENT:
        raise ApplicationError(f"A comment has at most {MAX_COMMENT} characters.")
    return DiscussionComment.objects.create(item=item, author=user, body=text)


@transaction.atomic
def item_tiebreaker_request(
    *, item: StudyItem, user: AbstractBaseUser, annotator: AbstractBaseUser | None = None
) -> Assignment:
    """Give an item in resolution to one more annotator of the study, who has not seen it: the
    named one, or the one with the fewest unfinished assignments. With their label a strict
    majority decides the dimensions still open."""
    item = StudyItem.objects.select_for_update(of=("self",)).select_related("study").get(pk=item.pk)
    if not item_can_resolve(roles=study_roles(study=item.study, user=user)):
        raise PermissionDeniedError(
            "Only the study's adjudicators and managers ask for more labels."
        )
    study_check_open(study_id=item.study_id)
    if item.status != StudyItem.Status.IN_RESOLUTION:
        raise ApplicationError("Only an item in resolution takes a tie-breaker.")
    candidates = tiebreaker_candidates(item=item)
    if annotator is None:
        if not candidates:
            raise ApplicationError(
                "Every annotator of the study has seen this item: add an annotator first."
            )
        annotator = candidates[0]
    elif annotator.pk not in {candidate.pk for candidate in candidates}:
        raise ApplicationError(
            f"{annotator.get_username()} cannot break this tie: only an annotator of the study "
            "who has not seen the item can.",
            extra={"annotator": annotator.get_username()},
        )
    # On an item whose dimensions went to annotators who have not seen it, the tie-breaker
    # too labels what is still undecided, the rest being settled for them.
    scope = None
    if item_relabels(item_ids=[item.id]):
        scope = [
            outcome.dimension.key
            for outcome in item_outcomes_for(
                item=item, dimensions=study_dimensions(study=item.study)
            )
            if outcome.state not in (DimensionState.RESOLVED, DimensionState.NOT_APPLICABLE)
        ]
    tiebreaker = Assignment.objects.create(
        item=item,
        study_id=item.study_id,
        annotator=annotator,
        is_tiebreaker=True,
        dimension_keys=scope,
        selection_reason=f"tie-breaker asked by {user.get_username()}",
    )
    items_holders_recount(item_ids=[item.id])
    return tiebreaker
