"""P_i, meta-correlation M (001 eq. 1-3), R_i (eq. 4, Table 7), positional bias (004 §3.5), review flags."""

from __future__ import annotations

import math

import pytest
from pydantic import ValidationError

from judgesdk.core.errors import InputError
from judgesdk.core.types import JudgeResult, LabelDistribution, Scale
from judgesdk.meta import (
    ItemSignals,
    PairwiseJudgement,
    ReviewPolicy,
    ScoredItem,
    meta_correlation,
    method_agreement,
    per_system_correlations,
    positional_bias,
    review_flags,
)

# Four systems of five outputs. Human scores of system i are i + 2 + (0, .1, .2, .3, .4), so Q_i
# rises with i; predictions are the human order with 0, 1, 2 adjacent swaps, then reversed, so
# Spearman P_i = 1, 0.9, 0.8, -1 (1 - 6 * sum d^2 / (n (n^2 - 1)) with sum d^2 = 0, 2, 4, 40).
ORDERS = {"S1": [0, 1, 2, 3, 4], "S2": [1, 0, 2, 3, 4], "S3": [1, 0, 3, 2, 4], "S4": [4, 3, 2, 1, 0]}
EXPECTED_P = {"S1": 1.0, "S2": 0.9, "S3": 0.8, "S4": -1.0}


def ladder(prediction_of=lambda system, j, human: ORDERS[system][j]) -> list[ScoredItem]:
    out = []
    for i, system in enumerate(ORDERS):
        for j in range(5):
            human = i + 2 + 0.1 * j
            out.append(ScoredItem(doc_id=f"d{j}", system_id=system, human=human, prediction=prediction_of(system, j, human)))
    return out


def test_per_system_correlations_and_spread() -> None:
    res = per_system_correlations(ladder(), "spearman")
    assert {g.group: g.value for g in res.systems} == pytest.approx(EXPECTED_P)
    assert res.spread.min == pytest.approx(-1.0) and res.spread.max == pytest.approx(1.0)
    assert res.spread.range == pytest.approx(2.0) and res.spread.median == pytest.approx(0.85)
    assert res.n_undefined == 0


def test_meta_correlation_uses_mean_human_quality() -> None:
    m = meta_correlation(ladder(), "spearman")
    assert m.quality == pytest.approx({"S1": 2.2, "S2": 3.2, "S3": 4.2, "S4": 5.2})
    assert m.value == pytest.approx(-1.0)  # quality rises, alignment falls
    assert m.n_systems == 4 and m.dropped_systems == []
    k = meta_correlation(ladder(), "kendall")
    assert k.value == pytest.approx(-1.0) and k.method == "kendall"


def test_meta_correlation_drops_undefined_systems_like_001_table_28() -> None:
    items = ladder(lambda s, j, h: 5.0 if s == "S2" else ORDERS[s][j])  # a judge giving S2 all 5s
    m = meta_correlation(items, "spearman", convention="001-drop-undefined")
    assert m.performance["S2"] is None and m.dropped_systems == ["S2"]
    assert m.n_systems == 3 and m.value == pytest.approx(-1.0)
    c004 = meta_correlation(items, "spearman", convention="004")  # constant prediction counts as 0
    assert c004.performance["S2"] == 0.0 and c004.n_systems == 4


def test_r_i_tracks_the_method_that_agrees_with_humans() -> None:
    method_a = ladder()  # P_i^A = 1, .9, .8, -1
    method_b = ladder(lambda s, j, h: 2 * h + 1)  # perfectly aligned with humans: P_i^B = 1
    ag = method_agreement(method_a, method_b, "spearman", tolerance=0.85)
    assert {g.group: g.value for g in ag.agreement} == pytest.approx(EXPECTED_P)  # R_i = P_i^A here
    assert ag.rho_r_pa == pytest.approx(1.0)
    assert ag.rho_r_pb is None  # P_i^B constant: undefined, not NaN
    assert ag.needs_human == ["S3", "S4"]
    assert ag.n_items == 20


def test_r_i_uses_only_items_both_methods_scored() -> None:
    method_a = ladder()
    method_b = [it for it in ladder(lambda s, j, h: h) if not (it.system_id == "S1" and it.doc_id == "d0")]
    ag = method_agreement(method_a, method_b)
    assert ag.n_items == 19
    assert next(g for g in ag.agreement if g.group == "S1").n == 4
    with pytest.raises(InputError):
        method_agreement(method_a, [it.model_copy(update={"doc_id": "zz"}) for it in method_b])


def test_positional_bias_first_wins_and_flips() -> None:
    j = PairwiseJudgement
    verdicts = [
        j(doc_id="d1", first="A", second="B", winner="first"),
        j(doc_id="d1", first="B", second="A", winner="first"),  # flips: B wins when shown first
        j(doc_id="d2", first="A", second="B", winner="first"),
        j(doc_id="d2", first="B", second="A", winner="second"),  # consistent: A both times
        j(doc_id="d3", first="A", second="B", winner="tie"),
        j(doc_id="d3", first="B", second="A", winner="first"),  # inconsistent, not a reversal
        j(doc_id="d4", first="A", second="C", winner="first"),  # only one order: no swap pair
    ]
    pb = positional_bias(verdicts)
    assert pb.first_win_rate == pytest.approx(5 / 7)
    assert pb.tie_rate == pytest.approx(1 / 7)
    assert pb.first_win_rate_decisive == pytest.approx(5 / 6)
    assert pb.n_swapped_pairs == 3
    assert pb.flip_rate == pytest.approx(1 / 3)
    assert pb.inconsistency_rate == pytest.approx(2 / 3)
    with pytest.raises(InputError):
        positional_bias([])


def test_unbiased_symmetric_judge_has_half_first_wins_and_no_flips() -> None:
    j = PairwiseJudgement
    verdicts = [j(doc_id="d", first="A", second="B", winner="first"), j(doc_id="d", first="B", second="A", winner="second")]
    pb = positional_bias(verdicts)
    assert pb.first_win_rate == 0.5 and pb.flip_rate == 0.0


def test_review_flags_combine_signals_by_the_worst_one() -> None:
    signals = [
        ItemSignals(item_id="ok", coverage=0.95, entropy=0.2, method_disagreement=0.0),
        ItemSignals(item_id="low-mass", coverage=0.3, entropy=0.2),
        ItemSignals(item_id="flip", order_flip=True),
        ItemSignals(item_id="spread", sample_spread=0.6, method_disagreement=0.5),
        ItemSignals(item_id="nothing"),
    ]
    flags = {f.item_id: f for f in review_flags(signals)}
    assert not flags["ok"].needs_review and flags["ok"].risk == pytest.approx(0.2)
    assert flags["low-mass"].needs_review and flags["low-mass"].reasons == ["low_coverage"]
    assert flags["flip"].needs_review and flags["flip"].reasons == ["order_flip"]
    assert flags["spread"].reasons == ["sample_spread", "method_disagreement"]
    assert not flags["nothing"].needs_review and flags["nothing"].risk is None
    strict = {f.item_id: f for f in review_flags(signals, ReviewPolicy(threshold=0.15, flag_without_signals=True))}
    assert strict["ok"].needs_review and strict["nothing"].needs_review
    lenient = {f.item_id: f for f in review_flags(signals, ReviewPolicy(weights={"order_flip": 0.0}))}
    assert not lenient["flip"].needs_review
    with pytest.raises(ValidationError, match="unknown review signal 'vibes'"):  # refused when the policy is made (issue 29 item 6)
        ReviewPolicy(weights={"vibes": 1.0})
    with pytest.raises(InputError):  # and still where the signals are combined, for a policy built without validation
        review_flags(signals, ReviewPolicy.model_construct(weights={"vibes": 1.0}, threshold=0.5, flag_without_signals=False))


def test_item_signals_from_a_judge_result() -> None:
    scale = Scale.likert(1, 5)
    uniform = LabelDistribution(scale=scale, probs=(0.2,) * 5, method="sampling", coverage=0.9)
    result = JudgeResult(score=3.0, status="ok", criterion="c", method="sampling", distribution=uniform)
    other = JudgeResult(score=5.0, status="ok", criterion="c", method="rts")
    s = ItemSignals.from_result("x", result, other)
    assert s.entropy == pytest.approx(1.0)
    assert s.coverage == pytest.approx(0.9)
    assert s.sample_spread == pytest.approx(math.sqrt(2.0) / 2)  # sd of uniform 1..5 over half the range
    assert s.method_disagreement == pytest.approx(0.5)
    assert review_flags([s])[0].reasons == ["entropy", "sample_spread", "method_disagreement"]
