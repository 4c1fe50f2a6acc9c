"""Agreement on label sets (multi-label dimensions): the MASI distance (Passonneau 2006) and the
Jaccard distance, Krippendorff's alpha with either, and mean pairwise set similarities.

Label sets are coded as rows of a membership matrix (distinct sets x categories) and compared as
bit masks, so that a dimension with many ratings costs a handful of array operations.
"""

from __future__ import annotations

from collections.abc import Collection

import numpy as np
from numpy.typing import NDArray

from labeling.agreement.numbers import finite_or_none

SET_DISTANCES = ("masi", "jaccard")

# Distinct label sets compared at once when computing an alpha's expected disagreement.
_BLOCK_ROWS = 1024


def masi_distance(labels_a: Collection[str], labels_b: Collection[str]) -> float:
    """MASI distance (Passonneau 2006) between two label sets: 1 - Jaccard * monotonicity.

    Monotonicity is 1 for identical sets, 2/3 when one contains the other, 1/3 when they
    overlap otherwise and 0 when disjoint. Two empty sets are identical (distance 0); an empty
    and a non-empty set are at distance 1.
    """
    first, second = set(labels_a), set(labels_b)
    distance = set_distance(
        "masi", np.array(len(first & second)), np.array(len(first)), np.array(len(second))
    )
    return float(distance)


def jaccard_distance(labels_a: Collection[str], labels_b: Collection[str]) -> float:
    """1 - |A & B| / |A | B|; two empty sets are identical (distance 0)."""
    first, second = set(labels_a), set(labels_b)
    distance = set_distance(
        "jaccard", np.array(len(first & second)), np.array(len(first)), np.array(len(second))
    )
    return float(distance)


def set_distance(kind: str, shared: NDArray, size_a: NDArray, size_b: NDArray) -> NDArray:
    """MASI or Jaccard distance from |A & B|, |A| and |B| (broadcast)."""
    union = size_a + size_b - shared
    shared, union = np.broadcast_arrays(np.asarray(shared, np.float64), union)
    # Two empty sets are identical: Jaccard 1 by convention instead of 0/0.
    jaccard = np.divide(shared, union, out=np.ones(shared.shape), where=union > 0)
    if kind == "jaccard":
        return 1.0 - jaccard
    if kind != "masi":
        raise ValueError(f"distance must be one of {SET_DISTANCES}, not {kind!r}")
    identical = union == shared
    nested = shared == np.minimum(size_a, size_b)
    # Monotonicity 1, 2/3 or 1/3 (identical implies nested); disjoint sets have Jaccard 0, so
    # their monotonicity of 0 needs no case of its own.
    return 1.0 - jaccard * ((1.0 + identical + nested) / 3.0)


def bit_masks(members: NDArray[np.bool_]) -> NDArray[np.uint64]:
    """Rows of a membership matrix as bit masks, one row of 64-bit words each."""
    packed = np.packbits(members, axis=1)
    n_words = max(1, -(-packed.shape[1] // 8))
    padded = np.zeros((len(packed), 8 * n_words), dtype=np.uint8)
    padded[:, : packed.shape[1]] = packed
    return padded.view(np.uint64)


def shared_members(masks_a: NDArray[np.uint64], masks_b: NDArray[np.uint64]) -> NDArray:
    """|A & B| from bit masks (broadcast over leading axes)."""
    return np.bitwise_count(masks_a & masks_b).sum(axis=-1, dtype=np.int64)


class LabelSets:
    """The distinct label sets of a dimension (sets x categories membership), with the
    distances between any of them computed on demand."""

    def __init__(self, members: NDArray[np.bool_]) -> None:
        self.members = members
        self.masks = bit_masks(members)
        self.sizes = members.sum(axis=1)

    def __len__(self) -> int:
        return len(self.members)

    def distance(self, kind: str, codes_a: NDArray, codes_b: NDArray) -> NDArray[np.float64]:
        """Distances between the sets of two aligned (or broadcastable) code arrays."""
        return set_distance(
            kind,
            shared_members(self.masks[codes_a], self.masks[codes_b]),
            self.sizes[codes_a],
            self.sizes[codes_b],
        )

    def distance_matrix(self, kind: str) -> NDArray[np.float64]:
        codes = np.arange(len(self))
        return self.distance(kind, codes[:, np.newaxis], codes[np.newaxis, :])

    def expected_total(self, kind: str, frequency: NDArray[np.float64]) -> float:
        """sum_ck f_c f_k distance_ck, in blocks of sets to bound memory."""
        total = 0.0
        everything = np.arange(len(self))
        for start in range(0, len(self), _BLOCK_ROWS):
            block = everything[start : start + _BLOCK_ROWS]
            distances = self.distance(kind, block[:, np.newaxis], everything[np.newaxis, :])
            total += float(frequency[block] @ distances @ frequency)
        return total


def set_alpha(
    sets: LabelSets, grid: NDArray[np.intp], rated: NDArray[np.bool_], kind: str
) -> float | None:
    """Krippendorff's alpha of label sets with a set distance (MASI or Jaccard).

    ``grid`` is items x annotators of label-set codes (-1 unrated). Observed: every ordered pair
    of values within an item, weighted 1 / (m_u - 1); expected: every pair of pairable values.
    """
    observed_total, n_values, frequency = set_alpha_terms(sets, grid, rated, kind)
    if n_values < 2:
        return None
    expected_total = sets.expected_total(kind, frequency)
    if expected_total <= 1e-12:
        return None
    observed = observed_total / n_values
    expected = expected_total / (n_values * (n_values - 1))
    return finite_or_none(1.0 - observed / expected)


def set_alpha_terms(
    sets: LabelSets, grid: NDArray[np.intp], rated: NDArray[np.bool_], kind: str
) -> tuple[float, float, NDArray[np.float64]]:
    """Observed disagreement total, pairable values and set frequencies of :func:`set_alpha`."""
    observed = item_observed_disagreement(sets, grid, rated, kind)
    pairable = rated.sum(axis=1) >= 2
    frequency = np.bincount(grid[rated & pairable[:, np.newaxis]], minlength=len(sets))
    return float(observed.sum()), float(frequency.sum()), frequency.astype(np.float64)


def item_observed_disagreement(
    sets: LabelSets, grid: NDArray[np.intp], rated: NDArray[np.bool_], kind: str
) -> NDArray[np.float64]:
    """Per item: sum over ordered pairs of its values of distance / (m_u - 1) (0 when the item
    is not pairable)."""
    per_item = rated.sum(axis=1)
    total = np.zeros(grid.shape[0])
    for a in range(grid.shape[1]):
        for b in range(a + 1, grid.shape[1]):
            both = rated[:, a] & rated[:, b]
            distance = sets.distance(kind, grid[both, a], grid[both, b])
            total[both] += 2.0 * distance / (per_item[both] - 1)
    return total
