"""The shapes of the agreement page's figures (labeling.agreement_charts, pure): the κ/α chart,
the confusion heatmap, a dimension's figures and the warnings grouped by kind."""

import math

import pytest

from labeling.agreement_charts import (
    CELL_SIZE,
    CHART_FONT,
    CHART_TEXT_WIDTH,
    ELLIPSIS,
    LABEL_FONT,
    MAX_LABEL_WIDTH,
    NARROW_AXIS,
    PLOT_LEFT,
    PLOT_RIGHT,
    WIDE_AXIS,
    chart_axis,
    chart_x,
    dimension_figures,
    heatmap_layout,
    kappa_alpha_chart,
    shorten,
    text_width,
    warnings_by_kind,
)
from labeling.agreement_tables import heatmap_cells

TIMES = "\u00d7"


def dimension(name: str, **figures) -> dict:
    """A dimension of the report with the keys the page reads (no item by default)."""
    return {
        "name": name,
        "n_items": 0,
        "multi_label": False,
        "ordinal": False,
        "kappa_weights": None,
        "percent_agreement": None,
        "percent_agreement_all": None,
        "cohen_kappa": {"n_pairs": 0, "n_pairs_counted": 0, "pairs": []},
        "headline": {
            "statistic": None,
            "label": None,
            "value": None,
            "ci95": None,
            "interval_method": None,
            "interpretation": None,
            "pairs": [],
        },
        "fleiss_kappa": None,
        "fleiss_kappa_gwet": None,
        "fleiss_kappa_ci95": None,
        "krippendorff_alpha": None,
        "krippendorff_alpha_ci95": None,
        "units": {},
        "warnings": [],
        "warning_kinds": [],
    } | figures


def headline(value, ci95=None, statistic="mean", method="bootstrap", pairs=()) -> dict:
    return {
        "statistic": statistic,
        "label": "mean Cohen's κ over the pairs of annotators" if value is not None else None,
        "value": value,
        "ci95": ci95,
        "interval_method": method if ci95 else None,
        "interpretation": "moderate" if value is not None else None,
        "pairs": list(pairs),
    }


# --- text ----------------------------------------------------------------------------------


def test_text_width_grows_with_the_text_and_the_font():
    assert text_width("", 12) == 0
    assert text_width("Root cause", 12) < text_width("Root cause and more", 12)
    assert text_width("Root cause", 12) < text_width("Root cause", 13)
    assert text_width("Root cause", 13) < text_width("Root cause", 13, bold=True)
    assert text_width("iiii", 12) < text_width("MMMM", 12)


def test_a_label_too_wide_is_cut_with_an_ellipsis_and_one_that_fits_is_kept():
    assert shorten("Stage", 100, 12) == "Stage"
    long = "Sharded Data Parallelism (ZeRO / FSDP) across many nodes"
    short = shorten(long, 150, 12)
    assert short.endswith(ELLIPSIS) and long.startswith(short[:-1].rstrip())
    assert text_width(short, 12) <= 150


# --- the κ/α chart ---------------------------------------------------------------------------


def test_the_axis_runs_from_minus_0_2_unless_a_value_or_interval_lies_below():
    assert chart_axis([0.1, 0.9, None]) == NARROW_AXIS
    assert chart_axis([]) == NARROW_AXIS
    assert chart_axis([0.3, -0.25]) == WIDE_AXIS
    assert chart_x(-0.2, NARROW_AXIS) == PLOT_LEFT and chart_x(1.0, NARROW_AXIS) == PLOT_RIGHT
    assert chart_x(0.4, NARROW_AXIS) == pytest.approx(PLOT_LEFT + (PLOT_RIGHT - PLOT_LEFT) / 2)
    assert chart_x(-5, WIDE_AXIS) == PLOT_LEFT  # beyond the axis: drawn at its end


def test_the_chart_marks_each_dimensions_kappa_and_alpha_with_their_intervals():
    dimensions = {
        "symptom": dimension(
            "Symptom",
            n_items=40,
            headline=headline(0.4, [0.16, 0.64]),
            krippendorff_alpha=0.52,
            krippendorff_alpha_ci95=[0.28, 0.76],
        ),
        "stage": dimension("Stage", n_items=40, headline=headline(0.7), krippendorff_alpha=0.7),
    }
    chart = kappa_alpha_chart(dimensions, min_pair_items=10)
    assert chart["axis"] == NARROW_AXIS and chart["has_marks"]
    symptom, stage = chart["rows"]
    assert (symptom["name"], symptom["shown_name"], symptom["cut"]) == ("Symptom", "Symptom", False)
    assert symptom["summary"] == "κ 0.40 · α 0.52"
    kappa, alpha = symptom["marks"]
    assert kappa["kind"] == "kappa" and kappa["x"] == chart_x(0.4, NARROW_AXIS)
    assert (kappa["low"], kappa["high"]) == (chart_x(0.16, NARROW_AXIS), chart_x(0.64, NARROW_AXIS))
    assert kappa["title"] == (
        "Symptom: mean Cohen's κ over the pairs of annotators 0.400, 95% interval "
        "[0.16, 0.64] (bootstrap); moderate"
    )
    assert alpha["kind"] == "alpha" and alpha["y"] > kappa["y"]
    assert alpha["title"].startswith("Symptom: Krippendorff's α 0.520, 95% interval [0.28, 0.76]")
    # Without an interval, no whisker.
    assert stage["marks"][0]["low"] is None and "no interval" in stage["marks"][0]["title"]
    # Rows one under the other, the axis under the last.
    assert stage["top"] > symptom["top"]
    assert chart["plot_bottom"] <= chart["height"] - 20
    assert [tick["text"] for tick in chart["ticks"]] == [
        "-0.2",
        "0",
        "0.2",
        "0.4",
        "0.6",
        "0.8",
        "1",
    ]
    assert (chart["ticks"][0]["anchor"], chart["ticks"][-1]["anchor"]) == ("start", "end")


def test_pairs_below_the_minimum_are_marked_each_where_the_headline_would_be():
    pairs = [
        {"a": "ann", "b": "bob", "n": 6, "kappa": 0.5},
        {"a": "ann", "b": "cy", "n": 5, "kappa": -0.3},
    ]
    below = dimension(
        "Root cause",
        n_items=6,
        headline=headline(None, statistic="pairs_below_minimum", pairs=pairs),
        krippendorff_alpha=0.2,
    )
    chart = kappa_alpha_chart({"root_cause": below}, min_pair_items=10)
    assert chart["axis"] == WIDE_AXIS  # a pair's κ below -0.2
    marks = chart["rows"][0]["marks"]
    assert [mark["kind"] for mark in marks] == ["pair", "pair", "alpha"]
    assert marks[0]["title"] == (
        f"Root cause: ann {TIMES} bob: κ 0.500 on 6 shared items, below the minimum of 10 "
        "shared items"
    )
    assert marks[1]["x"] == chart_x(-0.3, WIDE_AXIS)
    assert chart["rows"][0]["summary"] == "α 0.20"


def test_a_dimension_without_items_or_with_an_undefined_kappa_says_so_and_has_no_mark():
    chart = kappa_alpha_chart(
        {
            "empty": dimension("Empty"),
            "flat": dimension("Flat", n_items=40, headline=headline(None, statistic=None)),
        },
        min_pair_items=10,
    )
    assert [row["summary"] for row in chart["rows"]] == ["no item rated twice", "κ undefined"]
    assert all(row["marks"] == [] for row in chart["rows"]) and not chart["has_marks"]


def test_a_long_dimension_name_is_cut_to_fit_a_phone_and_kept_whole_for_its_title():
    name = "Parallelism, sharding and offloading features involved in the failure"
    chart = kappa_alpha_chart(
        {"long": dimension(name, n_items=40, headline=headline(0.5), krippendorff_alpha=0.5)},
        min_pair_items=10,
    )
    row = chart["rows"][0]
    assert row["cut"] and row["name"] == name and row["shown_name"].endswith(ELLIPSIS)
    width = text_width(row["shown_name"], CHART_FONT, bold=True)
    assert width + text_width(" " + row["summary"], CHART_FONT) <= CHART_TEXT_WIDTH


def test_the_landis_koch_bands_are_named_and_their_words_stay_inside_the_chart():
    narrow = kappa_alpha_chart({}, min_pair_items=10)["bands"]
    assert [band["word"] for band in narrow] == [
        "poor",
        "slight",
        "fair",
        "moderate",
        "substantial",
        "almost perfect",
    ]
    assert narrow[0]["x"] == PLOT_LEFT
    assert narrow[-1]["x"] + narrow[-1]["width"] == pytest.approx(PLOT_RIGHT)
    assert (narrow[0]["anchor"], narrow[-1]["anchor"]) == ("start", "end")
    # Neighbours on two lines, so that their words never overlap.
    assert [band["text_y"] for band in narrow[:3]] == [12, 25, 12]
    assert narrow[3]["title"] == "Landis & Koch: moderate, 0.4 to 0.6"


# --- the confusion heatmap -------------------------------------------------------------------

CONFUSION = {
    "labels": ["crash", "hang", "never_used", "excessive_memory_usage", ""],
    "matrix": [
        [3, 1, 0, 0, 0],
        [0, 2, 0, 0, 1],
        [0, 0, 0, 0, 0],
        [1, 0, 0, 4, 0],
        [0, 0, 0, 0, 1],
    ],
}
NAMES = {"crash": "Crash", "hang": "Hang", "excessive_memory_usage": "Excessive Memory Usage"}


def test_the_heatmap_names_the_categories_either_annotator_used_on_both_axes():
    heatmap = heatmap_cells(CONFUSION, names=NAMES, row_title="rows: ann", column_title="b")
    assert heatmap["names"] == ["Crash", "Hang", "Excessive Memory Usage", "(none applies)"]
    assert [label["shown"] for label in heatmap["labels"]] == heatmap["names"]
    assert len(heatmap["cells"]) == 16 and heatmap["cell_size"] >= 32
    cell = next(c for c in heatmap["cells"] if c["count"] == 4)
    assert (cell["row_label"], cell["column_label"], cell["diagonal"]) == (
        "Excessive Memory Usage",
        "Excessive Memory Usage",
        True,
    )
    assert cell["dark"] and cell["fill"] == "rgb(55,121,255)"
    assert heatmap["rows"][0] == {"name": "Crash", "counts": [3, 1, 0, 0]}
    assert [title["text"] for title in heatmap["titles"]] == ["rows: ann", "b"]
    # Without names, the keys (the empty one as "(none applies)").
    assert heatmap_layout(CONFUSION)["names"][-2:] == ["excessive_memory_usage", "(none applies)"]


@pytest.mark.parametrize("longest", ["Hang", "Excessive Memory Usage", "A" * 80])
def test_the_heatmaps_margins_hold_its_longest_label(longest):
    heatmap = heatmap_layout(CONFUSION, names=NAMES | {"crash": longest}, row_title="rows: ann")
    sine = math.sin(math.radians(45))
    for position, label in enumerate(heatmap["labels"]):
        width = text_width(label["shown"], LABEL_FONT)
        assert width <= MAX_LABEL_WIDTH
        assert label["row_x"] - width >= 0  # row labels end left of the grid
        assert label["row_x"] < heatmap["left"]
        # Column labels rise at 45° from their column's centre, above the grid.
        assert label["column_y"] - width * sine - LABEL_FONT >= 0
        assert label["column_x"] + (width + LABEL_FONT) * sine <= heatmap["width"]
        assert label["column_x"] == heatmap["left"] + position * CELL_SIZE + CELL_SIZE / 2
    first = heatmap["labels"][0]
    assert first["cut"] == (len(longest) == 80)
    assert first["name"] == longest
    if first["cut"]:
        assert first["shown"].endswith(ELLIPSIS)
    title = heatmap["titles"][0]
    assert title["y"] < heatmap["top"] and text_width(title["text"], 12) < heatmap["left"]
    assert heatmap["height"] >= heatmap["top"] + 4 * CELL_SIZE


# --- a dimension's figures -------------------------------------------------------------------


def figures_by_key(dimension_report: dict) -> dict[str, dict]:
    return {f["key"]: f for f in dimension_figures(dimension_report, min_pair_items=10)}


def test_a_single_label_dimension_lists_its_figures_with_units_and_why_one_is_missing():
    report = dimension(
        "Symptom",
        n_items=12,
        percent_agreement=0.625,
        percent_agreement_all=0.5,
        cohen_kappa={"n_pairs": 3, "n_pairs_counted": 1, "pairs": []},
        headline=headline(0.41, [0.1, 0.72], statistic="pair", method="wald"),
        fleiss_kappa_gwet=0.38,
        krippendorff_alpha=0.4,
        units={"cohen_kappa": "Cohen's κ of each pair", "fleiss_kappa": "Fleiss' κ, nominal"},
        warning_kinds=["few_items", "unequal_ratings"],
        warnings=["Only 12 items.", "Unequal ratings."],
    )
    figures = figures_by_key(report)
    assert list(figures) == [
        "headline",
        "percent_agreement",
        "percent_agreement_all",
        "fleiss_kappa",
        "fleiss_kappa_gwet",
        "krippendorff_alpha",
    ]
    kappa = figures["headline"]
    assert (kappa["text"], kappa["interval"], kappa["interval_method"]) == (
        "0.410",
        "[0.10, 0.72]",
        "wald",
    )
    assert kappa["unit"] == "Cohen's κ of each pair"
    assert kappa["note"] == (
        "mean Cohen's κ over the pairs of annotators, 1 of 3 pairs counted; moderate"
    )
    assert figures["percent_agreement"]["text"] == "62.5%"
    assert figures["percent_agreement_all"]["text"] == "50.0%"
    fleiss = figures["fleiss_kappa"]
    assert fleiss["text"] == "\u2013" and "unequal numbers of ratings" in fleiss["missing"]
    assert fleiss["unit"] == "Fleiss' κ, nominal"
    assert figures["fleiss_kappa_gwet"]["text"] == "0.380"
    assert figures["fleiss_kappa_gwet"]["missing"] is None


def test_below_the_minimum_the_kappa_figure_lists_each_pair():
    pairs = [{"a": "ann", "b": "bob", "n": 6, "kappa": 0.5}]
    report = dimension(
        "Stage",
        n_items=6,
        headline=headline(None, statistic="pairs_below_minimum", pairs=pairs),
    )
    kappa = figures_by_key(report)["headline"]
    assert kappa["missing"].startswith("no pair shares 10 items")
    assert kappa["pairs"] == [{"a": "ann", "b": "bob", "n": 6, "text": "0.500"}]


def test_an_ordinal_dimension_adds_its_metric_alphas_and_a_multi_label_one_its_set_measures():
    ordinal = dimension(
        "Severity",
        n_items=40,
        ordinal=True,
        kappa_weights="linear",
        krippendorff_alpha_ordinal=0.61,
        krippendorff_alpha_interval=0.66,
        krippendorff_alpha_ratio=None,
    )
    figures = figures_by_key(ordinal)
    assert figures["headline"]["name"] == "Cohen's κ (linear weights)"
    assert [
        figures[k]["text"] for k in ("krippendorff_alpha_ordinal", "krippendorff_alpha_interval")
    ] == [
        "0.610",
        "0.660",
    ]
    assert figures["krippendorff_alpha_ratio"]["missing"]
    multi = dimension(
        "Practice",
        n_items=40,
        multi_label=True,
        krippendorff_alpha=0.3,
        krippendorff_alpha_jaccard=0.35,
        exact_set_agreement=0.25,
        mean_jaccard=0.6,
        mean_masi_similarity=0.55,
        units={"mean_jaccard": "Jaccard similarity of two label sets"},
    )
    figures = figures_by_key(multi)
    assert figures["krippendorff_alpha"]["name"] == "Krippendorff's α (MASI)"
    assert figures["exact_set_agreement"]["text"] == "25.0%"
    assert figures["mean_jaccard"]["unit"] == "Jaccard similarity of two label sets"
    assert "krippendorff_alpha_ordinal" not in figures


# --- warnings by kind ------------------------------------------------------------------------


def test_warnings_are_grouped_by_kind_each_sentence_once_with_its_dimensions():
    few = "Only 6 items with two or more ratings."
    dimensions = {
        "a": dimension(
            "A",
            n_items=6,
            warnings=[few, "No pair."],
            warning_kinds=["few_items", "no_pair_counted"],
        ),
        "b": dimension("B", n_items=6, warnings=[few], warning_kinds=["few_items"]),
        "c": dimension("C", n_items=5, warnings=["Only 5 items."], warning_kinds=["few_items"]),
    }
    groups = warnings_by_kind(dimensions)
    assert [g["kind"] for g in groups] == ["few_items", "no_pair_counted"]
    few_items = groups[0]
    assert few_items["dimensions"] == ["A", "B", "C"] and few_items["every_dimension"]
    assert few_items["details"] == [
        {"scope": "", "text": few, "dimensions": ["A", "B"]},
        {"scope": "", "text": "Only 5 items.", "dimensions": ["C"]},
    ]
    assert groups[1]["dimensions"] == ["A"] and not groups[1]["every_dimension"]
    assert groups[0]["title"] == "Few items: the kappas are imprecise"


def test_a_rounds_or_repositorys_warnings_join_their_kind_unless_the_report_says_them():
    few = "Only 6 items."
    dimensions = {"a": dimension("A", n_items=6, warnings=[few], warning_kinds=["few_items"])}
    pilot = {"a": {"name": "A", "n_items": 6, "warnings": [few], "warning_kinds": ["few_items"]}}
    main = {
        "a": {
            "name": "A",
            "n_items": 3,
            "warnings": ["Only 3 items.", "Something new."],
            "warning_kinds": ["few_items", "brand_new"],
        }
    }
    empty = {
        "a": {"name": "A", "n_items": 0, "warnings": ["No item."], "warning_kinds": ["no_items"]}
    }
    groups = warnings_by_kind(
        dimensions, scopes=[("Round Pilot", pilot), ("Round Main", main), ("Round Empty", empty)]
    )
    assert [g["kind"] for g in groups] == ["few_items", "brand_new"]
    assert groups[0]["scopes"] == ["Round Main"]
    assert groups[0]["details"][-1] == {
        "scope": "Round Main",
        "text": "Only 3 items.",
        "dimensions": ["A"],
    }
    assert groups[1]["title"] == "Brand new" and groups[1]["dimensions"] == []
