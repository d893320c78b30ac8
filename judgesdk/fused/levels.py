"""The fused judge's prediction as a probability per level of a scale: a distribution whose expected level is the score.

A fused fit predicts a point ``s`` on the human scale and carries the cross-validated residuals' quantiles
(``CriterionModel.residual_bounds``, per score bin in a format-2 fit: the ``(1 - level) / 2`` and
``(1 + level) / 2`` quantiles of prediction - human, 80 % by default). Their half-distance over the normal quantile
of ``(1 + level) / 2`` is the spread ``sd`` of the human score around the prediction.

**One score per judgement.** A decisions client reads a served distribution by its expected level, and
``judge.score()`` (and ``--record``) report the point ``s``; the two must be one number. So the distribution is a
normal of spread ``sd`` *discretised on the levels* (a level's probability is the normal's mass between the
midpoints to its neighbouring levels' values, the lowest and highest level taking the tails), whose location is
solved numerically (:func:`scipy.optimize.brentq`) so that the expected level equals ``s`` exactly (to 1e-10).
The expected value of a discretised normal increases strictly with its location, from the lowest level to the
highest, so for any ``s`` strictly inside the scale there is exactly one such location. Why this and not the
plain normal ``N(s - m, sd)`` binned (what was served before): cutting the tails at the scale's ends pulls the
binned mean toward the middle (3.287 served as 3.083 on the README example), so a decisions client and a
``judge.score()`` caller got different scores for one judgement. The spread is kept (the fit's own error decides
how spread the levels are); the residuals' midpoint ``m`` is not used separately, since the point score already
is the fit's estimate. A score at (or past) an end of the scale is a point mass on that end's level; a spread
too small for the normal to separate two levels is the two-level mix around ``s`` with that mean.

What this assumes, stated: a normal residual (its spread, not the quantiles' skew), one spread per score bin of
the fit (split-conformal per bin: ``judgesdk.fused.fit.conformal_bins``). How well the level probabilities are
calibrated against human ratings is measured by ``benchmarks/level_calibration.py`` where held-out predictions
are available. Used where a distribution over levels is asked for (``method_options.fused_levels``;
``judgesdk serve`` answers decision questions with it).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from judgesdk.fused.model import CriterionModel

__all__ = ["level_probabilities", "levels_with_mean"]

TOLERANCE = 1e-10  # how close the expected level is to the score


def level_probabilities(model: CriterionModel, score: float, values: Sequence[float]) -> tuple[float, ...]:
    """P(human score nearest each of ``values``) given the fused prediction ``score`` of the criterion's fitted
    ``model`` (whose residual interval sets the spread; module docstring), in the order of ``values``; their
    expected value is ``score`` (mapped onto the values' range). A scale whose range is not the fit's (a 0-4 index,
    a 1-10 scale) is mapped linearly onto the fit's ``low``-``high`` first, its lowest value to ``low`` and its
    highest to ``high``."""
    low, high = min(values), max(values)
    if (low, high) != (model.low, model.high) and high > low:
        values = [model.low + (v - low) * (model.high - model.low) / (high - low) for v in values]
    from scipy import stats  # about a second to import: only when levels are asked for, not with the fused scorer

    lo, hi = model.residual_bounds(score)
    z = float(stats.norm.ppf((1.0 + model.interval_level) / 2.0))
    return levels_with_mean([float(v) for v in values], score, max((hi - lo) / (2.0 * z), 1e-9))


def levels_with_mean(values: Sequence[float], mean: float, spread: float) -> tuple[float, ...]:
    """Probabilities over ``values`` (any order) whose expected value is ``mean`` (clipped to the values' range):
    a normal of standard deviation ``spread`` discretised on the values, its location solved so that the expected
    value is ``mean`` (module docstring)."""
    from scipy import optimize, stats

    order = sorted(range(len(values)), key=lambda i: values[i])
    ranked = [float(values[i]) for i in order]
    probs = [0.0] * len(values)
    if len(ranked) == 1 or mean <= ranked[0] or mean >= ranked[-1]:
        probs[order[0] if len(ranked) == 1 or mean <= ranked[0] else order[-1]] = 1.0
        return tuple(probs)
    edges = [(a + b) / 2.0 for a, b in zip(ranked, ranked[1:])]

    def masses(location: float) -> list[float]:
        cdf = [0.0, *(float(stats.norm.cdf(edge, loc=location, scale=spread)) for edge in edges), 1.0]
        mass = [max(cdf[k + 1] - cdf[k], 0.0) for k in range(len(ranked))]
        total = sum(mass)
        return [m / total for m in mass] if total > 0 else mass

    def gap(location: float) -> float:
        return sum(m * v for m, v in zip(masses(location), ranked)) - mean

    reach = ranked[-1] - ranked[0] + 40.0 * spread
    ranked_mass: list[float] | None = None
    try:
        location = float(optimize.brentq(gap, ranked[0] - reach, ranked[-1] + reach, xtol=1e-13, maxiter=500))
        candidate = masses(location)
        if math.isclose(sum(candidate), 1.0, abs_tol=1e-12) and abs(sum(m * v for m, v in zip(candidate, ranked)) - mean) <= TOLERANCE:
            ranked_mass = candidate
    except ValueError:  # no sign change: the normal too narrow (or too wide) to resolve in floating point
        ranked_mass = None
    if ranked_mass is None:  # the two levels around the mean, mixed so that the mean is exact
        upper = next(k for k, v in enumerate(ranked) if v >= mean)
        weight = (mean - ranked[upper - 1]) / (ranked[upper] - ranked[upper - 1])
        ranked_mass = [0.0] * len(ranked)
        ranked_mass[upper - 1], ranked_mass[upper] = 1.0 - weight, weight
    for k, i in enumerate(order):
        probs[i] = ranked_mass[k]
    return tuple(probs)
