"""Likelihood scoring (GPTScore): exact normalisations on scripted token logprobs, then end to end."""

from __future__ import annotations

import math

import pytest

from judgesdk.core.errors import CapabilityError, InputError
from judgesdk.core.types import Criterion, JudgeItem
from judgesdk.judging.judge import Judge
from judgesdk.provider.protocol import Capabilities, GenerateRequest, as_text
from judgesdk.providers.scripted import ScriptedProvider, ScriptedReply
from judgesdk.scorers import scorer_for
from judgesdk.scorers.common import ScorerOptions
from judgesdk.scorers.likelihood import score, score_many

SOURCE = "The council approved the new park on Monday after a long debate."
CRIT = Criterion(name="relevance", description="How well does the text capture the source's key points?")
ITEM = JudgeItem(output="Council approves new park", source=SOURCE, id="x1")
COND = [-1.0, -2.0, -0.5, -0.5]  # one logprob per word of " Council approves new park"
BASE = [-3.0, -4.0, -2.0, -3.0]


def by_source(request: GenerateRequest) -> ScriptedReply:
    """Conditional prompts (the source is in them) get COND, the baseline gets BASE."""
    return ScriptedReply(continuation_logprobs=COND if SOURCE in as_text(request.messages) else BASE)


def options(normalization: str | None = None) -> ScorerOptions:
    return ScorerOptions(extra={} if normalization is None else {"normalization": normalization})


async def test_mean_is_the_default_and_is_not_on_the_scale():
    provider = ScriptedProvider(by_source)
    result = await score(provider, ITEM, CRIT, options(), "likelihood")
    assert result.status == "ok" and result.score == pytest.approx(-1.0)
    assert result.method == "likelihood/mean" and result.distribution is None
    assert "not a value on the criterion's scale" in result.method_reason
    assert result.item_id == "x1" and result.provider == "scripted" and result.usage.calls == 1


async def test_request_appends_the_output_after_one_space_to_the_text_prefix():
    provider = ScriptedProvider(by_source)
    await score(provider, ITEM, CRIT, options(), "likelihood")
    request = provider.calls[0]
    assert request.continuation == " Council approves new park"
    assert as_text(request.messages).endswith(f"Source:\n{SOURCE}\nText:")
    assert "relevance: How well does the text capture" in as_text(request.messages)
    assert ("template_id", "likelihood.generic") in request.tags


async def test_sum():
    result = await score(ScriptedProvider(by_source), ITEM, CRIT, options("sum"), "likelihood")
    assert result.score == pytest.approx(-4.0) and result.method == "likelihood/sum"


async def test_ratio_is_mean_conditional_minus_mean_baseline_without_the_source():
    provider = ScriptedProvider(by_source)
    result = await score(provider, ITEM, CRIT, options("ratio"), "likelihood")
    assert result.score == pytest.approx(-1.0 - (-3.0))
    assert len(provider.calls) == 2 and result.usage.calls == 2
    baseline = as_text(provider.calls[1].messages)
    assert SOURCE not in baseline and baseline.endswith("Source:\n\nText:")


async def test_score_many_runs_all_conditionals_before_the_baselines():
    provider = ScriptedProvider(by_source)
    items = [ITEM, ITEM.model_copy(update={"output": "A park", "id": "x2"})]
    results = await score_many(provider, items, CRIT, options("ratio"))
    kinds = [SOURCE in as_text(c.messages) for c in provider.calls]
    assert kinds == [True, True, False, False]
    # " A park" has two words: COND[:2] and BASE[:2]
    assert results[1].score == pytest.approx((-1.0 - 2.0) / 2 - (-3.0 - 4.0) / 2)


async def test_registry_dispatches_likelihood():
    assert scorer_for("likelihood") is score


async def test_provider_without_loglikelihood_raises_capability_error():
    provider = ScriptedProvider(by_source, capabilities=Capabilities(logprobs=True, max_top_logprobs=5))
    with pytest.raises(CapabilityError, match="log-probability of a given continuation"):
        await score(provider, ITEM, CRIT, options(), "likelihood")
    assert provider.calls == []


class DropsContinuation(ScriptedProvider):
    """Claims log-likelihood but returns no continuation tokens (a server ignoring echo)."""

    async def generate(self, request: GenerateRequest):
        response = await super().generate(request)
        return response.model_copy(update={"continuation_tokens": None})


async def test_backend_returning_no_token_logprobs_raises_capability_error():
    provider = DropsContinuation(by_source)
    with pytest.raises(CapabilityError, match="no token log-probabilities"):
        await score(provider, ITEM, CRIT, options(), "likelihood")


async def test_non_finite_logprob_is_an_error_status_not_a_number():
    provider = ScriptedProvider(lambda r: ScriptedReply(continuation_logprobs=[-1.0, -math.inf, -1.0, -1.0]))
    result = await score(provider, ITEM, CRIT, options(), "likelihood")
    assert result.status == "error" and result.score is None and "non-finite" in result.error


async def test_bad_inputs_say_what_to_fix():
    with pytest.raises(InputError, match="mean, sum, ratio"):
        await score(ScriptedProvider(by_source), ITEM, CRIT, options("median"), "likelihood")
    with pytest.raises(InputError, match="pass source="):
        await score(ScriptedProvider(by_source), JudgeItem(output="x"), CRIT, options(), "likelihood")


def test_judge_runs_likelihood_through_the_registry():
    with Judge(ScriptedProvider(by_source), method="likelihood") as judge:
        result = judge.score("Council approves new park", source=SOURCE, criterion=CRIT)
    assert result.status == "ok" and result.score == pytest.approx(-1.0)


# -- integration ---------------------------------------------------------------------------------

ARTICLE = (
    "Heavy rain flooded the main road into the village of Alder on Tuesday. The fire service pumped "
    "water from twelve houses and the road reopened in the evening. No one was hurt."
)
GOOD = "Floods closed the road into Alder on Tuesday; twelve houses were pumped out and no one was hurt."
BAD = "The football club signed a new goalkeeper from Spain for ten million euros."


@pytest.mark.integration
async def test_local_model_all_normalisations_and_prefix_reuse(local):
    items = [JudgeItem(output=GOOD, source=ARTICLE), JudgeItem(output=BAD, source=ARTICLE)]
    mean = await score_many(local, items, CRIT, options("mean"))
    ratio = await score_many(local, items[:1], CRIT, options("ratio"))
    total = await score(local, items[0], CRIT, options("sum"))
    assert all(r.status == "ok" and r.score < 0 for r in [*mean, total])
    assert all(r.status == "ok" and math.isfinite(r.score) for r in ratio)
    assert total.score < mean[0].score  # a sum over several tokens is below their mean
    assert mean[1].usage.cached_input_tokens > 0  # the second output reused the shared prefix
    assert mean[0].provider == "local"


@pytest.mark.integration
async def test_llama_server_completions_echo(llama_server):
    """Through the OpenAI-compatible provider (``echo`` prompt logprobs). The llama.cpp server sorts the
    full vocabulary for every echoed token (~1 s each on 2 CPU threads), so the prompt is tiny."""
    from judgesdk.prompting.templates import parse_template
    from judgesdk.providers.openai import OpenAIProvider, default_capabilities

    tiny = parse_template(b'id = "test.tiny"\nversion = "1"\nuser = "{{source}}"\nanswer_prefix = "Text:"')
    provider = OpenAIProvider(
        model=llama_server.model,
        base_url=llama_server.base_url,
        api="completions",
        capabilities=default_capabilities("completions"),
    )
    try:
        result = await score(
            provider, JudgeItem(output="Wet", source="Rain"), CRIT, ScorerOptions(template=tiny), "likelihood"
        )
    finally:
        await provider.aclose()
    assert result.status == "ok" and result.score < 0 and result.provider == "openai"
