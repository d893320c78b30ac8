"""What a small language model is good at, measured once per output: likelihoods and yes/no probabilities.

A 270M base model asked for a 1-5 label answers at chance, but how probable it finds an output given its
source, and how much more probable than without the source, carries real signal (benchmarks/README.md,
"The free local judge"). This module computes that evidence for one output, with requests arranged so a
local model reuses its KV cache: the source is evaluated once per document (every output of it continues
the same tokens). Optional UniEval-style yes/no questions continue the output's tokens, so each costs only
its ~15 question tokens; they are off by default (little signal on the embedded model, and label
probabilities that move with the cache's history).

:class:`Evidence` keeps the raw token log-probabilities, so new aggregations need no new model calls;
:func:`features` turns it into the named numbers a fused model reads. Nothing here knows a criterion's
scale or a fitted model: that is :mod:`judgesdk.fused.model`.

Each task has its own prompts (:mod:`judgesdk.fused.domains`): a summary follows "Summary:" after its
article, a dialogue response follows "Response:" after its grounding fact and conversation (and, for the
fact's share, after the conversation alone), a story follows "Story:" after its writing prompt.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Sequence

from pydantic import BaseModel, Field

from judgesdk.core import CapabilityError, InputError, JudgeItem
from judgesdk.fused.domains import DOMAINS, Domain
from judgesdk.fused.text import text_features
from judgesdk.prompting import Template, load_template
from judgesdk.provider import GenerateRequest, GenerateResponse, Provider, Usage

SIGNAL_SET = "summary-signals/1"  # bump when a template, a question or a feature definition changes
JOIN = " "  # the output follows "Summary:" after one space
YES, NO = (" yes", "yes", " Yes", "Yes"), (" no", "no", " No", "No")
LOW_SHARE = 0.2  # the robust variant averages the lowest 20 % of token log-probabilities

# UniEval's boolean questions for summaries, one per criterion the fused judge knows.
QUESTIONS: dict[str, str] = {
    "coherence": "Is this a coherent summary of the article?",
    "consistency": "Is everything in this summary supported by the article?",
    "fluency": "Is this summary fluent and grammatical?",
    "relevance": "Does this summary capture the most important points of the article?",
}
UNCONDITIONAL_FEATURES = ("uncond_mean", "pmi_mean", "pmi_low", "hist_pmi")  # what needs the pass without the source
WITHOUT_CONTEXT_FEATURES = ("nofact_mean", "fact_pmi", "fact_pmi_low", "hist_pmi")  # what needs the pass without the context
REFERENCE_LIKELIHOOD_FEATURES = ("ref_mean", "ref_pmi")  # what needs the pass given the reference
TEMPLATE_IDS = DOMAINS["news"].template_ids  # the news domain's, as recorded by the first fits


class Evidence(BaseModel):
    """The raw signals of one output (token log-probabilities in nats) and the seconds each kind took."""

    signal_set: str = SIGNAL_SET
    domain: str = "news"
    conditional: list[float]
    unconditional: list[float] | None = None  # None: the pass was not asked for (the fit does not read it)
    reference: list[float] | None = None
    without_context: list[float] | None = None  # dialogue: the response given the conversation without the fact
    questions: dict[str, float] = Field(default_factory=dict)  # criterion -> log P(yes) - log P(no)
    text: dict[str, float] = Field(default_factory=dict)
    seconds: dict[str, float] = Field(default_factory=dict)
    cached: bool = False  # every request was served from the disk cache
    usage: Usage = Field(default_factory=Usage)


def templates(domain: str = "news") -> dict[str, Template]:
    """The signal prompts of ``domain`` (see :mod:`judgesdk.fused.domains`), template id -> loaded template;
    an unknown domain is an :class:`~judgesdk.core.errors.InputError`."""
    return {template_id: load_template(template_id) for template_id in _domain(domain).template_ids}


def template_hashes(domain: str = "news") -> dict[str, str]:
    """Template id -> ``version:content hash``, recorded by a fit so a changed prompt is never fed to it."""
    return {tid: f"{t.version}:{t.content_hash}" for tid, t in templates(domain).items()}


def _domain(name: str) -> Domain:
    if name not in DOMAINS:
        raise InputError(f"no fused signal domain {name!r}; known: {', '.join(DOMAINS)}")
    return DOMAINS[name]


async def extract(
    provider: Provider,
    item: JudgeItem,
    *,
    questions: Sequence[str] = (),
    reference: bool = False,
    unconditional: bool = True,
    domain: str = "news",
    without_context: bool = False,
) -> Evidence:
    """The signals of ``item`` (which needs a source) as :class:`Evidence`, read from ``provider``, which must
    offer token log-likelihoods (else :class:`~judgesdk.core.errors.CapabilityError`). ``reference=True`` adds
    the output's likelihood given the item's reference (one more continuation pass; the reference's n-gram
    overlap is always computed when the item has one, since it costs no model call); ``unconditional=False``
    skips the pass without the source (half the model time; the shipped fit reads it for consistency only);
    ``questions`` picks which criteria's yes/no questions are asked (none by default: on the embedded model they
    carried little signal, see benchmarks/README.md). ``domain`` picks the task's prompts
    (:mod:`judgesdk.fused.domains`); ``without_context=True`` (dialogue) adds the response's likelihood given
    the conversation alone."""
    spec = _domain(domain)
    if item.source is None or not item.source.strip():
        raise InputError(f"item {item.id or ''}: the fused judge scores an output against its source; pass source=...".replace("  ", " "))
    if not provider.capabilities.loglikelihood:
        raise CapabilityError(
            f"the fused judge needs token log-likelihoods, which {provider.kind}/{provider.model} does not offer; use the local "
            "provider, or an OpenAI-compatible server that echoes prompt log-probabilities (api = \"completions\")",
            provider=provider.kind,
        )
    if questions and not provider.capabilities.exact_labels:  # yes/no margins need P(yes) and P(no) themselves
        raise CapabilityError(
            f"this fused fit asks yes/no questions, which need exact label probabilities; {provider.kind}/{provider.model} "
            "does not offer them: use the local provider",
            provider=provider.kind,
        )
    unknown = sorted(set(questions) - set(QUESTIONS))
    if unknown:
        raise InputError(f"no yes/no question for {unknown}; known: {', '.join(QUESTIONS)}")
    if questions and spec.name != "news":
        raise InputError(f"the yes/no questions are asked of summaries only, not in the {spec.name} domain")
    has_context = item.context is not None and bool(item.context.strip())
    if spec.context == "required" and not has_context:
        raise InputError(f"item {item.id or ''}: the {spec.name} signals read a grounding fact; pass context=...".replace("  ", " "))
    tpl = templates(domain)
    seconds: dict[str, float] = {}
    cached: list[bool] = []
    usage = [Usage()]

    async def timed(kind: str, *calls: GenerateRequest) -> list[GenerateResponse]:
        started = time.perf_counter()
        responses = await asyncio.gather(*(provider.generate(c) for c in calls))
        seconds[kind] = seconds.get(kind, 0.0) + time.perf_counter() - started
        cached.extend(r.cached for r in responses)
        for r in responses:
            usage[0] = usage[0] + r.usage
        return list(responses)

    given = {"source": item.source, **({"context": item.context} if spec.context == "required" else {})}
    (conditional,) = await timed("conditional", _continuation(tpl[spec.conditional], item.output, **given))
    # One question at a time, always in the same order after the conditional request: parallel decoding
    # moved yes/no margins by up to 0.18 against one-at-a-time, and a judge must give the same number twice.
    asked = []
    for name in questions:
        asked += await timed(
            "questions",
            GenerateRequest(
                messages=tpl["signals.question"].render(source=item.source, output=item.output, question=QUESTIONS[name]),
                labels=YES + NO,
                max_tokens=0,
                tags=tpl["signals.question"].tags(),
            ),
        )
    history = None
    if without_context and spec.without_context:
        (history,) = await timed("without_context", _continuation(tpl[spec.without_context], item.output, source=item.source))
    baseline = None
    if unconditional:
        (baseline,) = await timed("unconditional", _continuation(tpl[spec.unconditional], item.output))
    ref_tokens = None
    if reference and spec.reference and item.reference is not None and item.reference.strip():
        (ref,) = await timed("reference", _continuation(tpl[spec.reference], item.output, reference=item.reference))
        ref_tokens = _logprobs(ref, provider)
    started = time.perf_counter()
    text = text_features(item.output, item.source, item.reference, context=item.context if has_context else None)
    seconds["text"] = time.perf_counter() - started
    return Evidence(
        signal_set=spec.signal_set,
        domain=spec.name,
        conditional=_logprobs(conditional, provider),
        unconditional=None if baseline is None else _logprobs(baseline, provider),
        reference=ref_tokens,
        without_context=None if history is None else _logprobs(history, provider),
        questions={name: _yes_margin(r) for name, r in zip(questions, asked)},
        text=text,
        seconds=seconds,
        cached=bool(cached) and all(cached),
        usage=usage[0],
    )


def _continuation(template: Template, output: str, **values: str | None) -> GenerateRequest:
    return GenerateRequest(messages=template.render(**values), continuation=JOIN + output, max_tokens=0, tags=template.tags())


def _logprobs(response: GenerateResponse, provider: Provider) -> list[float]:
    tokens = response.continuation_tokens or []
    if not tokens:
        raise CapabilityError(f"{provider.kind}/{provider.model} returned no token log-probabilities", provider=provider.kind)
    return [t.logprob for t in tokens]


def _yes_margin(response: GenerateResponse) -> float:
    """log P(yes) - log P(no), each summed over its spellings (leading space, capitalised)."""
    scores = response.label_logprobs or {}
    yes = _logsumexp([scores[s] for s in YES if s in scores])
    no = _logsumexp([scores[s] for s in NO if s in scores])
    return yes - no


def _logsumexp(values: list[float]) -> float:
    if not values:
        return -math.inf
    top = max(values)
    return top + math.log(sum(math.exp(v - top) for v in values))


def low_mean(logprobs: Sequence[float], share: float = LOW_SHARE) -> float:
    """Mean of the lowest ``share`` of the token log-probabilities (at least one token): the tokens the
    model found least expected, where an unsupported name or number shows."""
    ordered = sorted(logprobs)
    k = max(1, math.ceil(share * len(ordered)))
    return sum(ordered[:k]) / k


def features(evidence: Evidence) -> dict[str, float]:
    """Named features of one output, from its evidence (the fused models' inputs)."""
    cond, uncond = evidence.conditional, evidence.unconditional
    out = {
        "cond_mean": sum(cond) / len(cond),
        "cond_low": low_mean(cond),
        "log_tokens": math.log1p(len(cond)),
    }
    if uncond:
        out["uncond_mean"] = sum(uncond) / len(uncond)
        out["pmi_mean"] = out["cond_mean"] - out["uncond_mean"]
        out["pmi_low"] = out["cond_low"] - low_mean(uncond)
    out["cond_low10"] = low_mean(cond, 0.1)
    out["cond_min"] = min(cond)  # the single least expected token (a wrong name or number)
    out["cond_std"] = float(sum((v - out["cond_mean"]) ** 2 for v in cond) / len(cond)) ** 0.5
    if evidence.reference is not None:
        out["ref_mean"] = sum(evidence.reference) / len(evidence.reference)
        if uncond:
            out["ref_pmi"] = out["ref_mean"] - out["uncond_mean"]
    history = evidence.without_context
    if history:  # dialogue: what the fact adds over the conversation, and the conversation over nothing
        out["nofact_mean"] = sum(history) / len(history)
        out["fact_pmi"] = out["cond_mean"] - out["nofact_mean"]
        out["fact_pmi_low"] = out["cond_low"] - low_mean(history)
        if uncond:
            out["hist_pmi"] = out["nofact_mean"] - out["uncond_mean"]
    for name, margin in evidence.questions.items():
        out[f"yes_{name}"] = max(-30.0, min(30.0, margin))
    out.update(evidence.text)
    return out
