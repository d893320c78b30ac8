"""The foundation against real components on loopback: llama.cpp in-process, llama.cpp's OpenAI-compatible
server (openai and litellm adapters), and the LiteLLM proxy's Anthropic /v1/messages (anthropic adapter).

The embedded model is a tiny base model: these tests assert plumbing (methods, coverage, counts, cache,
statuses), never the model's opinions.
"""

import pytest

from judgesdk.core.types import Criterion, JudgeItem, Scale
from judgesdk.estimation.estimator import EstimationSettings
from judgesdk.judging.judge import Judge
from judgesdk.provider.layers.cache import CachedProvider, open_cache
from judgesdk.provider.layers.retry import RetryingProvider, RetryPolicy
from judgesdk.provider.protocol import Capabilities, GenerateRequest, Message

from support.patience import CEILING_S, alatency_s, scaled

pytestmark = pytest.mark.integration

SOURCE = (
    "The city council of Marlow voted on Tuesday to turn the disused rail yard into a public park with a "
    "playground, a community garden and a cycle path. Construction starts next spring."
)
OUTPUTS = ["Marlow will turn its old rail yard into a park.", "Marlow's council rejected a shopping centre."]
CONSISTENCY = Criterion(name="consistency", description="Only facts supported by the article.", scale=Scale.likert(1, 5))
FLAG = EstimationSettings(on_low_coverage="flag", samples=6)


def openai_provider(server, api="completions", **kwargs):
    from judgesdk.providers.openai import OpenAIProvider

    caps = Capabilities(logprobs=True, max_top_logprobs=20, seed=True, loglikelihood=api == "completions")
    kwargs.setdefault("timeout_s", CEILING_S)  # correctness, not speed: support/patience.py
    return OpenAIProvider(server.model, base_url=server.base_url, api=api, capabilities=caps, **kwargs)


def test_local_exact_distribution_with_prefix_reuse(local):
    judge = Judge(local, method="geval")  # the default (auto) would use the fused judge on this model
    results = judge.score_many([JudgeItem(output=o, source=SOURCE) for o in OUTPUTS], criterion=CONSISTENCY)
    for result in results:
        assert result.method == "geval/exact" and result.provider == "local"
        assert result.status in ("ok", "low_coverage") and result.score is not None
        assert 0 < result.distribution.coverage <= 1
        assert sum(result.distribution.probs) == pytest.approx(1.0)
        assert 1 <= result.score <= 5
    # the second output shares the instructions and source with the first: its prefix is reused
    assert results[1].usage.cached_input_tokens > 0.5 * results[1].usage.input_tokens


async def test_local_exact_matches_generation_probabilities(local):
    """Exact label log-probabilities agree with a chained evaluation and sum sensibly."""
    messages = (Message(role="user", content="Count: one, two, three, four,"),)
    response = await local.generate(GenerateRequest(messages=messages, labels=(" five", " six", " 5"), max_tokens=0))
    lp = response.label_logprobs
    assert lp[" five"] > lp[" six"]  # the base model knows how to count
    cont = await local.generate(GenerateRequest(messages=messages, continuation=" five"))
    assert sum(t.logprob for t in cont.continuation_tokens) == pytest.approx(lp[" five"], abs=1e-3)


def test_openai_provider_on_llama_server_gives_logprobs_with_coverage(llama_server):
    judge = Judge(openai_provider(llama_server), settings=FLAG)
    result = judge.score(OUTPUTS[0], source=SOURCE, criterion=CONSISTENCY)
    judge.close()
    assert result.method == "geval/logprobs" and result.provider == "openai"
    assert result.distribution.method == "logprobs"
    assert 0 < result.distribution.coverage <= 1
    assert result.usage.input_tokens > 0
    served = result.provenance.served  # what the server's response said answered, and the client that asked
    assert served["model"] and served["runtime"].startswith("openai ") and result.provenance.templates


def test_openai_low_coverage_falls_back_to_sampling_and_says_why(llama_server):
    settings = EstimationSettings(coverage_floor=1.0, samples=4)  # nothing reaches full coverage over top-k
    judge = Judge(openai_provider(llama_server), settings=settings)
    result = judge.score(OUTPUTS[0], source=SOURCE, criterion=CONSISTENCY)
    judge.close()
    assert result.method == "geval/sampling"
    assert "fell back to sampling" in result.method_reason
    assert result.status in ("ok", "unparsed")


async def test_openai_chat_endpoint_plumbing(llama_server):
    provider = openai_provider(llama_server, api="chat")
    request = GenerateRequest(messages=(Message(role="user", content="Say a number."),), max_tokens=4, top_logprobs=3)
    response = await provider.generate(request)
    await provider.aclose()
    assert len(response.choices) == 1 and isinstance(response.choices[0].text, str)
    assert response.usage.input_tokens > 0


async def test_openai_continuation_loglikelihood_matches_local(llama_server, local):
    prompt = (Message(role="user", content="Article: " + SOURCE + "\n\nSummary:"),)
    request = GenerateRequest(messages=prompt, continuation=" " + OUTPUTS[0])
    remote = await openai_provider(llama_server).generate(request)
    here = await local.generate(request)
    assert [t.token for t in remote.continuation_tokens] == [t.token for t in here.continuation_tokens]
    remote_sum = sum(t.logprob for t in remote.continuation_tokens)
    local_sum = sum(t.logprob for t in here.continuation_tokens)
    assert remote_sum == pytest.approx(local_sum, abs=0.05 * abs(local_sum))


def test_anthropic_provider_via_litellm_proxy_samples(litellm_proxy):
    from judgesdk.providers.anthropic import AnthropicProvider

    provider = AnthropicProvider(litellm_proxy.model, base_url=litellm_proxy.base_url, api_key=litellm_proxy.api_key, timeout_s=CEILING_S)
    assert provider.capabilities.logprobs is False
    judge = Judge(provider, settings=EstimationSettings(samples=12))
    result = judge.score(OUTPUTS[0], source=SOURCE, criterion=CONSISTENCY)
    judge.close()
    assert result.provider == "anthropic" and result.method == "geval/sampling", result.error
    assert result.provenance.served["runtime"].startswith("anthropic ") and result.provenance.served["model"]
    assert "no logprobs" in result.method_reason
    assert len(result.raw) == 12  # twelve real calls through /v1/messages
    if result.distribution is None:  # nothing parseable came back: a status, not a number
        assert result.status == "unparsed" and result.score is None
        return
    dist = result.distribution
    assert dist.n_samples == 12 and dist.n_unparsed == 12 - round(dist.coverage * 12)
    assert (dist.stderr is not None) == (dist.n_samples - dist.n_unparsed >= 2)


async def test_litellm_provider_passes_logprobs_through_or_says_so(llama_server):
    from judgesdk.providers.litellm import LOGPROBS_DROPPED, LiteLLMProvider

    provider = LiteLLMProvider(f"hosted_vllm/{llama_server.model}", base_url=llama_server.base_url, api_key="none", timeout_s=CEILING_S)
    request = GenerateRequest(messages=(Message(role="user", content="Score (1-5):"),), max_tokens=2, top_logprobs=5)
    response = await provider.generate(request)
    assert response.provider == "litellm" and len(response.choices) == 1
    assert response.provenance["runtime"].startswith("litellm ") and response.provenance["model"]
    tokens = response.choices[0].tokens
    assert (tokens is not None and len(tokens[0].top) > 0) or LOGPROBS_DROPPED in response.notes


# -- retries and cache against the fault-injecting proxy ---------------------------------------------------

FAST = RetryPolicy(max_attempts=4, initial_wait_s=0.05, max_wait_s=2.0)
REQUEST = GenerateRequest(messages=(Message(role="user", content="Count: one, two,"),), max_tokens=2)


async def test_retries_429_with_retry_after_500_and_reset_then_succeed(fault_proxy, llama_server):
    from judgesdk.providers.openai import OpenAIProvider

    fault_proxy.script(["429:retry-after=1", "500", "reset"])
    provider = RetryingProvider(OpenAIProvider(llama_server.model, base_url=fault_proxy.base_url, api="completions", timeout_s=CEILING_S), FAST)
    response = await provider.generate(REQUEST)
    assert response.choices[0].text is not None
    assert provider.attempts == 4 and fault_proxy.count == 4
    times = [r.t for r in fault_proxy.requests]
    assert times[1] - times[0] >= 0.95  # Retry-After: 1 honoured
    assert "succeeded on attempt 4" in response.notes


async def test_stall_past_timeout_is_retried(fault_proxy, llama_server):
    """The first attempt stalls past the client's timeout and is retried; the timeout is 10 × this request's
    latency measured just before (at least 1 s), so the retry, which the real server answers, fits in it
    on a busy machine too, and the stall (3 × the timeout) is what times out, not the machine."""
    from judgesdk.providers.openai import OpenAIProvider

    patient = OpenAIProvider(llama_server.model, base_url=llama_server.base_url, api="completions", timeout_s=CEILING_S)
    timeout_s = scaled(await alatency_s(lambda: patient.generate(REQUEST)), factor=10, floor_s=1.0)
    await patient.aclose()
    fault_proxy.script([f"stall:{3 * timeout_s:.1f}"])
    adapter = OpenAIProvider(llama_server.model, base_url=fault_proxy.base_url, api="completions", timeout_s=timeout_s)
    provider = RetryingProvider(adapter, FAST)
    response = await provider.generate(REQUEST)
    assert provider.attempts == 2 and response.choices
    assert fault_proxy.count == 2 and fault_proxy.requests[0].fault.startswith("stall:")


async def test_401_is_tried_once(fault_proxy, llama_server):
    from judgesdk.core.errors import AuthError
    from judgesdk.providers.openai import OpenAIProvider

    fault_proxy.script(["401"])
    provider = RetryingProvider(OpenAIProvider(llama_server.model, base_url=fault_proxy.base_url, api="completions", timeout_s=CEILING_S), FAST)
    with pytest.raises(AuthError):
        await provider.generate(REQUEST)
    assert provider.attempts == 1 and fault_proxy.count == 1


async def test_persistent_503_exhausts_attempts(fault_proxy, llama_server):
    from judgesdk.core.errors import RetriesExhaustedError
    from judgesdk.providers.openai import OpenAIProvider

    fault_proxy.script(["503"] * 10)
    policy = RetryPolicy(max_attempts=3, initial_wait_s=0.01, max_wait_s=0.05)
    provider = RetryingProvider(OpenAIProvider(llama_server.model, base_url=fault_proxy.base_url, api="completions", timeout_s=CEILING_S), policy)
    with pytest.raises(RetriesExhaustedError):
        await provider.generate(REQUEST)
    assert fault_proxy.count == 3


async def test_second_identical_run_is_a_cache_hit(fault_proxy, llama_server, tmp_path):
    from judgesdk.provider.protocol import learn_identity
    from judgesdk.providers.openai import OpenAIProvider

    adapter = OpenAIProvider(llama_server.model, base_url=fault_proxy.base_url, api="completions", timeout_s=CEILING_S)
    assert await learn_identity(adapter)  # the served model, listed once per provider (GET /models, issue 29 item 3)
    fault_proxy.reset()
    fault_proxy.script(["500"])
    provider = CachedProvider(RetryingProvider(adapter, FAST), open_cache(tmp_path))
    first = await provider.generate(REQUEST)
    second = await provider.generate(REQUEST)
    assert not first.cached and second.cached and second.choices[0].text == first.choices[0].text
    assert fault_proxy.count == 2  # the 500 and the retry; the second run never reached the server


def test_fallback_chain_moves_from_a_failing_server_to_the_local_model(fault_proxy, llama_server, local):
    from judgesdk.providers.openai import OpenAIProvider

    fault_proxy.script(["503"] * 10)
    failing = RetryingProvider(
        OpenAIProvider(llama_server.model, base_url=fault_proxy.base_url, api="completions", timeout_s=CEILING_S),
        RetryPolicy(max_attempts=2, initial_wait_s=0.01, max_wait_s=0.02),
    )
    judge = Judge([failing, local], settings=FLAG, method="geval")
    result = judge.score(OUTPUTS[0], source=SOURCE, criterion=CONSISTENCY)
    assert result.provider == "local" and result.method == "geval/exact"
    assert any("openai" in note and "failed" in note for note in result.notes)


@pytest.mark.parametrize("method", ["direct", "sampling"])
def test_direct_and_sampling_aggregations_over_the_llama_server(llama_server, method):
    settings = EstimationSettings(samples=3, max_tokens=4)
    judge = Judge(openai_provider(llama_server), method=method, settings=settings)
    result = judge.score(OUTPUTS[0], source=SOURCE, criterion=CONSISTENCY)
    judge.close()
    assert result.provider == "openai" and result.method.startswith(f"{method}/")
    assert result.raw and all(isinstance(text, str) for text in result.raw)
    assert (result.score is None) == (result.status == "unparsed")
    if method == "sampling":
        assert len(result.raw) == 3  # the server ignores n: three separate seeded calls


def test_a_configured_rate_limit_backs_off_on_429s_from_a_real_server(fault_proxy, llama_server, monkeypatch):
    """The whole configured stack (coalescing, retry, rate limit, adapter) over the llama.cpp server behind a
    proxy that answers the first two requests 429 with Retry-After: one wave, one back-off, one pause."""
    from judgesdk.provider.layers.ratelimit import RateLimitedProvider
    from judgesdk.provider.protocol import find_layer

    monkeypatch.delenv("JUDGESDK_PROVIDER", raising=False)
    fault_proxy.script(["429:retry-after=1", "429:retry-after=1"])
    config = {
        "providers": [{
            "kind": "openai", "model": llama_server.model, "base_url": fault_proxy.base_url, "api": "completions", "timeout_s": CEILING_S,
            "rate_limit": {"max_concurrency": 2, "requests_per_minute": 600},
        }],
        "retry": {"max_attempts": 4, "initial_wait_s": 0.05, "max_wait_s": 2.0},
        "cache": {"enabled": False},
        "estimation": {"on_low_coverage": "flag"},
        "concurrency": 2,
    }
    with Judge.from_config(config) as judge:
        results = judge.score_many([{"output": o, "source": SOURCE} for o in OUTPUTS], criterion=CONSISTENCY)
        limiter = find_layer(judge.provider(), RateLimitedProvider)
    assert all(r.score is not None for r in results), [r.status for r in results]
    assert limiter is not None and limiter.stats.rate_limited == 2 and limiter.stats.decreases == 1
    assert limiter.stats.requests == 4 and fault_proxy.count == 4
    times = [r.t for r in fault_proxy.requests]
    assert times[2] - times[0] >= 0.95  # the Retry-After paused every new request, retries included
