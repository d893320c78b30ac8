"""Ask a provider for a label distribution over a scale, with the best method its capabilities allow.

Method order is exact > decision > logprobs > sampling (002's Logprob vs Approximation), unless the caller
fixes one; ``parsed`` (002's Direct) is used only when asked for. ``decision`` is a provider that answers typed
decision questions with its own distribution (:mod:`judgesdk.provider.decisions`): it is asked about the item
and criterion, not a prompt, so the scorers run it (:mod:`judgesdk.scorers.decision`), and :func:`estimate`
itself refuses it. Every estimate records the method used and
why, including each fallback (labels below the coverage floor, logprobs dropped by the backend).

Generated answers (``parsed``, ``sampling``) can be constrained to an :class:`~judgesdk.estimation.grammars.AnswerFormat`
(``answer_format=``, given only for providers with ``Capabilities.grammar``): each answer that still does
not parse is asked once more (:func:`judgesdk.estimation.grammars.repair`), and ``Estimate.answer_format`` counts it.
"""

from __future__ import annotations

import asyncio
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from judgesdk.core import CapabilityError, LabelDistribution, ResultStatus, Scale
from judgesdk.estimation.distributions import from_answer, from_label_logprobs, from_samples, from_top_logprobs, surface_variants
from judgesdk.estimation.grammars import AnswerFormat, FormatUse, repair
from judgesdk.estimation.parsing import parse_score
from judgesdk.provider import Capabilities, GenerateRequest, GenerateResponse, Message, Provider, Usage

Method = Literal["auto", "exact", "decision", "logprobs", "sampling", "parsed"]


class EstimationSettings(BaseModel):
    """How distributions are estimated. Sampling defaults follow 002's Approximation (n=20, T=1.0)."""

    model_config = ConfigDict(extra="forbid")  # a typo is refused, not a default silently kept

    method: Method = "auto"
    samples: int = Field(default=20, ge=1)
    temperature: float = Field(default=1.0, gt=0)
    top_p: float | None = None
    top_logprobs: int = Field(default=20, ge=1)
    max_tokens: int = Field(default=8, ge=1)
    coverage_floor: float = Field(default=0.5, ge=0, le=1)
    on_low_coverage: Literal["fallback", "flag"] = "fallback"
    seed: int | None = 0


class Estimate(BaseModel):
    """What :func:`estimate` found: the distribution (None when no method gave one), its status, the method that
    gave it and why (each fallback included), the answers' texts, and what the calls cost and said (usage,
    latency, whether every answer came from a cache, the provider and model, notes)."""

    distribution: LabelDistribution | None
    status: ResultStatus
    method: str
    reason: str
    texts: list[str] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    latency_s: float = 0.0
    cached: bool = False
    provider: str = ""
    model: str = ""
    notes: list[str] = Field(default_factory=list)
    answer_format: FormatUse | None = None  # set when the answers were generated under a grammar


def read_label(text: str, scale: Scale) -> str | None:
    """The scale label a free-text answer gives, or None when it cannot be parsed (see judgesdk.estimation.parsing)."""
    return parse_score(text, scale).label


def choose_method(capabilities: Capabilities, wanted: Method) -> tuple[str, str]:
    """The method to start with, and why. ``capabilities``: what the provider declares it can do; ``wanted``:
    the caller's method (``auto`` picks exact > decision > logprobs > sampling by ``capabilities``). Returns
    ``(method, reason)``; a :class:`CapabilityError` when ``wanted`` needs a capability the provider lacks."""
    if wanted == "auto":
        if capabilities.exact_labels:
            return "exact", "provider scores labels exactly over the full vocabulary"
        if capabilities.decisions:
            return "decision", "provider answers typed decision questions with its own distribution over the levels"
        if capabilities.logprobs:
            return "logprobs", "provider returns top-k logprobs"
        return "sampling", "provider returns no logprobs"
    needed = {"exact": capabilities.exact_labels, "logprobs": capabilities.logprobs, "decision": capabilities.decisions}.get(wanted, True)
    if not needed:
        raise CapabilityError(f"method {wanted!r} is not offered by this provider ({capabilities.model_dump()})")
    return wanted, "fixed by the caller"


class _Ledger:
    """Collects what every call of one estimate cost and said."""

    def __init__(self, answer_format: AnswerFormat | None = None) -> None:
        self.responses: list[GenerateResponse] = []
        self.format = answer_format
        self.format_use = FormatUse(format=answer_format.name) if answer_format is not None else None

    def add(self, response: GenerateResponse) -> GenerateResponse:
        self.responses.append(response)
        return response

    def finish(self, provider: Provider, **fields: object) -> Estimate:
        usage = Usage()
        for r in self.responses:
            usage = usage + r.usage
        use = self.format_use if self.format_use is not None and self.format_use.answers else None
        return Estimate(
            usage=usage,
            latency_s=sum(r.latency_s for r in self.responses),
            cached=bool(self.responses) and all(r.cached for r in self.responses),
            provider=provider.kind,
            model=provider.model,
            notes=[*([use.note()] if use else []), *(n for r in self.responses for n in r.notes)],
            answer_format=use,
            **fields,
        )

    def constrained(self, request: GenerateRequest) -> GenerateRequest:
        """``request`` under the answer format's grammar, if there is one."""
        return request if self.format is None else request.model_copy(update={"grammar": self.format.grammar})

    async def repaired(self, provider: Provider, requests: list[GenerateRequest], texts: list[str], scale: Scale) -> list[str]:
        """``texts`` (answers to ``requests``, one each) with every one that does not parse asked once more."""
        if self.format is None or self.format_use is None:
            return texts
        use, fmt = self.format_use, self.format
        use.answers += len(texts)
        failed = [i for i, text in enumerate(texts) if read_label(text, scale) is None]
        outcomes = await asyncio.gather(*(repair(provider, requests[i], texts[i], fmt) for i in failed))
        texts = list(texts)
        for i, (response, text) in zip(failed, outcomes):
            self.add(response)
            texts[i] = text
            use.repairs += 1
            use.repaired += read_label(text, scale) is not None
        return texts


async def estimate(
    provider: Provider,
    messages: tuple[Message, ...],
    scale: Scale,
    settings: EstimationSettings | None = None,
    *,
    tags: tuple[tuple[str, str], ...] = (),
    answer_format: AnswerFormat | None = None,
) -> Estimate:
    """Estimate the distribution of the judge's answer to ``messages`` over ``scale``; generated answers
    follow ``answer_format`` when given (module docstring).

    ``provider``: who answers; ``settings``: how to estimate (the defaults of :class:`EstimationSettings` when
    None); ``tags``: provenance that enters every request's cache key (a template's id, version and hash).
    Returns an :class:`Estimate`, with status ``unparsed`` or ``low_coverage`` when no method gave a usable
    distribution; a :class:`CapabilityError` for a decision provider or a fixed method it cannot serve."""
    settings = settings or EstimationSettings()
    method, reason = choose_method(provider.capabilities, settings.method)
    if method == "decision":
        raise CapabilityError(
            f"{provider.kind}/{provider.model} answers typed decision questions about an item, not prompts: this method "
            "needs a prompt's answer; use method 'decision' (or 'auto', 'geval'), or a chat API for this one"
        )
    ledger = _Ledger(answer_format)
    base = GenerateRequest(messages=messages, max_tokens=settings.max_tokens, tags=tags, seed=settings.seed)
    while True:
        distribution, texts, why_not = await _run(method, provider, base, scale, settings, ledger)
        if distribution is not None and not (distribution.low_coverage and settings.on_low_coverage == "fallback"):
            break
        if distribution is not None:
            why_not = f"label coverage {distribution.coverage:.2f} below floor {settings.coverage_floor}"
        next_method = _next(method) if settings.method == "auto" else None
        if next_method is None:
            return ledger.finish(
                provider,
                distribution=distribution,
                status="low_coverage" if distribution is not None else "unparsed",
                method=method,
                reason=f"{reason}; {why_not}",
                texts=texts,
            )
        reason = f"{reason}; {method} gave no usable distribution ({why_not}), fell back to {next_method}"
        method = next_method
    status: ResultStatus = "low_coverage" if distribution.low_coverage else "ok"
    return ledger.finish(provider, distribution=distribution, status=status, method=method, reason=reason, texts=texts)


def _next(method: str) -> str | None:
    """Where to go when ``method`` gave nothing usable or too little label mass.

    Only logprobs falls back (to sampling): its coverage also reflects top-k truncation and answers that
    start with preamble tokens, which sampled free text can still read. Exact probabilities are what
    sampling would estimate, so a low-coverage exact estimate is flagged, not replaced by a noisier one.
    """
    return "sampling" if method == "logprobs" else None


async def _run(
    method: str, provider: Provider, base: GenerateRequest, scale: Scale, settings: EstimationSettings, ledger: _Ledger
) -> tuple[LabelDistribution | None, list[str], str]:
    if method == "exact":
        labels = tuple(v for label in scale.labels for v in surface_variants(label))
        response = ledger.add(await provider.generate(base.model_copy(update={"labels": labels, "max_tokens": 0})))
        try:
            return from_label_logprobs(response.label_logprobs or {}, scale, coverage_floor=settings.coverage_floor), [], ""
        except ValueError:
            return None, [], "no probability mass on any label"
    if method == "logprobs":
        request = base.model_copy(update={"top_logprobs": min(settings.top_logprobs, provider.capabilities.max_top_logprobs or settings.top_logprobs)})
        response = ledger.add(await provider.generate(request))
        texts = [c.text for c in response.choices]
        tokens = response.choices[0].tokens if response.choices else None
        if tokens is None:
            return None, texts, "backend returned no logprobs"
        distribution = from_top_logprobs(tokens, scale, coverage_floor=settings.coverage_floor)
        return distribution, texts, "no label among the top alternatives" if distribution is None else ""
    if method == "sampling":
        texts = await _samples(provider, ledger.constrained(base), settings, ledger)
        sampled = ledger.constrained(base).model_copy(update={"temperature": settings.temperature, "top_p": settings.top_p})
        requests = [sampled.model_copy(update={"sample_index": i, "seed": _seed(settings.seed, i)}) for i in range(len(texts))]
        texts = await ledger.repaired(provider, requests, texts, scale)
        distribution = from_samples((read_label(t, scale) for t in texts), scale)
        return distribution, texts, "no sample could be parsed" if distribution is None else ""
    request = ledger.constrained(base).model_copy(update={"temperature": 0.0})
    response = ledger.add(await provider.generate(request))
    texts = [c.text for c in response.choices]
    if ledger.format is not None:  # no choice at all is a blank answer, repaired like one
        texts = await ledger.repaired(provider, [request], (texts or [""])[:1], scale) + texts[1:]
    distribution = from_answer(read_label(texts[0], scale) if texts else None, scale)
    return distribution, texts, "the answer could not be parsed" if distribution is None else ""


async def _samples(provider: Provider, base: GenerateRequest, settings: EstimationSettings, ledger: _Ledger) -> list[str]:
    """``settings.samples`` answers at temperature T: one n-request where supported, topped up with
    separate requests (distinct ``sample_index`` and seed) where the backend returns fewer."""
    sampled = base.model_copy(update={"temperature": settings.temperature, "top_p": settings.top_p})
    texts: list[str] = []
    if provider.capabilities.multiple_samples:
        response = ledger.add(await provider.generate(sampled.model_copy(update={"n": settings.samples})))
        texts = [c.text for c in response.choices][: settings.samples]
    missing = range(len(texts), settings.samples)
    outcomes = await asyncio.gather(
        *(provider.generate(sampled.model_copy(update={"sample_index": i, "seed": _seed(settings.seed, i)})) for i in missing),
        return_exceptions=True,  # let every call finish, then report the first failure
    )
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            raise outcome
        ledger.add(outcome)
        texts.extend(c.text for c in outcome.choices[:1])
    return texts


def _seed(seed: int | None, index: int) -> int | None:
    return None if seed is None else seed + index
