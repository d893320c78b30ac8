"""Scores stated inside a sentence (issue 12, item 12), and properties of ``parse_score`` over any text.

The sentence cases are Llama-2 answers of the kind 001 publishes (``eval_model_generations/llama-2-*``):
the verdict sits mid-sentence after a long phrase, or after a number the rationale quotes from the
summary ("has scored 15 penalties").
"""

from __future__ import annotations

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from judgesdk.core.types import Scale
from judgesdk.estimation.parsing import parse_score

LIKERT = Scale.likert(1, 5)

# Llama-2-13b-chat on SummEval M10, consistency (001's published RTS answers), verbatim
BARKLEY = (
    " Sure! Here's my assessment of the consistency of the Summary with respect to the Article:\n\n"
    "The Summary introduces a new and inaccurate fact when it states that Ross Barkley has scored 15 "
    "penalties from 16 attempts in the Premier League, which is not supported by the Article. Therefore, "
    "I would score the consistency of the Summary with respect to the Article as 2 out of 5, indicating a "
    "moderate level of inconsistency."
)

SENTENCE_CASES = [
    ("Therefore, I would score this summary 5/5 for coherence.", 5.0),
    ("The summary flows well. I would score this summary 4 for coherence.", 4.0),
    ("I would rate the summary 3/5 for relevance.", 3.0),
    (BARKLEY, 2.0),
    ("I would score it 2 out of 5, since the summary claims that Martinez scored 15 penalties.", 2.0),
    ("It says he scored 15 goals in 16 games. Overall, 3/5.", 3.0),
]


@pytest.mark.parametrize("text,expected", SENTENCE_CASES)
def test_a_score_stated_inside_a_sentence_is_read(text: str, expected: float) -> None:
    parsed = parse_score(text, LIKERT)
    assert (parsed.status, parsed.value) == ("ok", expected), parsed


@pytest.mark.parametrize(
    "text,expected",
    [
        ("Summary 1 is fine, 4", 4.0),  # a name without a determiner stays a name
        ("Score for this summary 2: 4", 4.0),  # "summary 2:" labels the thing scored
        ("Score: 9", None),  # a judge's own out-of-range verdict is still reported, not replaced
        ("Score: 8/10. The summary keeps 3/5 of the facts.", None),  # another scale's fraction stays out of range
    ],
)
def test_what_the_sentence_rules_leave_alone(text: str, expected: float | None) -> None:
    assert parse_score(text, LIKERT).value == expected


# -- properties -----------------------------------------------------------------------------------

WORDS = st.sampled_from(
    "the summary article coherence consistency fluency relevance of with respect to and is as a it "
    "clear facts main points well written flows I would overall its this".split()
)
PHRASE = st.lists(WORDS, min_size=0, max_size=14).map(" ".join)
NOISE = st.text(alphabet=st.characters(exclude_categories=("Cs",)), max_size=200)


@settings(max_examples=300, deadline=None)
@given(NOISE, st.sampled_from([LIKERT, Scale.likert(0, 1), Scale.likert(1, 3), Scale.likert(1, 10)]))
def test_any_text_gives_a_consistent_status_and_an_in_range_value(text: str, scale: Scale) -> None:
    parsed = parse_score(text, scale)
    assert parsed.status in ("ok", "unparsed", "out_of_range")
    assert (parsed.value is not None) == parsed.ok == (parsed.label is not None)
    if parsed.ok:
        assert math.isfinite(parsed.value) and scale.low <= parsed.value <= scale.high
        assert parsed.span is not None and parsed.span in text
    if parsed.status == "unparsed":
        assert parsed.span is None


@settings(max_examples=300, deadline=None)
@given(
    st.integers(6, 99),
    st.sampled_from(["penalties", "goals", "games", "times", "runs"]),
    PHRASE,
    st.integers(1, 5),
    st.sampled_from(["{n} out of 5", "{n}/5", "a {n} out of 5"]),
)
def test_an_in_range_fraction_beats_an_earlier_out_of_range_number(count, noun, phrase, n, form) -> None:
    text = f"The summary says he has scored {count} {noun} this season. I would score {phrase} as {form.format(n=n)}."
    parsed = parse_score(text, LIKERT)
    assert (parsed.status, parsed.value) == ("ok", n), (text, parsed)


@settings(max_examples=200, deadline=None)
@given(PHRASE, st.sampled_from(["this", "the"]), st.sampled_from(["summary", "response", "output"]), st.integers(1, 5))
def test_score_this_summary_n_over_5_reads_n(prefix, determiner, noun, n) -> None:
    text = f"{prefix}. Therefore, I would score {determiner} {noun} {n}/5 for coherence."
    parsed = parse_score(text, LIKERT)
    assert (parsed.status, parsed.value) == ("ok", n), (text, parsed)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="abcdefghijklmnopqrstuvwxyz ,.!?'\n", max_size=300), st.integers(1, 5),
       st.sampled_from(["Final score: {n}", "Score: {n}/5", "Final Score: {n} out of 5"]))
def test_a_final_score_line_after_any_digit_free_rationale_wins(rationale, n, line) -> None:
    text = f"{rationale}\n\n{line.format(n=n)}"
    parsed = parse_score(text, LIKERT)
    assert (parsed.status, parsed.value) == ("ok", n), (text, parsed)
