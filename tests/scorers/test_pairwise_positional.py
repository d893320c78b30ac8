"""One positional-bias computation (004 §3.5) for the pairwise rankings and for meta-evaluation.

:func:`judgesdk.stats.positional.position_bias` serves both; each caller states how a tie counts
(``tie_credit``). The two callers must give exactly the numbers their own computations gave before they
were merged: those are frozen here (``_ranking_before`` and ``_meta_before``, copied from the modules as
they were) and compared on seeded random verdicts, ties, unparsed answers and repeats included.
"""

from __future__ import annotations

import random

import pytest

from judgesdk.core.errors import InputError
from judgesdk.meta import PairwiseJudgement
from judgesdk.meta import positional_bias as meta_positional_bias
from judgesdk.providers.scripted import ScriptedProvider, ScriptedReply
from judgesdk.scorers.pairwise import OrderJudgement, rank
from judgesdk.scorers.pairwise import positional_bias as ranking_positional_bias
from judgesdk.stats.positional import OrderVerdict, position_bias

# -- the two computations as they were before (frozen copies) ----------------------------------------


def _ranking_before(judgements):
    usable = [j for j in judgements if j.p_first is not None]
    if not usable:
        return {"first_position_rate": None, "mean_p_first": None, "n": 0}
    hits = [1.0 if j.verdict == "first" else 0.5 if j.verdict == "tie" else 0.0 for j in usable]
    return {
        "first_position_rate": sum(hits) / len(usable),
        "mean_p_first": sum(j.p_first for j in usable) / len(usable),
        "n": len(usable),
    }


def _meta_before(judgements):
    n = len(judgements)
    counts = {w: sum(j.winner == w for j in judgements) for w in ("first", "second", "tie")}
    decisive = counts["first"] + counts["second"]
    by_order = {}
    for j in judgements:
        by_order.setdefault((j.doc_id, j.first, j.second), []).append(j.winning_system)
    flips = differs = comparisons = pairs = 0
    for (doc, x, y), winners in by_order.items():
        if x > y or (doc, y, x) not in by_order:
            continue
        pairs += 1
        for w1 in winners:
            for w2 in by_order[(doc, y, x)]:
                comparisons += 1
                differs += w1 != w2
                flips += w1 is not None and w2 is not None and w1 != w2
    return {
        "n_judgements": n,
        "first_win_rate": counts["first"] / n,
        "second_win_rate": counts["second"] / n,
        "tie_rate": counts["tie"] / n,
        "first_win_rate_decisive": counts["first"] / decisive if decisive else None,
        "n_swapped_pairs": pairs,
        "flip_rate": flips / comparisons if comparisons else None,
        "inconsistency_rate": differs / comparisons if comparisons else None,
    }


# -- random inputs ----------------------------------------------------------------------------------


def _order_judgements(rng: random.Random, n_outputs: int, count: int) -> list[OrderJudgement]:
    found = []
    for _ in range(count):
        first, second = rng.sample(range(n_outputs), 2)
        kind = rng.random()
        if kind < 0.1:  # unparsed
            found.append(OrderJudgement(first=first, second=second, p_first=None, status="error", method="exact"))
            continue
        p = rng.choice([0.5, rng.random()])
        verdict = None if kind < 0.2 else rng.choice(["first", "second", "tie"])  # None: a probability, no verdict
        found.append(OrderJudgement(first=first, second=second, p_first=p, verdict=verdict, status="ok", method="exact"))
    return found


def _pairwise_judgements(rng: random.Random, count: int) -> list[PairwiseJudgement]:
    systems, docs = ["A", "B", "C", "D"], ["d1", "d2", "d3"]
    found = []
    for _ in range(count):
        first, second = rng.sample(systems, 2) if rng.random() > 0.05 else ["A", "A"]  # a system against itself
        found.append(
            PairwiseJudgement(doc_id=rng.choice(docs), first=first, second=second, winner=rng.choice(["first", "second", "tie"]))
        )
    return found


@pytest.mark.parametrize("seed", range(40))
def test_rankings_give_the_same_numbers_as_before(seed):
    rng = random.Random(seed)
    judgements = _order_judgements(rng, rng.randint(2, 6), rng.randint(0, 40))
    assert ranking_positional_bias(judgements).model_dump() == _ranking_before(judgements)  # exact, not approx


@pytest.mark.parametrize("seed", range(40))
def test_meta_evaluation_gives_the_same_numbers_as_before(seed):
    rng = random.Random(seed)
    judgements = _pairwise_judgements(rng, rng.randint(1, 60))
    assert meta_positional_bias(judgements).model_dump() == _meta_before(judgements)  # exact, not approx


def test_the_tie_credit_is_the_only_difference_in_the_first_position_rate():
    verdicts = [
        OrderVerdict(first=0, second=1, verdict="first", p_first=0.9),
        OrderVerdict(first=1, second=0, verdict="tie", p_first=0.5),
        OrderVerdict(first=0, second=2, verdict="second", p_first=0.2),
        OrderVerdict(first=2, second=0, verdict=None, p_first=0.6),  # counts toward n only
    ]
    half, none = position_bias(verdicts, tie_credit=0.5), position_bias(verdicts, tie_credit=0.0)
    assert half.first_rate == pytest.approx(1.5 / 4) and none.first_rate == pytest.approx(1 / 4)
    assert half.tie_rate == none.tie_rate == pytest.approx(1 / 4) and half.second_rate == pytest.approx(1 / 4)
    assert half.first_rate_decisive == pytest.approx(1 / 2) and half.mean_p_first == pytest.approx(2.2 / 4)
    # both pairs were judged in both orders: 0-1 first vs tie (inconsistent), 0-2 output 2 vs no verdict
    assert half.n_swapped_pairs == 2 and half.flip_rate == 0.0 and half.inconsistency_rate == 1.0


def test_orders_pair_up_only_within_a_group():
    verdicts = [
        OrderVerdict(first="x", second="y", verdict="first", group="d1"),
        OrderVerdict(first="y", second="x", verdict="first", group="d2"),
    ]
    assert position_bias(verdicts, tie_credit=0.0).n_swapped_pairs == 0
    regrouped = [OrderVerdict(first=v.first, second=v.second, verdict=v.verdict, group="d1") for v in verdicts]
    found = position_bias(regrouped, tie_credit=0.0)
    assert found.n_swapped_pairs == 1 and found.flip_rate == 1.0


def test_no_verdicts_keep_each_callers_rule():
    empty = position_bias([], tie_credit=0.5)
    assert empty.n == 0 and empty.first_rate is None and empty.mean_p_first is None and empty.flip_rate is None
    assert ranking_positional_bias([]).first_position_rate is None  # a ranking with no usable comparison
    with pytest.raises(InputError):  # meta-evaluation asks for at least one verdict
        meta_positional_bias([])


async def test_a_ranking_reports_the_shared_computation():
    provider = ScriptedProvider(lambda request: ScriptedReply(label_probs={"A": 0.8, "B": 0.2}))
    outputs = ["first output text", "second output text", "third output text"]
    result = await rank(provider, outputs, source="A source.", criterion="coherence", strategy="full")
    verdicts = [OrderVerdict(first=j.first, second=j.second, verdict=j.verdict, p_first=j.p_first) for j in result.comparisons]
    shared = position_bias(verdicts, tie_credit=0.5)
    assert result.positional_bias.first_position_rate == shared.first_rate == 1.0  # always "A": always first
    assert result.positional_bias.n == shared.n == 6 and shared.flip_rate == 1.0
