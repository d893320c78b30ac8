"""The decision adapters against a loopback stub that records what they send and answers what a test scripts.

* ``kind = "openai"``, ``api = "decisions"``: its live call sends the path, body and key ``client.decisions.create``
  sends (through the SDK's direct post), an openai package without the resource is a config error naming the
  version, and a chat request is refused before any call.
* ``kind = "systemone"``: the body goes to ``<origin>/v1/systemone``; status errors stay typed.
* ``kind = "litellm"``, ``api = "systemone"``/``"decisions"``: through ``litellm.asystemone``/``adecisions`` (a real
  LiteLLM, ``hosted_vllm``/``openai`` routes to the stub), a request above LiteLLM's 128 questions is sent in parts.
* Through a judge: each answer status reaches the result (refused, missing, a bad distribution is an error
  naming the field, never a score), and the cache answers a repeated decision request without a call.

The stub is a test double of a server, not of a client: real adapters, real SDKs, real HTTP on 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from conftest import need

from judgesdk.core.errors import AuthError, CapabilityError, ConfigError, RateLimitError, TransientError
from judgesdk.core.types import Criterion, Scale
from judgesdk.judging.judge import Judge
from judgesdk.provider.decisions import DecisionAnswer, DecisionInput, DecisionRequest, Level, ScoreQuestion
from judgesdk.provider.protocol import GenerateRequest, Message, Usage
from judgesdk.providers import decisions_wire, systemone_wire

openai = need("openai")

COHERENCE = Criterion(name="coherence", description="Well organised.", scale=Scale.likert(1, 5))
FLUENCY = Criterion(name="fluency", description="Well written.", scale=Scale.likert(1, 5))
P5 = (0.1, 0.2, 0.4, 0.2, 0.1)
QUESTION = ScoreQuestion(name="coherence", instructions="Rate it.", levels=tuple(Level(label=str(i)) for i in range(1, 6)))
REQUEST = DecisionRequest(input=DecisionInput(output="The park opens in May.", source="A park will open in May."), questions=(QUESTION,))


class Stub(BaseHTTPRequestHandler):
    """Records ``(path, authorization, body)`` of each POST and answers ``Stub.answer(path, body)``:
    ``(status, JSON payload or raw bytes, headers)``."""

    seen: list[tuple[str, str, Any]] = []
    answer: Callable[[str, Any], tuple[int, Any, dict[str, str]]] = staticmethod(lambda path, body: (200, {}, {}))

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        Stub.seen.append((self.path, self.headers.get("Authorization", ""), body))
        status, payload, headers = Stub.answer(self.path, body)
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        for name, value in {"Content-Type": "application/json", **headers}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def stub() -> Any:
    Stub.seen = []
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Stub)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def answering(answers: Callable[[DecisionRequest], list[DecisionAnswer]]) -> Callable[[str, Any], tuple[int, Any, dict[str, str]]]:
    """A stub that reads each request with the wire module of its path and answers ``answers(request)`` in the same format."""

    def answer(path: str, body: Any) -> tuple[int, Any, dict[str, str]]:
        wire = systemone_wire if path.endswith("systemone") else decisions_wire
        _, request, _ = wire.read_request(body, max_questions=1000)
        return 200, wire.response_body(request, answers(request), "stub-model-2026-11", Usage(input_tokens=50)), {}

    return staticmethod(answer)  # type: ignore[return-value]


def all_ok(request: DecisionRequest) -> list[DecisionAnswer]:
    return [DecisionAnswer(name=q.name, status="ok", probabilities=P5) for q in request.questions]


def run(coroutine: Any) -> Any:
    return asyncio.run(coroutine)


# -- openai, api = "decisions" ----------------------------------------------------------------------------


def openai_decisions(base: str, **kwargs: Any) -> Any:
    from judgesdk.providers.openai_decisions import OpenAIDecisionsProvider

    return OpenAIDecisionsProvider("gpt-6-luna", base_url=f"{base}/v1", api_key="secret", **kwargs)


def test_the_live_call_sends_what_decisions_create_sends(stub: str) -> None:
    Stub.answer = answering(all_ok)
    provider = openai_decisions(stub)

    async def both() -> Any:
        try:
            response = await provider.generate(GenerateRequest(messages=(), decision=REQUEST))
            await provider.client.decisions.create(**decisions_wire.request_body(REQUEST, "gpt-6-luna"))
            return response
        finally:
            await provider.aclose()

    response = run(both())
    (path, auth, sent), (create_path, create_auth, create_sent) = Stub.seen
    assert (path, auth, sent) == (create_path, create_auth, create_sent)
    assert path == "/v1/decisions" and auth == "Bearer secret"
    assert [a.probabilities for a in response.decisions] == [P5]
    assert response.provenance["model"] == "stub-model-2026-11" and response.usage.input_tokens == 50


def test_an_openai_package_without_decisions_is_a_config_error_naming_the_version(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delattr(openai.AsyncOpenAI, "decisions")
    with pytest.raises(ConfigError, match=r"api = 'decisions' needs openai >= 3\.26"):
        openai_decisions("http://127.0.0.1:9")


def test_a_chat_request_is_refused_before_any_call(stub: str) -> None:
    provider = openai_decisions(stub)
    with pytest.raises(CapabilityError, match="answers decision questions only"):
        run(provider.generate(GenerateRequest(messages=(Message(role="user", content="Rate it."),))))
    assert Stub.seen == []


def test_openai_decisions_questions_above_the_limit_go_in_parts(stub: str) -> None:
    from judgesdk.provider.protocol import Capabilities

    Stub.answer = answering(all_ok)
    many = REQUEST.model_copy(update={"questions": tuple(QUESTION.model_copy(update={"name": f"q{i}"}) for i in range(5))})
    provider = openai_decisions(stub, capabilities=Capabilities(decisions=True, max_questions=2))
    response = run(provider.generate(GenerateRequest(messages=(), decision=many)))
    assert [len(body["questions"]) for _, _, body in Stub.seen] == [2, 2, 1]
    assert [a.name for a in response.decisions] == [f"q{i}" for i in range(5)] and response.usage.calls == 3


# -- kind = "systemone" --------------------------------------------------------------------------------------


def systemone(base: str, **kwargs: Any) -> Any:
    from judgesdk.providers.systemone import SystemOneProvider

    return SystemOneProvider("jev", base_url=f"{base}/v1", **kwargs)


def test_systemone_posts_the_body_to_the_origins_path_and_reads_the_answer(stub: str) -> None:
    Stub.answer = answering(all_ok)
    response = run(systemone(stub, api_key="k").generate(GenerateRequest(messages=(), decision=REQUEST)))
    ((path, auth, body),) = Stub.seen
    assert path == "/v1/systemone" and auth == "Bearer k" and body == systemone_wire.request_body(REQUEST, "jev")
    assert response.decisions[0].probabilities == P5 and response.provenance["model"] == "stub-model-2026-11"


@pytest.mark.parametrize(
    ("status", "headers", "error"), [(401, {}, AuthError), (429, {"Retry-After": "7"}, RateLimitError), (503, {}, TransientError)]
)
def test_systemone_status_errors_stay_typed(stub: str, status: int, headers: dict[str, str], error: type[Exception]) -> None:
    Stub.answer = staticmethod(lambda path, body: (status, {"error": {"message": "no", "type": "x"}}, headers))
    with pytest.raises(error) as caught:
        run(systemone(stub).generate(GenerateRequest(messages=(), decision=REQUEST)))
    if status == 429:
        assert caught.value.retry_after == 7.0


def test_systemone_body_that_is_not_json_is_transient(stub: str) -> None:
    Stub.answer = staticmethod(lambda path, body: (200, b"<html>hello</html>", {}))
    with pytest.raises(TransientError, match="not JSON"):
        run(systemone(stub).generate(GenerateRequest(messages=(), decision=REQUEST)))


def test_systemone_needs_a_base_url_and_a_model() -> None:
    from judgesdk.providers.systemone import SystemOneProvider

    with pytest.raises(ConfigError, match="needs base_url"):
        SystemOneProvider("jev", base_url="")
    with pytest.raises(ConfigError, match="needs model"):
        SystemOneProvider("", base_url="http://127.0.0.1:9")


# -- kind = "litellm" ----------------------------------------------------------------------------------------


def test_litellm_systemone_splits_above_128_questions(stub: str) -> None:
    need("litellm")
    from judgesdk.providers.litellm_decisions import LiteLLMDecisionsProvider

    Stub.answer = answering(all_ok)
    many = REQUEST.model_copy(update={"questions": tuple(QUESTION.model_copy(update={"name": f"q{i}"}) for i in range(130))})
    provider = LiteLLMDecisionsProvider("hosted_vllm/jev", api="systemone", base_url=stub)
    response = run(provider.generate(GenerateRequest(messages=(), decision=many)))
    assert [len(body["questions"]) for _, _, body in Stub.seen] == [128, 2]
    assert {path for path, _, _ in Stub.seen} == {"/v1/systemone"}
    assert len(response.decisions) == 130 and {a.status for a in response.decisions} == {"ok"}


def test_litellm_decisions_route_reads_the_openai_format(stub: str) -> None:
    need("litellm")
    from judgesdk.providers.litellm_decisions import LiteLLMDecisionsProvider

    Stub.answer = answering(lambda request: [DecisionAnswer(name="coherence", status="refused", reason="no fit")])
    provider = LiteLLMDecisionsProvider("openai/gpt-6-luna", api="decisions", base_url=stub, api_key="k")
    response = run(provider.generate(GenerateRequest(messages=(), decision=REQUEST)))
    ((path, _, body),) = Stub.seen
    assert path == "/v1/decisions" and body["input"] == REQUEST.input.as_text()
    assert response.decisions[0].status == "refused"


def test_an_old_litellm_is_a_config_error_naming_the_version(monkeypatch: pytest.MonkeyPatch) -> None:
    litellm = need("litellm")
    from judgesdk.providers.litellm_decisions import LiteLLMDecisionsProvider

    monkeypatch.delattr(litellm, "asystemone")
    with pytest.raises(ConfigError, match=r"api = 'systemone' needs litellm >= 1\.105"):
        LiteLLMDecisionsProvider("hosted_vllm/jev", api="systemone", base_url="http://127.0.0.1:9")


# -- through a judge: statuses and the cache ----------------------------------------------------------


def judge_config(base: str, cache: Any, **extra: Any) -> dict[str, Any]:
    return {
        "providers": [{"kind": "systemone", "model": "jev", "base_url": base}],
        "cache": {"enabled": cache is not None, **({"directory": str(cache)} if cache is not None else {})},
        "retry": {"max_attempts": 1},
        **extra,
    }


def scored(base: str, body_change: Callable[[dict[str, Any]], None], tmp_path: Any) -> Any:
    def answer(path: str, body: Any) -> tuple[int, Any, dict[str, str]]:
        _, request, _ = systemone_wire.read_request(body, max_questions=100)
        payload = systemone_wire.response_body(request, all_ok(request), "stub", Usage())
        body_change(payload)
        return 200, payload, {}

    Stub.answer = staticmethod(answer)
    with Judge.from_config(judge_config(base, None)) as judge:
        return judge.score("The park opens in May.", source="A park will open in May.", criterion=[COHERENCE, FLUENCY])


def test_a_server_refusal_is_a_refused_result(stub: str, tmp_path: Any) -> None:
    def refuse(payload: dict[str, Any]) -> None:
        del payload["answers"]["fluency"]
        payload["refusals"] = {"fluency": "no fit for fluency"}

    result = scored(stub, refuse, tmp_path)
    assert result.parts["fluency"].status == "refused" and result.parts["fluency"].score is None
    assert "refused: no fit for fluency" in result.parts["fluency"].notes


def test_a_missing_answer_is_a_malformed_answer_never_a_verdict(stub: str, tmp_path: Any) -> None:
    result = scored(stub, lambda payload: payload["answers"].pop("fluency"), tmp_path)
    assert result.status == "error" and result.score is None and "missing" in (result.error or ""), result.error


def test_a_bad_distribution_is_an_error_naming_the_field(stub: str, tmp_path: Any) -> None:
    result = scored(stub, lambda payload: payload["answers"]["coherence"]["probabilities"].update({"2": 0.5}), tmp_path)
    # a malformed answer is retried and never cached (issue 41): the item is an error naming the field at fault
    assert result.status == "error" and result.score is None and "answers.coherence.probabilities sum to 1.1" in (result.error or "")


def test_the_cache_serves_a_repeated_decision_request_without_a_call(stub: str, tmp_path: Any) -> None:
    Stub.answer = answering(all_ok)
    with Judge.from_config(judge_config(stub, tmp_path / "cache")) as judge:
        first = judge.score("The park opens in May.", source="A park will open in May.", criterion=[COHERENCE, FLUENCY])
        second = judge.score("The park opens in May.", source="A park will open in May.", criterion=[COHERENCE, FLUENCY])
    assert len(Stub.seen) == 1
    assert not first.cached and second.cached
    assert second.parts["coherence"].distribution == first.parts["coherence"].distribution
    assert first.provenance.served["model"] == second.provenance.served["model"] == "stub-model-2026-11"  # the version the server named
