"""Writes to studies: creation, membership, items and assignments."""

from collections.abc import Collection, Iterable, Sequence

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Count, Exists, F, OuterRef, QuerySet

from common.bulk import bulk_insert
from common.exceptions import ApplicationError
from common.names import InvalidName, NameKind, name_check
from common.prepared import PreparedQuery
from corpus.models import Issue
from labeling.assignment import least_loaded_assignment
from labeling.models import Assignment, Membership, Round, Study, StudyItem
from labeling.sampling import Candidate, overlap_references
from labeling.selectors import assignment_held_next, assignment_held_next_ungated
from labeling.services.holders import items_holders_recount
from labeling.services.lifecycle import study_check_open
from labeling.services.pilot_gate import study_rounds_held_back
from taxonomy.models import CodebookVersion

User = get_user_model()


# Slugs whose /studies/{slug}/ is a page of its own: a study of that slug could not be opened.
RESERVED_SLUGS = frozenset({"new", "restore"})


@transaction.atomic
def study_create(
    *,
    slug: str,
    name: str,
    codebook_version: CodebookVersion,
    k: int = 2,
    blind: bool = True,
    resolution_rule: str = Study.ResolutionRule.ADJUDICATION,
    screen_in_override: str = Study.ScreenInOverride.RELABEL,
    show_similar_gold: bool = False,
    required_dimensions: Sequence[str] | None = None,
    annotators: Sequence[AbstractBaseUser] = (),
    managers: Sequence[AbstractBaseUser] = (),
    adjudicators: Sequence[AbstractBaseUser] = (),
    issues: Sequence[Issue] = (),
    sampling: dict | None = None,
    round_name: str = "Main",
    round_kind: str = Round.Kind.MAIN,
) -> Study:
    """Create a study with one round, its members, and its issues assigned to k annotators each.

    Pull requests are never study items. When annotators are given, every item is pre-assigned to k
    of them; otherwise annotators claim items as they ask for their next one. The name passes
    the rule of `common.names` and is stored normalised.
    """
    name = study_name_check(name)
    if slug in RESERVED_SLUGS:
        raise ApplicationError(
            f"The slug {slug!r} names a page of the product (/studies/{slug}/): choose another."
        )
    if Study.objects.filter(slug=slug).exists():
        raise ApplicationError(f"A study with the slug {slug!r} exists already.")
    if k < 1:
        raise ApplicationError("k must be at least 1.")
    if resolution_rule not in Study.ResolutionRule.values:
        raise ApplicationError(
            f"The resolution rule is one of {', '.join(Study.ResolutionRule.values)}."
        )
    if resolution_rule == Study.ResolutionRule.MAJORITY and k < 3:
        raise ApplicationError("A majority decides only with k = 3 annotators or more.")
    if screen_in_override not in Study.ScreenInOverride.values:
        raise ApplicationError(
            f"Who labels what a screen-in opens is one of "
            f"{', '.join(Study.ScreenInOverride.values)}.",
            extra={"screen_in_override": screen_in_override},
        )
    if required_dimensions is not None:
        known = set(codebook_version.dimensions.values_list("key", flat=True))
        unknown = sorted(set(required_dimensions) - known)
        if unknown:
            raise ApplicationError(
                f"{', '.join(unknown)} is not a dimension of this codebook version.",
                extra={"required_dimensions": unknown},
            )
        required_dimensions = sorted(set(required_dimensions))
    if annotators and len(annotators) < k:
        raise ApplicationError(f"k = {k} needs at least {k} annotators; {len(annotators)} given.")
    study = Study.objects.create(
        slug=slug,
        name=name,
        codebook_version=codebook_version,
        k=k,
        blind=blind,
        resolution_rule=resolution_rule,
        screen_in_override=screen_in_override,
        show_similar_gold=show_similar_gold,
        preassign=bool(annotators),
        required_dimensions=required_dimensions,
        sampling=sampling or {},
    )
    Round.objects.create(study=study, name=round_name, position=0, kind=round_kind)
    for role, users in (
        (Membership.Role.MANAGER, managers),
        (Membership.Role.ANNOTATOR, annotators),
        (Membership.Role.ADJUDICATOR, adjudicators),
    ):
        for user in users:
            study_member_add(study=study, user=user, role=role)
    study_items_add(study=study, issue_ids=[issue.id for issue in issues])
    return study


def study_name_check(name: str) -> str:
    """The study's name, normalised; ApplicationError (on the field "name") if it is refused."""
    try:
        return name_check(name, NameKind.STUDY_NAME)
    except InvalidName as error:
        raise ApplicationError(f"The {error}.", extra={"field": "name"}) from None


def round_save(
    *,
    study: Study,
    name: str,
    kind: str = Round.Kind.MAIN,
    target_kappa: float | None = None,
    round: Round | None = None,
) -> Round:
    """Create a round after the study's last one (new items go to the last round), or change
    one. A target is a kappa in [-1, 1] that every required dimension must reach."""
    if target_kappa is not None and not -1.0 <= target_kappa <= 1.0:
        raise ApplicationError("A target kappa lies between -1 and 1.")
    if not name.strip():
        raise ApplicationError("A round needs a name.")
    if round is None:
        last = study.rounds.order_by("-position").first()
        return Round.objects.create(
            study=study,
            name=name.strip(),
            kind=kind,
            target_kappa=target_kappa,
            position=last.position + 1 if last else 0,
        )
    round.name, round.kind, round.target_kappa = name.strip(), kind, target_kappa
    round.save(update_fields=["name", "kind", "target_kappa"])
    return round


def study_member_add(*, study: Study, user: AbstractBaseUser, role: str) -> Membership:
    membership, _ = Membership.objects.get_or_create(study=study, user=user, role=role)
    return membership


@transaction.atomic
def study_member_remove(*, study: Study, user: AbstractBaseUser, role: str) -> None:
    """Take a manager or an adjudicator role away; never the study's last manager (someone must
    be able to change its members). Annotators leave through `annotator_remove`, which hands
    their unfinished items on."""
    if role == Membership.Role.ANNOTATOR:
        raise ApplicationError("Annotators leave a study through annotator_remove.")
    memberships = Membership.objects.select_for_update().filter(study=study, role=role)
    membership = next((m for m in memberships if m.user_id == user.pk), None)
    if membership is None:
        raise ApplicationError(f"{user.get_username()} is not a {role} of this study.")
    if role == Membership.Role.MANAGER and len(memberships) == 1:
        raise ApplicationError("A study keeps at least one manager.")
    membership.delete()


@transaction.atomic
def study_items_add(
    *,
    study: Study,
    issue_ids: Iterable[int],
    round: Round | None = None,
    assign: bool = True,
) -> int:
    """Add the issues of these ids (not pull requests, not already in the study) to a round, in
    the order given, and, with `assign`, give each to the annotators it needs: k for the study's
    overlap share of the items (chosen by the study's seed), one for the rest; the least loaded
    annotators first. Returns how many items were added."""
    study_check_open(study_id=study.pk)
    round = round or study.rounds.order_by("-position").first()
    issue_ids = list(dict.fromkeys(issue_ids))
    # Only these issues' items, by the study's unique index: an upload adds its issues a batch
    # at a time, and reading every item of the study at each batch made a 10k-issue upload
    # quadratic.
    in_study = StudyItem.objects.filter(study=study, issue_id=OuterRef("pk"))
    references = {
        issue_id: f"{owner}/{name}#{number}"
        for issue_id, owner, name, number in Issue.objects.filter(
            id__in=issue_ids, is_pull_request=False
        )
        .exclude(Exists(in_study))
        .values_list("id", "repository__owner", "repository__name", "number")
    }
    new_ids = [issue_id for issue_id in issue_ids if issue_id in references]
    if not new_ids:
        return 0
    double_coded = overlap_references(
        [Candidate(references[issue_id], "") for issue_id in new_ids],
        seed=int(study.sampling.get("seed", 0)),
        fraction=study.overlap,
    )
    # Rows rather than instances (common.bulk): making 10,000 StudyItems and compiling them
    # through the ORM was most of the time an upload spent adding its issues to the study.
    bulk_insert(
        StudyItem,
        [
            {
                "study_id": study.pk,
                "issue_id": issue_id,
                "round_id": round.pk,
                "annotators_needed": study.k if references[issue_id] in double_coded else 1,
            }
            for issue_id in new_ids
        ],
    )
    if assign and study.preassign:
        annotators = study_annotators(study=study)
        if len(annotators) >= study.k:
            items = list(StudyItem.objects.filter(study=study, issue_id__in=new_ids).order_by("id"))
            items_assign(
                study=study, items=items, annotators=annotators, reason="pre-assigned (balanced)"
            )
    return len(new_ids)


def study_annotators(*, study: Study) -> list[AbstractBaseUser]:
    return list(
        User.objects.filter(
            memberships__study=study, memberships__role=Membership.Role.ANNOTATOR
        ).order_by("username")
    )


def items_assign(
    *, study: Study, items: list[StudyItem], annotators: list[AbstractBaseUser], reason: str
) -> None:
    """Give each item the annotators it still needs, least loaded first (the load: every
    assignment they hold in the study, so that it stays even across additions)."""
    loads = dict(
        Assignment.objects.filter(item__study=study)
        .values_list("annotator__username")
        .annotate(n=Count("id"))
        .values_list("annotator__username", "n")
    )
    holders: dict[int, set[str]] = {}
    for item_id, username in Assignment.objects.filter(item__in=items).values_list(
        "item_id", "annotator__username"
    ):
        holders.setdefault(item_id, set()).add(username)
    by_name = {a.get_username(): a for a in annotators}
    new = []
    for item in items:
        have = holders.get(item.id, set())
        free = [name for name in by_name if name not in have]
        need = min(item.annotators_needed - len(have), len(free))
        if need <= 0:
            continue
        (chosen,) = least_loaded_assignment([need], free, loads)
        for name in chosen:
            loads[name] = loads.get(name, 0) + 1
            new.append(
                Assignment(
                    item=item,
                    study_id=item.study_id,
                    annotator=by_name[name],
                    selection_reason=reason,
                )
            )
    Assignment.objects.bulk_create(new)
    items_holders_recount(item_ids=[assignment.item_id for assignment in new])


# How many candidates a claim tries, one row lock each, before it looks no further.
CLAIM_CANDIDATES = 50


def item_claim_for_annotator(
    *, study: Study, user: AbstractBaseUser, held_back: Collection[int] = ()
) -> Assignment | None:
    """Claim an open item that still needs annotators: least-annotated first, never one the user
    already has. Rows are locked with SKIP LOCKED, so two annotators asking at once get different
    items. Must run inside a transaction.
    """
    if not _ANNOTATOR_MEMBERSHIP(study_id=study.pk, user_id=user.pk):
        return None
    # The least-annotated first, then the oldest: a walk of the index (study, holders, id) of
    # the open items with a place left, which starts at the first of them however many items
    # are held already. Counting every open item's annotators instead cost a pass over the
    # study at every claim.
    arguments = {"study_id": study.pk, "user_id": user.pk, "held_back": sorted(held_back)}
    assignment = _claim_first_free(_FEWEST_HOLDERS(**arguments), study=study, user=user)
    if assignment is not None:
        return assignment
    # `holders` is counted again wherever a service adds or removes assignments; one removed
    # another way (an account deleted, with its assignments) leaves it too high until the item
    # changes next. Counting finds such an item, once the others are taken.
    return _claim_first_free(_LEAST_ANNOTATED(**arguments), study=study, user=user)


def _claim_first_free(
    candidates: list[tuple[int]], *, study: Study, user: AbstractBaseUser
) -> Assignment | None:
    for (item_id,) in candidates:
        # Lock one candidate at a time: another annotator holding it makes us skip to the next
        # rather than wait, and never blocks the other candidates.
        locked = _CANDIDATE_LOCKED(item_id=item_id)
        if not locked:
            continue
        ((needed,),) = locked
        # Counted again under the lock: a claim that committed meanwhile is seen now.
        holders = [annotator_id for (annotator_id,) in _ITEM_HOLDERS(item_id=item_id)]
        own = holders.count(user.pk)
        others = len(holders) - own
        if others >= needed or own:
            continue
        claimed = Assignment.objects.create(
            item_id=item_id,
            study=study,
            annotator=user,
            selection_reason=f"least-annotated ({others} of {needed} before)",
        )
        items_holders_recount(item_ids=[item_id])
        return claimed
    return None


def _open_items(study_id: int, user_id: int, held_back: list[int]) -> tuple[QuerySet, Exists]:
    """The study's open items, less the rounds held back (labeling.pilot_gate), and whether the
    user holds one already."""
    items = StudyItem.objects.filter(
        study_id=study_id, status=StudyItem.Status.OPEN, issue__is_pull_request=False
    )
    if held_back:
        items = items.exclude(round_id__in=held_back)
    return items, Exists(Assignment.objects.filter(item=OuterRef("pk"), annotator_id=user_id))


def _fewest_holders(*, study_id: int, user_id: int, held_back: list[int]) -> QuerySet:
    items, held_by_user = _open_items(study_id, user_id, held_back)
    return (
        items.filter(holders__lt=F("annotators_needed"))
        .exclude(held_by_user)
        .order_by("holders", "id")
        .values_list("id")[:CLAIM_CANDIDATES]
    )


def _least_annotated(*, study_id: int, user_id: int, held_back: list[int]) -> QuerySet:
    items, held_by_user = _open_items(study_id, user_id, held_back)
    return (
        items.exclude(held_by_user)
        .annotate(n_assigned=Count("assignments"))
        .filter(n_assigned__lt=F("annotators_needed"))
        .order_by("n_assigned", "id")
        .values_list("id")[:CLAIM_CANDIDATES]
    )


# A claim runs at every "next" once the user's own items are done (and in the submit that
# finished them): its queries are built and compiled once (common.prepared).
_ANNOTATOR_MEMBERSHIP = PreparedQuery(
    lambda *, study_id, user_id: Membership.objects.filter(
        study_id=study_id, user_id=user_id, role=Membership.Role.ANNOTATOR
    ).values_list("id")[:1],
    values=("study_id", "user_id"),
)
_FEWEST_HOLDERS = PreparedQuery(_fewest_holders, values=("study_id", "user_id", "held_back"))
_LEAST_ANNOTATED = PreparedQuery(_least_annotated, values=("study_id", "user_id", "held_back"))
_CANDIDATE_LOCKED = PreparedQuery(
    lambda *, item_id: (
        StudyItem.objects.select_for_update(skip_locked=True)
        .filter(id=item_id)
        .order_by()  # the default ordering would join, and so lock, the study row
        .values_list("annotators_needed")
    ),
    values=("item_id",),
)
_ITEM_HOLDERS = PreparedQuery(
    lambda *, item_id: (
        Assignment.objects.filter(item_id=item_id).order_by().values_list("annotator_id")
    ),
    values=("item_id",),
)


@transaction.atomic(savepoint=False)  # its callers do not go on after an error
def item_next_for_annotator(*, study: Study, user: AbstractBaseUser) -> Assignment | None:
    """The assignment the annotator should work on next: their own unfinished ones first (drafts,
    then to-do, oldest item first), else a newly claimed item that still needs annotators.
    None when there is nothing left. The reason for the choice is kept on the assignment. A
    closed study gives nothing; a main round that waits for its pilot (labeling.pilot_gate)
    gives none of its items.
    """
    if study.status != Study.Status.ACTIVE:
        return None  # a closed study gives out nothing, not even what one holds
    held_next = assignment_held_next_ungated(study=study, user=user)
    own, held_back = held_next.assignment, set()
    if held_next.gate_may_wait:
        held_back = study_rounds_held_back(study=study)
        own = assignment_held_next(study=study, user=user, held_back=held_back)
    if own is not None:
        return own
    return item_claim_for_annotator(study=study, user=user, held_back=held_back)
