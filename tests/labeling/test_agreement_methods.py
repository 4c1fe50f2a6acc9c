"""The figures a methods reviewer asks for, each against an independent implementation
(statsmodels, the krippendorff package, NLTK) or a plain transcription of its published formula,
and against published worked examples."""

import itertools

import krippendorff
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.stats.inter_rater import cohens_kappa as statsmodels_cohens_kappa
from statsmodels.stats.inter_rater import fleiss_kappa as statsmodels_fleiss_kappa

from labeling.agreement import (
    category_fleiss_kappas,
    dimension_agreement,
    fleiss_kappa,
    fleiss_kappa_gwet,
    jaccard_distance,
    kappa_from_confusion,
    kappa_standard_error,
    krippendorff_alpha,
    masi_distance,
)
from tests.labeling.test_agreement import (
    FLEISS_TABLE,
    KRIPPENDORFF_2011,
    LABELS,
    label_set_tables,
    multi_label,
    rows_from_set_table,
    rows_from_table,
    single_label,
    single_label_tables,
)

FIVE = ["1", "2", "3", "4", "5"]


def fleiss_rows(table) -> tuple[list, list, list]:
    """An items x categories count table as rating rows (rater names per item)."""
    item_ids, annotators, label_sets = [], [], []
    for item_id, counts in enumerate(table):
        raters = itertools.count()
        for category, count in enumerate(counts):
            for _ in range(count):
                item_ids.append(item_id)
                annotators.append(f"rater{next(raters):02d}")
                label_sets.append({f"c{category + 1}"})
    return item_ids, annotators, label_sets


# --------------------------------------------------------------------------------------------
# Percent agreement
# --------------------------------------------------------------------------------------------


def test_percent_agreement_is_the_mean_share_of_agreeing_pairs_on_fleiss_example():
    # Fleiss (1971) as Wikipedia works it: P-bar = 0.378, while all 14 raters agree on 1 item.
    report = dimension_agreement(
        *fleiss_rows(FLEISS_TABLE), categories=["c1", "c2", "c3", "c4", "c5"], multi_label=False
    )
    assert report["percent_agreement"] == pytest.approx(0.378, abs=5e-4)
    assert report["percent_agreement_all"] == pytest.approx(0.1)


def test_percent_agreement_with_unequal_ratings_averages_each_items_pair_share():
    rows = rows_from_table({"u1": ["a", "a", "b"], "u2": ["a", "b", "b"], "u3": ["a", None, "a"]})
    report = single_label(rows, ["a", "b"])
    # Item 0: 3 of 3 pairs agree; item 1: 0 of 1; item 2: 1 of 3.
    assert report["percent_agreement"] == pytest.approx(np.mean([1, 0, 1 / 3]))
    assert report["percent_agreement_all"] == pytest.approx(1 / 3)


# --------------------------------------------------------------------------------------------
# Cohen's kappa: standard error and Wald interval
# --------------------------------------------------------------------------------------------


@settings(max_examples=80, deadline=None)
@given(
    st.lists(st.lists(st.integers(0, 12), min_size=3, max_size=3), min_size=3, max_size=3),
    st.sampled_from([None, "linear", "quadratic"]),
)
def test_kappa_standard_error_matches_statsmodels(table, weights):
    table = np.array(table)
    kappa = kappa_from_confusion(table, weights)
    if kappa is None or table.sum() < 2:
        assert kappa_standard_error(table, weights) is None
        return
    expected = statsmodels_cohens_kappa(table, wt=weights)
    assert kappa == pytest.approx(expected.kappa)
    standard_error = kappa_standard_error(table, weights)
    if np.isfinite(expected.std_kappa):
        assert standard_error == pytest.approx(expected.std_kappa, rel=1e-9, abs=1e-12)


def test_pairs_carry_the_standard_error_and_a_wald_interval():
    # Wikipedia's grant example (kappa 0.4); statsmodels gives its standard error.
    rows = rows_from_table(
        {"A": ["y"] * 20 + ["y"] * 5 + ["n"] * 10 + ["n"] * 15,
         "B": ["y"] * 20 + ["n"] * 5 + ["y"] * 10 + ["n"] * 15}
    )  # fmt: skip
    (pair,) = single_label(rows, ["y", "n"])["cohen_kappa"]["pairs"]
    expected = statsmodels_cohens_kappa(np.array([[20, 5], [10, 15]]))
    assert pair["kappa"] == pytest.approx(0.4)
    assert pair["ase"] == pytest.approx(expected.std_kappa)
    low, high = pair["ci95_wald"]
    assert low == pytest.approx(0.4 - 1.959964 * expected.std_kappa, abs=1e-6)
    assert high == pytest.approx(0.4 + 1.959964 * expected.std_kappa, abs=1e-6)


def test_multi_label_pairs_have_no_standard_error():
    rows = rows_from_set_table(
        {"u1": [frozenset("a"), frozenset("ab")], "u2": [frozenset("a")] * 2}
    )
    (pair,) = multi_label(rows, ["a", "b"])["cohen_kappa"]["pairs"]
    assert pair["ase"] is None and pair["ci95_wald"] is None


# --------------------------------------------------------------------------------------------
# Fleiss: classic, Gwet's generalisation, category-specific kappa
# --------------------------------------------------------------------------------------------


def test_unequal_numbers_of_ratings_leave_classic_fleiss_undefined_with_a_warning():
    rows = rows_from_table(
        {"u1": ["a", "a", "b", "b"], "u2": ["a", "b", "b", "a"], "u3": ["a", None, "b", "b"],
         "u4": [None, None, None, "a"]}
    )  # fmt: skip
    report = single_label(rows, ["a", "b"])
    assert report["fleiss_kappa"] is None
    assert "unequal_ratings" in report["warning_kinds"]
    counts = [[3, 0], [1, 1], [0, 3], [2, 2]]
    assert report["fleiss_kappa_gwet"] == pytest.approx(fleiss_kappa_gwet(counts))


def test_gwets_chance_term_counts_single_rated_items_as_irrcac_does():
    # Two items rated twice, one item rated once by u1 only.
    rows = rows_from_table({"u1": ["a", "b", "b"], "u2": ["a", "a", None]})
    report = single_label(rows, ["a", "b"])
    observed = np.mean([1.0, 0.0])
    share_a = np.mean([2 / 2, 1 / 2, 0 / 1])
    chance = share_a**2 + (1 - share_a) ** 2
    assert report["fleiss_kappa_gwet"] == pytest.approx((observed - chance) / (1 - chance))
    # Classic Fleiss (and everything else) leaves the single-rated item out.
    assert report["fleiss_kappa"] == pytest.approx(fleiss_kappa([[2, 0], [1, 1]]))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.lists(st.integers(0, 4), min_size=4, max_size=4), min_size=2, max_size=12))
def test_category_fleiss_kappa_is_fleiss_of_the_category_against_the_rest(raw):
    table = np.array(raw)
    table = table[table.sum(axis=1) == table.sum(axis=1).max()]  # equal ratings per item
    if table.sum(axis=1)[0] < 2:
        return
    found = category_fleiss_kappas(table)
    for category in range(table.shape[1]):
        binary = np.column_stack([table.sum(axis=1) - table[:, category], table[:, category]])
        share = binary[:, 1].sum() / binary.sum()
        if share in (0.0, 1.0):
            assert np.isnan(found[category])
        else:
            assert found[category] == pytest.approx(statsmodels_fleiss_kappa(binary))


def test_category_fleiss_kappa_through_the_report_matches_fleiss_1971_formula():
    categories = ["c1", "c2", "c3", "c4", "c5"]
    report = dimension_agreement(
        *fleiss_rows(FLEISS_TABLE), categories=categories, multi_label=False
    )
    table = np.array(FLEISS_TABLE, dtype=float)
    n_items, raters = table.shape[0], table.sum(axis=1)[0]
    for code, key in enumerate(categories):
        share = table[:, code].sum() / (n_items * raters)
        expected = 1 - (table[:, code] * (raters - table[:, code])).sum() / (
            n_items * raters * (raters - 1) * share * (1 - share)
        )
        assert report["per_category"][key]["fleiss_kappa"] == pytest.approx(expected)


def test_specific_agreement_is_twice_the_shared_uses_over_both_uses():
    rows = rows_from_table({"u1": ["a", "a", "b", "b", "c"], "u2": ["a", "b", "b", "c", "c"]})
    per_category = single_label(rows, ["a", "b", "c"])["per_category"]
    assert per_category["a"]["specific_agreement"] == pytest.approx(2 * 1 / (2 + 1))
    assert per_category["b"]["specific_agreement"] == pytest.approx(2 * 1 / (2 + 2))
    assert per_category["c"]["specific_agreement"] == pytest.approx(2 * 1 / (1 + 2))


# --------------------------------------------------------------------------------------------
# Krippendorff's alpha by level of measurement
# --------------------------------------------------------------------------------------------


def test_the_2011_worked_example_at_every_level():
    # Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability", pp. 6-10.
    report = single_label(rows_from_table(KRIPPENDORFF_2011), FIVE, ordinal=True)
    assert report["krippendorff_alpha"] == pytest.approx(0.743, abs=5e-4)
    assert report["krippendorff_alpha_ordinal"] == pytest.approx(0.815, abs=5e-4)
    assert report["krippendorff_alpha_interval"] == pytest.approx(0.849, abs=5e-4)
    assert report["krippendorff_alpha_ratio"] == pytest.approx(0.797, abs=5e-4)
    assert report["units"]["krippendorff_alpha_ordinal"]


@settings(max_examples=80, deadline=None)
@given(single_label_tables(), st.sampled_from(["ordinal", "interval", "ratio"]))
def test_metric_alphas_match_the_krippendorff_package(table, level):
    values = [0.5, 1.0, 2.5, 7.0][: len(LABELS)]
    rows = rows_from_table(table)
    report = single_label(rows, LABELS, ordinal=True, scale_values=values)
    number = dict(zip(LABELS, values, strict=True))
    data = [
        [np.nan if label is None else number[label] for label in labels]
        for labels in table.values()
    ]
    pairable = [[v for v in column if not np.isnan(v)] for column in zip(*data, strict=True)]
    used = {v for column in pairable if len(column) >= 2 for v in column}
    if len(used) < 2:
        assert report[f"krippendorff_alpha_{level}"] is None
        return
    expected = krippendorff.alpha(data, level_of_measurement=level, value_domain=sorted(values))
    assert report[f"krippendorff_alpha_{level}"] == pytest.approx(expected)


def test_none_applies_is_left_out_of_the_metric_alphas():
    with_none = rows_from_table({"u1": ["1", "2", "3", ""], "u2": ["1", "2", "2", "3"]})
    without = rows_from_table({"u1": ["1", "2", "3", None], "u2": ["1", "2", "2", None]})
    categories = ["1", "2", "3"]
    first = single_label(with_none, categories, ordinal=True)
    second = single_label(without, categories, ordinal=True)
    for level in ("ordinal", "interval", "ratio"):
        assert first[f"krippendorff_alpha_{level}"] == pytest.approx(
            second[f"krippendorff_alpha_{level}"]
        )


def test_nominal_dimensions_have_no_metric_alphas_or_weights():
    report = single_label(rows_from_table(KRIPPENDORFF_2011), FIVE)
    assert "krippendorff_alpha_ordinal" not in report


def test_a_single_value_leaves_every_alpha_undefined():
    report = single_label(rows_from_table({"u1": ["2", "2"], "u2": ["2", "2"]}), FIVE, ordinal=True)
    for level in ("ordinal", "interval", "ratio"):
        assert report[f"krippendorff_alpha_{level}"] is None
    assert krippendorff_alpha([[2, 0], [2, 0]], level="interval") is None


# --------------------------------------------------------------------------------------------
# Label sets
# --------------------------------------------------------------------------------------------


@settings(max_examples=80, deadline=None)
@given(label_set_tables(allow_empty=True))
def test_mean_set_similarities_are_pair_means_per_item_then_item_means(table):
    rows = rows_from_set_table(table)
    report = multi_label(rows, LABELS)
    by_item: dict[int, list[frozenset]] = {}
    for item_id, _, labels in zip(*rows, strict=True):
        by_item.setdefault(item_id, []).append(frozenset(labels))
    rated_twice = [sets for sets in by_item.values() if len(sets) >= 2]
    if not rated_twice:
        assert report["mean_jaccard"] is None
        return

    def mean_over_items(similarity) -> float:
        return np.mean(
            [
                np.mean([similarity(a, b) for a, b in itertools.combinations(sets, 2)])
                for sets in rated_twice
            ]
        )

    assert report["mean_jaccard"] == pytest.approx(
        mean_over_items(lambda a, b: 1 - jaccard_distance(a, b))
    )
    assert report["mean_masi_similarity"] == pytest.approx(
        mean_over_items(lambda a, b: 1 - masi_distance(a, b))
    )
    assert report["exact_set_agreement"] == pytest.approx(
        mean_over_items(lambda a, b: float(a == b))
    )
    assert report["exact_set_agreement"] == report["percent_agreement"]


def test_multi_label_figures_say_their_unit():
    rows = rows_from_set_table({"u1": [frozenset("a")], "u2": [frozenset("ab")]})
    units = multi_label(rows, ["a", "b"])["units"]
    assert "binary" in units["cohen_kappa"] and "MASI" in units["krippendorff_alpha"]
    assert "Jaccard" in units["krippendorff_alpha_jaccard"]


# --------------------------------------------------------------------------------------------
# Bootstrap intervals of Fleiss' kappa and Krippendorff's alpha
# --------------------------------------------------------------------------------------------


def three_annotator_rows(n_items: int, seed: int, multi: bool):
    rng = np.random.default_rng(seed)
    item_ids, annotators, label_sets = [], [], []
    for item in range(n_items):
        truth = rng.integers(0, len(LABELS))
        for user in ("u1", "u2", "u3"):
            label = truth if rng.random() < 0.7 else rng.integers(0, len(LABELS))
            chosen = {LABELS[label]}
            if multi and rng.random() < 0.3:
                chosen.add(LABELS[rng.integers(0, len(LABELS))])
            item_ids.append(item)
            annotators.append(user)
            label_sets.append(chosen)
    return item_ids, annotators, label_sets


@pytest.mark.parametrize("multi", [False, True])
def test_fleiss_and_alpha_intervals_match_a_naive_resampling_loop(multi):
    rows = three_annotator_rows(40, seed=3, multi=multi)
    n_resamples = 40
    compute = multi_label if multi else single_label
    report = compute(rows, LABELS, bootstrap=n_resamples, seed=5)

    items = sorted(set(rows[0]))
    draws = np.random.default_rng(5).integers(0, len(items), size=(n_resamples, len(items)))
    fleiss, alpha = [], []
    for draw in draws:
        resampled = ([], [], [])
        for position, index in enumerate(draw):
            for item, user, labels in zip(*rows, strict=True):
                if item == items[index]:
                    resampled[0].append(position)
                    resampled[1].append(user)
                    resampled[2].append(labels)
        again = compute(resampled, LABELS)
        fleiss.append(again["fleiss_kappa"])
        alpha.append(again["krippendorff_alpha"])

    def interval(values):
        return list(np.percentile([v for v in values if v is not None], [2.5, 97.5]))

    assert report["fleiss_kappa_ci95"] == pytest.approx(interval(fleiss))
    assert report["krippendorff_alpha_ci95"] == pytest.approx(interval(alpha))
    low, high = report["krippendorff_alpha_ci95"]
    assert low <= report["krippendorff_alpha"] <= high


# --------------------------------------------------------------------------------------------
# The headline
# --------------------------------------------------------------------------------------------


def test_one_pair_is_its_own_headline_with_a_wald_interval():
    rows = rows_from_table({"u1": list("aabbaabbab" * 2), "u2": list("abbbaabbaa" * 2)})
    report = single_label(rows, ["a", "b"], min_pair_items=10)
    headline = report["headline"]
    (pair,) = report["cohen_kappa"]["pairs"]
    assert headline["statistic"] == "pair"
    assert headline["value"] == pair["kappa"]
    assert headline["ci95"] == pair["ci95_wald"] and headline["interval_method"] == "wald"
    with_bootstrap = single_label(rows, ["a", "b"], min_pair_items=10, bootstrap=100)["headline"]
    assert with_bootstrap["interval_method"] == "bootstrap"


def test_equal_overlaps_headline_the_plain_mean_and_unequal_ones_the_weighted_mean():
    rows = three_annotator_rows(30, seed=1, multi=False)
    equal = single_label(rows, LABELS, min_pair_items=10, bootstrap=50)
    assert equal["headline"]["statistic"] == "mean"
    assert equal["headline"]["value"] == equal["cohen_kappa"]["mean"]
    assert equal["headline"]["ci95"] == equal["cohen_kappa"]["ci95"]

    keep = [
        i for i, (item, user) in enumerate(zip(*rows[:2], strict=True)) if user != "u3" or item < 12
    ]
    uneven = tuple([column[i] for i in keep] for column in rows)
    report = single_label(uneven, LABELS, min_pair_items=10, bootstrap=50)
    headline = report["headline"]
    assert headline["statistic"] == "weighted_mean"
    assert headline["value"] == report["cohen_kappa"]["weighted_mean"]
    assert headline["ci95"] == report["cohen_kappa"]["weighted_ci95"]
    assert headline["interpretation"] is not None


def test_a_pilot_with_no_pair_over_the_minimum_lists_each_pairs_kappa():
    rows = rows_from_table({"u1": list("aabbab"), "u2": list("abbbab"), "u3": list("aabbbb")})
    report = single_label(rows, ["a", "b"], min_pair_items=10)
    headline = report["headline"]
    assert headline["statistic"] == "pairs_below_minimum" and headline["value"] is None
    assert [(p["a"], p["b"], p["n"]) for p in headline["pairs"]] == [
        ("u1", "u2", 6), ("u1", "u3", 6), ("u2", "u3", 6)
    ]  # fmt: skip
    assert all(p["kappa"] is not None for p in headline["pairs"])
