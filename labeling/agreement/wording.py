"""How an agreement report reads to a person: the defaults and thresholds its warnings rest on,
the Landis & Koch (1977) wording of a kappa, the warnings, and the headline kappa a dimension is
summarised by. Plain Python, without numpy: the pages, forms and serializers that need only
these import this module alone (see the package's docstring)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

# A pair of annotators counts toward the mean kappa when it shares at least this many items.
# With two balanced categories and a true kappa of 0.5, the kappa of n shared items has a
# standard error of about 0.87 / sqrt(n): 0.87 on one item (its kappa is 0, 1 or undefined),
# 0.28 on ten. Below ten a pair's kappa is closer to noise than to a measurement, and an
# unweighted mean would give it the weight of a pair sharing hundreds; the pair is still listed.
DEFAULT_MIN_PAIR_ITEMS = 10

# Below this many items (with two or more ratings) a dimension's report carries a warning: in
# the same setting the standard error is 0.16 on 30 items, so the 95% interval spans about
# +-0.3, as wide as a Landis & Koch band and a half; a calibration round is not judged on fewer.
MIN_ITEMS_FOR_KAPPA = 30

# Upper bounds (inclusive) of the Landis & Koch (1977) bands; below 0 is "poor".
_LANDIS_KOCH_BANDS = (
    (0.20, "slight"),
    (0.40, "fair"),
    (0.60, "moderate"),
    (0.80, "substantial"),
    (1.00, "almost perfect"),
)

# What each headline statistic is called where a person reads it.
HEADLINE_LABELS = {
    "pair": "Cohen's κ of the one pair of annotators",
    "mean": "mean Cohen's κ over the pairs of annotators",
    "weighted_mean": "mean Cohen's κ over the pairs, weighted by the items each pair shares",
    "pairs_below_minimum": "no pair shares enough items: each pair's κ, below the minimum",
}
# The same, as a table's column says it.
HEADLINE_SHORT_LABELS = {
    "pair": "one pair",
    "mean": "mean of pairs",
    "weighted_mean": "mean weighted by shared items",
    "pairs_below_minimum": "no pair counted",
}


def interpret_kappa(kappa: float | None) -> str | None:
    """Landis & Koch (1977) wording for a kappa-like coefficient.

    <0 poor, 0-0.20 slight, 0.21-0.40 fair, 0.41-0.60 moderate, 0.61-0.80 substantial,
    0.81-1 almost perfect. The published bands are given to two decimals, so the value is
    rounded to two decimals first: a kappa displayed as 0.20 always reads "slight".
    """
    if kappa is None or not math.isfinite(kappa):
        return None
    shown = round(kappa, 2)
    if shown < 0:
        return "poor"
    for upper_bound, wording in _LANDIS_KOCH_BANDS:
        if shown <= upper_bound:
            return wording
    return "almost perfect"


@dataclass(frozen=True)
class Warning:
    kind: str  # a stable code: pages group warnings by it
    text: str


def agreement_warnings(
    *, n_items: int, pair_sizes: Sequence[int], n_pairs_counted: int, min_pair_items: int
) -> list[str]:
    """Why a dimension's kappas deserve caution, in sentences for a page, a table note and the
    command line: too few items, pairs left out of the mean, no pair counted."""
    found = kappa_warnings(
        n_items=n_items,
        pair_sizes=pair_sizes,
        n_pairs_counted=n_pairs_counted,
        min_pair_items=min_pair_items,
    )
    return [warning.text for warning in found]


def kappa_warnings(
    *, n_items: int, pair_sizes: Sequence[int], n_pairs_counted: int, min_pair_items: int
) -> list[Warning]:
    """`agreement_warnings` with the kind of each, by which pages group them."""
    if n_items == 0:
        return [
            Warning(
                "no_items", "No item has two or more ratings yet: there is no agreement to measure."
            )
        ]
    found = []
    if n_items < MIN_ITEMS_FOR_KAPPA:
        found.append(
            Warning(
                "few_items",
                f"Only {n_items} item{'s' if n_items != 1 else ''} with two or more ratings "
                f"(fewer than {MIN_ITEMS_FOR_KAPPA}): the kappas are imprecise; read them with "
                "their 95% intervals.",
            )
        )
    long_enough = sum(size >= min_pair_items for size in pair_sizes)
    short = sum(0 < size < min_pair_items for size in pair_sizes)
    if pair_sizes and long_enough == 0:
        found.append(
            Warning(
                "no_pair_counted",
                f"No pair of annotators shares {min_pair_items} or more items: the mean kappa "
                "is not given (each pair's kappa is listed).",
            )
        )
    elif short:
        found.append(
            Warning(
                "pairs_short",
                f"{short} of {len(pair_sizes)} pairs share fewer than {min_pair_items} items "
                "and are left out of the mean kappa.",
            )
        )
    if long_enough and n_pairs_counted == 0:
        found.append(
            Warning(
                "kappa_undefined",
                f"Cohen's kappa is undefined for every pair sharing {min_pair_items} or more "
                "items (one category used throughout): the mean kappa is not given.",
            )
        )
    return found


def kappa_undetermined_reason(dimension: dict) -> str | None:
    """Why a dimension's mean Cohen's kappa (a report of :func:`dimension_agreement`) cannot be
    held against a target such as a calibration round's, or None when it can: fewer than
    MIN_ITEMS_FOR_KAPPA items, or no mean kappa (no pair counted, kappa undefined)."""
    n_items = dimension["n_items"]
    if n_items == 0:
        return "no item with two or more ratings"
    if n_items < MIN_ITEMS_FOR_KAPPA:
        return f"{n_items} items with two or more ratings, fewer than {MIN_ITEMS_FOR_KAPPA}"
    kappa = dimension["cohen_kappa"]
    if kappa["mean"] is None:
        if kappa["n_pairs"] and not any(
            pair["n"] >= kappa["min_pair_items"] for pair in kappa["pairs"]
        ):
            return f"no pair of annotators shares {kappa['min_pair_items']} or more items"
        return "kappa undefined (one category used throughout)"
    return None


def headline_of(cohen: dict, *, bootstrapped: bool) -> dict:
    """The one κ a dimension is summarised by, and which it is (see HEADLINE_LABELS).

    Rule: one counted pair -> its κ (interval: the bootstrap's when run, else Wald); several
    counted pairs sharing the same number of items -> the plain mean; several sharing different
    numbers -> the mean weighted by shared items, since a plain mean would give a pair sharing
    12 items the weight of one sharing 400; no pair reaching the minimum overlap -> no value,
    each pair's κ listed and marked as below the minimum.
    """
    counted = [pair for pair in cohen["pairs"] if pair["counted"]]
    if len(counted) == 1:
        pair = counted[0]
        statistic, value = "pair", pair["kappa"]
        if bootstrapped and pair["ci95"]:
            interval, method = pair["ci95"], "bootstrap"
        else:
            interval, method = pair["ci95_wald"], "wald" if pair["ci95_wald"] else None
    elif counted:
        equal = len({pair["n"] for pair in counted}) == 1
        statistic = "mean" if equal else "weighted_mean"
        value = cohen[statistic]
        interval = cohen["ci95" if equal else "weighted_ci95"]
        method = "bootstrap" if interval else None
    else:
        below = [pair for pair in cohen["pairs"] if pair["kappa"] is not None]
        return {
            "statistic": "pairs_below_minimum" if below else None,
            "label": HEADLINE_LABELS["pairs_below_minimum"] if below else None,
            "value": None,
            "ci95": None,
            "interval_method": None,
            "interpretation": None,
            "pairs": [
                {"a": pair["a"], "b": pair["b"], "n": pair["n"], "kappa": pair["kappa"]}
                for pair in below
            ],
        }
    return {
        "statistic": statistic,
        "label": HEADLINE_LABELS[statistic],
        "value": value,
        "ci95": interval,
        "interval_method": method,
        "interpretation": interpret_kappa(value),
        "pairs": [],
    }
