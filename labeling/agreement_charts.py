"""What the agreement page draws, as plain shapes and words: the κ/α chart of the dimensions,
the confusion heatmap of a pair, the figures of one dimension and the warnings grouped by kind.
Pure functions over the report (`labeling.agreement_report`): no Django, no database; the page's
templates turn the shapes into SVG and HTML.

SVG text is sized by estimate, not measured (a server cannot measure a font the browser picks):
`text_width` errs wide, so that a margin computed from the longest label holds the label, and a
label too long for its room is cut with "…" while the whole of it goes in a <title>.
"""

import itertools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence

from common.tables import MISSING
from labeling.agreement import interpret_kappa

# --- text -----------------------------------------------------------------------------------

# Widths of characters in em, on the wide side of the sans-serif fonts browsers pick for
# "system-ui" (DejaVu Sans, the widest common one, included).
_NARROW = set("il|.,:;'!`ìíj")
_SEMI_NARROW = set('frtI()[]{}/\\ -"*')
_WIDE = set("mwMW@%")
ELLIPSIS = "\u2026"
TIMES = " \u00d7 "
KAPPA_NAME = "Cohen's κ"
NONE_APPLIES_NAME = "(none applies)"


def text_width(text: str, font_size: float, *, bold: bool = False) -> float:
    """An upper estimate of the width in pixels of `text` set in `font_size` px."""
    em = 0.0
    for character in text:
        if character in _NARROW:
            em += 0.32
        elif character in _SEMI_NARROW:
            em += 0.42
        elif character in _WIDE:
            em += 0.98
        elif character.isupper():
            em += 0.76
        else:
            em += 0.64
    return em * font_size * (1.08 if bold else 1.0)


def shorten(text: str, max_width: float, font_size: float, *, bold: bool = False) -> str:
    """`text`, cut and ended with "…" when it is wider than `max_width` pixels."""
    if text_width(text, font_size, bold=bold) <= max_width:
        return text
    kept = text
    while kept and text_width(kept.rstrip() + ELLIPSIS, font_size, bold=bold) > max_width:
        kept = kept[:-1]
    return kept.rstrip() + ELLIPSIS


def category_name(key: str, names: Mapping[str, str]) -> str:
    """A category as people read it: its codebook name, "(none applies)" for the empty label,
    the key itself for a category the codebook version no longer has."""
    if not key:
        return NONE_APPLIES_NAME
    return names.get(key, key)


def number_text(value: float | None, digits: int = 3) -> str:
    return MISSING if value is None or not math.isfinite(value) else f"{value:.{digits}f}"


def percent_text(share: float | None) -> str:
    return MISSING if share is None or not math.isfinite(share) else f"{100 * share:.1f}%"


def interval_text(interval: Sequence[float] | None, digits: int = 2) -> str:
    if not interval:
        return ""
    low, high = interval
    return f"[{number_text(low, digits)}, {number_text(high, digits)}]"


# --- the κ/α chart of the dimensions --------------------------------------------------------

# Landis & Koch (1977): the edges of their bands; each band's word is interpret_kappa's.
LANDIS_KOCH_EDGES = (-1.0, 0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
NARROW_AXIS = (-0.2, 1.0)
WIDE_AXIS = (-1.0, 1.0)

# The chart is as wide as its box: x positions are percentages of its width, so that the same
# SVG reads on a phone and on a desktop. Text is set from the left edge and sized to fit a
# phone's width (CHART_TEXT_WIDTH), so that it never runs out of the box.
PLOT_LEFT = 2.0  # percent
PLOT_RIGHT = 98.0
CHART_TEXT_WIDTH = 330.0  # pixels: a 390 px phone less the page's margins
CHART_FONT = 13
CHART_SMALL_FONT = 11
CHART_TOP = 34  # room for the band words
ROW_HEIGHT = 50
NAME_BASELINE = 14  # within a row
KAPPA_LANE = 27
ALPHA_LANE = 39
AXIS_HEIGHT = 30


def chart_axis(values: Iterable[float | None]) -> tuple[float, float]:
    """-0.2..1, or -1..1 when a value or an interval end lies below -0.2."""
    lowest = min((value for value in values if value is not None), default=0.0)
    return WIDE_AXIS if lowest < NARROW_AXIS[0] else NARROW_AXIS


def chart_x(value: float, axis: tuple[float, float]) -> float:
    """A value's x position in percent of the chart's width (clamped to the axis)."""
    low, high = axis
    clamped = min(max(value, low), high)
    return round(PLOT_LEFT + (PLOT_RIGHT - PLOT_LEFT) * (clamped - low) / (high - low), 2)


def _chart_values(dimension: dict) -> list[float | None]:
    headline = dimension.get("headline") or {}
    values = [headline.get("value"), dimension.get("krippendorff_alpha")]
    values += list(headline.get("ci95") or [])
    values += list(dimension.get("krippendorff_alpha_ci95") or [])
    values += [pair["kappa"] for pair in headline.get("pairs") or []]
    return [value for value in values if value is not None and math.isfinite(value)]


def _mark(
    kind: str, value: float, interval: Sequence[float] | None, y: float, axis, title: str
) -> dict:
    low, high = axis
    outside = not low <= value <= high
    return {
        "kind": kind,
        "x": chart_x(value, axis),
        "y": y,
        "low": chart_x(interval[0], axis) if interval else None,
        "high": chart_x(interval[1], axis) if interval else None,
        "title": title + (" (beyond the axis, drawn at its end)" if outside else ""),
    }


def _interval_words(interval: Sequence[float] | None, method: str | None) -> str:
    if not interval:
        return ", no interval"
    how = {"bootstrap": "bootstrap", "wald": "Wald"}.get(method or "", "")
    return f", 95% interval {interval_text(interval)}" + (f" ({how})" if how else "")


def kappa_alpha_chart(dimensions: Mapping[str, dict], *, min_pair_items: int) -> dict:
    """The chart of every dimension's headline Cohen's κ and Krippendorff's α, each with its
    95% interval as a whisker, over the Landis & Koch bands. A dimension whose pairs all share
    fewer than `min_pair_items` items has no headline: each pair's κ is drawn as a hollow mark,
    "below the minimum". Positions: x in percent of the width, y in pixels."""
    axis = chart_axis(value for d in dimensions.values() for value in _chart_values(d))
    rows = []
    for position, (key, dimension) in enumerate(dimensions.items()):
        top = CHART_TOP + position * ROW_HEIGHT
        name = dimension["name"]
        headline = dimension.get("headline") or {}
        marks = []
        value = headline.get("value")
        if value is not None:
            marks.append(
                _mark(
                    "kappa",
                    value,
                    headline.get("ci95"),
                    top + KAPPA_LANE,
                    axis,
                    f"{name}: {headline.get('label') or KAPPA_NAME} {number_text(value)}"
                    + _interval_words(headline.get("ci95"), headline.get("interval_method"))
                    + f"; {headline.get('interpretation') or 'no band'}",
                )
            )
            kappa_words = f"κ {number_text(value, 2)}"
        elif headline.get("statistic") == "pairs_below_minimum":
            for pair in headline.get("pairs") or []:
                marks.append(
                    _mark(
                        "pair",
                        pair["kappa"],
                        None,
                        top + KAPPA_LANE,
                        axis,
                        f"{name}: {pair['a']}{TIMES}{pair['b']}: κ {number_text(pair['kappa'])} on "
                        f"{pair['n']} shared items, below the minimum of {min_pair_items} "
                        "shared items",
                    )
                )
            kappa_words = ""  # the hollow marks say it, and the legend
        elif dimension.get("n_items"):
            kappa_words = "κ undefined"
        else:
            kappa_words = "no item rated twice"
        alpha = dimension.get("krippendorff_alpha")
        if alpha is not None:
            interval = dimension.get("krippendorff_alpha_ci95")
            marks.append(
                _mark(
                    "alpha",
                    alpha,
                    interval,
                    top + ALPHA_LANE,
                    axis,
                    f"{name}: Krippendorff's α {number_text(alpha)}"
                    + _interval_words(interval, "bootstrap" if interval else None)
                    + f"; {interpret_kappa(alpha) or 'no band'}",
                )
            )
        alpha_words = f"α {number_text(alpha, 2)}" if alpha is not None else ""
        summary = " · ".join(words for words in (kappa_words, alpha_words) if words)
        summary_width = text_width(" " + summary, CHART_FONT)
        shown = shorten(name, CHART_TEXT_WIDTH - summary_width, CHART_FONT, bold=True)
        rows.append(
            {
                "key": key,
                "name": name,
                "shown_name": shown,
                "cut": shown != name,
                "summary": summary,
                "top": top,
                "baseline": top + NAME_BASELINE,
                "marks": marks,
            }
        )
    plot_bottom = CHART_TOP + len(rows) * ROW_HEIGHT
    return {
        "axis": axis,
        "rows": rows,
        "has_marks": any(row["marks"] for row in rows),
        "bands": _bands(axis),
        "ticks": _ticks(axis, plot_bottom),
        "zero_x": chart_x(0.0, axis),
        "plot_top": CHART_TOP - 6,
        "plot_bottom": plot_bottom,
        "plot_height": plot_bottom - CHART_TOP + 6,
        "height": plot_bottom + AXIS_HEIGHT,
        "left": PLOT_LEFT,
        "right": PLOT_RIGHT,
        "label": (
            "Cohen's κ and Krippendorff's α per dimension with 95% intervals, on a "
            f"{axis[0]:g} to {axis[1]:g} axis over the Landis & Koch bands"
        ),
    }


def _bands(axis: tuple[float, float]) -> list[dict]:
    """The Landis & Koch bands within the axis, faint and alternating, each with its word on
    one of two lines (so that neighbours never overlap on a narrow chart); the first word is set
    from its band's left edge and the last ends at its right edge, so none leaves the chart."""
    low, high = axis
    edges = [edge for edge in LANDIS_KOCH_EDGES if low < edge < high]
    edges = [low, *edges, high]
    bands = []
    for index, (start, end) in enumerate(itertools.pairwise(edges)):
        word = interpret_kappa((start + end) / 2) or ""
        first, last = index == 0, index == len(edges) - 2
        bands.append(
            {
                "word": word,
                "x": chart_x(start, axis),
                "width": round(chart_x(end, axis) - chart_x(start, axis), 2),
                "text_x": chart_x(start, axis)
                if first
                else chart_x(end, axis)
                if last
                else chart_x((start + end) / 2, axis),
                "anchor": "start" if first else "end" if last else "middle",
                "text_y": 12 if index % 2 == 0 else 25,
                "shaded": index % 2 == 1,
                "title": f"Landis & Koch: {word}, {start:g} to {end:g}",
            }
        )
    return bands


def _ticks(axis: tuple[float, float], plot_bottom: int) -> list[dict]:
    low, high = axis
    step = 0.2 if axis == NARROW_AXIS else 0.5
    count = round((high - low) / step)
    ticks = []
    for index in range(count + 1):
        value = round(low + index * step, 2)
        ticks.append(
            {
                "value": value,
                "text": f"{value:g}",
                "x": chart_x(value, axis),
                "anchor": "start" if index == 0 else "end" if index == count else "middle",
                "y": plot_bottom + 18,
            }
        )
    return ticks


# --- the confusion heatmap ------------------------------------------------------------------

CELL_SIZE = 36
LABEL_FONT = 12
COUNT_FONT = 13
MAX_LABEL_WIDTH = 250.0  # pixels; longer names are cut, whole in their <title>
HEATMAP_PAD = 8
COLUMN_LABEL_ANGLE = 45  # degrees, column labels rise to the right
_SIN = math.sin(math.radians(COLUMN_LABEL_ANGLE))


def heatmap_layout(
    confusion: Mapping,
    *,
    names: Mapping[str, str] | None = None,
    row_title: str = "",
    column_title: str = "",
    cell_size: int = CELL_SIZE,
) -> dict:
    """A confusion heatmap over the categories either annotator used: category names on both
    axes (rows: the first annotator, columns: the second), cells white to blue with their
    counts, and the axes' titles (the annotators) in the corner above the row labels. Margins
    are computed from the longest label, so that every label is inside the figure: row labels
    end left of the grid, column labels rise at 45° from above their column."""
    names = names or {}
    labels: Sequence[str] = confusion["labels"]
    matrix = confusion["matrix"]
    used = [
        index
        for index in range(len(labels))
        if any(matrix[index]) or any(row[index] for row in matrix)
    ]
    full = [category_name(labels[index], names) for index in used]
    shown = [shorten(name, MAX_LABEL_WIDTH, LABEL_FONT) for name in full]
    widths = [text_width(text, LABEL_FONT) for text in shown]
    longest = max(widths, default=0.0)
    titles = [shorten(title, MAX_LABEL_WIDTH, LABEL_FONT) for title in (row_title, column_title)]
    title_width = max(text_width(title, LABEL_FONT) for title in titles)
    left = round(HEATMAP_PAD + max(longest, title_width) + 8)
    top = round(HEATMAP_PAD + max(longest * _SIN + LABEL_FONT + 6, 2 * (LABEL_FONT + 4) + 6))
    grid = len(used) * cell_size
    # A column label starts at its column's centre and runs up to the right.
    reach = max(
        (
            position * cell_size + cell_size / 2 + (width + LABEL_FONT) * _SIN
            for position, width in enumerate(widths)
        ),
        default=0.0,
    )
    width = round(left + max(grid, reach) + HEATMAP_PAD)
    peak = max((matrix[r][c] for r in used for c in used), default=0) or 1
    cells = []
    for row_position, row_index in enumerate(used):
        for column_position, column_index in enumerate(used):
            count = matrix[row_index][column_index]
            shade = int(255 - 200 * count / peak)
            x, y = left + column_position * cell_size, top + row_position * cell_size
            cells.append(
                {
                    "x": x,
                    "y": y,
                    "text_x": x + cell_size / 2,
                    "text_y": y + cell_size / 2 + COUNT_FONT * 0.35,
                    "count": count,
                    "fill": f"rgb({shade},{shade + (255 - shade) // 3},255)",
                    "dark": count / peak > 0.5,
                    "diagonal": row_index == column_index,
                    "row_label": full[row_position],
                    "column_label": full[column_position],
                }
            )
    axis_labels = [
        {
            "name": name,
            "shown": short,
            "cut": short != name,
            "row_x": left - 8,
            "row_y": top + position * cell_size + cell_size / 2 + LABEL_FONT * 0.35,
            "column_x": left + position * cell_size + cell_size / 2,
            "column_y": top - 6,
        }
        for position, (name, short) in enumerate(zip(full, shown, strict=True))
    ]
    return {
        "labels": axis_labels,
        "names": full,
        "rows": [
            {"name": full[r], "counts": [matrix[row][column] for column in used]}
            for r, row in enumerate(used)
        ],
        "cells": cells,
        "cell_size": cell_size,
        "left": left,
        "top": top,
        "size": grid,
        "width": width,
        "height": round(top + grid + HEATMAP_PAD),
        "angle": -COLUMN_LABEL_ANGLE,
        "titles": [
            {"text": title, "x": HEATMAP_PAD, "y": HEATMAP_PAD + (line + 1) * (LABEL_FONT + 4)}
            for line, title in enumerate(titles)
            if title
        ],
    }


# --- one dimension's figures ----------------------------------------------------------------


def _figure(
    key: str,
    name: str,
    dimension: dict,
    *,
    value: float | None,
    text: str,
    interval: Sequence[float] | None = None,
    method: str | None = None,
    missing: str | None = None,
    unit_key: str | None = None,
    note: str | None = None,
) -> dict:
    return {
        "key": key,
        "name": name,
        "value": value,
        "text": text,
        "interval": interval_text(interval) if interval else "",
        "interval_method": method,
        "missing": missing if value is None else None,
        "unit": (dimension.get("units") or {}).get(unit_key or key, ""),
        "note": note,
    }


def _pairs_counted(dimension: dict) -> str:
    kappa = dimension.get("cohen_kappa") or {}
    return f"{kappa.get('n_pairs_counted', 0)} of {kappa.get('n_pairs', 0)} pairs counted"


def _fleiss_missing(dimension: dict) -> str:
    kinds = dimension.get("warning_kinds") or []
    if not dimension.get("n_items"):
        return "no item with two or more ratings"
    if "unequal_ratings" in kinds:
        return "not defined when items carry unequal numbers of ratings: see Gwet's"
    return "undefined: one category used throughout"


def dimension_figures(dimension: dict, *, min_pair_items: int) -> list[dict]:
    """The figures of one dimension as the page lists them, each with its report key (for its
    methods entry), its value in words, its interval, its unit (the report's `units`) and, when
    it has no value, why: the headline Cohen's κ (or each pair's κ, below the minimum), percent
    agreement over rating pairs and the share of items all agree on, classic Fleiss' κ beside
    Gwet's, Krippendorff's α, the metric α of an ordinal dimension, the set measures of a
    multi-label one."""
    headline = dimension.get("headline") or {}
    figures = []
    weights = dimension.get("kappa_weights")
    kappa_name = "Cohen's κ" + (f" ({weights} weights)" if weights else "")
    if headline.get("value") is not None:
        figures.append(
            _figure(
                "headline",
                kappa_name,
                dimension,
                value=headline["value"],
                text=number_text(headline["value"]),
                interval=headline.get("ci95"),
                method=headline.get("interval_method"),
                unit_key="cohen_kappa",
                note=f"{headline.get('label')}, {_pairs_counted(dimension)}; "
                f"{headline.get('interpretation') or 'no band'}",
            )
        )
    else:
        below = headline.get("statistic") == "pairs_below_minimum"
        figure = _figure(
            "headline",
            kappa_name,
            dimension,
            value=None,
            text=MISSING,
            missing=(
                f"no pair shares {min_pair_items} items: each pair's κ below the minimum of "
                f"{min_pair_items} shared items"
                if below
                else "no item with two or more ratings"
                if not dimension.get("n_items")
                else "undefined: one category used throughout"
            ),
            unit_key="cohen_kappa",
        )
        figure["pairs"] = [
            {
                "a": pair["a"],
                "b": pair["b"],
                "n": pair["n"],
                "text": number_text(pair["kappa"]),
            }
            for pair in headline.get("pairs") or []
        ]
        figures.append(figure)
    figures.append(
        _figure(
            "percent_agreement",
            "Percent agreement (pairs)",
            dimension,
            value=dimension.get("percent_agreement"),
            text=percent_text(dimension.get("percent_agreement")),
            missing="no item with two or more ratings",
        )
    )
    figures.append(
        _figure(
            "percent_agreement_all",
            "All ratings agree",
            dimension,
            value=dimension.get("percent_agreement_all"),
            text=percent_text(dimension.get("percent_agreement_all")),
            missing="no item with two or more ratings",
        )
    )
    figures.append(
        _figure(
            "fleiss_kappa",
            "Fleiss' κ (classic)",
            dimension,
            value=dimension.get("fleiss_kappa"),
            text=number_text(dimension.get("fleiss_kappa")),
            interval=dimension.get("fleiss_kappa_ci95"),
            method="bootstrap",
            missing=_fleiss_missing(dimension),
        )
    )
    figures.append(
        _figure(
            "fleiss_kappa_gwet",
            "Fleiss' κ (Gwet's generalisation)",
            dimension,
            value=dimension.get("fleiss_kappa_gwet"),
            text=number_text(dimension.get("fleiss_kappa_gwet")),
            missing="no item with two or more ratings"
            if not dimension.get("n_items")
            else "undefined: one category used throughout",
        )
    )
    alpha_name = "Krippendorff's α" + (" (MASI)" if dimension.get("multi_label") else "")
    figures.append(
        _figure(
            "krippendorff_alpha",
            alpha_name,
            dimension,
            value=dimension.get("krippendorff_alpha"),
            text=number_text(dimension.get("krippendorff_alpha")),
            interval=dimension.get("krippendorff_alpha_ci95"),
            method="bootstrap",
            missing="no item with two or more ratings"
            if not dimension.get("n_items")
            else "undefined: one category used throughout",
        )
    )
    extra: list[tuple[str, str, Callable[[float | None], str]]] = []
    if dimension.get("ordinal"):
        extra = [
            ("krippendorff_alpha_ordinal", "Krippendorff's α, ordinal", number_text),
            ("krippendorff_alpha_interval", "Krippendorff's α, interval", number_text),
            ("krippendorff_alpha_ratio", "Krippendorff's α, ratio", number_text),
        ]
    elif dimension.get("multi_label"):
        extra = [
            ("krippendorff_alpha_jaccard", "Krippendorff's α (Jaccard)", number_text),
            ("exact_set_agreement", "Exact set agreement", percent_text),
            ("mean_jaccard", "Mean Jaccard similarity", number_text),
            ("mean_masi_similarity", "Mean MASI similarity", number_text),
        ]
    for key, name, formatted in extra:
        if key not in dimension:
            continue
        figures.append(
            _figure(
                key,
                name,
                dimension,
                value=dimension[key],
                text=formatted(dimension[key]),
                missing="no item with two or more ratings on the scale"
                if dimension.get("ordinal")
                else "no item with two or more ratings",
            )
        )
    return figures


# --- warnings by kind -----------------------------------------------------------------------

WARNING_KIND_TITLES = {
    "no_items": "No item with two or more ratings",
    "few_items": "Few items: the kappas are imprecise",
    "no_pair_counted": "No pair of annotators shares enough items for a mean κ",
    "pairs_short": "Pairs sharing few items left out of the mean κ",
    "kappa_undefined": "κ undefined (one category used throughout)",
    "unequal_ratings": "Unequal numbers of ratings: classic Fleiss' κ not given",
    "alpha_not_resampled": "Too many label sets: α has no bootstrap interval",
}


def warning_kind_title(kind: str) -> str:
    return WARNING_KIND_TITLES.get(kind) or kind.replace("_", " ").capitalize()


def warnings_by_kind(
    dimensions: Mapping[str, dict], *, scopes: Sequence[tuple[str, Mapping[str, dict]]] = ()
) -> list[dict]:
    """The report's warnings, one entry per kind (in the order first met): its title, the names
    of the dimensions it concerns (`every_dimension` when it concerns them all), and its
    sentences, each once with the dimensions it is said of. `scopes` (e.g. each round, each
    repository: a name and its dimensions, each with "name", "n_items", "warnings" and
    "warning_kinds") add their sentences under the same kinds, named with the scope; a scope's
    sentence the whole report already says for that dimension is left out, and so is an empty
    scope (its table says 0 items)."""
    groups: dict[str, dict] = {}
    sentences: dict[tuple[str, str, str], dict] = {}

    def add(kind: str, scope: str, dimension_name: str, text: str) -> None:
        entry = groups.setdefault(
            kind,
            {
                "kind": kind,
                "title": warning_kind_title(kind),
                "dimensions": [],
                "scopes": [],
                "details": [],
            },
        )
        if scope and scope not in entry["scopes"]:
            entry["scopes"].append(scope)
        if not scope and dimension_name not in entry["dimensions"]:
            entry["dimensions"].append(dimension_name)
        sentence = sentences.get((kind, scope, text))
        if sentence is None:
            sentence = {"scope": scope, "text": text, "dimensions": []}
            sentences[(kind, scope, text)] = sentence
            entry["details"].append(sentence)
        sentence["dimensions"].append(dimension_name)

    said: set[tuple[str, str]] = set()
    for key, dimension in dimensions.items():
        for kind, text in _kinds_and_texts(dimension):
            add(kind, "", dimension["name"], text)
            said.add((key, text))
    for scope, scope_dimensions in scopes:
        for key, dimension in scope_dimensions.items():
            if not dimension.get("n_items"):
                continue
            for kind, text in _kinds_and_texts(dimension):
                if (key, text) not in said:
                    add(kind, scope, dimension["name"], text)
    for entry in groups.values():
        entry["every_dimension"] = len(dimensions) > 1 and len(entry["dimensions"]) == len(
            dimensions
        )
    return list(groups.values())


def _kinds_and_texts(dimension: Mapping) -> list[tuple[str, str]]:
    texts = dimension.get("warnings") or []
    kinds = dimension.get("warning_kinds") or ["other"] * len(texts)
    return list(zip(kinds, texts, strict=True))


# --- the delegation chart of machine annotators ---------------------------------------------

# Okabe & Ito's palette, as the paper charts': told apart with the common colour-vision
# deficiencies.
MACHINE_COLOURS = ("#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00")
DELEGATION_WIDTH = 420
DELEGATION_HEIGHT = 220
DELEGATION_LEFT = 44
DELEGATION_RIGHT = 16
DELEGATION_TOP = 12
DELEGATION_BOTTOM = 40


def delegation_chart(machines: Mapping[str, dict]) -> dict:
    """Each machine's delegation table as two lines over the confidence thresholds: the share of
    the items with gold it would take (dashed) and its agreement with gold on them (solid), on
    a 0..1 axis. Positions in pixels of a DELEGATION_WIDTH x DELEGATION_HEIGHT box; a point
    that is undefined (no item taken) breaks its line."""
    thresholds = sorted(
        {row["threshold"] for figures in machines.values() for row in figures["delegation"]}
    )
    plot_width = DELEGATION_WIDTH - DELEGATION_LEFT - DELEGATION_RIGHT
    plot_height = DELEGATION_HEIGHT - DELEGATION_TOP - DELEGATION_BOTTOM
    low, high = (thresholds[0], thresholds[-1]) if thresholds else (0.0, 1.0)
    span = (high - low) or 1.0

    def x_of(threshold: float) -> float:
        return round(DELEGATION_LEFT + plot_width * (threshold - low) / span, 1)

    def y_of(value: float) -> float:
        return round(DELEGATION_TOP + plot_height * (1 - min(max(value, 0.0), 1.0)), 1)

    series = []
    for index, (name, figures) in enumerate(sorted(machines.items())):
        lines = []
        for key, words, dashed in (
            ("share", "share of items taken", True),
            ("agreement_with_gold", "agreement with gold", False),
        ):
            segments: list[list[tuple[float, float]]] = [[]]
            points = []
            for row in figures["delegation"]:
                value = row[key]
                if value is None:
                    segments.append([])
                    continue
                point = (x_of(row["threshold"]), y_of(value))
                segments[-1].append(point)
                points.append(
                    {
                        "x": point[0],
                        "y": point[1],
                        "title": f"{name}, confidence ≥ {row['threshold']:g}: {words} "
                        f"{percent_text(value)} ({row.get('n', 0)} items taken)",
                    }
                )
            lines.append(
                {
                    "key": key,
                    "dashed": dashed,
                    "polylines": [
                        " ".join(f"{x},{y}" for x, y in segment)
                        for segment in segments
                        if len(segment) > 1
                    ],
                    "points": points,
                }
            )
        series.append(
            {"name": name, "colour": MACHINE_COLOURS[index % len(MACHINE_COLOURS)], "lines": lines}
        )
    return {
        "width": DELEGATION_WIDTH,
        "height": DELEGATION_HEIGHT,
        "left": DELEGATION_LEFT,
        "right": DELEGATION_WIDTH - DELEGATION_RIGHT,
        "top": DELEGATION_TOP,
        "bottom": DELEGATION_TOP + plot_height,
        "x_ticks": [
            {"x": x_of(t), "text": f"{t:g}", "y": DELEGATION_TOP + plot_height + 16}
            for t in thresholds
        ],
        "y_ticks": [
            {"y": y_of(v), "text": f"{round(v * 100)}%", "x": DELEGATION_LEFT - 6}
            for v in (0.0, 0.5, 1.0)
        ],
        "x_title_y": DELEGATION_HEIGHT - 6,
        "series": series,
        "label": (
            "Delegation to machine annotators: for each confidence threshold, the share of the "
            "items with gold a machine would take (dashed) and its agreement with gold on them "
            "(solid)"
        ),
    }
