"""Numeric core shared by the meta-evaluation modules and calibration: correlations of many small groups at
once. It sits below both (plain functions over arrays, nothing of judging), so calibration, which reads
results, never imports the meta-evaluation package above it.

Meta-evaluation computes the same correlation over many groups (100 documents for sample-level,
12 systems for P_i and R_i) and again for each bootstrap resample or permutation. Computing all
groups of one size as rows of a matrix keeps that fast without a second, approximate code path:
Spearman is Pearson on average ranks and Kendall tau-b is sum(sgn dx * sgn dy) / sqrt(sum sgn dx^2 *
sum sgn dy^2) over pairs, both exactly what ``scipy.stats`` returns (the tests check this).
Groups larger than ``_PAIRWISE_LIMIT`` use ``scipy.stats.kendalltau`` (O(n log n)).

Undefined correlations (fewer than two items, or a constant side) are never NaN to callers: they
come back as ``None`` with a reason.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal

import numpy as np
from scipy import stats

from judgesdk.core import InputError

Method = Literal["spearman", "pearson", "kendall"]
METHODS: tuple[Method, ...] = ("spearman", "pearson", "kendall")

_PAIRWISE_LIMIT = 300


def check_method(method: str) -> Method:
    """``method`` (a correlation's name, as a user typed it) as a :data:`Method`; an :class:`InputError` naming
    the known ones (:data:`METHODS`) when it is none of them."""
    if method not in METHODS:
        raise InputError(f"unknown correlation method {method!r}: use one of {', '.join(METHODS)}")
    return method


def _rowwise_pearson(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    xc = x - x.mean(axis=1, keepdims=True)
    yc = y - y.mean(axis=1, keepdims=True)
    denom = np.sqrt((xc * xc).sum(axis=1) * (yc * yc).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.clip((xc * yc).sum(axis=1) / denom, -1.0, 1.0)


def _rowwise_kendall(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    iu = np.triu_indices(x.shape[1], k=1)
    sx = np.sign(x[:, :, None] - x[:, None, :])[:, iu[0], iu[1]]
    sy = np.sign(y[:, :, None] - y[:, None, :])[:, iu[0], iu[1]]
    denom = np.sqrt(np.abs(sx).sum(axis=1) * np.abs(sy).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return (sx * sy).sum(axis=1) / denom


def rowwise(x: np.ndarray, y: np.ndarray, method: Method) -> np.ndarray:
    """Correlation of each row of ``x`` with the same row of ``y`` (2-D, equal shapes)."""
    if method == "pearson":
        return _rowwise_pearson(x, y)
    if method == "spearman":
        return _rowwise_pearson(stats.rankdata(x, axis=1), stats.rankdata(y, axis=1))
    if x.shape[1] > _PAIRWISE_LIMIT:
        return np.array([stats.kendalltau(a, b).statistic for a, b in zip(x, y)], dtype=float)
    return _rowwise_kendall(x, y)


def is_constant(values: np.ndarray) -> bool:
    return values.size == 0 or bool(np.all(values == values.flat[0]))


UNDEFINED_REASONS = ("too_few_items", "constant_x", "constant_y")


def group_values(
    x: np.ndarray, y: np.ndarray, groups: np.ndarray, n_groups: int, method: Method, constant_y_as_zero: bool
) -> tuple[np.ndarray, list[str | None]]:
    """Correlation of ``x`` and ``y`` within each group code 0..n_groups-1.

    ``x``, ``y``: the paired values (1-D, equal lengths); ``groups``: each pair's group code; ``n_groups``: how many
    groups there are (a code with no pairs is "too_few_items"); ``method``: spearman, pearson or kendall.
    Returns the values (NaN where undefined, for internal use only) and, per group, None or the
    reason it is undefined: "too_few_items" (< 2), "constant_x", "constant_y". With
    ``constant_y_as_zero`` a constant y (x not constant) gives 0.0 instead (004's convention) and
    the reason "constant_y_as_zero".
    """
    values = np.full(n_groups, np.nan)
    reasons: list[str | None] = [None] * n_groups
    order = np.argsort(groups, kind="stable")
    codes = groups[order]
    starts = np.searchsorted(codes, np.arange(n_groups), side="left")
    ends = np.searchsorted(codes, np.arange(n_groups), side="right")
    sizes = ends - starts
    by_size: dict[int, list[int]] = {}
    for g in range(n_groups):
        xs, ys = x[order[starts[g] : ends[g]]], y[order[starts[g] : ends[g]]]
        if sizes[g] < 2:
            reasons[g] = "too_few_items"
        elif is_constant(xs):
            reasons[g] = "constant_x"
        elif is_constant(ys):
            reasons[g] = "constant_y_as_zero" if constant_y_as_zero else "constant_y"
            if constant_y_as_zero:
                values[g] = 0.0
        else:
            by_size.setdefault(int(sizes[g]), []).append(g)
    for size, members in by_size.items():
        idx = np.stack([order[starts[g] : starts[g] + size] for g in members])
        values[members] = rowwise(x[idx], y[idx], method)
    return values, reasons


def single_value(x: np.ndarray, y: np.ndarray, method: Method, constant_y_as_zero: bool) -> tuple[float | None, str | None]:
    """One correlation of ``x`` with ``y`` (1-D, equal lengths) by ``method``, with the same rules as
    :func:`group_values` (``constant_y_as_zero`` included): the value and None, or None and a reason when
    undefined."""
    if len(x) < 2:
        return None, "too_few_items"
    if is_constant(x):
        return None, "constant_x"
    if is_constant(y):
        return (0.0, "constant_y_as_zero") if constant_y_as_zero else (None, "constant_y")
    if method == "kendall" and len(x) > _PAIRWISE_LIMIT:
        return float(stats.kendalltau(x, y).statistic), None
    return float(rowwise(x[None, :], y[None, :], method)[0]), None


def p_value(x: np.ndarray, y: np.ndarray, method: Method) -> float | None:
    """Two-sided p-value of the ``method`` correlation of ``x`` with ``y``, from scipy (t-distribution for
    Pearson/Spearman, exact/normal for Kendall); None with fewer than 3 pairs, a constant side, or a NaN result."""
    if len(x) < 3 or is_constant(x) or is_constant(y):
        return None
    tests: dict[str, Callable[[np.ndarray, np.ndarray], Any]] = {"spearman": stats.spearmanr, "pearson": stats.pearsonr, "kendall": stats.kendalltau}
    fn = tests[method]
    p = float(fn(x, y).pvalue)
    return None if np.isnan(p) else p


def finite_or_none(value: float) -> float | None:
    return None if value is None or not np.isfinite(value) else float(value)
