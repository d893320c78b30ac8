"""The hostile catalogue, secrets (issue 41, item 2): a key a server echoes never leaves judgesdk.

Each row runs a real adapter (its real SDK: openai, LiteLLM, httpx) or ``judgesdk serve`` against a loopback
server (tests/support/raw_server.py) that answers with the request's own ``Authorization`` header in its body, and
asserts that the key appears nowhere judgesdk writes: a row's ``error`` and ``notes``, what ``serve`` answers its
clients, its ``--record`` file. Class: **secrets**. The redaction itself (:func:`judgesdk.provider.scrub_credentials`)
is tested in tests/provider/test_redaction.py.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from conftest import need

from judgesdk.core.types import Criterion, JudgeResult, Scale, Usage
from judgesdk.judging.judge import Judge
from judgesdk.provider.decisions import DecisionAnswer
from judgesdk.providers import decisions_wire, systemone_wire

from support.hostile import CLEARED_ENV, SECRET
from support.raw_server import RawRequest, RawServer, Reply

KEY_ENV = "JUDGESDK_TEST_UPSTREAM_SECRET"  # a name no vendor reads: only the config says it holds a key
COHERENCE = Criterion(name="coherence", description="Well organised.", scale=Scale.likert(1, 5))

# (route id, provider config without base_url, the path its requests go to, the wire module that path speaks)
ROUTES = {
    "openai-decisions": ({"kind": "openai", "api": "decisions", "model": "gpt-6-luna"}, "/v1", decisions_wire, "openai"),
    "systemone": ({"kind": "systemone", "model": "jev"}, "/v1", systemone_wire, None),
    "litellm-decisions": ({"kind": "litellm", "api": "decisions", "model": "openai/gpt-6-luna"}, "/v1", decisions_wire, "litellm"),
    "litellm-systemone": ({"kind": "litellm", "api": "systemone", "model": "hosted_vllm/jev"}, "", systemone_wire, "litellm"),
}


@pytest.fixture(autouse=True)
def clean_env(monkeypatch, tmp_path):
    for name in (*CLEARED_ENV, "OPENAI_BASE_URL", "OPENAI_API_BASE", "ANTHROPIC_BASE_URL", "ANTHROPIC_API_BASE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("JUDGESDK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv(KEY_ENV, SECRET)


def echoing(request: RawRequest) -> Reply:
    """A 401 whose body repeats the key as sent: the whole header, and the bare key."""
    sent = request.headers.get("authorization", "")
    token = sent.partition(" ")[2]
    return Reply(401, json_body={"error": {"message": f"invalid credentials {sent!r}; key {token} is revoked", "type": "auth", "key": token}})


def judged(route: str, base_url: str) -> JudgeResult:
    provider, prefix, _, package = ROUTES[route]
    if package:
        need(package)
    config = {
        "providers": [{**provider, "base_url": base_url + prefix, "api_key_env": KEY_ENV}],
        "cache": {"enabled": False},
        "retry": {"max_attempts": 1},
    }
    with Judge.from_config(config) as judge:
        return judge.score("The park opens in May.", source="A park will open in May.", criterion=COHERENCE)


def no_secret(*texts: str) -> None:
    for text in texts:
        assert SECRET not in text, text


# -- secrets: an upstream 401 that echoes the key never puts it into the row's error ---------------------------


@pytest.mark.parametrize("route", list(ROUTES))
def test_secrets_a_401_echoing_the_bearer_key_never_reaches_the_rows_error(route):
    with RawServer(echoing) as server:
        result = judged(route, server.origin)
    assert any(request.headers.get("authorization") == f"Bearer {SECRET}" for request in server.requests), "the key was never sent"
    assert result.status == "error" and result.error, result
    assert "***" in result.error, result.error  # the echo is named, redacted
    no_secret(result.error, result.model_dump_json())


# -- secrets: a refusal whose reason carries the key never stores it in notes -------------------------------------


@pytest.mark.parametrize("route", list(ROUTES))
def test_secrets_a_refusal_reason_carrying_the_key_is_never_stored_in_notes(route):
    def refusing(request: RawRequest) -> Reply:
        wire = ROUTES[route][2]
        _, asked, _ = wire.read_request(request.body, max_questions=100)
        reason = f"no fit for {request.headers.get('authorization', '')} (key {SECRET})"
        answers = [DecisionAnswer(name=q.name, status="refused", reason=reason) for q in asked.questions]
        return Reply(200, json_body=wire.response_body(asked, answers, "stub-model", Usage(input_tokens=5)))

    with RawServer(refusing) as server:
        result = judged(route, server.origin)
    assert result.status == "refused", result
    assert any("no fit for" in note for note in result.notes), result.notes
    no_secret(*result.notes, result.model_dump_json())


# -- secrets: judgesdk serve never forwards an upstream key to its clients or its record --------------------------


def test_secrets_serve_never_forwards_an_echoed_upstream_key_to_clients_or_the_record(tmp_path):
    httpx = need("httpx")
    need("starlette")
    need("uvicorn")
    from support.serve_process import JudgesdkServe

    client_env, client_key = "JUDGESDK_TEST_SERVE_CLIENT_KEY", "sk-serve-client-77aa"
    question = {"type": "score", "name": "coherence", "instructions": "Rate it.", "levels": [{"label": str(i)} for i in range(1, 6)]}
    bodies = {
        "/v1/decisions": {"model": "judgesdk", "input": json.dumps({"output": "The park.", "source": "A park."}), "questions": [question]},
        "/v1/systemone": {"model": "judgesdk", "state": {"output": "The park.", "source": "A park."},
                          "questions": {"coherence": {"type": "score", "criteria": list("12345")}}},
    }  # fmt: skip
    record = tmp_path / "served.jsonl"
    with RawServer(echoing) as upstream:
        config = tmp_path / "upstream.toml"
        config.write_text(
            f'[[providers]]\nkind = "systemone"\nmodel = "jev"\nbase_url = "{upstream.base_url}"\napi_key_env = "{KEY_ENV}"\n'
            "[cache]\nenabled = false\n[retry]\nmax_attempts = 1\n"
        )
        serve = JudgesdkServe("--config", str(config), "--api-key-env", client_env, "--record", str(record), env={KEY_ENV: SECRET, client_env: client_key})
        try:
            serve.start()
            answers: list[Any] = []
            for path, body in bodies.items():
                response = httpx.post(f"{serve.origin}{path}", json=body, headers={"Authorization": f"Bearer {client_key}"}, timeout=120)
                answers.append(response.text)
                assert response.status_code in (200, 503), response.text
                assert "401" in response.text, response.text  # the upstream's failure is said, without its key
            log = serve.log_text()
        finally:
            serve.cleanup()
    assert upstream.requests and all(r.headers.get("authorization") == f"Bearer {SECRET}" for r in upstream.requests)
    recorded = record.read_text() if record.exists() else ""
    no_secret(*answers, recorded, log)
    for text in (*answers, recorded, log):
        assert client_key not in text, text
