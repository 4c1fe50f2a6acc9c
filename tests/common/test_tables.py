"""The one table type and its renderers: every format prints the same values, escaped for it."""

import csv
import io

from common.tables import (
    MISSING,
    Column,
    CountShare,
    Table,
    cell_text,
    table_csv,
    table_display_rows,
    table_json,
    table_latex,
    table_markdown,
)

HOSTILE = "<script>alert(1)</script> & 50% of $x_1$ {#} ~ ^ \\ | `code` *bold* [a](b)"


def _table() -> Table:
    return Table(
        key="distribution-root_cause",
        title="Root cause per system",
        caption="Percentages of items with a gold label.",
        columns=[
            Column("category", "Root cause"),
            Column("deepspeed", "microsoft/DeepSpeed", kind="count_percent"),
            Column("kappa", "Cohen's κ", kind="number", latex_title=r"$\bar\kappa$"),
            Column("agreement", "% agreement", kind="percent"),
            Column("items", "Items", kind="count"),
        ],
        rows=[
            {
                "category": "API misuse",
                "deepspeed": CountShare(12, 34.5678),
                "kappa": 0.8125,
                "agreement": 91.25,
                "items": 1234,
            },
            {
                "category": HOSTILE,
                "deepspeed": CountShare(0, None),
                "kappa": -0.125,
                "agreement": None,
                "items": None,
            },
        ],
        footer=[{"category": "Total", "deepspeed": CountShare(35, 100.0), "items": 1234}],
        notes=["Multi-label: a column may sum over 100%."],
    )


def test_cells_print_counts_with_their_percentage_and_none_as_a_dash():
    table = _table()
    first, second = table_display_rows(table)
    assert first == ["API misuse", "12 (34.6%)", "0.81", "91.2%", "1,234"]
    assert second[1:] == ["0", "-0.12", MISSING, MISSING]
    assert cell_text(Column("x", "x", kind="number", digits=3), None) == "\u2013"
    assert cell_text(Column("x", "x", kind="number", digits=3), float("nan")) == "\u2013"


def test_csv_round_trips_through_the_csv_reader():
    table = _table()
    table.rows[0]["category"] = 'with, a comma and "quotes"\nand a new line'
    rows = list(csv.reader(io.StringIO(table_csv(table))))
    assert rows[0] == [
        "Root cause",
        "microsoft/DeepSpeed",
        "microsoft/DeepSpeed (%)",
        "Cohen's κ",
        "% agreement",
        "Items",
    ]
    assert rows[1] == [
        'with, a comma and "quotes"\nand a new line',
        "12",
        "34.5678",
        "0.8125",
        "91.25",
        "1234",
    ]
    # None is an empty cell; the hostile text comes back as it was.
    assert rows[2] == [HOSTILE, "0", "", "-0.125", "", ""]
    assert rows[3] == ["Total", "35", "100.0", "", "", "1234"]
    assert len(rows) == 4


def test_csv_never_starts_a_text_cell_with_a_formula():
    table = Table(
        title="t",
        columns=[Column("name", "=HYPERLINK()"), Column("n", "n", kind="number")],
        rows=[{"name": "=1+2", "n": -1.5}, {"name": "@SUM(A1)", "n": 2.0}],
    )
    rows = list(csv.reader(io.StringIO(table_csv(table))))
    assert rows == [["'=HYPERLINK()", "n"], ["'=1+2", "-1.5"], ["'@SUM(A1)", "2.0"]]


def test_markdown_aligns_columns_and_escapes_markup():
    text = table_markdown(_table())
    lines = text.splitlines()
    assert lines[1] == "|:---|---:|---:|---:|---:|"
    assert lines[2] == "| API misuse | 12 (34.6%) | 0.81 | 91.2% | 1,234 |"
    hostile_row = lines[3]
    # Cell borders are only the table's: the hostile pipe is escaped, so the row has 6 borders.
    assert hostile_row.count("|") - hostile_row.count("\\|") == 6
    assert "<script>" not in text and "\\<script\\>" in text
    assert "\\*bold\\*" in text and "\\[a\\](b)" in text and "\\`code\\`" in text
    assert lines[4] == f"| Total | 35 (100.0%) | {MISSING} | {MISSING} | 1,234 |"
    assert "Table: Root cause per system. Percentages of items with a gold label." in text
    assert lines[-1] == "Multi-label: a column may sum over 100%."


def test_latex_is_a_booktabs_table_with_every_special_escaped():
    text = table_latex(_table())
    assert r"\begin{tabular}{lrrrr}" in text
    assert text.index(r"\toprule") < text.index(r"\midrule") < text.index(r"\bottomrule")
    assert r"\caption{Root cause per system. Percentages of items with a gold label.}" in text
    assert r"\label{tab:distribution-root-cause}" in text
    assert r"Root cause & microsoft/DeepSpeed & $\bar\kappa$ & \% agreement & Items \\" in text
    assert r"API misuse & 12 (34.6\%) & 0.81 & 91.2\% & 1,234 \\" in text
    hostile = (
        r"\textless{}script\textgreater{}alert(1)\textless{}/script\textgreater{} \& 50\% of "
        r"\$x\_1\$ \{\#\} \textasciitilde{} \textasciicircum{} \textbackslash{} \textbar{} "
        r"`code` *bold* [a](b)"
    )
    assert hostile + r" & 0 & $-$0.12 & -- & -- \\" in text
    # The footer sits between two rules.
    assert r"\midrule" + "\nTotal & 35 (100.0\\%) & -- & -- & 1,234 \\\\\n\\bottomrule" in text
    assert r"{\footnotesize Multi-label: a column may sum over 100\%.}" in text


def test_json_keeps_values_unformatted():
    data = table_json(_table())
    assert data["columns"][1] == {
        "key": "deepspeed",
        "title": "microsoft/DeepSpeed",
        "kind": "count_percent",
        "align": "right",
    }
    assert data["rows"][0]["deepspeed"] == {"count": 12, "percent": 34.5678}
    assert data["rows"][1]["agreement"] is None
    assert data["footer"][0]["kappa"] is None
    assert data["key"] == "distribution-root_cause"
