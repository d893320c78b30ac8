"""Rankings that choose their comparisons as they go: merge sort, and active selection for Bradley-Terry.

* :func:`sort_outputs` (``rank(strategy="sort")``): merge sort (bottom-up; the merges of one level run
  concurrently) in which every comparison is made in both orders and decided by the calibrated probability
  ``p(i over j) = (P(i first wins) + 1 - P(j first wins)) / 2``, the mean over both orders that cancels a
  constant positional bias (PairS, Liu et al. 2024). At most N - 1 pairs per level and ceil(log2 N)
  levels, i.e. O(N log N) comparisons instead of N(N-1) (N = 12: at most 6 + 9 + 7 + 11 = 33 pairs, 66 of
  the full matrix's 132 calls). The ranking's scores are Bradley-Terry strengths fitted to the comparisons
  the sort made (their soft outcomes carry more than the sorted positions: on the benchmark of
  ``benchmarks/pairwise_sort.py`` the fit kept more of the full matrix's correlation than positions did);
  :func:`sort_outputs` returns the merge-sorted order itself.
* :func:`_active_comparisons` (``rank(strategy="bradley-terry", selection="active")``): a spanning path of
  random pairs first (every output compared), then, until ``budget`` ordered comparisons are spent, the not
  yet compared pairs whose outcome the current fit predicts least certainly (``|p - 0.5|`` smallest, with
  the fitted positional advantage averaged over both orders), a few at a time, each in both orders,
  refitting after each round.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Sequence

import numpy as np

from judgesdk.core import InputError
from judgesdk.provider import Provider
from judgesdk.scorers.pairwise.aggregate import BradleyTerryFit, _check_budget, fit_bradley_terry
from judgesdk.scorers.pairwise.comparison import OrderJudgement, _Setup, both_orders, judge_all

_ACTIVE_ROUND = 4  # pairs chosen per round of active selection (judged concurrently, then one refit)


def calibrated(ij: OrderJudgement, ji: OrderJudgement) -> float:
    """P(i better than j) from both orders (i first, then j first): their mean cancels a constant positional
    bias; one unparsed order leaves the other; none leaves 0.5 (no preference)."""
    sides = [p for p in (ij.p_wins(ij.first), ji.p_wins(ij.first)) if p is not None]
    return sum(sides) / len(sides) if sides else 0.5


def position_scores(order: Sequence[int]) -> list[float | None]:
    """Scores from a best-first order: 1 for the best, 0 for the worst, evenly spaced."""
    scores: list[float | None] = [None] * len(order)
    for position, index in enumerate(order):
        scores[index] = 1.0 - position / (len(order) - 1)
    return scores


async def sort_outputs(setup: _Setup, provider: Provider, outputs: list[str]) -> tuple[list[int], list[OrderJudgement]]:
    """Best-first order of ``outputs`` by bottom-up merge sort on calibrated probabilities (ties keep the
    input order), and every order judgement it made."""
    made: list[OrderJudgement] = []

    async def better(i: int, j: int) -> bool:
        ij, ji = await both_orders(setup, provider, outputs, i, j)
        made.extend((ij, ji))
        return calibrated(ij, ji) >= 0.5

    async def merge(left: list[int], right: list[int]) -> list[int]:
        merged: list[int] = []
        while left and right:
            merged.append(left.pop(0) if await better(left[0], right[0]) else right.pop(0))
        return merged + left + right

    runs = [[i] for i in range(len(outputs))]
    while len(runs) > 1:
        pairs = [(runs[k], runs[k + 1]) for k in range(0, len(runs) - 1, 2)]
        merged = await asyncio.gather(*(merge(list(a), list(b)) for a, b in pairs))
        runs = list(merged) + ([runs[-1]] if len(runs) % 2 else [])
    return runs[0], made


async def _active_comparisons(setup: _Setup, provider: Provider, outputs: list[str], budget: int | None, seed: int) -> list[OrderJudgement]:
    """Comparisons for a Bradley-Terry fit chosen where the current fit is least certain (module docstring)."""
    n = len(outputs)
    _check_budget(budget, 2, n * (n - 1), "bradley-terry with selection 'active'")
    if budget % 2:  # type: ignore[operator]
        raise InputError(f"active selection compares each pair in both orders: the budget must be even, got {budget}")
    pairs_left = budget // 2  # type: ignore[operator]
    rng = random.Random(seed)
    path = rng.sample(range(n), n)
    chosen = [(path[k], path[k + 1]) for k in range(n - 1)][:pairs_left]
    judgements: list[OrderJudgement] = []
    done: set[frozenset[int]] = set()
    while chosen:
        judgements += await judge_all(setup, provider, outputs, [p for i, j in chosen for p in ((i, j), (j, i))])
        done |= {frozenset(p) for p in chosen}
        pairs_left -= len(chosen)
        chosen = _most_uncertain(fit_bradley_terry(n, judgements), n, done, min(pairs_left, _ACTIVE_ROUND), rng)
    return judgements


def _most_uncertain(
    fit: BradleyTerryFit, n: int, done: set[frozenset[int]], k: int, rng: random.Random
) -> list[tuple[int, int]]:
    """Up to ``k`` uncompared pairs whose predicted outcome is closest to a coin flip, preferring pairs
    of outputs not already chosen this round (so one round spreads over the outputs)."""
    theta = [s or 0.0 for s in fit.strengths]
    gamma = fit.position_advantage

    def doubt(i: int, j: int) -> float:
        d = theta[i] - theta[j]
        p = (1 / (1 + np.exp(-(d + gamma))) + 1 / (1 + np.exp(-(d - gamma)))) / 2
        return abs(p - 0.5)

    candidates = sorted(
        (doubt(i, j), rng.random(), i, j) for i in range(n) for j in range(i + 1, n) if frozenset((i, j)) not in done
    )
    picked: list[tuple[int, int]] = []
    for disjoint in (True, False):
        for _, _, i, j in candidates:
            busy = {x for pair in picked for x in pair}
            if len(picked) < k and (i, j) not in picked and not (disjoint and busy & {i, j}):
                picked.append((i, j))
    return picked
