"""The default corrected interval does not depend on the judge's zero point (issue 28, item 1): adding a
constant to every judge score leaves every interval identical; a rescale leaves it identical unless the
clip of lambda to [0, 1] binds."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from judgesdk.gate import ppi_mean
from judgesdk.meta.datasets import load_dataset, shared_data_dir
from judgesdk.stats.ppi import ppi_lambdas_left_out

scores = st.integers(-5000, 5000).map(lambda k: k / 1000)  # judge scores on any scale, three decimals


def _all_intervals(est):
    return [getattr(getattr(est, side), end) for side in ("corrected", "human_only") for end in ("estimate", "low", "high")] + [est.se]


@settings(max_examples=300, deadline=None)
@given(
    labels=st.lists(st.integers(1, 5), min_size=2, max_size=60),
    judge=st.lists(scores, min_size=60, max_size=60),
    unlabelled=st.lists(scores, min_size=0, max_size=200),
    shift=st.floats(-100, 100, allow_nan=False),
    method=st.sampled_from(["cross-fit", "ppi++"]),
    bounded=st.booleans(),
    confidence=st.sampled_from([0.8, 0.9, 0.95]),
)
def test_every_interval_is_identical_when_a_constant_is_added_to_the_judge(labels, judge, unlabelled, shift, method, bounded, confidence):
    y = np.array(labels, dtype=float)
    f, fu = np.array(judge[: len(y)]), np.array(unlabelled)
    bounds = (1.0, 5.0) if bounded else None
    plain = ppi_mean(y, f, fu, bounds=bounds, method=method, confidence=confidence)
    moved = ppi_mean(y, f + shift, fu + shift, bounds=bounds, method=method, confidence=confidence)
    assert _all_intervals(moved) == pytest.approx(_all_intervals(plain), abs=1e-9, rel=0)
    assert moved.lam == pytest.approx(plain.lam, abs=1e-9)


def _summeval_consistency() -> np.ndarray:
    if shared_data_dir() is None:
        pytest.skip("SummEval is not here (../shared/data beside the checkout)")
    return np.array([r.scores["consistency"] for r in load_dataset("summeval") if "consistency" in r.scores])


def test_the_issue_reproduction_summeval_consistency_plus_ten():
    """Issue 28's case: 1,600 expert consistency means, judge = human + N(0, 0.5) (seed 7), a 50-label slice
    (seed 3). Before the fix the interval was [4.592, 4.873] at c = 0 and [4.682, 4.835] at c = 10."""
    h = _summeval_consistency()
    f = h + np.random.default_rng(7).normal(0, 0.5, len(h))
    mask = np.zeros(len(h), bool)
    mask[np.random.default_rng(3).choice(len(h), 50, replace=False)] = True
    results = [ppi_mean(h[mask], f[mask] + c, f[~mask] + c, bounds=(1, 5)).corrected for c in (-4.0, 0.0, 1.0, 10.0, 1e3)]
    for other in results[1:]:
        assert (other.estimate, other.low, other.high) == pytest.approx((results[0].estimate, results[0].low, results[0].high), abs=1e-9, rel=0)


@settings(max_examples=200, deadline=None)
@given(
    labels=st.lists(st.integers(1, 5), min_size=3, max_size=60),
    noise=st.lists(scores, min_size=260, max_size=260),
    factor=st.floats(0.01, 100, allow_nan=False),
    shift=st.floats(-100, 100, allow_nan=False),
)
def test_a_rescale_leaves_the_interval_unless_the_clip_of_lambda_binds(labels, noise, factor, shift):
    """f -> factor * f + shift: every lambda scales by 1/factor; unclipped, nothing else moves. Clipped, the
    same holds wherever no lambda meets 0 or 1 at either scale (the judge: the labels plus noise)."""
    y = np.array(labels, dtype=float)
    e = np.array(noise)
    f, fu = y + e[: len(y)], 3 + e[60:]
    for clip in (False, True):
        if clip:
            raw = ppi_lambdas_left_out(y, f, fu, clip=False)
            if not np.all((raw > 1e-9) & (raw < 1 - 1e-9) & (raw / factor > 1e-9) & (raw / factor < 1 - 1e-9)):
                continue  # the clip binds: test_where_the_clip_binds_a_rescale_moves_the_interval
        plain = ppi_mean(y, f, fu, bounds=(1, 5), clip=clip)
        scaled = ppi_mean(y, factor * f + shift, factor * fu + shift, bounds=(1, 5), clip=clip)
        assert _all_intervals(scaled) == pytest.approx(_all_intervals(plain), abs=1e-9, rel=1e-9)


def test_where_the_clip_binds_a_rescale_moves_the_interval():
    """A judge on a compressed scale (0.1 x) asks for lambda ~ 10; clipped to 1 it is a different estimator."""
    rng = np.random.default_rng(4)
    y = np.clip(np.round(3 + rng.standard_normal(300)), 1, 5)
    f = y + 0.3 * rng.standard_normal(300)
    plain = ppi_mean(y[:40], f[:40], f[40:], bounds=(1, 5))
    squeezed = ppi_mean(y[:40], 0.1 * f[:40], 0.1 * f[40:], bounds=(1, 5))
    assert 0 < plain.lam < 1 and squeezed.lam == 1.0
    assert squeezed.corrected.width > 1.5 * plain.corrected.width
    assert ppi_mean(y[:40], 0.1 * f[:40], 0.1 * f[40:], bounds=(1, 5), clip=False).corrected.width == pytest.approx(plain.corrected.width, rel=1e-9)
