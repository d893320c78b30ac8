"""Read which of a set of options a judge's free-text answer chooses: :func:`parse_choice`.

The label words of pairwise and yes/no answers ("Better", "Yes", "tie") and multiple-choice letters (001 Table 2:
"Your Answer (enter 1 letter from A to E):") become one option here; :func:`judgesdk.estimation.parsing.parse_score`
reads a letter or word scale through it, and :mod:`judgesdk.estimation.parsing` re-exports it beside that.

Rules of ``parse_choice(text, options)`` (case-insensitive), first that applies wins
-----------------------------------------------------------------------------------

1. the whole answer is an option ("B", "**Yes**", "[[A]]", "Tie.");
2. an explicit marker names one: "Answer: B", "My choice is (C)", "Verdict: Better", "I choose A";
   the last marker wins;
3. a line that is only an option ("...reasoning...\\n\\nB"); the last such line wins;
4. the first token is an option: "B) ...", "(B) ...", "B: ...", "B. ..." for letters (a letter must
   be followed by ")", ":", "." or the end, so the article "A good summary" is not read as A),
   "No, the summary ..." for words (a word must be followed by punctuation or the end, so "yes
   and no" is not read as Yes);
5. exactly one distinct option appears in parentheses ("... so (B) is better");
6. for word options, exactly one distinct option occurs as a word, ignoring negated ones ("not
   worse"); letters are never scanned from running text.

Anything else returns ``None``: an unclear answer is not a choice.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from judgesdk.core import InputError

__all__ = ["parse_choice", "strip_markdown"]

_MARKDOWN = re.compile(r"[*_`]+")


def strip_markdown(text: str) -> str:
    """``text`` without Markdown's emphasis and code marks (``*``, ``_``, backticks), which judges wrap answers in."""
    return _MARKDOWN.sub("", text)


def parse_choice(text: str, options: Sequence[str]) -> str | None:
    """Return the option (as spelled in ``options``) that ``text`` chooses, or None when unclear.

    Works for label words ("Better"/"Worse"/"Similar", "Yes"/"No", "A"/"B"/"tie") and letters
    (MCQ "A".."E"); matching is case-insensitive. Rules in the module docstring.
    """
    if not isinstance(text, str):
        raise InputError(f"parse_choice needs the judge's answer as a string, got {type(text).__name__}")
    opts = [o for o in options if o.strip()]
    if not opts:
        raise InputError("parse_choice needs at least one non-empty option, e.g. ['Yes', 'No']")
    clean = strip_markdown(text).strip()
    for rule in (_whole, _explicit, _lone_line, _first_token, _parenthesised, _scan_words):
        found = rule(clean, opts)
        if found is not None:
            return found
    return None


def _option_pattern(opts: list[str]) -> str:
    return "|".join(re.escape(o) for o in sorted(opts, key=len, reverse=True))


def _canonical(found: str, opts: list[str]) -> str:
    return next(o for o in opts if o.lower() == found.lower())


def _whole(clean: str, opts: list[str]) -> str | None:
    core = clean.strip().strip("[](){}\"'.,;:!").strip()
    return next((o for o in opts if o.lower() == core.lower()), None)


_EXPLICIT = (
    r"\b(?:final\s+)?(?:answer|choice|option|verdict|decision|preference|judge?ment|selection|output|"
    r"i\s+(?:choose|pick|select|prefer|would\s+choose|would\s+pick))\b"
    r"(?:\s*\([^)]*\))?\s*(?:is|would\s+be|:|=|-)?\s*:?\s*(?:option\s+)?[\[(\"']*\s*({opts})\s*[\])\"']*(?![\w])"
)


def _explicit(clean: str, opts: list[str]) -> str | None:
    pattern = re.compile(_EXPLICIT.replace("{opts}", _option_pattern(opts)), re.IGNORECASE)
    found = [m.group(1) for m in pattern.finditer(clean)]
    return _canonical(found[-1], opts) if found else None


def _lone_line(clean: str, opts: list[str]) -> str | None:
    hits = [o for line in clean.splitlines() if (o := _whole(line, opts)) is not None and line.strip()]
    return hits[-1] if hits else None


def _first_token(clean: str, opts: list[str]) -> str | None:
    for opt in sorted(opts, key=len, reverse=True):
        if len(opt) == 1:
            pat = rf"[\[(]?\s*{re.escape(opt)}\s*(?:[\])]|[:.](?=\s|$)|$)"
        else:
            pat = rf"[\[(]?{re.escape(opt)}(?:[\])]|[,.:;!\n]|\s*$)"
        if re.match(pat, clean, re.IGNORECASE):
            return opt
    return None


def _parenthesised(clean: str, opts: list[str]) -> str | None:
    pattern = re.compile(r"\(\s*(" + _option_pattern(opts) + r")\s*\)", re.IGNORECASE)
    found = {_canonical(m.group(1), opts) for m in pattern.finditer(clean)}
    return found.pop() if len(found) == 1 else None


def _scan_words(clean: str, opts: list[str]) -> str | None:
    words = [o for o in opts if len(o) > 1]
    if not words:
        return None
    pattern = re.compile(r"(?<![\w])(" + _option_pattern(words) + r")(?![\w])", re.IGNORECASE)
    found = set()
    for m in pattern.finditer(clean):
        if re.search(r"\b(?:not|no|never|isn't|n't)\s+(?:\w+\s+)?$", clean[max(0, m.start() - 20) : m.start()], re.IGNORECASE):
            continue
        found.add(_canonical(m.group(1), words))
    return found.pop() if len(found) == 1 else None
