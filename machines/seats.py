"""The "one human replaced" design: a study may count one of its language-model annotators as
one of an item's k raters. The machine then holds seats as a person does, through a user of its
own (`machine.<study>.<name>`: inactive, no password, no role in the study, so it never signs in
and never appears in a queue). A seat is an assignment of that user; a run of the machine writes
its labels into the seat and submits it, so they count toward k, in the human agreement figures
and in gold resolution as anyone's submitted labels do. The machine figures keep measuring the
machine apart, against the people and gold, never against its own seats.

Seats, when a manager chooses the machine: on every open item that needs two raters or more and
that the machine does not hold yet, the machine takes a free seat, or else the seat of a person
who has not opened the item (the most loaded such person first); an item whose seats are all
started keeps its people. An item that needs one rater is left to people: a machine alone would
make its gold. Seats already labeled by the machine's latest run are filled at once; a run fills
the others as it labels their items. Choosing another machine, or none, gives the unfilled seats
back (handed to the least loaded annotators where the study pre-assigns, else claimed from the
queue); labels a machine already submitted stay, as a person's would.

The scikit-learn annotator cannot be chosen: it learns from gold, which its seats would make.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone
from django.utils.text import slugify

from common.exceptions import ApplicationError
from labeling.models import (
    Annotation,
    AnnotationRevision,
    Assignment,
    Study,
    StudyEvent,
    StudyItem,
)
from labeling.selectors import study_dimensions
from labeling.services.holders import items_holders_recount
from labeling.services.lifecycle import study_check_open
from labeling.services.resolutions import item_resolution_update
from labeling.services.studies import items_assign, study_annotators
from machines.models import MachineAnnotator, MachineLabel
from taxonomy.selectors import categories_by_key

User = get_user_model()

SKIPPED = Assignment.Status.SKIPPED
SEAT_REASON = "one human replaced: the study's machine rater"


@dataclass(frozen=True)
class SeatChange:
    """What choosing a machine rater did to the study's seats."""

    taken: int = 0  # seats the chosen machine took, free ones and people's
    withdrawn: int = 0  # of those, unopened assignments taken from people
    filled: int = 0  # seats filled at once with the machine's latest labels
    given_back: int = 0  # unfilled seats of the machine chosen before, given back


def machine_rater_user(annotator: MachineAnnotator) -> AbstractBaseUser:
    """The user whose assignments are the machine's seats, created on first use."""
    if annotator.rater_user_id is not None:
        return annotator.rater_user
    base = f"machine.{annotator.study.slug}.{slugify(annotator.name) or annotator.pk}"[:140]
    username = base
    if User.objects.filter(username=username).exists():
        username = f"{base}.{annotator.pk}"
    user = User(username=username, is_active=False)
    user.set_unusable_password()
    user.save()
    annotator.rater_user = user
    annotator.save(update_fields=["rater_user"])
    return user


@transaction.atomic
def study_machine_rater_set(
    *,
    study: Study,
    annotator: MachineAnnotator | None,
    by: AbstractBaseUser | None = None,
) -> SeatChange:
    """Choose the study's machine annotator that counts as one of its k raters, or none (the
    default: every machine is reported apart), and move the seats accordingly (see the module).
    One at most per study, a constraint of MachineAnnotator. Recorded in the activity log."""
    if annotator is not None and annotator.study_id != study.pk:
        raise ApplicationError("That machine annotator is not one of this study's.")
    if annotator is not None and annotator.kind != MachineAnnotator.Kind.LLM:
        raise ApplicationError(
            "The scikit-learn annotator learns from gold labels, which its seats would make: "
            "only a language model can count as a rater."
        )
    study_check_open(study_id=study.pk)
    previous = MachineAnnotator.objects.filter(study=study, counts_toward_k=True).first()
    if previous is not None and annotator is not None and previous.pk == annotator.pk:
        taken, withdrawn, filled = _seats_take(study, annotator)
        return SeatChange(taken=taken, withdrawn=withdrawn, filled=filled)
    given_back = 0
    if previous is not None:
        MachineAnnotator.objects.filter(pk=previous.pk).update(counts_toward_k=False)
        given_back = _seats_give_back(study, previous)
    taken = withdrawn = filled = 0
    if annotator is not None:
        MachineAnnotator.objects.filter(pk=annotator.pk).update(counts_toward_k=True)
        annotator.counts_toward_k = True
        taken, withdrawn, filled = _seats_take(study, annotator)
    change = SeatChange(taken=taken, withdrawn=withdrawn, filled=filled, given_back=given_back)
    StudyEvent.objects.create(
        study=study,
        actor=by,
        action=StudyEvent.Action.MACHINE_RATER,
        details={
            "machine": annotator.name if annotator else None,
            "previous": previous.name if previous else None,
            "seats_taken": change.taken,
            "seats_withdrawn_from_people": change.withdrawn,
            "seats_filled": change.filled,
            "seats_given_back": change.given_back,
        },
    )
    return change


def _seats_take(study: Study, annotator: MachineAnnotator) -> tuple[int, int, int]:
    """Take a seat on every open item that needs two raters or more (the module's rule), then
    fill the seats the machine's latest labels answer. (taken, withdrawn, filled)."""
    taken, withdrawn = machine_seats_take(annotator=annotator)
    return taken, withdrawn, machine_seats_fill(annotator=annotator)


def machine_seats_fill(*, annotator: MachineAnnotator) -> int:
    """Fill every open seat of the machine that its latest labels answer; how many were."""
    if annotator.rater_user_id is None:
        return 0
    open_seats = Assignment.objects.filter(
        annotator_id=annotator.rater_user_id,
        item__study_id=annotator.study_id,
        status__in=[Assignment.Status.TODO, Assignment.Status.DRAFT],
    ).values_list("item_id", flat=True)
    return sum(machine_seat_fill(annotator=annotator, item_id=item_id) for item_id in open_seats)


@transaction.atomic
def machine_seats_take(*, annotator: MachineAnnotator) -> tuple[int, int]:
    """The study's rater machine takes its seats on the open items it holds none of yet (items
    added since it was chosen, too): (seats taken, of them withdrawn from people)."""
    study = annotator.study
    if study.status != Study.Status.ACTIVE:
        return 0, 0  # a closed study's assignments no longer change
    user = machine_rater_user(annotator)
    items = list(
        StudyItem.objects.filter(
            study=study, status=StudyItem.Status.OPEN, annotators_needed__gte=2
        )
        .exclude(assignments__annotator=user)
        .annotate(n_assigned=Count("assignments", filter=~Q(assignments__status=SKIPPED)))
        .order_by("id")
    )
    unopened = {}
    for assignment in (
        Assignment.objects.filter(
            item__in=[item for item in items if item.n_assigned >= item.annotators_needed],
            status=Assignment.Status.TODO,
            started_at__isnull=True,
            is_tiebreaker=False,
            dimension_keys__isnull=True,
        )
        .select_related("annotator")
        .order_by("item_id", "id")
    ):
        unopened.setdefault(assignment.item_id, []).append(assignment)
    loads = dict(
        Assignment.objects.filter(
            item__study=study, status__in=[Assignment.Status.TODO, Assignment.Status.DRAFT]
        )
        .values_list("annotator_id")
        .annotate(n=Count("id"))
        .values_list("annotator_id", "n")
    )
    seats: list[Assignment] = []
    withdrawn: list[int] = []
    for item in items:
        if item.n_assigned >= item.annotators_needed:
            candidates = unopened.get(item.id)
            if not candidates:
                continue  # every seat is started: the item keeps its people
            person = max(
                candidates,
                key=lambda a: (loads.get(a.annotator_id, 0), a.annotator.get_username()),
            )
            withdrawn.append(person.pk)
            loads[person.annotator_id] = loads.get(person.annotator_id, 0) - 1
        seats.append(
            Assignment(
                item=item, study_id=item.study_id, annotator=user, selection_reason=SEAT_REASON
            )
        )
    Assignment.objects.filter(pk__in=withdrawn).delete()
    Assignment.objects.bulk_create(seats)
    items_holders_recount(item_ids=[seat.item_id for seat in seats])
    return len(seats), len(withdrawn)


def _seats_give_back(study: Study, annotator: MachineAnnotator) -> int:
    """Remove the machine's unfilled seats; where the study pre-assigns, hand them to the least
    loaded annotators at once (else the queue hands them out)."""
    if annotator.rater_user_id is None:
        return 0
    open_seats = Assignment.objects.filter(
        annotator_id=annotator.rater_user_id,
        item__study=study,
        status__in=[Assignment.Status.TODO, Assignment.Status.DRAFT],
    )
    item_ids = list(open_seats.values_list("item_id", flat=True))
    open_seats.delete()
    items_holders_recount(item_ids=item_ids)
    if item_ids and study.preassign:
        items_assign(
            study=study,
            items=list(StudyItem.objects.filter(pk__in=item_ids).order_by("id")),
            annotators=study_annotators(study=study),
            reason=f"seat given back by the machine annotator {annotator.name}",
        )
    return len(item_ids)


def machine_seat_fill(*, annotator: MachineAnnotator, item_id: int) -> bool:
    """Write the machine's latest labels of the item into its open seat there and submit it, so
    that the item resolves as with a person's submission. False when the machine is not the
    study's rater, holds no open seat on the item, has no complete answer for it under the
    study's codebook version, or the study is closed."""
    if not annotator.counts_toward_k or annotator.rater_user_id is None:
        return False
    study = annotator.study
    if study.status != Study.Status.ACTIVE:
        return False
    with transaction.atomic():
        seat = (
            Assignment.objects.select_for_update()
            .filter(
                item_id=item_id,
                annotator_id=annotator.rater_user_id,
                item__status=StudyItem.Status.OPEN,
                status__in=[Assignment.Status.TODO, Assignment.Status.DRAFT],
            )
            .first()
        )
        if seat is None:
            return False
        latest = (
            MachineLabel.objects.filter(
                item_id=item_id,
                run__annotator=annotator,
                run__codebook_version_id=study.codebook_version_id,
            )
            .order_by("-run_id")
            .values_list("run_id", flat=True)
            .first()
        )
        if latest is None:
            return False
        labels = {
            label.dimension_id: label
            for label in MachineLabel.objects.filter(item_id=item_id, run_id=latest)
        }
        categories = categories_by_key(version=study.codebook_version)
        dimensions = study_dimensions(study=study)
        chosen = {
            dimension.key: labels[dimension.id].categories
            for dimension in dimensions
            if dimension.id in labels
        }
        applying = [dimension for dimension in dimensions if dimension.applies_given(chosen)]
        if any(dimension.id not in labels for dimension in applying):
            return False  # an answer of another codebook's dimensions: the next run's fills it
        for dimension in applying:
            label = labels[dimension.id]
            keys = list(label.categories)
            annotation = Annotation.objects.create(
                assignment=seat, dimension=dimension, rationale=label.rationale
            )
            annotation.categories.set(
                [categories[dimension.id, key] for key in keys if (dimension.id, key) in categories]
            )
            AnnotationRevision.objects.create(
                annotation=annotation,
                category_keys=keys,
                rationale=annotation.rationale,
                assignment_status=Assignment.Status.SUBMITTED,
                changed_by_id=annotator.rater_user_id,
                reason=f"machine run {latest}",
            )
        now = timezone.now()
        seat.status = Assignment.Status.SUBMITTED
        seat.started_at = seat.started_at or now
        seat.submitted_at = now
        seat.codebook_version_id = study.codebook_version_id
        seat.version += 1
        seat.save(
            update_fields=["status", "started_at", "submitted_at", "codebook_version", "version"]
        )
        item_resolution_update(item=seat.item)
    return True
