"""vLLM and SGLang as judges through the openai provider, against their wire format.

Each fixture in ``tests/fixtures/gpu_servers/`` is one response body of vLLM 0.33.0 or SGLang 0.5.23, built
by running the response-building code lifted from the server's wheel (``build_fixtures.py`` and the
README there). None was recorded from a live server: no GPU machine was lent. A loopback HTTP server plays
the recorded body back to the real adapter, built from the recipe's config (``examples/vllm/``,
``examples/sglang/``), through the real openai client; the tests check what the adapter sends and the
label distribution, usage and log-likelihood it reads.

The answer position of every label fixture holds the same 20 candidates, so the distribution they imply
is written out once below from the values in ``build_fixtures.py``, not computed by the code under test.
"""

from __future__ import annotations

import json
import math
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from conftest import need

from judgesdk.core.errors import CapabilityError
from judgesdk.core.types import Criterion, Scale
from judgesdk.estimation.estimator import EstimationSettings, estimate
from judgesdk.judging.judge import Judge
from judgesdk.judging.judge_config import load_config
from judgesdk.provider.protocol import GenerateRequest, Message
from judgesdk.provider.stack import build_adapter

need("openai")

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "tests" / "fixtures" / "gpu_servers"
RECIPES = {"vllm": ROOT / "examples" / "vllm" / "judgesdk.toml", "sglang": ROOT / "examples" / "sglang" / "judgesdk.toml"}
VERSIONS = {"vllm": "0.33.0", "sglang": "0.5.23"}
SERVERS = list(RECIPES)
SCALE = Scale.likert(1, 5)
MESSAGES = (Message(role="system", content="You rate summaries."), Message(role="user", content="Consistency, 1-5?"))

# Label mass at the answer position, from the candidates of build_fixtures.ANSWER_TOP20: "4" and the number
# words "four"/"Four" are label 4; "**", "Score", " ", "The", "0", "6"... are no label.
MASS = {
    "1": math.exp(-7.600902),
    "2": math.exp(-4.605170),
    "3": math.exp(-1.609438),
    "4": math.exp(-0.356675) + math.exp(-11.0) + math.exp(-11.5),
    "5": math.exp(-2.995732),
}
COVERAGE = sum(MASS.values())
EXPECTED = tuple(MASS[label] / COVERAGE for label in SCALE.labels)


def fixture(server: str, kind: str) -> dict[str, Any]:
    return json.loads((FIXTURES / f"{server}-{VERSIONS[server]}-{kind}.json").read_text())


class FixtureServer:
    """Plays recorded response bodies back on 127.0.0.1, one per path, and keeps every request body."""

    def __init__(self) -> None:
        self.bodies: dict[str, dict[str, Any]] = {}
        self.requests: list[tuple[str, dict[str, Any]]] = []
        app = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: object) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                app.requests.append((self.path, json.loads(self.rfile.read(length) or b"{}")))
                body = app.bodies.get(self.path)
                data = json.dumps(body if body is not None else {"error": {"message": f"no fixture for {self.path}"}}).encode()
                self.send_response(200 if body is not None else 404)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self._thread.start()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def serve(self, recorded: dict[str, Any], body: dict[str, Any] | None = None) -> None:
        self.bodies["/v1" + recorded["path"].removeprefix("/v1")] = body if body is not None else recorded["response"]

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()


@pytest.fixture
def server():
    running = FixtureServer()
    try:
        yield running
    finally:
        running.stop()


def recipe(name: str, base_url: str, **changes: Any):
    """The recipe's config with its base_url pointed at the fixture server (and ``changes`` to the provider)."""
    config = load_config(RECIPES[name])
    provider = config.providers[0].model_copy(update={"base_url": base_url, **changes})
    return config.model_copy(update={"providers": [provider], "cache": config.cache.model_copy(update={"enabled": False})})


def only_known_fields(body: dict[str, Any], recorded: dict[str, Any]) -> None:
    """Every field the adapter sent is one the server's request model reads (others are dropped silently)."""
    unknown = set(body) - set(recorded["request"]["model_fields"])
    assert not unknown, f"fields the server's request model does not have: {sorted(unknown)}"


# -- the recipes --------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", SERVERS)
def test_recipe_config_loads_and_declares_what_the_server_does(name):
    config = load_config(RECIPES[name])
    (provider,) = config.providers
    assert provider.kind == "openai" and provider.model == "judge" and provider.api == "chat"
    assert provider.base_url == ("http://127.0.0.1:8000/v1" if name == "vllm" else "http://127.0.0.1:30000/v1")
    adapter = build_adapter(provider)
    caps = adapter.capabilities
    assert caps.logprobs and caps.loglikelihood and caps.multiple_samples and caps.seed
    assert not caps.exact_labels and not caps.prefill and not caps.grammar
    limit = fixture(name, "chat")["request"]["max_logprobs"]
    assert caps.max_top_logprobs == 20 and (limit is None or caps.max_top_logprobs <= limit)
    assert config.estimation.top_logprobs == 20 and config.method == "geval"


@pytest.mark.parametrize("name", SERVERS)
def test_fixture_says_it_was_built_not_recorded(name):
    for kind in ("chat", "completions", "echo"):
        provenance = fixture(name, kind)["_provenance"]
        assert provenance["recorded_from_a_live_server"] is False
        assert provenance["server"] == name and provenance["version"] == VERSIONS[name]
        assert len(provenance["wheel_sha256"]) == 64


# -- the label-probability path ------------------------------------------------------------------------


@pytest.mark.parametrize("name", SERVERS)
async def test_chat_top_logprobs_give_the_label_distribution(server, name):
    recorded = fixture(name, "chat")
    server.serve(recorded)
    provider = build_adapter(recipe(name, server.base_url).providers[0])
    result = await estimate(provider, MESSAGES, SCALE, EstimationSettings(top_logprobs=20))
    await provider.aclose()

    assert result.method == "logprobs" and result.status == "ok"
    assert result.distribution.probs == pytest.approx(EXPECTED, rel=1e-9)
    assert result.distribution.coverage == pytest.approx(COVERAGE, rel=1e-9)
    assert result.texts == ["4"]
    cached = 176 if name == "vllm" else 181  # --enable-prompt-tokens-details / --enable-cache-report
    assert (result.usage.input_tokens, result.usage.output_tokens, result.usage.cached_input_tokens) == (187, 2, cached)

    ((path, body),) = server.requests
    assert path == "/v1/chat/completions"
    assert body["model"] == "judge" and body["logprobs"] is True and body["temperature"] == 0.0
    limit = recorded["request"]["max_logprobs"]
    assert body["top_logprobs"] == 20 and (limit is None or body["top_logprobs"] <= limit)
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    only_known_fields(body, recorded)


@pytest.mark.parametrize("name", SERVERS)
async def test_completions_logprobs_give_the_label_distribution(server, name):
    recorded = fixture(name, "completions")
    server.serve(recorded)
    provider = build_adapter(recipe(name, server.base_url, api="completions").providers[0])
    result = await estimate(provider, MESSAGES, SCALE, EstimationSettings(top_logprobs=20))
    await provider.aclose()

    assert result.method == "logprobs" and result.status == "ok"
    assert result.distribution.probs == pytest.approx(EXPECTED, rel=1e-9)
    assert result.distribution.coverage == pytest.approx(COVERAGE, rel=1e-9)
    assert (result.usage.input_tokens, result.usage.output_tokens) == (171, 2)

    ((path, body),) = server.requests
    assert path == "/v1/completions"
    limit = recorded["request"]["max_logprobs"]
    assert body["logprobs"] == 20 and (limit is None or body["logprobs"] <= limit)
    assert body["prompt"] == "You rate summaries.\n\nConsistency, 1-5?" and "echo" not in body
    only_known_fields(body, recorded)


async def test_vllm_clamped_minus_inf_is_no_mass(server):
    """vLLM writes a -inf log-probability as -9999.0 (chat_completion/serving.py, max(logprob, -9999.0)):
    such a candidate must weigh nothing, not break the estimate."""
    recorded = fixture("vllm", "chat")
    body = json.loads(json.dumps(recorded["response"]))
    for alternative in body["choices"][0]["logprobs"]["content"][0]["top_logprobs"]:
        if alternative["token"] in ("1", "2"):
            alternative["logprob"] = -9999.0
    server.serve(recorded, body)
    provider = build_adapter(recipe("vllm", server.base_url).providers[0])
    result = await estimate(provider, MESSAGES, SCALE, EstimationSettings(top_logprobs=20))
    await provider.aclose()
    rest = MASS["3"] + MASS["4"] + MASS["5"]
    assert result.distribution.probs == pytest.approx((0.0, 0.0, MASS["3"] / rest, MASS["4"] / rest, MASS["5"] / rest), rel=1e-9)
    assert result.distribution.coverage == pytest.approx(rest, rel=1e-9)


@pytest.mark.parametrize("name", SERVERS)
def test_judge_from_the_recipe_scores_with_geval_logprobs(server, name):
    server.serve(fixture(name, "chat"))
    judge = Judge.from_config(recipe(name, server.base_url))
    try:
        result = judge.score("The council will build a park.", source="The council voted for a park.",
                             criterion=Criterion(name="consistency", description="Facts supported by the source.", scale=SCALE))  # fmt: skip
    finally:
        judge.close()
    assert result.method == "geval/logprobs" and result.status == "ok" and result.provider == "openai"
    assert result.distribution.probs == pytest.approx(EXPECTED, rel=1e-9)
    assert result.score == pytest.approx(sum(p * v for p, v in zip(EXPECTED, (1, 2, 3, 4, 5))), rel=1e-9)
    assert all(body["top_logprobs"] == 20 and body["model"] == "judge" for _, body in server.requests)


# -- the log-likelihood path (completions with echo) ------------------------------------------------------


@pytest.mark.parametrize("name", SERVERS)
async def test_echo_gives_the_continuation_loglikelihood(server, name):
    """vLLM's text_offset counts the <bos> text (5 characters past the prompt); SGLang's is -1 for every
    token. Either way the continuation's tokens, and only they, must come back."""
    recorded = fixture(name, "echo")
    expect = recorded["expect"]
    server.serve(recorded)
    provider = build_adapter(recipe(name, server.base_url).providers[0])
    request = GenerateRequest(messages=(Message(role="user", content=expect["prompt"]),), continuation=expect["continuation"], max_tokens=0)
    response = await provider.generate(request)
    await provider.aclose()

    assert [t.token for t in response.continuation_tokens] == expect["tokens"]
    assert [t.logprob for t in response.continuation_tokens] == expect["logprobs"]
    assert sum(t.logprob for t in response.continuation_tokens) == pytest.approx(-7.96)

    ((path, body),) = server.requests
    assert path == "/v1/completions"
    assert body["prompt"] == expect["prompt"] + expect["continuation"]
    assert body["echo"] is True and body["logprobs"] == 1 and body["max_tokens"] == 1 and body["temperature"] == 0.0
    only_known_fields(body, recorded)


def test_echo_offsets_as_each_server_sends_them():
    """The offsets the two servers send, as the fixtures hold them, before the adapter reads them."""
    vllm = fixture("vllm", "echo")["response"]["choices"][0]["logprobs"]
    sglang = fixture("sglang", "echo")["response"]["choices"][0]["logprobs"]
    prompt = fixture("vllm", "echo")["expect"]["prompt"]
    first = vllm["tokens"].index(" The", 4)  # the continuation's first token
    assert vllm["tokens"][0] == "<bos>" and vllm["text_offset"][first] == len(prompt) + len("<bos>")
    assert set(sglang["text_offset"]) == {-1} and sglang["tokens"] == vllm["tokens"]


async def test_echo_without_usable_offsets_or_counts_scores_nothing_wrongly(server):
    """With SGLang's -1 offsets and no usage to say where the prompt ends, no continuation can be located:
    the likelihood scorer gets no tokens (and raises), never tokens of the prompt."""
    recorded = fixture("sglang", "echo")
    body = json.loads(json.dumps(recorded["response"]))
    body["usage"] = None
    server.serve(recorded, body)
    provider = build_adapter(recipe("sglang", server.base_url).providers[0])
    expect = recorded["expect"]
    request = GenerateRequest(messages=(Message(role="user", content=expect["prompt"]),), continuation=expect["continuation"], max_tokens=0)
    response = await provider.generate(request)
    await provider.aclose()
    # offsets rebuilt from the token texts start at <bos>, 5 characters before the prompt: unanchored, they
    # would take the prompt's last token (":") for the continuation's first
    assert response.continuation_tokens == []


async def test_completions_echo_is_refused_without_loglikelihood(server):
    server.serve(fixture("vllm", "echo"))
    config = recipe("vllm", server.base_url)
    provider_config = config.providers[0].model_copy(update={"capabilities": {**config.providers[0].capabilities, "loglikelihood": False}})
    provider = build_adapter(provider_config)
    with pytest.raises(CapabilityError):
        await provider.generate(GenerateRequest(messages=MESSAGES, continuation=" x", max_tokens=0))
    await provider.aclose()
    assert server.requests == []


def test_a_null_or_infinite_logprob_is_no_mass_not_a_crash():
    """SGLang writes -inf as JSON null; a candidate with no probability is dropped, a chosen one floored."""
    from judgesdk.providers._sdk import IMPOSSIBLE, chat_logprob_tokens

    content = {"content": [{"token": "5", "logprob": None, "top_logprobs": [
        {"token": "4", "logprob": -0.1}, {"token": "5", "logprob": None}, {"token": "3", "logprob": float("-inf")}]}]}
    (token,) = chat_logprob_tokens(content)
    assert token.logprob == IMPOSSIBLE and [(t.token, t.logprob) for t in token.top] == [("4", -0.1)]
