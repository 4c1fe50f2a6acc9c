"""One table type for every table the project prints, and its renderers (CSV, Markdown, LaTeX,
plain text for pages, JSON-ready dicts). Pure: no Django, no database.

A `Table` is a title, columns that say what their cells hold (`kind`), rows of plain values keyed
by column, optional footer rows (totals, drawn below a rule) and a caption. The kind decides how
a value is printed, the same way in every format:

- "text": a string;
- "count": a whole number ("1,234" in Markdown and LaTeX);
- "number": a float, with the column's `digits`;
- "percent": a percentage from 0 to 100 ("34.5%");
- "count_percent": a `CountShare`, printed the way papers print it: "12 (34.5%)". CSV gives it
  two columns, the count and the percentage, so that a spreadsheet can compute with both.

A missing value (None) is an en dash in Markdown, LaTeX and on pages, and an empty cell in CSV.
"""

import csv
import io
import math
from dataclasses import dataclass, field
from typing import Any, Literal

Align = Literal["left", "right", "center"]
Kind = Literal["text", "count", "number", "percent", "count_percent"]
MISSING = "\u2013"  # an en dash, as papers print an empty cell

_DEFAULT_DIGITS: dict[str, int] = {"number": 2, "percent": 1, "count_percent": 1}


@dataclass(frozen=True)
class CountShare:
    """A count and the percentage (0..100) it is of some whole; percent is None when the whole
    is empty."""

    count: int
    percent: float | None


@dataclass(frozen=True)
class Column:
    key: str
    title: str
    kind: Kind = "text"
    align: Align | None = None  # None: text to the left, numbers to the right
    digits: int | None = None  # decimals of numbers and percentages
    # A title written in LaTeX by the code that builds the table ("$\bar\kappa$"); never take it
    # from data: it is printed as it is, where `title` is escaped.
    latex_title: str | None = None

    @property
    def alignment(self) -> Align:
        if self.align is not None:
            return self.align
        return "left" if self.kind == "text" else "right"

    @property
    def decimals(self) -> int:
        return self.digits if self.digits is not None else _DEFAULT_DIGITS.get(self.kind, 0)


@dataclass
class Table:
    title: str
    columns: list[Column]
    rows: list[dict[str, Any]]
    key: str = ""  # a stable id: file names, URLs, LaTeX labels
    caption: str = ""
    footer: list[dict[str, Any]] = field(default_factory=list)  # totals, below a rule
    notes: list[str] = field(default_factory=list)


# --- cells -----------------------------------------------------------------------------------


def _number(value: float, digits: int) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return MISSING
    return f"{value:,.{digits}f}"


def cell_text(column: Column, value: Any) -> str:
    """A cell as people read it (pages, Markdown before escaping, LaTeX before escaping)."""
    if value is None:
        return MISSING
    if column.kind == "count":
        return f"{value:,}"
    if column.kind == "number":
        return _number(value, column.decimals)
    if column.kind == "percent":
        return f"{_number(value, column.decimals)}%"
    if column.kind == "count_percent":
        if value.percent is None:
            return f"{value.count:,}"
        return f"{value.count:,} ({_number(value.percent, column.decimals)}%)"
    return str(value)


def table_display_rows(table: Table, rows: list[dict[str, Any]] | None = None) -> list[list[str]]:
    """The cells of a table's rows (or of `rows`, e.g. its footer) as text, in column order."""
    rows = table.rows if rows is None else rows
    return [[cell_text(column, row.get(column.key)) for column in table.columns] for row in rows]


# --- CSV -------------------------------------------------------------------------------------

# A spreadsheet runs a cell that starts with one of these as a formula; a category name from a
# codebook file must never do that on a researcher's machine (OWASP "CSV injection").
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")


def _csv_text(text: str) -> str:
    return "'" + text if text.startswith(_FORMULA_START) else text


def _csv_plain(value: Any, digits: int) -> str:
    if value is None:
        return ""
    if isinstance(value, float):
        return "" if not math.isfinite(value) else repr(round(value, digits + 3))
    return str(value)


def _csv_cells(column: Column, value: Any) -> list[str]:
    if column.kind == "count_percent":
        if value is None:
            return ["", ""]
        return [str(value.count), _csv_plain(value.percent, column.decimals)]
    if column.kind == "text":
        return [_csv_text("" if value is None else str(value))]
    return [_csv_plain(value, column.decimals)]


def table_csv(table: Table) -> str:
    """A header row of column titles, then the rows and the footer; numbers unformatted."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    header: list[str] = []
    for column in table.columns:
        if column.kind == "count_percent":
            header += [_csv_text(column.title), _csv_text(f"{column.title} (%)")]
        else:
            header.append(_csv_text(column.title))
    writer.writerow(header)
    for row in [*table.rows, *table.footer]:
        cells: list[str] = []
        for column in table.columns:
            cells += _csv_cells(column, row.get(column.key))
        writer.writerow(cells)
    return buffer.getvalue()


# --- Markdown --------------------------------------------------------------------------------

_MARKDOWN_SPECIAL = str.maketrans({char: "\\" + char for char in "\\`*_[]<>|#"})
_MARKDOWN_RULE = {"left": ":---", "right": "---:", "center": ":---:"}


def markdown_escape(text: str) -> str:
    """Text safe in a Markdown table cell: no markup, no raw HTML, no cell break, one line."""
    return " ".join(text.split()).translate(_MARKDOWN_SPECIAL)


def table_markdown(table: Table) -> str:
    """A pipe table with its alignment row; the title and caption below it as a Pandoc
    caption ("Table: ..."), which GitHub shows as a plain line."""
    lines = [
        "| " + " | ".join(markdown_escape(column.title) for column in table.columns) + " |",
        "|" + "|".join(_MARKDOWN_RULE[column.alignment] for column in table.columns) + "|",
    ]
    for cells in table_display_rows(table) + table_display_rows(table, table.footer):
        lines.append("| " + " | ".join(markdown_escape(cell) for cell in cells) + " |")
    lines += ["", "Table: " + markdown_escape(_caption(table))]
    lines += ["", *(markdown_escape(note) for note in table.notes)] if table.notes else []
    return "\n".join(lines) + "\n"


# --- LaTeX -----------------------------------------------------------------------------------

_LATEX_SPECIAL = str.maketrans(
    {
        "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{", "}": r"\}",
        "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "\\": r"\textbackslash{}",
        "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}", MISSING: "--",
    }
)  # fmt: skip
_LATEX_ALIGN = {"left": "l", "right": "r", "center": "c"}


def latex_escape(text: str) -> str:
    """Text that LaTeX prints as it reads, whatever characters it holds (one line)."""
    return " ".join(text.split()).translate(_LATEX_SPECIAL)


def _latex_cell(column: Column, value: Any) -> str:
    text = latex_escape(cell_text(column, value))
    # A minus sign, not a hyphen, in front of negative numbers.
    if column.kind in ("number", "percent") and value is not None and value < 0:
        text = "$-$" + text[1:]
    return text


def table_latex(table: Table) -> str:
    """A booktabs table float with caption and label, ready for \\input in a paper (needs
    \\usepackage{booktabs})."""
    spec = "".join(_LATEX_ALIGN[column.alignment] for column in table.columns)
    header = [column.latex_title or latex_escape(column.title) for column in table.columns]
    label = latex_escape(table.key).replace(r"\_", "-") if table.key else ""
    lines = [
        r"\begin{table}[t]",
        r"\centering",
        r"\caption{" + latex_escape(_caption(table)) + "}",
        *([r"\label{tab:" + label + "}"] if label else []),
        r"\begin{tabular}{" + spec + "}",
        r"\toprule",
        " & ".join(header) + r" \\",
        r"\midrule",
    ]

    def body(rows: list[dict[str, Any]]) -> list[str]:
        return [
            " & ".join(_latex_cell(column, row.get(column.key)) for column in table.columns)
            + r" \\"
            for row in rows
        ]

    lines += body(table.rows)
    if table.footer:
        lines += [r"\midrule", *body(table.footer)]
    lines += [r"\bottomrule", r"\end{tabular}"]
    for note in table.notes:
        lines.append(r"\par\smallskip{\footnotesize " + latex_escape(note) + "}")
    lines.append(r"\end{table}")
    return "\n".join(lines) + "\n"


# --- JSON ------------------------------------------------------------------------------------


def _json_value(column: Column, value: Any) -> Any:
    if isinstance(value, CountShare):
        return {"count": value.count, "percent": value.percent}
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def table_json(table: Table) -> dict[str, Any]:
    """The table as plain JSON-ready data: columns with their kind, rows keyed by column."""

    def rows(source: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return [
            {column.key: _json_value(column, row.get(column.key)) for column in table.columns}
            for row in source
        ]

    return {
        "key": table.key,
        "title": table.title,
        "caption": table.caption,
        "notes": list(table.notes),
        "columns": [
            {
                "key": column.key,
                "title": column.title,
                "kind": column.kind,
                "align": column.alignment,
            }
            for column in table.columns
        ],
        "rows": rows(table.rows),
        "footer": rows(table.footer),
    }


def _caption(table: Table) -> str:
    if not table.caption:
        return table.title
    return f"{table.title.rstrip('.')}. {table.caption}"
