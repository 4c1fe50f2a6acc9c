"""Cohen's kappa of two annotators: plain (Cohen 1960), weighted (Cohen 1968), its large-sample
standard error (Fleiss, Cohen & Everitt 1969), and positive specific agreement per category.

The point estimates are scikit-learn's (``cohen_kappa_score``); the kernels here repeat its
arithmetic on counts so that the bootstrap can run on many resamples at once.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
from numpy.typing import ArrayLike, NDArray

from labeling.agreement.numbers import Z_95, finite_or_none

WEIGHT_SCHEMES = (None, "linear", "quadratic")


def check_weights(weights: str | None) -> None:
    if weights not in WEIGHT_SCHEMES:
        raise ValueError(f"weights must be one of {WEIGHT_SCHEMES}, not {weights!r}")


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

    check_weights(weights)
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
    return finite_or_none(value)


def kappa_from_confusion(confusion: ArrayLike, weights: str | None = None) -> float | None:
    """Cohen's kappa of a square confusion matrix (rows: annotator A, columns: annotator B).

    Same arithmetic as :func:`sklearn.metrics.cohen_kappa_score` (including its unnormalised
    linear/quadratic weights); it is the kernel the vectorised bootstrap runs on.
    """
    table = _square(confusion)
    check_weights(weights)
    disagreement = disagreement_weights(table.shape[0], weights)
    kappa = kappa_from_margins(
        table.sum(),
        (disagreement * table).sum(),
        table.sum(axis=1),
        table.sum(axis=0),
        disagreement,
    )
    return finite_or_none(kappa)


def kappa_standard_error(confusion: ArrayLike, weights: str | None = None) -> float | None:
    """Large-sample standard error of (weighted) kappa, not assuming kappa = 0.

    Fleiss, Cohen & Everitt (1969), "Large sample standard errors of kappa and weighted kappa",
    Psychological Bulletin 72(5), eq. 13 (the unweighted case is the same formula with identity
    weights). With agreement weights w_ij (1 on the diagonal; 1 - |i - j| / (q - 1) linear,
    1 - (i - j)^2 / (q - 1)^2 quadratic, which give the same kappa as scikit-learn's
    disagreement weights), proportions p_ij, margins p_i. and p_.j:

        w_i. = sum_j p_.j w_ij,  w_.j = sum_i p_i. w_ij,  p_e = sum_ij p_i. p_.j w_ij
        var  = [sum_ij p_ij (w_ij - (w_i. + w_.j)(1 - kappa))^2 - (kappa - p_e (1 - kappa))^2]
               / (n (1 - p_e)^2)

    None when kappa is undefined or n < 2.
    """
    table = _square(confusion)
    check_weights(weights)
    n = table.sum()
    if n < 2:
        return None
    size = table.shape[0]
    disagreement = disagreement_weights(size, weights)
    largest = disagreement.max()
    agreement = 1.0 - disagreement / largest if largest > 0 else np.ones_like(disagreement)
    shares = table / n
    row, column = shares.sum(axis=1), shares.sum(axis=0)
    chance = float(row @ agreement @ column)
    if chance >= 1.0 - 1e-12:
        return None
    observed = float((shares * agreement).sum())
    kappa = (observed - chance) / (1.0 - chance)
    row_mean = agreement @ column  # w_i.
    column_mean = row @ agreement  # w_.j
    spread = agreement - (row_mean[:, np.newaxis] + column_mean[np.newaxis, :]) * (1.0 - kappa)
    variance = ((shares * spread**2).sum() - (kappa - chance * (1.0 - kappa)) ** 2) / (
        n * (1.0 - chance) ** 2
    )
    return math.sqrt(variance) if variance >= 0 and math.isfinite(variance) else None


def wald_interval(value: float | None, standard_error: float | None) -> list[float] | None:
    """value +- 1.96 standard errors, clipped to the coefficient's range [-1, 1]."""
    if value is None or standard_error is None:
        return None
    return [max(-1.0, value - Z_95 * standard_error), min(1.0, value + Z_95 * standard_error)]


def specific_agreement(
    used_by_a: ArrayLike, used_by_b: ArrayLike, used_by_both: ArrayLike
) -> NDArray[np.float64]:
    """Positive specific agreement per category: 2 n_cc / (n_c. + n_.c) (Spitzer & Fleiss
    1974; Cicchetti & Feinstein 1990's p_pos): of the times either annotator used the category,
    the share both did. NaN where neither used it."""
    a = np.asarray(used_by_a, dtype=np.float64)
    b = np.asarray(used_by_b, dtype=np.float64)
    both = np.asarray(used_by_both, dtype=np.float64)
    total = a + b
    return np.divide(2.0 * both, total, out=np.full(total.shape, np.nan), where=total > 0)


def disagreement_weights(n_values: int, weights: str | None) -> NDArray[np.float64]:
    """Disagreement weight matrix exactly as scikit-learn builds it (not rescaled to [0, 1])."""
    positions = np.arange(n_values, dtype=np.float64)
    steps = positions[:, np.newaxis] - positions[np.newaxis, :]
    if weights == "linear":
        return np.abs(steps)
    if weights == "quadratic":
        return steps**2
    return (steps != 0).astype(np.float64)


def kappa_from_margins(
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


def binary_kappa(
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


def _square(confusion: ArrayLike) -> NDArray[np.float64]:
    table = np.asarray(confusion, dtype=np.float64)
    if table.ndim != 2 or table.shape[0] != table.shape[1]:
        raise ValueError("confusion must be a square matrix")
    return table
