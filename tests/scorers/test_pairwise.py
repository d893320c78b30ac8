"""Pairwise comparative assessment (004) and head-to-head (001): exact arithmetic on a scripted judge, then
the same calls end to end on the embedded model in-process and through the llama.cpp server."""

import math

import pytest

from judgesdk.core.errors import InputError
from judgesdk.core.types import Criterion
from judgesdk.estimation.estimator import EstimationSettings
from judgesdk.provider.protocol import Capabilities, as_text
from judgesdk.providers.scripted import ScriptedProvider, ScriptedReply
from judgesdk.scorers.common import ScorerOptions
from judgesdk.scorers.pairwise import (
    OrderJudgement,
    best_first,
    compare,
    fit_bradley_terry,
    positional_bias,
    rank,
    select_pairs,
    win_ratios,
)

SOURCE = "The council voted to build a library."
OUTS = ["OUT0 text", "OUT1 text", "OUT2 text"]
# P(first position better) for each ordered pair (first, second)
P_FIRST = {(0, 1): 0.9, (1, 0): 0.3, (0, 2): 0.8, (2, 0): 0.4, (1, 2): 0.7, (2, 1): 0.5}


def positions(request, n):
    """Indices of the outputs in the prompt, in order of appearance (first position first)."""
    text = as_text(request.messages)
    present = [i for i in range(n) if f"OUT{i}" in text]
    return sorted(present, key=lambda i: text.index(f"OUT{i}"))


def table_judge(table, n=3, labels=("A", "B")):
    def rule(request):
        first, second = positions(request, n)
        p = table[(first, second)]
        return ScriptedReply(label_probs={labels[0]: p, labels[1]: 1 - p})

    return ScriptedProvider(rule)


def bt_judge(theta, gamma):
    table = {(i, j): 1 / (1 + math.exp(-(theta[i] - theta[j] + gamma))) for i in range(len(theta)) for j in range(len(theta)) if i != j}
    return table_judge(table, n=len(theta))


# -- one comparison, both orders -------------------------------------------------------------------


async def test_compare_averages_both_orders_and_flags_consistency():
    provider = table_judge(P_FIRST)
    result = await compare(provider, OUTS[0], OUTS[1], source=SOURCE, criterion="coherence")
    assert result.p_a_better == pytest.approx((0.9 + (1 - 0.3)) / 2)
    assert [o.p_first for o in result.orders] == pytest.approx([0.9, 0.3])
    assert [(o.first, o.second) for o in result.orders] == [(0, 1), (1, 0)]
    assert result.verdicts == ("a", "a") and result.consistent is True and result.winner == "a"
    assert result.status == "ok" and result.p_tie is None and result.template_id == "pairwise.compare"
    assert result.usage.calls == 2 and len(provider.calls) == 2
    # prompt: source before both outputs, a first in the first call and b first in the second
    assert positions(provider.calls[0], 3) == [0, 1] and positions(provider.calls[1], 3) == [1, 0]
    text = as_text(provider.calls[0].messages)
    assert text.index(SOURCE) < text.index("OUT0") and text.endswith("Response")


async def test_position_bias_makes_orders_disagree():
    provider = ScriptedProvider(lambda r: ScriptedReply(label_probs={"A": 0.7, "B": 0.3}))
    result = await compare(provider, "x", "y", source=SOURCE, criterion="fluency")
    assert result.p_a_better == pytest.approx(0.5)
    assert result.verdicts == ("a", "b") and result.consistent is False


async def test_h2h_keeps_both_verdicts_and_the_tie():
    provider = ScriptedProvider(lambda r: ScriptedReply(label_probs={"A": 0.5, "B": 0.2, "C": 0.3}))
    result = await compare(provider, "OUT0", "OUT1", source=SOURCE, criterion="Coherence", protocol="h2h")
    assert result.template_id == "h2h.coherence"
    assert [o.p_first for o in result.orders] == pytest.approx([5 / 7, 5 / 7])
    assert result.p_a_better == pytest.approx((5 / 7 + 2 / 7) / 2)
    assert result.p_tie == pytest.approx(0.3)
    assert result.verdicts == ("a", "b") and result.consistent is False
    assert as_text(provider.calls[0].messages).endswith("Your choice (enter 1 letter from A to C):")


async def test_h2h_tie_verdict_when_tie_is_most_likely():
    provider = ScriptedProvider(lambda r: ScriptedReply(label_probs={"A": 0.2, "B": 0.2, "C": 0.6}))
    result = await compare(provider, "OUT0", "OUT1", source=SOURCE, criterion="relevance", protocol="h2h")
    assert result.verdicts == ("tie", "tie") and result.consistent is True
    assert result.p_a_better == pytest.approx(0.5)


async def test_dataset_variant_uses_summary_labels():
    provider = table_judge(P_FIRST)
    result = await compare(provider, OUTS[0], OUTS[1], source=SOURCE, criterion="coherence", options=ScorerOptions(dataset="SummEval"))
    assert result.template_id == "pairwise.compare.summeval"
    assert as_text(provider.calls[0].messages).endswith("Summary")


async def test_unparsed_answer_is_a_status_not_a_number():
    provider = ScriptedProvider(lambda r: "I cannot say.", capabilities=Capabilities())
    options = ScorerOptions(settings=EstimationSettings(samples=2))
    result = await compare(provider, "x", "y", source=SOURCE, criterion="coherence", options=options)
    assert result.status == "unparsed" and result.p_a_better is None and result.consistent is None
    assert result.verdicts == (None, None) and result.winner is None


async def test_bad_input_says_what_to_fix():
    provider = table_judge(P_FIRST)
    with pytest.raises(InputError, match="source"):
        await compare(provider, "x", "y", source="", criterion="coherence")
    with pytest.raises(InputError, match="empty"):
        await compare(provider, "x", " ", source=SOURCE, criterion="coherence")
    with pytest.raises(InputError, match="protocol"):
        await compare(provider, "x", "y", source=SOURCE, criterion="coherence", protocol="elo")
    with pytest.raises(InputError, match="head-to-head"):
        await compare(provider, "x", "y", source=SOURCE, criterion="humour", protocol="h2h")


# -- which comparisons ------------------------------------------------------------------------------


def test_full_matrix_is_every_ordered_pair():
    pairs = select_pairs(4, "full")
    assert len(pairs) == 12 == len(set(pairs)) and all(i != j for i, j in pairs)


def test_partial_matrices_respect_budget_and_shape():
    rand = select_pairs(5, "random", 7, seed=1)
    assert len(set(rand)) == 7 and rand == select_pairs(5, "random", 7, seed=1)
    no_repeat = select_pairs(5, "no-repeat", 10, seed=2)
    assert len(no_repeat) == 10 and len({frozenset(p) for p in no_repeat}) == 10  # each pair once, one order
    symmetric = select_pairs(5, "symmetric", 8, seed=3)
    assert len(symmetric) == 8 and all((j, i) in symmetric for i, j in symmetric)


@pytest.mark.parametrize(
    ("n", "strategy", "budget", "match"),
    [
        (4, "full", 5, "drop the budget"),
        (4, "random", None, "budget"),
        (4, "random", 13, "budget"),
        (4, "no-repeat", 7, "budget"),
        (4, "symmetric", 5, "even"),
        (4, "symmetric", 14, "budget"),
        (1, "full", None, "two outputs"),
    ],
)
def test_bad_budgets_are_input_errors(n, strategy, budget, match):
    with pytest.raises(InputError, match=match):
        select_pairs(n, strategy, budget)


# -- scores from comparisons ------------------------------------------------------------------------


async def test_full_ranking_win_ratio_is_004_eq4():
    provider = table_judge(P_FIRST)
    result = await rank(provider, OUTS, source=SOURCE, criterion="coherence", strategy="full")
    # eq. 4 by hand: (1 / (2N - 2)) * sum_j c(x_i, x_j) + c~(x_i, x_j), N = 3
    assert result.win_ratios == pytest.approx([(0.9 + 0.7 + 0.8 + 0.6) / 4, (0.1 + 0.3 + 0.7 + 0.5) / 4, (0.2 + 0.4 + 0.3 + 0.5) / 4])
    assert result.scores == result.win_ratios and result.order == [0, 1, 2]
    assert result.comparisons_planned == result.comparisons_used == 6 == len(provider.calls)
    bias = result.positional_bias
    assert bias.first_position_rate == pytest.approx(3.5 / 6) and bias.mean_p_first == pytest.approx(3.6 / 6) and bias.n == 6
    assert result.status == "ok" and result.bradley_terry is None


async def test_hard_win_ratio_counts_decisions():
    provider = table_judge(P_FIRST)
    result = await rank(provider, OUTS, source=SOURCE, criterion="coherence", strategy="full", hard=True)
    assert result.win_ratios == pytest.approx([1.0, (0 + 0 + 1 + 0.5) / 4, (0 + 0 + 0 + 0.5) / 4])


async def test_symmetric_budget_makes_exactly_the_selected_comparisons():
    outputs = [f"OUT{i} text" for i in range(5)]
    provider = bt_judge([2, 1, 0, -1, -2], 0.0)
    result = await rank(provider, outputs, source=SOURCE, criterion="coherence", strategy="symmetric", budget=8, seed=7)
    pairs = [(c.first, c.second) for c in result.comparisons]
    assert pairs == select_pairs(5, "symmetric", 8, seed=7)
    assert [tuple(positions(r, 5)) for r in provider.calls] == pairs
    assert result.comparisons_planned == 8 and result.budget == 8


async def test_outputs_without_comparisons_have_no_score():
    provider = table_judge(P_FIRST)
    result = await rank(provider, OUTS, source=SOURCE, criterion="coherence", strategy="no-repeat", budget=1, seed=0)
    compared = {result.comparisons[0].first, result.comparisons[0].second}
    left_out = ({0, 1, 2} - compared).pop()
    assert result.scores[left_out] is None and result.order[-1] == left_out
    assert any("no usable comparison" in n for n in result.notes)


def test_bradley_terry_recovers_a_known_order_and_position_advantage():
    theta, gamma = [1.5, 0.8, 0.0, -0.7, -1.6], 0.4
    judgements = [
        OrderJudgement(first=i, second=j, p_first=1 / (1 + math.exp(-(theta[i] - theta[j] + gamma))), status="ok", method="exact")
        for i, j in select_pairs(5, "full")
    ]
    fit = fit_bradley_terry(5, judgements, l2=1e-6)
    assert fit.converged and best_first(fit.strengths) == [0, 1, 2, 3, 4]
    mean = sum(theta) / 5
    assert fit.strengths == pytest.approx([t - mean for t in theta], abs=1e-3)
    assert fit.position_advantage == pytest.approx(gamma, abs=1e-3)


async def test_bradley_terry_ranking_from_a_symmetric_subset():
    outputs = [f"OUT{i} text" for i in range(5)]
    provider = bt_judge([2.0, 1.0, 0.0, -1.0, -2.0], 0.3)
    result = await rank(provider, outputs[::-1], source=SOURCE, criterion="coherence", strategy="bradley-terry", budget=16, seed=1)
    assert result.selection == "symmetric" and result.comparisons_planned == 16
    assert [outputs[::-1][i] for i in result.order] == outputs  # best first, whatever the input order
    assert result.bradley_terry.position_advantage > 0


def test_positional_bias_of_no_usable_comparison():
    assert positional_bias([]).first_position_rate is None
    assert win_ratios(2, []) == [None, None]


async def test_rank_bad_input():
    provider = table_judge(P_FIRST)
    with pytest.raises(InputError, match="strategy"):
        await rank(provider, OUTS, source=SOURCE, criterion="coherence", strategy="elo")
    with pytest.raises(InputError, match="ids"):
        await rank(provider, OUTS, source=SOURCE, criterion="coherence", ids=["a"])


# -- through the Judge and the CLI ------------------------------------------------------------------


def test_judge_compare_and_rank_fall_back_along_the_chain():
    from judgesdk.core.errors import TransientError
    from judgesdk.judging.judge import Judge

    def broken(request):
        raise TransientError("down")

    with Judge([ScriptedProvider(broken), table_judge(P_FIRST)], template="direct.likert") as judge:
        comparison = judge.compare(OUTS[0], OUTS[1], source=SOURCE, criterion="coherence")
        ranking = judge.rank(OUTS, source=SOURCE, criterion="coherence", strategy="symmetric", budget=2, seed=0)
    assert comparison.p_a_better == pytest.approx(0.8) and comparison.template_id == "pairwise.compare"
    assert "failed: down" in comparison.notes[0]
    assert ranking.comparisons_planned == 2 and ranking.strategy == "symmetric"


def test_cli_compare_and_rank_print_json(monkeypatch, tmp_path, capsys):
    import json

    from judgesdk.cli.app import main
    from judgesdk.judging.judge import Judge

    monkeypatch.setattr(Judge, "from_config", classmethod(lambda cls, config=None: Judge(table_judge(P_FIRST))))
    (tmp_path / "b.txt").write_text(OUTS[1])
    assert main(["compare", "--a", OUTS[0], "--b", str(tmp_path / "b.txt"), "--source", SOURCE]) == 0
    assert json.loads(capsys.readouterr().out)["p_a_better"] == pytest.approx(0.8)
    lines = [json.dumps({"id": f"o{i}", "output": o, "source": SOURCE}) for i, o in enumerate(OUTS)]
    (tmp_path / "outs.jsonl").write_text("\n".join(lines) + "\n")
    assert main(["rank", str(tmp_path / "outs.jsonl"), "--strategy", "full"]) == 0
    ranking = json.loads(capsys.readouterr().out)
    assert ranking["ids"] == ["o0", "o1", "o2"] and ranking["win_ratios"] == pytest.approx([0.75, 0.4, 0.35])
    (tmp_path / "mixed.jsonl").write_text(lines[0] + "\n" + json.dumps({"output": "OUT1", "source": "other"}) + "\n")
    assert main(["rank", str(tmp_path / "mixed.jsonl")]) == 3
    assert "2 different sources" in capsys.readouterr().err


# -- end to end on the embedded model -------------------------------------------------------------

TINY_SOURCE = "Tom fed the cat at noon."
TINY = ["Tom fed the cat.", "The cat fed Tom.", "Noon."]
CRIT = Criterion(name="consistency", description="Only facts supported by the source.")


def check_comparison(result, protocol):
    assert result.status in ("ok", "low_coverage", "unparsed")
    assert result.protocol == protocol and len(result.orders) == 2
    if result.p_a_better is not None:
        assert 0 <= result.p_a_better <= 1 and result.consistent in (True, False)
    else:
        assert result.status == "unparsed"


@pytest.mark.integration
async def test_local_compare_and_h2h(local):
    result = await compare(local, TINY[0], TINY[1], source=TINY_SOURCE, criterion=CRIT)
    check_comparison(result, "pairwise")
    assert result.orders[0].method == "exact" and result.provider == "local"
    h2h = await compare(local, TINY[0], TINY[1], source=TINY_SOURCE, criterion=CRIT, protocol="h2h")
    check_comparison(h2h, "h2h")
    assert h2h.p_tie is not None and 0 <= h2h.p_tie <= 1


@pytest.mark.integration
async def test_local_rank_symmetric(local):
    result = await rank(local, TINY, source=TINY_SOURCE, criterion=CRIT, strategy="symmetric", budget=4)
    assert result.comparisons_planned == 4 and result.comparisons_used <= 4
    assert sorted(result.order) == [0, 1, 2] and result.positional_bias.n == result.comparisons_used
    assert result.usage.cached_input_tokens > 0  # comparisons share the instructions and source


@pytest.mark.integration
async def test_server_compare_through_openai_completions(llama_server):
    from judgesdk.providers.openai import OpenAIProvider

    provider = OpenAIProvider(model=llama_server.model, base_url=llama_server.base_url, api="completions")
    # one answer token: the server computes top logprobs over the whole vocabulary per generated token
    options = ScorerOptions(settings=EstimationSettings(max_tokens=1, samples=2, on_low_coverage="flag"))
    result = await compare(provider, TINY[0], TINY[1], source=TINY_SOURCE, criterion=CRIT, options=options)
    check_comparison(result, "pairwise")
    assert result.provider == "openai" and {o.method for o in result.orders} <= {"logprobs", "sampling"}
