"""Reads of a study's codebook over time: the versions it moved through, the versions its labels
were submitted under, and agreement reported for each of them."""

from dataclasses import replace

from django.db.models import Count, QuerySet

from labeling.access import MANAGER, item_list_for_resolution
from labeling.agreement_report import LabelTableFilter, study_agreement_report
from labeling.models import (
    Annotation,
    Assignment,
    Resolution,
    Study,
    StudyCodebookChange,
    StudyItem,
)
from taxonomy.models import CodebookVersion


def study_codebook_history(*, study: Study) -> QuerySet[StudyCodebookChange]:
    """Each move of the study to another version, oldest first."""
    return StudyCodebookChange.objects.filter(study=study).select_related(
        "from_version", "to_version", "changed_by"
    )


def study_label_versions(*, study: Study) -> list[tuple[CodebookVersion, int]]:
    """The codebook versions the study's submitted labels were given under, oldest first, each
    with its number of submitted assignments."""
    counts = dict(
        Assignment.objects.filter(
            item__study=study,
            status=Assignment.Status.SUBMITTED,
            codebook_version__isnull=False,
        )
        .values_list("codebook_version")
        .annotate(n=Count("id"))
        .order_by()
    )
    versions = CodebookVersion.objects.filter(pk__in=counts).order_by("created_at", "id")
    return [(version, counts[version.pk]) for version in versions]


def study_version_get(*, study: Study, label: str) -> CodebookVersion | None:
    """A version of the study's codebook by label, or None."""
    return CodebookVersion.objects.filter(
        codebook_id=study.codebook_version.codebook_id, label=label
    ).first()


def agreement_by_version(*, study: Study, **report_options) -> dict[str, dict]:
    """The agreement report once per codebook version the labels were submitted under, by
    version label. Each counts the labels given under that version, as they are now: a label
    migrated by a rename or a merge counts under its new key, one flagged for re-checking under
    its old key until it is re-checked (and then under the version it was re-submitted in)."""
    filters: LabelTableFilter = report_options.pop("filters", None) or LabelTableFilter()
    reports = {}
    for version, _ in study_label_versions(study=study):
        per_version = replace(filters, codebook_version_id=version.pk)
        reports[version.label] = study_agreement_report(
            study=study, filters=per_version, **report_options
        )
    return reports


def study_category_counts(
    *, study: Study, roles: set[str] | None = None
) -> dict[tuple[str, str], dict[str, int]]:
    """How often each category is used in a study, by (dimension key, category key): in
    submitted labels ("labels") and in gold labels ("gold"). Two queries.

    With `roles`, only the items those roles may see side by side count
    (`item_list_for_resolution`): a manager's are every item, an adjudicator's the items in
    resolution or resolved, whose labels are all in; an item still being labeled would tell an
    adjudicator how its first labels lean before the last annotator has given theirs. Without
    `roles` (the command line, run by whoever runs the instance), every item counts."""
    items = (
        StudyItem.objects.filter(study=study)
        if roles is None
        else item_list_for_resolution(study=study, roles=roles)
    )
    counts: dict[tuple[str, str], dict[str, int]] = {}
    used = (
        Annotation.objects.filter(
            assignment__item__in=items,
            assignment__status=Assignment.Status.SUBMITTED,
            categories__isnull=False,
        )
        .values_list("dimension__key", "categories__key")
        .annotate(n=Count("id"))
        .order_by()
    )
    for dimension_key, category_key, n in used:
        counts.setdefault((dimension_key, category_key), {"labels": 0, "gold": 0})["labels"] += n
    gold = (
        Resolution.objects.filter(item__in=items, categories__isnull=False)
        .values_list("dimension__key", "categories__key")
        .annotate(n=Count("id"))
        .order_by()
    )
    for dimension_key, category_key, n in gold:
        counts.setdefault((dimension_key, category_key), {"labels": 0, "gold": 0})["gold"] += n
    return counts


def study_category_counts_title(*, study: Study, roles: set[str] | None = None) -> str:
    """What `study_category_counts` counted, for the export's "Counts:" line."""
    if roles is not None and MANAGER not in roles:
        return (
            f"submitted labels and gold labels of the items of the study {study.name} in "
            "resolution or resolved"
        )
    return f"submitted labels and gold labels of the study {study.name}"
