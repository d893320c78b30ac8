"""Public data types at the edges of judgesdk: what is judged, on which scale, and what came back."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from judgesdk.core.errors import InputError
from judgesdk.core.provenance import Provenance


class Usage(BaseModel):
    """Tokens and calls a piece of work cost, as the providers report them: what budgets, meters and price
    summaries add up (``+`` adds two field by field, so ``sum(usages, Usage())`` totals a run)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0  # prompt tokens served from a reused prefix / provider prompt cache
    cache_write_input_tokens: int = 0  # prompt tokens written to a provider prompt cache (Anthropic bills them above input)
    calls: int = 0

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cached_input_tokens=self.cached_input_tokens + other.cached_input_tokens,
            cache_write_input_tokens=self.cache_write_input_tokens + other.cache_write_input_tokens,
            calls=self.calls + other.calls,
        )


class Scale(BaseModel):
    """An ordered set of labels with the numeric value each label stands for.

    ``Scale.likert(1, 5)`` gives labels "1".."5" with values 1..5; ``Scale.letters(...)`` gives the
    multiple-choice A-E mapping of 001; any other label set (e.g. "Yes"/"No") is allowed.
    """

    model_config = ConfigDict(frozen=True)

    labels: tuple[str, ...]
    values: tuple[float, ...]

    @model_validator(mode="after")
    def _check(self) -> Scale:
        if len(self.labels) < 2:
            raise InputError("a scale needs at least two labels, e.g. Scale.likert(1, 5)")
        if len(self.labels) != len(self.values):
            raise InputError(
                f"a scale needs one value per label: got {len(self.labels)} labels and {len(self.values)} values"
            )
        if len(set(self.labels)) != len(self.labels):
            raise InputError(f"scale labels must be distinct: {self.labels}")
        return self

    @classmethod
    def likert(cls, low: int = 1, high: int = 5) -> Scale:
        if high <= low:
            raise InputError(f"a Likert scale needs low < high, got {low}..{high}")
        return cls(labels=tuple(str(v) for v in range(low, high + 1)), values=tuple(float(v) for v in range(low, high + 1)))

    @classmethod
    def letters(cls, values: tuple[float, ...] = (1, 2, 3, 4, 5)) -> Scale:
        return cls(labels=tuple("ABCDEFGHIJ"[: len(values)]), values=tuple(float(v) for v in values))

    @property
    def low(self) -> float:
        return min(self.values)

    @property
    def high(self) -> float:
        return max(self.values)

    def value_of(self, label: str) -> float:
        return self.values[self.labels.index(label)]


class Criterion(BaseModel):
    """What is judged: a name, the definition shown to the judge, and the scale of its answer."""

    model_config = ConfigDict(frozen=True)

    name: str
    description: str = ""
    scale: Scale = Field(default_factory=Scale.likert)

    @model_validator(mode="after")
    def _check(self) -> Criterion:
        if not self.name.strip():
            raise InputError("a criterion needs a non-empty name, e.g. Criterion(name='coherence', ...)")
        return self


# What callers may pass where a criterion is asked for: a Criterion, a bare name, or several of them. The
# helpers sit here, below both the judge and the scorers, which both read criteria given this way.
CriterionSpec = Criterion | str | Sequence[Criterion | str]


def as_criterion(criterion: Criterion | str) -> Criterion:
    """A criterion object from itself or a bare name (then judged on a 1-5 scale with the name as definition)."""
    if isinstance(criterion, Criterion):
        return criterion
    if isinstance(criterion, str) and criterion.strip():
        return Criterion(name=criterion, description=criterion, scale=Scale.likert(1, 5))
    raise InputError(f"criterion must be a Criterion or a non-empty name, got {criterion!r}")


def as_criteria(criterion: CriterionSpec) -> tuple[Criterion, ...]:
    """One criterion or several (a list or tuple), each as :func:`as_criterion` reads it."""
    if isinstance(criterion, (list, tuple)):
        if not criterion:
            raise InputError("pass at least one criterion")
        return tuple(as_criterion(c) for c in criterion)
    if isinstance(criterion, (Criterion, str)):
        return (as_criterion(criterion),)
    raise InputError(f"criterion must be a Criterion or a non-empty name, got {criterion!r}")  # as as_criterion says it


# decision: the probabilities a decision API answered (judgesdk.provider.decisions); predictive: the fused judge's
# predictive distribution over the scale's levels (judgesdk.fused.levels)
DistributionMethod = Literal["exact", "logprobs", "sampling", "parsed", "decision", "predictive"]


class LabelDistribution(BaseModel):
    """A probability distribution over a scale's labels, and the evidence it rests on.

    ``coverage`` is the probability mass the labels had before renormalising (1.0 for sampling and
    parsing by construction of the estimate, measured for logprobs and exact); ``low_coverage`` is set
    when it fell below the configured floor.
    """

    model_config = ConfigDict(frozen=True)

    scale: Scale
    probs: tuple[float, ...]
    method: DistributionMethod
    coverage: float | None = None
    low_coverage: bool = False
    n_samples: int | None = None
    n_unparsed: int | None = None
    stderr: float | None = None

    @property
    def expected(self) -> float:
        return float(sum(p * v for p, v in zip(self.probs, self.scale.values)))

    @property
    def mode(self) -> str:
        best = max(range(len(self.probs)), key=lambda i: self.probs[i])
        return self.scale.labels[best]

    @property
    def variance(self) -> float:
        mean = self.expected
        return float(sum(p * (v - mean) ** 2 for p, v in zip(self.probs, self.scale.values)))

    @property
    def entropy(self) -> float:
        """Shannon entropy in nats."""
        import math

        return float(-sum(p * math.log(p) for p in self.probs if p > 0))

    def prob(self, label: str) -> float:
        return self.probs[self.scale.labels.index(label)]

    def as_dict(self) -> dict[str, float]:
        return dict(zip(self.scale.labels, self.probs))


# refused: a decision server declined the question; missing: its response had no answer for it. Neither has a
# score (never a 0), as unparsed and error have none.
ResultStatus = Literal["ok", "unparsed", "low_coverage", "refused", "missing", "error"]


class JudgeResult(BaseModel):
    """One judgement. ``score`` is None when the status is ``unparsed`` or ``error``: never a silent number.

    ``low_coverage`` keeps its score but says the labels held less probability mass than the configured
    floor (the judge mostly wanted to say something else): use it with care, or route it to review.
    """

    score: float | None
    status: ResultStatus
    criterion: str
    method: str
    method_reason: str = ""
    distribution: LabelDistribution | None = None
    rationale: str | None = None
    raw: list[str] = Field(default_factory=list)
    provider: str = ""
    model: str = ""
    cached: bool = False
    usage: Usage = Field(default_factory=Usage)
    latency_s: float = 0.0
    error: str | None = None
    notes: list[str] = Field(default_factory=list)
    details: dict[str, Any] = Field(default_factory=dict)  # method-specific evidence (per rung, per assistant...)
    parts: dict[str, JudgeResult] | None = None  # results a combined score was made of (e.g. per criterion)
    item_id: str | None = None
    provenance: Provenance | None = None  # what produced it (judgesdk.core.provenance); None on results that no model produced


def method_family(method: str) -> str:
    """What a score means: ``fused/source`` and ``fused/source+reference`` are both ``fused`` (the human
    scale), ``geval/exact`` is ``geval`` (the judge's label scale). ``method``: a result's method name; returns
    its part before the first ``/``."""
    return method.split("/")[0]


class JudgeItem(BaseModel):
    """One thing to judge: the output, and what it may be judged against."""

    output: str
    source: str | None = None
    context: str | None = None
    reference: str | None = None
    id: str | None = None

    @model_validator(mode="after")
    def _check(self) -> JudgeItem:
        if not isinstance(self.output, str) or not self.output.strip():
            raise InputError(f"item {self.id or ''} has an empty output: there is nothing to judge".replace("  ", " "))
        for name in ("output", "source", "context", "reference", "id"):
            check_text(getattr(self, name), name)
        return self


def check_text(value: object, name: str) -> None:
    """Refuse text that is not valid Unicode: a lone surrogate (what ``errors="surrogateescape"`` makes of
    undecodable bytes, or a JSON ``\\udcff`` escape) cannot be encoded, so it would fail later inside a
    cache key, a tokenizer or an HTTP body, far from the item that caused it.

    ``value``: the text to check (anything that is not a ``str`` passes); ``name``: the field it came from, named
    in the :class:`InputError` raised for a lone surrogate."""
    if not isinstance(value, str):
        return
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputError(
            f"'{name}' holds {value[exc.start]!r} at character {exc.start}, a lone surrogate that is not valid Unicode"
            " text: fix the encoding of what produced it (decode its bytes as UTF-8)"
        ) from None
