"""Which comparisons to make (004 §3.4, Fig. 2) and the scores they give: win ratios (004 eq. 4), a
Bradley-Terry fit, and the positional bias of the comparisons made (004 §3.5).

* :func:`select_pairs`: ``full`` (all N(N-1) ordered comparisons) or, for a budget of R ordered
  comparisons, ``random`` (any ordered pairs), ``no-repeat`` (at most one order per pair) or ``symmetric``
  (R/2 pairs, both orders).
* :func:`win_ratios`: each output's mean probability of winning the comparisons it took part in.
* :func:`fit_bradley_terry`: a Bradley-Terry model fitted to any subset of comparisons by maximum a
  posteriori with scipy's L-BFGS-B: ``P(first beats second) = sigmoid(theta_first - theta_second + gamma)``
  with soft outcomes ``p_first``, a first-position advantage ``gamma`` (004 §3.5's positional bias as a
  parameter) and a weak Gaussian prior (``l2``) that keeps strengths finite when an output wins every
  comparison and pins outputs of disconnected comparison graphs to 0. Strengths are log-odds, mean-centred.
* :func:`positional_bias`: how often the first position won, by the one computation meta-evaluation also
  uses (:func:`judgesdk.stats.positional.position_bias`).
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from itertools import permutations
from typing import Literal

import numpy as np
from pydantic import BaseModel

from judgesdk.core import InputError
from judgesdk.scorers.pairwise.comparison import OrderJudgement
from judgesdk.stats import OrderVerdict, position_bias

Selection = Literal["full", "random", "no-repeat", "symmetric", "active"]

SELECTIONS: tuple[str, ...] = ("full", "random", "no-repeat", "symmetric", "active")
_FIXED_SELECTIONS = tuple(s for s in SELECTIONS if s != "active")  # chosen up front by select_pairs


class PositionalBias(BaseModel):
    """004 §3.5: how often the first position was chosen (0.5 for an unbiased comparator)."""

    first_position_rate: float | None  # share of verdicts for the first position (a tie counts half)
    mean_p_first: float | None  # mean of P(first better)
    n: int


class BradleyTerryFit(BaseModel):
    strengths: list[float | None]  # mean-centred log-strengths; None for outputs never compared
    position_advantage: float  # gamma: log-odds added to the first position
    converged: bool
    iterations: int
    l2: float


# -- which comparisons (004 §3.4, Fig. 2) -----------------------------------------------------------


def select_pairs(n: int, strategy: Selection, budget: int | None = None, *, seed: int = 0) -> list[tuple[int, int]]:
    """Ordered pairs (first, second) to compare, sorted; the same seed gives the same pairs.

    ``full``: all n(n-1) ordered pairs (no budget). With a budget R: ``random`` draws R of the n(n-1)
    ordered pairs; ``no-repeat`` draws R of the n(n-1)/2 unordered pairs and a random order for each;
    ``symmetric`` draws R/2 unordered pairs and takes both orders (R even).
    """
    if n < 2:
        raise InputError(f"ranking needs at least two outputs, got {n}")
    ordered = list(permutations(range(n), 2))
    if strategy == "full":
        if budget is not None and budget != len(ordered):
            raise InputError(
                f"strategy 'full' makes all n(n-1) = {len(ordered)} comparisons; drop the budget or choose "
                "random, no-repeat or symmetric for a budget of R comparisons"
            )
        return ordered
    if strategy == "active":
        raise InputError("selection 'active' chooses pairs as the fit goes: use rank(strategy='bradley-terry', selection='active')")
    if strategy not in _FIXED_SELECTIONS:
        raise InputError(f"unknown selection {strategy!r}; choose one of {', '.join(_FIXED_SELECTIONS)}")
    rng = random.Random(seed)
    unordered = [(i, j) for i, j in ordered if i < j]
    if strategy == "random":
        _check_budget(budget, 1, len(ordered), strategy)
        return sorted(rng.sample(ordered, budget))  # type: ignore[arg-type]
    if strategy == "no-repeat":
        _check_budget(budget, 1, len(unordered), strategy)
        return sorted((i, j) if rng.random() < 0.5 else (j, i) for i, j in rng.sample(unordered, budget))  # type: ignore[arg-type]
    _check_budget(budget, 2, len(ordered), strategy)
    if budget % 2:  # type: ignore[operator]
        raise InputError(f"strategy 'symmetric' compares each pair in both orders: the budget must be even, got {budget}")
    chosen = rng.sample(unordered, budget // 2)  # type: ignore[operator]
    return sorted([*chosen, *((j, i) for i, j in chosen)])


def _check_budget(budget: int | None, low: int, high: int, strategy: str) -> None:
    if budget is None or not isinstance(budget, int) or not low <= budget <= high:
        raise InputError(f"strategy {strategy!r} needs a budget R of comparisons with {low} <= R <= {high}, got {budget}")


# -- scores from comparisons -----------------------------------------------------------------------


def win_ratios(n: int, judgements: Sequence[OrderJudgement], *, hard: bool = False) -> list[float | None]:
    """004 eq. 4 over the comparisons made: each output's mean probability of winning the comparisons it
    took part in (over the full matrix this is exactly (1 / (2N - 2)) sum_j c(x_i, x_j) + c~(x_i, x_j)).

    ``hard=True`` counts decisions (c in {0, 1}, 0.5 for an exact tie) instead of probabilities.
    """
    wins, counts = [0.0] * n, [0] * n
    for judgement in judgements:
        for index in (judgement.first, judgement.second):
            p = judgement.p_wins(index)
            if p is None:
                continue
            wins[index] += (1.0 if p > 0.5 else 0.0 if p < 0.5 else 0.5) if hard else p
            counts[index] += 1
    return [w / c if c else None for w, c in zip(wins, counts)]


def positional_bias(judgements: Sequence[OrderJudgement]) -> PositionalBias:
    """004 §3.5: share of comparisons whose verdict was the first position (a tie counts half, a judgement
    with a probability and no verdict as no first-position win), and the mean P(first better), over the
    judgements with a probability."""
    usable = [OrderVerdict(first=j.first, second=j.second, verdict=j.verdict, p_first=j.p_first) for j in judgements if j.p_first is not None]
    found = position_bias(usable, tie_credit=0.5)
    return PositionalBias(first_position_rate=found.first_rate, mean_p_first=found.mean_p_first, n=found.n)


def fit_bradley_terry(
    n: int, judgements: Sequence[OrderJudgement], *, position_effect: bool = True, l2: float = 0.01
) -> BradleyTerryFit:
    """MAP Bradley-Terry fit from any set of (soft) comparisons, by L-BFGS-B (see the module docstring)."""
    from scipy.optimize import minimize

    usable = [j for j in judgements if j.p_first is not None]
    first = np.array([j.first for j in usable], dtype=int)
    second = np.array([j.second for j in usable], dtype=int)
    y = np.array([j.p_first for j in usable], dtype=float)

    def objective(x: np.ndarray) -> tuple[float, np.ndarray]:
        theta, gamma = x[:n], (x[n] if position_effect else 0.0)
        d = theta[first] - theta[second] + gamma
        loss = float(np.sum(y * np.logaddexp(0.0, -d) + (1 - y) * np.logaddexp(0.0, d))) + 0.5 * l2 * float(x @ x)
        g = 1.0 / (1.0 + np.exp(-d)) - y
        grad = l2 * x.copy()
        np.add.at(grad, first, g)
        np.add.at(grad, second, -g)
        if position_effect:
            grad[n] += float(g.sum())
        return loss, grad

    result = minimize(objective, np.zeros(n + int(position_effect)), jac=True, method="L-BFGS-B")
    theta = result.x[:n] - result.x[:n].mean()
    seen = set(first.tolist()) | set(second.tolist())
    return BradleyTerryFit(
        strengths=[float(theta[i]) if i in seen else None for i in range(n)],
        position_advantage=float(result.x[n]) if position_effect else 0.0,
        converged=bool(result.success),
        iterations=int(result.nit),
        l2=l2,
    )


def best_first(scores: Sequence[float | None]) -> list[int]:
    """Indices by descending score; outputs without a score last, in input order."""
    return sorted(range(len(scores)), key=lambda i: (scores[i] is None, -(scores[i] or 0.0), i))
