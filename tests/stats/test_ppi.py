"""Corrected gates from a human slice: PPI++ against ppi-python, its coverage and width in seeded
simulations, Rogan–Gladen and its refusals, the label planner, the labels file, and the two gate kinds
end to end through the gate config, the real gate code path and the CLI."""

from __future__ import annotations

import json
import os
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from judgesdk.core.errors import ConfigError, InputError
from judgesdk.gate import (
    PassRateRefusal,
    RoganGladen,
    draw_slice,
    evaluate_gates,
    join_slice,
    load_gate_config,
    plan_labels,
    ppi_mean,
    render_markdown,
    rogan_gladen,
)
from judgesdk.records.labels import HumanLabels, read_labels
from judgesdk.stats.intervals import mean_interval, proportion_interval
from judgesdk.stats.ppi import ppi_lambda, ppi_lambdas_left_out

from support.ppi_runs import gate_file, gate_of, population, write_run

REQUIRE_INTEGRATION = os.environ.get("JUDGESDK_REQUIRE_INTEGRATION") == "1"


def _ppi_py():
    try:
        import ppi_py
    except ImportError:
        message = "comparing with ppi-python needs it installed (pip install ppi-python, in the dev extra)"
        if REQUIRE_INTEGRATION:
            pytest.fail(message)
        pytest.skip(message)
    return ppi_py


# -- PPI++ against the maintained implementation ----------------------------------------------------


def test_ppi_mean_matches_ppi_python_to_1e_6():
    ppi_py = _ppi_py()
    rng = np.random.default_rng(7)
    worst = 0.0
    for case in range(60):
        n, big_n = int(rng.integers(3, 120)), int(rng.integers(1, 3000))
        rho = rng.uniform(-0.9, 0.99)
        y, f = population(rng, n + big_n, rho, bias=rng.normal(), scale=rng.uniform(0.2, 3))
        if case % 5 == 0:
            y = np.round(y)  # Likert labels
        yl, fl, fu = y[:n], f[:n], f[n:]
        for confidence in (0.8, 0.9, 0.95):
            alpha = 1 - confidence
            ours = ppi_mean(yl, fl, fu, confidence=confidence, method="ppi++")
            low, high = (float(np.squeeze(v)) for v in ppi_py.ppi_mean_ci(yl, fl, fu, alpha=alpha))
            point = float(np.squeeze(ppi_py.ppi_mean_pointestimate(yl, fl, fu, lam=None)))
            classical = ppi_py.classical_mean_ci(yl, alpha=alpha)
            worst = max(
                worst, abs(ours.corrected.low - low), abs(ours.corrected.high - high), abs(ours.corrected.estimate - point),
                abs(ours.human_only.low - classical[0]), abs(ours.human_only.high - classical[1]),
            )  # fmt: skip
            for lam in (0.0, 0.5, 1.0):  # a fixed lambda: plain PPI at 1, the classical interval at 0
                fixed = ppi_mean(yl, fl, fu, confidence=confidence, lam=lam, method="ppi++")
                low, high = (float(np.squeeze(v)) for v in ppi_py.ppi_mean_ci(yl, fl, fu, alpha=alpha, lam=lam))
                worst = max(worst, abs(fixed.corrected.low - low), abs(fixed.corrected.high - high))
                # the default (cross-fit) interval at a fixed lam: ppi-python's estimate, and its standard error
                # with the labelled variance taken with ddof 1 (the jackknife of a mean at a fixed lam), floored at
                # two unseen disagreements of w * half the labels' range (w = lam * sd(f) / sd(y), clipped to [0, 1])
                crossed = ppi_mean(yl, fl, fu, confidence=confidence, lam=lam)
                z = (high - low) / 2 / float(stats.norm.ppf(1 - alpha / 2))
                w = min(1.0, max(0.0, lam * np.std(fl) / np.std(yl))) if np.std(yl) > 0 else 0.0
                rectifier = np.var(yl - lam * fl)
                floor = 2 * (w * np.ptp(yl) / 2) ** 2 / (n + 1)
                jackknife = np.sqrt(z**2 - rectifier / n + max(rectifier * n / (n - 1), floor) / n)
                worst = max(worst, abs(crossed.corrected.estimate - (low + high) / 2), abs(crossed.se - jackknife))
    assert worst < 1e-6


def test_cross_fitted_lambdas_are_ppi_lambda_on_the_other_labelled_items():
    rng = np.random.default_rng(17)
    for case in range(40):
        n, big_n = int(rng.integers(2, 90)), int(rng.integers(1, 700))
        scale = float(rng.choice([1e-6, 0.1, 1.0, 4.0, 1e4]))  # judge scores of any magnitude
        y, f = population(rng, n + big_n, rng.uniform(-0.9, 0.99), bias=rng.normal(-3, 2) * scale, scale=scale)
        y = np.round(y) if case % 2 else y
        for clip in (True, False):
            left_out = ppi_lambdas_left_out(y[:n], f[:n], f[n:], clip)
            one_by_one = [ppi_lambda(np.delete(y[:n], i), np.delete(f[:n], i), f[n:], clip) for i in range(n)]
            assert np.allclose(left_out, one_by_one, rtol=1e-9, atol=1e-12)
    est = ppi_mean(y[:n], f[:n], f[n:])
    lams = ppi_lambdas_left_out(y[:n], f[:n], f[n:])
    assert est.lam == pytest.approx(lams.mean())
    assert est.corrected.estimate == pytest.approx(lams.mean() * f[n:].mean() + np.mean(y[:n] - lams * f[:n]))


def _hall_by_root(estimate, se, a, q):
    """Hall's interval by solving g(T) = -+q numerically (independent of ppi.py's closed form)."""
    from scipy import optimize

    g = lambda t, x: t + a * t * t / 3 + a * a * t**3 / 27 + a / 6 - x  # noqa: E731
    upper_t, lower_t = (optimize.brentq(g, -60, 60, args=(x,)) for x in (q, -q))
    return estimate - se * upper_t, estimate - se * lower_t


def test_the_default_interval_is_hall_on_the_jackknife_t_and_logit_for_pass_fail_labels():
    rng = np.random.default_rng(23)
    y = np.where(rng.random(40) < 0.75, 5.0, rng.integers(1, 5, 40))  # piled at the top of 1-5, a tail below
    f = y + 2 * rng.standard_normal(40)  # a weak judge: the labels' skew shows through
    fu = rng.normal(4.5, 1.2, 400)
    est = ppi_mean(y, f, fu, bounds=(1, 5))
    c, t, n = est.corrected, float(stats.t.ppf(0.975, 39)), 40
    # the jackknife by brute force: PPI++ on the other 39 labelled items at their own lambda
    left_out = []
    for i in range(n):
        yi, fi = np.delete(y, i), np.delete(f, i)
        lam_i = ppi_lambda(yi, fi, fu)
        left_out.append(lam_i * fu.mean() + np.mean(yi - lam_i * fi))
    pseudo = n * np.mean(left_out) - (n - 1) * np.array(left_out)
    lams = ppi_lambdas_left_out(y, f, fu)
    se = np.sqrt(np.var(pseudo, ddof=1) / n + lams.mean() ** 2 * np.var(fu) / len(fu))
    skew = np.mean((pseudo - pseudo.mean()) ** 3) / n**2 / se**3
    assert est.se == pytest.approx(se, rel=1e-9) and est.skew == pytest.approx(skew, rel=1e-9) and -0.45 < skew < -0.05
    assert (c.low, c.high) == pytest.approx(_hall_by_root(c.estimate, se, skew, t), rel=1e-9)
    assert 1 < c.low < c.estimate < c.high < 5 and c.high - c.estimate < c.estimate - c.low  # reaches further toward the tail
    assert "Hall skew correction" in c.method and "Hall" in est.human_only.method
    human = est.human_only  # the same construction at lam = 0: the labels themselves are the pseudo-values
    sh = np.std(y, ddof=1) / np.sqrt(n)
    assert est.se_human_only == pytest.approx(sh) and human.estimate == pytest.approx(y.mean())
    assert (human.low, human.high) == pytest.approx(_hall_by_root(y.mean(), sh, np.mean((y - y.mean()) ** 3) / n**2 / sh**3, t), rel=1e-9)
    # labels only at the two ends of the scale (pass/fail): the logit interval
    passes = (y >= 5).astype(float)
    binary = ppi_mean(passes, (f >= 4.5).astype(float), (fu >= 4.5).astype(float), bounds=(0, 1))
    b = binary.corrected
    u = b.estimate
    centre, spread = np.log(u / (1 - u)), t * binary.se / (u * (1 - u))
    assert (b.low, b.high) == pytest.approx((1 / (1 + np.exp(-(centre - spread))), 1 / (1 + np.exp(-(centre + spread)))))
    assert "logit on [0, 1]" in b.method and binary.skew is None


def test_hall_holds_the_skewness_at_the_edge_of_its_regular_range():
    """Past |a| (q + |a|/6) = 1 Hall's inverse leaps; the interval stays at the edge's reach, 3/|a| standard errors."""
    from judgesdk.stats.ppi import _hall

    q = float(stats.t.ppf(0.975, 29))
    edge = 3 * (np.sqrt(q * q + 2 / 3) - q)
    assert _hall(0.0, 1.0, -5.0, q) == pytest.approx(_hall(0.0, 1.0, -edge, q))
    # (the inverse's slope is infinite at the edge, so rounding there moves the reach in the 6th digit)
    assert _hall(0.0, 1.0, -edge, q)[0] == pytest.approx(-3 / edge, rel=1e-4) and _hall(0.0, 1.0, edge, q)[1] == pytest.approx(3 / edge, rel=1e-4)
    for a in (-0.4, -0.1, -1e-9, 1e-9, 0.2, 0.45):
        assert _hall(1.0, 0.5, a, q) == pytest.approx(_hall_by_root(1.0, 0.5, a, q), rel=1e-9)
    assert _hall(1.0, 0.5, 0.0, q) == (1.0 - 0.5 * q, 1.0 + 0.5 * q)


@settings(max_examples=150, deadline=None)
@given(
    labels=st.lists(st.integers(1, 5), min_size=2, max_size=60),
    judge=st.lists(st.floats(-5, 5, allow_nan=False), min_size=62, max_size=62),
    unlabelled=st.integers(0, 200),
    confidence=st.sampled_from([0.8, 0.9, 0.95, 0.99]),
)
def test_the_bounded_interval_stays_on_the_scale_and_widens_with_confidence(labels, judge, unlabelled, confidence):
    y = np.array(labels, dtype=float)
    f = np.array(judge[: len(y)])
    fu = np.resize(np.array(judge), unlabelled)
    est = ppi_mean(y, f, fu, bounds=(1, 5), confidence=confidence)
    wider = ppi_mean(y, f, fu, bounds=(1, 5), confidence=min(0.999, confidence + 0.009))
    for interval in (est.corrected, est.human_only):
        assert 1 <= interval.low <= interval.high <= 5
    assert est.human_only.low <= y.mean() <= est.human_only.high
    if 1 <= est.corrected.estimate <= 5:
        assert est.corrected.low <= est.corrected.estimate <= est.corrected.high
    assert wider.corrected.low <= est.corrected.low + 1e-12 and wider.corrected.high >= est.corrected.high - 1e-12
    assert 0 <= est.lam <= 1


def test_every_label_equal_gives_the_exact_bound_not_a_zero_width_interval():
    f, fu = np.linspace(0, 1, 50), np.linspace(0, 1, 500)
    top = ppi_mean(np.full(50, 5.0), f, fu, bounds=(1, 5))
    assert top.corrected.high == 5 and top.corrected.low == pytest.approx(1 + 4 * 0.025 ** (1 / 50))  # 4.7155
    middle = ppi_mean(np.full(50, 3.0), f, fu, bounds=(1, 5), confidence=0.9).corrected
    reach = 1 - 0.05 ** (1 / 50)
    assert (middle.low, middle.high) == pytest.approx((3 - 2 * reach, 3 + 2 * reach))
    assert ppi_mean(np.full(50, 5.0), f, fu).corrected.width == 0  # without bounds nothing can be said
    with pytest.raises(ValueError, match="bounds"):
        ppi_mean([1, 2], [1, 2], [1], bounds=(5, 1))
    with pytest.raises(ValueError, match="method"):
        ppi_mean([1, 2], [1, 2], [1], method="wald")  # type: ignore[arg-type]


# -- PPI++ statistics ----------------------------------------------------------------------------------


def test_ppi_coverage_in_a_seeded_simulation_with_n_50():
    """500 replications, n = 50 labels, N = 1,000 judged items, a biased judge on its own scale."""
    rng = np.random.default_rng(2024)
    true_mean = float(np.mean(np.clip(3.2 + 0.9 * np.random.default_rng(0).standard_normal(2_000_000), 1, 5)))
    cover = cover_human = 0
    for _ in range(500):
        y, f = population(rng, 1050, rho=0.7, bias=-1.3, scale=0.6)
        est = ppi_mean(y[:50], f[:50], f[50:], confidence=0.95)
        cover += est.corrected.low <= true_mean <= est.corrected.high
        cover_human += est.human_only.low <= true_mean <= est.human_only.high
    assert cover / 500 >= 0.93
    assert cover_human / 500 >= 0.92  # the z interval of 50 labels, for reference


def test_ppi_coverage_with_likert_labels_and_a_finite_run():
    """The gate's setting: a fixed run of 600 items, a random slice of 50 labelled (integer labels)."""
    rng = np.random.default_rng(11)
    y, f = population(rng, 600, rho=0.6, bias=0.4, scale=1.0)
    y = np.round(y)
    truth = float(y.mean())
    ids = [f"i{k:03d}" for k in range(600)]
    cover = 0
    for rep in range(500):
        chosen = np.array([int(i[1:]) for i in draw_slice(ids, 50, seed=rep)])
        rest = np.setdiff1d(np.arange(600), chosen)
        est = ppi_mean(y[chosen], f[chosen], f[rest])
        cover += est.corrected.low <= truth <= est.corrected.high
    assert cover / 500 >= 0.93


def test_ppi_is_narrower_with_a_correlated_judge_and_close_to_human_only_with_noise():
    rng = np.random.default_rng(5)
    ratios_good, ratios_noise, lams_noise, eff_good = [], [], [], []
    for _ in range(200):
        y, f = population(rng, 2050, rho=0.85, bias=0.7)
        good = ppi_mean(y[:50], f[:50], f[50:])
        ratios_good.append(good.corrected.width / good.human_only.width)
        eff_good.append(good.effective_labels)
        y, _ = population(rng, 2050, rho=0.0)
        noise = ppi_mean(y[:50], rng.standard_normal(50), rng.standard_normal(2000))
        ratios_noise.append(noise.corrected.width / noise.human_only.width)
        lams_noise.append(noise.lam)
    assert np.median(ratios_good) < 0.65  # about sqrt(1 - 0.85^2) = 0.53
    assert np.median(eff_good) > 100  # 50 labels worth more than twice as many
    # a judge that is noise: about the labels-only width; the jackknife counts the noise a tuned lambda adds
    assert 0.97 < np.median(ratios_noise) < 1.03 and np.percentile(ratios_noise, 90) < 1.05 and np.max(ratios_noise) < 1.3
    assert np.median(lams_noise) < 0.1


def test_effective_labels_and_the_two_ends_of_lambda():
    rng = np.random.default_rng(3)
    y, f = population(rng, 500, rho=0.8)
    est = ppi_mean(y[:40], f[:40], f[40:])
    assert 0 < est.lam <= 1
    assert est.effective_labels == pytest.approx(40 * est.se_human_only**2 / est.se**2)
    assert est.effective_labels > 40 and est.n_labelled == 40 and est.n_unlabelled == 460
    assert est.judge_only.n == 500 and est.judge_only.estimate == pytest.approx(f.mean())
    human = ppi_mean(y[:40], f[:40], f[40:], lam=0.0)
    assert human.corrected.low == pytest.approx(est.human_only.low) and human.effective_labels == pytest.approx(40)
    assert mean_interval(y[:40]).high == pytest.approx(ppi_mean(y[:40], f[:40], f[40:], method="ppi++").human_only.high)
    everything = ppi_mean(y, f, [])  # every item labelled: the judge adds nothing
    assert everything.lam == 0 and everything.corrected.estimate == pytest.approx(y.mean())
    flat = ppi_mean(y[:40], np.ones(40), np.ones(460))  # a constant judge carries no information
    assert flat.lam == 0
    with pytest.raises(ValueError, match="pair them"):
        ppi_mean([1, 2, 3], [1, 2], [1, 2, 3])
    with pytest.raises(ValueError, match="at least 2"):
        ppi_mean([1], [1], [1, 2])


# -- Rogan–Gladen ------------------------------------------------------------------------------------


def _binary(rng, n, prevalence, sensitivity, specificity):
    truth = rng.random(n) < prevalence
    judged = np.where(truth, rng.random(n) < sensitivity, rng.random(n) >= specificity)
    return truth, judged


def test_rogan_gladen_corrects_a_biased_judge_and_covers():
    rng = np.random.default_rng(9)
    cover, naive_cover, estimates = 0, 0, []
    for _ in range(500):
        truth, judged = _binary(rng, 2100, prevalence=0.6, sensitivity=0.9, specificity=0.75)
        est = rogan_gladen(truth[:100], judged[:100], judged[100:])
        assert isinstance(est, RoganGladen)
        estimates.append(est.corrected.estimate)
        cover += est.corrected.low <= 0.6 <= est.corrected.high
        naive_cover += est.judge_only.low <= 0.6 <= est.judge_only.high
    assert abs(np.mean(estimates) - 0.6) < 0.01  # the judge alone sees 0.64
    assert cover / 500 >= 0.93 and naive_cover / 500 < 0.5


def test_rogan_gladen_refuses_a_judge_near_chance_and_a_one_sided_slice():
    rng = np.random.default_rng(1)
    truth, judged = _binary(rng, 1000, prevalence=0.5, sensitivity=0.55, specificity=0.55)
    refused = rogan_gladen(truth[:200], judged[:200], judged[200:])
    assert isinstance(refused, PassRateRefusal) and "too close to chance" in refused.reason
    assert refused.youden is not None and refused.youden < 0.2
    truth, judged = _binary(rng, 1000, prevalence=0.5, sensitivity=0.7, specificity=0.7)
    noisy = rogan_gladen(truth[:30], judged[:30], judged[30:], min_youden=0.05)  # J = 0.4, but 30 labels cannot show it
    assert isinstance(noisy, PassRateRefusal) and "cannot tell the judge from chance" in noisy.reason
    assert noisy.youden is not None and noisy.youden > 0.05
    all_pass = rogan_gladen(np.ones(40, bool), rng.random(40) < 0.8, rng.random(400) < 0.8)
    assert isinstance(all_pass, PassRateRefusal) and "no human fails" in all_pass.reason
    assert all_pass.human_only.estimate == 1.0


def test_rogan_gladen_edges():
    truth = np.array([True] * 30 + [False] * 30)
    judged = truth.copy()
    judged[:3] = False
    judged[30] = True  # one false pass: specificity below 1
    labelled_only = rogan_gladen(truth, judged, [])  # every item labelled: the human rate itself
    assert isinstance(labelled_only, RoganGladen) and labelled_only.corrected.estimate == pytest.approx(0.5)
    low = rogan_gladen(truth, judged, np.zeros(500, bool))  # the judge passes nothing outside the slice
    assert isinstance(low, RoganGladen) and low.corrected.estimate == 0.0 and low.clipped
    p = proportion_interval(0, 20)
    assert p.low == 0.0 and p.high > 0.1  # Wilson: not a zero-width interval at 0


# -- the slice: drawing, labels, joining, planning ----------------------------------------------------


def test_draw_slice_is_seeded_order_free_and_extends():
    ids = [f"item-{k}" for k in range(300)]
    first = draw_slice(ids, 30, seed=4)
    assert first == draw_slice(list(reversed(ids)) + ids[:10], 30, seed=4)  # the set of ids and the seed decide
    assert len(set(first)) == 30 and set(first) <= set(ids)
    assert draw_slice(ids, 80, seed=4)[:30] == first  # a larger draw extends the pilot
    assert draw_slice(ids, 30, seed=5) != first
    with pytest.raises(InputError, match="at most 300"):
        draw_slice(ids, 301)


@pytest.mark.parametrize(
    "line,message",
    [
        ({"label": 3}, "needs an id"),
        ({"id": "a"}, "no label field"),
        ({"id": "a", "label": None}, "not labelled yet"),
        ({"id": "a", "label": "good"}, "must be a number"),
        ({"id": "a", "label": True}, "finite number"),
        ({"id": "a", "label": float("nan")}, "finite number"),
    ],
)
def test_bad_label_lines_are_input_errors_naming_the_line(tmp_path, line, message):
    path = tmp_path / "labels.jsonl"
    path.write_text(json.dumps({"id": "z", "label": 4}) + "\n" + json.dumps(line) + "\n")
    with pytest.raises(InputError, match=re.escape(f"{path}:2")) as info:
        read_labels(path)
    assert message in str(info.value)


def test_labels_file_reading_and_joining(tmp_path):
    path = tmp_path / "labels.jsonl"
    path.write_text('{"id": "a", "label": 4}\n{"id": 7, "label": "2.5"}\n\n{"id": "c", "label": 1}\n')
    labels = read_labels(path)
    assert labels.values == {"a": 4.0, "7": 2.5, "c": 1.0}
    path.write_text('{"id": "a", "label": 4}\n{"id": "a", "label": 3}\n')
    with pytest.raises(InputError, match="labelled twice"):
        read_labels(path)
    with pytest.raises(InputError, match="does not exist"):
        read_labels(tmp_path / "none.jsonl")
    scores = {"a": 3.0, "7": 2.0, "d": 5.0}
    joined = join_slice(labels, scores, ["a", "7", "c", "d"], min_labels=3)
    assert joined.ids == ["a", "7"] and joined.human == [4.0, 2.5] and joined.judge_unlabelled == [5.0]
    assert joined.unscored == ["c"]  # labelled, but the judge gave no score
    with pytest.raises(InputError, match="not items of this run: 'c'"):
        join_slice(labels, scores, ["a", "7", "d"], min_labels=1)
    with pytest.raises(InputError, match="at least 4"):
        join_slice(labels, scores, ["a", "7", "c", "d"], min_labels=4)


def test_plan_labels_from_a_pilot():
    rng = np.random.default_rng(12)
    y, f = population(rng, 2000, rho=0.8, bias=1.0, scale=0.5)
    plan = plan_labels(y[:40], f[:40], f, half_width=0.1)
    assert plan.n_pilot == 40 and plan.n_total == 2000 and plan.correlation > 0.6
    assert plan.n_ppi is not None and plan.n_ppi < 0.6 * plan.n_human_only
    t = lambda n: float(stats.t.ppf(0.975, n - 1))  # noqa: E731  (the gate's t quantile, not z)
    n_h = plan.n_human_only
    assert t(n_h) * plan.sd_human / np.sqrt(n_h) <= 0.1 < t(n_h - 1) * plan.sd_human / np.sqrt(n_h - 1)
    # the planned size delivers about the asked half-width
    widths = []
    for rep in range(100):
        chosen = np.random.default_rng(rep).permutation(2000)
        lab, rest = chosen[: plan.n_ppi], chosen[plan.n_ppi :]
        widths.append(ppi_mean(y[lab], f[lab], f[rest]).corrected.width / 2)
    assert 0.07 < np.median(widths) < 0.13
    noise = plan_labels(y[:40], rng.standard_normal(40), rng.standard_normal(2000), half_width=0.1)
    assert noise.n_ppi is not None and noise.n_ppi >= 0.85 * noise.n_human_only
    tight = plan_labels(y[:40], f[:40], f[:100], half_width=0.01)
    assert tight.n_ppi is None and tight.n_human_only > 100  # not reachable within the run
    with pytest.raises(InputError, match="at least 5"):
        plan_labels(y[:3], f[:3], f, half_width=0.1)


# -- the gate kinds end to end ------------------------------------------------------------------------


def test_ppi_gate_end_to_end_pass_and_fail(tmp_path):
    truth, judged = write_run(tmp_path)
    assert judged < truth - 0.4  # the judge alone is biased low
    config = load_gate_config(gate_file(tmp_path, f'[[gates]]\nkind = "ppi_ci_lower"\ncriterion = "quality"\nmin = {truth - 0.45}\n'))
    assert config.criteria[0].labels == tmp_path.resolve() / "labels.jsonl"
    verdict = evaluate_gates(config)
    g = gate_of(verdict, "ppi_ci_lower")
    assert g.outcome == "pass" and verdict.exit_code == 0, g.message
    sides = g.details["intervals"]
    assert set(sides) == {"judge_only", "human_only", "corrected"}
    assert sides["corrected"]["low"] <= truth <= sides["corrected"]["high"]
    assert sides["judge_only"]["high"] < truth  # a judge-only gate would have been fooled
    assert sides["corrected"]["high"] - sides["corrected"]["low"] < sides["human_only"]["high"] - sides["human_only"]["low"]
    assert g.details["effective_labels"] > 50 and g.details["n_labelled"] == 50 and g.details["n_unlabelled"] == 350
    assert "PPI++" in g.message and "human only" in g.message and "judge only" in g.message
    markdown = render_markdown(verdict)
    assert "### Corrected estimates (human scale)" in markdown and "labels worth" in markdown
    strict = evaluate_gates(load_gate_config(gate_file(tmp_path, f'[[gates]]\nkind = "ppi_ci_lower"\ncriterion = "quality"\nmin = {truth}\n')))
    assert gate_of(strict, "ppi_ci_lower").outcome == "fail" and strict.exit_code == 1


def test_ppi_gate_bounds_its_interval_by_the_criterion_scale_and_keeps_ppi_python_on_request(tmp_path):
    write_run(tmp_path)
    gate = '[[gates]]\nkind = "ppi_ci_lower"\ncriterion = "quality"\nmin = 1\n'
    default = gate_of(evaluate_gates(load_gate_config(gate_file(tmp_path, gate))), "ppi_ci_lower")
    assert default.details["method"] == "cross-fit" and "cross-fit, jackknife, t, Hall skew correction, within [1, 5]" in default.message
    labels = read_labels(tmp_path / "labels.jsonl").values
    rows = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    judge = {r["id"]: r["score"] for r in rows}
    y = np.array(list(labels.values()))
    f = np.array([judge[i] for i in labels])
    fu = np.array([s for i, s in judge.items() if i not in labels])
    plain = gate_of(evaluate_gates(load_gate_config(gate_file(tmp_path, gate + 'method = "ppi++"\n'))), "ppi_ci_lower")
    reference = ppi_mean(y, f, fu, method="ppi++").corrected
    assert (plain.details["low"], plain.details["high"]) == pytest.approx((reference.low, reference.high), abs=1e-12)
    assert default.details["low"] == pytest.approx(ppi_mean(y, f, fu, bounds=(1, 5)).corrected.low, abs=1e-12)
    first = next(iter(labels))  # a label off the 1-5 scale: refused (test_gate_label_scale.py), unless the scale is open
    text = (tmp_path / "labels.jsonl").read_text().replace(f'"label": {labels[first]}', '"label": 7.0', 1)
    (tmp_path / "labels.jsonl").write_text(text)
    with pytest.raises(InputError, match="outside the scale 1-5 of criterion 'quality'"):
        evaluate_gates(load_gate_config(gate_file(tmp_path, gate)))
    opened = gate_file(tmp_path, gate, labels='labels = "labels.jsonl"\nopen_scale = true\n')
    off = gate_of(evaluate_gates(load_gate_config(opened)), "ppi_ci_lower")
    assert "1 label(s) outside the criterion's scale 1-5" in off.message and "within [1, 5]" not in off.message


def test_ppi_regression_catches_a_human_drop_the_judge_misses_and_passes_without_one(tmp_path):
    before, _ = write_run(tmp_path, n_items=800, n_labels=80, seed=1, slice_seed=10, name="base-")
    after, _ = write_run(tmp_path, n_items=800, n_labels=80, seed=1, slice_seed=11, human_shift=-0.6)
    assert after < before - 0.4  # the humans' scores dropped; the judge's scores are the same numbers
    criteria = '[[criteria]]\nname = "quality"\nlabels = "labels.jsonl"\nbaseline_labels = "base-labels.jsonl"\n'
    gates = '[[gates]]\nkind = "regression"\ncriterion = "quality"\n\n[[gates]]\nkind = "ppi_regression"\ncriterion = "quality"\n'
    (tmp_path / "gate.toml").write_text(f'results = "results.jsonl"\nbaseline = "base-results.jsonl"\n{criteria}{gates}')
    verdict = evaluate_gates(load_gate_config(tmp_path / "gate.toml"))
    assert gate_of(verdict, "regression").outcome == "pass"  # judge scores alone: nothing changed
    g = gate_of(verdict, "ppi_regression")
    assert g.outcome == "fail" and verdict.exit_code == 1, g.message
    assert g.details["mean_change"] == pytest.approx(after - before, abs=0.25) and g.details["p"] < 0.05
    assert g.details["n_labelled"] == 80 and g.details["baseline_n_labelled"] == 80 and "vs baseline" in g.message
    assert "change" in render_markdown(verdict) and "baseline's corrected" in render_markdown(verdict)
    write_run(tmp_path, n_items=800, n_labels=80, seed=1, slice_seed=11)  # no drop: the same population, another slice
    same = gate_of(evaluate_gates(load_gate_config(tmp_path / "gate.toml")), "ppi_regression")
    assert same.outcome == "pass" and abs(same.details["mean_change"]) < 0.25, same.message
    tolerant = gates.replace('kind = "ppi_regression"\n', 'kind = "ppi_regression"\nmax_drop = 0.2\nname = "tolerant"\n')
    (tmp_path / "gate.toml").write_text(f'results = "results.jsonl"\nbaseline = "base-results.jsonl"\n{criteria}{tolerant}')
    assert gate_of(evaluate_gates(load_gate_config(tmp_path / "gate.toml")), "ppi_regression").details["p"] > same.details["p"]
    (tmp_path / "gate.toml").write_text(f'results = "results.jsonl"\nbaseline = "base-results.jsonl"\n{criteria}{gates}')
    with (tmp_path / "base-labels.jsonl").open("a") as labels:
        labels.write('{"id": "not-in-the-baseline", "label": 3}\n')
    with pytest.raises(InputError, match="baseline run: .*base-labels.jsonl: 1 labelled id"):
        evaluate_gates(load_gate_config(tmp_path / "gate.toml"))
    (tmp_path / "gate.toml").write_text(f'results = "results.jsonl"\nbaseline = "base-results.jsonl"\n{criteria.replace("baseline_labels", "# ")}{gates}')
    with pytest.raises(ConfigError, match="set baseline_labels"):
        load_gate_config(tmp_path / "gate.toml")


def test_corrected_pass_rate_by_ppi_is_the_default_never_refuses_and_equals_ppi_mean_on_pass_indicators(tmp_path):
    write_run(tmp_path, rho=0.85, n_labels=120, seed=3)
    gates = '[[gates]]\nkind = "corrected_pass_rate"\ncriterion = "quality"\nitem_min = 3\njudge_item_min = 2.6\nmin = 0.3\n'
    g = gate_of(evaluate_gates(load_gate_config(gate_file(tmp_path, gates))), "corrected_pass_rate")
    assert g.outcome == "pass" and g.details["method"] == "cross-fit" and "PPI++ on pass/fail" in g.message, g.message
    labels = read_labels(tmp_path / "labels.jsonl").values
    judge = {r["id"]: r["score"] for r in map(json.loads, (tmp_path / "results.jsonl").read_text().splitlines())}
    y = np.array([labels[i] >= 3 for i in labels], dtype=float)
    f = np.array([judge[i] >= 2.6 for i in labels], dtype=float)
    fu = np.array([s >= 2.6 for i, s in judge.items() if i not in labels], dtype=float)
    reference = ppi_mean(y, f, fu, bounds=(0, 1)).corrected
    assert (g.details["low"], g.details["high"]) == pytest.approx((reference.low, reference.high), abs=1e-12)
    sides = g.details["intervals"]
    assert 0 <= sides["corrected"]["low"] <= sides["corrected"]["high"] <= 1 and sides["judge_only"]["method"] == "wilson"
    write_run(tmp_path, rho=0.0, n_labels=120, seed=4)  # a judge that is noise: no refusal, about the labels-only interval
    noise = gate_of(evaluate_gates(load_gate_config(gate_file(tmp_path, gates))), "corrected_pass_rate")
    assert noise.outcome in ("pass", "fail") and "refused" not in noise.details
    width = noise.details["high"] - noise.details["low"]
    assert width < 1.05 * (noise.details["intervals"]["human_only"]["high"] - noise.details["intervals"]["human_only"]["low"])


def test_corrected_pass_rate_gate_end_to_end_and_its_refusal(tmp_path):
    truth, _ = write_run(tmp_path, rho=0.85, n_labels=120, seed=3)
    gates = '[[gates]]\nkind = "corrected_pass_rate"\ncriterion = "quality"\nitem_min = 3\njudge_item_min = 2.6\nmin = 0.3\nmethod = "rogan-gladen"\n'
    verdict = evaluate_gates(load_gate_config(gate_file(tmp_path, gates)))
    g = gate_of(verdict, "corrected_pass_rate")
    assert g.outcome == "pass", g.message
    assert 0 < g.details["sensitivity"] <= 1 and g.details["youden"] >= 0.2 and "Rogan-Gladen" in g.message
    assert "Rogan-Gladen; sensitivity" in render_markdown(verdict)
    write_run(tmp_path, rho=0.0, n_labels=120, seed=4)  # a judge that is noise: the correction is refused
    refused = evaluate_gates(load_gate_config(gate_file(tmp_path, gates)))
    g = gate_of(refused, "corrected_pass_rate")
    assert g.outcome == "undetermined" and refused.status == "inconclusive" and refused.exit_code == 2
    assert "Rogan-Gladen refused" in g.message and g.details["refused"]
    assert "refused:" in render_markdown(refused)


def test_corrected_gates_need_labels_and_good_labels(tmp_path):
    write_run(tmp_path)
    with pytest.raises(ConfigError, match="set labels ="):
        load_gate_config(gate_file(tmp_path, '[[gates]]\nkind = "ppi_ci_lower"\ncriterion = "quality"\nmin = 1\n', labels=""))
    config = load_gate_config(gate_file(tmp_path, '[[gates]]\nkind = "ppi_ci_lower"\ncriterion = "quality"\nmin = 1\nmin_labels = 60\n'))
    with pytest.raises(InputError, match="at least 60"):
        evaluate_gates(config)
    with (tmp_path / "labels.jsonl").open("a") as fh:
        fh.write(json.dumps({"id": "not-in-run", "label": 3}) + "\n")
    with pytest.raises(InputError, match="not items of this run: 'not-in-run'"):
        evaluate_gates(load_gate_config(gate_file(tmp_path, '[[gates]]\nkind = "ppi_ci_lower"\ncriterion = "quality"\nmin = 1\n')))


def test_labelled_items_the_judge_did_not_score_are_left_out(tmp_path):
    write_run(tmp_path, n_labels=35)
    labelled = [json.loads(line)["id"] for line in (tmp_path / "labels.jsonl").read_text().splitlines()]
    with (tmp_path / "results.jsonl").open("a") as fh:  # the judge failed on ten labelled items in a retry
        for i in labelled[:10]:
            fh.write(json.dumps({"id": i, "criterion": "quality", "method": "geval/exact", "status": "error", "score": None}) + "\n")
    verdict = evaluate_gates(load_gate_config(gate_file(tmp_path, '[[gates]]\nkind = "ppi_ci_lower"\ncriterion = "quality"\nmin = 1\n')))
    g = gate_of(verdict, "ppi_ci_lower")
    assert g.outcome == "undetermined" and "only 25 labelled items have a judge score" in g.message
    assert verdict.exit_code == 2


def test_decide_without_labels_is_undetermined(tmp_path):
    from judgesdk.gate import collect, decide

    write_run(tmp_path)
    config = load_gate_config(gate_file(tmp_path, '[[gates]]\nkind = "ppi_ci_lower"\ncriterion = "quality"\nmin = 1\n'))
    verdict = decide(config, collect(config))
    assert gate_of(verdict, "ppi_ci_lower").outcome == "undetermined" and verdict.exit_code == 2
    labels = {"quality": read_labels(tmp_path / "labels.jsonl")}
    assert isinstance(labels["quality"], HumanLabels)
    assert gate_of(decide(config, collect(config), labels), "ppi_ci_lower").outcome == "pass"


# -- the CLI ------------------------------------------------------------------------------------------


def test_cli_gate_and_label_slice(tmp_path, capsys):
    from judgesdk.cli.app import main

    truth, _ = write_run(tmp_path)
    path = gate_file(tmp_path, f'[[gates]]\nkind = "ppi_ci_lower"\ncriterion = "quality"\nmin = {truth - 0.45}\n')
    assert main(["gate", "--config", str(path), "--markdown", str(tmp_path / "gate.md")]) == 0
    out = capsys.readouterr().out
    assert "PASS" in out and "PPI++" in out and "labels worth" in out
    assert "Corrected estimates" in (tmp_path / "gate.md").read_text()
    (tmp_path / "labels.jsonl").write_text('{"id": "doc0:sys0", "label": "great"}\n')
    assert main(["gate", "--config", str(path)]) == 3
    assert "must be a number" in capsys.readouterr().err

    # draw a slice: reproducible, an extension keeps the pilot, labels left to fill in
    slice_file = tmp_path / "slice.jsonl"
    assert main(["label-slice", "--results", str(tmp_path / "results.jsonl"), "--n", "30", "--seed", "2", "-o", str(slice_file)]) == 0
    lines = [json.loads(line) for line in slice_file.read_text().splitlines()]
    assert len(lines) == 30 and all(line["label"] is None for line in lines)
    assert "drew 30 of 400 items" in capsys.readouterr().err
    assert main(["label-slice", "--results", str(tmp_path / "results.jsonl"), "--n", "40", "--seed", "2"]) == 0
    extended = [json.loads(line)["id"] for line in capsys.readouterr().out.splitlines()]
    assert extended[:30] == [line["id"] for line in lines]
    assert main(["label-slice", "--results", str(tmp_path / "results.jsonl"), "--n", "401"]) == 3

    # plan from a pilot (unfilled labels are an error naming the fix)
    assert main(["label-slice", "--results", str(tmp_path / "results.jsonl"), "--pilot", str(slice_file), "--half-width", "0.1"]) == 3
    assert "not labelled yet" in capsys.readouterr().err
    write_run(tmp_path, n_labels=40)
    assert main(["label-slice", "--results", str(tmp_path / "results.jsonl"), "--pilot", str(tmp_path / "labels.jsonl"), "--half-width", "0.15"]) == 0
    captured = capsys.readouterr()
    plan = json.loads(captured.out)
    assert plan["n_pilot"] == 40 and plan["n_total"] == 400 and plan["n_ppi"] <= plan["n_human_only"]
    assert "with labels alone" in captured.err
    assert main(["label-slice", "--results", str(tmp_path / "results.jsonl"), "--pilot", str(tmp_path / "labels.jsonl")]) == 3
