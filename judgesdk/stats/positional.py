"""Positional bias of a pairwise judge (004 §3.5): how much its verdicts depend on which output is shown first.

One computation, :func:`position_bias`, serves both places that report it:

* the rankings of :mod:`judgesdk.scorers.pairwise` (``Ranking.positional_bias``), over the order
  judgements a ranking made, with ``tie_credit=0.5`` (a tie counts half a first-position win) and the
  mean P(first better) of those judgements;
* meta-evaluation's :func:`judgesdk.meta.reliability.positional_bias`, over head-to-head verdicts read
  from a file, with ``tie_credit=0.0`` (only first-position wins count) and the order-swap flip rates.

It sits on the scorers' floor, the lower of the two, so that meta (above it) reuses it without an upward
import; it depends on nothing but the standard library.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Literal

__all__ = ["OrderVerdict", "PositionBias", "position_bias"]

Verdict = Literal["first", "second", "tie"]


@dataclass(frozen=True)
class OrderVerdict:
    """One comparison in one order: ``first`` was shown in position 1.

    ``verdict`` None is a judgement with a probability and no decision: it counts toward ``n`` (and its
    ``p_first`` toward the mean) but as neither a first, a second nor a tie. ``group`` (a document) scopes
    the pairing of the two orders: ``(group, x, y)`` and ``(group, y, x)`` are one swapped pair.
    """

    first: Hashable
    second: Hashable
    verdict: Verdict | None
    p_first: float | None = None
    group: Hashable = None

    @property
    def winner(self) -> Hashable | None:
        """The output (system) the verdict chose; None for a tie or no verdict."""
        return self.first if self.verdict == "first" else self.second if self.verdict == "second" else None


@dataclass(frozen=True)
class PositionBias:
    """Every figure of 004 §3.5 the two reports draw on; rates are None where their denominator is 0."""

    n: int  # verdicts counted
    first_rate: float | None  # (first wins + tie_credit * ties) / n
    second_rate: float | None  # second wins / n
    tie_rate: float | None  # ties / n
    first_rate_decisive: float | None  # first wins / (first + second wins)
    mean_p_first: float | None  # mean P(first better) over the verdicts that carry one
    n_swapped_pairs: int  # unordered pairs (per group) judged in both orders
    flip_rate: float | None  # share of (order 1, order 2) combinations whose winner strictly reverses
    inconsistency_rate: float | None  # share whose outcome differs at all (a win against a tie included)


def position_bias(verdicts: Sequence[OrderVerdict], *, tie_credit: float) -> PositionBias:
    """The first-position win rate and the order-swap consistency of ``verdicts`` (004 §3.5, eq. 5).

    ``tie_credit`` is how much a tie counts toward the first position's rate: 0.5 (half a win, so an
    unbiased judge that often ties still reads 0.5) or 0.0 (a tie is no first-position win). A pair judged
    in both orders is consistent when it names the same winner (or a tie) both times, c~(x_i, x_j) =
    c(x_i, x_j) (eq. 5): ``flip_rate`` counts strict reversals, ``inconsistency_rate`` also a win in one
    order against a tie in the other; with several verdicts per order every (order 1, order 2) combination
    is compared. No verdicts give ``n = 0`` and rates of None.
    """
    n = len(verdicts)
    counts = {w: sum(v.verdict == w for v in verdicts) for w in ("first", "second", "tie")}
    decisive = counts["first"] + counts["second"]
    p_firsts = [v.p_first for v in verdicts if v.p_first is not None]
    by_order: dict[tuple[Hashable, Hashable, Hashable], list[Hashable | None]] = {}
    for v in verdicts:
        by_order.setdefault((v.group, v.first, v.second), []).append(v.winner)
    flips = differs = comparisons = pairs = 0
    seen: set[tuple[Hashable, frozenset[Hashable]]] = set()
    for (group, x, y), winners in by_order.items():
        unordered = (group, frozenset((x, y)))
        if unordered in seen or (group, y, x) not in by_order:
            continue  # each unordered pair once, and only if judged in both orders
        seen.add(unordered)
        pairs += 1
        for w1 in winners:
            for w2 in by_order[(group, y, x)]:
                comparisons += 1
                differs += w1 != w2
                flips += w1 is not None and w2 is not None and w1 != w2
    return PositionBias(
        n=n,
        first_rate=(counts["first"] + tie_credit * counts["tie"]) / n if n else None,
        second_rate=counts["second"] / n if n else None,
        tie_rate=counts["tie"] / n if n else None,
        first_rate_decisive=counts["first"] / decisive if decisive else None,
        mean_p_first=sum(p_firsts) / len(p_firsts) if p_firsts else None,
        n_swapped_pairs=pairs,
        flip_rate=flips / comparisons if comparisons else None,
        inconsistency_rate=differs / comparisons if comparisons else None,
    )
