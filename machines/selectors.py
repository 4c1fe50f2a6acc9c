"""Reading machine annotators, their runs and labels, and who may see the labels.

The blind rule for machine labels: nobody sees a machine's labels of an item before they
submitted their own labels of it. A person with an unsubmitted assignment of the item never
sees them, whatever their roles; a manager without one sees them (managers see every label of
the study); an adjudicator sees them once the item is in resolution or resolved, as people's
labels; an annotator otherwise never does (annotators never see labels not their own).
"""

from __future__ import annotations

from collections.abc import Iterable

from django.db.models import Max, Q, QuerySet

from labeling.access import ADJUDICATOR, MANAGER
from labeling.models import Assignment, Study, StudyItem
from machines.agreement import MachineRating
from machines.models import MachineAnnotator, MachineLabel, MachineRun


def study_machine_annotators(*, study: Study) -> QuerySet[MachineAnnotator]:
    return (
        MachineAnnotator.objects.filter(study=study).select_related("rater_user").order_by("name")
    )


def study_machine_runs(*, study: Study) -> QuerySet[MachineRun]:
    return (
        MachineRun.objects.filter(annotator__study=study)
        .select_related("annotator")
        .order_by("-created_at", "-id")
    )


def study_machine_rater(*, study: Study) -> MachineAnnotator | None:
    """The machine annotator the study counts as one of its k raters ("one human replaced"),
    if it chose one."""
    return MachineAnnotator.objects.filter(study=study, counts_toward_k=True).first()


def machine_labels_current(*, study_id: int) -> QuerySet[MachineLabel]:
    """The study's machine labels that still stand. A language model's run labels the items it
    has not labeled before with its settings, so each of its labels stands until a later run
    labels the item again. The scikit-learn annotator labels every item at each run, from the
    gold of that moment: only its latest run that labeled anything stands, and a dimension
    that run skipped (too little gold) has no label, not an older run's."""
    latest_classical = (
        MachineRun.objects.filter(
            annotator__study_id=study_id,
            annotator__kind=MachineAnnotator.Kind.CLASSICAL,
            status=MachineRun.Status.FINISHED,
            items_done__gt=0,
        )
        .values("annotator_id")
        .annotate(latest=Max("id"))
        .values_list("latest", flat=True)
    )
    return MachineLabel.objects.filter(run__annotator__study_id=study_id).exclude(
        Q(run__annotator__kind=MachineAnnotator.Kind.CLASSICAL) & ~Q(run_id__in=latest_classical)
    )


def study_machine_ratings(
    *, study: Study, dimension_ids: Iterable[int]
) -> dict[str, dict[str, dict[int, MachineRating]]]:
    """dimension key -> machine annotator name -> item id -> MachineRating, from the latest
    run of each annotator that labeled the item (an item labeled again under new settings
    counts with its new label). One query."""
    rows = (
        machine_labels_current(study_id=study.pk)
        .filter(dimension_id__in=list(dimension_ids))
        .values_list(
            "run__annotator__name",
            "run_id",
            "item_id",
            "dimension__key",
            "categories",
            "confidence",
        )
        .order_by("run_id")
    )
    ratings: dict[str, dict[str, dict[int, MachineRating]]] = {}
    for name, _run_id, item_id, key, categories, confidence in rows:
        # Ordered by run: a later run's label replaces an earlier one's.
        ratings.setdefault(key, {}).setdefault(name, {})[item_id] = MachineRating(
            frozenset(categories), float(confidence)
        )
    return ratings


def machine_labels_visible_to(*, item: StudyItem, user, roles: set[str]) -> bool:
    """Whether this person may see the machines' labels of this item (the module's rule)."""
    if not user.is_authenticated or not roles:
        return False
    open_assignment = (
        Assignment.objects.filter(item=item, annotator=user)
        .exclude(status=Assignment.Status.SUBMITTED)
        .exists()
    )
    if open_assignment:
        return False
    if MANAGER in roles:
        return True
    if ADJUDICATOR in roles:
        return item.status in (StudyItem.Status.IN_RESOLUTION, StudyItem.Status.RESOLVED)
    return False


def item_machine_labels(*, item: StudyItem) -> list[MachineLabel]:
    """The latest label of each machine annotator on each dimension of an item."""
    labels = (
        machine_labels_current(study_id=item.study_id)
        .filter(item=item)
        .select_related("run__annotator", "dimension")
        .order_by("run_id")
    )
    latest: dict[tuple[int, int], MachineLabel] = {}
    for label in labels:
        latest[(label.run.annotator_id, label.dimension_id)] = label
    return sorted(
        latest.values(), key=lambda label: (label.run.annotator.name, label.dimension.position)
    )
