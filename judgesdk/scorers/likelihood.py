"""Likelihood scoring (GPTScore; the baseline of 000 Table 1 and 003 §3.1's "LM probability" assistant).

The judge is not asked for a verdict: the score is how probable the model finds the judged output as
the continuation of a criterion-specific instruction and the source (``likelihood.generic``: the
prefix ends with ``Text:`` and the output is appended after one space). A model that finds the output
likely "would have written it" for that instruction, which GPTScore reads as quality on the criterion.

Normalisations (``options.extra["normalization"]``), over the output's token log-probabilities
``lp_1..lp_n`` (natural log, nats):

* ``"mean"`` (default, GPTScore's form): ``1/n * sum_i lp_i``, comparable across output lengths;
* ``"sum"``: ``sum_i lp_i``, the log-probability of the whole output (penalises length);
* ``"ratio"``: ``mean(lp | instruction, source) - mean(lp | instruction, empty source)``, the mean
  token pointwise mutual information between source and output under the same instruction. Where
  ``mean`` also rewards text that is generic or fluent in itself, ``ratio`` keeps only what the source
  explains (a PMI-style score: positive when the source makes the output more likely).

The score is a log-probability (<= 0 for ``mean``/``sum``, any sign for ``ratio``), **not** a value on
the criterion's scale: compare or rank it, correlate it, or calibrate it, but do not read it as a Likert
score. ``distribution`` is None. The shared prefix (instruction, criterion, source) comes first and
the output is only the continuation, so a local provider reuses the prefix's KV cache across the
outputs of one source; :func:`score_many` orders calls to keep that reuse for ``ratio`` too.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Literal, cast, get_args

from judgesdk.core import CapabilityError, Criterion, InputError, JudgeItem, JudgeResult, MissingItemField, ResultStatus
from judgesdk.prompting import Template
from judgesdk.provider import GenerateRequest, GenerateResponse, Message, Provider
from judgesdk.scorers.common import (
    ScorerOptions,
    result_from_responses,
    template_values,
)
from judgesdk.scorers.spec import MethodSpec

Normalization = Literal["mean", "sum", "ratio"]
DEFAULT_TEMPLATE = "likelihood.generic"
JOIN = " "  # prompts/README.md: the output follows the template's answer_prefix after one space
_NOT_A_SCALE = "a log-probability in nats, not a value on the criterion's scale"
_DESCRIPTION: dict[str, str] = {
    "mean": "mean token log-probability of the output given instruction and source (GPTScore)",
    "sum": "summed token log-probability of the output given instruction and source",
    "ratio": "mean token log-probability of the output with the source minus without it (PMI-style)",
}


async def score(
    provider: Provider, item: JudgeItem, criterion: Criterion, options: ScorerOptions, method: str = "likelihood"
) -> JudgeResult:
    """Likelihood score of ``item.output`` (normalisation from ``options.extra``, see the module docstring)."""
    return (await score_many(provider, [item], criterion, options, method))[0]


async def score_many(
    provider: Provider,
    items: Sequence[JudgeItem],
    criterion: Criterion,
    options: ScorerOptions,
    method: str = "likelihood",
) -> list[JudgeResult]:
    """Score several items, all conditional calls first (in the given order), then the baselines.

    One local KV cache holds one prefix: interleaving an item's conditional and baseline prompts would
    re-evaluate the source for every output. Pass the outputs of one source consecutively.
    """
    normalization = normalization_of(options)
    requireloglikelihood(provider)
    template = options.template_or(DEFAULT_TEMPLATE)
    conditional = [await loglikelihood(provider, template, item, criterion, item.source) for item in items]
    if normalization != "ratio":
        return [_result(provider, [r], normalization, criterion, item, method) for r, item in zip(conditional, items)]
    _require_source_slot(template)
    baseline = [await loglikelihood(provider, template, item, criterion, "") for item in items]
    return [
        _result(provider, [c, b], normalization, criterion, item, method)
        for c, b, item in zip(conditional, baseline, items)
    ]


def normalization_of(options: ScorerOptions) -> Normalization:
    value = options.extra.get("normalization", "mean")
    if value not in get_args(Normalization):
        raise InputError(f"unknown likelihood normalization {value!r}; use one of {', '.join(get_args(Normalization))}")
    return cast(Normalization, value)


def requireloglikelihood(provider: Provider) -> None:
    if not provider.capabilities.loglikelihood:
        raise CapabilityError(
            f"method 'likelihood' needs the log-probability of a given continuation, which {provider.kind}/"
            f"{provider.model} does not offer; use the local provider or an OpenAI-compatible server with "
            "api='completions' that returns prompt logprobs (echo)",
            provider=provider.kind,
        )


def _require_source_slot(template: Template) -> None:
    if "source" not in template.variables:
        raise InputError(
            f"normalization 'ratio' compares with and without the source, "
            f"but template {template.id!r} has no {{{{source}}}}"
        )


def prompt_messages(
    template: Template, item: JudgeItem, criterion: Criterion, source: str | None
) -> tuple[Message, ...]:
    """The prefix the output continues: the template rendered for ``source`` (``""`` for the baseline)."""
    if source is None and "source" in template.variables:
        raise MissingItemField(f"it has no 'source', and likelihood template {template.id!r} scores the output given a source: pass source=...")
    return template.render(**{**template_values(item, criterion), "source": source})


async def loglikelihood(
    provider: Provider, template: Template, item: JudgeItem, criterion: Criterion, source: str | None
) -> GenerateResponse:
    """The provider's token log-probabilities of ``item.output`` continuing ``template`` rendered for
    ``source`` (one request; shared with Fusion-Eval's LM-probability assistant, so both hit one cache entry)."""
    request = GenerateRequest(
        messages=prompt_messages(template, item, criterion, source),
        continuation=JOIN + item.output,
        max_tokens=0,
        tags=template.tags(),
    )
    response = await provider.generate(request)
    if not response.continuation_tokens:
        raise CapabilityError(
            f"{provider.kind}/{provider.model} returned no token log-probabilities for the continuation",
            provider=provider.kind,
        )
    return response


def mean_logprob(response: GenerateResponse) -> float:
    tokens = response.continuation_tokens or []
    return sum(t.logprob for t in tokens) / len(tokens)


def normalized_score(responses: Sequence[GenerateResponse], normalization: Normalization) -> float:
    """The number of the module docstring from the conditional (and, for ``ratio``, baseline) response."""
    if normalization == "sum":
        return sum(t.logprob for t in responses[0].continuation_tokens or [])
    if normalization == "mean":
        return mean_logprob(responses[0])
    return mean_logprob(responses[0]) - mean_logprob(responses[1])


def _result(
    provider: Provider,
    responses: Sequence[GenerateResponse],
    normalization: Normalization,
    criterion: Criterion,
    item: JudgeItem,
    method: str,
) -> JudgeResult:
    value = normalized_score(responses, normalization)
    n_tokens = len(responses[0].continuation_tokens or [])
    status: ResultStatus = "ok" if math.isfinite(value) else "error"
    return result_from_responses(
        provider,
        responses,
        score=value if status == "ok" else None,
        status=status,
        error=None if status == "ok" else f"non-finite log-likelihood {value}",
        criterion=criterion.name,
        method=f"{method}/{normalization}",
        method_reason=f"{_DESCRIPTION[normalization]}; {_NOT_A_SCALE}",
        notes=[f"score is {_NOT_A_SCALE}", f"{n_tokens} output tokens"],
        item_id=item.id,
    )


LIKELIHOOD = MethodSpec(
    name="likelihood", score=score, options={"normalization": "any"}, off_scale="a log-probability", output_as_continuation=True
)
