"""Charts of the paper's tables as SVG text: grouped horizontal bars (distributions, agreement
by round, the funnel) and a heatmap (cross-tabs).

An SVG is built as a string, every piece of text escaped, with no script, no style element and
no external reference, so that it is safe inline in a page under a strict Content-Security-Policy
and as a downloaded file. Each has a width, a height and a viewBox, and an accessible name and
description (<title>, <desc>, role="img").
"""

import re
from collections.abc import Sequence

from django.utils.html import escape

from common.tables import MISSING, Table
from exports.tables import TIMES, TOTAL

# Okabe & Ito's palette: told apart by people with the common colour-vision deficiencies.
PALETTE = ["#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#000"]
FONT = 'font-family="system-ui, sans-serif" font-size="12"'
CHARACTER_WIDTH = 6.6  # a 12px sans-serif character, on average, to size label columns
LABEL_CHARACTERS = 40  # longer labels are cut with "…" (the whole label is in its tooltip)
BAR_AREA = 320
BAR_HEIGHT = 12
CELL = 30


def _id(text: str) -> str:
    return "chart-" + re.sub(r"[^A-Za-z0-9_-]", "-", text)


def _short(label: str) -> str:
    return label if len(label) <= LABEL_CHARACTERS else label[: LABEL_CHARACTERS - 1] + "…"


def _label(label: str, x: float, y: float, anchor: str = "end", extra: str = "") -> str:
    """A text label, cut to LABEL_CHARACTERS, with the whole of it as its tooltip."""
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}"{extra}>'
        f"<title>{escape(label)}</title>{escape(_short(label))}</text>"
    )


def _label_width(labels: Sequence[str]) -> float:
    return min(max((len(label) for label in labels), default=0), LABEL_CHARACTERS) * CHARACTER_WIDTH


def _svg(chart_id: str, title: str, description: str, width: float, height: float, body: str):
    width, height = round(width), round(height)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" class="chart" '
        f'aria-labelledby="{chart_id}-title {chart_id}-desc" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}">'
        f'<title id="{chart_id}-title">{escape(title)}</title>'
        f'<desc id="{chart_id}-desc">{escape(description)}</desc>'
        f'<rect width="100%" height="100%" fill="#fff"/>'
        f'<g {FONT} fill="#1f2328">{body}</g></svg>'
    )


def _empty(chart_id: str, title: str) -> str:
    body = '<text x="10" y="24">No data under these filters yet.</text>'
    return _svg(chart_id, title, "No data under these filters yet.", 320, 40, body)


def bar_chart_svg(
    *,
    key: str,
    title: str,
    description: str,
    labels: Sequence[str],
    series: Sequence[tuple[str, Sequence[float | None]]],
    unit: str = "",
    maximum: float | None = None,
    digits: int = 1,
) -> str:
    """Horizontal bars, one group per label and one bar per series (with a legend when there are
    several); each bar's value written after it (an en dash when there is none). Negative values are
    drawn as empty bars, their value still written."""
    chart_id = _id(key)
    if not labels or not series:
        return _empty(chart_id, title)
    values = [value for _, numbers in series for value in numbers if value is not None]
    top = maximum or max(values, default=0) or 1
    left = _label_width(labels) + 12
    legend = 22 if len(series) > 1 else 0
    group = BAR_HEIGHT * len(series) + 10
    width = left + BAR_AREA + 70
    height = legend + group * len(labels) + 6
    parts = []
    if legend:
        x = left
        for index, (name, _) in enumerate(series):
            colour = PALETTE[index % len(PALETTE)]
            parts.append(f'<rect x="{x:.1f}" y="4" width="10" height="10" fill="{colour}"/>')
            parts.append(_label(name, x + 14, 13, anchor="start"))
            x += 14 + min(len(name), LABEL_CHARACTERS) * CHARACTER_WIDTH + 16
        width = max(width, x)
    for row, label in enumerate(labels):
        y = legend + row * group
        parts.append(_label(label, left - 8, y + group / 2 + 2))
        for index, (name, numbers) in enumerate(series):
            value = numbers[row]
            length = 0.0 if value is None or value <= 0 else BAR_AREA * min(value / top, 1)
            bar_y = y + 4 + index * BAR_HEIGHT
            text = MISSING if value is None else f"{value:,.{digits}f}{unit}"
            parts.append(
                f'<rect class="bar" x="{left:.1f}" y="{bar_y:.1f}" width="{length:.1f}" '
                f'height="{BAR_HEIGHT - 2}" fill="{PALETTE[index % len(PALETTE)]}">'
                f"<title>{escape(label)}, {escape(name)}: {escape(text)}</title></rect>"
            )
            parts.append(
                f'<text x="{left + length + 4:.1f}" y="{bar_y + BAR_HEIGHT - 3:.1f}" '
                f'font-size="10">{escape(text)}</text>'
            )
    parts.append(
        f'<line x1="{left:.1f}" y1="{legend}" x2="{left:.1f}" y2="{height - 4}" stroke="#59636e"/>'
    )
    return _svg(chart_id, title, description, width, height, "".join(parts))


def _shade(share: float) -> str:
    """White to dark blue."""
    red, green, blue = (round(255 - share * (255 - end)) for end in (8, 69, 148))
    return f"rgb({red},{green},{blue})"


def heatmap_svg(
    *,
    key: str,
    title: str,
    description: str,
    row_labels: Sequence[str],
    column_labels: Sequence[str],
    counts: Sequence[Sequence[int]],
) -> str:
    """A grid of counts, darker for more; column labels slanted above the grid."""
    chart_id = _id(key)
    if not row_labels or not column_labels:
        return _empty(chart_id, title)
    left = _label_width(row_labels) + 12
    top = _label_width(column_labels) * 0.72 + 16  # labels at -45 degrees
    width = left + CELL * len(column_labels) + top * 0.72 + 10
    height = top + CELL * len(row_labels) + 10
    peak = max((count for row in counts for count in row), default=0) or 1
    parts = []
    for column, label in enumerate(column_labels):
        x, y = left + column * CELL + CELL / 2, top - 6
        parts.append(_label(label, x, y, anchor="start", extra=f' transform="rotate(-45 {x} {y})"'))
    for row, label in enumerate(row_labels):
        y = top + row * CELL
        parts.append(_label(label, left - 6, y + CELL / 2 + 4))
        for column, count in enumerate(counts[row]):
            x = left + column * CELL
            share = count / peak
            parts.append(
                f'<rect class="cell" x="{x:.1f}" y="{y:.1f}" width="{CELL}" height="{CELL}" '
                f'fill="{_shade(share)}" stroke="#d1d9e0"><title>{escape(label)} {TIMES} '
                f"{escape(column_labels[column])}: {count}</title></rect>"
            )
            if count:
                colour = "#fff" if share > 0.5 else "#1f2328"
                parts.append(
                    f'<text x="{x + CELL / 2:.1f}" y="{y + CELL / 2 + 4:.1f}" '
                    f'text-anchor="middle" fill="{colour}">{count}</text>'
                )
    return _svg(chart_id, title, description, width, height, "".join(parts))


# --- a chart for each kind of paper table ----------------------------------------------------


def _number(value: object) -> float | None:
    return getattr(value, "percent", value) if value is not None else None


def table_chart_svg(kind: str, table: Table) -> str:
    """The chart of a paper table (exports.tables.TableSpec.kind)."""
    first, *rest = table.columns
    if kind == "distribution":
        systems = [column for column in rest if column.key != TOTAL] or rest
        return bar_chart_svg(
            key=table.key,
            title=table.title,
            description=(
                f"Horizontal bar chart: per category of {first.title}, the percentage of each "
                "system's items with a gold label."
            ),
            labels=[row[first.key] for row in table.rows],
            series=[
                (column.title, [_number(row[column.key]) for row in table.rows])
                for column in systems
            ],
            unit="%",
            maximum=100,
        )
    if kind == "crosstab":
        columns = [column for column in rest if column.key != TOTAL]
        return heatmap_svg(
            key=table.key,
            title=table.title,
            description=(
                f"Heatmap of item counts: {first.title} in rows, "
                f"{', '.join(c.title for c in columns[:3])}{' …' if len(columns) > 3 else ''} "
                "in columns."
            ),
            row_labels=[row[first.key] for row in table.rows],
            column_labels=[column.title for column in columns],
            counts=[[row[column.key] for column in columns] for row in table.rows],
        )
    if kind == "agreement":
        dimensions = list(dict.fromkeys(row["dimension"] for row in table.rows))
        rounds = list(dict.fromkeys(row["round"] for row in table.rows))
        # Alpha, not the mean kappa: it is defined with missing ratings and few items, where
        # the mean kappa leaves out pairs that share too few items and is often undefined.
        alpha = {(row["dimension"], row["round"]): row["krippendorff_alpha"] for row in table.rows}
        return bar_chart_svg(
            key=table.key,
            title=f"{table.title}: Krippendorff's α",
            description=(
                "Horizontal bar chart: Krippendorff's alpha per dimension, a bar per round."
            ),
            labels=dimensions,
            series=[(name, [alpha.get((d, name)) for d in dimensions]) for name in rounds],
            maximum=1,
            digits=2,
        )
    if kind == "funnel":
        steps = rest
        rows = table.rows + table.footer if len(table.rows) > 1 else table.rows
        return bar_chart_svg(
            key=table.key,
            title=table.title,
            description="Horizontal bar chart: items at each step of the funnel, a bar per system.",
            labels=[column.title for column in steps],
            series=[(row[first.key], [row[c.key] for c in steps]) for row in rows],
            digits=0,
        )
    if kind == "machines":
        return bar_chart_svg(
            key=table.key,
            title=table.title,
            description=(
                "Horizontal bar chart: per dimension and machine annotator, Cohen's kappa "
                "against gold and the mean against the human annotators."
            ),
            labels=[f"{row['dimension']} · {row['machine']}" for row in table.rows],
            series=[
                ("κ vs gold", [row["kappa_vs_gold"] for row in table.rows]),
                ("mean κ vs humans", [row["mean_kappa_vs_humans"] for row in table.rows]),
            ],
            maximum=1,
            digits=2,
        )
    if kind == "delegation":
        return bar_chart_svg(
            key=table.key,
            title=table.title,
            description=(
                "Horizontal bar chart: per dimension, machine and confidence threshold, the "
                "share of items taken and the agreement with gold on them."
            ),
            labels=[
                f"{row['dimension']} · {row['machine']} · ≥ {row['threshold']:g}"
                for row in table.rows
            ],
            series=[
                ("share taken", [row["share"] for row in table.rows]),
                ("agreement with gold", [row["agreement_with_gold"] for row in table.rows]),
            ],
            unit="%",
            maximum=100,
        )
    raise ValueError(f"No chart for tables of kind {kind!r}.")
