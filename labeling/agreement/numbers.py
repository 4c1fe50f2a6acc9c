"""Small numeric helpers shared by the agreement families: undefined values are NaN inside the
arrays and None at the edge, never an exception and never a silent 0 or 1."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

CONFIDENCE_LEVEL = 0.95
# The standard normal quantile of a two-sided 95% interval.
Z_95 = 1.959963984540054


def finite_or_none(value: Any) -> float | None:
    number = float(value)
    return number if math.isfinite(number) else None


def finite_mean(values: NDArray[np.float64], axis: int | None = None) -> NDArray[np.float64]:
    """Mean of the finite entries (NaN = undefined), NaN when there are none; no warnings."""
    finite = np.isfinite(values)
    count = finite.sum(axis=axis)
    total = np.where(finite, values, 0.0).sum(axis=axis)
    return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def weighted_mean(
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


def as_float_array(values: Sequence[float | None]) -> NDArray[np.float64]:
    return np.array([np.nan if value is None else value for value in values], dtype=np.float64)


def safe_divide(numerator: ArrayLike, denominator: ArrayLike) -> NDArray[np.float64]:
    """numerator / denominator, NaN where the denominator is 0."""
    numerator = np.asarray(numerator, dtype=np.float64)
    denominator = np.asarray(denominator, dtype=np.float64)
    shape = np.broadcast_shapes(numerator.shape, denominator.shape)
    return np.divide(numerator, denominator, out=np.full(shape, np.nan), where=denominator != 0)
