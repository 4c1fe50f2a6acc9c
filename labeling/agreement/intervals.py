"""Percentile bootstrap intervals (Efron & Tibshirani 1993, ch. 13) over items: a resample draws
items with replacement, each with all its ratings, and every coefficient is recomputed on it.

A coefficient that is a function of per-item sums is resampled as one matrix product: a
resample is a row of item multiplicities, so its sums are ``multiplicity @ features``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import NDArray

from labeling.agreement.numbers import CONFIDENCE_LEVEL

# Entries of the resample-by-item multiplicity matrix held at once; bounds bootstrap memory
# (about 100 MB peak) whatever the study size.
_CHUNK_CELLS = 2**22


def resample_multiplicities(n_items: int, n_resamples: int, seed: int) -> list[NDArray[np.float32]]:
    """The item multiplicities of ``n_resamples`` seeded resamples, in chunks (resamples x
    items each). Every coefficient of a report is computed on the same resamples."""
    rng = np.random.default_rng(seed)
    chunk = max(1, min(n_resamples, _CHUNK_CELLS // max(n_items, 1)))
    chunks = []
    for start in range(0, n_resamples, chunk):
        size = min(chunk, n_resamples - start)
        draws = rng.integers(0, n_items, size=(size, n_items))
        draws += np.arange(size)[:, np.newaxis] * n_items
        multiplicity = np.bincount(draws.ravel(), minlength=size * n_items)
        chunks.append(multiplicity.reshape(size, n_items).astype(np.float32))
    return chunks


def resample_sums(
    multiplicities: list[NDArray[np.float32]],
    features: NDArray[np.float64],
    statistic: Callable[[NDArray[np.float64]], NDArray[np.float64]],
    *,
    integral: bool = False,
) -> NDArray[np.float64]:
    """``statistic`` (resamples x columns sums -> resamples x ...) over every resample.

    ``integral``: the features are small non-negative integers, so every partial sum is an
    integer; below 2**24 float32 holds them exactly at twice the BLAS speed."""
    n_items = features.shape[0]
    exact_in_float32 = integral and n_items * float(features.max(initial=0.0)) < 2**24
    dtype = np.float32 if exact_in_float32 else np.float64
    features = features.astype(dtype)
    results = [
        statistic((multiplicity.astype(dtype) @ features).astype(np.float64))
        for multiplicity in multiplicities
    ]
    return np.concatenate(results)


def percentile_interval(samples: NDArray[np.float64]) -> list[float] | None:
    finite = samples[np.isfinite(samples)]
    if finite.size == 0:
        return None
    tail = 100.0 * (1.0 - CONFIDENCE_LEVEL) / 2.0
    low, high = np.percentile(finite, [tail, 100.0 - tail])
    return [float(low), float(high)]
