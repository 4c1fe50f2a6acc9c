"""The report page of a study: the paper's tables with their charts, filters, and downloads
(one table in one format, or all of them in a zip) that keep the filters."""

from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_safe

from common.exceptions import ApplicationError
from common.tables import Table, table_display_rows
from exports.charts import table_chart_svg
from exports.report_files import FORMATS, ReportFile, report_zip, table_file
from exports.tables import (
    LEVELS,
    ReportFilters,
    paper_table_spec,
    paper_table_specs,
    report_filter_choices,
    report_filters_parse,
)
from labeling.access import ANNOTATOR, MANAGER, study_can_see_agreement
from labeling.selectors import study_has_gold_labels
from web.views.studies import study_or_404

FORMAT_NAMES = {"csv": "CSV", "md": "Markdown", "tex": "LaTeX", "svg": "SVG"}


def _file_response(report_file: ReportFile) -> HttpResponse:
    return HttpResponse(report_file.content, headers=report_file.headers)


def _aligned(table: Table, rows: list[list[str]]) -> list[list[tuple[str, str]]]:
    alignments = [column.alignment for column in table.columns]
    return [list(zip(cells, alignments, strict=True)) for cells in rows]


def _link(filters: ReportFilters, **extra: str) -> str:
    return "?" + urlencode(filters.query() | extra)


@login_required
@require_safe
def report(request: HttpRequest, slug: str) -> HttpResponse:
    study, roles = study_or_404(request, slug)
    if not study_can_see_agreement(roles=roles):
        raise PermissionDenied("The report is for the study's managers and adjudicators.")
    table_key, file_format = request.GET.get("table"), request.GET.get("format")
    try:
        filters = report_filters_parse(
            study=study,
            round_name=request.GET.get("round"),
            repository=request.GET.get("repository"),
            level=request.GET.get("level"),
        )
    except ApplicationError as error:
        # A filter the study does not have is a 400 that names it, never the unfiltered tables
        # passed off as the filtered ones.
        if table_key or file_format:
            return HttpResponse(error.message, status=400, content_type="text/plain; charset=utf-8")
        messages.error(request, error.message)
        filters = None

    if filters is not None and (table_key or file_format):
        if file_format == "zip" and table_key in (None, "", "all"):
            return _file_response(report_zip(study=study, filters=filters))
        spec = paper_table_spec(study=study, table_key=table_key or "")
        if spec is None:
            raise Http404("This report has no such table.")
        if file_format not in FORMATS:
            formats = ", ".join(FORMATS)
            return HttpResponse(
                f"Unknown format: {file_format}. One of: {formats}.",
                status=400,
                content_type="text/plain; charset=utf-8",
            )
        return _file_response(
            table_file(study=study, spec=spec, filters=filters, file_format=file_format)
        )

    entries = []
    # No gold label yet: every table would be zeros and every chart empty; the page says so.
    has_gold = study_has_gold_labels(study=study)
    for spec in paper_table_specs(study=study) if filters is not None and has_gold else []:
        table = spec.build(filters)
        entries.append(
            {
                "key": spec.key,
                "table": table,
                # Built from escaped text only (exports.charts).
                "svg": mark_safe(table_chart_svg(spec.kind, table)),  # noqa: S308
                "rows": _aligned(table, table_display_rows(table)),
                "footer": _aligned(table, table_display_rows(table, table.footer)),
                "downloads": [
                    (name, _link(filters, table=spec.key, format=extension))
                    for extension, name in FORMAT_NAMES.items()
                ],
            }
        )
    choices = report_filter_choices(study=study)
    chosen = filters or ReportFilters()
    context = {
        "study": study,
        "oversees": True,
        "manages": MANAGER in roles,
        "is_annotator": ANNOTATOR in roles,
        "entries": entries,
        "has_gold": has_gold,
        "rounds": choices["rounds"],
        "repositories": choices["repositories"],
        "levels": list(LEVELS),
        "chosen": {
            "round": chosen.round_name or "",
            "repository": chosen.repository or "",
            "level": "parent" if chosen.level == 0 else "leaf",
        },
        "zip_link": _link(chosen, format="zip") if filters is not None else None,
    }
    return render(request, "web/report.html", context, status=200 if filters is not None else 400)
