"""The fused judge's prediction as a probability per level of a scale: its predictive distribution, binned.

A fused fit predicts a point on the human scale and carries the cross-validated residuals' quantiles
(``CriterionModel.residual_bounds``, per score bin in a format-2 fit: the ``(1 - level) / 2`` and ``(1 + level) / 2`` quantiles of prediction - human,
80 % by default). Read as a normal distribution through those two quantiles, the human score given the
prediction ``s`` is ``N(s - m, sd)`` with ``m`` the quantiles' midpoint and ``sd`` their half-distance over the
normal quantile of ``(1 + level) / 2``. A level's probability is that distribution's mass between the midpoints
to its neighbouring levels' values (the lowest and highest level take the tails), so the levels of any scale
get probabilities that sum to 1, and the fit's own error decides how spread they are.

What this assumes, stated: a normal residual through the two quantiles (it keeps their midpoint and spread,
not their skew, which the shipped SummEval fits' quantiles have in most score bins), and one spread per score
bin of the fit (split-conformal per bin: ``judgesdk.fused.fit.conformal_bins``). How well the
binned probabilities are calibrated against human ratings has not been measured; only the interval's
coverage is, by the fit's cross-validation. The point score stays the fused judge's prediction; the
distribution's expected value differs from it where the tails are cut at the scale's ends. Used where a distribution over levels is asked for
(``method_options.fused_levels``; ``judgesdk serve`` answers decision questions with it).
"""

from __future__ import annotations

from collections.abc import Sequence

from judgesdk.fused.model import CriterionModel

__all__ = ["level_probabilities"]


def level_probabilities(model: CriterionModel, score: float, values: Sequence[float]) -> tuple[float, ...]:
    """P(human score nearest each of ``values``) given the fused prediction ``score`` of the criterion's fitted
    ``model`` (whose residual interval sets the spread; module docstring), in
    the order of ``values``. A scale whose range is not the fit's (a 0-4 index, a 1-10 scale) is mapped
    linearly onto the fit's ``low``-``high`` first, its lowest value to ``low`` and its highest to ``high``."""
    low, high = min(values), max(values)
    if (low, high) != (model.low, model.high) and high > low:
        values = [model.low + (v - low) * (model.high - model.low) / (high - low) for v in values]
    from scipy import stats  # about a second to import: only when levels are asked for, not with the fused scorer

    lo, hi = model.residual_bounds(score)
    z = float(stats.norm.ppf((1.0 + model.interval_level) / 2.0))
    spread = max((hi - lo) / (2.0 * z), 1e-9)
    center = score - (lo + hi) / 2.0
    order = sorted(range(len(values)), key=lambda i: values[i])
    ranked = [float(values[i]) for i in order]
    edges = [(a + b) / 2.0 for a, b in zip(ranked, ranked[1:])]
    cdf = [0.0, *(float(stats.norm.cdf(edge, loc=center, scale=spread)) for edge in edges), 1.0]
    masses = [max(cdf[k + 1] - cdf[k], 0.0) for k in range(len(ranked))]
    total = sum(masses)
    probs = [0.0] * len(values)
    for k, i in enumerate(order):
        probs[i] = masses[k] / total
    return tuple(probs)
