"""The agreement report as paper-ready tables (CSV, Markdown, LaTeX) and as SVG-ready shapes
(confusion heatmap, agreement by round). Pure functions over the report dict."""

import csv
import io
from collections.abc import Sequence

from labeling.agreement_report import report_rows

COLUMNS = [
    ("name", "Dimension"),
    ("n_items", "Items"),
    ("n_annotators", "Annotators"),
    ("percent_agreement", "% agreement"),
    ("cohen_kappa", "Cohen's κ (mean)"),
    ("ci95_low", "95% CI low"),
    ("ci95_high", "95% CI high"),
    ("fleiss_kappa", "Fleiss' κ"),
    ("krippendorff_alpha", "Krippendorff's α"),
    ("interpretation", "Landis & Koch"),
]


def _cell(value: object, digits: int = 3) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.{digits}f}"
    return str(value)


def report_csv(report: dict) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(["dimension", *[key for key, _ in COLUMNS]])
    for row in report_rows(report):
        writer.writerow(
            [row["dimension"], *["" if row[key] is None else row[key] for key, _ in COLUMNS]]
        )
    return buffer.getvalue()


def report_markdown(report: dict) -> str:
    lines = [
        "| " + " | ".join(title for _, title in COLUMNS) + " |",
        "|"
        + "|".join("---" if key in ("name", "interpretation") else "---:" for key, _ in COLUMNS)
        + "|",
    ]
    for row in report_rows(report):
        lines.append("| " + " | ".join(_cell(row[key]) for key, _ in COLUMNS) + " |")
    return "\n".join(lines) + "\n"


_LATEX_SPECIAL = str.maketrans(
    {
        "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{", "}": r"\}",
        "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "\\": r"\textbackslash{}",
    }
)  # fmt: skip
_LATEX_HEADERS = [
    "Dimension", "Items", "Annotators", r"\% agr.", r"$\bar\kappa$", r"95\% CI",
    r"Fleiss $\kappa$", r"$\alpha$", "Landis \\& Koch",
]  # fmt: skip


def report_latex(report: dict) -> str:
    """A booktabs table body, ready for \\input in a paper."""
    lines = [
        r"\begin{tabular}{lrrrrcrrl}",
        r"\toprule",
        " & ".join(_LATEX_HEADERS) + r" \\",
        r"\midrule",
    ]
    for row in report_rows(report):
        interval = (
            f"[{row['ci95_low']:.2f}, {row['ci95_high']:.2f}]"
            if row["ci95_low"] is not None
            else "-"
        )
        cells = [
            row["name"].translate(_LATEX_SPECIAL),
            str(row["n_items"]),
            str(row["n_annotators"]),
            _cell(row["percent_agreement"], 2),
            _cell(row["cohen_kappa"], 2),
            interval,
            _cell(row["fleiss_kappa"], 2),
            _cell(row["krippendorff_alpha"], 2),
            (row["interpretation"] or "-").translate(_LATEX_SPECIAL),
        ]
        lines.append(" & ".join(cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines) + "\n"


def heatmap_cells(confusion: dict, *, cell_size: int = 22) -> dict:
    """Cells of a confusion heatmap for the labels either annotator used, with a colour scale
    (white to blue) and the count in each cell."""
    labels: Sequence[str] = confusion["labels"]
    matrix = confusion["matrix"]
    used = [
        index
        for index in range(len(labels))
        if any(matrix[index]) or any(row[index] for row in matrix)
    ]
    peak = max((matrix[r][c] for r in used for c in used), default=0) or 1
    cells = []
    for row_position, row_index in enumerate(used):
        for column_position, column_index in enumerate(used):
            count = matrix[row_index][column_index]
            shade = int(255 - 200 * count / peak)
            cells.append(
                {
                    "x": column_position * cell_size,
                    "y": row_position * cell_size,
                    "count": count,
                    "fill": f"rgb({shade},{shade + (255 - shade) // 3},255)",
                    "dark": count / peak > 0.5,
                    "diagonal": row_index == column_index,
                    "row_label": labels[row_index] or "(none)",
                    "column_label": labels[column_index] or "(none)",
                }
            )
    return {
        "labels": [labels[index] or "(none)" for index in used],
        "cells": cells,
        "cell_size": cell_size,
        "size": len(used) * cell_size,
    }


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
