"""The agreement report as tables and as SVG-ready shapes (confusion heatmap, agreement by
round). Pure functions over the report and its per-round and per-repository views.

Every table is a `common.tables.Table`: the page shows it and it downloads as CSV, Markdown and
LaTeX through the renderers of `common.tables`. Each caption states the filters and the minimum
overlap the numbers rest on, and the notes carry the report's warnings, so that a table copied
into a paper says what it counts.
"""

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from common.tables import (
    MISSING,
    Column,
    Table,
    latex_escape,
    table_csv,
    table_latex,
    table_markdown,
)
from labeling.agreement import HEADLINE_SHORT_LABELS
from labeling.agreement_charts import heatmap_layout
from labeling.agreement_report import RoundStatus, report_rows

# Files a table downloads as: extension -> content type (see table_download).
DOWNLOAD_FORMATS = {
    "csv": "text/csv",
    "md": "text/markdown",
    "tex": "application/x-tex",
}

WARNING_MARK = " *"

_KAPPA = {"kind": "number", "digits": 3}


def report_settings_text(report: dict, *, every_round: bool = False) -> str:
    """What a report counts, in one sentence: study, filters, minimum overlap, intervals.
    `every_round`: for tables listing the rounds, which ignore the round filter."""
    filters = report["filters"]
    level = filters.get("level")
    parts = [
        f"Study {report['study']}",
        "every round" if every_round or not filters.get("round") else f"round {filters['round']}",
        f"repository {filters['repository']}" if filters.get("repository") else "all repositories",
        "leaf categories"
        if level is None
        else "categories rolled up to the top level"
        if level == 0
        else f"categories rolled up to level {level}",
    ]
    if filters.get("submitted_after"):
        parts.append(f"labels submitted from {filters['submitted_after']}")
    if filters.get("submitted_before"):
        parts.append(f"labels submitted before {filters['submitted_before']}")
    if filters.get("weights"):
        parts.append(f"{filters['weights']} weights on ordinal dimensions")
    parts.append(
        f"a pair of annotators counts toward the mean κ when it shares at least "
        f"{filters['min_pair_items']} items"
    )
    if filters.get("bootstrap"):
        parts.append(
            f"95% intervals from {filters['bootstrap']:,} bootstrap resamples of the items "
            f"(seed {filters['seed']})"
        )
    rater = machine_rater_of(report)
    if rater:
        parts.append(
            f"design: one human replaced, the machine annotator {rater} chosen as one of the k "
            "raters (the labels it submitted in its seats count here as a rater's)"
        )
    return "; ".join(parts) + "."


def machine_rater_of(report: dict) -> str | None:
    """The machine annotator the study chose as one of its k raters ("one human replaced"), as
    the report's machine figures state it; None under the default design."""
    return next(
        (
            name
            for dimension in report["dimensions"].values()
            for name, figures in (dimension.get("machines") or {}).items()
            if figures.get("counts_as_rater")
        ),
        None,
    )


def _interval_columns(key: str, title: str, latex: str) -> list[Column]:
    return [
        Column(f"{key}_low", f"{title} 95% CI low", latex_title=latex + r" 95\% low", **_KAPPA),
        Column(f"{key}_high", f"{title} 95% CI high", latex_title=latex + r" 95\% high", **_KAPPA),
    ]


def _mean_note(min_pair_items: int) -> str:
    return (
        f"Cohen's κ: the mean over the pairs of annotators that share at least {min_pair_items} "
        "items and have a defined κ (pairs counted); weighted: each such pair weighted by the "
        "items it shares."
    )


HEADLINE_NOTE = (
    "Headline κ: the one pair's κ when one pair is counted; the plain mean when the counted "
    "pairs share equal numbers of items; else the mean weighted by shared items. Its interval is "
    "the bootstrap's when resamples were drawn, else the Wald interval of a single pair. "
    "Landis & Koch (1977) wording of the headline κ."
)

PERCENT_NOTE = (
    "% agreement: the share of agreeing rating pairs, averaged over items (Fleiss' P̄); "
    "Fleiss' κ (1971) needs equal numbers of ratings per item, Gwet's (2014) generalisation "
    "does not."
)


def dimension_table(report: dict) -> Table:
    """Per dimension: items, annotators, pairs counted, percent agreement, the headline κ with
    its interval and which statistic it is, the mean and weighted Cohen's κ, Fleiss' κ (classic
    and Gwet's), Krippendorff's α (with its interval when resampled) and the Landis & Koch
    wording of the headline. A dimension with warnings is marked, the warnings noted; units
    that differ (multi-label, ordinal) and conditions (applies_when) are noted too."""
    intervals = bool(report["filters"].get("bootstrap"))
    columns = [
        Column("name", "Dimension"),
        Column("n_items", "Items", "count"),
        Column("n_annotators", "Annotators", "count"),
        Column("n_pairs_counted", "Pairs counted", "count"),
        Column("n_pairs", "Pairs", "count"),
        Column("percent_agreement", "% agreement", "percent", latex_title=r"\% agr."),
        Column("headline_kappa", "κ (headline)", latex_title=r"$\kappa$", **_KAPPA),
        *_interval_columns("headline_ci95", "κ", r"$\kappa$"),
        Column("headline_statistic_text", "κ is"),
        Column("cohen_kappa", "Cohen's κ (mean)", latex_title=r"$\bar\kappa$", **_KAPPA),
        *(_interval_columns("ci95", "mean κ", r"$\bar\kappa$") if intervals else []),
        Column("weighted_kappa", "Cohen's κ (weighted)", latex_title=r"$\bar\kappa_n$", **_KAPPA),
        *(_interval_columns("weighted_ci95", "weighted κ", r"$\bar\kappa_n$") if intervals else []),
        Column("fleiss_kappa", "Fleiss' κ", latex_title=r"Fleiss $\kappa$", **_KAPPA),
        Column("fleiss_kappa_gwet", "Fleiss' κ (Gwet)", latex_title=r"Fleiss $\kappa_G$", **_KAPPA),
        Column("krippendorff_alpha", "Krippendorff's α", latex_title=r"$\alpha$", **_KAPPA),
        *(_interval_columns("alpha_ci95", "α", r"$\alpha$") if intervals else []),
        Column("interpretation", "Landis & Koch"),
    ]
    rows = []
    notes = [HEADLINE_NOTE, _mean_note(report["filters"]["min_pair_items"]), PERCENT_NOTE]
    for row in report_rows(report):
        share = row["percent_agreement"]
        rows.append(
            row
            | {
                "name": row["name"] + (WARNING_MARK if row["warnings"] else ""),
                "percent_agreement": None if share is None else 100 * share,
                "headline_statistic_text": HEADLINE_SHORT_LABELS.get(row["headline_statistic"]),
            }
        )
        notes += _dimension_notes(row)
        notes += [f"* {row['name']}: {warning}" for warning in row["warnings"]]
    return Table(
        title="Inter-annotator agreement per dimension",
        key="agreement",
        columns=columns,
        rows=rows,
        caption=report_settings_text(report),
        notes=notes,
    )


def _dimension_notes(row: dict) -> list[str]:
    """What a dimension's figures are computed on, where it differs from a nominal one."""
    notes = []
    if row["multi_label"]:
        notes.append(
            f"{row['name']} (multi-label): % agreement counts identical label sets; Cohen's and "
            "Fleiss' κ are means over categories of present/absent κ; α uses the MASI distance."
        )
    if row["ordinal"] and row["kappa_weights"]:
        notes.append(
            f"{row['name']} (ordinal): Cohen's κ with {row['kappa_weights']} weights; Fleiss' κ "
            "and this α are nominal (ordinal, interval and ratio α are in the report)."
        )
    if row["applies_when"]:
        notes.append(row["applies_when"])
    return notes


def _pair_counted_text(pair: dict, min_pair_items: int) -> str:
    if pair["counted"]:
        return "yes"
    if pair["n"] < min_pair_items:
        return f"no: fewer than {min_pair_items} shared items"
    return "no: κ undefined"


def pairs_table(report: dict, dimension_key: str) -> Table:
    """One dimension's pairs of annotators: shared items, Cohen's κ (interval), counted or why
    not; the notes give both means and the dimension's warnings."""
    dimension = report["dimensions"][dimension_key]
    kappa = dimension["cohen_kappa"]
    min_pair_items = report["filters"]["min_pair_items"]
    intervals = bool(report["filters"].get("bootstrap"))
    columns = [
        Column("a", "Annotator A"),
        Column("b", "Annotator B"),
        Column("n", "Shared items", "count"),
        Column("kappa", "Cohen's κ", latex_title=r"$\kappa$", **_KAPPA),
        *(_interval_columns("ci95", "κ", r"$\kappa$") if intervals else []),
        Column("ase", "ASE", latex_title="ASE", **_KAPPA),
        *_interval_columns("wald", "Wald", "Wald"),
        Column("counted", "Counted in the mean"),
    ]
    rows = [
        {
            "a": pair["a"],
            "b": pair["b"],
            "n": pair["n"],
            "kappa": pair["kappa"],
            "ci95_low": pair["ci95"][0] if pair["ci95"] else None,
            "ci95_high": pair["ci95"][1] if pair["ci95"] else None,
            "ase": pair.get("ase"),
            "wald_low": pair["ci95_wald"][0] if pair.get("ci95_wald") else None,
            "wald_high": pair["ci95_wald"][1] if pair.get("ci95_wald") else None,
            "counted": _pair_counted_text(pair, min_pair_items),
        }
        for pair in kappa["pairs"]
    ]
    notes = [
        f"Mean κ over the {kappa['n_pairs_counted']} of {kappa['n_pairs']} pairs counted: "
        f"{_number(kappa['mean'])}; weighted by shared items: {_number(kappa['weighted_mean'])}.",
        _mean_note(min_pair_items),
        "ASE: the large-sample standard error of κ (Fleiss, Cohen & Everitt 1969); Wald: "
        "κ ± 1.96 ASE. A multi-label pair's κ is a mean over categories and has no ASE.",
        *dimension["warnings"],
    ]
    return Table(
        title=f"{dimension['name']}: Cohen's κ per pair of annotators",
        key=f"agreement-pairs-{dimension_key}",
        columns=columns,
        rows=rows,
        caption=report_settings_text(report),
        notes=notes,
    )


def categories_table(report: dict, dimension_key: str) -> Table:
    """One dimension's categories that were used, most used first: one-vs-rest κ and use."""
    dimension = report["dimensions"][dimension_key]
    used = sorted(
        ((key, value) for key, value in dimension["per_category"].items() if value["support"]),
        key=lambda entry: -entry[1]["support"],
    )
    return Table(
        title=f"{dimension['name']}: agreement per category",
        key=f"agreement-categories-{dimension_key}",
        columns=[
            Column("category", "Category"),
            Column("kappa", "κ (one vs rest)", latex_title=r"$\kappa$ (one vs rest)", **_KAPPA),
            Column("fleiss_kappa", "Fleiss' κ_j", latex_title=r"Fleiss $\kappa_j$", **_KAPPA),
            Column("specific_agreement", "Specific agreement", latex_title=r"$p_{pos}$", **_KAPPA),
            Column("support", "Used", "count"),
        ],
        rows=[
            {
                "category": key or "(none applies)",
                "kappa": value["kappa"],
                "fleiss_kappa": value.get("fleiss_kappa"),
                "specific_agreement": value.get("specific_agreement"),
                "support": value["support"],
            }
            for key, value in used
        ],
        caption=report_settings_text(report),
        notes=[
            "κ (one vs rest): the category against all others, Cohen's κ averaged over the pairs "
            f"sharing at least {report['filters']['min_pair_items']} items; Fleiss' κ_j: "
            "Fleiss' (1971) category-specific κ; specific agreement: 2·both / (A's uses + B's "
            "uses), averaged over the same pairs; used: ratings that chose it, on items with two "
            "or more ratings.",
            *dimension["warnings"],
        ],
    )


def rounds_table(statuses: Sequence[RoundStatus], report: dict, dimension_key: str) -> Table:
    """One dimension by round: items, mean and weighted κ, pairs counted, and each round's
    target and calibration verdict (which weighs every required dimension)."""
    name = report["dimensions"].get(dimension_key, {}).get("name", dimension_key)
    rows, notes = [], []
    for status in statuses:
        summary = status.dimensions.get(dimension_key) or {}
        rows.append(
            {
                "round": status.round.name,
                "kind": status.round.get_kind_display(),
                "n_items": summary.get("n_items"),
                "mean": summary.get("mean"),
                "weighted_mean": summary.get("weighted_mean"),
                "n_pairs_counted": summary.get("n_pairs_counted"),
                "target": status.target,
                "calibration": status.wording,
            }
        )
        notes += [f"{status.round.name}: {warning}" for warning in summary.get("warnings", [])]
    return Table(
        title=f"{name}: agreement by round",
        key=f"agreement-rounds-{dimension_key}",
        columns=[
            Column("round", "Round"),
            Column("kind", "Kind"),
            Column("n_items", "Items", "count"),
            Column("mean", "Cohen's κ (mean)", latex_title=r"$\bar\kappa$", **_KAPPA),
            Column(
                "weighted_mean", "Cohen's κ (weighted)", latex_title=r"$\bar\kappa_n$", **_KAPPA
            ),
            Column("n_pairs_counted", "Pairs counted", "count"),
            Column("target", "Target κ", "number"),
            Column("calibration", "Calibration"),
        ],
        rows=rows,
        caption=report_settings_text(report, every_round=True),
        notes=[
            _mean_note(report["filters"]["min_pair_items"]),
            "Calibration: a round passes when the mean κ of every required dimension reaches "
            "its target; a dimension with an undefined κ or too few items is not judged, "
            "never failed.",
            *notes,
        ],
    )


# Each repository's columns, side by side: their titles under the repository's name.
REPOSITORY_COLUMN_TITLES = ("items", "κ", "weighted κ")


def repository_columns(repositories: Iterable[str]) -> list[Column]:
    columns = [Column("name", "Dimension")]
    items, mean, weighted = REPOSITORY_COLUMN_TITLES
    for position, repository in enumerate(repositories):
        # LaTeX titles are printed as they are: the repository's name goes in escaped.
        latex_name = latex_escape(repository)
        columns += [
            Column(f"r{position}_n_items", f"{repository}: {items}", "count"),
            Column(
                f"r{position}_mean",
                f"{repository}: {mean}",
                latex_title=latex_name + r": $\bar\kappa$",
                **_KAPPA,
            ),
            Column(
                f"r{position}_weighted_mean",
                f"{repository}: {weighted}",
                latex_title=latex_name + r": $\bar\kappa_n$",
                **_KAPPA,
            ),
        ]
    return columns


def repositories_table(by_repository: dict[str, dict[str, dict]], report: dict) -> Table:
    """Dimensions down, repositories side by side: per repository the items, the mean and the
    weighted κ of each dimension (study_repository_agreement)."""
    repositories = list(by_repository)
    keys = list(report["dimensions"]) or list(next(iter(by_repository.values()), {}))
    rows, notes = [], []
    for key in keys:
        row: dict[str, Any] = {"name": report["dimensions"].get(key, {}).get("name", key)}
        marked = False
        for position, repository in enumerate(repositories):
            summary = by_repository[repository].get(key)
            if summary is None:
                continue
            row["name"] = summary["name"]
            row |= {
                f"r{position}_n_items": summary["n_items"],
                f"r{position}_mean": summary["mean"],
                f"r{position}_weighted_mean": summary["weighted_mean"],
            }
            if summary["n_items"]:  # "no item" needs no note: the table says 0
                notes += [f"* {repository}, {summary['name']}: {w}" for w in summary["warnings"]]
                marked = marked or bool(summary["warnings"])
        row["name"] += WARNING_MARK if marked else ""
        rows.append(row)
    return Table(
        title="Agreement per repository",
        key="agreement-repositories",
        columns=repository_columns(repositories),
        rows=rows,
        caption=report_settings_text(report),
        notes=[_mean_note(report["filters"]["min_pair_items"]), *notes],
    )


def table_download(table: Table, file_format: str) -> str:
    """A table as a file. CSV has no caption, so its first lines are comments ("# ") with the
    title and caption (the filters) and the notes; spreadsheets and pandas skip them
    (`comment="#"`)."""
    if file_format == "csv":
        comments = [f"{table.title}. {table.caption}", *table.notes]
        return "".join(f"# {' '.join(line.split())}\n" for line in comments) + table_csv(table)
    if file_format == "md":
        return table_markdown(table)
    if file_format == "tex":
        return table_latex(table)
    raise ValueError(f"file_format must be one of {sorted(DOWNLOAD_FORMATS)}")


def _number(value: float | None) -> str:
    return MISSING if value is None else f"{value:.3f}"


def heatmap_cells(
    confusion: dict,
    *,
    names: Mapping[str, str] | None = None,
    row_title: str = "",
    column_title: str = "",
) -> dict:
    """Cells of a confusion heatmap for the categories either annotator used, with a colour
    scale (white to blue), the count in each cell, the categories' `names` (by key) on both
    axes and the axes' titles; the layout is `labeling.agreement_charts.heatmap_layout`'s."""
    return heatmap_layout(confusion, names=names, row_title=row_title, column_title=column_title)


def round_chart_bars(round_kappas: list[tuple[str, float | None]], *, height: int = 120) -> list:
    """Bars of mean kappa per round on a 0..1 scale (negative kappas drawn as zero height)."""
    bars = []
    for position, (name, kappa) in enumerate(round_kappas):
        value = max(kappa or 0.0, 0.0)
        bars.append(
            {
                "name": name,
                "kappa": kappa,
                "x": 40 + position * 70,
                "height": round(value * height),
                "y": height - round(value * height) + 10,
            }
        )
    return bars


# --- machine annotators (the report's "machines" and "machine_pairs", see machines.report) -----

MACHINES_NOTE = (
    "Machine annotators are measured like people but apart from them: the human figures of the "
    "report do not count their labels. κ vs gold: Cohen's κ of the machine's labels and the "
    "items' gold labels; mean κ vs humans: the mean of its κ against each annotator who shares "
    "items with it; precision and recall: macro means over the categories against gold."
)
DELEGATION_NOTE = (
    "For each confidence threshold, of the items with a gold label: the share whose machine "
    "confidence reaches it (the items the machine would take over) and, of those, the share it "
    "labeled exactly as gold. Confidence: from the model's log-probabilities where the endpoint "
    "gave them, else the share of its samples that gave the majority answer."
)


def _machine_dimensions(report: dict, dimension_key: str | None) -> list[tuple[str, dict]]:
    return [
        (key, dimension)
        for key, dimension in report["dimensions"].items()
        if dimension_key in (None, key)
    ]


def _mean_of(values: Iterable[float | None]) -> float | None:
    present = [value for value in values if value is not None]
    return round(sum(present) / len(present), 4) if present else None


def machines_table(report: dict, dimension_key: str | None = None) -> Table:
    """Per dimension and machine annotator: items it labeled, items with gold, κ vs gold, mean κ
    vs the human annotators, macro precision and recall against gold; for one dimension, also
    its κ against each human annotator."""
    rows = []
    humans: list[str] = []
    for _key, dimension in _machine_dimensions(report, dimension_key):
        for name, figures in (dimension.get("machines") or {}).items():
            by_human = figures.get("kappa_vs_humans") or {}
            humans += [human for human in by_human if human not in humans]
            rows.append(
                {
                    "dimension": dimension["name"],
                    "machine": name,
                    "n_items": figures.get("n_items"),
                    "n_gold": figures.get("n_gold"),
                    "kappa_vs_gold": figures.get("kappa_vs_gold"),
                    "mean_kappa_vs_humans": _mean_of(by_human.values()),
                    "precision": figures.get("precision"),
                    "recall": figures.get("recall"),
                    **{f"human:{human}": kappa for human, kappa in by_human.items()},
                }
            )
    columns = [
        Column("dimension", "Dimension"),
        Column("machine", "Machine"),
        Column("n_items", "Items", "count"),
        Column("n_gold", "With gold", "count"),
        Column("kappa_vs_gold", "κ vs gold", latex_title=r"$\kappa$ gold", **_KAPPA),
        Column(
            "mean_kappa_vs_humans",
            "Mean κ vs humans",
            latex_title=r"$\bar\kappa$ humans",
            **_KAPPA,
        ),
        Column("precision", "Precision", **_KAPPA),
        Column("recall", "Recall", **_KAPPA),
    ]
    if dimension_key is not None:
        columns += [Column(f"human:{human}", f"κ vs {human}", **_KAPPA) for human in humans]
    name = report["dimensions"][dimension_key]["name"] if dimension_key else None
    return Table(
        title=f"{name}: machine annotators" if name else "Machine annotation",
        key=f"machines-{dimension_key}" if dimension_key else "machine-annotation",
        columns=columns,
        rows=rows,
        caption=report_settings_text(report),
        notes=[MACHINES_NOTE],
    )


def machine_delegation_table(report: dict, dimension_key: str | None = None) -> Table:
    """Per dimension, machine and confidence threshold: the items it would take over (count
    and share of the items with gold) and its agreement with gold on them."""
    rows = [
        {
            "dimension": dimension["name"],
            "machine": name,
            "threshold": row["threshold"],
            "n": row.get("n"),
            "share": None if row["share"] is None else 100 * row["share"],
            "agreement_with_gold": None
            if row["agreement_with_gold"] is None
            else 100 * row["agreement_with_gold"],
        }
        for _key, dimension in _machine_dimensions(report, dimension_key)
        for name, figures in (dimension.get("machines") or {}).items()
        for row in figures.get("delegation") or []
    ]
    name = report["dimensions"][dimension_key]["name"] if dimension_key else None
    return Table(
        title=f"{name}: delegation to machines" if name else "Delegation to machine annotators",
        key=f"delegation-{dimension_key}" if dimension_key else "machine-delegation",
        columns=[
            Column("dimension", "Dimension"),
            Column("machine", "Machine"),
            Column("threshold", "Confidence ≥", "number", digits=2, latex_title=r"conf. $\geq$"),
            Column("n", "Items taken", "count"),
            Column("share", "Share taken", "percent", latex_title=r"\% taken"),
            Column(
                "agreement_with_gold",
                "Agreement with gold",
                "percent",
                latex_title=r"\% = gold",
            ),
        ],
        rows=rows,
        caption=report_settings_text(report),
        notes=[DELEGATION_NOTE],
    )


def machine_pairs_table(report: dict, dimension_key: str | None = None) -> Table:
    """Per dimension, every pair of machine annotators: shared items and Cohen's κ (model-model
    agreement, the signal of whether a dimension suits a model)."""
    rows = [
        {"dimension": dimension["name"], **pair}
        for _key, dimension in _machine_dimensions(report, dimension_key)
        for pair in dimension.get("machine_pairs") or []
    ]
    name = report["dimensions"][dimension_key]["name"] if dimension_key else None
    return Table(
        title=f"{name}: κ per pair of machines" if name else "Machine-machine agreement",
        key=f"machine-pairs-{dimension_key}" if dimension_key else "machine-pairs",
        columns=[
            Column("dimension", "Dimension"),
            Column("a", "Machine A"),
            Column("b", "Machine B"),
            Column("n", "Shared items", "count"),
            Column("kappa", "Cohen's κ", latex_title=r"$\kappa$", **_KAPPA),
        ],
        rows=rows,
        caption=report_settings_text(report),
        notes=[
            "Agreement of two models with each other: where it is low, a dimension is unlikely "
            "to suit a model (Ahmed et al., MSR 2025)."
        ],
    )
