"""Sort-based ranking (merge sort on calibrated both-order probabilities) and active pair selection for
Bradley-Terry, on scripted judges with known strengths and positional bias: exact counts and orders."""

from __future__ import annotations

import math
import random

import pytest

from judgesdk.core.errors import InputError
from judgesdk.provider.protocol import as_text
from judgesdk.providers.scripted import ScriptedProvider, ScriptedReply
from judgesdk.scorers.pairwise import (
    BradleyTerryFit,
    OrderJudgement,
    calibrated,
    position_scores,
    rank,
)
from judgesdk.scorers.pairwise.adaptive import _most_uncertain

SOURCE = "The council voted to build a library."


def outputs(n: int) -> list[str]:
    return [f"OUT{i:02d} text" for i in range(n)]


def bt_judge(theta: list[float], gamma: float) -> ScriptedProvider:
    """P(first position wins) = sigmoid(theta_first - theta_second + gamma), read from the prompt's order."""

    def rule(request):
        text = as_text(request.messages)
        first, second = sorted((i for i in range(len(theta)) if f"OUT{i:02d}" in text), key=lambda i: text.index(f"OUT{i:02d}"))
        p = 1 / (1 + math.exp(-(theta[first] - theta[second] + gamma)))
        return ScriptedReply(label_probs={"A": p, "B": 1 - p})

    return ScriptedProvider(rule)


def merge_sort_bound(n: int) -> int:
    """Comparisons of bottom-up merge sort at most: at most n - 1 per level, ceil(log2 n) levels."""
    return (n - 1) * math.ceil(math.log2(n))


async def test_sort_recovers_the_true_order_despite_a_strong_first_position_bias():
    theta = [0.3 * i for i in range(12)]  # OUT11 best; adjacent outputs differ by less than the bias
    random.Random(4).shuffle(theta)
    provider = bt_judge(theta, gamma=2.0)
    result = await rank(provider, outputs(12), source=SOURCE, criterion="coherence", strategy="sort")
    assert result.order == sorted(range(12), key=lambda i: -theta[i])
    pairs = [frozenset((c.first, c.second)) for c in result.comparisons]
    assert len(pairs) == 2 * len(set(pairs)) == len(provider.calls) == result.comparisons_planned
    assert all(((c.second, c.first) in {(d.first, d.second) for d in result.comparisons}) for c in result.comparisons)
    assert len(set(pairs)) <= 33 < merge_sort_bound(12)  # levels of 6 + 9 + 7 + 11 pairs at most: 66 of 132 calls
    assert result.bradley_terry is not None and result.scores == result.bradley_terry.strengths
    assert result.strategy == result.selection == "sort" and result.positional_bias.first_position_rate > 0.6


async def test_sort_outputs_returns_the_merge_sorted_order():
    from judgesdk.scorers.pairwise import sort_outputs
    from judgesdk.scorers.pairwise.comparison import _setup

    theta = [0.0, 2.0, 1.0, 3.0, -1.0]
    order, made = await sort_outputs(_setup("pairwise", SOURCE, "coherence", None), bt_judge(theta, 1.0), outputs(5))
    assert order == [3, 1, 2, 0, 4] and len(made) % 2 == 0 and len(made) // 2 <= merge_sort_bound(5)


async def test_single_order_decisions_would_have_followed_the_bias():
    theta = [0.0, 0.5]
    provider = bt_judge(theta, gamma=2.0)
    result = await rank(provider, outputs(2), source=SOURCE, criterion="coherence", strategy="sort")
    first_only = next(c for c in result.comparisons if c.first == 0)
    assert first_only.p_first > 0.5  # asked once, the worse output wins from the first position
    assert result.order == [1, 0]  # both orders together find the better one


def test_calibrated_probability_from_both_orders():
    ij = OrderJudgement(first=0, second=1, p_first=0.9, status="ok", method="exact")
    ji = OrderJudgement(first=1, second=0, p_first=0.7, status="ok", method="exact")
    assert calibrated(ij, ji) == pytest.approx((0.9 + 0.3) / 2)
    unparsed = ji.model_copy(update={"p_first": None})
    assert calibrated(ij, unparsed) == pytest.approx(0.9)
    assert calibrated(ij.model_copy(update={"p_first": None}), unparsed) == 0.5
    assert position_scores([2, 0, 1]) == [0.5, 0.0, 1.0]


async def test_active_bradley_terry_spends_exactly_the_budget_on_distinct_pairs():
    theta = [1.2, -0.4, 2.0, 0.1, -1.5, 0.8, -0.9, 1.6]
    provider = bt_judge(theta, gamma=0.5)
    budget = 2 * 7 + 10  # a spanning path, then five actively chosen pairs
    result = await rank(
        provider, outputs(8), source=SOURCE, criterion="coherence", strategy="bradley-terry", selection="active", budget=budget, seed=3
    )
    pairs = [frozenset((c.first, c.second)) for c in result.comparisons]
    assert result.comparisons_planned == budget == len(provider.calls) and len(set(pairs)) == budget // 2
    assert set().union(*pairs) == set(range(8)) and result.selection == "active"
    assert result.order == sorted(range(8), key=lambda i: -theta[i])  # exact probabilities: the fit recovers the truth
    assert result.bradley_terry.position_advantage == pytest.approx(0.5, abs=0.05)


def test_active_selection_prefers_the_closest_call_and_spreads_a_round():
    fit = BradleyTerryFit(strengths=[3.0, 2.9, 0.0, -3.0], position_advantage=0.0, converged=True, iterations=1, l2=0.01)
    assert _most_uncertain(fit, 4, set(), 1, random.Random(0)) == [(0, 1)]
    # (1, 2) is the next closest call, but a round prefers outputs not already in it
    assert _most_uncertain(fit, 4, set(), 2, random.Random(0)) == [(0, 1), (2, 3)]
    assert _most_uncertain(fit, 4, {frozenset((0, 1))}, 1, random.Random(0)) == [(1, 2)]


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"strategy": "sort", "budget": 10}, "drop the budget"),
        ({"strategy": "bradley-terry", "selection": "active"}, "budget"),
        ({"strategy": "bradley-terry", "selection": "active", "budget": 5}, "even"),
        ({"strategy": "bradley-terry", "selection": "greedy", "budget": 8}, "unknown selection"),
    ],
)
async def test_bad_sort_and_active_requests_say_what_to_fix(kwargs, match):
    with pytest.raises(InputError, match=match):
        await rank(bt_judge([0, 1, 2], 0.0), outputs(3), source=SOURCE, criterion="coherence", **kwargs)


def test_judge_rank_with_sort():
    from judgesdk.judging.judge import Judge

    with Judge(bt_judge([0.0, 2.0, 1.0], 0.3)) as judge:
        ranking = judge.rank(outputs(3), source=SOURCE, criterion="coherence", strategy="sort")
    assert ranking.order == [1, 2, 0] and ranking.comparisons_used == ranking.comparisons_planned


def test_select_pairs_names_the_selections_it_draws_and_points_active_to_rank():
    from judgesdk.scorers.pairwise import SELECTIONS, select_pairs

    with pytest.raises(InputError, match="choose one of full, random, no-repeat, symmetric$"):
        select_pairs(3, "greedy", 2)  # type: ignore[arg-type]
    with pytest.raises(InputError, match="strategy='bradley-terry', selection='active'"):
        select_pairs(3, "active", 4)
    assert "active" in SELECTIONS


def test_cli_rank_accepts_every_selection_including_active(monkeypatch, tmp_path, capsys):
    import json

    from judgesdk.cli.app import main
    from judgesdk.judging.judge import Judge

    theta = [0.0, 2.0, 1.0, -1.0]
    monkeypatch.setattr(Judge, "from_config", classmethod(lambda cls, config=None: Judge(bt_judge(theta, 0.3))))
    lines = [json.dumps({"id": f"o{i}", "output": o, "source": SOURCE}) for i, o in enumerate(outputs(4))]
    (tmp_path / "outs.jsonl").write_text("\n".join(lines) + "\n")
    args = ["rank", str(tmp_path / "outs.jsonl"), "--strategy", "bradley-terry", "--selection", "active", "--budget", "8"]
    assert main(args) == 0
    ranking = json.loads(capsys.readouterr().out)
    assert ranking["selection"] == "active" and ranking["comparisons_planned"] == 8
    assert ranking["order"] == [1, 2, 0, 3]
