"""Read a score or a choice out of a judge's free-text answer.

Published judge outputs are free text: reason-then-score answers (001 §3.1, Tables 26-27: "...,
resulting in a score of 2.5 out of 5", "Score: 3/5.", "Final score: 4."), multiple-choice letters
(001 Table 2: "Your Answer (enter 1 letter from A to E):"), and label words ("Better", "Yes", "tie").
These two functions are the one place where such text becomes a number or a label, so that every
scorer, the meta-evaluation CLI and users parsing published outputs read text the same way.

``parse_score(text, scale)`` never invents a value: when nothing can be read the status is
``"unparsed"``, when the stated number lies outside the scale it is ``"out_of_range"``; ``value`` is a
number only when the status is ``"ok"`` (never 0 or NaN as a stand-in).

Rules for numeric (Likert) scales, applied in order
-----------------------------------------------------

1. **Number tokens.** Digits with an optional decimal part ("4", "3.5", ".5" reads 0.5, never 5), a vulgar
   fraction after an integer or alone ("3½" reads 3.5, "2½/5" 2.5 out of 5, "½" 0.5), an optional minus
   sign after a space or colon ("Score: -1" reads -1 and is out of range), and the number words
   "zero".."ten" (any case). A decimal below the scale (".5" or ".7 out of 10" on 1-5) is ``out_of_range``,
   not a score.
2. **Not scores** (dropped before choosing):

   =================================  ==========================================================
   text                               why dropped
   =================================  ==========================================================
   ``"1-5"``, ``"1 to 5"``,           a range describes the scale, not a verdict ("on a scale of
   ``"between 1 and 5"``              one to five"); both ends are dropped
   ``"4/5"``, ``"4 out of 5"``        the denominator; the numerator is kept as a fraction
   ``"1. ..."``, ``"2) ..."``         list numbering: a line starting "N." or "N)" and text,
                                      when at least two lines of the answer are numbered so
   ``"2015"``                         four-digit integers (years)
   ``"80%"``, ``"$5"``, ``"5th"``,    percentages, money, ordinals, identifiers glued to letters
   ``"M8"``, ``"#1"``, ``"GPT-3.5"``  or to "#"
   ``"Summary 1"``, ``"step 2"``      numbers naming a thing (summary, sentence, paragraph, ...),
                                      unless a determiner makes the noun the thing judged and the
                                      number is marked or a fraction ("score this summary 5/5")
   ``"5 points"``, ``"3 sentences"``  counts of things, unless a score marker points at them
                                      ("Score: 4 points" is kept)
   ``"one of the ..."``               number words count only with a score marker, inside a
                                      fraction, or as the whole answer
   =================================  ==========================================================

3. **Score markers.** A number is *marked* when one of "score", "rating", "rate(d)", "grade",
   "mark", "answer", "verdict", "give it" ... precedes it in the same sentence with at most six
   filler words between them and none of "not", "than", "if", "higher", "lower", "more", "less",
   "but", "because", "instead" ("Final score: 4", "resulting in a score of 2.5", "I would rate this
   summary a 4", "scoring a one out of five"; not "would score higher if it had 3 more facts"),
   and the marker itself is not hypothetical or negated ("it could score a 5", "I would not give
   it a 5": "could", "might", "if", "not", "never", "cannot", "unless", "...n't" among the three
   words before the marker).
   A number right after a "Field:" heading at the start of a line is marked too ("Coherence: 2",
   "- Relevance: 5", G-Eval's form-filling answers).
4. **Choice.** The last marked number wins (rationales often discuss other scores before the final
   one: "...not a 2... Final score: 4" reads 4), except that a marked bare number outside the scale
   yields to the last in-range fraction on the scale's top ("... has scored 15 penalties ... I would
   score the consistency of the Summary as 2 out of 5" reads 2). Without markers, the last fraction
   wins ("Overall 3/5"). Otherwise the last number inside the scale's range; if every number is
   outside it, the last one is reported as ``out_of_range``.
5. **Range and value.** A number inside [low, high] of the scale is ``ok``; its ``value`` is the
   number itself mapped through the scale (identity for ``Scale.likert``; decimals stay decimals,
   e.g. 3.5) and ``label`` is the nearest label (halves go to the higher label). A fraction whose
   denominator differs from the scale's top ("8/10" on 1-5) is ``out_of_range``: the judge used
   another scale.

Letter scales (``Scale.letters``: A-E standing for 1-5, 001's MCQ) and any other label set
("Yes"/"No") are read with :func:`parse_choice`; the value is the chosen label's value. A lone
letter outside the scale ("F" on A-E) is ``out_of_range``. The rules of :func:`parse_choice` are in
:mod:`judgesdk.estimation.choices` (re-exported here, the one import for both).
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, ConfigDict, model_validator

from judgesdk.core import InputError, Scale
from judgesdk.estimation.choices import parse_choice, strip_markdown

__all__ = ["ParsedScore", "ParseStatus", "parse_choice", "parse_score"]

ParseStatus = Literal["ok", "unparsed", "out_of_range"]


class ParsedScore(BaseModel):
    """What :func:`parse_score` read. ``value``/``label`` are set only when ``status == "ok"``;
    ``span`` is the text read as the score (also for ``out_of_range``), None when nothing was read."""

    model_config = ConfigDict(frozen=True)

    value: float | None
    label: str | None
    status: ParseStatus
    span: str | None

    @model_validator(mode="after")
    def _consistent(self) -> ParsedScore:
        if (self.status == "ok") != (self.value is not None and self.label is not None):
            raise ValueError("value and label are set exactly when status is 'ok'")
        if self.value is not None and self.value != self.value:  # NaN
            raise ValueError("a parsed value is never NaN")
        return self

    @property
    def ok(self) -> bool:
        return self.status == "ok"


# --------------------------------------------------------------------------------------------
# Number tokens
# --------------------------------------------------------------------------------------------

_WORDS = {w: float(i) for i, w in enumerate("zero one two three four five six seven eight nine ten".split())}
_VULGAR = "\u00bd\u2153\u2154\u00bc\u00be\u2155\u2156\u2157\u2158\u2159\u215a\u2150\u215b\u215c\u215d\u215e\u2151\u2152"  # ½ ⅓ ⅔ ¼ ¾ ...
# "4", "3.5", ".5" (not after a digit or a dot: "3.5.1" is a version), "3½" / "3 ½", a lone "½", the number words
_NUMBER = re.compile(
    rf"\d+(?:\.\d+|\s?[{_VULGAR}])?|(?<![\d.])\.\d+|[{_VULGAR}]|\b(?:" + "|".join(_WORDS) + r")\b", re.IGNORECASE
)
_FRACTION_SEP = re.compile(r"\s*/\s*|\s+out\s+of\s+(?:a\s+(?:possible|maximum\s+of)\s+)?", re.IGNORECASE)
_RANGE_SEP = re.compile(r"\s*[-\u2013\u2014]\s*|\s+to\s+", re.IGNORECASE)
_BETWEEN = re.compile(r"\bbetween\s+$", re.IGNORECASE)
_NAMING = (
    r"\b(?:summary|summaries|sentence|sentences|paragraph|line|step|item|option|article|document|"
    r"response|output|candidate|system|model|version|table|section|figure|example|assistant|turn|"
    r"page|chapter|number|scale(?:\s+of)?)"
)
_NAMING_WORDS = re.compile(_NAMING + r"\s*#?\s*$", re.IGNORECASE)
# "score this summary 5/5": a determiner makes the noun the thing judged, not a name ("Summary 2")
_DESCRIBED = re.compile(r"\b(?:this|that|its|their|the)\s+" + _NAMING + r"\s*$", re.IGNORECASE)
_COUNT_NOUNS = re.compile(
    r"\s*-?\s*(?:points?|sentences?|words?|facts?|details?|people|persons?|years?|months?|days?|hours?|"
    r"minutes?|times?|paragraphs?|errors?|mistakes?|issues?|items?|examples?|players?|goals?|"
    r"percent|million|billion|thousand|hundred|km|miles?|kg|lbs?|dollars?|euros?|pounds?)\b",
    re.IGNORECASE,
)
_LIST_LINE = re.compile(r"^[ \t>*\-]*(\d+)[.)][ \t]+\S", re.MULTILINE)
_MARKER = re.compile(
    r"\b(?:scores?|scored|scoring|ratings?|rated|rate|grades?|graded|marks?|answer|verdict|"
    r"evaluation|give\s+it|give\s+this(?:\s+\w+)?|assign|award)\b",
    re.IGNORECASE,
)
_MARKER_BREAKERS = frozenset(
    "not never n't than if had higher lower more less but because instead rather above below "
    "could might".split()
)
_HYPOTHETICAL = frozenset("could might if not never cannot unless".split())  # "...it could score a 5"
_FIELD = re.compile(r"[ \t>*\-#]*[A-Za-z][A-Za-z ]{0,30}[*_]*\s*[:=]\s*[*_]*\s*")
_SENTENCE_END = re.compile(r"[.!?](?:\s|$)|\n\s*\n")


@dataclass(frozen=True)
class _Token:
    value: float
    start: int
    end: int
    is_word: bool


@dataclass(frozen=True)
class _Candidate:
    value: float
    start: int
    end: int
    denominator: float | None
    marked: bool


def _tokens(text: str) -> list[_Token]:
    out = []
    for m in _NUMBER.finditer(text):
        word = m.group(0).lower()
        is_word = word in _WORDS
        value = _WORDS[word] if is_word else _number(word)
        start = m.start()
        if not is_word and _is_negative(text, start):
            value, start = -value, start - 1
        out.append(_Token(value, start, m.end(), is_word))
    return out


def _number(token: str) -> float:
    """A number token's value: ``.5`` is 0.5 (never 5), ``3½`` 3.5, ``½`` 0.5."""
    if token[-1] in _VULGAR:
        return float(token[:-1].strip() or 0) + unicodedata.numeric(token[-1])
    return float(token)


def _is_negative(text: str, start: int) -> bool:
    """'-1' after a space, colon or the start is negative; '1-5' and 'GPT-3' are not."""
    if start == 0 or text[start - 1] != "-":
        return False
    before = text[: start - 1].rstrip(" \t")
    return before == "" or before[-1] in ":=(" or text[start - 2] in " \t"


def _list_numbers(text: str) -> set[int]:
    """Start offsets of list numbering ("1. ...", "2) ...") when at least two lines are numbered."""
    starts = [m.start(1) for m in _LIST_LINE.finditer(text)]
    return set(starts) if len(starts) >= 2 else set()


def _excluded_by_context(text: str, tok: _Token, stated: bool = False) -> bool:
    """Years, percentages, money, ordinals, dates, times, glued identifiers and named things.

    ``stated``: the number is a fraction or follows a score marker, so after "this/the <noun>" it is
    the verdict on that noun ("I would score this summary 5/5"), not the noun's name."""
    if tok.is_word:
        return False
    digits = text[tok.start : tok.end].lstrip("-")
    before, after = text[: tok.start], text[tok.end :]
    prev, nxt = before[-1:], after[:1]
    if "." not in digits and len(digits) == 4:
        return True
    if nxt.isalpha() or nxt == "%" or (nxt in {",", ":", "-"} and after[1:2].isdigit()):
        return True  # "5th", "80%", "1,000", "10:30", "05-01"; fractions were paired before this
    if prev in {"$", "#", "_", "\u00a3", "\u20ac"} or prev.isalpha():
        return True  # "$5", "#1", "M8"
    if (prev == "-" and before[-2:-1].isalpha()) or (prev in {"-", ".", ":", "/", ","} and before[-2:-1].isdigit()):
        return True  # "GPT-3", "3.5.1", "10:30", "3/4/...", "1,000" (ranges were dropped before this)
    if not _NAMING_WORDS.search(before[-24:]):
        return False
    labelled = after.lstrip().startswith(":")  # "for the summary 2: 4" names summary 2
    return not (stated and not labelled and _DESCRIBED.search(before[-40:]))


def _pairs(text: str, toks: list[_Token]) -> tuple[dict[int, float], set[int]]:
    """Find fractions (numerator index -> denominator) and ranges; return them and dropped indices."""
    fractions: dict[int, float] = {}
    dropped: set[int] = set()
    for i in range(len(toks) - 1):
        a, b = toks[i], toks[i + 1]
        gap = text[a.end : b.start]
        if i in dropped:
            continue
        if _FRACTION_SEP.fullmatch(gap):
            fractions[i] = b.value
            dropped.add(i + 1)
        elif (_RANGE_SEP.fullmatch(gap) or (gap.strip().lower() == "and" and _BETWEEN.search(text[: a.start]))) and (
            a.value < b.value
        ):
            dropped.update({i, i + 1})
    return fractions, dropped


def _is_marked(text: str, start: int) -> bool:
    """A score marker precedes ``start`` in the same sentence with only filler words between, or the
    number is the value of a "Field: N" line ("Coherence: 2", "- Relevance: 5")."""
    line_start = text.rfind("\n", 0, start) + 1
    if _FIELD.fullmatch(text[line_start:start]):
        return True
    window = text[max(0, start - 80) : start]
    markers = list(_MARKER.finditer(window))
    if not markers:
        return False
    gap = window[markers[-1].end() :]
    if _SENTENCE_END.search(gap):
        return False
    before = re.findall(r"[a-z']+", re.split(r"[.!?;\n]", window[: markers[-1].start()])[-1].lower())[-3:]
    if any(w in _HYPOTHETICAL or w.endswith("n't") for w in before):
        return False
    gap_clean = re.sub(r"\(\s*\w+\s*(?:-|to)\s*\w+\s*\)", " ", gap)  # "Rating (1-5): 4"
    if re.search(r"\d", gap_clean):
        return False
    words = re.findall(r"[a-z']+", gap_clean.lower())
    return len(words) <= 6 and not any(w in _MARKER_BREAKERS or w.endswith("n't") for w in words)


def _candidates(text: str) -> list[_Candidate]:
    toks = _tokens(text)
    fractions, dropped = _pairs(text, toks)
    list_starts = _list_numbers(text)
    whole = _strip_decoration(text)
    out = []
    for i, tok in enumerate(toks):
        if i in dropped or tok.start in list_starts:
            continue
        marked = _is_marked(text, tok.start)
        denominator = fractions.get(i)
        if _excluded_by_context(text, tok, stated=marked or denominator is not None):
            continue
        is_whole = whole.lower() == text[tok.start : tok.end].lower()
        if tok.is_word and not (marked or denominator is not None or is_whole):
            continue
        if not marked and denominator is None and _COUNT_NOUNS.match(text[tok.end :]):
            continue
        out.append(_Candidate(tok.value, tok.start, tok.end, denominator, marked or is_whole))
    return out


def _choose(cands: list[_Candidate], low: float, high: float) -> _Candidate | None:
    """Last marked, else last fraction, else last in range, else last (reported out of range).

    A marked bare number outside the scale yields to a fraction on the scale's own top ("... has
    scored 15 penalties ... I would score the consistency of the Summary as 2 out of 5"): a verdict
    stated as N/high is the judge's, a stray count after "scored" is the text's."""
    marked = [c for c in cands if c.marked]
    if marked and marked[-1].denominator is None and not low <= marked[-1].value <= high:
        on_scale = [c for c in cands if c.denominator == high and low <= c.value <= high]
        if on_scale:
            return on_scale[-1]
    for tier in (
        marked,
        [c for c in cands if c.denominator is not None],
        [c for c in cands if low <= c.value <= high],
        cands,
    ):
        if tier:
            return tier[-1]
    return None


# --------------------------------------------------------------------------------------------
# Public functions
# --------------------------------------------------------------------------------------------


def parse_score(text: str, scale: Scale) -> ParsedScore:
    """Read the score a judge stated in ``text`` on ``scale`` (rules in the module docstring).

    Numeric scales (every label a number, e.g. ``Scale.likert(1, 5)``) use the number rules;
    other scales (``Scale.letters()``, "Yes"/"No") use :func:`parse_choice` on the labels.

    Raises :class:`InputError` when ``text`` is not a string.
    """
    if not isinstance(text, str):
        raise InputError(f"parse_score needs the judge's answer as a string, got {type(text).__name__}")
    numbers = _label_numbers(scale)
    if numbers is None:
        return _parse_label_score(text, scale)
    cands = _candidates(text)
    low, high = min(numbers), max(numbers)
    chosen = _choose(cands, low, high)
    if chosen is None:
        return ParsedScore(value=None, label=None, status="unparsed", span=None)
    span = text[chosen.start : chosen.end]
    if chosen.denominator is not None:
        end = _fraction_end(text, chosen)
        span = text[chosen.start : end]
        if chosen.denominator != high:
            return ParsedScore(value=None, label=None, status="out_of_range", span=span)
    if not low <= chosen.value <= high:
        return ParsedScore(value=None, label=None, status="out_of_range", span=span)
    label = _nearest_label(chosen.value, scale, numbers)
    return ParsedScore(value=_to_value(chosen.value, scale, numbers), label=label, status="ok", span=span)


# --------------------------------------------------------------------------------------------
# Helpers
# --------------------------------------------------------------------------------------------


def _strip_decoration(text: str) -> str:
    return strip_markdown(text).strip().strip("[](){}\"'.,;:!").strip()


def _fraction_end(text: str, cand: _Candidate) -> int:
    match = _FRACTION_SEP.match(text, cand.end)
    rest = _NUMBER.match(text, match.end()) if match else None
    return rest.end() if rest else cand.end


def _label_numbers(scale: Scale) -> list[float] | None:
    try:
        return [float(label) for label in scale.labels]
    except ValueError:
        return None


def _nearest_label(number: float, scale: Scale, numbers: list[float]) -> str:
    """Nearest label by its number; halves go to the higher label."""
    best = min(range(len(numbers)), key=lambda i: (abs(numbers[i] - number), -numbers[i]))
    return scale.labels[best]


def _to_value(number: float, scale: Scale, numbers: list[float]) -> float:
    """Map a number in label space to the scale's values (piecewise linear; identity for Likert)."""
    pairs = sorted(zip(numbers, scale.values))
    for (x0, y0), (x1, y1) in zip(pairs, pairs[1:]):
        if x0 <= number <= x1:
            return y0 if x1 == x0 else y0 + (number - x0) * (y1 - y0) / (x1 - x0)
    return pairs[0][1]


def _parse_label_score(text: str, scale: Scale) -> ParsedScore:
    label = parse_choice(text, scale.labels)
    if label is not None:
        return ParsedScore(value=scale.value_of(label), label=label, status="ok", span=label)
    stray = _stray_letter(text, scale)
    if stray is not None:
        return ParsedScore(value=None, label=None, status="out_of_range", span=stray)
    return ParsedScore(value=None, label=None, status="unparsed", span=None)


def _stray_letter(text: str, scale: Scale) -> str | None:
    """A lone capital letter given as the answer but not on a letter scale ("F" on A-E)."""
    if not all(len(label) == 1 and label.isalpha() for label in scale.labels):
        return None
    clean = strip_markdown(text).strip()
    m = re.fullmatch(r"[\[(]*([A-Z])[\])]*[.:]?", clean) or re.match(
        r"(?:\(([A-Z])\)|([A-Z])[):.](?:\s|$))", clean
    )
    if m is None:
        m = re.search(r"\banswer\s*(?:is)?\s*[:=]?\s*\(?([A-Z])\)?(?!\w)", clean, re.IGNORECASE)
    letter = next((g for g in (m.groups() if m else ()) if g), None)
    return letter if letter and letter.upper() not in {lab.upper() for lab in scale.labels} else None
