"""The tasks a fused fit can be made for, and the check that an item is one of them.

A fit's weights mean something only on outputs like the ones it was fitted on: the SummEval news fit read on
HANNA's stories (a 23-word writing prompt as the source, a 220-word story as the output) gave per-prompt
Spearman 0.09 with the human coherence, below story length alone (issue 27). So each fit names its
**domain** (which signal prompts it reads: a summary after its article, a response after a grounding fact
and a conversation, a story after its writing prompt) and carries its **envelope**: the shape of the items it
was fitted on, measured without a model call (source and output length, their ratio, the share of output
words absent from the source, whether a grounding fact is given). :func:`outside` says, in words, where an
item lies beyond it; ``method = "auto"`` then uses another domain's fit or falls back, and says so.

The envelope's margins (:data:`MARGINS`) are wide on purpose: NewsRoom's articles run to 2,700 words
against SummEval's 570, and the news fit holds there (benchmarks/README.md), so a length twice or five
times past the fitted range is still the same task; a story that is ten times its prompt, or an answer
shorter than any summary, is not.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

import numpy as np
from pydantic import BaseModel, Field

from judgesdk.fused.text import STOPWORDS, words

DomainName = Literal["news", "dialogue", "story"]


@dataclass(frozen=True)
class Domain:
    """One task's signal prompts (template ids) and what its items look like."""

    name: str
    signal_set: str  # bump when a template, a question or a feature definition of this domain changes
    conditional: str  # the output given its source (and context)
    unconditional: str  # the output alone
    reference: str | None = None  # the output given a reference
    without_context: str | None = None  # the output given the source but not the context (dialogue)
    context: Literal["required", "absent"] = "absent"  # does an item carry a grounding fact (``context``)
    output_word: str = "output"
    questions: tuple[str, ...] = field(default_factory=tuple)  # template ids only this domain uses

    @property
    def template_ids(self) -> tuple[str, ...]:
        return tuple(t for t in (self.conditional, self.unconditional, self.reference, self.without_context, *self.questions) if t)


DOMAINS: dict[str, Domain] = {
    # the news fit's prompts and signal set are those of the first fit (judgesdk.fused/1)
    "news": Domain("news", "summary-signals/1", "signals.conditional", "signals.unconditional", reference="signals.reference",
                   output_word="summary", questions=("signals.question",)),
    "dialogue": Domain("dialogue", "dialogue-signals/1", "signals.dialogue", "signals.response", without_context="signals.dialogue_history",
                       context="required", output_word="response"),
    "story": Domain("story", "story-signals/1", "signals.story", "signals.story_unconditional", output_word="story"),
}  # fmt: skip

# The shape of an item, without a model call (log1p of word counts; shares in [0, 1]).
SHAPE = ("source_words", "output_words", "output_source_ratio", "novel_words")
# How far below and above the fitted 0.5 %-99.5 % range an item may lie and still be the same task (log
# units for lengths: log 5 ~ five times, log 2 ~ twice; shares in absolute terms; None: no bound on that
# side). An output much shorter than its source is still a summary (NewsRoom's 2,700-word articles have
# 20-word summaries); one as long as its source, or made mostly of words the source never uses, is not (a
# summary that invents a detail stays inside: SummEval's most novel summary has 66 % new content words).
MARGINS: dict[str, tuple[float | None, float | None]] = {
    "source_words": (math.log(2), math.log(5)),
    "output_words": (math.log(2), math.log(2)),
    "output_source_ratio": (None, math.log(2)),
    "novel_words": (0.25, 0.35),
}
QUANTILES = (0.005, 0.995)


def shape(output: str, source: str | None) -> dict[str, float]:
    """The item's shape (see :data:`SHAPE`). ``novel_words``: the share of the output's content words (no
    function words) that its source never uses: a summary's are mostly the article's, a story's are not."""
    out, src = words(output), words(source or "")
    content = [w for w in out if w not in STOPWORDS]
    seen = set(src)
    return {
        "source_words": math.log1p(len(src)),
        "output_words": math.log1p(len(out)),
        "output_source_ratio": math.log1p(len(out)) - math.log1p(len(src)),
        "novel_words": sum(w not in seen for w in content) / len(content) if content else 0.0,
    }


class Envelope(BaseModel):
    """What the fitted items looked like: per shape measure, the 0.5 % and 99.5 % quantiles over the fitting
    data and the margin allowed past them; whether items carried a grounding fact."""

    context: Literal["required", "absent"] = "absent"
    ranges: dict[str, tuple[float, float]]
    margins: dict[str, tuple[float | None, float | None]] = Field(default_factory=lambda: dict(MARGINS))
    n_items: int = 0

    def outside(self, values: Mapping[str, float], *, has_context: bool) -> list[str]:
        """Why an item with this shape is not one of the fitted kind, in words (empty: it is)."""
        reasons = []
        if self.context == "required" and not has_context:
            reasons.append("no grounding fact (context), which every fitted item had")
        if self.context == "absent" and has_context:
            reasons.append("a grounding fact (context), which no fitted item had")
        for name, (lo, hi) in self.ranges.items():
            if name not in values:
                continue
            below, above = self.margins.get(name, (0.0, 0.0))
            low = -math.inf if below is None else lo - below
            high = math.inf if above is None else hi + above
            value = values[name]
            if not low <= value <= high:
                reasons.append(f"{_describe(name, value)} outside the fitted {_describe_range(name, low, high)}")
        return reasons


def envelope(shapes: Sequence[Mapping[str, float]], *, context: Literal["required", "absent"]) -> Envelope:
    """The envelope of the fitting items' shapes: per measure in ``shapes`` (each item's :func:`shape`), the
    0.5 % and 99.5 % quantiles, with ``context`` saying whether the fitted items carried a grounding fact
    (``"required"``) or not (``"absent"``), and how many items there were."""
    ranges = {}
    for name in SHAPE:
        column = np.array([s[name] for s in shapes], dtype=float)
        ranges[name] = (float(np.quantile(column, QUANTILES[0])), float(np.quantile(column, QUANTILES[1])))
    return Envelope(context=context, ranges=ranges, n_items=len(shapes))


def _describe(name: str, value: float) -> str:
    if name == "source_words":
        return f"source of {round(math.expm1(value))} words"
    if name == "output_words":
        return f"output of {round(math.expm1(value))} words"
    if name == "output_source_ratio":
        return f"output/source length ratio {math.exp(value):.2g}"
    return f"{value:.0%} of the output's content words absent from the source"


def _describe_range(name: str, lo: float, hi: float) -> str:
    if name in ("source_words", "output_words"):
        return f"range {max(0, round(math.expm1(lo)))}-{round(math.expm1(hi)) if math.isfinite(hi) else 'any'} words"
    if name == "output_source_ratio":
        return f"range {math.exp(lo):.2g}-{math.exp(hi):.2g}" if math.isfinite(lo) else f"range up to {math.exp(hi):.2g}"
    return f"range {max(0.0, lo):.0%}-{min(1.0, hi):.0%}"
