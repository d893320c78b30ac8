"""The fused judge's predictive distribution over a scale's levels (judgesdk.fused.levels), on a shipped fit."""

from __future__ import annotations

import math

import pytest

from judgesdk.fused.levels import level_probabilities
from judgesdk.fused.model import bundled

MODEL = bundled()[0].criteria["coherence"][0]  # SummEval coherence, the 1-5 human scale


def test_the_levels_probabilities_sum_to_one_and_follow_the_prediction() -> None:
    low, high = (level_probabilities(MODEL, s, (1, 2, 3, 4, 5)) for s in (1.5, 4.5))
    assert math.fsum(low) == pytest.approx(1.0) and math.fsum(high) == pytest.approx(1.0)
    assert max(range(5), key=low.__getitem__) < max(range(5), key=high.__getitem__)
    assert sum(i * p for i, p in enumerate(high)) > sum(i * p for i, p in enumerate(low))


def test_a_level_gets_the_normal_mass_between_its_neighbours_midpoints_and_the_mean_is_the_score() -> None:
    """A normal of the fit's spread, cut at the midpoints between levels, located so that the expected level is the
    score itself (one score per judgement, issue 44): its location read back from the lowest level's tail."""
    from scipy import stats

    lo, hi = MODEL.residual_bounds(3.2)  # the interval of the score bin 3.2 falls in (format 2: per bin)
    sd = (hi - lo) / (2 * stats.norm.ppf((1 + MODEL.interval_level) / 2))
    probs = level_probabilities(MODEL, 3.2, (1, 2, 3, 4, 5))
    assert sum(level * p for level, p in zip((1, 2, 3, 4, 5), probs)) == pytest.approx(3.2, abs=1e-9)
    center = 1.5 - sd * stats.norm.ppf(probs[0])  # P(level 1) = Phi((1.5 - center) / sd)
    assert probs[2] == pytest.approx(stats.norm.cdf(3.5, center, sd) - stats.norm.cdf(2.5, center, sd))
    assert probs[4] == pytest.approx(stats.norm.sf(4.5, center, sd))


def test_another_scale_range_is_mapped_onto_the_fits() -> None:
    assert level_probabilities(MODEL, 3.2, (0, 1, 2, 3, 4)) == pytest.approx(level_probabilities(MODEL, 3.2, (1, 2, 3, 4, 5)))
    assert level_probabilities(MODEL, 3.2, (5, 4, 3, 2, 1)) == pytest.approx(level_probabilities(MODEL, 3.2, (1, 2, 3, 4, 5))[::-1])
    three = level_probabilities(MODEL, 3.0, (1, 2, 3))  # levels at 1, 3, 5 of the fit's scale
    assert math.fsum(three) == pytest.approx(1.0) and three[1] == max(three)
