"""Correct preferences #CP (001 §4 "Measurements", §4.2.1, App. E, Tables 5 and 22).

For a pair of systems (A, B), every shared document gives A one point when its output is judged
better than B's, 0.5 when tied, 0 when worse; the points are summed over the documents (Table 22:
"aggregated scores for Model A", B's being n - A's). The system with more points is the preferred
one, equal points a tie. The judge's preference is *correct* when it equals the human preference
computed the same way from the human scores. #CP counts correct pairs over

* all pairs of systems (``"all"``: 66 for SummEval's 12 abstractive systems), or
* the challenge set (``"challenge"``, App. E): consecutive systems when ordered by average human
  score, the k - 1 closest matches (11 for 12 systems). 001 orders by the average over all four
  dimensions (Table 21): :func:`average_quality` computes it, and ``judgesdk meta-eval`` passes it
  as ``quality`` by default (``--challenge-order average``), so the set is the same for every
  dimension and matches a head-to-head file built for it. Without ``quality`` these functions use
  Q_i (eq. 1) of the dimension at hand (``--challenge-order dimension``).

Pointwise judges (RTS, MCQ) are compared per document through their scores; head-to-head judges
through their verdicts (:func:`correct_preferences_h2h`), where the two presentation orders of one
document each count half, so a document is worth 1 point in total as in Table 22 (65.5 = quarter
points from both orders).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Mapping, Sequence
from typing import Literal

from pydantic import BaseModel

from judgesdk.core import InputError
from judgesdk.meta.items import Key, PairwiseJudgement, ScoredItem, system_means

__all__ = [
    "CHALLENGE_ORDERS",
    "CorrectPreferences",
    "PairOutcome",
    "all_pairs",
    "average_quality",
    "challenge_pairs",
    "check_challenge_order",
    "correct_preferences",
    "correct_preferences_h2h",
]

Preference = Literal["a", "b", "tie"]
PairSet = Literal["all", "challenge"]
CHALLENGE_ORDERS = {
    "average": "systems ordered by human score averaged over every dimension of the human file (001 App. E, Table 21)",
    "dimension": "systems ordered by human score on the evaluated dimension (Q_i, 001 eq. 1)",
}


class PairOutcome(BaseModel):
    """One system pair: aggregated points of A (001 Table 22) and both preferences."""

    system_a: str
    system_b: str
    n_docs: int
    human_points_a: float
    judge_points_a: float
    human_preference: Preference
    judge_preference: Preference
    correct: bool


class CorrectPreferences(BaseModel):
    """#CP over a set of pairs (001 Table 5)."""

    pair_set: str
    n_correct: int
    n_pairs: int
    accuracy: float | None
    pairs: list[PairOutcome]
    skipped_pairs: list[tuple[str, str]] = []  # pairs with no document scored for both systems


def check_challenge_order(order: str) -> str:
    """``order`` if it is one of :data:`CHALLENGE_ORDERS`, else an InputError naming them."""
    if order not in CHALLENGE_ORDERS:
        choices = "; ".join(f"{k}: {v}" for k, v in CHALLENGE_ORDERS.items())
        raise InputError(f"--challenge-order must be average or dimension ({choices}), got {order!r}")
    return order


def average_quality(by_dimension: Mapping[str, Mapping[Key, float]], keys: Iterable[Key] | None = None) -> dict[str, float]:
    """Each system's mean human score per dimension, averaged over the dimensions (001 Table 21 "Avg").

    ``by_dimension`` maps a dimension to its (doc_id, system_id) -> human score; ``keys`` restricts
    the outputs counted to those being compared. A dimension that scores none of a system's outputs
    is left out of that system's average. Dimensions are averaged as they are, as in Table 21.
    """
    wanted = None if keys is None else set(keys)
    means: dict[str, list[float]] = {}
    for scores in by_dimension.values():
        per_system: dict[str, list[float]] = {}
        for key, value in scores.items():
            if wanted is None or key in wanted:
                per_system.setdefault(key[1], []).append(value)
        for system, values in per_system.items():
            means.setdefault(system, []).append(sum(values) / len(values))
    return {system: sum(m) / len(m) for system, m in means.items()}


def all_pairs(quality: Mapping[str, float]) -> list[tuple[str, str]]:
    """Every unordered pair, each ordered (better, worse) by ``quality`` as in 001 Table 22."""
    ranked = sorted(quality, key=lambda s: -quality[s])
    return list(itertools.combinations(ranked, 2))


def challenge_pairs(quality: Mapping[str, float]) -> list[tuple[str, str]]:
    """Consecutive pairs by descending quality (001 App. E): k systems give k - 1 pairs."""
    ranked = sorted(quality, key=lambda s: -quality[s])
    return list(zip(ranked, ranked[1:]))


def _points(a: float, b: float, tie_tolerance: float) -> float:
    """1 if a beats b, 0.5 for a tie (|a - b| <= tie_tolerance), 0 otherwise."""
    if abs(a - b) <= tie_tolerance:
        return 0.5
    return 1.0 if a > b else 0.0


def _preference(points_a: float, n: int) -> Preference:
    half = n / 2
    if abs(points_a - half) < 1e-9:
        return "tie"
    return "a" if points_a > half else "b"


def _outcome(a: str, b: str, human_points: Sequence[float], judge_points: Sequence[float]) -> PairOutcome:
    n = len(human_points)
    hp, jp = float(sum(human_points)), float(sum(judge_points))
    human_pref, judge_pref = _preference(hp, n), _preference(jp, n)
    return PairOutcome(
        system_a=a,
        system_b=b,
        n_docs=n,
        human_points_a=hp,
        judge_points_a=jp,
        human_preference=human_pref,
        judge_preference=judge_pref,
        correct=human_pref == judge_pref,
    )


def _summarise(name: str, outcomes: list[PairOutcome]) -> CorrectPreferences:
    """#CP over the pairs that had at least one shared document; the others are listed, not counted."""
    used = [o for o in outcomes if o.n_docs > 0]
    n_correct = sum(o.correct for o in used)
    return CorrectPreferences(
        pair_set=name,
        n_correct=n_correct,
        n_pairs=len(used),
        accuracy=n_correct / len(used) if used else None,
        pairs=used,
        skipped_pairs=[(o.system_a, o.system_b) for o in outcomes if o.n_docs == 0],
    )


def _resolve_pairs(
    pairs: PairSet | Sequence[tuple[str, str]], quality: Mapping[str, float]
) -> tuple[str, list[tuple[str, str]]]:
    if pairs == "all":
        return "all", all_pairs(quality)
    if pairs == "challenge":
        return "challenge", challenge_pairs(quality)
    if isinstance(pairs, str):
        raise InputError(f"pairs must be 'all', 'challenge' or a list of (system_a, system_b), got {pairs!r}")
    unknown = {s for pair in pairs for s in pair} - set(quality)
    if unknown:
        raise InputError(f"pairs name systems that have no scored items: {sorted(unknown)}")
    return "custom", [tuple(p) for p in pairs]  # type: ignore[misc]


def correct_preferences(
    items: Sequence[ScoredItem],
    pairs: PairSet | Sequence[tuple[str, str]] = "all",
    quality: Mapping[str, float] | None = None,
    tie_tolerance: float = 0.0,
) -> CorrectPreferences:
    """#CP of a pointwise judge (001 §4.2.1): per-document wins from predicted vs human scores.

    Documents where either system's prediction is missing or unparsed are left out of that pair.
    ``tie_tolerance`` treats score differences up to it as ties (0: exact equality, as 001).
    ``items`` are the judged items with their human scores (no parsed prediction at all is an
    :class:`~judgesdk.core.errors.InputError`); ``pairs`` is ``"all"``, ``"challenge"`` (module docstring) or
    explicit (system, system) pairs; ``quality`` orders the systems (default: Q_i, their mean human score on
    this dimension). Returns the :class:`CorrectPreferences`: each pair's outcome and the count of correct ones.
    """
    usable = [it for it in items if it.prediction is not None]
    if not usable:
        raise InputError("no parsed predictions: #CP needs at least one scored item per system")
    q = dict(quality) if quality is not None else system_means(usable)
    name, chosen = _resolve_pairs(pairs, q)
    by_key: dict[Key, ScoredItem] = {it.key: it for it in usable}
    docs = list(dict.fromkeys(it.doc_id for it in usable))
    outcomes = []
    for a, b in chosen:
        shared = [(by_key[(d, a)], by_key[(d, b)]) for d in docs if (d, a) in by_key and (d, b) in by_key]
        outcomes.append(
            _outcome(
                a,
                b,
                [_points(x.human, y.human, tie_tolerance) for x, y in shared],
                [_points(x.prediction, y.prediction, tie_tolerance) for x, y in shared],  # type: ignore[arg-type]
            )
        )
    return _summarise(name, outcomes)


def _h2h_points(judgements: Sequence[PairwiseJudgement]) -> dict[tuple[str, str, str], list[float]]:
    """(doc, a, b) -> A's points from each verdict on that document, in either order."""
    points: dict[tuple[str, str, str], list[float]] = {}
    for j in judgements:
        first_points = {"first": 1.0, "second": 0.0, "tie": 0.5}[j.winner]
        points.setdefault((j.doc_id, j.first, j.second), []).append(first_points)
        points.setdefault((j.doc_id, j.second, j.first), []).append(1.0 - first_points)
    return points


def correct_preferences_h2h(
    judgements: Sequence[PairwiseJudgement],
    human_items: Sequence[ScoredItem],
    pairs: PairSet | Sequence[tuple[str, str]] = "challenge",
    quality: Mapping[str, float] | None = None,
) -> CorrectPreferences:
    """#CP of a head-to-head judge (001 §3.1 H2H, Table 22): per-document points from verdicts.

    A document's points for A are the mean over the verdicts given for it (both orders: each
    counts half). Documents without a verdict or without both human scores are left out of the pair.
    ``judgements`` are the judge's head-to-head verdicts, ``human_items`` the compared systems' human scores
    (required: none is an :class:`~judgesdk.core.errors.InputError`); ``pairs`` and ``quality`` as
    :func:`correct_preferences` (default here: the challenge set). Returns the :class:`CorrectPreferences`.
    """
    if not human_items:
        raise InputError("correct_preferences_h2h needs the human scores of the compared systems")
    q = dict(quality) if quality is not None else system_means(human_items)
    name, chosen = _resolve_pairs(pairs, q)
    human = {it.key: it.human for it in human_items}
    verdicts = _h2h_points(judgements)
    docs = list(dict.fromkeys(it.doc_id for it in human_items))
    outcomes = []
    for a, b in chosen:
        shared = [d for d in docs if (d, a, b) in verdicts and (d, a) in human and (d, b) in human]
        outcomes.append(
            _outcome(
                a,
                b,
                [_points(human[(d, a)], human[(d, b)], 0.0) for d in shared],
                [sum(verdicts[(d, a, b)]) / len(verdicts[(d, a, b)]) for d in shared],
            )
        )
    return _summarise(name, outcomes)
