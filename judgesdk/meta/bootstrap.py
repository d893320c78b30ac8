"""Uncertainty of a level correlation: bootstrap CIs and a paired permutation test.

Both resample at the level at which a benchmark was drawn. The bootstrap resamples *documents*
with replacement (all systems' outputs for a document travel together), as in Deutsch, Dror and
Roth (2021, "A statistical analysis of summarization evaluation metrics using resampling
methods"): a benchmark is a sample of inputs, and the systems are fixed. Each resample recomputes
exactly the statistic of :func:`judgesdk.meta.correlation.level_correlation` (same level, method
and convention); resamples where it is undefined are counted, not imputed.

The permutation test asks whether judge X correlates better with humans than judge Y on the same
items. Under H0 the two judges are exchangeable, so each item's pair of predictions is swapped with
probability 1/2 (after standardising each judge's predictions to mean 0, sd 1 so that judges on
different scales can be swapped; every level correlation is invariant to that affine change, so the
observed difference is unchanged). p = (1 + #{|d*| >= |d|}) / (1 + n_permutations).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel

from judgesdk.core import InputError
from judgesdk.meta.correlation import Convention, LevelStatistic, effective_level, get_convention, paired_frame, prepared_frame
from judgesdk.meta.items import ScoredItem
from judgesdk.stats import check_method

__all__ = ["BootstrapCI", "PermutationTest", "bootstrap_ci", "permutation_test"]


class BootstrapCI(BaseModel):
    """Percentile bootstrap interval of a level correlation over resampled documents."""

    level: str
    method: str
    convention: str
    estimate: float | None
    low: float | None
    high: float | None
    confidence: float
    n_resamples: int
    n_undefined: int  # resamples whose statistic was undefined (left out of the percentiles)
    n_documents: int
    seed: int


def _check_positive(name: str, value: int) -> None:
    if value < 1:
        raise InputError(f"{name} must be at least 1, got {value}")


def bootstrap_ci(
    items: Sequence[ScoredItem],
    level: str = "summary",
    method: str = "spearman",
    convention: str | Convention = "skip-and-count",
    n_resamples: int = 1000,
    confidence: float = 0.95,
    seed: int = 0,
) -> BootstrapCI:
    """Percentile CI of :func:`level_correlation` by resampling documents with replacement (seeded).

    ``items`` are the judged items with their human scores; ``level``, ``method`` (spearman, pearson or kendall)
    and ``convention`` (a name or a :class:`~judgesdk.meta.correlation.Convention`) pick the statistic, as in
    :mod:`judgesdk.meta.correlation`. ``n_resamples`` draws of the documents (at least 1) with ``seed`` give the
    ``confidence`` interval (in (0, 1), else :class:`~judgesdk.core.errors.InputError`). Returns a
    :class:`BootstrapCI`: the estimate on all documents, the bounds (None when every resample is undefined) and
    how many resamples were undefined.
    """
    _check_positive("n_resamples", n_resamples)
    if not 0 < confidence < 1:
        raise InputError(f"confidence must lie in (0, 1), e.g. 0.95; got {confidence}")
    conv = get_convention(convention)
    lv = effective_level(conv, level)
    frame, _ = prepared_frame(items, conv)
    stat = LevelStatistic(frame, lv, check_method(method), conv)
    rng = np.random.default_rng(seed)
    n_docs = len(frame.doc_names)
    draws = [stat(docs=rng.integers(0, n_docs, n_docs))[0] for _ in range(n_resamples)]
    defined = np.array([d for d in draws if d is not None], dtype=float)
    alpha = (1 - confidence) / 2
    low, high = (float(q) for q in np.quantile(defined, [alpha, 1 - alpha])) if defined.size else (None, None)
    return BootstrapCI(
        level=lv,
        method=method,
        convention=conv.name,
        estimate=stat()[0],
        low=low,
        high=high,
        confidence=confidence,
        n_resamples=n_resamples,
        n_undefined=n_resamples - int(defined.size),
        n_documents=n_docs,
        seed=seed,
    )


class PermutationTest(BaseModel):
    """Paired permutation test of corr(X, human) - corr(Y, human) on the same items."""

    level: str
    method: str
    convention: str
    value_x: float | None
    value_y: float | None
    difference: float | None
    p_value: float | None
    alternative: Literal["two-sided", "greater"]
    n_items: int  # items where both judges have a prediction
    n_dropped: int  # items missing or unparsed in either judge (dropped under every convention but geval)
    n_permutations: int
    seed: int


def _standardise(v: np.ndarray) -> np.ndarray:
    sd = v.std()
    return (v - v.mean()) / sd if sd > 0 else v - v.mean()


def permutation_test(
    items_x: Sequence[ScoredItem],
    items_y: Sequence[ScoredItem],
    level: str = "summary",
    method: str = "spearman",
    convention: str | Convention = "skip-and-count",
    n_permutations: int = 1000,
    seed: int = 0,
    alternative: Literal["two-sided", "greater"] = "two-sided",
) -> PermutationTest:
    """Is judge X more correlated with humans than judge Y? (paired, per-item swaps; see module doc).

    ``alternative="greater"`` tests X > Y one-sided. Items are joined on (doc_id, system_id).
    ``items_x`` and ``items_y`` are the two judges' items with the human scores; ``level``, ``method`` and
    ``convention`` pick the statistic (as :func:`bootstrap_ci`); ``n_permutations`` random swaps (at least 1)
    with ``seed``. Returns a :class:`PermutationTest`: each judge's value, their difference and its p-value
    (None when a value is undefined), and how many items were joined and dropped.
    """
    _check_positive("n_permutations", n_permutations)
    if alternative not in ("two-sided", "greater"):
        raise InputError(f"alternative must be 'two-sided' or 'greater', got {alternative!r}")
    conv = get_convention(convention)
    lv = effective_level(conv, level)
    frame, pred_y, dropped = paired_frame(items_x, items_y, conv)
    stat = LevelStatistic(frame, lv, check_method(method), conv)
    zx, zy = _standardise(frame.prediction), _standardise(pred_y)
    vx, vy = stat(zx)[0], stat(zy)[0]
    observed = None if vx is None or vy is None else vx - vy
    p = None
    if observed is not None:
        rng = np.random.default_rng(seed)
        hits = 0
        for _ in range(n_permutations):
            swap = rng.random(len(zx)) < 0.5
            a, b = stat(np.where(swap, zy, zx))[0], stat(np.where(swap, zx, zy))[0]
            d = 0.0 if a is None or b is None else a - b
            hits += (abs(d) >= abs(observed) - 1e-12) if alternative == "two-sided" else (d >= observed - 1e-12)
        p = (1 + hits) / (1 + n_permutations)
    return PermutationTest(
        level=lv,
        method=method,
        convention=conv.name,
        value_x=vx,
        value_y=vy,
        difference=observed,
        p_value=p,
        alternative=alternative,
        n_items=len(frame),
        n_dropped=dropped,
        n_permutations=n_permutations,
        seed=seed,
    )
