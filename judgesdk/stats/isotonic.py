"""Monotone least-squares fits: the isotonic (pool-adjacent-violators) and the linear map.

Calibration (:mod:`judgesdk.meta.calibration`) maps judge scores onto the human scale with them, and the fused
judge (:mod:`judgesdk.fused.fit`) calibrates its ridge output with :func:`pava`. PAVA is written here because
:func:`scipy.optimize.isotonic_regression` only exists from SciPy 1.12 and judgesdk supports SciPy >= 1.10;
the tests check that both agree.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["fit_isotonic", "fit_linear", "pava"]


def pava(y: Sequence[float] | np.ndarray, weights: Sequence[float] | np.ndarray | None = None) -> np.ndarray:
    """Weighted least-squares non-decreasing fit of ``y`` (already ordered by x): pool adjacent violators.

    Each block holds (weighted mean, total weight, length); a new value is merged backwards while it
    is below the previous block's mean. O(n). ``weights``: each value's weight (all 1 when None). Returns the
    fitted values, one per value of ``y``.
    """
    values = np.asarray(y, dtype=float)
    w = np.ones_like(values) if weights is None else np.asarray(weights, dtype=float)
    means: list[float] = []
    totals: list[float] = []
    lengths: list[int] = []
    for value, weight in zip(values, w):
        means.append(float(value))
        totals.append(float(weight))
        lengths.append(1)
        while len(means) > 1 and means[-2] > means[-1]:
            weight_sum = totals[-2] + totals[-1]
            merged = (means[-2] * totals[-2] + means[-1] * totals[-1]) / weight_sum
            length = lengths[-2] + lengths[-1]
            del means[-1], totals[-1], lengths[-1]
            means[-1], totals[-1], lengths[-1] = merged, weight_sum, length
    return np.repeat(means, lengths)


def fit_isotonic(x: np.ndarray, y: np.ndarray) -> tuple[list[float], list[float]]:
    """Knots of the isotonic fit of labels ``y`` on judge scores ``x``: tied judge scores are pooled first (mean
    label, weight = count). Returns the distinct scores, sorted, and the fitted (non-decreasing) label at each."""
    knots, inverse, counts = np.unique(x, return_inverse=True, return_counts=True)
    means = np.bincount(inverse, weights=y) / counts
    return knots.tolist(), pava(means, counts).tolist()


def fit_linear(x: np.ndarray, y: np.ndarray) -> tuple[float, float]:
    """The least-squares line of labels ``y`` on judge scores ``x``, as (slope, intercept); a constant ``x``
    (possible inside a cross-validation fold) gives slope 0 and the mean label."""
    spread = float(((x - x.mean()) ** 2).sum())
    if spread == 0.0:
        return 0.0, float(y.mean())
    slope = float(((x - x.mean()) * (y - y.mean())).sum() / spread)
    return slope, float(y.mean() - slope * x.mean())
