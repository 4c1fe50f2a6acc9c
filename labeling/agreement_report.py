"""Agreement of a study: the label table from the database, and the report built on it.

The arithmetic is in `labeling.agreement` (pure); this module only selects and shapes data.
"""

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime

from django.contrib.auth import get_user_model

from common.exceptions import ApplicationError
from labeling.agreement import dimension_agreement, interpret_kappa
from labeling.models import Annotation, Assignment, Round, Study, StudyItem
from labeling.selectors import study_dimensions
from taxonomy.models import Category, Dimension

# Bootstrap resamples of one report, at most: each resample recomputes every pair's kappa, so
# 10,000 held a web worker for most of a minute; 2,000 give stable 95% intervals.
MAX_BOOTSTRAP = 2000
# The page's "95% intervals" when no number of resamples is given.
PAGE_BOOTSTRAP = 1000


@dataclass
class DimensionTable:
    """The submitted ratings of one dimension: one row per (item, annotator)."""

    dimension: Dimension
    categories: list[str]  # keys in codebook order (at the rolled-up level, when rolled up)
    item_ids: list[int] = field(default_factory=list)
    annotators: list[str] = field(default_factory=list)
    label_sets: list[frozenset[str]] = field(default_factory=list)


@dataclass(frozen=True)
class LabelTableFilter:
    round_name: str | None = None
    repository: str | None = None  # "owner/name"
    submitted_after: datetime | None = None
    submitted_before: datetime | None = None
    codebook_version_id: int | None = None  # labels submitted under this codebook version


def agreement_query_check(
    *,
    study: Study,
    dimension_keys: Iterable[str] | None = None,
    filters: LabelTableFilter | None = None,
    bootstrap: int = 0,
) -> None:
    """Refuse what a report would silently answer with nothing, or take too long over: a
    dimension, round or repository the study does not have, and more than MAX_BOOTSTRAP
    resamples. The ApplicationError names the parameter in its details, as the API's 400 does;
    the command and the page show its message."""
    filters = filters or LabelTableFilter()
    if not 0 <= bootstrap <= MAX_BOOTSTRAP:
        raise ApplicationError(
            f"bootstrap is between 0 and {MAX_BOOTSTRAP:,} resamples.",
            {"bootstrap": [f"Ensure this value is between 0 and {MAX_BOOTSTRAP}."]},
        )
    if dimension_keys:
        known = {dimension.key for dimension in study_dimensions(study=study)}
        unknown = sorted(set(dimension_keys) - known)
        if unknown:
            raise ApplicationError(
                f"Unknown dimension: {', '.join(unknown)}",
                {"dimension": [f"{key!r} is not a dimension of this study." for key in unknown]},
            )
    if filters.round_name and not study.rounds.filter(name=filters.round_name).exists():
        raise ApplicationError(
            f"Unknown round: {filters.round_name}",
            {"round": [f"{filters.round_name!r} is not a round of this study."]},
        )
    if filters.repository:
        owner, _, name = filters.repository.partition("/")
        present = StudyItem.objects.filter(
            study=study, issue__repository__owner=owner, issue__repository__name=name
        ).exists()
        if not present:
            raise ApplicationError(
                f"Unknown repository: {filters.repository}",
                {"repository": [f"{filters.repository!r} has no issue in this study."]},
            )


def study_label_table(
    *,
    study: Study,
    dimension_keys: Iterable[str] | None = None,
    filters: LabelTableFilter | None = None,
    level: int | None = None,
) -> dict[str, DimensionTable]:
    """(item, annotator, dimension, categories) of every submitted annotation of a study, as
    per-dimension columns, in three queries whatever the study size.

    A dimension that applies only under a condition (`applies_when`, e.g. root cause only for
    items screened in) keeps only the ratings of annotators for whom the condition held, so an
    item one annotator screened out does not count as a root-cause disagreement. Ratings without
    an answer on the condition's dimension are kept.
    `level` rolls categories up the tree: 0 maps every category to its top-level ancestor.
    """
    dimensions = study_dimensions(study=study)
    wanted = set(dimension_keys) if dimension_keys is not None else None
    categories = list(
        Category.objects.filter(dimension__version_id=study.codebook_version_id)
        .order_by("dimension__position", "position")
        .values_list("id", "dimension_id", "parent_id", "key")
    )
    key_of = _rolled_up_keys(categories, level)
    filters = filters or LabelTableFilter()

    annotations = Annotation.objects.filter(
        assignment__item__study=study, assignment__status=Assignment.Status.SUBMITTED
    )
    if filters.round_name:
        annotations = annotations.filter(assignment__item__round__name=filters.round_name)
    if filters.repository:
        owner, _, name = filters.repository.partition("/")
        annotations = annotations.filter(
            assignment__item__issue__repository__owner=owner,
            assignment__item__issue__repository__name=name,
        )
    if filters.submitted_after:
        annotations = annotations.filter(assignment__submitted_at__gte=filters.submitted_after)
    if filters.submitted_before:
        annotations = annotations.filter(assignment__submitted_at__lt=filters.submitted_before)
    if filters.codebook_version_id:
        annotations = annotations.filter(
            assignment__codebook_version_id=filters.codebook_version_id
        )
    # One row per (annotation, category), or (annotation, None) for "none applies": a single
    # LEFT JOIN instead of one query per table, and ids instead of names until the end.
    rows = annotations.values_list(
        "assignment__item_id", "assignment__annotator_id", "dimension_id", "categories"
    ).order_by()
    rows = list(rows)
    # A label flagged by a codebook change keeps its category of the earlier version until it
    # is re-checked (labeling.services.codebook_migration): it counts under its own key.
    outside = {row[3] for row in rows} - key_of.keys() - {None}
    if outside:
        key_of |= dict(Category.objects.filter(id__in=outside).values_list("id", "key"))
    dimension_key = {dimension.id: dimension.key for dimension in dimensions}
    answers: dict[tuple[int, int], dict[str, set[str]]] = defaultdict(dict)
    for item_id, annotator_id, dimension_id, category_id in rows:
        chosen = answers[(item_id, annotator_id)].setdefault(dimension_key[dimension_id], set())
        if category_id is not None:
            chosen.add(key_of[category_id])
    usernames = dict(
        get_user_model()
        .objects.filter(id__in={annotator_id for _, annotator_id in answers})
        .values_list("id", "username")
    )

    tables = {
        dimension.key: DimensionTable(
            dimension=dimension,
            categories=list(
                dict.fromkeys(
                    key_of[category_id]
                    for category_id, dimension_id, _, _ in categories
                    if dimension_id == dimension.id
                )
            ),
        )
        for dimension in dimensions
        if wanted is None or dimension.key in wanted
    }
    for (item_id, annotator_id), by_dimension in answers.items():
        annotator = usernames[annotator_id]
        for key, label_set in by_dimension.items():
            table = tables.get(key)
            if table is None or not table.dimension.applies_given(by_dimension):
                continue
            table.item_ids.append(item_id)
            table.annotators.append(annotator)
            table.label_sets.append(frozenset(label_set))
    return tables


def _rolled_up_keys(
    categories: list[tuple[int, int, int | None, str]], level: int | None
) -> dict[int, str]:
    parent_of = {category_id: parent_id for category_id, _, parent_id, _ in categories}
    key_by_id = {category_id: key for category_id, _, _, key in categories}
    if level is None:
        return key_by_id
    rolled: dict[int, str] = {}
    for category_id in key_by_id:
        path = [category_id]
        while parent_of[path[-1]] is not None:
            path.append(parent_of[path[-1]])
        path.reverse()  # root first
        rolled[category_id] = key_by_id[path[min(level, len(path) - 1)]]
    return rolled


def study_agreement_report(
    *,
    study: Study,
    dimension_keys: Iterable[str] | None = None,
    filters: LabelTableFilter | None = None,
    level: int | None = None,
    weights: str | None = None,
    bootstrap: int = 0,
    seed: int = 0,
) -> dict:
    """The agreement report of DESIGN.md: per dimension, percent agreement, Cohen's kappa per
    pair (mean, intervals), Fleiss' kappa, Krippendorff's alpha, per-category kappa.

    Ordinal dimensions use `weights` ("linear" by default, or "quadratic") for Cohen's kappa.
    """
    filters = filters or LabelTableFilter()
    tables = study_label_table(
        study=study, dimension_keys=dimension_keys, filters=filters, level=level
    )
    dimensions = _dimensions_report(tables, weights=weights, bootstrap=bootstrap, seed=seed)
    return {
        "study": study.slug,
        "filters": {
            "round": filters.round_name,
            "repository": filters.repository,
            "level": level,
            "bootstrap": bootstrap,
            "seed": seed,
        },
        "dimensions": dimensions,
    }


def _dimensions_report(
    tables: dict[str, DimensionTable],
    *,
    weights: str | None = None,
    bootstrap: int = 0,
    seed: int = 0,
) -> dict[str, dict]:
    dimensions = {}
    for key, table in tables.items():
        report = dimension_agreement(
            table.item_ids,
            table.annotators,
            table.label_sets,
            categories=table.categories,
            multi_label=table.dimension.multi_label,
            ordinal=table.dimension.ordinal,
            weights=(weights or "linear") if table.dimension.ordinal else None,
            bootstrap=bootstrap,
            seed=seed,
        )
        report["name"] = table.dimension.name
        report["multi_label"] = table.dimension.multi_label
        report["required"] = table.dimension.required
        dimensions[key] = report
    return dimensions


def _rows_of_items(table: DimensionTable, item_ids: set[int]) -> DimensionTable:
    keep = [index for index, item_id in enumerate(table.item_ids) if item_id in item_ids]
    return DimensionTable(
        dimension=table.dimension,
        categories=table.categories,
        item_ids=[table.item_ids[index] for index in keep],
        annotators=[table.annotators[index] for index in keep],
        label_sets=[table.label_sets[index] for index in keep],
    )


@dataclass
class RoundStatus:
    round: Round
    kappa_by_dimension: dict[str, float | None]
    target: float | None
    failing: list[str]  # names of required dimensions below the target (or undefined)

    @property
    def passed(self) -> bool | None:
        if self.target is None:
            return None
        return not self.failing


def study_round_statuses(*, study: Study) -> list[RoundStatus]:
    """Per round: the mean Cohen's kappa of each dimension, and, where the round carries a
    target, whether every required dimension reached it."""
    # The labels are read once and split by round, not read again for every round.
    tables = study_label_table(study=study)
    items_by_round: dict[int, set[int]] = defaultdict(set)
    for item_id, round_id in StudyItem.objects.filter(study=study).values_list("id", "round_id"):
        items_by_round[round_id].add(item_id)
    statuses = []
    for round_ in Round.objects.filter(study=study).order_by("position"):
        dimensions = _dimensions_report(
            {key: _rows_of_items(table, items_by_round[round_.id]) for key, table in tables.items()}
        )
        kappas = {key: dimension["cohen_kappa"]["mean"] for key, dimension in dimensions.items()}
        failing = []
        if round_.target_kappa is not None:
            failing = [
                dimension["name"]
                for key, dimension in dimensions.items()
                if dimension["required"]
                and (kappas[key] is None or kappas[key] < round_.target_kappa)
            ]
        statuses.append(
            RoundStatus(
                round=round_,
                kappa_by_dimension=kappas,
                target=round_.target_kappa,
                failing=failing,
            )
        )
    return statuses


def report_rows(report: dict) -> list[dict]:
    """One flat row per dimension, for tables and downloads."""
    rows = []
    for key, dimension in report["dimensions"].items():
        kappa = dimension["cohen_kappa"]
        rows.append(
            {
                "dimension": key,
                "name": dimension["name"],
                "n_items": dimension["n_items"],
                "n_annotators": dimension["n_annotators"],
                "percent_agreement": dimension["percent_agreement"],
                "cohen_kappa": kappa["mean"],
                "ci95_low": kappa["ci95"][0] if kappa.get("ci95") else None,
                "ci95_high": kappa["ci95"][1] if kappa.get("ci95") else None,
                "fleiss_kappa": dimension["fleiss_kappa"],
                "krippendorff_alpha": dimension["krippendorff_alpha"],
                "interpretation": interpret_kappa(kappa["mean"]),
            }
        )
    return rows
