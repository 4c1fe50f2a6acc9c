"""The agreement page of a study and its downloads.

Every table of the page (per dimension, per pair, per category, per round, per repository) is a
`common.tables.Table` from `labeling.agreement_tables`: the page shows it as it downloads (with
category names for keys, and a few columns of the report the tables do not carry), and every
link of the page (dimension tabs, pair selection, downloads) keeps the chosen filters. The
figures (the κ/α chart, the confusion heatmap, the selected dimension's figures, the warnings
by kind) are shapes from `labeling.agreement_charts`; each links to its methods entry.
"""

from collections.abc import Set as AbstractSet
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.text import slugify
from django.views.decorators.http import require_safe

from common.tables import Column, Table, cell_text, table_display_rows
from labeling.access import study_can_see_agreement
from labeling.agreement import DEFAULT_MIN_PAIR_ITEMS
from labeling.agreement_charts import (
    NONE_APPLIES_NAME,
    category_name,
    delegation_chart,
    dimension_figures,
    kappa_alpha_chart,
    warnings_by_kind,
)
from labeling.agreement_methods import methods_url
from labeling.agreement_report import (
    LabelTableFilter,
    RoundStatus,
    applies_when_text,
    study_agreement_views,
)
from labeling.agreement_tables import (
    DOWNLOAD_FORMATS,
    REPOSITORY_COLUMN_TITLES,
    categories_table,
    dimension_table,
    heatmap_cells,
    machine_delegation_table,
    machine_pairs_table,
    machine_rater_of,
    machines_table,
    pairs_table,
    repositories_table,
    round_chart_bars,
    rounds_table,
    table_download,
)
from web.forms import AgreementFilterForm
from web.views.studies import study_or_404

FORMAT_NAMES = {"csv": "CSV", "md": "Markdown", "tex": "LaTeX"}
# The methods entry (a report key of labeling.agreement_methods) of each table column that
# shows a figure, by column key; the per-category table's columns are its categories' figures.
COLUMN_METHODS = {
    "percent_agreement": "percent_agreement",
    "headline_kappa": "headline",
    "cohen_kappa": "mean",
    "weighted_kappa": "weighted_mean",
    "fleiss_kappa": "fleiss_kappa",
    "fleiss_kappa_gwet": "fleiss_kappa_gwet",
    "krippendorff_alpha": "krippendorff_alpha",
    "interpretation": "interpretation",
    "kappa": "cohen_kappa",
    "ase": "ase",
    "ci95_wald": "ci95_wald",
    "wald_low": "ci95_wald",
    "wald_high": "ci95_wald",
}
CATEGORY_COLUMN_METHODS = {
    "kappa": "per_category.kappa",
    "fleiss_kappa": "per_category.fleiss_kappa",
    "specific_agreement": "per_category.specific_agreement",
    "support": "per_category.support",
}
# The methods entries the page's legends and captions link to, by the name the template uses.
PAGE_METHODS = {
    "headline": "headline",
    "cohen_kappa": "cohen_kappa",
    "krippendorff_alpha": "krippendorff_alpha",
    "ase": "ase",
    "category_fleiss_kappa": "per_category.fleiss_kappa",
    "specific_agreement": "per_category.specific_agreement",
}
_KAPPA_COLUMN = {"kind": "number", "digits": 3}
# The tables of the page, by the `table` parameter of a download ("dimensions" by default).
TABLES = (
    "dimensions",
    "pairs",
    "categories",
    "rounds",
    "repositories",
    "machines",
    "machine-delegation",
    "machine-pairs",
)
# The tables of one dimension (a download names it).
DIMENSION_TABLES = (
    "pairs",
    "categories",
    "rounds",
    "machines",
    "machine-delegation",
    "machine-pairs",
)


@login_required
@require_safe
def agreement(request: HttpRequest, slug: str) -> HttpResponse:
    study, roles = study_or_404(request, slug)
    if not study_can_see_agreement(roles=roles):
        raise PermissionDenied("Agreement is for the study's managers and adjudicators.")
    form = AgreementFilterForm(request.GET or None, study=study)
    status = 200
    if form.is_bound and not form.is_valid():
        # A filter value the study does not have (or too many resamples) is a 400 that says
        # which, not the unfiltered report passed off as the filtered one.
        status = 400
        for name, errors in form.errors.items():
            messages.error(request, f"{name}: {' '.join(errors)}")
        filters = form.default_filters()
    else:
        filters = form.cleaned_filters() if form.is_bound else form.default_filters()
    label_filters = LabelTableFilter(
        round_name=filters["round"], repository=filters["repository"] or None
    )
    minimum_overlap = form.minimum_overlap(filters)
    views = study_agreement_views(
        study=study,
        filters=label_filters,
        level=filters["level"],
        bootstrap=form.bootstrap_resamples(filters),
        seed=0,
        min_pair_items=minimum_overlap,
    )
    report, statuses, repositories = views.report, views.round_statuses, views.by_repository
    dimension_key = filters["dimension"] or next(
        (key for key, d in report["dimensions"].items() if d["n_items"]),
        next(iter(report["dimensions"]), None),
    )
    selected = report["dimensions"].get(dimension_key)

    download = request.GET.get("download")
    if download in DOWNLOAD_FORMATS and status == 200:
        table_name = request.GET.get("table") or "dimensions"
        problem = None
        if table_name not in TABLES:
            problem = f"Unknown table: {table_name}. One of: {', '.join(TABLES)}."
        elif selected is None and table_name in DIMENSION_TABLES:
            problem = f"The study has no dimension to show {table_name} of."
        if problem:
            return HttpResponse(problem, status=400, content_type="text/plain; charset=utf-8")
        table = {
            "dimensions": lambda: dimension_table(report),
            "pairs": lambda: pairs_table(report, dimension_key),
            "categories": lambda: categories_table(report, dimension_key),
            "rounds": lambda: rounds_table(statuses, report, dimension_key),
            "repositories": lambda: repositories_table(repositories, report),
            "machines": lambda: machines_table(report, dimension_key),
            "machine-delegation": lambda: machine_delegation_table(report, dimension_key),
            "machine-pairs": lambda: machine_pairs_table(report, dimension_key),
        }[table_name]()
        response = HttpResponse(
            table_download(table, download),
            content_type=f"{DOWNLOAD_FORMATS[download]}; charset=utf-8",
        )
        response["Content-Disposition"] = (
            f'attachment; filename="{_file_name(study.slug, table, filters, download)}"'
        )
        return response

    query = form.link_query(filters)

    def link(**changes: str | None) -> str:
        chosen = {key: value for key, value in (query | changes).items() if value is not None}
        return "?" + urlencode(chosen)

    def downloads(table_name: str) -> list[tuple[str, str]]:
        # The tables of one dimension name it, even when the page chose it as the default.
        named = {} if table_name in ("dimensions", "repositories") else {"dimension": dimension_key}
        return [
            (name, link(download=extension, table=table_name, **named))
            for extension, name in FORMAT_NAMES.items()
        ]

    warnings, said = _page_warnings(report, statuses, repositories)
    entries = {
        "dimensions": _entry(
            dimension_table(report),
            downloads("dimensions"),
            links=[link(dimension=key, pair=None) for key in report["dimensions"]],
            current=list(report["dimensions"]).index(dimension_key) if selected else None,
            said=said,
        )
    }
    pair = None
    names: dict[str, str] = {}
    if selected:
        names = views.category_names.get(dimension_key, {})
        pairs = selected["cohen_kappa"]["pairs"]
        chosen_pair = tuple((filters["pair"] or "").split(",", 1))
        pair = next(
            (p for p in pairs if (p["a"], p["b"]) == chosen_pair),
            next((p for p in pairs if p["kappa"] is not None), pairs[0] if pairs else None),
        )
        entries["pairs"] = _entry(
            pairs_table(report, dimension_key),
            downloads("pairs"),
            links=[link(dimension=dimension_key, pair=f"{p['a']},{p['b']}") for p in pairs],
            current=pairs.index(pair) if pair else None,
            said=said,
            extra=[
                ("ase", "ASE of κ", [p["ase"] for p in pairs], _KAPPA_COLUMN, ()),
                (
                    "ci95_wald",
                    "κ 95% Wald interval",
                    [_interval(p["ci95_wald"]) for p in pairs],
                    {"align": "right"},
                    ("wald_low",),
                ),
            ],
        )
        entries["categories"] = _categories_entry(
            categories_table(report, dimension_key),
            selected["per_category"],
            names,
            downloads("categories"),
            said,
        )
        entries["rounds"] = _entry(
            rounds_table(statuses, report, dimension_key), downloads("rounds"), said=said
        )
        if selected.get("machines"):
            # Machines apart from people: their own tables, never in the human figures.
            entries["machines"] = _entry(
                machines_table(report, dimension_key), downloads("machines"), said=said
            )
            entries["machine_delegation"] = _entry(
                machine_delegation_table(report, dimension_key),
                downloads("machine-delegation"),
                said=said,
            )
            entries["machine_pairs"] = _entry(
                machine_pairs_table(report, dimension_key), downloads("machine-pairs"), said=said
            )
    entries["repositories"] = _entry(
        repositories_table(repositories, report),
        downloads("repositories"),
        groups=[(name, len(REPOSITORY_COLUMN_TITLES)) for name in repositories],
        titles=["Dimension", *(REPOSITORY_COLUMN_TITLES * len(repositories))],
        said=said,
    )
    min_pair_items = report["filters"]["min_pair_items"]
    figures = []
    if selected:
        figures = [
            figure | {"methods": methods_url(figure["key"])}
            for figure in dimension_figures(selected, min_pair_items=min_pair_items)
        ]
    context = {
        "study": study,
        "oversees": True,
        "form": form,
        "report": report,
        "entries": entries,
        "dimension_key": dimension_key,
        "selected": selected,
        "figures": figures,
        "applies_when": applies_when_text(selected) if selected else None,
        "pair": pair,
        "heatmap": heatmap_cells(
            pair["confusion"],
            names=names,
            row_title=f"rows: {pair['a']}",
            column_title=f"columns: {pair['b']}",
        )
        if pair and "matrix" in pair["confusion"]
        else None,
        "chart": kappa_alpha_chart(report["dimensions"], min_pair_items=min_pair_items),
        "machine_rater": machine_rater_of(report),
        "delegation": delegation_chart(selected["machines"])
        if selected and selected.get("machines")
        else None,
        "warnings": warnings,
        "methods": {name: methods_url(key) for name, key in PAGE_METHODS.items()},
        "round_bars": round_chart_bars(
            [(s.round.name, s.kappa_by_dimension.get(dimension_key)) for s in statuses]
        ),
        "min_pair_items": minimum_overlap,
    }
    return render(request, "web/agreement.html", context, status=status)


def _page_warnings(
    report: dict, statuses: list[RoundStatus], repositories: dict[str, dict[str, dict]]
) -> tuple[list[dict], set[str]]:
    """The warnings of the report, its rounds and its repositories grouped by kind, and every
    sentence of them: the tables' notes repeat the warnings sentence by sentence (a download
    needs them), the page says them once, above the tables."""
    scopes = [(f"Round {status.round.name}", status.dimensions) for status in statuses]
    scopes += list(repositories.items())
    said = {
        text
        for dimensions in [report["dimensions"], *(scope for _, scope in scopes)]
        for dimension in dimensions.values()
        for text in dimension["warnings"]
    }
    return warnings_by_kind(report["dimensions"], scopes=scopes), said


def _categories_entry(
    table: Table,
    per_category: dict,
    names: dict[str, str],
    downloads: list[tuple[str, str]],
    said: AbstractSet[str],
) -> dict:
    """The per-category table with the categories' names and, beside the table's own columns,
    each category's Fleiss' κ and specific agreement."""
    keys = [_category_key(row, per_category) for row in table.rows]
    figures = [per_category.get(key) or {} for key in keys]
    return _entry(
        table,
        downloads,
        said=said,
        first_cells=[None if key is None else category_name(key, names) for key in keys],
        extra=[
            (
                "fleiss_kappa",
                "Fleiss' κ",
                [f.get("fleiss_kappa") for f in figures],
                _KAPPA_COLUMN,
                (),
            ),
            (
                "specific_agreement",
                "Specific agreement",
                [f.get("specific_agreement") for f in figures],
                _KAPPA_COLUMN,
                (),
            ),
        ],
        column_methods=CATEGORY_COLUMN_METHODS,
    )


def _interval(interval: list[float] | None) -> str | None:
    if not interval:
        return None
    return f"[{interval[0]:.2f}, {interval[1]:.2f}]"


def _category_key(row: dict, per_category: dict) -> str | None:
    """The report key of a row of the per-category table, which shows the empty key as
    "(none applies)"; None when the row names no category of the report."""
    shown = row.get("key", row.get("category"))
    if shown in per_category:
        return shown
    return "" if shown == NONE_APPLIES_NAME and "" in per_category else None


def _entry(
    table: Table,
    downloads: list[tuple[str, str]],
    *,
    links: list[str] | None = None,
    current: int | None = None,
    groups: list[tuple[str, int]] | None = None,
    titles: list[str] | None = None,
    said: AbstractSet[str] = frozenset(),
    first_cells: list[str | None] | None = None,
    extra: list[tuple[str, str, list, dict, tuple[str, ...]]] | None = None,
    column_methods: dict[str, str] = COLUMN_METHODS,
) -> dict:
    """What the page's table partial needs: the table, its rows as text cells with their
    alignment, a link on the first cell of each row (when given), the current row, column
    groups over the header (with `titles`, the column titles under them), the notes the page
    has not `said` already (its warnings) and the download links.

    For the page only (downloads are the table as it is): `first_cells` replace the first
    cell of each row that has one (category names for keys), and `extra` columns (key, title,
    values, Column options, and the keys of the table's columns that show it already) are added
    after the table's own. A column of `column_methods` links its title to its methods entry."""
    columns = list(table.columns)
    display_rows = table_display_rows(table)
    shown = {column.key for column in table.columns}
    for key, title, values, options, shown_as in extra or []:
        if shown & {key, *shown_as}:
            continue
        column = Column(key, title, **options)
        columns.append(column)
        for cells, value in zip(display_rows, values, strict=True):
            cells.append(cell_text(column, value))
    if first_cells is not None:
        for cells, first in zip(display_rows, first_cells, strict=True):
            if first is not None:
                cells[0] = first
    alignments = [column.alignment for column in columns]
    header_titles = (titles or []) + [column.title for column in columns[len(titles or []) :]]
    header = [
        (
            title,
            align,
            methods_url(column_methods[column.key]) if column.key in column_methods else None,
        )
        for title, align, column in zip(header_titles, alignments, columns, strict=True)
    ]
    rows = [
        {
            "cells": list(zip(cells, alignments, strict=True)),
            "link": links[index] if links else None,
            "current": index == current,
        }
        for index, cells in enumerate(display_rows)
    ]
    return {
        "table": table,
        "header": header,
        "rows": rows,
        "width": len(columns),
        "notes": [note for note in table.notes if not any(text in note for text in said)],
        "downloads": downloads,
        "groups": groups or [],
    }


def _file_name(slug: str, table: Table, filters: dict, extension: str) -> str:
    """`<study>-<table>[-<round>][-<repository>][-top-level][-min<N>].<ext>`: the filters are in
    the name too, so that two downloads under different filters never overwrite each other."""
    parts = [slug, table.key, filters["round"], filters["repository"]]
    parts.append("top-level" if filters["level"] == 0 else None)
    minimum = filters["min_pair_items"]
    parts.append(f"min{minimum}" if minimum and minimum != DEFAULT_MIN_PAIR_ITEMS else None)
    return "-".join(slugify(part) or "x" for part in parts if part) + f".{extension}"
