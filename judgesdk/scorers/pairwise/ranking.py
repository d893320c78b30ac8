"""Ranking N outputs of one source by comparisons (004 §3.4): :func:`rank` and its :class:`Ranking`.

``strategy`` picks the comparisons and the score: ``full`` / ``random`` / ``no-repeat`` / ``symmetric``
score by win ratio (004 eq. 4) over the comparisons :func:`~judgesdk.scorers.pairwise.aggregate.select_pairs`
chose; ``bradley-terry`` fits strengths to the comparisons of its ``selection`` (a fixed one, or
``active``); ``sort`` merge-sorts (:mod:`judgesdk.scorers.pairwise.adaptive`). Every ranking reports the
positional bias of 004 §3.5 (how often the first position won) and which comparisons were made.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel, Field

from judgesdk.core import Criterion, InputError, ResultStatus
from judgesdk.provider import Provider, Usage
from judgesdk.scorers.common import ScorerOptions, total_usage, worst_status
from judgesdk.scorers.pairwise.adaptive import _active_comparisons, sort_outputs
from judgesdk.scorers.pairwise.aggregate import (
    SELECTIONS,
    BradleyTerryFit,
    PositionalBias,
    Selection,
    best_first,
    fit_bradley_terry,
    positional_bias,
    select_pairs,
    win_ratios,
)
from judgesdk.scorers.pairwise.comparison import OrderJudgement, Protocol, _check_outputs, _setup, judge_all

Strategy = Literal["full", "random", "no-repeat", "symmetric", "bradley-terry", "sort"]

STRATEGIES: tuple[str, ...] = ("full", "random", "no-repeat", "symmetric", "bradley-terry", "sort")


class Ranking(BaseModel):
    """Scores, order and evidence of :func:`rank`."""

    strategy: str
    selection: str  # how the comparisons were chosen (= strategy except for bradley-terry)
    protocol: str
    criterion: str
    template_id: str
    budget: int | None
    n_outputs: int
    ids: list[str | None]
    scores: list[float | None]  # win ratio (004 eq. 4) or Bradley-Terry strength; None: no usable comparison
    order: list[int]  # indices, best first; outputs without a score last
    win_ratios: list[float | None]
    bradley_terry: BradleyTerryFit | None = None
    positional_bias: PositionalBias
    comparisons: list[OrderJudgement]
    comparisons_planned: int
    comparisons_used: int  # those with a probability
    status: ResultStatus
    provider: str = ""
    model: str = ""
    usage: Usage = Field(default_factory=Usage)
    latency_s: float = 0.0
    notes: list[str] = Field(default_factory=list)


async def rank(
    provider: Provider,
    outputs: Sequence[str],
    *,
    source: str,
    criterion: Criterion | str,
    strategy: Strategy = "full",
    budget: int | None = None,
    options: ScorerOptions | None = None,
    protocol: Protocol = "pairwise",
    selection: Selection | None = None,
    seed: int = 0,
    hard: bool = False,
    ids: Sequence[str | None] | None = None,
) -> Ranking:
    """Rank ``outputs`` (all written for ``source``) by comparisons chosen with ``strategy`` and ``budget``.

    ``selection`` picks the comparisons of ``bradley-terry`` (default: ``full`` without a budget,
    ``symmetric`` with one); ``seed`` makes random selections reproducible; ``hard`` computes win ratios
    from decisions instead of probabilities. ``provider`` answers the comparisons, on ``criterion`` under
    ``protocol`` (``pairwise`` or ``h2h``) and the scorer ``options`` (as :func:`compare`); ``ids``, one per
    output, are carried into the ranking to name them. Returns a :class:`Ranking`: a score per output, the
    order best first, win ratios, the Bradley-Terry fit where one was made, and every comparison.
    """
    texts = _check_outputs(outputs)
    if strategy not in STRATEGIES:
        raise InputError(f"unknown ranking strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")
    if ids is not None and len(ids) != len(texts):
        raise InputError(f"got {len(ids)} ids for {len(texts)} outputs: give one id per output or none")
    setup = _setup(protocol, source, criterion, options)
    chosen = _selection_of(strategy, selection, budget)
    if strategy == "sort":
        if budget is not None:
            raise InputError("strategy 'sort' decides its own comparisons (O(N log N), both orders): drop the budget")
        _, judgements = await sort_outputs(setup, provider, texts)
        planned = len(judgements)
    elif chosen == "active":
        judgements = await _active_comparisons(setup, provider, texts, budget, seed)
        planned = len(judgements)
    else:
        pairs = select_pairs(len(texts), chosen, budget, seed=seed)  # type: ignore[arg-type]
        judgements = await judge_all(setup, provider, texts, pairs)
        planned = len(pairs)
    ratios = win_ratios(len(texts), judgements, hard=hard)
    bt = fit_bradley_terry(len(texts), judgements) if strategy in ("bradley-terry", "sort") else None
    scores = bt.strengths if bt is not None else ratios
    used = sum(j.p_first is not None for j in judgements)
    return Ranking(
        strategy=strategy,
        selection=chosen,
        protocol=protocol,
        criterion=setup.criterion.name,
        template_id=setup.template.id,
        budget=budget,
        n_outputs=len(texts),
        ids=list(ids) if ids is not None else [None] * len(texts),
        scores=scores,
        order=best_first(scores),
        win_ratios=ratios,
        bradley_terry=bt,
        positional_bias=positional_bias(judgements),
        comparisons=judgements,
        comparisons_planned=planned,
        comparisons_used=used,
        status=worst_status([j.status for j in judgements]),
        provider=provider.kind,
        model=provider.model,
        usage=total_usage([j.usage for j in judgements]),
        latency_s=sum(j.latency_s for j in judgements),
        notes=_rank_notes(judgements, scores, used),
    )


def _selection_of(strategy: str, selection: str | None, budget: int | None) -> str:
    """Which comparisons: the strategy itself, or for bradley-terry the selection (default full / symmetric)."""
    if strategy == "sort":
        return "sort"
    if strategy != "bradley-terry":
        return strategy
    chosen = selection or ("full" if budget is None else "symmetric")
    if chosen not in SELECTIONS:
        raise InputError(f"unknown selection {chosen!r}; choose one of {', '.join(SELECTIONS)}")
    return chosen


def _rank_notes(judgements: Sequence[OrderJudgement], scores: Sequence[float | None], used: int) -> list[str]:
    notes = []
    if used < len(judgements):
        notes.append(f"{len(judgements) - used} of {len(judgements)} comparisons gave no usable answer and were left out")
    missing = [i for i, s in enumerate(scores) if s is None]
    if missing:
        notes.append(f"outputs {missing} took part in no usable comparison and have no score")
    return notes
