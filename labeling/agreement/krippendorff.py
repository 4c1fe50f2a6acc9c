"""Krippendorff's alpha (Krippendorff 2011, "Computing Krippendorff's Alpha-Reliability"; 2019,
*Content Analysis*, ch. 12) at the nominal, ordinal, interval and ratio levels, from the
coincidence matrix, and for label sets with a set distance (MASI or Jaccard).

alpha = 1 - D_o / D_e, where D_o = sum_ck o_ck delta2_ck / n and D_e = sum_ck n_c n_k delta2_ck /
(n (n - 1)). Missing ratings simply do not appear; an item with fewer than two values is not
pairable and is left out.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import ArrayLike, NDArray

from labeling.agreement.numbers import finite_or_none

LEVELS = ("nominal", "ordinal", "interval", "ratio")


def krippendorff_alpha(
    counts: ArrayLike, *, level: str = "nominal", values: Sequence[float] | None = None
) -> float | None:
    """Alpha from an items x values table of counts. ``values`` are the numbers of the columns
    (interval and ratio use them; ordinal uses only their order; position 1..n when absent)."""
    table = pairable(counts)
    coincidence = coincidences(table)
    return finite_or_none(alpha_from_coincidences(coincidence[np.newaxis], level, values)[0])


def krippendorff_alpha_nominal(counts: ArrayLike) -> float | None:
    """Krippendorff's nominal alpha from an items x values table of counts."""
    return krippendorff_alpha(counts, level="nominal")


def pairable(counts: ArrayLike) -> NDArray[np.float64]:
    table = np.asarray(counts, dtype=np.float64)
    if table.ndim != 2:
        raise ValueError("counts must be an items x values matrix")
    return table[table.sum(axis=1) >= 2]


def coincidences(table: NDArray[np.float64]) -> NDArray[np.float64]:
    """The values x values coincidence matrix o_ck = sum_u (n_uc n_uk - [c = k] n_uc) / (m_u - 1)
    of pairable items."""
    return item_coincidences(table).sum(axis=0)


def item_coincidences(table: NDArray[np.float64]) -> NDArray[np.float64]:
    """Each pairable item's share of the coincidence matrix: items x values x values."""
    per_item = table.sum(axis=1)
    outer = table[:, :, np.newaxis] * table[:, np.newaxis, :]
    diagonal = np.arange(table.shape[1])
    outer[:, diagonal, diagonal] -= table
    return outer / (per_item - 1)[:, np.newaxis, np.newaxis]


def alpha_from_coincidences(
    coincidence: NDArray[np.float64], level: str, values: Sequence[float] | None = None
) -> NDArray[np.float64]:
    """Alpha of a batch of coincidence matrices (batch x values x values); NaN where undefined
    (no pairable value, or a single value used throughout: D_e = 0)."""
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}, not {level!r}")
    size = coincidence.shape[-1]
    scale = np.arange(1.0, size + 1.0) if values is None else np.asarray(values, np.float64)
    if scale.shape != (size,):
        raise ValueError("values must give one number per column")
    totals = coincidence.sum(axis=-1)  # n_c, batch x values
    n = totals.sum(axis=-1)
    delta = _metric(level, scale, totals)  # batch x values x values
    observed = (coincidence * delta).sum(axis=(-2, -1))
    expected = np.einsum("bc,bck,bk->b", totals, delta, totals) / np.maximum(n - 1, 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        alpha = 1.0 - observed / expected
    return np.where((expected > 1e-12) & (n >= 2), alpha, np.nan)


def _metric(level: str, scale: NDArray[np.float64], totals: NDArray[np.float64]) -> NDArray:
    """Squared differences delta2_ck of Krippendorff (2011), broadcast to batch x c x k."""
    batch, size = totals.shape
    if level == "nominal":
        return np.broadcast_to(1.0 - np.eye(size), (batch, size, size))
    if level == "interval":
        steps = scale[:, np.newaxis] - scale[np.newaxis, :]
        return np.broadcast_to(steps**2, (batch, size, size))
    if level == "ratio":
        steps = scale[:, np.newaxis] - scale[np.newaxis, :]
        sums = scale[:, np.newaxis] + scale[np.newaxis, :]
        ratio = np.divide(steps, sums, out=np.zeros_like(steps), where=sums != 0)
        return np.broadcast_to(ratio**2, (batch, size, size))
    # Ordinal: (sum_{g=c..k} n_g - (n_c + n_k) / 2)^2 over the values in scale order; it uses
    # only the order of the values, and the margins of each coincidence matrix.
    order = np.argsort(scale, kind="stable")
    ranked = totals[:, order]
    through = np.cumsum(ranked, axis=1)  # sum_{g <= c}
    low = through[:, :, np.newaxis] - ranked[:, :, np.newaxis]  # sum_{g < c}
    span = through[:, np.newaxis, :] - low  # sum_{g=c..k} for c <= k
    span = np.where(np.triu(np.ones((size, size), bool)), span, np.swapaxes(span, 1, 2))
    delta_ranked = (span - (ranked[:, :, np.newaxis] + ranked[:, np.newaxis, :]) / 2.0) ** 2
    back = np.argsort(order)
    return delta_ranked[:, back][:, :, back]
