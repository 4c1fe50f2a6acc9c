"""The paper's tables of a study, from its gold labels: the distribution of each dimension per
system, cross-tabulations, agreement per dimension and round, and the screening funnel. Each is a
`common.tables.Table`, so that pages, downloads and the API print them alike.

A "system" is a repository ("owner/name"). Counts are of study items with a gold label
(`labeling.models.Resolution`) on the dimension; an item with an empty gold label ("none
applies") is counted under NONE_APPLIES. Every table costs a fixed number of aggregate queries,
whatever the number of items.
"""

from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from django.db.models import Case, CharField, Count, F, FilteredRelation, Q, QuerySet, Value, When

from common.exceptions import ApplicationError
from common.tables import Column, CountShare, Table
from labeling.agreement import HEADLINE_SHORT_LABELS
from labeling.agreement_report import (
    LabelTableFilter,
    agreement_query_check,
    report_rows,
    study_agreement_report,
)
from labeling.agreement_tables import machine_delegation_table, machines_table
from labeling.dashboard import FUNNEL_STEPS, study_funnel
from labeling.models import Study, StudyItem
from labeling.selectors import study_dimensions
from machines.models import MachineAnnotator
from taxonomy.models import Category, Dimension

SYSTEM = "system"  # the column "dimension" of a cross-tab by repository
NONE_APPLIES = "(none applies)"
TIMES = "\u00d7"  # the multiplication sign of cross-tab titles ("Symptom x Root cause")
TOTAL = "total"
# `?level=` of pages and the API: categories as chosen, or rolled up to their top-level ancestor.
LEVELS: dict[str, int | None] = {"leaf": None, "parent": 0}
# The cross-tabs papers on training bugs print, where the codebook has those dimensions: two
# pairs of dimensions, and each of three dimensions by system and by training stage.
PAPER_CROSSTABS = [("symptom", "root_cause"), ("root_cause", "fix_pattern")]
PAPER_BREAKDOWNS = (["symptom", "root_cause", "fix_pattern"], [SYSTEM, "training_stage"])
# The paper's agreement table carries intervals: this many seeded bootstrap resamples.
PAPER_BOOTSTRAP = 1000
PAPER_SEED = 0
FUNNEL_TITLES = {
    "candidates": "Candidates",
    "sampled": "Sampled",
    "screened_in": "Screened in",
    "labeled": "Labeled",
    "resolved": "Resolved",
}


@dataclass(frozen=True)
class ReportFilters:
    round_name: str | None = None
    repository: str | None = None  # "owner/name"
    level: int | None = None  # None: categories as chosen; 0: their top-level ancestors

    def query(self) -> dict[str, str]:
        """The filters as the query parameters of pages and the API (only those set)."""
        params = {"round": self.round_name, "repository": self.repository}
        params["level"] = "parent" if self.level == 0 else None
        return {name: value for name, value in params.items() if value}

    def describe(self) -> str:
        """The filters in words, for captions ("" when there are none)."""
        parts = []
        if self.round_name:
            parts.append(f"Round {self.round_name}")
        if self.repository:
            parts.append(f"repository {self.repository}")
        if self.level == 0:
            parts.append("categories rolled up to their top-level category")
        text = "; ".join(parts)
        return f"{text[:1].upper()}{text[1:]}." if parts else ""


def report_filters_parse(
    *,
    study: Study,
    round_name: str | None = None,
    repository: str | None = None,
    level: str | None = None,
) -> ReportFilters:
    """The filters of a report request, checked: an unknown round, repository or level is an
    ApplicationError naming the parameter (as the agreement report refuses them), never an
    empty table passed off as the filtered one."""
    if (level or "leaf") not in LEVELS:
        raise ApplicationError(
            f"Unknown level: {level}",
            {"level": [f"{level!r} is not one of: {', '.join(LEVELS)}."]},
        )
    filters = ReportFilters(
        round_name=round_name or None, repository=repository or None, level=LEVELS[level or "leaf"]
    )
    agreement_query_check(
        study=study,
        filters=LabelTableFilter(round_name=filters.round_name, repository=filters.repository),
    )
    return filters


def report_filter_choices(*, study: Study) -> dict[str, list[str]]:
    """The rounds and repositories a study's report can be filtered by (two queries)."""
    return {
        "rounds": list(study.rounds.order_by("position").values_list("name", flat=True)),
        "repositories": [name for _, name in _systems(study, ReportFilters())],
    }


# --- building blocks -------------------------------------------------------------------------


def _dimension(study: Study, key: str) -> Dimension:
    found = next((d for d in study_dimensions(study=study) if d.key == key), None)
    if found is None:
        raise ApplicationError(
            f"Unknown dimension: {key}",
            {"dimension": [f"{key!r} is not a dimension of this study."]},
        )
    return found


def _items(study: Study, filters: ReportFilters) -> QuerySet[StudyItem]:
    # No ordering: the model's (by study creation) would join the study into every count.
    items = StudyItem.objects.filter(study=study).order_by()
    if filters.round_name:
        items = items.filter(round__name=filters.round_name)
    if filters.repository:
        owner, _, name = filters.repository.partition("/")
        items = items.filter(issue__repository__owner=owner, issue__repository__name=name)
    return items


def _systems(study: Study, filters: ReportFilters) -> list[tuple[int, str]]:
    """(repository id, "owner/name") of the study's items under the filters, by name."""
    rows = (
        _items(study, filters)
        .values_list("issue__repository_id", "issue__repository__owner", "issue__repository__name")
        .distinct()
    )
    return sorted(((rid, f"{owner}/{name}") for rid, owner, name in rows), key=lambda r: r[1])


@dataclass
class _Axis:
    """The categories of a dimension at a level: their labels in codebook order, and an SQL
    expression that turns a category id into its label (its own key, or its top-level
    ancestor's), so that the database counts distinct items per label."""

    dimension: Dimension
    labels: list[tuple[str, str]]  # (key, name)
    ids_by_label: dict[str, list[int]]

    def label_of(self, category_field: str) -> Case:
        return Case(
            *[When(**{f"{category_field}__in": ids}, then=Value(key)) for key, ids in
              self.ids_by_label.items()],
            default=Value(None),
            output_field=CharField(),
        )  # fmt: skip


def _axis(dimension: Dimension, level: int | None) -> _Axis:
    categories = list(
        Category.objects.filter(dimension=dimension)
        .order_by("position", "id")
        .values_list("id", "parent_id", "key", "name")
    )
    parent_of = {category_id: parent_id for category_id, parent_id, _, _ in categories}
    key_of = {category_id: key for category_id, _, key, _ in categories}

    def top(category_id: int) -> int:
        while parent_of[category_id] is not None:
            category_id = parent_of[category_id]
        return category_id

    labels: list[tuple[str, str]] = []
    ids_by_label: dict[str, list[int]] = defaultdict(list)
    for category_id, parent_id, key, name in categories:
        if level is None or parent_id is None:
            labels.append((key, name))
        ids_by_label[key_of[top(category_id)] if level == 0 else key].append(category_id)
    return _Axis(dimension=dimension, labels=labels, ids_by_label=dict(ids_by_label))


def _with_gold(items: QuerySet[StudyItem], alias: str, dimension: Dimension) -> QuerySet:
    """Items that have a gold label on the dimension, its categories reachable as
    `<alias>__categories` (a join of their own, so that two dimensions can meet on one item)."""
    return items.annotate(
        **{alias: FilteredRelation("resolutions", condition=Q(resolutions__dimension=dimension))}
    ).filter(**{f"{alias}__id__isnull": False})


def _label_rows(axis: _Axis, counted: dict) -> list[tuple[str | None, str]]:
    """(label, name) rows of an axis, with NONE_APPLIES last when some item has it."""
    rows: list[tuple[str | None, str]] = list(axis.labels)
    if counted.get(None):
        rows.append((None, NONE_APPLIES))
    return rows


def _caption(*sentences: str) -> str:
    return " ".join(sentence for sentence in sentences if sentence)


def _multi_label_note(*dimensions: Dimension) -> str:
    multi = [dimension.name for dimension in dimensions if dimension.multi_label]
    if not multi:
        return ""
    return (
        f"{' and '.join(multi)} {'is' if len(multi) == 1 else 'are'} multi-label: an item with "
        "several categories counts once under each, so percentages may sum to more than 100%."
    )


def _share(count: int, whole: int) -> CountShare:
    return CountShare(count, 100 * count / whole if whole else None)


# --- the tables ------------------------------------------------------------------------------


def distribution_table(
    *, study: Study, dimension_key: str, filters: ReportFilters | None = None
) -> Table:
    """Per category and system: the number of items with that gold label and its percentage of
    the system's items with a gold label on the dimension; a total column. Four queries."""
    filters = filters or ReportFilters()
    dimension = _dimension(study, dimension_key)
    axis = _axis(dimension, filters.level)
    systems = _systems(study, filters)
    gold = _with_gold(_items(study, filters), "gold", dimension)
    labeled = dict(
        gold.values("issue__repository_id")
        .annotate(n=Count("id", distinct=True))
        .values_list("issue__repository_id", "n")
    )
    counts: dict[str | None, dict[int, int]] = defaultdict(dict)
    for system_id, label, n in (
        gold.annotate(category_id=F("gold__categories"))
        .annotate(label=axis.label_of("category_id"))
        .values("issue__repository_id", "label")
        .annotate(n=Count("id", distinct=True))
        .values_list("issue__repository_id", "label", "n")
    ):
        counts[label][system_id] = n
    total_labeled = sum(labeled.values())

    columns = [Column("category", dimension.name)]
    columns += [Column(name, name, kind="count_percent") for _, name in systems]
    columns.append(Column(TOTAL, "All systems", kind="count_percent"))
    rows = []
    for label, name in _label_rows(axis, counts):
        row: dict = {"category": name}
        for system_id, system in systems:
            row[system] = _share(counts[label].get(system_id, 0), labeled.get(system_id, 0))
        row[TOTAL] = _share(sum(counts[label].values()), total_labeled)
        rows.append(row)
    footer = {"category": "Items with a gold label"}
    footer |= {system: CountShare(labeled.get(system_id, 0), None) for system_id, system in systems}
    footer[TOTAL] = CountShare(total_labeled, None)
    return Table(
        key=f"distribution-{dimension.key}",
        title=f"{dimension.name} per system",
        columns=columns,
        rows=rows,
        footer=[footer],
        caption=_caption(
            f"Items per category (% of the system's items with a gold {dimension.name.lower()}"
            " label).",
            _multi_label_note(dimension),
            filters.describe(),
        ),
    )


def crosstab_table(
    *,
    study: Study,
    row_dimension: str,
    column_dimension: str,
    filters: ReportFilters | None = None,
) -> Table:
    """Items by their gold label on one dimension (rows) and on another or their system
    (columns, `column_dimension=SYSTEM`), with totals; only items with a gold label on both.
    Categories no item has are left out. Five queries."""
    filters = filters or ReportFilters()
    if row_dimension == column_dimension:
        raise ApplicationError(
            "A cross-tab needs two different dimensions.",
            {"dimension": [f"{row_dimension!r} is given twice."]},
        )
    rows_axis = _axis(_dimension(study, row_dimension), filters.level)
    items = _with_gold(_items(study, filters), "row_gold", rows_axis.dimension)
    items = items.annotate(row_category=F("row_gold__categories")).annotate(
        row_label=rows_axis.label_of("row_category")
    )
    if column_dimension == SYSTEM:
        systems = _systems(study, filters)
        column_labels: list[tuple[str | int | None, str]] = list(systems)
        column_field, column_title = "issue__repository_id", "System"
        dimensions = [rows_axis.dimension]
    else:
        columns_axis = _axis(_dimension(study, column_dimension), filters.level)
        items = _with_gold(items, "column_gold", columns_axis.dimension)
        items = items.annotate(column_category=F("column_gold__categories")).annotate(
            column_label=columns_axis.label_of("column_category")
        )
        column_field, column_title = "column_label", columns_axis.dimension.name
        dimensions = [rows_axis.dimension, columns_axis.dimension]

    def counted(*fields: str) -> dict:
        grouped = items.values(*fields).annotate(n=Count("id", distinct=True))
        return {tuple(row[f] for f in fields): row["n"] for row in grouped}

    cells = counted("row_label", column_field)
    row_totals = {key[0]: n for key, n in counted("row_label").items()}
    column_totals = {key[0]: n for key, n in counted(column_field).items()}
    grand_total = items.aggregate(n=Count("id", distinct=True))["n"]
    if column_dimension != SYSTEM:
        column_labels = _label_rows(columns_axis, column_totals)
        column_labels = [(key, name) for key, name in column_labels if column_totals.get(key)]

    column_key = {label: f"c{index}" for index, (label, _) in enumerate(column_labels)}
    columns = [Column("category", rows_axis.dimension.name)]
    columns += [Column(column_key[label], name, kind="count") for label, name in column_labels]
    columns.append(Column(TOTAL, "Total", kind="count"))
    rows = []
    for label, name in _label_rows(rows_axis, row_totals):
        if not row_totals.get(label):
            continue
        row: dict = {"category": name, TOTAL: row_totals[label]}
        row |= {column_key[c]: cells.get((label, c), 0) for c, _ in column_labels}
        rows.append(row)
    footer: dict = {"category": "Total", TOTAL: grand_total}
    footer |= {column_key[c]: column_totals.get(c, 0) for c, _ in column_labels}
    return Table(
        key=f"crosstab-{row_dimension}-{column_dimension}",
        title=f"{rows_axis.dimension.name} {TIMES} {column_title}",
        columns=columns,
        rows=rows,
        footer=[footer],
        caption=_caption(
            f"Items by gold {rows_axis.dimension.name.lower()} (rows) and "
            f"{'system' if column_dimension == SYSTEM else column_title.lower()} (columns); "
            "categories no item has are left out.",
            _multi_label_note(*dimensions),
            filters.describe(),
        ),
    )


def agreement_by_round_table(*, study: Study, filters: ReportFilters | None = None) -> Table:
    """Per dimension and round: items with two or more ratings, percent agreement, the headline
    κ with its 95% interval and which statistic it is, Fleiss' κ and Krippendorff's α with their
    intervals (the agreement report with PAPER_BOOTSTRAP seeded resamples, once per round and
    once for all rounds when there are several)."""
    filters = filters or ReportFilters()
    rounds: list[str | None] = [
        name
        for name in study.rounds.order_by("position").values_list("name", flat=True)
        if filters.round_name in (None, name)
    ]
    if len(rounds) > 1:
        rounds.append(None)
    full_reports = {
        round_name: study_agreement_report(
            study=study,
            filters=LabelTableFilter(round_name=round_name, repository=filters.repository),
            level=filters.level,
            bootstrap=PAPER_BOOTSTRAP,
            seed=PAPER_SEED,
        )
        for round_name in rounds
    }
    # The rule of the mean kappa, when the report states it (pairs sharing too few items do not
    # count, so the headline may be undefined where alpha is not).
    minimum = next(
        (r.get("filters", {}).get("min_pair_items") for r in full_reports.values()), None
    )
    by_round = {
        name: {row["dimension"]: row for row in report_rows(r)} for name, r in full_reports.items()
    }
    rows, notes = [], []
    for dimension in study_dimensions(study=study):
        for round_name in rounds:
            figures = by_round[round_name].get(dimension.key)
            if figures is None:
                continue
            share = figures["percent_agreement"]
            rows.append(
                figures
                | {
                    "dimension": dimension.name,
                    "round": round_name or "All rounds",
                    "percent_agreement": None if share is None else 100 * share,
                    "headline": HEADLINE_SHORT_LABELS.get(figures["headline_statistic"]),
                }
            )
            if (round_name is None or len(rounds) == 1) and figures["applies_when"]:
                notes.append(figures["applies_when"])
    return Table(
        key="agreement-by-round",
        title="Agreement per dimension and round",
        columns=[
            Column("dimension", "Dimension"),
            Column("round", "Round"),
            Column("n_items", "Items", kind="count"),
            Column("percent_agreement", "% agreement", kind="percent", latex_title=r"\% agr."),
            Column("headline_kappa", "κ", kind="number", latex_title=r"$\kappa$"),
            Column("headline_ci95_low", "κ 95% CI low", kind="number", latex_title="low"),
            Column("headline_ci95_high", "κ 95% CI high", kind="number", latex_title="high"),
            Column("headline", "κ is"),
            Column("interpretation", "Landis & Koch"),
            Column("fleiss_kappa", "Fleiss' κ", kind="number", latex_title=r"Fleiss $\kappa$"),
            Column("fleiss_ci95_low", "Fleiss 95% CI low", kind="number", latex_title="low"),
            Column("fleiss_ci95_high", "Fleiss 95% CI high", kind="number", latex_title="high"),
            Column(
                "krippendorff_alpha", "Krippendorff's α", kind="number", latex_title=r"$\alpha$"
            ),
            Column("alpha_ci95_low", "α 95% CI low", kind="number", latex_title="low"),
            Column("alpha_ci95_high", "α 95% CI high", kind="number", latex_title="high"),
        ],
        rows=rows,
        caption=_caption(
            "Submitted labels of items with two or more ratings. κ is Cohen's: one pair's κ, "
            "the mean over annotator pairs"
            + (f" sharing at least {minimum} items" if minimum else "")
            + " when they share equal numbers of items, else the mean weighted by shared "
            f"items; 95% intervals from {PAPER_BOOTSTRAP:,} bootstrap resamples of the items "
            f"(seed {PAPER_SEED}). Fleiss' κ needs equal numbers of ratings per item.",
            *dict.fromkeys(notes),
            filters.describe(),
        ),
    )


def _machine_report(study: Study, filters: ReportFilters) -> dict:
    return study_agreement_report(
        study=study,
        filters=LabelTableFilter(round_name=filters.round_name, repository=filters.repository),
        level=filters.level,
    )


def machine_annotation_table(*, study: Study, filters: ReportFilters | None = None) -> Table:
    """Per dimension and machine annotator: κ vs gold, mean κ vs the human annotators,
    precision and recall against gold (labeling.agreement_tables.machines_table)."""
    filters = filters or ReportFilters()
    table = machines_table(_machine_report(study, filters))
    table.caption = _caption(table.caption, filters.describe())
    return table


def machine_delegation_paper_table(*, study: Study, filters: ReportFilters | None = None) -> Table:
    """Per dimension, machine and confidence threshold: the share of items it would take and
    its agreement with gold on them."""
    filters = filters or ReportFilters()
    table = machine_delegation_table(_machine_report(study, filters))
    table.caption = _caption(table.caption, filters.describe())
    return table


def funnel_table(*, study: Study, filters: ReportFilters | None = None) -> Table:
    """The screening funnel per system (labeling.dashboard.study_funnel): candidates, sampled,
    screened in, labeled, resolved; all systems in the footer."""
    filters = filters or ReportFilters()
    funnel = study_funnel(study=study)
    columns = [Column("system", "System")]
    columns += [Column(step, FUNNEL_TITLES[step], kind="count") for step in FUNNEL_STEPS]
    rows, footer = [], []
    for funnel_row in funnel:
        row = {"system": funnel_row.system, **funnel_row.counts}
        if funnel_row.system == "all":
            footer.append(row | {"system": "All systems"})
        elif filters.repository in (None, funnel_row.system):
            rows.append(row)
    return Table(
        key="funnel",
        title="Screening funnel per system",
        columns=columns,
        rows=rows,
        footer=[] if filters.repository else footer,
        caption=_caption(
            "Candidates matched by the selection, sampled into the study, screened in by their "
            "gold screening label, labeled by every annotator, and resolved.",
            "Counted over every round." if filters.round_name else "",
            "Categories are not involved." if filters.level == 0 else "",
        ),
    )


# --- the default set -------------------------------------------------------------------------


@dataclass(frozen=True)
class TableSpec:
    """One table of a study's report: its id, title and kind ("distribution", "crosstab",
    "agreement", "funnel"), and how to build it under filters."""

    key: str
    title: str
    kind: str
    build: Callable[[ReportFilters], Table]


def paper_table_specs(*, study: Study) -> list[TableSpec]:
    """The tables of a study's paper, derived from its codebook: the distribution of every
    dimension, the cross-tabs of PAPER_CROSSTABS and PAPER_BREAKDOWNS whose dimensions the
    codebook has, agreement by round and the funnel, and for a study with machine annotators
    their tables. Two queries (one for a cached codebook)."""
    dimensions = study_dimensions(study=study)
    name_of = {dimension.key: dimension.name for dimension in dimensions} | {SYSTEM: "System"}
    specs = [
        TableSpec(
            key=f"distribution-{dimension.key}",
            title=f"{dimension.name} per system",
            kind="distribution",
            build=lambda filters, key=dimension.key: distribution_table(
                study=study, dimension_key=key, filters=filters
            ),
        )
        for dimension in dimensions
    ]
    pairs: list[tuple[str, str]] = list(PAPER_CROSSTABS)
    pairs += [(row, column) for row in PAPER_BREAKDOWNS[0] for column in PAPER_BREAKDOWNS[1]]
    specs += [
        TableSpec(
            key=f"crosstab-{row}-{column}",
            title=f"{name_of[row]} {TIMES} {name_of[column]}",
            kind="crosstab",
            build=lambda filters, row=row, column=column: crosstab_table(
                study=study, row_dimension=row, column_dimension=column, filters=filters
            ),
        )
        for row, column in pairs
        if row in name_of and column in name_of and row != column
    ]
    specs.append(
        TableSpec(
            key="agreement-by-round",
            title="Agreement per dimension and round",
            kind="agreement",
            build=lambda filters: agreement_by_round_table(study=study, filters=filters),
        )
    )
    specs.append(
        TableSpec(
            key="funnel",
            title="Screening funnel per system",
            kind="funnel",
            build=lambda filters: funnel_table(study=study, filters=filters),
        )
    )
    if MachineAnnotator.objects.filter(study=study).exists():
        # Only a study with machine annotators has their tables; the human ones are as they were.
        specs += [
            TableSpec(
                key="machine-annotation",
                title="Machine annotation",
                kind="machines",
                build=lambda filters: machine_annotation_table(study=study, filters=filters),
            ),
            TableSpec(
                key="machine-delegation",
                title="Delegation to machine annotators",
                kind="delegation",
                build=lambda filters: machine_delegation_paper_table(study=study, filters=filters),
            ),
        ]
    return specs


def paper_table_spec(*, study: Study, table_key: str) -> TableSpec | None:
    """One table of the report by its id; None for an id the study's report does not have."""
    return next((spec for spec in paper_table_specs(study=study) if spec.key == table_key), None)


def paper_tables(
    *, study: Study, filters: ReportFilters | None = None, keys: Iterable[str] | None = None
) -> list[Table]:
    """Every table of the study's report (or those of `keys`), built under the filters."""
    filters = filters or ReportFilters()
    wanted = set(keys) if keys is not None else None
    return [
        spec.build(filters)
        for spec in paper_table_specs(study=study)
        if wanted is None or spec.key in wanted
    ]
