"""Agreement of a study: the label table from the database, and the report built on it.

The arithmetic is in `labeling.agreement` (pure); this module only selects and shapes data. The
label table is read once per report; the per-round and per-repository views split that one
read by the items' round or repository instead of reading it again for each.
"""

from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field, replace
from datetime import datetime

from django.contrib.auth import get_user_model
from django.db import connection
from django.db.models.functions import Coalesce
from django.utils.module_loading import import_string

from common.exceptions import ApplicationError
from labeling.agreement import (
    DEFAULT_MIN_PAIR_ITEMS,
    MIN_ITEMS_FOR_KAPPA,
    interpret_kappa,
    kappa_undetermined_reason,
)
from labeling.agreement_methods import methods_url
from labeling.models import Annotation, Assignment, Round, Study, StudyItem
from labeling.report_extensions import REPORT_EXTENSIONS
from labeling.selectors import study_dimensions
from taxonomy.models import Category, Dimension

# Bootstrap resamples of one report, at most: each resample recomputes every pair's kappa, so
# 10,000 held a web worker for most of a minute; 2,000 give stable 95% intervals.
MAX_BOOTSTRAP = 2000
# The page's "95% intervals" (and the command's --intervals) when no number of resamples is given.
PAGE_BOOTSTRAP = 1000
# Cohen's kappa on an ordinal dimension is weighted, linearly unless the request says otherwise.
DEFAULT_ORDINAL_WEIGHTS = "linear"
# The largest minimum overlap a report takes: above any study's size it would only empty the
# means, and a bound keeps the parameter a number people type, not an overflow.
MAX_MIN_PAIR_ITEMS = 100_000


@dataclass
class DimensionTable:
    """The submitted ratings of one dimension: one row per (item, annotator)."""

    dimension: Dimension
    categories: list[str]  # keys in codebook order (at the rolled-up level, when rolled up)
    # Ordinal dimensions: the number of each category on the scale (codebook `value`), None
    # for positions 1..n.
    scale_values: list[float] | None = None
    # The condition under which the dimension is answered, in names (see `applies_when_text`).
    applies_when: dict | None = None
    # Every category's name by key, for pages that show the categories to people.
    category_names: dict[str, str] = field(default_factory=dict)
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
    min_pair_items: int = DEFAULT_MIN_PAIR_ITEMS,
    weights: str | None = None,
) -> None:
    """Refuse what a report would silently answer with nothing, or take too long over: a
    dimension, round or repository the study does not have, more than MAX_BOOTSTRAP
    resamples, a minimum overlap outside 1..MAX_MIN_PAIR_ITEMS, kappa weights for nominal
    dimensions only (weights order categories, which a nominal dimension does not have). The
    ApplicationError names the parameter in its details, as the API's 400 does; the command and
    the page show its message."""
    filters = filters or LabelTableFilter()
    if not 0 <= bootstrap <= MAX_BOOTSTRAP:
        raise ApplicationError(
            f"bootstrap is between 0 and {MAX_BOOTSTRAP:,} resamples.",
            {"bootstrap": [f"Ensure this value is between 0 and {MAX_BOOTSTRAP}."]},
        )
    if not 1 <= min_pair_items <= MAX_MIN_PAIR_ITEMS:
        raise ApplicationError(
            f"min_pair_items is between 1 and {MAX_MIN_PAIR_ITEMS:,} shared items.",
            {"min_pair_items": [f"Ensure this value is between 1 and {MAX_MIN_PAIR_ITEMS}."]},
        )
    dimensions = study_dimensions(study=study)
    if dimension_keys:
        known = {dimension.key for dimension in dimensions}
        unknown = sorted(set(dimension_keys) - known)
        if unknown:
            raise ApplicationError(
                f"Unknown dimension: {', '.join(unknown)}",
                {"dimension": [f"{key!r} is not a dimension of this study." for key in unknown]},
            )
    if weights is not None:
        chosen = [d for d in dimensions if not dimension_keys or d.key in dimension_keys]
        nominal = [d.key for d in chosen if not (d.ordinal and not d.multi_label)]
        if (dimension_keys and nominal) or not any(d.ordinal for d in chosen):
            named = ", ".join(nominal) or "none of the study's dimensions is ordinal"
            raise ApplicationError(
                f"Weights are for ordinal dimensions; nominal: {named}",
                {"weights": [f"Kappa weights need an ordinal dimension (nominal: {named})."]},
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
    category_rows = list(
        Category.objects.filter(dimension__version_id=study.codebook_version_id)
        .order_by("dimension__position", "position")
        .values_list("id", "dimension_id", "parent_id", "key", "name", "metadata")
    )
    categories = [row[:4] for row in category_rows]
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
    # LEFT JOIN instead of one query per table, and ids instead of names until the end. Read as
    # plain tuples and grouped with numpy: a study of 10k items x 3 annotators x 9 dimensions
    # has 300k such rows, too many for a Python loop over dicts on a page.
    rows = annotations.values_list(
        "assignment__item_id",
        "assignment__annotator_id",
        "dimension_id",
        Coalesce("categories", 0),  # 0: none applies
    ).order_by()
    sql, params = rows.query.sql_with_params()
    # numpy is imported with the first report, not with the pages that import this module.
    from labeling.agreement.label_table import LabelColumns

    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        columns = LabelColumns.of_rows(cursor.fetchall())
    # A label flagged by a codebook change keeps its category of the earlier version until it
    # is re-checked (labeling.services.codebook_migration): it counts under its own key.
    outside = set(columns.categories_used().tolist()) - key_of.keys()
    if outside:
        key_of |= dict(Category.objects.filter(id__in=outside).values_list("id", "key"))
    usernames = dict(
        get_user_model()
        .objects.filter(id__in=columns.annotator_ids.tolist())
        .values_list("id", "username")
    )
    grouped = columns.grouped(key_of=key_of, usernames=usernames)

    tables = {}
    for dimension in dimensions:
        if wanted is not None and dimension.key not in wanted:
            continue
        keys = list(
            dict.fromkeys(
                key_of[category_id]
                for category_id, dimension_id, _, _ in categories
                if dimension_id == dimension.id
            )
        )
        item_ids, annotators, label_sets = grouped.ratings(dimension, dimensions)
        tables[dimension.key] = DimensionTable(
            dimension=dimension,
            categories=keys,
            scale_values=_scale_values(dimension, keys, category_rows),
            applies_when=_applies_when(dimension, dimensions, category_rows),
            category_names={
                key: name
                for _, dimension_id, _, key, name, _ in category_rows
                if dimension_id == dimension.id
            },
            item_ids=item_ids,
            annotators=annotators,
            label_sets=label_sets,
        )
    return tables


def _scale_values(
    dimension: Dimension, keys: list[str], category_rows: list[tuple]
) -> list[float] | None:
    """The numbers of an ordinal dimension's categories (codebook `value`), in the order of
    `keys`; None (positions 1..n) when the dimension is nominal or a category has none."""
    if not dimension.ordinal or dimension.multi_label:
        return None
    value_of = {
        key: metadata.get("value")
        for _, dimension_id, _, key, _, metadata in category_rows
        if dimension_id == dimension.id
    }
    values = [value_of.get(key) for key in keys]
    if any(isinstance(v, bool) or not isinstance(v, int | float) for v in values):
        return None
    return [float(v) for v in values]


def _applies_when(
    dimension: Dimension, dimensions: list[Dimension], category_rows: list[tuple]
) -> dict | None:
    """The dimension's condition in names, for captions: which earlier dimension, which of its
    categories (the first condition; the starter codebook has one)."""
    if not dimension.applies_when:
        return None
    condition_key, category_keys = next(iter(dimension.applies_when.items()))
    condition = next((d for d in dimensions if d.key == condition_key), None)
    if condition is None:
        return None
    name_of = {
        key: name
        for _, dimension_id, _, key, name, _ in category_rows
        if dimension_id == condition.id
    }
    return {
        "dimension": condition.key,
        "dimension_name": condition.name,
        "categories": [name_of.get(key, key) for key in category_keys],
    }


def applies_when_text(dimension: dict) -> str | None:
    """Point 8 of a methods reviewer's list: a dimension answered only under a condition counts
    only the ratings for which it held, and a caption must say so."""
    condition = dimension.get("applies_when")
    if not condition:
        return None
    chosen = " or ".join(f"“{name}”" for name in condition["categories"])
    return (
        f"{dimension['name']} counts only the ratings of annotators who chose {chosen} on "
        f"{condition['dimension_name']}; an item one annotator screened out is not a "
        "disagreement here."
    )


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
    min_pair_items: int = DEFAULT_MIN_PAIR_ITEMS,
) -> dict:
    """The agreement report of DESIGN.md: per dimension, percent agreement, Cohen's kappa per
    pair (the plain and the n-weighted mean over the pairs sharing at least `min_pair_items`
    items, intervals), Fleiss' kappa, Krippendorff's alpha, per-category kappa, warnings.

    Ordinal dimensions use `weights` ("linear" by default, or "quadratic") for Cohen's kappa.
    `filters` of the report says what was asked, the minimum overlap included, so that every
    rendering of the report can state it.
    """
    filters = filters or LabelTableFilter()
    tables = study_label_table(
        study=study, dimension_keys=dimension_keys, filters=filters, level=level
    )
    return _report_of_tables(
        study,
        tables,
        filters=filters,
        level=level,
        weights=weights,
        bootstrap=bootstrap,
        seed=seed,
        min_pair_items=min_pair_items,
    )


def _report_of_tables(
    study: Study,
    tables: dict[str, DimensionTable],
    *,
    filters: LabelTableFilter,
    level: int | None,
    weights: str | None,
    bootstrap: int,
    seed: int,
    min_pair_items: int,
) -> dict:
    dimensions = _dimensions_report(
        tables, weights=weights, bootstrap=bootstrap, seed=seed, min_pair_items=min_pair_items
    )
    for path in REPORT_EXTENSIONS:
        import_string(path)(
            study=study, tables=tables, filters=filters, level=level, dimensions=dimensions
        )
    return {
        "study": study.slug,
        "filters": {
            "round": filters.round_name,
            "repository": filters.repository,
            "level": level,
            "bootstrap": bootstrap,
            "seed": seed,
            "submitted_after": _iso(filters.submitted_after),
            "submitted_before": _iso(filters.submitted_before),
            # The weights in force on the ordinal dimensions (the default when none was asked).
            "weights": next(
                (d["kappa_weights"] for d in dimensions.values() if d["kappa_weights"]), None
            ),
            "min_pair_items": min_pair_items,
            "min_items_for_kappa": MIN_ITEMS_FOR_KAPPA,
        },
        "dimensions": dimensions,
        "methods_url": methods_url(),
    }


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment else None


def _dimensions_report(
    tables: dict[str, DimensionTable],
    *,
    weights: str | None = None,
    bootstrap: int = 0,
    seed: int = 0,
    min_pair_items: int = DEFAULT_MIN_PAIR_ITEMS,
) -> dict[str, dict]:
    from labeling.agreement import dimension_agreement  # numpy, as in study_label_table

    dimensions = {}
    for key, table in tables.items():
        dimension = table.dimension
        ordinal = dimension.ordinal and not dimension.multi_label
        kappa_weights = (weights or DEFAULT_ORDINAL_WEIGHTS) if ordinal else None
        report = dimension_agreement(
            table.item_ids,
            table.annotators,
            table.label_sets,
            categories=table.categories,
            multi_label=dimension.multi_label,
            ordinal=ordinal,
            weights=kappa_weights,
            scale_values=table.scale_values,
            bootstrap=bootstrap,
            seed=seed,
            min_pair_items=min_pair_items,
        )
        report["name"] = dimension.name
        report["multi_label"] = dimension.multi_label
        report["ordinal"] = ordinal
        report["required"] = dimension.required
        report["kappa_weights"] = kappa_weights
        report["applies_when"] = table.applies_when
        dimensions[key] = report
    return dimensions


def _split_by_group(
    table: DimensionTable, group_of_item: dict[int, Hashable], groups: Iterable[Hashable]
) -> dict[Hashable, DimensionTable]:
    """One dimension's rows split by their item's group, in one pass over the rows."""
    parts = {
        group: DimensionTable(
            dimension=table.dimension,
            categories=table.categories,
            scale_values=table.scale_values,
            applies_when=table.applies_when,
            category_names=table.category_names,
        )
        for group in groups
    }
    for item_id, annotator, label_set in zip(
        table.item_ids, table.annotators, table.label_sets, strict=True
    ):
        part = parts.get(group_of_item.get(item_id))
        if part is not None:
            part.item_ids.append(item_id)
            part.annotators.append(annotator)
            part.label_sets.append(label_set)
    return parts


def _reports_by_group(
    tables: dict[str, DimensionTable],
    group_of_item: dict[int, Hashable],
    groups: list[Hashable],
    *,
    weights: str | None,
    min_pair_items: int,
) -> dict[Hashable, dict[str, dict]]:
    """The dimensions' reports of each group of items (a round, a repository), from the one
    label table already read."""
    split = {key: _split_by_group(table, group_of_item, groups) for key, table in tables.items()}
    return {
        group: _dimensions_report(
            {key: parts[group] for key, parts in split.items()},
            weights=weights,
            min_pair_items=min_pair_items,
        )
        for group in groups
    }


def kappa_summary(dimension: dict) -> dict:
    """The headline of one dimension's report, for tables that set many of them side by side."""
    kappa = dimension["cohen_kappa"]
    return {
        "name": dimension["name"],
        "n_items": dimension["n_items"],
        "mean": kappa["mean"],
        "weighted_mean": kappa["weighted_mean"],
        "n_pairs": kappa["n_pairs"],
        "n_pairs_counted": kappa["n_pairs_counted"],
        "warnings": dimension["warnings"],
        "warning_kinds": dimension["warning_kinds"],
    }


@dataclass
class RoundStatus:
    """A round's agreement and, when it carries a target kappa, its calibration verdict."""

    round: Round
    kappa_by_dimension: dict[str, float | None]
    target: float | None  # the round's target for every required dimension
    failing: list[str]  # names of required dimensions whose headline kappa is below the target
    # Required dimensions that cannot be judged (name -> why): no mean kappa, or fewer than
    # MIN_ITEMS_FOR_KAPPA items. An undefined kappa is not a low one.
    undetermined: dict[str, str] = field(default_factory=dict)
    dimensions: dict[str, dict] = field(default_factory=dict)  # key -> kappa_summary
    # Per required dimension (by name), the target it is held to: its own or the round's.
    targets: dict[str, float] = field(default_factory=dict)

    @property
    def has_target(self) -> bool:
        return self.target is not None or bool(self.targets)

    @property
    def passed(self) -> bool | None:
        """True when every required dimension reached the target; False when one fell below
        it; None without a target, or when none fell below but some could not be judged."""
        if not self.has_target:
            return None
        if self.failing:
            return False
        return None if self.undetermined else True

    @property
    def verdict(self) -> str:
        if not self.has_target:
            return "no target"
        if self.failing:
            return "failed"
        return "not judged" if self.undetermined else "passed"

    @property
    def wording(self) -> str:
        """The verdict in one line, the same on every page and download."""
        if not self.has_target:
            return "no target"
        if len(set(self.targets.values())) <= 1 and self.target is not None:
            target = f"target κ {self.target:.2f}"
        else:
            target = "target κ " + ", ".join(
                f"{name} {value:.2f}" for name, value in self.targets.items()
            )
        if self.verdict == "passed":
            return f"{target} passed on every required dimension"
        parts = []
        if self.failing:
            parts.append("not passed on: " + ", ".join(self.failing))
        if self.undetermined:
            parts.append(
                "not judged: "
                + ", ".join(f"{name} ({why})" for name, why in self.undetermined.items())
            )
        return f"{target} " + "; ".join(parts)


def study_round_statuses(
    *,
    study: Study,
    filters: LabelTableFilter | None = None,
    level: int | None = None,
    weights: str | None = None,
    min_pair_items: int = DEFAULT_MIN_PAIR_ITEMS,
) -> list[RoundStatus]:
    """Per round: the mean Cohen's kappa of each dimension and, where the round carries a
    target, whether every required dimension reached it. A required dimension whose kappa is
    undefined or rests on fewer than MIN_ITEMS_FOR_KAPPA items is "not judged" with the
    reason, never failed. `filters` narrow the labels (a round filter is ignored: every round
    is listed)."""
    filters = replace(filters or LabelTableFilter(), round_name=None)
    # The labels are read once and split by round, not read again for every round.
    tables = study_label_table(study=study, filters=filters, level=level)
    groups = _study_item_groups(study)
    return _round_statuses_of_tables(tables, groups, weights=weights, min_pair_items=min_pair_items)


def study_repository_agreement(
    *,
    study: Study,
    dimension_keys: Iterable[str] | None = None,
    filters: LabelTableFilter | None = None,
    level: int | None = None,
    weights: str | None = None,
    min_pair_items: int = DEFAULT_MIN_PAIR_ITEMS,
) -> dict[str, dict[str, dict]]:
    """Per repository of the study ("owner/name", in name order), the kappa_summary of each
    dimension: the numbers `study_agreement_report` gives with that repository as a filter,
    from one read of the label table split by the items' repository."""
    filters = filters or LabelTableFilter()
    tables = study_label_table(
        study=study, dimension_keys=dimension_keys, filters=filters, level=level
    )
    return _by_repository_of_tables(
        tables,
        _study_item_groups(study),
        repository=filters.repository,
        weights=weights,
        min_pair_items=min_pair_items,
    )


@dataclass
class AgreementViews:
    """The agreement page's numbers: the report, its rounds and its repositories."""

    report: dict
    round_statuses: list[RoundStatus]
    by_repository: dict[str, dict[str, dict]]
    # Per dimension, its categories' names by key (the report speaks in keys).
    category_names: dict[str, dict[str, str]] = field(default_factory=dict)


def study_agreement_views(
    *,
    study: Study,
    filters: LabelTableFilter | None = None,
    level: int | None = None,
    weights: str | None = None,
    bootstrap: int = 0,
    seed: int = 0,
    min_pair_items: int = DEFAULT_MIN_PAIR_ITEMS,
) -> AgreementViews:
    """What `study_agreement_report`, `study_round_statuses` and `study_repository_agreement`
    give under the same filters, from ONE read of the label table: the read (most of a
    report's time on a large study) is made without the round filter, which the report and the
    per-repository table then apply to the items, and every round takes its share of it."""
    filters = filters or LabelTableFilter()
    every_round = study_label_table(
        study=study, filters=replace(filters, round_name=None), level=level
    )
    groups = _study_item_groups(study)
    tables = every_round
    if filters.round_name:
        chosen = {round_.id for round_ in groups.rounds if round_.name == filters.round_name}
        in_round = {
            item: 0 for item, round_id in groups.round_of_item.items() if round_id in chosen
        }
        tables = {key: _split_by_group(t, in_round, [0])[0] for key, t in every_round.items()}
    return AgreementViews(
        report=_report_of_tables(
            study,
            tables,
            filters=filters,
            level=level,
            weights=weights,
            bootstrap=bootstrap,
            seed=seed,
            min_pair_items=min_pair_items,
        ),
        round_statuses=_round_statuses_of_tables(
            every_round, groups, weights=weights, min_pair_items=min_pair_items
        ),
        by_repository=_by_repository_of_tables(
            tables,
            groups,
            repository=filters.repository,
            weights=weights,
            min_pair_items=min_pair_items,
        ),
        category_names={key: table.category_names for key, table in every_round.items()},
    )


@dataclass(frozen=True)
class _ItemGroups:
    rounds: list[Round]  # in order
    round_of_item: dict[int, Hashable]  # item id -> round id
    repository_of_item: dict[int, Hashable]  # item id -> "owner/name"


def _study_item_groups(study: Study) -> _ItemGroups:
    """The round and the repository of every item of the study, in one query (and one for the
    rounds)."""
    rounds = list(Round.objects.filter(study=study).order_by("position"))
    round_of_item: dict[int, Hashable] = {}
    repository_of_item: dict[int, Hashable] = {}
    items = StudyItem.objects.filter(study=study).values_list(
        "id", "round_id", "issue__repository__owner", "issue__repository__name"
    )
    for item_id, round_id, owner, name in items.order_by():
        round_of_item[item_id] = round_id
        repository_of_item[item_id] = f"{owner}/{name}"
    return _ItemGroups(rounds, round_of_item, repository_of_item)


def _round_statuses_of_tables(
    tables: dict[str, DimensionTable],
    groups: _ItemGroups,
    *,
    weights: str | None,
    min_pair_items: int,
) -> list[RoundStatus]:
    reports = _reports_by_group(
        tables,
        groups.round_of_item,
        [round_.id for round_ in groups.rounds],
        weights=weights,
        min_pair_items=min_pair_items,
    )
    statuses = []
    for round_ in groups.rounds:
        dimensions = reports[round_.id]
        failing: list[str] = []
        undetermined: dict[str, str] = {}
        targets: dict[str, float] = {}
        own_targets = round_.dimension_targets or {}
        for key, dimension in dimensions.items():
            target = own_targets.get(key, round_.target_kappa)
            if not dimension["required"] or target is None:
                continue
            targets[dimension["name"]] = target
            # Held against the headline κ (labeling.agreement.headline_of), the figure the
            # report leads with: a weighted mean where pairs share different numbers of items.
            headline = (dimension.get("headline") or {}).get("value")
            reason = kappa_undetermined_reason(dimension)
            if reason is None and headline is None:
                reason = "no headline κ"
            if reason is not None:
                undetermined[dimension["name"]] = reason
            elif headline < target:
                failing.append(dimension["name"])
        statuses.append(
            RoundStatus(
                round=round_,
                kappa_by_dimension={
                    key: dimension["cohen_kappa"]["mean"] for key, dimension in dimensions.items()
                },
                target=round_.target_kappa,
                failing=failing,
                undetermined=undetermined,
                targets=targets,
                dimensions={key: kappa_summary(d) for key, d in dimensions.items()},
            )
        )
    return statuses


def _by_repository_of_tables(
    tables: dict[str, DimensionTable],
    groups: _ItemGroups,
    *,
    repository: str | None,
    weights: str | None,
    min_pair_items: int,
) -> dict[str, dict[str, dict]]:
    wanted = sorted(
        name
        for name in set(groups.repository_of_item.values())
        if repository is None or name == repository
    )
    reports = _reports_by_group(
        tables, groups.repository_of_item, wanted, weights=weights, min_pair_items=min_pair_items
    )
    return {
        name: {key: kappa_summary(dimension) for key, dimension in reports[name].items()}
        for name in wanted
    }


def report_rows(report: dict) -> list[dict]:
    """One flat row per dimension, for tables and downloads. The headline κ leads (see
    `labeling.agreement.headline_of`: which statistic it is, its interval and how that was
    found), then every coefficient over all annotators."""
    rows = []
    for key, dimension in report["dimensions"].items():
        kappa = dimension["cohen_kappa"]
        headline = dimension.get("headline") or {}
        interval = kappa.get("ci95") or [None, None]
        weighted_interval = kappa.get("weighted_ci95") or [None, None]
        headline_interval = headline.get("ci95") or [None, None]
        alpha_interval = dimension.get("krippendorff_alpha_ci95") or [None, None]
        fleiss_interval = dimension.get("fleiss_kappa_ci95") or [None, None]
        rows.append(
            {
                "dimension": key,
                "name": dimension["name"],
                "n_items": dimension["n_items"],
                "n_annotators": dimension["n_annotators"],
                "percent_agreement": dimension["percent_agreement"],
                "percent_agreement_all": dimension.get("percent_agreement_all"),
                "headline_kappa": headline.get("value"),
                "headline_statistic": headline.get("statistic"),
                "headline_label": headline.get("label"),
                "headline_ci95_low": headline_interval[0],
                "headline_ci95_high": headline_interval[1],
                "headline_interval_method": headline.get("interval_method"),
                "cohen_kappa": kappa["mean"],
                "ci95_low": interval[0],
                "ci95_high": interval[1],
                "weighted_kappa": kappa["weighted_mean"],
                "weighted_ci95_low": weighted_interval[0],
                "weighted_ci95_high": weighted_interval[1],
                "n_pairs": kappa["n_pairs"],
                "n_pairs_counted": kappa["n_pairs_counted"],
                "kappa_weights": dimension.get("kappa_weights"),
                "fleiss_kappa": dimension["fleiss_kappa"],
                "fleiss_ci95_low": fleiss_interval[0],
                "fleiss_ci95_high": fleiss_interval[1],
                "fleiss_kappa_gwet": dimension.get("fleiss_kappa_gwet"),
                "krippendorff_alpha": dimension["krippendorff_alpha"],
                "alpha_ci95_low": alpha_interval[0],
                "alpha_ci95_high": alpha_interval[1],
                "krippendorff_alpha_ordinal": dimension.get("krippendorff_alpha_ordinal"),
                "krippendorff_alpha_interval": dimension.get("krippendorff_alpha_interval"),
                "krippendorff_alpha_ratio": dimension.get("krippendorff_alpha_ratio"),
                "krippendorff_alpha_jaccard": dimension.get("krippendorff_alpha_jaccard"),
                "mean_jaccard": dimension.get("mean_jaccard"),
                "interpretation": interpret_kappa(headline.get("value")),
                "applies_when": applies_when_text(dimension),
                "multi_label": dimension.get("multi_label", False),
                "ordinal": dimension.get("ordinal", False),
                "warnings": dimension["warnings"],
            }
        )
    return rows
