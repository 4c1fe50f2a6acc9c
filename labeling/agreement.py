"""Inter-annotator agreement for one codebook dimension.

Pure numerical code (numpy and scikit-learn, no Django): rating rows go in, plain Python
numbers come out, so views, exports and notebooks share one implementation.

Conventions used throughout:

* A *rating* is one (item, annotator) pair with its label set. If an annotator rated the same
  item more than once, the last row wins.
* Only items with at least two ratings say anything about agreement; every statistic in
  :func:`dimension_agreement` is computed on exactly those items.
* A coefficient that is undefined (0/0 because a single value is used throughout, fewer than
  two annotators, no overlapping items) is ``None``: never an exception, never a silent 1.0.
* Every pair of annotators is listed, but only a pair sharing at least ``min_pair_items`` items
  counts toward the mean kappa: a pair that shares one item has a kappa of 0 or 1 or none,
  and an unweighted mean gives it the weight of a pair that shares hundreds.
"""

from __future__ import annotations

import itertools
import math
import warnings
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

WEIGHT_SCHEMES = (None, "linear", "quadratic")

# Single-label value meaning "no category applies".
NONE_APPLIES = ""

CONFIDENCE_LEVEL = 0.95

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

# Entries of the resample-by-item multiplicity matrix held at once; bounds bootstrap memory
# (about 100 MB peak) whatever the study size.
_BOOTSTRAP_CHUNK_CELLS = 2**22

# Distinct label sets compared at once when computing MASI expected disagreement.
_MASI_BLOCK_ROWS = 1024


# --------------------------------------------------------------------------------------------
# Scalar building blocks
# --------------------------------------------------------------------------------------------


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


def agreement_warnings(
    *, n_items: int, pair_sizes: Sequence[int], n_pairs_counted: int, min_pair_items: int
) -> list[str]:
    """Why a dimension's kappas deserve caution, in sentences for a page, a table note and the
    command line: too few items, pairs left out of the mean, no pair counted."""
    if n_items == 0:
        return ["No item has two or more ratings yet: there is no agreement to measure."]
    found = []
    if n_items < MIN_ITEMS_FOR_KAPPA:
        found.append(
            f"Only {n_items} item{'s' if n_items != 1 else ''} with two or more ratings "
            f"(fewer than {MIN_ITEMS_FOR_KAPPA}): the kappas are imprecise; read them with "
            "their 95% intervals."
        )
    long_enough = sum(size >= min_pair_items for size in pair_sizes)
    short = sum(0 < size < min_pair_items for size in pair_sizes)
    if pair_sizes and long_enough == 0:
        found.append(
            f"No pair of annotators shares {min_pair_items} or more items: the mean kappa is "
            "not given (each pair's kappa is listed)."
        )
    elif short:
        found.append(
            f"{short} of {len(pair_sizes)} pairs share fewer than {min_pair_items} items and "
            "are left out of the mean kappa."
        )
    if long_enough and n_pairs_counted == 0:
        found.append(
            f"Cohen's kappa is undefined for every pair sharing {min_pair_items} or more items "
            "(one category used throughout): the mean kappa is not given."
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


def cohen_kappa(
    labels_a: ArrayLike,
    labels_b: ArrayLike,
    *,
    labels: ArrayLike | None = None,
    weights: str | None = None,
    sample_weight: ArrayLike | None = None,
) -> float | None:
    """Cohen's kappa of two aligned label sequences via scikit-learn; None when undefined.

    ``labels`` fixes the category order, which weighted kappa ("linear"/"quadratic") uses as
    the ordinal scale; categories listed but unused still count as steps on that scale.
    ``sample_weight`` counts each position that many times.
    """
    # Imported on first use: scikit-learn takes about 2 s to import, and every process that loads
    # the URLconf (runserver's start, each management command's checks) would pay it.
    from sklearn.exceptions import UndefinedMetricWarning
    from sklearn.metrics import cohen_kappa_score

    _check_weights(weights)
    first, second = np.asarray(labels_a), np.asarray(labels_b)
    if first.shape != second.shape:
        raise ValueError("labels_a and labels_b must have the same length")
    if first.size == 0:
        return None
    possible = np.unique(np.concatenate([first, second])) if labels is None else labels
    if np.size(possible) < 2:
        return None  # one possible value: 0/0, and scikit-learn warns about the 1x1 matrix
    # scikit-learn reports 0/0 as NaN plus a warning (a RuntimeWarning in older releases).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UndefinedMetricWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        value = cohen_kappa_score(
            first, second, labels=labels, weights=weights, sample_weight=sample_weight
        )
    return _finite_or_none(value)


def kappa_from_confusion(confusion: ArrayLike, weights: str | None = None) -> float | None:
    """Cohen's kappa of a square confusion matrix (rows: annotator A, columns: annotator B).

    Same arithmetic as :func:`sklearn.metrics.cohen_kappa_score` (including its unnormalised
    linear/quadratic weights); it is the kernel the vectorised bootstrap runs on.
    """
    _check_weights(weights)
    table = np.asarray(confusion, dtype=np.float64)
    if table.ndim != 2 or table.shape[0] != table.shape[1]:
        raise ValueError("confusion must be a square matrix")
    disagreement = _disagreement_weights(table.shape[0], weights)
    kappa = _kappa_from_margins(
        table.sum(),
        (disagreement * table).sum(),
        table.sum(axis=1),
        table.sum(axis=0),
        disagreement,
    )
    return _finite_or_none(kappa)


def fleiss_kappa(counts: ArrayLike) -> float | None:
    """Fleiss' kappa from an items x categories table of rating counts.

    Items may have different numbers of ratings. We use the generalisation of Fleiss (1971)
    given by Gwet (2014, *Handbook of Inter-Rater Reliability*; R package irrCAC,
    ``fleiss.kappa.raw``): each item's observed agreement uses its own number of ratings
    r_i, P_i = sum_k n_ik (n_ik - 1) / (r_i (r_i - 1)), P_o is the mean of P_i, and the
    chance term uses category shares averaged over items, pi_k = mean_i(n_ik / r_i),
    P_e = sum_k pi_k^2. With equal r_i this is exactly Fleiss (1971). Unlike irrCAC, items with
    fewer than two ratings are dropped from the shares too, so the coefficient describes the
    same items as the other statistics; no rating is discarded to force equal r_i.
    """
    table = np.asarray(counts, dtype=np.float64)
    if table.ndim != 2:
        raise ValueError("counts must be an items x categories matrix")
    table = table[table.sum(axis=1) >= 2]
    return _finite_or_none(_fleiss_kernel(table[:, :, np.newaxis])[0])


def krippendorff_alpha_nominal(counts: ArrayLike) -> float | None:
    """Krippendorff's nominal alpha from an items x values table of counts.

    Follows Krippendorff (2011), "Computing Krippendorff's Alpha-Reliability": missing
    ratings simply do not appear in an item's counts, items with fewer than two values are
    not pairable and are dropped, the coincidence matrix weights each item by 1/(m_u - 1),
    and alpha = 1 - D_o / D_e.
    """
    table = np.asarray(counts, dtype=np.float64)
    if table.ndim != 2:
        raise ValueError("counts must be an items x values matrix")
    values_per_item = table.sum(axis=1)
    pairable = values_per_item >= 2
    table, values_per_item = table[pairable], values_per_item[pairable]
    n_values = values_per_item.sum()
    if n_values == 0:
        return None
    # Diagonal of the coincidence matrix: matching pairs within each item.
    matching = ((table * (table - 1)).sum(axis=1) / (values_per_item - 1)).sum()
    value_totals = table.sum(axis=0)
    # n(n - 1) * D_e; zero exactly when a single value is used throughout.
    chance_scale = n_values * n_values - (value_totals**2).sum()
    if chance_scale <= 0:
        return None
    return _finite_or_none(1.0 - (n_values - 1) * (n_values - matching) / chance_scale)


def masi_distance(labels_a: Collection[str], labels_b: Collection[str]) -> float:
    """MASI distance (Passonneau 2006) between two label sets: 1 - Jaccard * monotonicity.

    Monotonicity is 1 for identical sets, 2/3 when one contains the other, 1/3 when they
    overlap otherwise and 0 when disjoint. Two empty sets are identical (distance 0); an empty
    and a non-empty set are at distance 1.
    """
    first, second = set(labels_a), set(labels_b)
    distance = _masi_from_sizes(
        np.array(len(first & second)), np.array(len(first)), np.array(len(second))
    )
    return float(distance)


# --------------------------------------------------------------------------------------------
# Entry point
# --------------------------------------------------------------------------------------------


def dimension_agreement(
    item_ids: Sequence[int],
    annotators: Sequence[str],
    label_sets: Sequence[Collection[str]],
    *,
    categories: Sequence[str],
    multi_label: bool,
    ordinal: bool = False,
    weights: str | None = None,
    bootstrap: int = 0,
    seed: int = 0,
    min_pair_items: int = DEFAULT_MIN_PAIR_ITEMS,
) -> dict:
    """Agreement report for one dimension; one input row per (item, annotator) rating.

    ``label_sets[i]`` is the set of category keys of rating i. For a single-label dimension
    it holds exactly one key, or nothing, meaning "none applies", which is treated as a value
    of its own (``""``). A bare string is taken as one key. Keys not in ``categories`` are
    kept as extra values after the listed ones (sorted, with ``""`` last; for weighted kappa
    that is the top of the scale, so list ``""`` in ``categories`` to place it elsewhere). In
    multi-label sets ``""`` is ignored; the empty set is a valid answer.

    Returned (JSON-serialisable: Python ints, floats, strings, bools, None)::

        {"n_items": items with >= 2 ratings, "n_annotators": distinct annotators in the input,
         "percent_agreement": share of those items on which all ratings are identical sets,
         "cohen_kappa": {"mean", "interpretation", "ci95", "weighted_mean", "weighted_ci95",
                         "n_pairs", "n_pairs_counted", "min_pair_items",
                         "pairs": [{"a", "b", "n", "kappa", "ci95", "counted", "confusion"}]},
         "fleiss_kappa", "krippendorff_alpha",
         "per_category": {key: {"kappa", "support"}},
         "warnings": [sentences]}

    Single-label: pair kappa is scikit-learn's Cohen's kappa over the items both annotators
    rated, weighted ("linear"/"quadratic", scale order = ``categories``) only when
    ``ordinal``; Fleiss' kappa (see :func:`fleiss_kappa` for unequal numbers of ratings) and
    Krippendorff's alpha are nominal. ``confusion`` is the label x label count matrix
    (rows: a, columns: b).

    Multi-label: each category is a present/absent judgement. Pair kappa is the mean over
    categories of the binary Cohen's kappa (categories where it is undefined are skipped),
    Fleiss' kappa is likewise the mean of per-category binary Fleiss' kappas, and
    Krippendorff's alpha uses the MASI distance between label sets. ``confusion`` is the
    category co-occurrence matrix (a used row label, b used column label) plus ``binary``:
    a 2x2 per category, [[neither, only b], [only a, both]].

    Both: every pair a < b is listed with ``n``, the items both rated (pairs with no overlap
    too, whose kappa is None). A pair is ``counted`` when it shares at least
    ``min_pair_items`` items and its kappa is defined; ``mean`` is the unweighted mean of the
    counted pairs' kappas and ``weighted_mean`` their mean weighted by ``n``; both are None
    when no pair counts. ``per_category`` gives the one-vs-rest binary Cohen's kappa averaged
    over the pairs sharing at least ``min_pair_items`` items, and ``support``, the number of
    ratings (on items with >= 2 ratings) that used the category. ``warnings`` says, in words,
    why the numbers deserve caution: fewer than :data:`MIN_ITEMS_FOR_KAPPA` items, pairs left
    out of the mean, no pair counted.

    ``bootstrap`` > 0 adds percentile 95% intervals from that many resamples (with
    replacement, seeded with ``seed``) of the items with >= 2 ratings, for each counted pair
    and for both means (over the counted pairs, weighted by each resample's shared items for
    the weighted mean); resamples in which a kappa is undefined are left out of its interval.
    Point estimates are unaffected.
    """
    _check_weights(weights)
    if bootstrap < 0:
        raise ValueError("bootstrap must be >= 0")
    if min_pair_items < 1:
        raise ValueError("min_pair_items must be >= 1")
    kappa_weights = weights if ordinal and not multi_label else None
    ratings = _code_ratings(item_ids, annotators, label_sets, categories, multi_label)
    if multi_label:
        return _MultiLabelReport(ratings).build(bootstrap, seed, min_pair_items)
    return _SingleLabelReport(ratings, kappa_weights).build(bootstrap, seed, min_pair_items)


# --------------------------------------------------------------------------------------------
# Coding rows into integer arrays
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Ratings:
    """One dimension's ratings on the items that have at least two of them, integer coded."""

    annotators: list[str]  # sorted names
    values: list[str]  # single-label: values in scale order; multi-label: categories
    # items x annotators: value code (single-label) or label-set code (multi-label); -1 = none
    grid: NDArray[np.intp]
    rated: NDArray[np.bool_]  # grid >= 0
    # items x annotators x values: which values each rating used (all False when unrated)
    membership: NDArray[np.bool_]
    # multi-label only: distinct label sets (sets x values) indexed by the codes in grid
    label_set_members: NDArray[np.bool_] | None


def _code_ratings(
    item_ids: Sequence[int],
    annotators: Sequence[str],
    label_sets: Sequence[Collection[str]],
    categories: Sequence[str],
    multi_label: bool,
) -> _Ratings:
    n_rows = len(item_ids)
    if len(annotators) != n_rows or len(label_sets) != n_rows:
        raise ValueError("item_ids, annotators and label_sets must have the same length")
    if len(set(categories)) != len(categories):
        raise ValueError("categories must not contain duplicates")

    # Rows are coded with C-level map()/dict lookups: a per-row Python loop would dominate.
    annotator_names = sorted(set(annotators))
    annotator_position = {name: code for code, name in enumerate(annotator_names)}
    annotator_codes = np.fromiter(map(annotator_position.__getitem__, annotators), np.intp, n_rows)
    key_sets = _as_key_sets(label_sets)
    set_sizes = np.fromiter(map(len, key_sets), np.intp, n_rows)
    keys = list(itertools.chain.from_iterable(key_sets))
    if multi_label:
        values, row_membership = _code_multi_label(keys, set_sizes, categories)
    else:
        values, value_codes = _code_single_label(keys, set_sizes, key_sets, categories)

    # Latest row of every (item, annotator) cell, keeping only items rated at least twice.
    item_codes = np.unique(np.asarray(item_ids), return_inverse=True)[1].reshape(-1)
    n_item_ids = int(item_codes.max()) + 1 if n_rows else 0
    latest_row = np.full((n_item_ids, len(annotator_names)), -1, dtype=np.intp)
    np.maximum.at(latest_row, (item_codes, annotator_codes), np.arange(n_rows))
    latest_row = latest_row[(latest_row >= 0).sum(axis=1) >= 2]
    rated = latest_row >= 0

    label_set_members = None
    if multi_label:
        membership = row_membership[latest_row] & rated[:, :, np.newaxis]
        label_set_members, set_codes = _distinct_rows(membership[rated])
        grid = np.full(rated.shape, -1, dtype=np.intp)
        grid[rated] = set_codes
    else:
        grid = np.where(rated, value_codes[latest_row], -1)
        membership = grid[:, :, np.newaxis] == np.arange(len(values))

    return _Ratings(
        annotators=[str(name) for name in annotator_names],
        values=values,
        grid=grid,
        rated=rated,
        membership=membership,
        label_set_members=label_set_members,
    )


def _as_key_sets(label_sets: Sequence[Collection[str]]) -> Sequence[Collection[str]]:
    # A bare string is one key, not a collection of one-character keys.
    if any(issubclass(kind, str) for kind in set(map(type, label_sets))):
        return [(labels,) if isinstance(labels, str) else labels for labels in label_sets]
    return label_sets


def _code_single_label(
    keys: list[str],
    set_sizes: NDArray[np.intp],
    key_sets: Sequence[Collection[str]],
    categories: Sequence[str],
) -> tuple[list[str], NDArray[np.intp]]:
    if (set_sizes > 1).any():
        labels = key_sets[int(np.argmax(set_sizes > 1))]
        raise ValueError(f"a single-label rating has several labels: {sorted(labels)}")
    labelled = set_sizes == 1
    seen = set(keys) if labelled.all() else {*keys, NONE_APPLIES}
    values = _value_order(categories, seen)
    position = {key: code for code, key in enumerate(values)}
    codes = np.full(len(set_sizes), position.get(NONE_APPLIES, -1), dtype=np.intp)
    codes[labelled] = np.fromiter(map(position.__getitem__, keys), np.intp, len(keys))
    return values, codes


def _code_multi_label(
    keys: list[str], set_sizes: NDArray[np.intp], categories: Sequence[str]
) -> tuple[list[str], NDArray[np.bool_]]:
    values = _value_order(categories, set(keys) - {NONE_APPLIES})
    position = {key: code for code, key in enumerate(values)}
    position[NONE_APPLIES] = -1  # not a category: the empty set already says "none applies"
    key_codes = np.fromiter(map(position.__getitem__, keys), np.intp, len(keys))
    key_rows = np.repeat(np.arange(len(set_sizes)), set_sizes)
    is_category = key_codes >= 0
    row_membership = np.zeros((len(set_sizes), len(values)), dtype=bool)
    row_membership[key_rows[is_category], key_codes[is_category]] = True
    return values, row_membership


def _distinct_rows(
    members: NDArray[np.bool_],
) -> tuple[NDArray[np.bool_], NDArray[np.intp]]:
    """Distinct membership rows and, per row, the index of its distinct row."""
    words = _bit_masks(members)
    if words.shape[1] == 1:
        # Up to 64 categories: one integer per label set, so a fast 1-D unique.
        _, first, inverse = np.unique(words[:, 0], return_index=True, return_inverse=True)
    else:
        _, first, inverse = np.unique(words, axis=0, return_index=True, return_inverse=True)
    return members[first], inverse.reshape(-1)


def _bit_masks(members: NDArray[np.bool_]) -> NDArray[np.uint64]:
    """Rows of a membership matrix as bit masks, one row of 64-bit words each."""
    packed = np.packbits(members, axis=1)
    n_words = max(1, -(-packed.shape[1] // 8))
    padded = np.zeros((len(packed), 8 * n_words), dtype=np.uint8)
    padded[:, : packed.shape[1]] = packed
    return padded.view(np.uint64)


def _shared_members(masks_a: NDArray[np.uint64], masks_b: NDArray[np.uint64]) -> NDArray:
    """|A & B| from bit masks (broadcast over leading axes)."""
    return np.bitwise_count(masks_a & masks_b).sum(axis=-1, dtype=np.int64)


def _value_order(categories: Sequence[str], seen: set[str]) -> list[str]:
    """Listed categories first (their order is the ordinal scale), then unlisted keys."""
    unlisted = seen.difference(categories)
    ordered = [*categories, *sorted(unlisted - {NONE_APPLIES})]
    if NONE_APPLIES in unlisted:
        ordered.append(NONE_APPLIES)
    return ordered


# --------------------------------------------------------------------------------------------
# Reports
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _PairCounts:
    """What two annotators did on the items they both rated."""

    n: int
    matrix: NDArray[np.int64]  # single-label: confusion; multi-label: category co-occurrence
    used_by_a: NDArray[np.int64]  # per value: ratings by annotator a that used it
    used_by_b: NDArray[np.int64]
    used_by_both: NDArray[np.int64]


class _DimensionReport(ABC):
    """Shared assembly of the report; subclasses supply the statistics that differ."""

    def __init__(self, ratings: _Ratings) -> None:
        self.ratings = ratings
        self.n_items = ratings.grid.shape[0]
        self.pairs = list(itertools.combinations(range(len(ratings.annotators)), 2))
        self.overlaps = [ratings.rated[:, a] & ratings.rated[:, b] for a, b in self.pairs]
        self.pair_counts = [self.count_pair(index) for index in range(len(self.pairs))]
        # Binary (value used or not) Cohen's kappa per pair and value.
        self.binary_kappas = np.array(
            [
                _binary_kappa(counts.n, counts.used_by_a, counts.used_by_b, counts.used_by_both)
                for counts in self.pair_counts
            ]
        ).reshape(len(self.pairs), len(ratings.values))

    # Subclass hooks --------------------------------------------------------------------------

    @abstractmethod
    def count_pair(self, pair_index: int) -> _PairCounts:
        """Counts of one annotator pair on the items both rated."""

    @abstractmethod
    def support(self) -> NDArray[np.int64]:
        """Per value: ratings (on items with >= 2 ratings) that used it."""

    @abstractmethod
    def pair_kappa(self, pair_index: int) -> float | None:
        """Point estimate of one pair's kappa; None when undefined."""

    @abstractmethod
    def confusion(self, pair_index: int) -> dict[str, Any]:
        """One pair's "confusion" entry of the report."""

    @abstractmethod
    def fleiss(self) -> float | None:
        """Fleiss' kappa of the dimension; None when undefined."""

    @abstractmethod
    def alpha(self) -> float | None:
        """Krippendorff's alpha of the dimension; None when undefined."""

    @abstractmethod
    def bootstrap_features(self, pair_indices: list[int]) -> NDArray[np.float64]:
        """Per-item columns whose resample-weighted sums determine each pair's kappa: one
        block of equal width per pair, whose first column is 1 where the pair overlaps (so
        that its sum is the pair's shared items in the resample)."""

    @abstractmethod
    def kappas_from_sums(self, sums: NDArray[np.float64], n_pairs: int) -> NDArray[np.float64]:
        """(resamples x columns) sums of the features -> (resamples x pairs) kappas."""

    # Assembly ------------------------------------------------------------------------------

    def build(self, bootstrap: int, seed: int, min_pair_items: int) -> dict:
        ratings = self.ratings
        sizes = np.array([counts.n for counts in self.pair_counts], dtype=np.int64)
        pair_kappas = [self.pair_kappa(index) for index in range(len(self.pairs))]
        # Pairs sharing enough items; of those, the ones with a defined kappa enter the means.
        long_enough = sizes >= min_pair_items
        counted = [
            index
            for index, kappa in enumerate(pair_kappas)
            if long_enough[index] and kappa is not None
        ]
        counted_kappas = _as_float_array([pair_kappas[index] for index in counted])
        mean_kappa = _finite_or_none(_finite_mean(counted_kappas))
        weighted_kappa = _finite_or_none(_weighted_mean(counted_kappas, sizes[counted]))

        pair_intervals: list[list[float] | None] = [None] * len(self.pairs)
        mean_interval = weighted_interval = None
        if bootstrap > 0 and counted:
            n_counted = len(counted)
            resampled = _resample_items(
                self.bootstrap_features(counted),
                lambda sums: np.concatenate(
                    [
                        self.kappas_from_sums(sums, n_counted),
                        _pair_sizes_from_sums(sums, n_counted),
                    ],
                    axis=1,
                ),
                bootstrap,
                seed,
            )
            kappas, resampled_sizes = resampled[:, :n_counted], resampled[:, n_counted:]
            for column, index in enumerate(counted):
                pair_intervals[index] = _percentile_interval(kappas[:, column])
            mean_interval = _percentile_interval(_finite_mean(kappas, axis=1))
            weighted_interval = _percentile_interval(
                _weighted_mean(kappas, resampled_sizes, axis=1)
            )

        counted_set = set(counted)
        pairs = [
            {
                "a": ratings.annotators[a],
                "b": ratings.annotators[b],
                "n": int(sizes[index]),
                "kappa": pair_kappas[index],
                "ci95": pair_intervals[index],
                "counted": index in counted_set,
                "confusion": self.confusion(index),
            }
            for index, (a, b) in enumerate(self.pairs)
        ]
        category_kappas = _finite_mean(self.binary_kappas[long_enough], axis=0)
        support = self.support()
        return {
            "n_items": int(self.n_items),
            "n_annotators": len(ratings.annotators),
            "percent_agreement": self.percent_agreement(),
            "cohen_kappa": {
                "mean": mean_kappa,
                "interpretation": interpret_kappa(mean_kappa),
                "ci95": mean_interval,
                "weighted_mean": weighted_kappa,
                "weighted_ci95": weighted_interval,
                "n_pairs": len(pairs),
                "n_pairs_counted": len(counted),
                "min_pair_items": min_pair_items,
                "pairs": pairs,
            },
            "fleiss_kappa": self.fleiss(),
            "krippendorff_alpha": self.alpha(),
            "per_category": {
                key: {
                    "kappa": _finite_or_none(category_kappas[code]),
                    "support": int(support[code]),
                }
                for code, key in enumerate(ratings.values)
            },
            "warnings": agreement_warnings(
                n_items=int(self.n_items),
                pair_sizes=sizes.tolist(),
                n_pairs_counted=len(counted),
                min_pair_items=min_pair_items,
            ),
        }

    def percent_agreement(self) -> float | None:
        """Share of items (with >= 2 ratings) on which every rating is the same label set."""
        if self.n_items == 0:
            return None
        grid, rated = self.ratings.grid, self.ratings.rated
        highest = np.where(rated, grid, -1).max(axis=1)
        lowest = np.where(rated, grid, np.iinfo(np.intp).max).min(axis=1)
        return float(np.mean(highest == lowest))


class _SingleLabelReport(_DimensionReport):
    def __init__(self, ratings: _Ratings, weights: str | None) -> None:
        self.weights = weights
        self.disagreement = _disagreement_weights(len(ratings.values), weights)
        super().__init__(ratings)
        # items x values table of rating counts, the input of Fleiss' kappa and alpha.
        n_values = len(ratings.values)
        item_index, annotator_index = np.nonzero(ratings.rated)
        cells = item_index * n_values + ratings.grid[item_index, annotator_index]
        self.value_counts = np.bincount(cells, minlength=self.n_items * n_values).reshape(
            self.n_items, n_values
        )

    def _pair_codes(self, pair_index: int) -> tuple[NDArray[np.intp], NDArray[np.intp]]:
        a, b = self.pairs[pair_index]
        overlap = self.overlaps[pair_index]
        return self.ratings.grid[overlap, a], self.ratings.grid[overlap, b]

    def count_pair(self, pair_index: int) -> _PairCounts:
        codes_a, codes_b = self._pair_codes(pair_index)
        n_values = len(self.ratings.values)
        matrix = np.bincount(codes_a * n_values + codes_b, minlength=n_values * n_values)
        matrix = matrix.reshape(n_values, n_values)
        return _PairCounts(
            n=int(codes_a.size),
            matrix=matrix,
            used_by_a=matrix.sum(axis=1),
            used_by_b=matrix.sum(axis=0),
            used_by_both=np.diagonal(matrix).copy(),
        )

    def support(self) -> NDArray[np.int64]:
        return self.value_counts.sum(axis=0)

    def pair_kappa(self, pair_index: int) -> float | None:
        counts = self.pair_counts[pair_index]
        if counts.n == 0:
            return None
        # scikit-learn only uses the confusion matrix, so passing each non-empty cell once with
        # its count as sample weight gives a bit-identical kappa without re-validating every item.
        n_values = len(self.ratings.values)
        cells = np.flatnonzero(counts.matrix)
        return cohen_kappa(
            cells // n_values,
            cells % n_values,
            labels=np.arange(n_values),
            weights=self.weights,
            sample_weight=counts.matrix.ravel()[cells],
        )

    def confusion(self, pair_index: int) -> dict[str, Any]:
        return {
            "labels": list(self.ratings.values),
            "matrix": self.pair_counts[pair_index].matrix.tolist(),
        }

    def fleiss(self) -> float | None:
        return fleiss_kappa(self.value_counts)

    def alpha(self) -> float | None:
        return krippendorff_alpha_nominal(self.value_counts)

    def bootstrap_features(self, pair_indices: list[int]) -> NDArray[np.float64]:
        # Per pair: [in overlap, weighted disagreement, A's value one-hot, B's value one-hot].
        n_values = len(self.ratings.values)
        width = 2 + 2 * n_values
        features = np.zeros((self.n_items, width * len(pair_indices)))
        for column, index in enumerate(pair_indices):
            a, b = self.pairs[index]
            overlap = self.overlaps[index]
            block = features[:, column * width : (column + 1) * width]
            block[:, 0] = overlap
            codes_a, codes_b = self._pair_codes(index)
            block[overlap, 1] = self.disagreement[codes_a, codes_b]
            block[:, 2 : 2 + n_values] = self.ratings.membership[:, a] & overlap[:, np.newaxis]
            block[:, 2 + n_values :] = self.ratings.membership[:, b] & overlap[:, np.newaxis]
        return features

    def kappas_from_sums(self, sums: NDArray[np.float64], n_pairs: int) -> NDArray[np.float64]:
        n_values = len(self.ratings.values)
        sums = sums.reshape(sums.shape[0], n_pairs, 2 + 2 * n_values)
        return _kappa_from_margins(
            sums[..., 0],
            sums[..., 1],
            sums[..., 2 : 2 + n_values],
            sums[..., 2 + n_values :],
            self.disagreement,
        )


class _MultiLabelReport(_DimensionReport):
    def __init__(self, ratings: _Ratings) -> None:
        # Float copy of the membership so that counts are BLAS matrix products and float sums.
        self.chosen = ratings.membership.astype(np.float64)
        super().__init__(ratings)

    def count_pair(self, pair_index: int) -> _PairCounts:
        a, b = self.pairs[pair_index]
        overlap = self.overlaps[pair_index]
        chosen_a, chosen_b = self.chosen[overlap, a], self.chosen[overlap, b]
        matrix = (chosen_a.T @ chosen_b).astype(np.int64)
        return _PairCounts(
            n=int(overlap.sum()),
            matrix=matrix,
            used_by_a=chosen_a.sum(axis=0).astype(np.int64),
            used_by_b=chosen_b.sum(axis=0).astype(np.int64),
            used_by_both=np.diagonal(matrix).copy(),
        )

    def support(self) -> NDArray[np.int64]:
        return self.chosen.sum(axis=(0, 1)).astype(np.int64)

    def pair_kappa(self, pair_index: int) -> float | None:
        return _finite_or_none(_finite_mean(self.binary_kappas[pair_index]))

    def confusion(self, pair_index: int) -> dict[str, Any]:
        counts = self.pair_counts[pair_index]
        both = counts.used_by_both
        only_a = counts.used_by_a - both
        only_b = counts.used_by_b - both
        neither = counts.n - both - only_a - only_b
        return {
            "labels": list(self.ratings.values),
            "matrix": counts.matrix.tolist(),
            "binary": {
                key: [[int(neither[code]), int(only_b[code])], [int(only_a[code]), int(both[code])]]
                for code, key in enumerate(self.ratings.values)
            },
        }

    def fleiss(self) -> float | None:
        # Each category as a present/absent judgement; mean over categories where defined.
        ratings_per_item = self.ratings.rated.sum(axis=1)
        present = self.chosen.sum(axis=1)
        absent = ratings_per_item[:, np.newaxis] - present
        per_category = _fleiss_kernel(np.stack([absent, present], axis=1))
        return _finite_or_none(_finite_mean(per_category))

    def alpha(self) -> float | None:
        """Krippendorff's alpha with the MASI distance between label sets."""
        ratings = self.ratings
        members = ratings.label_set_members
        if self.n_items == 0 or members is None:
            return None
        ratings_per_item = ratings.rated.sum(axis=1)
        set_sizes = members.sum(axis=1)
        # Bit masks and popcounts rather than a sets x sets matrix product: the product is
        # small, and multithreaded BLAS stalls on small products when the cores are busy.
        masks = _bit_masks(members)
        # Observed: every ordered pair of ratings within an item, weighted 1 / (m_u - 1).
        observed_total = 0.0
        for (a, b), overlap in zip(self.pairs, self.overlaps, strict=True):
            codes_a, codes_b = ratings.grid[overlap, a], ratings.grid[overlap, b]
            distances = _masi_from_sizes(
                _shared_members(masks[codes_a], masks[codes_b]),
                set_sizes[codes_a],
                set_sizes[codes_b],
            )
            observed_total += float((2.0 * distances / (ratings_per_item[overlap] - 1)).sum())
        # Expected: all pairs of pairable values, over distinct label sets with frequencies.
        frequency = np.bincount(ratings.grid[ratings.rated], minlength=len(members)).astype(float)
        n_values = frequency.sum()
        expected_total = 0.0
        for start in range(0, len(members), _MASI_BLOCK_ROWS):
            block = slice(start, start + _MASI_BLOCK_ROWS)
            distances = _masi_from_sizes(
                _shared_members(masks[block, np.newaxis], masks[np.newaxis, :]),
                set_sizes[block, np.newaxis],
                set_sizes[np.newaxis, :],
            )
            expected_total += float(frequency[block] @ distances @ frequency)
        if expected_total <= 0:
            return None
        observed = observed_total / n_values
        expected = expected_total / (n_values * (n_values - 1))
        return _finite_or_none(1.0 - observed / expected)

    def bootstrap_features(self, pair_indices: list[int]) -> NDArray[np.float64]:
        # Per pair: [in overlap, A used c (per c), B used c (per c), both used c (per c)].
        n_categories = len(self.ratings.values)
        width = 1 + 3 * n_categories
        features = np.zeros((self.n_items, width * len(pair_indices)))
        for column, index in enumerate(pair_indices):
            a, b = self.pairs[index]
            overlap = self.overlaps[index][:, np.newaxis]
            used_by_a = self.chosen[:, a] * overlap
            used_by_b = self.chosen[:, b] * overlap
            block = features[:, column * width : (column + 1) * width]
            block[:, 0] = overlap[:, 0]
            block[:, 1 : 1 + n_categories] = used_by_a
            block[:, 1 + n_categories : 1 + 2 * n_categories] = used_by_b
            block[:, 1 + 2 * n_categories :] = used_by_a * used_by_b
        return features

    def kappas_from_sums(self, sums: NDArray[np.float64], n_pairs: int) -> NDArray[np.float64]:
        k = len(self.ratings.values)
        sums = sums.reshape(sums.shape[0], n_pairs, 1 + 3 * k)
        binary = _binary_kappa(
            sums[..., :1],
            sums[..., 1 : 1 + k],
            sums[..., 1 + k : 1 + 2 * k],
            sums[..., 1 + 2 * k :],
        )
        return _finite_mean(binary, axis=-1)


# --------------------------------------------------------------------------------------------
# Vectorised kernels
# --------------------------------------------------------------------------------------------


def _check_weights(weights: str | None) -> None:
    if weights not in WEIGHT_SCHEMES:
        raise ValueError(f"weights must be one of {WEIGHT_SCHEMES}, not {weights!r}")


def _disagreement_weights(n_values: int, weights: str | None) -> NDArray[np.float64]:
    """Disagreement weight matrix exactly as scikit-learn builds it (not rescaled to [0, 1])."""
    positions = np.arange(n_values, dtype=np.float64)
    steps = positions[:, np.newaxis] - positions[np.newaxis, :]
    if weights == "linear":
        return np.abs(steps)
    if weights == "quadratic":
        return steps**2
    return (steps != 0).astype(np.float64)


def _kappa_from_margins(
    n: ArrayLike,
    observed_disagreement: ArrayLike,
    counts_a: NDArray[np.float64],
    counts_b: NDArray[np.float64],
    disagreement: NDArray[np.float64],
) -> NDArray[np.float64]:
    """Weighted kappa = 1 - observed / chance disagreement, broadcast over leading axes.

    ``observed_disagreement`` is sum_i w(a_i, b_i); chance disagreement is
    sum_jk w_jk counts_a[j] counts_b[k] / n. NaN where chance disagreement is 0 (undefined).
    """
    chance_scaled = np.einsum("...j,jk,...k->...", counts_a, disagreement, counts_b)
    with np.errstate(divide="ignore", invalid="ignore"):
        kappa = 1.0 - np.asarray(n) * np.asarray(observed_disagreement) / chance_scaled
    return np.where(chance_scaled > 0, kappa, np.nan)


def _binary_kappa(
    n: ArrayLike, used_by_a: ArrayLike, used_by_b: ArrayLike, used_by_both: ArrayLike
) -> NDArray[np.float64]:
    """Cohen's kappa of present/absent judgements from counts; NaN where undefined.

    Closed form of the 2x2 case: 2 (n * both - a * b) / (n (a + b) - 2 a b). The denominator is
    zero exactly when both annotators answered the same way on every item.
    """
    n, a, b, ab = (np.asarray(x, dtype=np.float64) for x in (n, used_by_a, used_by_b, used_by_both))
    denominator = n * (a + b) - 2.0 * a * b
    with np.errstate(divide="ignore", invalid="ignore"):
        kappa = 2.0 * (n * ab - a * b) / denominator
    return np.where(denominator > 0, kappa, np.nan)


def _fleiss_kernel(table: NDArray[np.float64]) -> NDArray[np.float64]:
    """Generalised Fleiss' kappa (see :func:`fleiss_kappa`) for a batch of tables at once.

    ``table`` is items x values x batch, every item with >= 2 ratings; returns one kappa per
    batch entry, NaN where undefined.
    """
    n_items, _, batch = table.shape
    if n_items == 0:
        return np.full(batch, np.nan)
    ratings = table.sum(axis=1, keepdims=True)
    agreeing_pairs = (table * (table - 1)).sum(axis=1) / (ratings[:, 0] * (ratings[:, 0] - 1))
    observed = agreeing_pairs.mean(axis=0)
    expected = ((table / ratings).mean(axis=0) ** 2).sum(axis=0)
    # expected is exactly 1.0 when one value takes every rating; the margin absorbs rounding.
    defined = 1.0 - expected > 1e-12
    with np.errstate(divide="ignore", invalid="ignore"):
        kappa = (observed - expected) / (1.0 - expected)
    return np.where(defined, kappa, np.nan)


def _masi_from_sizes(shared: NDArray, size_a: NDArray, size_b: NDArray) -> NDArray[np.float64]:
    """MASI distance from |A & B|, |A| and |B| (broadcast)."""
    union = size_a + size_b - shared
    shared, union = np.broadcast_arrays(np.asarray(shared, np.float64), union)
    # Two empty sets are identical: Jaccard 1 by convention instead of 0/0.
    jaccard = np.divide(shared, union, out=np.ones(shared.shape), where=union > 0)
    identical = union == shared
    nested = shared == np.minimum(size_a, size_b)
    # Monotonicity 1, 2/3 or 1/3 (identical implies nested); disjoint sets have Jaccard 0, so
    # their monotonicity of 0 needs no case of its own.
    return 1.0 - jaccard * ((1.0 + identical + nested) / 3.0)


def _resample_items(
    features: NDArray[np.float64],
    kappas_from_sums: Callable[[NDArray[np.float64]], NDArray[np.float64]],
    n_resamples: int,
    seed: int,
) -> NDArray[np.float64]:
    """Kappas of ``n_resamples`` bootstrap resamples of items, all computed at once.

    A resample is a row of item multiplicities, so its feature sums are one matrix product;
    resamples are processed in chunks to bound memory.
    """
    n_items = features.shape[0]
    # Features are small non-negative integers, so every partial sum of the product is an
    # integer <= n_items * max(features); below 2**24 float32 holds them exactly at twice the
    # BLAS speed.
    exact_in_float32 = n_items * float(features.max(initial=0.0)) < 2**24
    dtype = np.float32 if exact_in_float32 else np.float64
    features = features.astype(dtype)
    rng = np.random.default_rng(seed)
    chunk = max(1, min(n_resamples, _BOOTSTRAP_CHUNK_CELLS // n_items))
    results = []
    for start in range(0, n_resamples, chunk):
        size = min(chunk, n_resamples - start)
        draws = rng.integers(0, n_items, size=(size, n_items))
        draws += np.arange(size)[:, np.newaxis] * n_items
        multiplicity = np.bincount(draws.ravel(), minlength=size * n_items)
        sums = multiplicity.reshape(size, n_items).astype(dtype) @ features
        results.append(kappas_from_sums(sums.astype(np.float64)))
    return np.concatenate(results)


def _pair_sizes_from_sums(sums: NDArray[np.float64], n_pairs: int) -> NDArray[np.float64]:
    """(resamples x columns) feature sums -> (resamples x pairs) shared items of each pair."""
    return sums.reshape(sums.shape[0], n_pairs, -1)[..., 0]


def _percentile_interval(samples: NDArray[np.float64]) -> list[float] | None:
    finite = samples[np.isfinite(samples)]
    if finite.size == 0:
        return None
    tail = 100.0 * (1.0 - CONFIDENCE_LEVEL) / 2.0
    low, high = np.percentile(finite, [tail, 100.0 - tail])
    return [float(low), float(high)]


def _finite_mean(values: NDArray[np.float64], axis: int | None = None) -> NDArray[np.float64]:
    """Mean of the finite entries (NaN = undefined), NaN when there are none; no warnings."""
    finite = np.isfinite(values)
    count = finite.sum(axis=axis)
    total = np.where(finite, values, 0.0).sum(axis=axis)
    return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def _weighted_mean(
    values: NDArray[np.float64], weights: ArrayLike, axis: int | None = None
) -> NDArray[np.float64]:
    """Mean of the finite entries weighted by ``weights``, NaN when no weight is left."""
    weights = np.asarray(weights, dtype=np.float64)
    usable = np.isfinite(values) & (weights > 0)
    total_weight = np.where(usable, weights, 0.0).sum(axis=axis)
    total = np.where(usable, np.nan_to_num(values) * weights, 0.0).sum(axis=axis)
    return np.divide(
        total, total_weight, out=np.full(np.shape(total), np.nan), where=total_weight > 0
    )


def _as_float_array(values: Sequence[float | None]) -> NDArray[np.float64]:
    return np.array([np.nan if value is None else value for value in values], dtype=np.float64)


def _finite_or_none(value: Any) -> float | None:
    number = float(value)
    return number if math.isfinite(number) else None
