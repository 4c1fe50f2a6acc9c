"""One dimension's agreement report: every coefficient of the families in this package on the
same coded ratings, the headline, the warnings and the bootstrap intervals.

Conventions used throughout:

* A *rating* is one (item, annotator) pair with its label set. If an annotator rated the same
  item more than once, the last row wins.
* Only items with at least two ratings say anything about agreement; every statistic is
  computed on exactly those items, except the chance term of ``fleiss_kappa_gwet``, which
  (as irrCAC's) uses every rated item.
* A coefficient that is undefined (0/0 because a single value is used throughout, fewer than
  two annotators, no overlapping items, unequal numbers of ratings for classic Fleiss) is
  ``None``: never an exception, never a silent 1.0.
* Every pair of annotators is listed, but only a pair sharing at least ``min_pair_items`` items
  counts toward the mean kappa: a pair that shares one item has a kappa of 0 or 1 or none,
  and an unweighted mean gives it the weight of a pair that shares hundreds.
"""

from __future__ import annotations

import itertools
from abc import ABC, abstractmethod
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from labeling.agreement.cohen import (
    binary_kappa,
    check_weights,
    cohen_kappa,
    disagreement_weights,
    kappa_from_margins,
    kappa_standard_error,
    specific_agreement,
    wald_interval,
)
from labeling.agreement.fleiss import (
    category_fleiss_kappas,
    classic_kernel,
    gwet_kernel,
)
from labeling.agreement.intervals import (
    percentile_interval,
    resample_multiplicities,
    resample_sums,
)
from labeling.agreement.krippendorff import (
    alpha_from_coincidences,
    item_coincidences,
)
from labeling.agreement.numbers import (
    as_float_array,
    finite_mean,
    finite_or_none,
    weighted_mean,
)
from labeling.agreement.ratings import Ratings, code_ratings
from labeling.agreement.sets import LabelSets, item_observed_disagreement, set_alpha
from labeling.agreement.wording import (
    DEFAULT_MIN_PAIR_ITEMS,
    Warning,
    headline_of,
    interpret_kappa,
    kappa_warnings,
)

# The bootstrap of a set alpha multiplies a resamples x sets matrix by the sets x sets distance
# matrix; above this many distinct label sets that costs more than the rest of a report.
MAX_SETS_FOR_BOOTSTRAP = 1024

SINGLE_LABEL_UNITS = {
    "percent_agreement": "share of agreeing rating pairs, averaged over items",
    "percent_agreement_all": "share of items on which every rating is the same",
    "cohen_kappa": "Cohen's κ of each pair on the items both rated",
    "fleiss_kappa": "Fleiss' κ over all annotators (nominal)",
    "fleiss_kappa_gwet": "Fleiss' κ generalised to unequal numbers of ratings (Gwet 2014)",
    "krippendorff_alpha": "Krippendorff's α, nominal",
    "per_category": "each category against all the others (one vs rest)",
}
ORDINAL_UNITS = {
    "cohen_kappa": "weighted Cohen's κ of each pair (scale in codebook order)",
    "krippendorff_alpha_ordinal": "Krippendorff's α, ordinal (rank order of the values)",
    "krippendorff_alpha_interval": "Krippendorff's α, interval (differences of the values)",
    "krippendorff_alpha_ratio": "Krippendorff's α, ratio (relative differences of the values)",
}
MULTI_LABEL_UNITS = {
    "percent_agreement": "share of rating pairs with identical label sets, averaged over items",
    "percent_agreement_all": "share of items on which every label set is identical",
    "exact_set_agreement": "share of rating pairs with identical label sets, averaged over items",
    "mean_jaccard": "Jaccard similarity of two label sets, averaged over pairs, then items",
    "mean_masi_similarity": "MASI similarity of two label sets, averaged over pairs, then items",
    "cohen_kappa": "mean over categories of each pair's binary (present/absent) Cohen's κ",
    "fleiss_kappa": "mean over categories of the binary (present/absent) Fleiss' κ",
    "fleiss_kappa_gwet": "mean over categories of the binary Fleiss' κ generalised (Gwet 2014)",
    "krippendorff_alpha": "Krippendorff's α with the MASI distance between label sets",
    "krippendorff_alpha_jaccard": "Krippendorff's α with the Jaccard distance between sets",
    "per_category": "each category as a present/absent judgement",
}


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
    scale_values: Sequence[float] | None = None,
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

    ``ordinal`` single-label dimensions weight Cohen's kappa with ``weights`` ("linear" or
    "quadratic"; the order of ``categories`` is the scale) and add Krippendorff's ordinal,
    interval and ratio alphas over the listed categories with the numbers ``scale_values``
    (one per category; positions 1..n when None); "none applies" and unlisted keys are left out
    of those three.

    The keys of the report are listed and defined in the documentation's agreement methods
    page; ``units`` says in words what each figure is computed on. ``bootstrap`` > 0 adds
    percentile 95% intervals from that many resamples of the items (with replacement, seeded
    with ``seed``): each counted pair's κ, both means, Fleiss' κ and Krippendorff's α.
    Resamples in which a coefficient is undefined are left out of its interval; point
    estimates are unaffected.
    """
    check_weights(weights)
    if bootstrap < 0:
        raise ValueError("bootstrap must be >= 0")
    if min_pair_items < 1:
        raise ValueError("min_pair_items must be >= 1")
    if scale_values is not None and len(scale_values) != len(categories):
        raise ValueError("scale_values must give one number per category")
    ratings = code_ratings(item_ids, annotators, label_sets, categories, multi_label)
    if multi_label:
        report: _DimensionReport = _MultiLabelReport(ratings)
    else:
        kappa_weights = weights if ordinal else None
        scale = None
        if ordinal:
            scale = list(scale_values) if scale_values is not None else None
            scale = scale or [float(position) for position in range(1, len(categories) + 1)]
        report = _SingleLabelReport(ratings, kappa_weights, len(categories), scale)
    return report.build(bootstrap, seed, min_pair_items)


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

    units: dict[str, str]

    def __init__(self, ratings: Ratings) -> None:
        self.ratings = ratings
        self.n_items = ratings.n_items
        self.pairs = list(itertools.combinations(range(len(ratings.annotators)), 2))
        self.overlaps = [ratings.rated[:, a] & ratings.rated[:, b] for a, b in self.pairs]
        self.pair_counts = [self.count_pair(index) for index in range(len(self.pairs))]
        # Binary (value used or not) Cohen's kappa per pair and value.
        self.binary_kappas = np.array(
            [
                binary_kappa(counts.n, counts.used_by_a, counts.used_by_b, counts.used_by_both)
                for counts in self.pair_counts
            ]
        ).reshape(len(self.pairs), len(ratings.values))
        per_item = ratings.ratings_per_item
        self.equal_ratings = per_item.size == 0 or bool(np.all(per_item == per_item[0]))

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
    def pair_standard_error(self, pair_index: int) -> float | None:
        """Fleiss, Cohen & Everitt (1969) standard error of one pair's kappa (defined), or
        None."""

    @abstractmethod
    def confusion(self, pair_index: int) -> dict[str, Any]:
        """One pair's "confusion" entry of the report."""

    @abstractmethod
    def coefficients(self) -> dict[str, float | None]:
        """The dimension's coefficients over all annotators: fleiss_kappa, fleiss_kappa_gwet,
        krippendorff_alpha and the family's own (set measures, metric alphas)."""

    @abstractmethod
    def category_fleiss(self) -> NDArray[np.float64]:
        """Per value: Fleiss' category-specific kappa (NaN where undefined)."""

    @abstractmethod
    def bootstrap_features(self, pair_indices: list[int]) -> NDArray[np.float64]:
        """Per-item columns whose resample-weighted sums determine each pair's kappa: one
        block of equal width per pair, whose first column is 1 where the pair overlaps (so
        that its sum is the pair's shared items in the resample)."""

    @abstractmethod
    def kappas_from_sums(self, sums: NDArray[np.float64], n_pairs: int) -> NDArray[np.float64]:
        """(resamples x columns) sums of the features -> (resamples x pairs) kappas."""

    @abstractmethod
    def fleiss_resampled(self, multiplicities: list) -> NDArray[np.float64] | None:
        """Fleiss' kappa of every resample, or None when it is not defined on the data."""

    @abstractmethod
    def alpha_resampled(self, multiplicities: list) -> NDArray[np.float64] | None:
        """Krippendorff's alpha of every resample, or None when it cannot be resampled."""

    def extra_warnings(self, bootstrap: int) -> list[Warning]:
        return []

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
        counted_kappas = as_float_array([pair_kappas[index] for index in counted])
        mean_kappa = finite_or_none(finite_mean(counted_kappas))
        weighted_kappa = finite_or_none(weighted_mean(counted_kappas, sizes[counted]))
        coefficients = self.coefficients()

        pair_intervals: list[list[float] | None] = [None] * len(self.pairs)
        mean_interval = weighted_interval = fleiss_interval = alpha_interval = None
        if bootstrap > 0 and self.n_items > 0:
            multiplicities = resample_multiplicities(self.n_items, bootstrap, seed)
            if counted:
                n_counted = len(counted)
                resampled = resample_sums(
                    multiplicities,
                    self.bootstrap_features(counted),
                    lambda sums: np.concatenate(
                        [
                            self.kappas_from_sums(sums, n_counted),
                            _pair_sizes_from_sums(sums, n_counted),
                        ],
                        axis=1,
                    ),
                    # Counts and integer disagreement weights (scikit-learn's are 0/1, |i - j|
                    # and (i - j)^2).
                    integral=True,
                )
                kappas, resampled_sizes = resampled[:, :n_counted], resampled[:, n_counted:]
                for column, index in enumerate(counted):
                    pair_intervals[index] = percentile_interval(kappas[:, column])
                mean_interval = percentile_interval(finite_mean(kappas, axis=1))
                weighted_interval = percentile_interval(
                    weighted_mean(kappas, resampled_sizes, axis=1)
                )
            if coefficients["fleiss_kappa"] is not None:
                fleiss = self.fleiss_resampled(multiplicities)
                fleiss_interval = None if fleiss is None else percentile_interval(fleiss)
            if coefficients["krippendorff_alpha"] is not None:
                alpha = self.alpha_resampled(multiplicities)
                alpha_interval = None if alpha is None else percentile_interval(alpha)

        counted_set = set(counted)
        pairs = []
        for index, (a, b) in enumerate(self.pairs):
            defined = pair_kappas[index] is not None
            standard_error = self.pair_standard_error(index) if defined else None
            pairs.append(
                {
                    "a": ratings.annotators[a],
                    "b": ratings.annotators[b],
                    "n": int(sizes[index]),
                    "kappa": pair_kappas[index],
                    "ci95": pair_intervals[index],
                    "ase": standard_error,
                    "ci95_wald": wald_interval(pair_kappas[index], standard_error),
                    "counted": index in counted_set,
                    "confusion": self.confusion(index),
                }
            )
        cohen = {
            "mean": mean_kappa,
            "interpretation": interpret_kappa(mean_kappa),
            "ci95": mean_interval,
            "weighted_mean": weighted_kappa,
            "weighted_ci95": weighted_interval,
            "n_pairs": len(pairs),
            "n_pairs_counted": len(counted),
            "min_pair_items": min_pair_items,
            "pairs": pairs,
        }
        category_kappas = finite_mean(self.binary_kappas[long_enough], axis=0)
        category_specific = finite_mean(self._specific_agreements()[long_enough], axis=0)
        category_fleiss = self.category_fleiss()
        support = self.support()
        warnings = kappa_warnings(
            n_items=int(self.n_items),
            pair_sizes=sizes.tolist(),
            n_pairs_counted=len(counted),
            min_pair_items=min_pair_items,
        )
        if self.n_items and not self.equal_ratings:
            per_item = self.ratings.ratings_per_item
            warnings.append(
                Warning(
                    "unequal_ratings",
                    f"Items carry unequal numbers of ratings ({per_item.min()} to "
                    f"{per_item.max()}): Fleiss' κ (1971) is not defined for them and is not "
                    "given; Gwet's generalisation is (fleiss_kappa_gwet).",
                )
            )
        warnings += self.extra_warnings(bootstrap)
        return {
            "n_items": int(self.n_items),
            "n_annotators": len(ratings.annotators),
            "percent_agreement": self.percent_agreement(),
            "percent_agreement_all": self.percent_agreement_all(),
            "cohen_kappa": cohen,
            "headline": headline_of(cohen, bootstrapped=bootstrap > 0),
            **coefficients,
            "fleiss_kappa_ci95": fleiss_interval,
            "krippendorff_alpha_ci95": alpha_interval,
            "per_category": {
                key: {
                    "kappa": finite_or_none(category_kappas[code]),
                    "fleiss_kappa": finite_or_none(category_fleiss[code]),
                    "specific_agreement": finite_or_none(category_specific[code]),
                    "support": int(support[code]),
                }
                for code, key in enumerate(ratings.values)
            },
            "units": dict(self.units),
            "warnings": [warning.text for warning in warnings],
            "warning_kinds": [warning.kind for warning in warnings],
        }

    def _specific_agreements(self) -> NDArray[np.float64]:
        """pairs x values: positive specific agreement of each pair on each value."""
        return np.array(
            [
                specific_agreement(counts.used_by_a, counts.used_by_b, counts.used_by_both)
                for counts in self.pair_counts
            ]
        ).reshape(len(self.pairs), len(self.ratings.values))

    def pairwise_item_means(self, agreement_of: Any) -> float | None:
        """Mean over items of the mean, over the item's rating pairs, of ``agreement_of(codes_a,
        codes_b)`` (1 for agreeing ratings; a similarity in [0, 1] for set measures)."""
        if self.n_items == 0:
            return None
        grid = self.ratings.grid
        totals = np.zeros(self.n_items)
        for (a, b), overlap in zip(self.pairs, self.overlaps, strict=True):
            totals[overlap] += agreement_of(grid[overlap, a], grid[overlap, b])
        per_item = self.ratings.ratings_per_item
        return float(np.mean(totals / (per_item * (per_item - 1) / 2.0)))

    def percent_agreement(self) -> float | None:
        """Mean over items of the share of agreeing rating pairs (Fleiss 1971's P_i)."""
        return self.pairwise_item_means(lambda codes_a, codes_b: codes_a == codes_b)

    def percent_agreement_all(self) -> float | None:
        """Share of items (with >= 2 ratings) on which every rating is the same label set."""
        if self.n_items == 0:
            return None
        grid, rated = self.ratings.grid, self.ratings.rated
        highest = np.where(rated, grid, -1).max(axis=1)
        lowest = np.where(rated, grid, np.iinfo(np.intp).max).min(axis=1)
        return float(np.mean(highest == lowest))


class _SingleLabelReport(_DimensionReport):
    def __init__(
        self,
        ratings: Ratings,
        weights: str | None,
        n_listed: int,
        scale: list[float] | None,
    ) -> None:
        self.weights = weights
        self.n_listed = n_listed
        self.scale = scale  # None: nominal dimension
        self.disagreement = disagreement_weights(len(ratings.values), weights)
        self.units = SINGLE_LABEL_UNITS | (ORDINAL_UNITS if scale is not None else {})
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

    def pair_standard_error(self, pair_index: int) -> float | None:
        return kappa_standard_error(self.pair_counts[pair_index].matrix, self.weights)

    def confusion(self, pair_index: int) -> dict[str, Any]:
        return {
            "labels": list(self.ratings.values),
            "matrix": self.pair_counts[pair_index].matrix.tolist(),
        }

    def coefficients(self) -> dict[str, float | None]:
        table = self.value_counts.astype(np.float64)
        found = {
            "fleiss_kappa": None,
            "fleiss_kappa_gwet": None,
            "krippendorff_alpha": None,
        }
        if self.n_items:
            if self.equal_ratings:
                found["fleiss_kappa"] = finite_or_none(classic_kernel(table[:, :, None])[0])
            everything = np.concatenate([table, self.ratings.single_membership.astype(float)])
            found["fleiss_kappa_gwet"] = finite_or_none(gwet_kernel(everything[:, :, None])[0])
            found["krippendorff_alpha"] = finite_or_none(
                _nominal_alpha(self._alpha_features().sum(axis=0)[np.newaxis])[0]
            )
        if self.scale is not None:
            metric = self.scale_coincidences().sum(axis=0)[np.newaxis]
            for level in ("ordinal", "interval", "ratio"):
                alpha = alpha_from_coincidences(metric, level, self.scale)[0]
                found[f"krippendorff_alpha_{level}"] = finite_or_none(alpha)
        return found

    def _alpha_features(self) -> NDArray[np.float64]:
        """Per item: [matching pairs / (m_u - 1), m_u, n_u1 .. n_uq]: nominal alpha is a function
        of their sums (every item here is pairable)."""
        table = self.value_counts.astype(np.float64)
        per_item = table.sum(axis=1)
        matching = (table * (table - 1)).sum(axis=1) / (per_item - 1)
        return np.column_stack([matching, per_item, table])

    def scale_coincidences(self) -> NDArray[np.float64]:
        """Coincidences over the listed categories only (the scale of the metric alphas): an
        item counts with its ratings on the scale, when it has two or more of them."""
        table = self.value_counts[:, : self.n_listed].astype(np.float64)
        table = np.where(table.sum(axis=1, keepdims=True) >= 2, table, 0.0)
        on_scale = table.sum(axis=1) >= 2
        shares = np.zeros((self.n_items, self.n_listed, self.n_listed))
        if on_scale.any():
            shares[on_scale] = item_coincidences(table[on_scale])
        return shares

    def category_fleiss(self) -> NDArray[np.float64]:
        if not self.n_items:
            return np.full(len(self.ratings.values), np.nan)
        return category_fleiss_kappas(self.value_counts)

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
        return kappa_from_margins(
            sums[..., 0],
            sums[..., 1],
            sums[..., 2 : 2 + n_values],
            sums[..., 2 + n_values :],
            self.disagreement,
        )

    def fleiss_resampled(self, multiplicities: list) -> NDArray[np.float64] | None:
        # Per item: [P_i, n_i1 .. n_iq]; every item has the same r, so p_k = sum n_k / (N r).
        table = self.value_counts.astype(np.float64)
        per_item = table.sum(axis=1)
        agreeing = (table * (table - 1)).sum(axis=1) / (per_item * (per_item - 1))
        features = np.column_stack([agreeing, table])
        n_items = self.n_items

        def fleiss(sums: NDArray[np.float64]) -> NDArray[np.float64]:
            observed = sums[:, 0] / n_items
            counts = sums[:, 1:]
            shares = counts / counts.sum(axis=1, keepdims=True)
            expected = (shares**2).sum(axis=1)
            with np.errstate(divide="ignore", invalid="ignore"):
                kappa = (observed - expected) / (1.0 - expected)
            return np.where(1.0 - expected > 1e-12, kappa, np.nan)

        return resample_sums(multiplicities, features, fleiss)

    def alpha_resampled(self, multiplicities: list) -> NDArray[np.float64] | None:
        return resample_sums(multiplicities, self._alpha_features(), _nominal_alpha)


def _nominal_alpha(sums: NDArray[np.float64]) -> NDArray[np.float64]:
    """Krippendorff's nominal alpha from summed [matching, m_u, n_u1 .. n_uq] rows:
    1 - (n - 1)(n - o_diagonal) / (n^2 - sum_k n_k^2) (Krippendorff 2011, nominal case)."""
    matching, n_values, totals = sums[:, 0], sums[:, 1], sums[:, 2:]
    chance = n_values**2 - (totals**2).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        alpha = 1.0 - (n_values - 1) * (n_values - matching) / chance
    return np.where(chance > 1e-9, alpha, np.nan)


class _MultiLabelReport(_DimensionReport):
    units = MULTI_LABEL_UNITS

    def __init__(self, ratings: Ratings) -> None:
        # Float copy of the membership so that counts are BLAS matrix products and float sums.
        self.chosen = ratings.membership.astype(np.float64)
        members = ratings.label_set_members
        self.sets = LabelSets(members if members is not None else np.zeros((0, 0), bool))
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
        return finite_or_none(finite_mean(self.binary_kappas[pair_index]))

    def pair_standard_error(self, pair_index: int) -> float | None:
        # The mean of correlated per-category kappas has no standard large-sample error.
        return None

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

    def _binary_tables(self) -> NDArray[np.float64]:
        """items x 2 x categories: (absent, present) counts of each category on each item."""
        present = self.chosen.sum(axis=1)
        absent = self.ratings.ratings_per_item[:, np.newaxis] - present
        return np.stack([absent, present], axis=1)

    def coefficients(self) -> dict[str, float | None]:
        found: dict[str, float | None] = dict.fromkeys(
            (
                "fleiss_kappa",
                "fleiss_kappa_gwet",
                "krippendorff_alpha",
                "krippendorff_alpha_jaccard",
                "exact_set_agreement",
                "mean_jaccard",
                "mean_masi_similarity",
            )
        )
        if not self.n_items:
            return found
        binary = self._binary_tables()
        if self.equal_ratings:
            found["fleiss_kappa"] = finite_or_none(finite_mean(classic_kernel(binary)))
        single = self.ratings.single_membership.astype(np.float64)
        everything = np.concatenate([binary, np.stack([1.0 - single, single], axis=1)])
        found["fleiss_kappa_gwet"] = finite_or_none(finite_mean(gwet_kernel(everything)))
        grid, rated = self.ratings.grid, self.ratings.rated
        found["krippendorff_alpha"] = set_alpha(self.sets, grid, rated, "masi")
        found["krippendorff_alpha_jaccard"] = set_alpha(self.sets, grid, rated, "jaccard")
        found["exact_set_agreement"] = self.percent_agreement()
        found["mean_jaccard"] = self.pairwise_item_means(
            lambda codes_a, codes_b: 1.0 - self.sets.distance("jaccard", codes_a, codes_b)
        )
        found["mean_masi_similarity"] = self.pairwise_item_means(
            lambda codes_a, codes_b: 1.0 - self.sets.distance("masi", codes_a, codes_b)
        )
        return found

    def category_fleiss(self) -> NDArray[np.float64]:
        if not self.n_items or not self.equal_ratings:
            return np.full(len(self.ratings.values), np.nan)
        return classic_kernel(self._binary_tables())

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
        binary = binary_kappa(
            sums[..., :1],
            sums[..., 1 : 1 + k],
            sums[..., 1 + k : 1 + 2 * k],
            sums[..., 1 + 2 * k :],
        )
        return finite_mean(binary, axis=-1)

    def fleiss_resampled(self, multiplicities: list) -> NDArray[np.float64] | None:
        # Per item: [P_i of each category (absent/present), uses of each category, r_i].
        binary = self._binary_tables()
        per_item = binary.sum(axis=1)  # items x categories, all equal to r_i
        agreeing = (binary * (binary - 1)).sum(axis=1) / (per_item * (per_item - 1))
        present = binary[:, 1, :]
        features = np.column_stack([agreeing, present, per_item[:, :1]])
        k = present.shape[1]
        n_items = self.n_items

        def fleiss(sums: NDArray[np.float64]) -> NDArray[np.float64]:
            observed = sums[:, :k] / n_items
            share = sums[:, k : 2 * k] / sums[:, 2 * k :]
            expected = share**2 + (1.0 - share) ** 2
            with np.errstate(divide="ignore", invalid="ignore"):
                kappa = (observed - expected) / (1.0 - expected)
            return finite_mean(np.where(1.0 - expected > 1e-12, kappa, np.nan), axis=1)

        return resample_sums(multiplicities, features, fleiss)

    def alpha_resampled(self, multiplicities: list) -> NDArray[np.float64] | None:
        # Imported here: only a bootstrap needs it, and every process loading the URLconf would
        # pay its import.
        from scipy import sparse

        if len(self.sets) > MAX_SETS_FOR_BOOTSTRAP:
            return None
        grid, rated = self.ratings.grid, self.ratings.rated
        observed = item_observed_disagreement(self.sets, grid, rated, "masi")
        per_item = rated.sum(axis=1).astype(np.float64)
        # Items x sets counts have at most one entry per rating: as a sparse matrix, a chunk's
        # set frequencies cost the ratings times the resamples, not the items times the sets.
        item_index, annotator_index = np.nonzero(rated)
        frequency = sparse.csr_matrix(
            (
                np.ones(len(item_index)),
                (item_index, grid[item_index, annotator_index]),
            ),
            shape=(self.n_items, len(self.sets)),
        ).T.tocsr()
        distances = self.sets.distance_matrix("masi")
        alphas = []
        for multiplicity in multiplicities:
            weights = multiplicity.astype(np.float64)
            counts = (frequency @ weights.T).T  # resamples x sets
            n_values = weights @ per_item
            expected = ((counts @ distances) * counts).sum(axis=1)
            with np.errstate(divide="ignore", invalid="ignore"):
                value = 1.0 - ((weights @ observed) / n_values) / (
                    expected / (n_values * (n_values - 1))
                )
            alphas.append(np.where(expected > 1e-12, value, np.nan))
        return np.concatenate(alphas)

    def extra_warnings(self, bootstrap: int) -> list[Warning]:
        if bootstrap and len(self.sets) > MAX_SETS_FOR_BOOTSTRAP:
            return [
                Warning(
                    "alpha_not_resampled",
                    f"{len(self.sets)} distinct label sets (more than "
                    f"{MAX_SETS_FOR_BOOTSTRAP}): Krippendorff's α gets no bootstrap interval.",
                )
            ]
        return []


def _pair_sizes_from_sums(sums: NDArray[np.float64], n_pairs: int) -> NDArray[np.float64]:
    """(resamples x columns) feature sums -> (resamples x pairs) shared items of each pair."""
    return sums.reshape(sums.shape[0], n_pairs, -1)[..., 0]
