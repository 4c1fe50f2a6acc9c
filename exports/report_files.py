"""The paper's tables as files: one table in one format (CSV, Markdown, LaTeX, its chart as
SVG), or every table in every format in one zip. The report page and the API serve these alike.
"""

import io
import zipfile
from collections.abc import Callable
from dataclasses import dataclass

from django.utils.text import slugify

from common.tables import Table, table_csv, table_latex, table_markdown
from exports.charts import table_chart_svg
from exports.machine_labels import machine_labels_csv, machine_runs_json
from exports.tables import ReportFilters, TableSpec, paper_table_specs
from labeling.models import Study
from machines.models import MachineAnnotator


@dataclass(frozen=True)
class FileFormat:
    extension: str
    content_type: str
    render: Callable[[TableSpec, Table], str]


FORMATS: dict[str, FileFormat] = {
    "csv": FileFormat("csv", "text/csv; charset=utf-8", lambda spec, table: table_csv(table)),
    "md": FileFormat(
        "md", "text/markdown; charset=utf-8", lambda spec, table: table_markdown(table)
    ),
    "tex": FileFormat(
        "tex", "application/x-tex; charset=utf-8", lambda spec, table: table_latex(table)
    ),
    "svg": FileFormat(
        "svg", "image/svg+xml", lambda spec, table: table_chart_svg(spec.kind, table)
    ),
}
ZIP_CONTENT_TYPE = "application/zip"


@dataclass(frozen=True)
class ReportFile:
    name: str
    content_type: str
    content: bytes

    @property
    def headers(self) -> dict[str, str]:
        """The headers of its download: an attachment, never sniffed into another type (an
        SVG opened from the site must not become a page of its own)."""
        return {
            "Content-Type": self.content_type,
            "Content-Disposition": f'attachment; filename="{self.name}"',
            "X-Content-Type-Options": "nosniff",
        }


def report_file_name(*, study: Study, name: str, filters: ReportFilters, extension: str) -> str:
    """`<study>-<table>[-<round>][-<repository>][-parent].<ext>`: the filters are in the name, so
    that two downloads under different filters never overwrite each other. ASCII only, safe in
    a Content-Disposition header and on any file system."""
    parts = [study.slug, name, filters.round_name, filters.repository]
    parts.append("parent" if filters.level == 0 else None)
    stem = "-".join(slugify(part) or "x" for part in parts if part)
    return f"{stem}.{extension}"


def table_file(
    *, study: Study, spec: TableSpec, filters: ReportFilters, file_format: str
) -> ReportFile:
    """One table of the report in one of FORMATS."""
    chosen = FORMATS[file_format]
    table = spec.build(filters)
    return ReportFile(
        name=report_file_name(
            study=study, name=spec.key, filters=filters, extension=chosen.extension
        ),
        content_type=chosen.content_type,
        content=chosen.render(spec, table).encode(),
    )


def report_zip(*, study: Study, filters: ReportFilters) -> ReportFile:
    """Every table of the report in every format, in one zip built in memory (the tables of a
    study are a few kilobytes each). Each table is built once."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", compression=zipfile.ZIP_DEFLATED) as archive:
        for spec in paper_table_specs(study=study):
            table = spec.build(filters)
            for chosen in FORMATS.values():
                name = report_file_name(
                    study=study, name=spec.key, filters=filters, extension=chosen.extension
                )
                archive.writestr(name, chosen.render(spec, table))
        if MachineAnnotator.objects.filter(study=study).exists():
            # The machines' labels apart from people's, with each run's record.
            archive.writestr(f"{study.slug}-machine-labels.csv", machine_labels_csv(study=study))
            archive.writestr(f"{study.slug}-machine-runs.json", machine_runs_json(study=study))
    return ReportFile(
        name=report_file_name(study=study, name="tables", filters=filters, extension="zip"),
        content_type=ZIP_CONTENT_TYPE,
        content=buffer.getvalue(),
    )
