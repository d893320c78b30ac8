"""Intervals of plain estimates: the :class:`Interval` every corrected estimate reports, and the two plain
intervals beside them: a mean's normal (CLT) interval and a share's Wilson score interval.

Shared by :mod:`judgesdk.stats.ppi` (PPI++ for a mean) and :mod:`judgesdk.stats.pass_rate` (Rogan–Gladen for a
pass rate), which report their corrected, human-only and judge-only figures as :class:`Interval`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict
from scipy import stats

__all__ = ["Interval", "finite_array", "mean_interval", "normal_quantile", "proportion_interval"]


class Interval(BaseModel):
    """A point estimate with its two-sided interval, and the number of observations it rests on."""

    model_config = ConfigDict(frozen=True)

    estimate: float
    low: float
    high: float
    n: int
    method: str

    @property
    def width(self) -> float:
        return self.high - self.low


def normal_quantile(confidence: float) -> float:
    """The two-sided normal quantile ``z_{1-alpha/2}`` of ``confidence`` (in (0, 1); ValueError otherwise)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    return float(stats.norm.ppf(1 - (1 - confidence) / 2))


def finite_array(values: Sequence[float] | np.ndarray, name: str) -> np.ndarray:
    """``values`` as a flat float array; ValueError naming ``name`` (what the values are) when one is not finite."""
    a = np.asarray(values, dtype=float).reshape(-1)
    if not np.all(np.isfinite(a)):
        raise ValueError(f"{name} must be finite numbers")
    return a


def mean_interval(values: Sequence[float] | np.ndarray, confidence: float = 0.95, method: str = "normal") -> Interval:
    """Mean with the normal (CLT) interval ``mean -/+ z * sd / sqrt(n)`` (sd with ddof 0, as ppi_py's
    ``classical_mean_ci``), i.e. PPI++ with lam = 0."""
    v = finite_array(values, "values")
    if len(v) == 0:
        raise ValueError("no values")
    mean = float(v.mean())
    half = normal_quantile(confidence) * float(v.std()) / math.sqrt(len(v))
    return Interval(estimate=mean, low=mean - half, high=mean + half, n=len(v), method=method)


def proportion_interval(successes: int, n: int, confidence: float = 0.95) -> Interval:
    """A share with its Wilson score interval (honest near 0 and 1, unlike the Wald interval).

    ``successes`` of ``n`` observations, at two-sided ``confidence``; a ValueError when ``n`` is not positive or
    ``confidence`` is outside (0, 1)."""
    if n <= 0:
        raise ValueError("no observations")
    z = normal_quantile(confidence)
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return Interval(estimate=p, low=max(0.0, centre - half), high=min(1.0, centre + half), n=n, method="wilson")
