"""The two seeded resamplers behind the statistical gates: a bootstrap CI of a mean, a sign-flip test.

The CI gate is a percentile bootstrap of the mean that resamples items with replacement; the
regression gate runs a one-sided sign-flip permutation test on paired differences. Both are seeded,
so a verdict is reproducible, and both draw in bounded-memory chunks. (:mod:`judgesdk.meta.bootstrap`
resamples *correlations* over documents, a different statistic, so the two small resamplers for a
mean live here.)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def bootstrap_mean_ci(values: Sequence[float], confidence: float, n_resamples: int, seed: int) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean, resampling items with replacement (seeded).

    ``values``: one number per item; ``confidence``: the interval's level (0.95 for a 95% interval);
    ``n_resamples``: how many resamples; ``seed``: the generator's seed (the same seed, the same interval).
    Returns the interval's (low, high) bounds."""
    v = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    means = np.concatenate(
        [v[rng.integers(0, len(v), (size, len(v)))].mean(axis=1) for size in _chunks(n_resamples, len(v))]
    )
    alpha = (1 - confidence) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    return float(low), float(high)


def sign_flip_p(shifted: Sequence[float] | np.ndarray, n_permutations: int, seed: int) -> float:
    """One-sided p of mean(shifted) < 0 against H0 "differences symmetric around 0" (paired sign flips).

    ``shifted``: the paired differences; ``n_permutations``: how many random sign flips to draw; ``seed``: the
    generator's seed. Returns ``(1 + hits) / (1 + n_permutations)``, hits being the flips whose mean is at most
    the observed one, so it is never 0."""
    d = np.asarray(shifted, dtype=float)
    observed = d.mean()
    rng = np.random.default_rng(seed)
    hits = 0
    for size in _chunks(n_permutations, len(d)):
        signs = rng.choice((-1.0, 1.0), size=(size, len(d)))
        hits += int(((signs * d).mean(axis=1) <= observed + 1e-12).sum())
    return (1 + hits) / (1 + n_permutations)


def _chunks(total: int, width: int, cells: int = 2_000_000) -> list[int]:
    """Row counts summing to ``total`` with at most ``cells`` matrix cells each (bounded memory)."""
    step = max(1, cells // max(width, 1))
    return [min(step, total - start) for start in range(0, total, step)]
