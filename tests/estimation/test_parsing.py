"""Table-driven tests of judgesdk.estimation.parsing on judge outputs of the kind the papers publish (001 Tables 26-27)."""

from __future__ import annotations

import math

import pytest

from judgesdk.core.errors import InputError
from judgesdk.core.types import Scale
from judgesdk.estimation.parsing import ParsedScore, parse_choice, parse_score

LIKERT = Scale.likert(1, 5)
LETTERS = Scale.letters()

# (answer, expected value) on a 1-5 Likert scale; every row must parse with status "ok"
OK_CASES = [
    ("4", 4.0),
    ("4.", 4.0),
    ("**4**", 4.0),
    ("Score: 4", 4.0),
    ("Final score: 4.", 4.0),
    ("score:4", 4.0),
    ("Rating: 2", 2.0),
    ("3.5", 3.5),
    ("Score: 4.5", 4.5),
    ("4/5", 4.0),
    ("Score: 3/5.", 3.0),
    ("4 out of 5", 4.0),
    ("I would rate it 3 out of 5 points.", 3.0),
    ("Score: Four.", 4.0),
    ("Four", 4.0),
    ("scoring a one out of five", 1.0),
    ("I'd give this summary a two.", 2.0),
    # 001 Table 26 (ChatGPT RTS)
    (
        "The summary is inconsistent with the article as it omits important details and repeats a phrase "
        "multiple times, resulting in a score of 1.",
        1.0,
    ),
    (
        "The summary includes some relevant information but lacks coherence and omits important details, "
        "resulting in a score of 2.5 out of 5 for consistency.",
        2.5,
    ),
    (
        "The summary is well-written and grammatically correct, but lacks important details from the article "
        "such as the potential link between antibiotics and weight gain. Score: 3/5.",
        3.0,
    ),
    # 001 Table 27 (GPT-4 RTS)
    (
        "The summary is somewhat coherent but includes incorrect information, such as stating that Merson "
        "restarted his row with Burnley instead of Andros Townsend, and does not flow smoothly; therefore, "
        "I would give it a score of 3.",
        3.0,
    ),
    ("The summary is only one sentence and do not provide enough information about the article's content. Final score: 1.", 1.0),
    # last stated score wins; markers beat bare numbers
    ("It is not a 2, since the flow is fine. Final score: 4", 4.0),
    ("At first I considered a 2, but the summary recovers. Score: 4", 4.0),
    ("Score: 4, not 5", 4.0),
    ("The summary would score higher if it had 3 more facts. Rating: 2", 2.0),
    ("**Score:** 4\n\nThe summary covers 3 of the 5 key points.", 4.0),
    ("Final Score: 2/5\n\nIt mentions 4 of the main events but misses the rest.", 2.0),
    ("The summary deserves a 4.", 4.0),
    ("I would give this summary a score of 4 out of 5. With more detail it could score a 5.", 4.0),
    ("I would not give it a 5; it deserves a 3.", 3.0),
    ("Score: 3\nScore: 4", 4.0),
    ("Scores: Coherence - 4", 4.0),
    ("Score (1-5): 3", 3.0),
    ("I'd rate it a 3.5/5.", 3.5),
    ("The article mentions 12 people were hurt... Rating: 3/5", 3.0),
    ("**Final Score: 3**", 3.0),
    ("Coherence: 2. The summary jumps between 3 topics.", 2.0),
    # scale descriptions, list numbering, years, counts, identifiers are not scores
    ("On a scale of 1 to 5, I would rate it 3.", 3.0),
    ("On a scale from one to five, my rating is two.", 2.0),
    ("Rating (1-5): 4", 4.0),
    ("Using a 1-5 scale: 2", 2.0),
    ("I give it a 5-point scale score of 3", 3.0),
    ("1. Coherence: good\n2. Fluency: ok\n3. Overall score: 3", 3.0),
    ("In 2015, the article says 5 points were made. I'd say 2.", 2.0),
    ("Summary 1 is fine, 4", 4.0),
    ("GPT-3.5 gave 2, I give 4", 4.0),
    ("The article from 2023-05-01 is covered well. Score: 3", 3.0),
    ("Model M8 does fine here: 4", 4.0),
    ("About 80% of the facts are kept. Score: 4", 4.0),
    ("Evaluation Form (scores ONLY):\n- Coherence: 4", 4.0),
    ("- Relevance: 5", 5.0),
    ("A single numbered verdict\n4. The summary is clear.", 4.0),
    ("The summary is one of the best I have seen. Score: 5", 5.0),
]


@pytest.mark.parametrize("text,expected", OK_CASES)
def test_likert_ok(text: str, expected: float) -> None:
    parsed = parse_score(text, LIKERT)
    assert parsed.status == "ok", (text, parsed)
    assert parsed.value == pytest.approx(expected)


# (answer, status, span) where nothing valid can be read
NOT_OK_CASES = [
    ("", "unparsed", None),
    ("No score.", "unparsed", None),
    ("The summary is one of the best summaries.", "unparsed", None),
    ("The summary makes 5 points.", "unparsed", None),
    ("The score is 3-4", "unparsed", None),
    ("It was published in 2019.", "unparsed", None),
    ("Score: 7", "out_of_range", "7"),
    ("Score: 0", "out_of_range", "0"),
    ("Score: -1", "out_of_range", "-1"),
    ("8/10", "out_of_range", "8/10"),
    ("Score: 4/10", "out_of_range", "4/10"),
    ("Score: 10 out of 10", "out_of_range", "10 out of 10"),
    ("Score: six", "out_of_range", "six"),
    ("The summary has 12 problems overall", "out_of_range", "12"),
    ("It cost 1,000 dollars.", "unparsed", None),
]


@pytest.mark.parametrize("text,status,span", NOT_OK_CASES)
def test_likert_not_ok(text: str, status: str, span: str | None) -> None:
    parsed = parse_score(text, LIKERT)
    assert (parsed.status, parsed.span) == (status, span)
    assert parsed.value is None and parsed.label is None


@pytest.mark.parametrize(
    "text,label", [("3.5", "4"), ("3.4", "3"), ("2.5 out of 5", "3"), ("1.2", "1"), ("4.9", "5")]
)
def test_decimal_keeps_value_and_takes_nearest_label(text: str, label: str) -> None:
    parsed = parse_score(text, LIKERT)
    assert parsed.label == label
    assert parsed.value == pytest.approx(float(text.split()[0]))


# Issue 29 item 10: a leading-dot decimal is below one, never the digit after the dot; a vulgar fraction is its value.
FRACTIONAL_CASES = [
    ("Score: .5", "out_of_range", None),
    (".7 out of 10", "out_of_range", None),
    ("Score: 3\u00bd", "ok", 3.5),
    ("3\u00bd", "ok", 3.5),
    ("2\u00bd/5", "ok", 2.5),
    ("Score: 2\u00bd out of 5", "ok", 2.5),
    ("Score: 3 \u00bd", "ok", 3.5),
    ("Rating: 4\u00bc", "ok", 4.25),
    ("\u00bd", "out_of_range", None),
    ("Version 3.5.1 is fine. Score: 4", "ok", 4.0),
]


@pytest.mark.parametrize("text,status,value", FRACTIONAL_CASES)
def test_leading_dot_decimals_and_vulgar_fractions_keep_their_value(text: str, status: str, value: float | None) -> None:
    parsed = parse_score(text, LIKERT)
    assert parsed.status == status, (text, parsed)
    assert parsed.value == (None if value is None else pytest.approx(value))


def test_a_leading_dot_decimal_is_a_score_where_the_scale_holds_it() -> None:
    assert parse_score("Score: .5", Scale.likert(0, 1)).value == pytest.approx(0.5)
    assert parse_score(".7 out of 10", Scale.likert(1, 10)).status == "out_of_range"  # was read as 7 out of 10
    assert parse_score("7 out of 10", Scale.likert(1, 10)).value == 7.0


def test_zero_is_a_score_on_a_scale_that_has_zero() -> None:
    binary = Scale.likert(0, 1)
    assert parse_score("Score: 0", binary).value == 0.0
    assert parse_score("0.5", binary).label == "1"
    assert parse_score("Score: 2", binary).status == "out_of_range"


def test_three_point_scale_denominator_must_match() -> None:
    three = Scale.likert(1, 3)
    assert parse_score("2/3", three).value == 2.0
    assert parse_score("2/5", three).status == "out_of_range"


def test_non_identity_numeric_labels_map_through_values() -> None:
    scale = Scale(labels=("1", "2", "3"), values=(0.0, 50.0, 100.0))
    parsed = parse_score("Score: 2.5", scale)
    assert parsed.value == pytest.approx(75.0) and parsed.label == "3"


LETTER_CASES = [
    ("B", "B"),
    ("b", "B"),
    ("(B)", "B"),
    ("Answer: B", "B"),
    ("Your Answer: E", "E"),
    ("B) The majority of the Summary is irrelevant to the Article.", "B"),
    ("D: The majority of the Summary is relevant to the Article. Score: Four.", "D"),
    ("C. Some information in the Summary is relevant", "C"),
    ("I choose C.", "C"),
    ("the answer is d", "D"),
    ("The summary covers most points.\n\nC", "C"),
    ("[[A]]", "A"),
]


@pytest.mark.parametrize("text,label", LETTER_CASES)
def test_letter_scale(text: str, label: str) -> None:
    parsed = parse_score(text, LETTERS)
    assert parsed.status == "ok" and parsed.label == label
    assert parsed.value == LETTERS.value_of(label)


@pytest.mark.parametrize(
    "text,status", [("A good summary overall.", "unparsed"), ("F", "out_of_range"), ("Answer: G", "out_of_range"), ("", "unparsed")]
)
def test_letter_scale_not_ok(text: str, status: str) -> None:
    assert parse_score(text, LETTERS).status == status


BWS = ["Better", "Worse", "Similar"]
YN = ["Yes", "No"]
H2H = ["A", "B", "tie"]
CHOICE_CASES = [
    ("Better", BWS, "Better"),
    ("better.", BWS, "Better"),
    ("**Worse**", BWS, "Worse"),
    ("The candidate is better than the reference, so Better.", BWS, "Better"),
    ("It is not worse than the reference.", BWS, None),
    ("It is better in some ways and worse in others.", BWS, None),
    ("Similar - both summaries cover the key points.", BWS, "Similar"),
    ("Yes, it is.", YN, "Yes"),
    ("No", YN, "No"),
    ("no.", YN, "No"),
    ("Not sure", YN, None),
    ("yes and no", YN, None),
    ("Answer: No", YN, "No"),
    ("[[A]]", H2H, "A"),
    ("It's a tie.", H2H, "tie"),
    ("Answer: tie", H2H, "tie"),
    ("Summary (A) is better than (B)", H2H, None),
    ("Output (a) is better.", H2H, "A"),
    ("A good summary is hard to find.", H2H, None),
    ("My choice is (B) because it is shorter.", H2H, "B"),
    ("Verdict: A", H2H, "A"),
    ("Answer: A. Final answer: B", H2H, "B"),
    ("Summary #1 is more relevant.\nB", ["A", "B", "C"], "B"),
    ("A: Summary #1 is more relevant.", ["A", "B", "C"], "A"),
    ("", YN, None),
]


@pytest.mark.parametrize("text,options,expected", CHOICE_CASES)
def test_parse_choice(text: str, options: list[str], expected: str | None) -> None:
    assert parse_choice(text, options) == expected


def test_parse_choice_returns_option_spelling() -> None:
    assert parse_choice("TIE", ["A", "B", "Tie"]) == "Tie"


def test_bad_inputs_raise_input_error() -> None:
    with pytest.raises(InputError):
        parse_score(None, LIKERT)  # type: ignore[arg-type]
    with pytest.raises(InputError):
        parse_choice("A", [])


def test_parsed_score_is_frozen_and_consistent() -> None:
    parsed = parse_score("Score: 4", LIKERT)
    with pytest.raises(Exception):
        parsed.value = 3.0  # type: ignore[misc]
    with pytest.raises(ValueError):
        ParsedScore(value=1.0, label="1", status="unparsed", span="1")
    with pytest.raises(ValueError):
        ParsedScore(value=math.nan, label="1", status="ok", span="x")


def test_never_zero_or_nan_for_failures() -> None:
    for text, _status, _span in NOT_OK_CASES:
        parsed = parse_score(text, LIKERT)
        assert parsed.value is None
