"""Moving a study to a later version of its codebook: its labels follow the version's mapping.

Each annotation and gold label moves to the new version's dimension. A category that was kept,
renamed or merged is replaced by its successor, and when that changes the label's keys the
change is a revision ("codebook migrated to 2.0"). A category that was split or removed has no
one successor: the label keeps it (nothing is deleted or guessed) and is flagged for re-checking
(`needs_review_since`, with a note saying what happened), which puts it on the annotator's
re-check list, or the adjudicator's for a gold label. The assignments keep the version they were
submitted under, so that agreement can still be reported per version.
"""

from collections import defaultdict
from dataclasses import dataclass

from django.contrib.auth.models import AbstractBaseUser
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from common.bulk import bulk_insert
from common.exceptions import ApplicationError, PermissionDeniedError
from labeling.access import study_can_change_codebook
from labeling.models import (
    Annotation,
    AnnotationRevision,
    Assignment,
    Resolution,
    ResolutionRevision,
    Study,
    StudyCodebookChange,
    StudyEvent,
)
from labeling.services.lifecycle import study_check_open, study_event_record
from taxonomy.diff import MERGE, REMOVE, SPLIT, CategoryFate, version_mapping
from taxonomy.models import Category, CodebookVersion, Dimension

FOLLOW = {"keep", "rename", MERGE}
BATCH = 2000


@dataclass
class _Relabel:
    """What one label becomes: its categories (ids) and, when flagged, why."""

    category_ids: list[int]
    keys_before: list[str]
    keys_after: list[str]
    review_note: str


@transaction.atomic
def study_codebook_migrate(
    *, study: Study, to_version: CodebookVersion, by: AbstractBaseUser | None
) -> StudyCodebookChange:
    """Move a study to `to_version`, a published later version of its codebook, in one
    transaction. `by` must manage the study (None: a command run by the operator). Refused with
    nothing changed: a draft, a version of another codebook, the study's own version, a version
    that is not a descendant of it (no mapping leads there)."""
    study = (
        Study.objects.select_for_update(of=("self",))
        .select_related("codebook_version__codebook")
        .get(pk=study.pk)
    )
    if by is not None and not study_can_change_codebook(study=study, user=by):
        raise PermissionDeniedError("Only the study's managers move it to another version.")
    study_check_open(study_id=study.pk)
    from_version = study.codebook_version
    to_version = CodebookVersion.objects.select_related("codebook").get(pk=to_version.pk)
    if not to_version.is_published:
        raise ApplicationError(
            f"Version {to_version.label} is a draft: publish it before moving a study to it.",
            {"version": ["draft"]},
        )
    if to_version.codebook_id != from_version.codebook_id:
        raise ApplicationError(
            f"{study.name} labels with {from_version.codebook.name}; version {to_version.label} "
            f"belongs to {to_version.codebook.name}.",
            {"version": ["another codebook"]},
        )
    if to_version.pk == from_version.pk:
        raise ApplicationError(
            f"{study.name} uses version {to_version.label} already.", {"version": ["current"]}
        )
    fates = version_mapping(from_version=from_version, to_version=to_version)
    dimension_of = _dimension_map(from_version, to_version)
    categories = {
        c.id: c for c in Category.objects.filter(dimension__version__in=[from_version, to_version])
    }
    now = timezone.now()
    reason = f"codebook migrated to {to_version.label}"
    counts = defaultdict(int)

    annotations = (
        Annotation.objects.filter(assignment__item__study=study)
        .select_related("assignment")
        .prefetch_related("categories")
        .order_by("id")
    )
    changed_assignments: set[int] = set()
    changed: list[int] = []
    flagged: dict[str, list[int]] = defaultdict(list)
    for batch in _batches(annotations):
        relabels = [
            _relabel(annotation.categories.all(), fates, categories, to_version)
            for annotation in batch
        ]
        revisions = []
        for annotation, relabel in zip(batch, relabels, strict=True):
            counts["annotations"] += 1
            if relabel.keys_after != relabel.keys_before:
                counts["annotations_migrated"] += 1
                changed.append(annotation.id)
                changed_assignments.add(annotation.assignment_id)
                revisions.append(
                    {
                        "annotation_id": annotation.id,
                        "category_keys": relabel.keys_after,
                        "unsure": annotation.unsure,
                        "rationale": annotation.rationale,
                        "evidence": annotation.evidence,
                        "proposal": annotation.proposal,
                        "assignment_status": annotation.assignment.status,
                        "changed_by_id": None if by is None else by.pk,
                        "reason": reason,
                    }
                )
            if relabel.review_note:
                counts["annotations_flagged"] += 1
                changed_assignments.add(annotation.assignment_id)
                flagged[relabel.review_note].append(annotation.id)
        _categories_replace(Annotation.categories.through, "annotation_id", batch, relabels)
        bulk_insert(AnnotationRevision, revisions)
    # Grouped updates: a few statements, where bulk_update would build a CASE per row.
    study_annotations = Annotation.objects.filter(assignment__item__study=study)
    for old_id, new_id in dimension_of.items():
        study_annotations.filter(dimension_id=old_id).update(dimension_id=new_id)
    for chunk in _chunks(changed):
        Annotation.objects.filter(pk__in=chunk).update(version=F("version") + 1)
    for note, ids in flagged.items():
        for chunk in _chunks(ids):
            Annotation.objects.filter(pk__in=chunk).update(needs_review_since=now, review_note=note)
    # An open tab holding the old version's labels must reload rather than save over them.
    for chunk in _chunks(sorted(changed_assignments)):
        Assignment.objects.filter(pk__in=chunk).update(version=F("version") + 1)

    resolutions = (
        Resolution.objects.filter(item__study=study).prefetch_related("categories").order_by("id")
    )
    changed, flagged = [], defaultdict(list)
    for batch in _batches(resolutions):
        relabels = [
            _relabel(resolution.categories.all(), fates, categories, to_version)
            for resolution in batch
        ]
        revisions = []
        for resolution, relabel in zip(batch, relabels, strict=True):
            counts["resolutions"] += 1
            if relabel.keys_after != relabel.keys_before:
                counts["resolutions_migrated"] += 1
                changed.append(resolution.id)
                revisions.append(
                    {
                        "resolution_id": resolution.id,
                        "category_keys": relabel.keys_after,
                        "method": resolution.method,
                        "note": reason,
                        "previous_category_keys": relabel.keys_before,
                        "previous_method": resolution.method,
                        "changed_by_id": None if by is None else by.pk,
                    }
                )
            if relabel.review_note:
                counts["resolutions_flagged"] += 1
                flagged[relabel.review_note].append(resolution.id)
        _categories_replace(Resolution.categories.through, "resolution_id", batch, relabels)
        bulk_insert(ResolutionRevision, revisions)
    study_resolutions = Resolution.objects.filter(item__study=study)
    for old_id, new_id in dimension_of.items():
        study_resolutions.filter(dimension_id=old_id).update(dimension_id=new_id)
    for chunk in _chunks(changed):
        Resolution.objects.filter(pk__in=chunk).update(version=F("version") + 1)
    for note, ids in flagged.items():
        for chunk in _chunks(ids):
            # A decision recorded after this moment (updated_at later) settles the flag.
            Resolution.objects.filter(pk__in=chunk).update(
                needs_review_since=now, updated_at=now, review_note=note
            )

    study.codebook_version = to_version
    study.save(update_fields=["codebook_version", "updated_at"])
    study_event_record(
        study=study,
        actor=by,
        action=StudyEvent.Action.CODEBOOK_MOVED,
        details={"from": from_version.label, "to": to_version.label, "counts": dict(counts)},
    )
    return StudyCodebookChange.objects.create(
        study=study,
        from_version=from_version,
        to_version=to_version,
        changed_by=by,
        counts=dict(counts),
    )


def _dimension_map(from_version: CodebookVersion, to_version: CodebookVersion) -> dict[int, int]:
    new = dict(Dimension.objects.filter(version=to_version).values_list("key", "id"))
    mapping = {}
    for dimension_id, key in Dimension.objects.filter(version=from_version).values_list(
        "id", "key"
    ):
        if key not in new:
            raise ApplicationError(
                f"Version {to_version.label} has no dimension {key}: the study's labels on it "
                "would have nowhere to go.",
                {"version": [f"dimension {key} missing"]},
            )
        mapping[dimension_id] = new[key]
    return mapping


def _relabel(
    held: list[Category],
    fates: dict[int, CategoryFate],
    categories: dict[int, Category],
    to_version: CodebookVersion,
) -> _Relabel:
    ids: list[int] = []
    notes: list[str] = []
    for category in held:
        fate = fates.get(category.id)
        if fate is None:
            # A category of an earlier version still waiting to be re-checked: it stays.
            ids.append(category.id)
        elif fate.kind in FOLLOW:
            ids.extend(fate.targets)
        else:
            ids.append(category.id)
            notes.append(_note(category, fate, categories, to_version))
    ids = list(dict.fromkeys(ids))
    key_of = {c.id: c.key for c in held} | {i: categories[i].key for i in ids if i in categories}
    return _Relabel(
        category_ids=ids,
        keys_before=sorted(c.key for c in held),
        keys_after=sorted(key_of[i] for i in ids),
        review_note=" ".join(notes)[:500],
    )


def _note(
    category: Category,
    fate: CategoryFate,
    categories: dict[int, Category],
    to_version: CodebookVersion,
) -> str:
    if fate.kind == SPLIT:
        parts = ", ".join(f"{categories[t].name} ({categories[t].key})" for t in fate.targets)
        return (
            f"Version {to_version.label} split {category.name} ({category.key}) into {parts}: "
            "choose again."
        )
    verb = "removed" if fate.kind == REMOVE else "dropped"
    return f"Version {to_version.label} {verb} {category.name} ({category.key}): choose again."


def _categories_replace(through, column: str, objects: list, relabels: list[_Relabel]) -> None:
    ids = [obj.id for obj in objects]
    through.objects.filter(**{f"{column}__in": ids}).delete()
    bulk_insert(
        through,
        [
            {column: obj.id, "category_id": category_id}
            for obj, relabel in zip(objects, relabels, strict=True)
            for category_id in relabel.category_ids
        ],
    )


def _batches(queryset):
    """The rows of a queryset in batches of BATCH, by id, each with its prefetches."""
    last = 0
    while True:
        batch = list(queryset.filter(id__gt=last)[:BATCH])
        if not batch:
            return
        yield batch
        last = batch[-1].id


def _chunks(values: list[int]):
    for start in range(0, len(values), BATCH):
        yield values[start : start + BATCH]
