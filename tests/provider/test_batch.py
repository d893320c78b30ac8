"""Bulk mode through the batch APIs, and Anthropic prompt caching, over the official SDKs against a loopback
server that speaks their wire format (tests/support/batch_server.py): submit, poll, resume, results into the
same cache (same keys, same responses as a live call), a later normal run served from the cache."""

from __future__ import annotations

import json

import pytest
from conftest import need

from judgesdk.core.errors import CapabilityError, ConfigError, InputError
from judgesdk.core.types import Criterion, JudgeItem, Scale
from judgesdk.judging.judge import Judge
from judgesdk.judging.runners import run_offline
from judgesdk.provider.layers.batch import BatchRunner, Deferral, DeferringProvider
from judgesdk.provider.layers.cache import cache_key, open_cache
from judgesdk.provider.protocol import GenerateRequest, GenerateResponse, Message

from support.batch_server import BatchServer

need("openai")
need("anthropic")

from judgesdk.providers.anthropic import AnthropicProvider
from judgesdk.providers.anthropic_batch import AnthropicBatchBackend
from judgesdk.providers.openai import OpenAIProvider
from judgesdk.providers.openai_batch import OpenAIBatchBackend

CRIT = Criterion(name="coherence", description="Well organised.", scale=Scale.likert(1, 5))
SCORES = {"good": "5", "fair": "3", "poor": "1"}


def reply(body: dict) -> dict:
    """The answer a judge gives: the score named by the quality word in the prompt, with logprobs."""
    text = json.dumps(body.get("messages")) + json.dumps(body.get("system", ""))
    score = next((s for word, s in SCORES.items() if f"{word} summary" in text), "2")
    others = {label: -4.0 for label in "12345" if label != score}
    return {"text": score, "top_logprobs": {score: -0.05, **others}}


def refuse_poison(body: dict) -> str | None:
    return "prompt rejected by policy" if "POISON" in json.dumps(body) else None


def req(text: str, **fields) -> GenerateRequest:
    return GenerateRequest(messages=(Message(role="user", content=text),), **fields)


REQUESTS = [
    req("Rate: a good summary", top_logprobs=5, max_tokens=4),
    req("Rate: a fair summary", top_logprobs=5, max_tokens=4),
    req("Rate: a poor summary", temperature=1.0, n=2, seed=3),
    req("Rate: a POISON summary"),
]


@pytest.fixture
def server():
    with BatchServer(reply, fail=refuse_poison, polls=2) as running:
        yield running


def openai_provider(server: BatchServer) -> OpenAIProvider:
    return OpenAIProvider("gpt-test", base_url=server.openai_base_url, api_key="test-key")


def anthropic_provider(server: BatchServer, **options) -> AnthropicProvider:
    return AnthropicProvider("claude-test", base_url=server.origin, api_key="test-key", **options)


def comparable(response: GenerateResponse) -> dict:
    """What must match between a live answer and a batch answer (ids, latency and notes differ)."""
    return response.model_dump(include={"choices", "usage", "provider", "model", "label_logprobs"})


@pytest.mark.parametrize("api", ["openai", "anthropic"])
async def test_batch_answers_land_in_the_cache_as_the_live_adapter_would_answer(api, server, tmp_path):
    provider = openai_provider(server) if api == "openai" else anthropic_provider(server, prompt_cache=False)
    backend = OpenAIBatchBackend(provider) if api == "openai" else AnthropicBatchBackend(provider)
    requests = REQUESTS if api == "openai" else [r.model_copy(update={"top_logprobs": 0}) for r in REQUESTS]
    cache = open_cache(tmp_path / "cache")
    runner = BatchRunner(backend, cache, tmp_path / "state.json", poll_interval_s=0.01)
    report = await runner.run(requests)
    poison = cache_key(provider, requests[3])
    assert (report.requests, report.submitted, report.completed, report.pending) == (4, 4, 3, 0)
    assert list(report.failed) == [poison] and "prompt rejected by policy" in report.failed[poison]
    for request in requests[:3]:
        stored = GenerateResponse.model_validate_json(cache.get(cache_key(provider, request)))
        live = await provider.generate(request)
        assert comparable(stored) == comparable(live)
        assert any("Batch" in note for note in stored.notes)
    assert cache.get(poison) is None
    n_samples = requests[2].n
    created = server.seen("POST", "/v1/batches" if api == "openai" else "/v1/messages/batches")
    assert len(created) == 1
    if api == "openai":
        assert created[0].body["endpoint"] == "/v1/chat/completions" and created[0].body["completion_window"] == "24h"
        assert server.seen("POST", "/v1/files")[0].body["purpose"] == "batch"
        first = stored_first_line(server)
        assert first["method"] == "POST" and first["url"] == "/v1/chat/completions"
        assert first["body"] == server.seen("POST", "/v1/chat/completions")[0].body  # byte-for-byte the live body
    else:
        entries = created[0].body["requests"]
        assert len(entries) == 3 + n_samples  # the n=2 request is two Messages calls
        assert all(len(e["custom_id"]) <= 64 for e in entries)
        assert entries[0]["params"] == server.seen("POST", "/v1/messages")[0].body
    await provider.aclose()


def stored_first_line(server: BatchServer) -> dict:
    data = next(iter(server._files.values()))[1]
    return json.loads(data.decode().splitlines()[0])


async def test_a_restarted_runner_resumes_without_resubmitting(server, tmp_path):
    provider = openai_provider(server)
    state = tmp_path / "state.json"
    cache = open_cache(tmp_path / "cache")
    first = await BatchRunner(OpenAIBatchBackend(provider), cache, state, poll_interval_s=0.01).run(REQUESTS[:3], wait=False)
    assert first.submitted == 3 and first.pending == 3 and first.completed == 0
    saved = json.loads(state.read_text())
    assert saved["jobs"][0]["batch_id"] == first.batches[0] and not saved["jobs"][0]["collected"]
    # a new process: a new runner over the same state file and cache
    second = await BatchRunner(OpenAIBatchBackend(provider), cache, state, poll_interval_s=0.01).run(REQUESTS[:3])
    assert second.submitted == 0 and second.completed == 3 and second.pending == 0
    assert len(server.seen("POST", "/v1/batches")) == 1
    third = await BatchRunner(OpenAIBatchBackend(provider), cache, state, poll_interval_s=0.01).run(REQUESTS[:3])
    assert third.already_cached == 3 and third.submitted == 0
    await provider.aclose()


async def test_cancel_all_and_state_file_mismatch(server, tmp_path):
    provider = openai_provider(server)
    cache = open_cache(tmp_path / "cache")
    runner = BatchRunner(OpenAIBatchBackend(provider), cache, tmp_path / "state.json", poll_interval_s=0.01)
    submitted = await runner.run(REQUESTS[:2], wait=False)
    assert await runner.cancel_all() == submitted.batches
    assert server.seen("POST", f"/v1/batches/{submitted.batches[0]}/cancel")
    report = await runner.run(REQUESTS[:2])
    assert report.completed == 0 and len(report.failed) == 2  # cancelled: nothing cached, both reported
    other = anthropic_provider(server)
    with pytest.raises(InputError, match="belongs to openai/gpt-test"):
        await BatchRunner(AnthropicBatchBackend(other), cache, tmp_path / "state.json").run(REQUESTS[:1])
    with pytest.raises(ConfigError):
        BatchRunner(OpenAIBatchBackend(provider), cache, tmp_path / "s2.json", poll_interval_s=0)
    with pytest.raises(InputError, match="api='chat'"):
        OpenAIBatchBackend(OpenAIProvider("m", base_url=server.openai_base_url, api="completions"))
    await provider.aclose()
    await other.aclose()


ITEMS = [JudgeItem(output=f"A {quality} summary of the article.", source="The council approved a park.", id=quality) for quality in SCORES]


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_run_offline_then_a_normal_run_is_served_from_the_cache(api, server, tmp_path):
    base_url = server.openai_base_url if api == "openai" else server.origin
    config = {
        "providers": [{"kind": api, "model": f"{api}-model", "base_url": base_url, "api_key_env": "JUDGESDK_TEST_KEY"}],
        "cache": {"directory": str(tmp_path / "cache")},
        "estimation": {"samples": 3},
    }
    backend_for = OpenAIBatchBackend if api == "openai" else AnthropicBatchBackend
    with pytest.MonkeyPatch.context() as env:
        env.setenv("JUDGESDK_TEST_KEY", "test-key")
        results, report = run_offline(
            config, lambda judge: judge.score_many(ITEMS, criterion=CRIT), backend_for, tmp_path / "state.json", poll_interval_s=0.01
        )
        assert [r.status for r in results] == ["ok"] * 3 and report.rounds == 2
        assert [r.score for r in results] == pytest.approx([5.0, 3.0, 1.0], abs=0.2)
        assert all(r.cached for r in results)
        live_calls = len(server.seen("POST", "/v1/chat/completions")) + len(server.seen("POST", "/v1/messages"))
        with Judge.from_config(config) as judge:
            again = judge.score_many(ITEMS, criterion=CRIT)
    assert [r.model_dump(exclude={"latency_s"}) for r in again] == [r.model_dump(exclude={"latency_s"}) for r in results]
    # neither the offline rounds nor the normal run made a single live call
    assert live_calls == 0
    assert len(server.seen("POST", "/v1/chat/completions")) + len(server.seen("POST", "/v1/messages")) == 0


def test_run_offline_needs_one_provider_and_the_cache(tmp_path):
    with pytest.raises(ConfigError, match="exactly one provider"):
        run_offline({"providers": [{"kind": "local"}, {"kind": "local"}]}, lambda j: None, OpenAIBatchBackend, tmp_path / "s.json")
    with pytest.raises(ConfigError, match="cache enabled"):
        run_offline({"providers": [{"kind": "local"}], "cache": {"enabled": False}}, lambda j: None, OpenAIBatchBackend, tmp_path / "s.json")


async def test_deferring_provider_records_and_fails_fast(server):
    from judgesdk.core.errors import PermanentError

    provider = openai_provider(server)
    deferring = DeferringProvider(provider, Deferral(failed={cache_key(provider, REQUESTS[1]): "rejected"}))
    with pytest.raises(PermanentError, match="deferred"):
        await deferring.generate(REQUESTS[0])
    with pytest.raises(PermanentError, match="rejected"):
        await deferring.generate(REQUESTS[1])
    assert list(deferring.deferral.deferred.values()) == [REQUESTS[0]]
    await provider.aclose()


async def test_batch_backends_build_on_the_providers_public_api(server):
    import inspect

    from judgesdk.providers import anthropic_batch, openai_batch

    openai_live = openai_provider(server)
    assert openai_live.client is OpenAIBatchBackend(openai_live)._client
    for request in REQUESTS[:3]:
        response = await openai_live.generate(request)
        sent = server.seen("POST", "/v1/chat/completions")[-1].body
        assert openai_live.chat_body(request) == sent == OpenAIBatchBackend(openai_live).body(request)
        assert comparable(openai_live.chat_response(server.chat_completion(sent), request)) == comparable(response)
    with pytest.raises(CapabilityError, match="labels"):
        openai_live.chat_body(req("Rate:", labels=("1", "2")))
    claude = anthropic_provider(server, prompt_cache=False)
    assert claude.client is AnthropicBatchBackend(claude)._client
    for module in (openai_batch, anthropic_batch):  # the adapters reach no provider internals
        assert "provider._" not in inspect.getsource(module)
    await openai_live.aclose()
    await claude.aclose()


# -- Anthropic prompt caching -----------------------------------------------------------------------

LONG_SOURCE = "\n".join(f"Paragraph {i}: the council discussed budget line {i} at length and agreed." for i in range(80))


def judging_prompt(output: str) -> GenerateRequest:
    text = f"Rate the summary.\n\n<source>\n{LONG_SOURCE}\n</source>\n\n<output>\n{output}\n</output>\nScore (1-5):"
    return GenerateRequest(messages=(Message(role="system", content="You are a careful judge."), Message(role="user", content=text)))


async def test_anthropic_marks_the_shared_source_block_for_caching(server):
    provider = anthropic_provider(server)
    outputs = ["The good summary.", "The fair summary.", "Another good summary.", "A poor summary."]
    usages = [(await provider.generate(judging_prompt(o))).usage for o in outputs]
    bodies = [r.body for r in server.seen("POST", "/v1/messages")]
    assert isinstance(bodies[0]["messages"][0]["content"], str)  # the first prompt of a source has no partner yet
    for body, output in zip(bodies[1:], outputs[1:]):
        first, rest = body["messages"][0]["content"]
        assert first["cache_control"] == {"type": "ephemeral"} and first["text"].endswith("<output>\n")
        assert output not in first["text"] and output in rest["text"]
        assert first["text"] + rest["text"] == judging_prompt(output).messages[1].content
        assert body["system"] == "You are a careful judge."
    # the second prompt writes the cache, later ones read it; input_tokens counts every prompt token
    assert usages[1].cached_input_tokens == 0 and usages[2].cached_input_tokens > 0.9 * usages[2].input_tokens
    assert usages[0].cache_write_input_tokens == 0 and usages[1].cache_write_input_tokens > 0.9 * usages[1].input_tokens
    assert all(u.cache_write_input_tokens == 0 for u in usages[2:])  # priced at the write rate only once
    for usage, output in zip(usages, outputs):
        assert usage.input_tokens == sum(len(m.content.split()) for m in judging_prompt(output).messages)
    await provider.aclose()


async def test_anthropic_prompt_cache_off_or_short_prompts_send_plain_strings(server):
    off = anthropic_provider(server, prompt_cache=False)
    for output in ("One.", "Two."):
        await off.generate(judging_prompt(output))
    short = anthropic_provider(server)
    for output in ("One.", "Two."):
        await short.generate(req(f"Short prompt.\n{output}"))
    bodies = [r.body for r in server.seen("POST", "/v1/messages")]
    assert all(isinstance(b["messages"][0]["content"], str) for b in bodies)
    await off.aclose()
    await short.aclose()


async def test_litellm_marks_the_shared_source_block_for_claude_and_reports_cache_writes(server):
    """LiteLLM in front of the Messages wire format: the same marks reach /v1/messages, and the usage it
    maps back keeps the cache writes (priced at 1.25x) apart from the reads."""
    litellm_adapter = need("judgesdk.providers.litellm")
    provider = litellm_adapter.LiteLLMProvider("anthropic/claude-test", base_url=server.origin, api_key="test-key")
    assert provider.cache_planner is not None and litellm_adapter.routes_to_claude("anthropic/claude-test")
    outputs = ["The good summary.", "The fair summary.", "Another good summary."]
    usages = [(await provider.generate(judging_prompt(o))).usage for o in outputs]
    bodies = [r.body for r in server.seen("POST", "/v1/messages")]
    assert len(bodies) == 3 and "cache_control" not in json.dumps(bodies[0])  # no partner yet
    for body, output in zip(bodies[1:], outputs[1:]):
        blocks = body["messages"][0]["content"]
        marked = [b for b in blocks if b.get("cache_control")]
        assert len(marked) == 1 and marked[0]["text"].endswith("<output>\n") and output not in marked[0]["text"]
        assert "".join(b["text"] for b in blocks) == judging_prompt(output).messages[1].content
    assert usages[1].cache_write_input_tokens > 0.9 * usages[1].input_tokens and usages[1].cached_input_tokens == 0
    assert usages[2].cached_input_tokens > 0.9 * usages[2].input_tokens and usages[2].cache_write_input_tokens == 0
    for usage, output in zip(usages, outputs):
        assert usage.input_tokens == sum(len(m.content.split()) for m in judging_prompt(output).messages)
    await provider.aclose()


def test_litellm_prompt_cache_only_for_claude_backends_unless_asked():
    litellm_adapter = need("judgesdk.providers.litellm")
    assert litellm_adapter.LiteLLMProvider("hosted_vllm/gemma", base_url="http://127.0.0.1:9/v1").cache_planner is None
    assert litellm_adapter.LiteLLMProvider("anthropic/claude-test", prompt_cache=False).cache_planner is None
    forced = litellm_adapter.LiteLLMProvider("hosted_vllm/gemma", base_url="http://127.0.0.1:9/v1", prompt_cache=True)
    assert forced.cache_planner is not None
    assert litellm_adapter.routes_to_claude("bedrock/anthropic.claude-3-haiku-20240307-v1:0")
    assert not litellm_adapter.routes_to_claude("openai/gpt-4o-mini")
