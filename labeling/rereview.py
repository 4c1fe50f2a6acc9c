"""Reads of what a codebook change left to re-check: an annotator's labels whose category was
split or removed, and gold labels in the same case (labeling.services.codebook_migration)."""

from collections.abc import Iterable

from django.contrib.auth.models import AbstractBaseUser
from django.db.models import F, Q, QuerySet

from labeling.models import Annotation, Assignment, Resolution, Study

# A gold label is settled again by any decision recorded after it was flagged.
RESOLUTION_FLAGGED = Q(needs_review_since__isnull=False, updated_at__lte=F("needs_review_since"))


def recheck_list_for_annotator(*, study: Study, user: AbstractBaseUser) -> QuerySet[Annotation]:
    """The annotator's labels to re-check in a study, by item, with what to show of each."""
    return (
        Annotation.objects.filter(
            assignment__item__study=study,
            assignment__annotator=user,
            needs_review_since__isnull=False,
        )
        .select_related("assignment__item__issue__repository", "dimension")
        .prefetch_related("categories")
        .order_by("assignment__item_id", "dimension__position")
    )


def recheck_count_for_annotator(*, study: Study, user: AbstractBaseUser) -> int:
    return Annotation.objects.filter(
        assignment__item__study=study,
        assignment__annotator=user,
        needs_review_since__isnull=False,
    ).count()


def assignment_has_recheck(
    *, assignment: Assignment, annotations: Iterable[Annotation] | None = None
) -> bool:
    """Whether some label of the assignment waits to be re-checked (the labeling page stays
    writable for it even when the item went to resolution). `annotations`: all of the
    assignment's, when the caller read them (`labeling.selectors.assignment_annotations`);
    they are not read again."""
    if annotations is not None:
        return any(annotation.needs_review_since is not None for annotation in annotations)
    return assignment.annotations.filter(needs_review_since__isnull=False).exists()


def resolutions_to_recheck(*, study: Study) -> QuerySet[Resolution]:
    """Gold labels of a study that a codebook change flagged and nobody decided again since."""
    return (
        Resolution.objects.filter(RESOLUTION_FLAGGED, item__study=study)
        .select_related("item__issue__repository", "dimension")
        .prefetch_related("categories")
        .order_by("item_id", "dimension__position")
    )


def recheck_summary(*, study: Study) -> dict[str, int]:
    """How much waits to be re-checked in a study: labels, the annotators concerned, gold."""
    flagged = Annotation.objects.filter(
        assignment__item__study=study, needs_review_since__isnull=False
    )
    return {
        "annotations": flagged.count(),
        "annotators": flagged.values("assignment__annotator").distinct().count(),
        "resolutions": Resolution.objects.filter(RESOLUTION_FLAGGED, item__study=study).count(),
    }
