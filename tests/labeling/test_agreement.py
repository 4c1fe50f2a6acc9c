"""Agreement statistics against published worked examples and independent implementations.

Pure functions: no database. The independent implementations (statsmodels, krippendorff,
NLTK) are used here only, as oracles.
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Collection

import krippendorff
import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from nltk.metrics.agreement import AnnotationTask
from nltk.metrics.distance import jaccard_distance as nltk_jaccard_distance
from nltk.metrics.distance import masi_distance as nltk_masi_distance
from sklearn.metrics import cohen_kappa_score
from statsmodels.stats.inter_rater import fleiss_kappa as statsmodels_fleiss_kappa

from labeling.agreement import (
    DEFAULT_MIN_PAIR_ITEMS,
    MIN_ITEMS_FOR_KAPPA,
    cohen_kappa,
    dimension_agreement,
    fleiss_kappa,
    fleiss_kappa_gwet,
    interpret_kappa,
    kappa_from_confusion,
    krippendorff_alpha_nominal,
    masi_distance,
)

# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------

Rows = tuple[list[int], list[str], list[Collection[str]]]


def rows_from_table(table: dict[str, list[str | None]]) -> Rows:
    """{annotator: [label per item, None = not rated]} -> the entry point's row lists."""
    item_ids, annotators, label_sets = [], [], []
    for annotator, labels in table.items():
        for item_id, label in enumerate(labels):
            if label is not None:
                item_ids.append(item_id)
                annotators.append(annotator)
                label_sets.append({label} if label else set())
    return item_ids, annotators, label_sets


def rows_from_set_table(table: dict[str, list[frozenset[str] | None]]) -> Rows:
    item_ids, annotators, label_sets = [], [], []
    for annotator, labels in table.items():
        for item_id, label_set in enumerate(labels):
            if label_set is not None:
                item_ids.append(item_id)
                annotators.append(annotator)
                label_sets.append(set(label_set))
    return item_ids, annotators, label_sets


# The arithmetic is checked on textbook examples of a handful of items, so these helpers count
# every pair that shares an item; the minimum overlap has tests of its own.
def single_label(rows: Rows, categories: list[str], **options) -> dict:
    options.setdefault("min_pair_items", 1)
    return dimension_agreement(*rows, categories=categories, multi_label=False, **options)


def multi_label(rows: Rows, categories: list[str], **options) -> dict:
    options.setdefault("min_pair_items", 1)
    return dimension_agreement(*rows, categories=categories, multi_label=True, **options)


def assert_plain_json(value: object) -> None:
    """Only JSON-native Python types (no numpy scalars), and no NaN/inf."""
    if isinstance(value, dict):
        for key, inner in value.items():
            assert type(key) is str
            assert_plain_json(inner)
    elif isinstance(value, list):
        for inner in value:
            assert_plain_json(inner)
    else:
        assert value is None or type(value) in (str, int, float, bool), type(value)
        if type(value) is float:
            assert math.isfinite(value)


def statistics_of(report: dict) -> tuple:
    """The headline numbers of a report, for comparing reports."""
    return (
        report["n_items"],
        report["percent_agreement"],
        report["cohen_kappa"]["mean"],
        report["fleiss_kappa"],
        report["krippendorff_alpha"],
    )


def approx_or_none(value: float | None) -> object:
    return None if value is None else pytest.approx(value, rel=1e-9, abs=1e-12)


# Wikipedia, "Cohen's kappa", worked example: 50 grant proposals read by A and B.
# Both yes 20, A yes/B no 5, A no/B yes 10, both no 15: p_o = 0.7, p_e = 0.5, kappa = 0.4.
WIKIPEDIA_COHEN_CELLS = [("yes", "yes", 20), ("yes", "no", 5), ("no", "yes", 10), ("no", "no", 15)]


def wikipedia_cohen_rows() -> Rows:
    answers_a: list[str | None] = []
    answers_b: list[str | None] = []
    for answer_a, answer_b, count in WIKIPEDIA_COHEN_CELLS:
        answers_a += [answer_a] * count
        answers_b += [answer_b] * count
    return rows_from_table({"A": answers_a, "B": answers_b})


# Fleiss (1971) data as in Wikipedia, "Fleiss' kappa": 10 subjects, 14 raters, 5 categories.
FLEISS_TABLE = np.array(
    [
        [0, 0, 0, 0, 14],
        [0, 2, 6, 4, 2],
        [0, 0, 3, 5, 6],
        [0, 3, 9, 2, 0],
        [2, 2, 8, 1, 1],
        [7, 7, 0, 0, 0],
        [3, 2, 6, 3, 0],
        [2, 5, 3, 2, 2],
        [6, 5, 2, 1, 0],
        [0, 2, 2, 3, 7],
    ]
)

# Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", example C: four observers,
# twelve units, values 1-5, missing data. Nominal alpha = 0.743.
KRIPPENDORFF_2011 = {
    "A": ["1", "2", "3", "3", "2", "1", "4", "1", "2", None, None, None],
    "B": ["1", "2", "3", "3", "2", "2", "4", "1", "2", "5", None, "3"],
    "C": [None, "3", "3", "3", "2", "3", "4", "2", "2", "5", "1", None],
    "D": ["1", "2", "3", "3", "2", "4", "4", "1", "2", "5", "1", None],
}


# --------------------------------------------------------------------------------------------
# Published worked examples
# --------------------------------------------------------------------------------------------


def test_cohen_kappa_matches_the_wikipedia_worked_example():
    report = single_label(wikipedia_cohen_rows(), ["yes", "no"])

    (pair,) = report["cohen_kappa"]["pairs"]
    assert pair["a"] == "A" and pair["b"] == "B" and pair["n"] == 50
    assert pair["kappa"] == pytest.approx(0.4)
    assert pair["confusion"] == {"labels": ["yes", "no"], "matrix": [[20, 5], [10, 15]]}
    assert report["cohen_kappa"]["mean"] == pytest.approx(0.4)
    assert report["cohen_kappa"]["interpretation"] == "fair"
    assert report["percent_agreement"] == pytest.approx(0.7)


def test_kappa_from_confusion_matches_the_wikipedia_worked_example():
    assert kappa_from_confusion([[20, 5], [10, 15]]) == pytest.approx(0.4)


def test_weighted_kappa_matches_a_hand_computed_example():
    # Scale low < mid < high; A = low, mid, high, high; B = low, high, high, mid.
    # Both marginals are (1, 1, 2). Linear weights |i - j|: observed disagreement 1 + 1 = 2,
    # chance disagreement (1/4) * sum_jk |j - k| r_j c_k = 14/4, kappa = 1 - 2 / 3.5 = 3/7.
    # Quadratic (i - j)^2: observed 2, chance 22/4, kappa = 1 - 2 / 5.5 = 7/11.
    rows = rows_from_table(
        {"A": ["low", "mid", "high", "high"], "B": ["low", "high", "high", "mid"]}
    )
    scale = ["low", "mid", "high"]

    linear = single_label(rows, scale, ordinal=True, weights="linear")
    quadratic = single_label(rows, scale, ordinal=True, weights="quadratic")
    unweighted = single_label(rows, scale, ordinal=True)

    assert linear["cohen_kappa"]["mean"] == pytest.approx(3 / 7)
    assert quadratic["cohen_kappa"]["mean"] == pytest.approx(7 / 11)
    # p_o = 2/4, p_e = (1 + 1 + 4) / 16: kappa = (0.5 - 0.375) / 0.625 = 0.2.
    assert unweighted["cohen_kappa"]["mean"] == pytest.approx(0.2)


def test_weighted_kappa_uses_the_order_of_categories_as_the_scale():
    rows = rows_from_table(
        {"A": ["low", "mid", "high", "high"], "B": ["low", "high", "high", "mid"]}
    )
    reordered = single_label(rows, ["mid", "low", "high"], ordinal=True, weights="linear")
    assert reordered["cohen_kappa"]["mean"] != pytest.approx(3 / 7)
    # Weights only apply to ordinal dimensions.
    nominal = single_label(rows, ["low", "mid", "high"], weights="linear")
    assert nominal["cohen_kappa"]["mean"] == pytest.approx(0.2)


def test_fleiss_kappa_matches_the_fleiss_1971_example():
    assert fleiss_kappa(FLEISS_TABLE) == pytest.approx(0.210, abs=5e-4)
    assert fleiss_kappa(FLEISS_TABLE) == pytest.approx(statsmodels_fleiss_kappa(FLEISS_TABLE))


def test_fleiss_kappa_of_the_fleiss_1971_example_through_the_entry_point():
    categories = ["c1", "c2", "c3", "c4", "c5"]
    item_ids, annotators, label_sets = [], [], []
    for item_id, counts in enumerate(FLEISS_TABLE):
        raters = iter(range(14))
        for category, count in zip(categories, counts, strict=True):
            for _ in range(count):
                item_ids.append(item_id)
                annotators.append(f"rater{next(raters):02d}")
                label_sets.append({category})

    report = dimension_agreement(
        item_ids, annotators, label_sets, categories=categories, multi_label=False
    )

    assert report["fleiss_kappa"] == pytest.approx(statsmodels_fleiss_kappa(FLEISS_TABLE))
    assert report["n_items"] == 10 and report["n_annotators"] == 14
    assert len(report["cohen_kappa"]["pairs"]) == 14 * 13 // 2


def test_krippendorff_alpha_matches_the_2011_worked_example_with_missing_data():
    report = single_label(rows_from_table(KRIPPENDORFF_2011), ["1", "2", "3", "4", "5"])

    assert report["krippendorff_alpha"] == pytest.approx(0.743, abs=5e-4)
    # Unit 12 has a single value and is not pairable.
    assert report["n_items"] == 11
    reliability_data = [
        [np.nan if value is None else float(value) for value in values]
        for values in KRIPPENDORFF_2011.values()
    ]
    expected = krippendorff.alpha(reliability_data, level_of_measurement="nominal")
    assert report["krippendorff_alpha"] == pytest.approx(expected)


def test_krippendorff_alpha_nominal_from_a_count_table():
    # The 2011 example as items x values counts (unit 12 has one value and is dropped).
    counts = [
        [3, 0, 0, 0, 0],
        [0, 3, 1, 0, 0],
        [0, 0, 4, 0, 0],
        [0, 0, 4, 0, 0],
        [0, 4, 0, 0, 0],
        [1, 1, 1, 1, 0],
        [0, 0, 0, 4, 0],
        [3, 1, 0, 0, 0],
        [0, 4, 0, 0, 0],
        [0, 0, 0, 0, 3],
        [2, 0, 0, 0, 0],
        [0, 0, 1, 0, 0],
    ]
    assert krippendorff_alpha_nominal(counts) == pytest.approx(0.743, abs=5e-4)


def test_masi_distance_follows_passonneau_2006():
    assert masi_distance({"a", "b"}, {"a", "b"}) == 0.0
    # Subset: Jaccard 1/2, monotonicity 2/3.
    assert masi_distance({"a"}, {"a", "b"}) == pytest.approx(1 - (1 / 2) * (2 / 3))
    # Overlap without subset: Jaccard 1/3, monotonicity 1/3.
    assert masi_distance({"a", "b"}, {"b", "c"}) == pytest.approx(1 - (1 / 3) * (1 / 3))
    assert masi_distance({"a"}, {"b"}) == 1.0
    # Empty sets: "none applies" twice is agreement; against any label it is disagreement.
    assert masi_distance(set(), set()) == 0.0
    assert masi_distance(set(), {"a"}) == 1.0


@given(
    st.frozensets(st.sampled_from("abcde"), min_size=1),
    st.frozensets(st.sampled_from("abcde"), min_size=1),
)
def test_masi_distance_matches_nltk(labels_a, labels_b):
    assert masi_distance(labels_a, labels_b) == pytest.approx(
        nltk_masi_distance(set(labels_a), set(labels_b))
    )


# --------------------------------------------------------------------------------------------
# Independent implementations on random data
# --------------------------------------------------------------------------------------------

LABELS = ["a", "b", "c", "d"]


@st.composite
def single_label_tables(draw, min_annotators=2, max_annotators=4, allow_missing=True):
    """{annotator: [label or None]} with a common number of items."""
    n_annotators = draw(st.integers(min_annotators, max_annotators))
    n_items = draw(st.integers(1, 25))
    value = st.sampled_from(LABELS)
    if allow_missing:
        value = st.one_of(value, st.none())
    return {
        f"user{index}": draw(st.lists(value, min_size=n_items, max_size=n_items))
        for index in range(n_annotators)
    }


@st.composite
def label_set_tables(draw, allow_empty=True):
    n_annotators = draw(st.integers(2, 4))
    n_items = draw(st.integers(1, 20))
    label_set = st.frozensets(st.sampled_from(LABELS), min_size=0 if allow_empty else 1)
    value = st.one_of(label_set, st.none())
    return {
        f"user{index}": draw(st.lists(value, min_size=n_items, max_size=n_items))
        for index in range(n_annotators)
    }


@settings(max_examples=150, deadline=None)
@given(single_label_tables())
def test_pair_kappas_and_confusion_match_scikit_learn(table):
    report = single_label(rows_from_table(table), LABELS)

    for pair in report["cohen_kappa"]["pairs"]:
        both = [
            (label_a, label_b)
            for label_a, label_b in zip(table[pair["a"]], table[pair["b"]], strict=True)
            if label_a is not None and label_b is not None
        ]
        assert pair["n"] == len(both)
        matrix = np.zeros((4, 4), dtype=int)
        for label_a, label_b in both:
            matrix[LABELS.index(label_a), LABELS.index(label_b)] += 1
        assert pair["confusion"]["matrix"] == matrix.tolist()
        if len({label for cell in both for label in cell}) < 2:
            assert pair["kappa"] is None
            continue
        expected = cohen_kappa_score(*zip(*both, strict=True), labels=LABELS)
        assert pair["kappa"] == expected


@settings(max_examples=150, deadline=None)
@given(single_label_tables(), st.sampled_from([None, "linear", "quadratic"]))
def test_kappa_kernel_used_by_the_bootstrap_matches_scikit_learn(table, weights):
    labels_a, labels_b = table["user0"], table["user1"]
    both = [(a, b) for a, b in zip(labels_a, labels_b, strict=True) if a and b]
    assume(both)
    first, second = zip(*both, strict=True)
    matrix = np.zeros((4, 4))
    for label_a, label_b in both:
        matrix[LABELS.index(label_a), LABELS.index(label_b)] += 1

    expected = cohen_kappa(first, second, labels=LABELS, weights=weights)
    actual = kappa_from_confusion(matrix, weights=weights)

    assert actual == approx_or_none(expected)


@settings(max_examples=150, deadline=None)
@given(single_label_tables())
def test_krippendorff_alpha_matches_the_krippendorff_package(table):
    report = single_label(rows_from_table(table), LABELS)
    reliability_data = [
        [np.nan if label is None else float(LABELS.index(label)) for label in labels]
        for labels in table.values()
    ]
    pairable_values = [
        value
        for column in zip(*reliability_data, strict=True)
        if sum(not math.isnan(value) for value in column) >= 2
        for value in column
        if not math.isnan(value)
    ]
    if len(set(pairable_values)) < 2:
        assert report["krippendorff_alpha"] is None
        return
    expected = krippendorff.alpha(reliability_data, level_of_measurement="nominal")
    assert report["krippendorff_alpha"] == pytest.approx(expected)


@settings(max_examples=150, deadline=None)
@given(single_label_tables(allow_missing=False, min_annotators=3, max_annotators=5))
def test_fleiss_kappa_matches_statsmodels_when_every_item_has_every_rating(table):
    report = single_label(rows_from_table(table), LABELS)
    counts = np.array(
        [[labels.count(label) for label in LABELS] for labels in zip(*table.values(), strict=True)]
    )
    if (counts.sum(axis=0) > 0).sum() < 2:
        assert report["fleiss_kappa"] is None
        return
    assert report["fleiss_kappa"] == pytest.approx(statsmodels_fleiss_kappa(counts))


def test_fleiss_kappa_is_undefined_with_unequal_numbers_of_ratings_and_gwets_is_given():
    # Item 1: 3 ratings (a, a, b); item 2: 2 ratings (b, b); item 3: 4 ratings (a, b, b, b).
    counts = [[2, 1], [0, 2], [1, 3]]
    observed = np.mean([2 / 6, 2 / 2, 6 / 12])  # sum n(n - 1) / (r (r - 1)) per item
    share_a = np.mean([2 / 3, 0 / 2, 1 / 4])
    expected_agreement = share_a**2 + (1 - share_a) ** 2
    expected = (observed - expected_agreement) / (1 - expected_agreement)

    assert fleiss_kappa(counts) is None  # Fleiss (1971) assumes a constant number of ratings
    assert fleiss_kappa_gwet(counts) == pytest.approx(expected)
    # irrCAC's chance term takes every rated item, a single-rated one too; its observed
    # agreement only the items rated twice or more.
    share_a = np.mean([2 / 3, 0 / 2, 1 / 4, 1 / 1])
    expected_agreement = share_a**2 + (1 - share_a) ** 2
    with_single = (observed - expected_agreement) / (1 - expected_agreement)
    assert fleiss_kappa_gwet([*counts, [1, 0]]) == pytest.approx(with_single)
    # With equal numbers of ratings both are Fleiss (1971).
    assert fleiss_kappa_gwet(FLEISS_TABLE) == pytest.approx(fleiss_kappa(FLEISS_TABLE))


@pytest.mark.parametrize(
    ("figure", "nltk_distance"),
    [
        ("krippendorff_alpha", nltk_masi_distance),
        ("krippendorff_alpha_jaccard", nltk_jaccard_distance),
    ],
    ids=["masi", "jaccard"],
)
@settings(max_examples=100, deadline=None)
@given(table=label_set_tables(allow_empty=False))
def test_set_alpha_matches_nltk(figure, nltk_distance, table):
    rows = rows_from_set_table(table)
    report = multi_label(rows, LABELS)
    task = AnnotationTask(
        data=[
            (annotator, item_id, frozenset(labels))
            for item_id, annotator, labels in zip(*rows, strict=True)
        ],
        distance=nltk_distance,
    )
    pairable = [
        frozenset(labels)
        for item_id, _, labels in zip(*rows, strict=True)
        if rows[0].count(item_id) >= 2
    ]
    if len(set(pairable)) < 2:
        # NLTK reports 1.0 for a single value; we report undefined.
        assert report[figure] is None
        return
    assert report[figure] == pytest.approx(task.alpha())


@settings(max_examples=100, deadline=None)
@given(label_set_tables(allow_empty=True))
def test_masi_alpha_with_empty_sets_matches_nltk_with_our_distance(table):
    rows = rows_from_set_table(table)
    report = multi_label(rows, LABELS)
    pairable = {
        frozenset(labels)
        for item_id, _, labels in zip(*rows, strict=True)
        if rows[0].count(item_id) >= 2
    }
    assume(len(pairable) >= 2)
    task = AnnotationTask(
        data=[
            (annotator, item_id, frozenset(labels))
            for item_id, annotator, labels in zip(*rows, strict=True)
        ],
        distance=masi_distance,
    )
    assert report["krippendorff_alpha"] == pytest.approx(task.alpha())


@settings(max_examples=100, deadline=None)
@given(label_set_tables())
def test_multi_label_kappas_are_binary_cohen_kappas_per_category(table):
    report = multi_label(rows_from_set_table(table), LABELS)

    per_pair: dict[str, list[float]] = {label: [] for label in LABELS}
    for pair in report["cohen_kappa"]["pairs"]:
        both = [
            (set_a, set_b)
            for set_a, set_b in zip(table[pair["a"]], table[pair["b"]], strict=True)
            if set_a is not None and set_b is not None
        ]
        kappas = []
        for label in LABELS:
            used_a = [label in set_a for set_a, _ in both]
            used_b = [label in set_b for _, set_b in both]
            kappa = cohen_kappa(used_a, used_b, labels=[False, True]) if both else None
            cells = Counter(zip(used_a, used_b, strict=True))
            assert pair["confusion"]["binary"][label] == [
                [cells[False, False], cells[False, True]],
                [cells[True, False], cells[True, True]],
            ]
            if kappa is not None:
                kappas.append(kappa)
                per_pair[label].append(kappa)
        assert pair["kappa"] == approx_or_none(float(np.mean(kappas)) if kappas else None)

    for label in LABELS:
        expected = float(np.mean(per_pair[label])) if per_pair[label] else None
        assert report["per_category"][label]["kappa"] == approx_or_none(expected)


@settings(max_examples=100, deadline=None)
@given(single_label_tables())
def test_per_category_kappa_is_one_vs_rest_cohen_kappa_averaged_over_pairs(table):
    report = single_label(rows_from_table(table), LABELS)
    for label in LABELS:
        kappas = []
        for pair in report["cohen_kappa"]["pairs"]:
            both = [
                (label_a == label, label_b == label)
                for label_a, label_b in zip(table[pair["a"]], table[pair["b"]], strict=True)
                if label_a is not None and label_b is not None
            ]
            if both:
                kappa = cohen_kappa(*zip(*both, strict=True), labels=[False, True])
                if kappa is not None:
                    kappas.append(kappa)
        expected = float(np.mean(kappas)) if kappas else None
        assert report["per_category"][label]["kappa"] == approx_or_none(expected)


# --------------------------------------------------------------------------------------------
# Definitions: percent agreement, support, multi-label Fleiss
# --------------------------------------------------------------------------------------------


def test_percent_agreement_is_the_share_of_items_with_identical_label_sets():
    rows = rows_from_set_table(
        {
            "u1": [frozenset("a"), frozenset("ab"), frozenset(), frozenset("a"), frozenset("a")],
            "u2": [frozenset("a"), frozenset("ba"), frozenset(), frozenset("b"), None],
            "u3": [frozenset("a"), frozenset("ab"), frozenset(), None, None],
        }
    )
    report = multi_label(rows, ["a", "b"])

    # Item 4 has a single rating and does not count; items 0-2 agree, item 3 does not.
    assert report["n_items"] == 4
    assert report["percent_agreement"] == pytest.approx(3 / 4)


def test_support_counts_ratings_that_used_the_category_on_items_with_two_ratings():
    rows = rows_from_table({"u1": ["a", "a", "b", "c"], "u2": ["a", "", "b", None]})
    report = single_label(rows, ["a", "b", "c"])

    assert {key: value["support"] for key, value in report["per_category"].items()} == {
        "a": 3,
        "b": 2,
        "c": 0,  # only on an item rated once
        "": 1,  # "none applies" is a value of its own
    }


def test_multi_label_fleiss_kappa_is_the_mean_of_binary_fleiss_kappas():
    table = {
        "u1": [frozenset("a"), frozenset("ab"), frozenset("b"), frozenset()],
        "u2": [frozenset("a"), frozenset("a"), frozenset("b"), frozenset("b")],
        "u3": [frozenset("ab"), frozenset("ab"), frozenset(), frozenset()],
    }
    report = multi_label(rows_from_set_table(table), ["a", "b"])

    binary_kappas = []
    for label in "ab":
        used = [sum(label in table[user][item] for user in table) for item in range(4)]
        counts = np.array([[3 - count, count] for count in used])
        binary_kappas.append(statsmodels_fleiss_kappa(counts))
    assert report["fleiss_kappa"] == pytest.approx(np.mean(binary_kappas))


def test_multi_label_confusion_counts_co_occurring_categories():
    rows = rows_from_set_table(
        {"u1": [frozenset("ab"), frozenset("a")], "u2": [frozenset("b"), frozenset("ab")]}
    )
    (pair,) = multi_label(rows, ["a", "b"])["cohen_kappa"]["pairs"]

    assert pair["confusion"]["labels"] == ["a", "b"]
    # Row: what u1 used; column: what u2 used. Item 0 adds (a, b) and (b, b); item 1 adds
    # (a, a) and (a, b).
    assert pair["confusion"]["matrix"] == [[1, 2], [0, 1]]
    assert pair["confusion"]["binary"]["a"] == [[0, 0], [1, 1]]


def test_singleton_label_sets_give_the_nominal_alpha():
    rows = rows_from_table(KRIPPENDORFF_2011)
    nominal = single_label(rows, ["1", "2", "3", "4", "5"])
    as_sets = multi_label(rows, ["1", "2", "3", "4", "5"])
    assert as_sets["krippendorff_alpha"] == pytest.approx(nominal["krippendorff_alpha"])


# --------------------------------------------------------------------------------------------
# Properties
# --------------------------------------------------------------------------------------------


@settings(max_examples=100, deadline=None)
@given(single_label_tables(), st.booleans())
def test_statistics_are_symmetric_in_annotators(table, as_sets):
    # Renaming reverses the alphabetical order, so every pair swaps its a and b.
    renaming = {name: f"zz{len(table) - index}" for index, name in enumerate(table)}
    renamed_table = {renaming[name]: labels for name, labels in table.items()}
    compute = multi_label if as_sets else single_label

    original = compute(rows_from_table(table), LABELS)
    swapped = compute(rows_from_table(renamed_table), LABELS)

    for value, other in zip(statistics_of(original), statistics_of(swapped), strict=True):
        assert value == approx_or_none(other)
    swapped_pairs = {(pair["a"], pair["b"]): pair for pair in swapped["cohen_kappa"]["pairs"]}
    for pair in original["cohen_kappa"]["pairs"]:
        mirror = swapped_pairs[renaming[pair["b"]], renaming[pair["a"]]]
        assert mirror["n"] == pair["n"]
        assert mirror["kappa"] == approx_or_none(pair["kappa"])
        transposed = np.array(pair["confusion"]["matrix"]).T.tolist()
        assert mirror["confusion"]["matrix"] == transposed


@settings(max_examples=100, deadline=None)
@given(single_label_tables(), st.permutations(LABELS), st.booleans())
def test_statistics_are_invariant_to_renaming_categories(table, permuted, as_sets):
    renaming = dict(zip(LABELS, [f"new_{label}" for label in permuted], strict=True))
    renamed_table = {
        user: [None if label is None else renaming[label] for label in labels]
        for user, labels in table.items()
    }
    compute = multi_label if as_sets else single_label

    original = compute(rows_from_table(table), LABELS)
    renamed = compute(rows_from_table(renamed_table), [renaming[label] for label in LABELS])

    for value, other in zip(statistics_of(original), statistics_of(renamed), strict=True):
        assert value == approx_or_none(other)
    for label in LABELS:
        assert (
            original["per_category"][label]["support"]
            == (renamed["per_category"][renaming[label]]["support"])
        )
        assert original["per_category"][label]["kappa"] == approx_or_none(
            renamed["per_category"][renaming[label]]["kappa"]
        )


@settings(max_examples=100, deadline=None)
@given(single_label_tables(allow_missing=False), st.booleans())
def test_identical_labels_give_one_where_defined(table, as_sets):
    first = next(iter(table.values()))
    identical = {user: list(first) for user in table}
    compute = multi_label if as_sets else single_label

    report = compute(rows_from_table(identical), LABELS)

    assert report["percent_agreement"] == 1.0
    if len(set(first)) >= 2:
        assert report["cohen_kappa"]["mean"] == pytest.approx(1.0)
        assert report["fleiss_kappa"] == pytest.approx(1.0)
        assert report["krippendorff_alpha"] == pytest.approx(1.0)
        assert report["cohen_kappa"]["interpretation"] == "almost perfect"
    else:
        assert statistics_of(report)[2:] == (None, None, None)


@settings(max_examples=100, deadline=None)
@given(single_label_tables(), st.booleans(), st.booleans())
def test_reports_are_plain_json(table, as_sets, with_bootstrap):
    compute = multi_label if as_sets else single_label
    report = compute(rows_from_table(table), LABELS, bootstrap=20 if with_bootstrap else 0, seed=3)
    assert_plain_json(report)
    json.dumps(report, allow_nan=False)


# --------------------------------------------------------------------------------------------
# Undefined values are None
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("as_sets", [False, True])
def test_a_single_category_used_by_everyone_is_undefined_not_perfect(as_sets):
    rows = rows_from_table({"u1": ["a"] * 5, "u2": ["a"] * 5, "u3": ["a"] * 5})
    compute = multi_label if as_sets else single_label

    report = compute(rows, ["a", "b"], bootstrap=50)

    assert report["percent_agreement"] == 1.0  # they did all agree
    assert report["cohen_kappa"]["mean"] is None
    assert report["cohen_kappa"]["interpretation"] is None
    assert report["cohen_kappa"]["ci95"] is None
    assert all(pair["kappa"] is None for pair in report["cohen_kappa"]["pairs"])
    assert all(pair["ci95"] is None for pair in report["cohen_kappa"]["pairs"])
    assert report["fleiss_kappa"] is None
    assert report["krippendorff_alpha"] is None
    assert report["per_category"]["a"] == {
        "kappa": None, "fleiss_kappa": None, "specific_agreement": 1.0, "support": 15
    }  # fmt: skip
    assert report["per_category"]["b"] == {
        "kappa": None, "fleiss_kappa": None, "specific_agreement": None, "support": 0
    }  # fmt: skip


@pytest.mark.parametrize("as_sets", [False, True])
def test_fewer_than_two_annotators_is_undefined(as_sets):
    rows = rows_from_table({"only": ["a", "b", "a"]})
    compute = multi_label if as_sets else single_label

    report = compute(rows, ["a", "b"], bootstrap=10)

    assert report["n_items"] == 0
    assert report["n_annotators"] == 1
    assert report["cohen_kappa"]["pairs"] == []
    assert statistics_of(report)[1:] == (None, None, None, None)


def test_no_overlapping_items_is_undefined():
    rows = rows_from_table({"u1": ["a", "b", None, None], "u2": [None, None, "a", "b"]})
    report = single_label(rows, ["a", "b"], bootstrap=10)

    (pair,) = report["cohen_kappa"]["pairs"]
    assert pair["n"] == 0 and pair["kappa"] is None and pair["ci95"] is None
    assert pair["confusion"]["matrix"] == [[0, 0], [0, 0]]
    assert report["n_items"] == 0
    assert report["cohen_kappa"]["mean"] is None


def test_no_rows_at_all():
    report = dimension_agreement([], [], [], categories=["a"], multi_label=False)
    units = report.pop("units")
    assert report == {
        "n_items": 0,
        "n_annotators": 0,
        "percent_agreement": None,
        "percent_agreement_all": None,
        "cohen_kappa": {
            "mean": None,
            "interpretation": None,
            "ci95": None,
            "weighted_mean": None,
            "weighted_ci95": None,
            "n_pairs": 0,
            "n_pairs_counted": 0,
            "min_pair_items": DEFAULT_MIN_PAIR_ITEMS,
            "pairs": [],
        },
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
        "krippendorff_alpha": None,
        "fleiss_kappa_ci95": None,
        "krippendorff_alpha_ci95": None,
        "per_category": {
            "a": {"kappa": None, "fleiss_kappa": None, "specific_agreement": None, "support": 0}
        },
        "warnings": ["No item has two or more ratings yet: there is no agreement to measure."],
        "warning_kinds": ["no_items"],
    }
    assert set(units) >= {"percent_agreement", "cohen_kappa", "fleiss_kappa"}


def test_undefined_pairs_are_left_out_of_the_mean():
    # u1/u2 both always say "a" (undefined); u1/u3 and u2/u3 are defined.
    rows = rows_from_table({"u1": ["a", "a", "a"], "u2": ["a", "a", "a"], "u3": ["a", "b", "a"]})
    report = single_label(rows, ["a", "b"])
    kappas = {(pair["a"], pair["b"]): pair["kappa"] for pair in report["cohen_kappa"]["pairs"]}

    assert kappas[("u1", "u2")] is None
    assert kappas[("u1", "u3")] == pytest.approx(0.0)
    assert report["cohen_kappa"]["mean"] == pytest.approx(0.0)


def test_scalar_functions_return_none_when_undefined():
    assert cohen_kappa([], []) is None
    assert cohen_kappa(["a", "a"], ["a", "a"]) is None
    assert cohen_kappa(["a", "a"], ["a", "a"], labels=["a", "b"]) is None
    assert kappa_from_confusion([[3, 0], [0, 0]]) is None
    assert kappa_from_confusion([[0, 0], [0, 0]]) is None
    assert fleiss_kappa([[3, 0], [2, 0]]) is None
    assert fleiss_kappa([[1, 0]]) is None
    assert krippendorff_alpha_nominal([[3, 0], [2, 0]]) is None
    assert krippendorff_alpha_nominal([[1, 0], [0, 1]]) is None


# --------------------------------------------------------------------------------------------
# Which pairs count toward the mean
# --------------------------------------------------------------------------------------------

# The case of the issue: ann and bob share 40 items with a kappa of 0.479 (both api 11, both
# config 19, and 5 each way); cat labels one more item with ann, disagreeing. Counting that
# one-item pair (kappa 0.000) took the unweighted mean to 0.240.
ISSUE_CELLS = [
    ("api", "api", 11),
    ("api", "config", 5),
    ("config", "api", 5),
    ("config", "config", 19),
]
ISSUE_KAPPA = 23 / 48  # p_o = 0.75, p_e = 0.52: 0.479


def issue_rows() -> Rows:
    ann: list[str | None] = []
    bob: list[str | None] = []
    for answer_ann, answer_bob, count in ISSUE_CELLS:
        ann += [answer_ann] * count
        bob += [answer_bob] * count
    cat: list[str | None] = [None] * len(ann) + ["config"]
    return rows_from_table({"ann": [*ann, "api"], "bob": [*bob, None], "cat": cat})


def pair_of(report: dict, a: str, b: str) -> dict:
    return next(p for p in report["cohen_kappa"]["pairs"] if (p["a"], p["b"]) == (a, b))


def test_a_one_item_pair_is_listed_but_does_not_move_the_mean():
    report = dimension_agreement(
        *issue_rows(), categories=["api", "config"], multi_label=False, bootstrap=200
    )
    kappa = report["cohen_kappa"]

    assert kappa["min_pair_items"] == DEFAULT_MIN_PAIR_ITEMS
    assert kappa["mean"] == pytest.approx(ISSUE_KAPPA)
    assert round(kappa["mean"], 3) == 0.479
    assert kappa["weighted_mean"] == pytest.approx(ISSUE_KAPPA)
    assert (kappa["n_pairs"], kappa["n_pairs_counted"]) == (3, 1)
    one_item = pair_of(report, "ann", "cat")
    assert (one_item["n"], one_item["kappa"], one_item["counted"]) == (1, 0.0, False)
    assert one_item["ci95"] is None  # only counted pairs are resampled
    assert pair_of(report, "ann", "bob")["counted"] is True
    assert pair_of(report, "bob", "cat") | {"confusion": None} == {
        "a": "bob", "b": "cat", "n": 0, "kappa": None, "ci95": None, "ase": None,
        "ci95_wald": None, "counted": False, "confusion": None,
    }  # fmt: skip
    assert (
        "1 of 3 pairs share fewer than 10 items and are left out of the mean kappa."
        in (report["warnings"])
    )
    low, high = kappa["ci95"]
    assert low < kappa["mean"] < high
    low, high = kappa["weighted_ci95"]
    assert low < kappa["weighted_mean"] < high


def test_counting_every_pair_reproduces_the_misleading_mean_of_the_issue():
    report = single_label(issue_rows(), ["api", "config"], min_pair_items=1)
    kappa = report["cohen_kappa"]

    assert round(kappa["mean"], 3) == 0.240
    # Weighted by shared items, the one-item pair barely counts: (40 * 0.479 + 1 * 0) / 41.
    assert kappa["weighted_mean"] == pytest.approx(40 * ISSUE_KAPPA / 41)
    assert kappa["n_pairs_counted"] == 2


def test_the_weighted_mean_weights_each_counted_pair_by_its_shared_items():
    rows = correlated_rows(90, seed=3, multi=False)
    item_ids, annotators, _ = rows
    # u3 labeled only the first 25 items: pairs of 90, 25 and 25 shared items.
    keep = [
        index
        for index, (item, user) in enumerate(zip(item_ids, annotators, strict=True))
        if user != "u3" or item < 25
    ]
    rows = tuple([column[i] for i in keep] for column in rows)

    kappa = single_label(rows, LABELS, min_pair_items=10)["cohen_kappa"]

    sizes = [pair["n"] for pair in kappa["pairs"]]
    kappas = [pair["kappa"] for pair in kappa["pairs"]]
    assert sizes == [90, 25, 25]
    assert kappa["mean"] == pytest.approx(sum(kappas) / 3)
    assert kappa["weighted_mean"] == pytest.approx(
        sum(n * k for n, k in zip(sizes, kappas, strict=True)) / sum(sizes)
    )
    assert kappa["n_pairs_counted"] == 3


@pytest.mark.parametrize("as_sets", [False, True])
def test_no_pair_with_enough_shared_items_gives_no_mean_and_a_warning(as_sets):
    rows = rows_from_table({"u1": ["a", "b", "a", "b", "a"], "u2": ["a", "b", "b", "b", "a"]})
    compute = multi_label if as_sets else single_label

    report = compute(rows, ["a", "b"], min_pair_items=6, bootstrap=20)
    kappa = report["cohen_kappa"]

    assert kappa["mean"] is None and kappa["weighted_mean"] is None
    assert kappa["ci95"] is None and kappa["weighted_ci95"] is None
    assert kappa["n_pairs_counted"] == 0
    (pair,) = kappa["pairs"]
    assert pair["n"] == 5 and pair["kappa"] is not None and pair["counted"] is False
    assert report["warnings"] == [
        f"Only 5 items with two or more ratings (fewer than {MIN_ITEMS_FOR_KAPPA}): the kappas "
        "are imprecise; read them with their 95% intervals.",
        "No pair of annotators shares 6 or more items: the mean kappa is not given (each pair's "
        "kappa is listed).",
    ]
    # Per-category kappas follow the same rule.
    assert all(value["kappa"] is None for value in report["per_category"].values())


def test_counted_pairs_with_undefined_kappa_give_their_own_warning():
    rows = rows_from_table({"u1": ["a"] * 12, "u2": ["a"] * 12})
    report = single_label(rows, ["a", "b"], min_pair_items=10)
    assert report["cohen_kappa"]["mean"] is None
    assert report["warnings"][-1] == (
        "Cohen's kappa is undefined for every pair sharing 10 or more items (one category used "
        "throughout): the mean kappa is not given."
    )


def test_enough_items_and_pairs_give_no_warning():
    report = single_label(correlated_rows(MIN_ITEMS_FOR_KAPPA, seed=1, multi=False), LABELS)
    assert report["n_items"] == MIN_ITEMS_FOR_KAPPA
    assert report["warnings"] == []


def test_the_minimum_overlap_is_at_least_one():
    with pytest.raises(ValueError, match="min_pair_items"):
        single_label(issue_rows(), ["api", "config"], min_pair_items=0)


# --------------------------------------------------------------------------------------------
# Bootstrap
# --------------------------------------------------------------------------------------------


def correlated_rows(n_items: int, seed: int, multi: bool) -> Rows:
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 4, size=n_items)
    table: dict[str, list[str | None]] = {}
    for user, accuracy in (("u1", 0.9), ("u2", 0.75), ("u3", 0.6)):
        guesses = np.where(rng.random(n_items) < accuracy, truth, rng.integers(0, 4, n_items))
        table[user] = [LABELS[guess] for guess in guesses]
    if not multi:
        return rows_from_table(table)
    return rows_from_set_table(
        {
            user: [frozenset({label, LABELS[(LABELS.index(label) + 1) % 4]}) for label in labels]
            for user, labels in table.items()
        }
    )


@pytest.mark.parametrize(
    ("as_sets", "weights"), [(False, None), (False, "quadratic"), (True, None)]
)
def test_bootstrap_intervals_are_seeded_and_contain_the_point_estimate(as_sets, weights):
    rows = correlated_rows(300, seed=11, multi=as_sets)
    options = {"ordinal": weights is not None, "weights": weights}
    compute = multi_label if as_sets else single_label

    report = compute(rows, LABELS, bootstrap=400, seed=5, **options)
    again = compute(rows, LABELS, bootstrap=400, seed=5, **options)
    other_seed = compute(rows, LABELS, bootstrap=400, seed=6, **options)
    without = compute(rows, LABELS, **options)

    assert report == again
    assert report["cohen_kappa"]["ci95"] != other_seed["cohen_kappa"]["ci95"]
    # The interval does not move the point estimates.
    assert report["cohen_kappa"]["mean"] == without["cohen_kappa"]["mean"]
    assert without["cohen_kappa"]["ci95"] is None
    plain_pairs = without["cohen_kappa"]["pairs"]
    for pair, plain in zip(report["cohen_kappa"]["pairs"], plain_pairs, strict=True):
        assert pair["kappa"] == plain["kappa"]
        assert plain["ci95"] is None
        low, high = pair["ci95"]
        assert low < pair["kappa"] < high
        assert high - low < 0.3
    low, high = report["cohen_kappa"]["ci95"]
    assert low < report["cohen_kappa"]["mean"] < high


def test_bootstrap_point_estimate_is_scikit_learns_kappa():
    rows = correlated_rows(200, seed=2, multi=False)
    report = single_label(rows, LABELS, bootstrap=100, ordinal=True, weights="linear")
    item_ids, annotators, label_sets = rows
    by_user: dict[str, dict[int, str]] = {}
    for item_id, annotator, labels in zip(item_ids, annotators, label_sets, strict=True):
        by_user.setdefault(annotator, {})[item_id] = next(iter(labels))

    for pair in report["cohen_kappa"]["pairs"]:
        common = sorted(by_user[pair["a"]].keys() & by_user[pair["b"]].keys())
        expected = cohen_kappa_score(
            [by_user[pair["a"]][item] for item in common],
            [by_user[pair["b"]][item] for item in common],
            labels=LABELS,
            weights="linear",
        )
        assert pair["kappa"] == expected


def test_bootstrap_matches_a_naive_resampling_loop():
    # Same resamples as the vectorised code: item indices drawn row by row from one Generator.
    rows = correlated_rows(60, seed=4, multi=False)
    n_resamples = 50
    report = single_label(rows, LABELS, bootstrap=n_resamples, seed=9)

    labels = {(item, user): next(iter(s)) for item, user, s in zip(*rows, strict=True)}
    items = sorted(set(rows[0]))
    draws = np.random.default_rng(9).integers(0, len(items), size=(n_resamples, len(items)))
    kappas = []
    for draw in draws:
        chosen = [items[index] for index in draw]
        first = [labels[item, "u1"] for item in chosen]
        second = [labels[item, "u2"] for item in chosen]
        kappas.append(cohen_kappa(first, second, labels=LABELS))
    expected = np.percentile([kappa for kappa in kappas if kappa is not None], [2.5, 97.5])

    pair = report["cohen_kappa"]["pairs"][0]
    assert (pair["a"], pair["b"]) == ("u1", "u2")
    assert pair["ci95"] == pytest.approx(list(expected))


def test_bootstrap_of_both_means_matches_a_naive_resampling_loop():
    # Three pairs of unequal overlap (u3 rated the first 30 of 60 items); the weighted mean of
    # a resample weights each pair by its shared items in that resample.
    rows = correlated_rows(60, seed=8, multi=False)
    keep = [
        i for i, (item, user) in enumerate(zip(*rows[:2], strict=True)) if user != "u3" or item < 30
    ]
    rows = tuple([column[i] for i in keep] for column in rows)
    n_resamples = 60
    report = single_label(rows, LABELS, bootstrap=n_resamples, seed=4, min_pair_items=10)

    labels = {(item, user): next(iter(s)) for item, user, s in zip(*rows, strict=True)}
    items = sorted(set(rows[0]))
    draws = np.random.default_rng(4).integers(0, len(items), size=(n_resamples, len(items)))
    means, weighted = [], []
    for draw in draws:
        chosen = [items[index] for index in draw]
        kappas, sizes = [], []
        for a, b in (("u1", "u2"), ("u1", "u3"), ("u2", "u3")):
            shared = [item for item in chosen if (item, a) in labels and (item, b) in labels]
            kappa = cohen_kappa(
                [labels[item, a] for item in shared],
                [labels[item, b] for item in shared],
                labels=LABELS,
            )
            if kappa is not None:
                kappas.append(kappa)
                sizes.append(len(shared))
        means.append(np.mean(kappas))
        weighted.append(np.average(kappas, weights=sizes))

    kappa = report["cohen_kappa"]
    assert kappa["ci95"] == pytest.approx(list(np.percentile(means, [2.5, 97.5])))
    assert kappa["weighted_ci95"] == pytest.approx(list(np.percentile(weighted, [2.5, 97.5])))


# --------------------------------------------------------------------------------------------
# Input handling and wording
# --------------------------------------------------------------------------------------------


def test_the_latest_rating_of_an_annotator_wins():
    rows = (
        [1, 1, 2, 2, 1],
        ["u1", "u2", "u1", "u2", "u1"],
        [{"b"}, {"a"}, {"b"}, {"b"}, {"a"}],
    )
    report = single_label(rows, ["a", "b"])
    assert report["percent_agreement"] == 1.0
    assert report["cohen_kappa"]["pairs"][0]["n"] == 2


def test_unlisted_keys_and_none_applies_become_extra_values():
    rows = ([1, 1, 2, 2], ["u1", "u2", "u1", "u2"], [{"zeta"}, set(), "a", ["a"]])
    report = single_label(rows, ["b", "a"])
    assert report["cohen_kappa"]["pairs"][0]["confusion"]["labels"] == ["b", "a", "zeta", ""]
    assert list(report["per_category"]) == ["b", "a", "zeta", ""]


def test_empty_string_is_ignored_in_multi_label_sets():
    rows = ([1, 1], ["u1", "u2"], [{"", "a"}, {"a"}])
    report = multi_label(rows, ["a"])
    assert list(report["per_category"]) == ["a"]
    assert report["percent_agreement"] == 1.0


def test_pairs_are_sorted_by_annotator_names():
    rows = rows_from_table({"carol": ["a", "b"], "alice": ["a", "b"], "bob": ["b", "b"]})
    pairs = single_label(rows, ["a", "b"])["cohen_kappa"]["pairs"]
    assert [(pair["a"], pair["b"]) for pair in pairs] == [
        ("alice", "bob"),
        ("alice", "carol"),
        ("bob", "carol"),
    ]


@pytest.mark.parametrize(
    ("arguments", "options"),
    [
        (([1, 2], ["u1"], [{"a"}, {"a"}]), {}),
        (([1], ["u1"], [{"a", "b"}]), {}),
        (([1], ["u1"], [{"a"}]), {"weights": "cubic"}),
        (([1], ["u1"], [{"a"}]), {"bootstrap": -1}),
        (([1], ["u1"], [{"a"}]), {"categories": ["a", "a"]}),
    ],
)
def test_invalid_input_is_rejected(arguments, options):
    options = {"categories": ["a", "b"], "multi_label": False, **options}
    with pytest.raises(ValueError):
        dimension_agreement(*arguments, **options)


@pytest.mark.parametrize(
    ("kappa", "wording"),
    [
        (None, None),
        (float("nan"), None),
        (-0.3, "poor"),
        (-0.01, "poor"),
        (0.0, "slight"),
        (0.2, "slight"),
        (0.204, "slight"),
        (0.21, "fair"),
        (0.4, "fair"),
        (0.41, "moderate"),
        (0.6, "moderate"),
        (0.61, "substantial"),
        (0.8, "substantial"),
        (0.81, "almost perfect"),
        (1.0, "almost perfect"),
    ],
)
def test_landis_koch_wording(kappa, wording):
    assert interpret_kappa(kappa) == wording
