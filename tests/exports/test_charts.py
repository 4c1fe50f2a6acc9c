"""The SVG charts of the paper's tables: well-formed XML with a size, a viewBox and an
accessible name, every text escaped, nothing that runs."""

import xml.etree.ElementTree as ET

import pytest

from common.tables import Column, CountShare, Table
from exports.charts import bar_chart_svg, heatmap_svg, table_chart_svg
from exports.tables import TOTAL

SVG = "{http://www.w3.org/2000/svg}"
HOSTILE = '<script>alert(1)</script> & "quotes"'


def parsed(svg: str) -> ET.Element:
    root = ET.fromstring(svg)  # noqa: S314 - our own output, parsed to check it is well-formed
    assert root.tag == f"{SVG}svg"
    assert root.get("role") == "img"
    width, height = int(root.get("width")), int(root.get("height"))
    assert root.get("viewBox") == f"0 0 {width} {height}"
    title_id, desc_id = root.get("aria-labelledby").split()
    assert root.find(f"{SVG}title").get("id") == title_id
    assert root.find(f"{SVG}desc").get("id") == desc_id
    assert all(element.tag != f"{SVG}script" for element in root.iter())
    assert all(not name.startswith("on") for e in root.iter() for name in e.attrib)
    return root


def test_a_bar_chart_escapes_its_labels_and_draws_a_bar_per_series():
    svg = bar_chart_svg(
        key="distribution-x",
        title=HOSTILE,
        description="d",
        labels=[HOSTILE, "Two"],
        series=[("A", [50.0, None]), ("B", [100.0, -3.0])],
        unit="%",
        maximum=100,
    )
    assert "<script>" not in svg and "&lt;script&gt;" in svg
    root = parsed(svg)
    assert root.find(f"{SVG}title").text == HOSTILE
    bars = [r for r in root.iter(f"{SVG}rect") if r.get("class") == "bar"]
    assert len(bars) == 4
    widths = [float(bar.get("width")) for bar in bars]
    assert widths[1] == 2 * widths[0] > 0  # 100% is twice 50%
    assert widths[2] == widths[3] == 0  # no value, a negative value: an empty bar
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert "50.0%" in texts and "\u2013" in texts and "-3.0%" in texts


def test_a_heatmap_has_a_cell_per_count_darker_for_more():
    svg = heatmap_svg(
        key="crosstab-a-b",
        title="A by B",
        description="d",
        row_labels=["r1", HOSTILE],
        column_labels=["c1", "c2", "c3"],
        counts=[[0, 1, 2], [4, 0, 0]],
    )
    root = parsed(svg)
    cells = [r for r in root.iter(f"{SVG}rect") if r.get("class") == "cell"]
    assert len(cells) == 6
    assert cells[0].get("fill") == "rgb(255,255,255)"  # zero is white
    assert cells[3].get("fill") == "rgb(8,69,148)"  # the peak is the darkest
    assert "&lt;script&gt;" in svg and "<script>" not in svg


@pytest.mark.parametrize("rows", [[], [{"category": "Only", "s": CountShare(1, 100.0)}]])
def test_a_distribution_chart_with_or_without_rows(rows):
    table = Table(
        key="distribution-x",
        title="X per system",
        columns=[
            Column("category", "X"),
            Column("s", "owner/name", kind="count_percent"),
            Column(TOTAL, "All systems", kind="count_percent"),
        ],
        rows=[row | {TOTAL: row["s"]} for row in rows],
    )
    root = parsed(table_chart_svg("distribution", table))
    texts = " ".join(t.text or "" for t in root.iter(f"{SVG}text"))
    assert ("No data" in texts) == (not rows)
