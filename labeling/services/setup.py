"""Setting a study up as papers describe it: select issues of the corpus, sample them with a
seed, cut the sample into rounds, assign; and changing who labels while the study runs.

The selection, the sampling rule and the seed are stored with the study (`Study.sampling`), so
that the study page, the exports and another instance can say and redo exactly what was drawn.
"""

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import datetime

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Count

from common.exceptions import ApplicationError
from corpus.selectors import IssueSelection, SelectedIssue, issue_selection
from labeling.access import item_blind_annotators
from labeling.models import Assignment, Membership, Round, Study, StudyEvent
from labeling.sampling import ALGORITHM, Candidate, rounds_split, sample
from labeling.services.holders import items_holders_recount
from labeling.services.lifecycle import study_check_open, study_event_record
from labeling.services.studies import (
    items_assign,
    study_annotators,
    study_create,
    study_items_add,
    study_member_add,
    study_member_remove,
)

MAX_SEED = 2**63 - 1


@dataclass(frozen=True)
class RoundPlan:
    name: str
    kind: str = "main"  # a Round.Kind value
    size: int | None = None  # None: the rest of the sample (the last round only)


@dataclass(frozen=True)
class SamplingRule:
    selection: IssueSelection = field(default_factory=IssueSelection)
    method: str = "all"  # all | random | stratified
    size: int | None = None  # random: how many; stratified: the total split in proportion
    per_repository: int | None = None  # stratified: how many of each repository
    seed: int = 0


@dataclass(frozen=True)
class SamplePreview:
    candidates: dict[str, int]  # repository -> matching issues
    sampled: dict[str, int]  # repository -> issues the rule draws
    references: list[str]  # the drawn issues, "owner/name#number", in rank order

    @property
    def total_candidates(self) -> int:
        return sum(self.candidates.values())

    @property
    def total_sampled(self) -> int:
        return len(self.references)


def _check_rule(rule: SamplingRule) -> None:
    if not 0 <= rule.seed <= MAX_SEED:
        raise ApplicationError(f"A seed is a whole number from 0 to {MAX_SEED}.")
    if rule.selection.state not in ("any", "open", "closed"):
        raise ApplicationError("The state is any, open or closed.")
    if rule.selection.labels_match not in ("any", "all"):
        raise ApplicationError("Labels match any or all.")
    after, before = rule.selection.created_after, rule.selection.created_before
    if after and before and after >= before:
        raise ApplicationError("The date range ends before it starts.")


def _drawn(rule: SamplingRule) -> tuple[list[SelectedIssue], list[Candidate]]:
    _check_rule(rule)
    selected = issue_selection(selection=rule.selection)
    candidates = [Candidate(issue.reference, issue.repository) for issue in selected]
    try:
        drawn = sample(
            candidates,
            seed=rule.seed,
            method=rule.method,
            size=rule.size,
            per_stratum=rule.per_repository,
        )
    except ValueError as error:
        raise ApplicationError(f"The sampling rule is incomplete: {error}.") from error
    return selected, drawn


def study_sample_preview(*, rule: SamplingRule) -> SamplePreview:
    """What a rule selects and draws from the corpus now, per repository (the live count of
    the study form)."""
    return _preview(*_drawn(rule))


def _preview(selected: list[SelectedIssue], drawn: list[Candidate]) -> SamplePreview:
    candidates: dict[str, int] = {}
    for issue in selected:
        candidates[issue.repository] = candidates.get(issue.repository, 0) + 1
    sampled: dict[str, int] = {}
    for candidate in drawn:
        sampled[candidate.stratum] = sampled.get(candidate.stratum, 0) + 1
    return SamplePreview(
        candidates=candidates,
        sampled=dict(sorted(sampled.items())),
        references=[candidate.reference for candidate in drawn],
    )


def sampling_record(
    rule: SamplingRule, preview: SamplePreview, rounds: Sequence[RoundPlan]
) -> dict:
    """The rule as stored with the study and exported: enough to draw the same issues again."""
    selection = asdict(rule.selection)
    for key in ("created_after", "created_before"):
        if isinstance(selection[key], datetime):
            selection[key] = selection[key].isoformat()
    selection["repositories"] = list(selection["repositories"])
    selection["labels"] = list(selection["labels"])
    return {
        "algorithm": ALGORITHM,
        "selection": selection,
        "method": rule.method,
        "size": rule.size,
        "per_repository": rule.per_repository,
        "seed": rule.seed,
        "rounds": [asdict(plan) for plan in rounds],
        "candidates": preview.candidates,
        "sampled": preview.sampled,
    }


@transaction.atomic
def study_setup(
    *,
    slug: str,
    name: str,
    codebook_version,
    rule: SamplingRule,
    rounds: Sequence[RoundPlan] = (RoundPlan("Main"),),
    k: int = 2,
    overlap: float = 1.0,
    blind: bool = True,
    resolution_rule: str = Study.ResolutionRule.ADJUDICATION,
    screen_in_override: str = Study.ScreenInOverride.RELABEL,
    show_similar_gold: bool = False,
    required_dimensions: Sequence[str] | None = None,
    description: str = "",
    annotators: Sequence[AbstractBaseUser] = (),
    managers: Sequence[AbstractBaseUser] = (),
    adjudicators: Sequence[AbstractBaseUser] = (),
) -> Study:
    """Create a study from a selection of the corpus and a seeded sampling rule: its rounds
    take the sample in rank order (a 30-item pilot gets the 30 first), its items are assigned
    (k annotators for the overlap share of them, one for the rest), and the rule, the seed and
    the counts are stored with it. `required_dimensions` names the dimensions that must be
    answered to submit (None: as the codebook version says)."""
    if not rounds:
        raise ApplicationError("A study has at least one round.")
    if any(plan.size is None for plan in rounds[:-1]):
        raise ApplicationError("Only the last round takes the rest of the sample.")
    if not 0.0 <= overlap <= 1.0:
        raise ApplicationError("The overlap is a fraction between 0 and 1.")
    if overlap < 1.0 and k < 2:
        raise ApplicationError("An overlap below 1 needs k of 2 or more.")
    if len({plan.name.strip() for plan in rounds}) != len(rounds):
        raise ApplicationError("Rounds need different names.")
    selected, drawn = _drawn(rule)
    preview = _preview(selected, drawn)
    if not preview.references:
        raise ApplicationError("The selection matches no issue of the corpus.")
    study = study_create(
        slug=slug,
        name=name,
        codebook_version=codebook_version,
        k=k,
        blind=blind,
        resolution_rule=resolution_rule,
        screen_in_override=screen_in_override,
        show_similar_gold=show_similar_gold,
        required_dimensions=required_dimensions,
        annotators=annotators,
        managers=managers,
        adjudicators=adjudicators,
        sampling=sampling_record(rule, preview, rounds),
        round_name=rounds[0].name.strip(),
        round_kind=rounds[0].kind,
    )
    study.overlap = overlap
    study.description = description
    study.save(update_fields=["overlap", "description"])
    issue_ids = {issue.reference: issue.id for issue in selected}
    first_round = study.rounds.get()
    study_rounds = [first_round] + [
        Round.objects.create(study=study, name=plan.name.strip(), kind=plan.kind, position=index)
        for index, plan in enumerate(rounds[1:], start=1)
    ]
    parts = rounds_split(
        [Candidate(reference, "") for reference in preview.references],
        [plan.size for plan in rounds],
    )
    for round, part in zip(study_rounds, parts, strict=True):
        study_items_add(
            study=study,
            issue_ids=[issue_ids[candidate.reference] for candidate in part],
            round=round,
        )
    return study


# Who labels, while the study runs


@transaction.atomic
def study_member_join(
    *, study: Study, user: AbstractBaseUser, role: str, by: AbstractBaseUser | None = None
) -> int | None:
    """Give the user a role in the study. An annotator gets their share of the work at once
    (`annotator_add`: how many assignments, returned); a manager or adjudicator only the role
    (None). The activity log records it, by `by` (None: the operator)."""
    assigned = None
    if role == Membership.Role.ANNOTATOR:
        assigned = annotator_add(study=study, user=user)
    else:
        study_member_add(study=study, user=user, role=role)
    details = {"username": user.get_username(), "role": role}
    if assigned is not None:
        details["assigned"] = assigned
    study_event_record(
        study=study, actor=by, action=StudyEvent.Action.MEMBER_ADDED, details=details
    )
    return assigned


@transaction.atomic
def study_member_leave(
    *, study: Study, user: AbstractBaseUser, role: str, by: AbstractBaseUser | None = None
) -> int:
    """Take a role away: an annotator's unfinished items go to the others and their submitted
    labels stay (`annotator_remove`: how many items moved); a manager or adjudicator loses the
    role, never the study's last manager (0 moved). The activity log records it."""
    moved = 0
    if role == Membership.Role.ANNOTATOR:
        moved = annotator_remove(study=study, user=user)
    else:
        study_member_remove(study=study, user=user, role=role)
    study_event_record(
        study=study,
        actor=by,
        action=StudyEvent.Action.MEMBER_REMOVED,
        details={"username": user.get_username(), "role": role, "moved": moved},
    )
    return moved


@transaction.atomic
def annotator_add(*, study: Study, user: AbstractBaseUser) -> int:
    """Make the user an annotator of the study and, in a study that assigns up front, give them
    their share of the work: items that still need annotators, then to-do items taken over from
    the most loaded annotators (never an item they hold already). Returns how many assignments
    they got."""
    study_check_open(study_id=study.pk)
    Membership.objects.get_or_create(study=study, user=user, role=Membership.Role.ANNOTATOR)
    if not study.preassign:
        return 0  # they claim items as they ask for the next one
    before = Assignment.objects.filter(item__study=study, annotator=user).count()
    items_assign(
        study=study,
        items=list(study.items.filter(status="open").order_by("id")),
        annotators=study_annotators(study=study),
        reason="assigned on joining the study",
    )
    study_workload_rebalance(study=study)
    return Assignment.objects.filter(item__study=study, annotator=user).count() - before


@transaction.atomic
def study_workload_rebalance(*, study: Study) -> int:
    """Move not-yet-started assignments from the annotators with the most open work to those
    with the least, until they differ by at most one. Returns how many moved."""
    study_check_open(study_id=study.pk)
    annotators = study_annotators(study=study)
    if len(annotators) < 2:
        return 0
    open_work = {
        a.pk: list(
            Assignment.objects.filter(
                item__study=study, annotator=a, status=Assignment.Status.TODO, started_at=None
            )
            # A tie-breaker's or a blind relabeling's annotator was chosen among those who have
            # not seen the item; moving it to whoever is idlest could hand it to someone who has.
            .filter(is_tiebreaker=False, dimension_keys__isnull=True)
            .order_by("-item_id")
        )
        for a in annotators
    }
    open_loads = _open_loads(study)
    loads = {a.pk: open_loads.get(a.pk, 0) for a in annotators}
    held = {
        a.pk: set(
            Assignment.objects.filter(item__study=study, annotator=a).values_list(
                "item_id", flat=True
            )
        )
        for a in annotators
    }
    moved = 0
    while True:
        busiest = max(loads, key=lambda pk: (loads[pk], -pk))
        idlest = min(loads, key=lambda pk: (loads[pk], pk))
        if loads[busiest] - loads[idlest] <= 1:
            return moved
        movable = next((a for a in open_work[busiest] if a.item_id not in held[idlest]), None)
        if movable is None:
            return moved
        open_work[busiest].remove(movable)
        movable.annotator_id = idlest
        movable.selection_reason = "moved to even out the load"
        movable.save(update_fields=["annotator", "selection_reason"])
        held[busiest].discard(movable.item_id)
        held[idlest].add(movable.item_id)
        loads[busiest] -= 1
        loads[idlest] += 1
        moved += 1


def _open_loads(study: Study) -> dict[int, int]:
    """annotator id -> how many unfinished (to do, draft) assignments they hold in the study."""
    return dict(
        Assignment.objects.filter(
            item__study=study, status__in=[Assignment.Status.TODO, Assignment.Status.DRAFT]
        )
        .values("annotator_id")
        .annotate(n=Count("id"))
        .values_list("annotator_id", "n")
    )


@transaction.atomic
def annotator_open_items_reassign(
    *,
    study: Study,
    annotator: AbstractBaseUser,
    to: AbstractBaseUser | None = None,
    by: AbstractBaseUser | None = None,
) -> int:
    """Hand an annotator's unfinished items (to do and drafts) to others: `to`, or the least
    loaded annotators who do not hold the item. A to-do assignment changes hands; a draft stays
    as it was, marked skipped with the reason, so its labels remain in the history, and the item
    gets a new assignment. Submitted work is never touched. Returns how many items moved."""
    study_check_open(study_id=study.pk)
    unfinished = list(
        Assignment.objects.filter(
            item__study=study,
            annotator=annotator,
            status__in=[Assignment.Status.TODO, Assignment.Status.DRAFT],
        ).select_related("item")
    )
    others = [a for a in study_annotators(study=study) if a.pk != annotator.pk]
    if to is not None:
        if to.pk == annotator.pk or to.pk not in {a.pk for a in others}:
            raise ApplicationError(f"{to.get_username()} is not another annotator of the study.")
        others = [to]
    loads = _open_loads(study)
    holders: dict[int, set[int]] = defaultdict(set)
    for item_id, annotator_id in Assignment.objects.filter(
        item_id__in=[a.item_id for a in unfinished]
    ).values_list("item_id", "annotator_id"):
        holders[item_id].add(annotator_id)
    moved = 0
    given_a_new_assignment: list[int] = []
    for assignment in unfinished:
        candidates = [a for a in others if a.pk not in holders[assignment.item_id]]
        if assignment.is_tiebreaker or assignment.dimension_keys is not None:
            # Labeled blind once the item's labels exist: only by someone who has not seen them.
            blind = set(item_blind_annotators(item=assignment.item).values_list("pk", flat=True))
            candidates = [a for a in candidates if a.pk in blind]
        if not candidates:
            continue
        target = min(candidates, key=lambda a: (loads.get(a.pk, 0), a.get_username()))
        loads[target.pk] = loads.get(target.pk, 0) + 1
        holders[assignment.item_id].add(target.pk)
        reason = f"reassigned from {annotator.get_username()}"
        if assignment.status == Assignment.Status.TODO and assignment.started_at is None:
            assignment.annotator = target
            assignment.selection_reason = reason
            assignment.save(update_fields=["annotator", "selection_reason"])
        else:
            assignment.status = Assignment.Status.SKIPPED
            assignment.skip_reason = f"reassigned to {target.get_username()}"
            assignment.version += 1
            assignment.save(update_fields=["status", "skip_reason", "version"])
            Assignment.objects.create(
                item=assignment.item,
                study_id=assignment.study_id,
                annotator=target,
                selection_reason=reason,
                is_tiebreaker=assignment.is_tiebreaker,
                dimension_keys=assignment.dimension_keys,
            )
            given_a_new_assignment.append(assignment.item_id)
        moved += 1
    items_holders_recount(item_ids=given_a_new_assignment)
    if by is not None:  # an act of a manager; a departure is logged as one (study_member_leave)
        study_event_record(
            study=study,
            actor=by,
            action=StudyEvent.Action.ITEMS_REASSIGNED,
            details={
                "username": annotator.get_username(),
                "to": to.get_username() if to is not None else None,
                "moved": moved,
            },
        )
    return moved


@transaction.atomic
def annotator_remove(*, study: Study, user: AbstractBaseUser) -> int:
    """Take the user off the study's annotators: their unfinished items go to the others, their
    submitted labels stay (they count in agreement and resolution). Returns items handed on."""
    study_check_open(study_id=study.pk)
    membership = Membership.objects.filter(
        study=study, user=user, role=Membership.Role.ANNOTATOR
    ).first()
    if membership is None:
        raise ApplicationError(f"{user.get_username()} is not an annotator of this study.")
    moved = annotator_open_items_reassign(study=study, annotator=user)
    left = Assignment.objects.filter(
        item__study=study,
        annotator=user,
        status__in=[Assignment.Status.TODO, Assignment.Status.DRAFT],
    )
    # Items no one else could take stay unassigned rather than with someone who left.
    unstarted = left.filter(status=Assignment.Status.TODO, started_at=None)
    unheld = list(unstarted.values_list("item_id", flat=True))
    unstarted.delete()
    items_holders_recount(item_ids=unheld)
    left.update(status=Assignment.Status.SKIPPED, skip_reason="the annotator left the study")
    membership.delete()
    return moved
