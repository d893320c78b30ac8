"""#CP (001 §4.2.1, App. E, Table 22) on hand-computed tables."""

from __future__ import annotations

import pytest

from judgesdk.core.errors import InputError
from judgesdk.meta import (
    PairwiseJudgement,
    ScoredItem,
    all_pairs,
    challenge_pairs,
    correct_preferences,
    correct_preferences_h2h,
)

HUMAN = {"A": [5, 4, 3, 3], "B": [4, 4, 2, 3], "C": [1, 2, 3, 4]}
PRED = {"A": [3, 3, 3, 3], "B": [2, 3, 4, 1], "C": [1, 1, 1, 5]}


def items(pred: dict[str, list[float | None]] = PRED) -> list[ScoredItem]:
    return [
        ScoredItem(doc_id=f"d{i}", system_id=s, human=HUMAN[s][i], prediction=pred[s][i])
        for s in HUMAN
        for i in range(4)
    ]


def test_all_pairs_with_ties_worth_half() -> None:
    cp = correct_preferences(items(), "all")
    by = {(p.system_a, p.system_b): p for p in cp.pairs}
    # A vs B: human 1 + .5 + 1 + .5 = 3.0 (A); judge 1 + .5 + 0 + 1 = 2.5 (A) -> correct
    assert (by["A", "B"].human_points_a, by["A", "B"].judge_points_a) == (3.0, 2.5)
    assert by["A", "B"].correct
    # A vs C: human 2.5 (A); judge 3.0 (A) -> correct
    assert by["A", "C"].correct and by["A", "C"].judge_points_a == 3.0
    # B vs C: human 1 + 1 + 0 + 0 = 2.0 of 4 -> a tie; judge 3.0 -> B: wrong
    assert by["B", "C"].human_preference == "tie" and by["B", "C"].judge_preference == "a"
    assert not by["B", "C"].correct
    assert (cp.n_correct, cp.n_pairs) == (2, 3)
    assert cp.accuracy == pytest.approx(2 / 3)


def test_challenge_set_is_consecutive_pairs_by_human_average() -> None:
    # human means: A 3.75, B 3.25, C 2.5
    cp = correct_preferences(items(), "challenge")
    assert [(p.system_a, p.system_b) for p in cp.pairs] == [("A", "B"), ("B", "C")]
    assert (cp.n_correct, cp.n_pairs) == (1, 2)


def test_pair_sets_for_twelve_systems_are_66_and_11() -> None:
    quality = {f"M{i}": float(i) for i in range(12)}
    assert len(all_pairs(quality)) == 66
    pairs = challenge_pairs(quality)
    assert len(pairs) == 11 and pairs[0] == ("M11", "M10")


def test_quality_override_changes_the_challenge_set() -> None:
    cp = correct_preferences(items(), "challenge", quality={"A": 1.0, "B": 3.0, "C": 2.0})
    assert [(p.system_a, p.system_b) for p in cp.pairs] == [("B", "C"), ("C", "A")]


def test_unparsed_predictions_leave_their_documents_out_of_the_pair() -> None:
    pred = {**PRED, "B": [None, 3, 4, 1]}
    by = {(p.system_a, p.system_b): p for p in correct_preferences(items(pred), "all").pairs}
    assert by["A", "B"].n_docs == 3 and by["A", "C"].n_docs == 4


def test_custom_pairs_must_name_known_systems() -> None:
    with pytest.raises(InputError, match="Z"):
        correct_preferences(items(), [("A", "Z")])


def test_h2h_points_average_both_orders() -> None:
    verdicts = [
        PairwiseJudgement(doc_id="d0", first="A", second="B", winner="first"),
        PairwiseJudgement(doc_id="d0", first="B", second="A", winner="tie"),
        PairwiseJudgement(doc_id="d1", first="A", second="B", winner="second"),
        PairwiseJudgement(doc_id="d1", first="B", second="A", winner="first"),
    ]
    cp = correct_preferences_h2h(verdicts, items(), [("A", "B")])
    pair = cp.pairs[0]
    # d0: (1 + 0.5) / 2 = 0.75 for A; d1: 0 -> 0.75 of 2 -> B; humans (d0 1, d1 .5) prefer A
    assert pair.n_docs == 2 and pair.judge_points_a == pytest.approx(0.75)
    assert pair.judge_preference == "b" and pair.human_preference == "a"
    assert cp.n_correct == 0


def test_h2h_pairs_without_verdicts_are_listed_not_counted() -> None:
    verdicts = [PairwiseJudgement(doc_id="d0", first="A", second="B", winner="first")]
    cp = correct_preferences_h2h(verdicts, items(), "all")
    assert cp.n_pairs == 1 and cp.n_correct == 1
    assert sorted(cp.skipped_pairs) == [("A", "C"), ("B", "C")]
