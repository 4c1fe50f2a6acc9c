"""Fleiss' kappa for many annotators: the classic coefficient (Fleiss 1971), its
category-specific kappas, and Gwet's (2014) generalisation to unequal numbers of ratings.

Input is an items x categories table of rating counts n_ik; r_i = sum_k n_ik is the number of
ratings of item i.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

from labeling.agreement.numbers import finite_or_none


def fleiss_kappa(counts: ArrayLike) -> float | None:
    """Fleiss' (1971) kappa on the items with two or more ratings.

    P_i = sum_k n_ik (n_ik - 1) / (r (r - 1)), P_o = mean_i P_i, p_k = sum_i n_ik / (N r),
    P_e = sum_k p_k^2, kappa = (P_o - P_e) / (1 - P_e). The coefficient is defined for a
    constant number of ratings r per item: with unequal r_i it is None (see
    :func:`fleiss_kappa_gwet`), never silently another coefficient.
    """
    table = _rated_twice(counts)
    if not ratings_are_equal(table):
        return None
    return finite_or_none(classic_kernel(table[:, :, np.newaxis])[0])


def fleiss_kappa_gwet(counts: ArrayLike) -> float | None:
    """Gwet's (2014, *Handbook of Inter-Rater Reliability*, 4th ed., ch. 2) generalisation of
    Fleiss' kappa to items with unequal numbers of ratings, as the R package irrCAC computes it
    (``fleiss.kappa.raw``): the observed agreement averages P_i = sum_k n_ik (n_ik - 1) /
    (r_i (r_i - 1)) over the items with r_i >= 2, and the chance term uses category shares
    pi_k = mean_i (n_ik / r_i) over EVERY rated item, single-rated ones included. With equal
    r_i (and no single-rated item) it is exactly Fleiss (1971)."""
    table = _as_table(counts)
    table = table[table.sum(axis=1) >= 1]
    return finite_or_none(gwet_kernel(table[:, :, np.newaxis])[0])


def category_fleiss_kappas(counts: ArrayLike) -> NDArray[np.float64]:
    """Fleiss' (1971) category-specific kappa_j for every category (NaN where undefined, or
    all NaN when the items carry unequal numbers of ratings):

        kappa_j = 1 - sum_i n_ij (r - n_ij) / (N r (r - 1) p_j (1 - p_j))

    which is the Fleiss kappa of category j against all the others taken as one."""
    table = _rated_twice(counts)
    n_categories = table.shape[1] if table.ndim == 2 else 0
    if not ratings_are_equal(table):
        return np.full(n_categories, np.nan)
    return classic_kernel(one_vs_rest(table))


def one_vs_rest(table: NDArray[np.float64]) -> NDArray[np.float64]:
    """items x categories -> items x 2 x categories: (rest, category) counts per category."""
    ratings = table.sum(axis=1, keepdims=True)
    return np.stack([ratings - table, table], axis=1)


def ratings_are_equal(table: NDArray[np.float64]) -> bool:
    """True when every item of the table carries the same number of ratings."""
    if table.shape[0] == 0:
        return True
    ratings = table.sum(axis=1)
    return bool(np.all(ratings == ratings[0]))


def classic_kernel(table: NDArray[np.float64]) -> NDArray[np.float64]:
    """Fleiss (1971) for a batch of tables at once: ``table`` is items x values x batch, every
    item with the same r >= 2 ratings; one kappa per batch entry, NaN where undefined."""
    n_items, _, batch = table.shape
    if n_items == 0:
        return np.full(batch, np.nan)
    ratings = table.sum(axis=1)  # items x batch
    agreeing_pairs = (table * (table - 1)).sum(axis=1) / (ratings * (ratings - 1))
    observed = agreeing_pairs.mean(axis=0)
    shares = table.sum(axis=0) / ratings.sum(axis=0)
    expected = (shares**2).sum(axis=0)
    return _kappa(observed, expected)


def gwet_kernel(table: NDArray[np.float64]) -> NDArray[np.float64]:
    """Gwet's generalisation (see :func:`fleiss_kappa_gwet`) for a batch of tables: items x
    values x batch, every item with at least one rating."""
    n_items, _, batch = table.shape
    ratings = table.sum(axis=1)  # items x batch
    paired = ratings >= 2
    if n_items == 0 or not paired.any():
        return np.full(batch, np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        agreeing = (table * (table - 1)).sum(axis=1) / (ratings * (ratings - 1))
    observed = np.where(paired, agreeing, 0.0).sum(axis=0) / paired.sum(axis=0)
    shares = (table / ratings[:, np.newaxis, :]).mean(axis=0)
    expected = (shares**2).sum(axis=0)
    return _kappa(observed, expected)


def _kappa(observed: NDArray[np.float64], expected: NDArray[np.float64]) -> NDArray[np.float64]:
    # expected is exactly 1.0 when one value takes every rating; the margin absorbs rounding.
    defined = 1.0 - expected > 1e-12
    with np.errstate(divide="ignore", invalid="ignore"):
        kappa = (observed - expected) / (1.0 - expected)
    return np.where(defined, kappa, np.nan)


def _as_table(counts: ArrayLike) -> NDArray[np.float64]:
    table = np.asarray(counts, dtype=np.float64)
    if table.ndim != 2:
        raise ValueError("counts must be an items x categories matrix")
    return table


def _rated_twice(counts: ArrayLike) -> NDArray[np.float64]:
    table = _as_table(counts)
    return table[table.sum(axis=1) >= 2]
