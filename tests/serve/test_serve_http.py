"""``judgesdk serve`` over HTTP: keys, limits, the schemas' error codes, backpressure, SIGTERM, the access log.

The judge behind the server is a configured chain (``kind = "systemone"``) whose upstream is a loopback
System One server the test can hold (:class:`support.serve_process.HeldUpstream`), so that "one request in flight" is a
state reached by waiting for it. Every answer here is checked against the error envelope (or, for a good
request, the openai package's and LiteLLM's response types); none may carry a traceback.
"""

from __future__ import annotations

import json
import signal
import threading
from pathlib import Path
from typing import Any

import pytest
from conftest import need

from support.patience import wait_for
from support.serve_process import HeldUpstream, JudgesdkServe

httpx = need("httpx")
need("starlette")
need("uvicorn")

pytestmark = pytest.mark.integration

KEY_ENV, KEY = "JUDGESDK_TEST_SERVE_KEY", "sk-serve-9f3a-secret"
MARKER = "Zebra-crossing-marker judged text"  # must never reach the access log
QUESTION = {"type": "score", "name": "coherence", "instructions": "Rate it.", "levels": [{"label": str(i)} for i in range(1, 6)]}
GOOD = {"model": "judgesdk", "input": json.dumps({"output": MARKER, "source": "The source text."}), "questions": [QUESTION]}
HEADERS = {"Authorization": f"Bearer {KEY}"}


def hosted_config(tmp: Path, upstream: str) -> Path:
    path = tmp / "upstream.toml"
    path.write_text(
        f'[[providers]]\nkind = "systemone"\nmodel = "jev"\nbase_url = "{upstream}"\n[cache]\nenabled = false\n[retry]\nmax_attempts = 1\n'
    )
    return path



@pytest.fixture(scope="module")
def upstream():
    with HeldUpstream() as up:
        yield up


@pytest.fixture(scope="module")
def server(upstream: HeldUpstream, tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("serve-http")
    serve = JudgesdkServe(
        "--config", str(hosted_config(tmp, upstream.origin)), "--api-key-env", KEY_ENV, "--max-questions", "3",
        "--max-body-bytes", "4096", "--concurrency", "1", "--queue", "0", "--record", str(tmp / "served.jsonl"),
        env={KEY_ENV: KEY},
    )  # fmt: skip
    try:
        serve.start()
        yield serve
    finally:
        serve.cleanup()


def post(server: JudgesdkServe, path: str, body: Any, headers: dict[str, str] | None = None, raw: bytes | None = None) -> httpx.Response:
    content = raw if raw is not None else json.dumps(body).encode()
    return httpx.post(f"{server.origin}{path}", content=content, headers={"Content-Type": "application/json", **(HEADERS if headers is None else headers)}, timeout=120)


def assert_error(response: httpx.Response, status: int, code: str, param: str | None = "any") -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    assert "Traceback" not in response.text
    error = response.json()["error"]
    assert isinstance(error["message"], str) and error["message"] and error["code"] == code, error
    assert error["type"] == ("invalid_request_error" if status < 500 else "server_error")
    if param != "any":
        assert error["param"] == param, error


def test_a_good_request_gets_an_answer_both_packages_accept(server: JudgesdkServe) -> None:
    from litellm.types.decisions import DecisionsResponse, OpenAIDecisionResponse
    from openai.types.decision import Decision

    response = post(server, "/v1/decisions", GOOD)
    assert response.status_code == 200, response.text
    Decision.model_validate(response.json())
    OpenAIDecisionResponse.model_validate(response.json())
    assert [p["probability"] for p in response.json()["answers"][0]["probabilities"]] == pytest.approx([0.1, 0.2, 0.4, 0.2, 0.1])
    systemone = {"model": "judgesdk", "state": {"output": MARKER, "source": "The source text."}, "questions": {"coherence": {"type": "score", "criteria": list("12345")}}}
    answer = post(server, "/v1/systemone", systemone)
    assert answer.status_code == 200, answer.text
    assert set(DecisionsResponse.model_validate(answer.json()).answers) == {"coherence"}


def test_questions_on_one_scale_go_upstream_as_one_request(server: JudgesdkServe, upstream: HeldUpstream) -> None:
    before = upstream.received
    asked = [QUESTION, {**QUESTION, "name": "fluency"}, {"type": "predicate", "name": "safe", "instructions": "Is it safe?"}]
    answer = post(server, "/v1/decisions", {**GOOD, "questions": asked})
    assert answer.status_code == 200, answer.text
    assert [a["type"] for a in answer.json()["answers"]] == ["score", "score", "predicate"]
    assert answer.json()["answers"][2]["probability"] == pytest.approx(0.7)
    assert upstream.received - before == 2  # the two score questions together; the predicate, on another scale, apart


TOOL_CALL = {"type": "function_call", "call_id": "c1", "name": "lookup", "arguments": "{}"}
IMAGE = {"role": "user", "content": [{"type": "input_text", "text": "look"}, {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo="}]}
MALFORMED = [  # (name, path, body or raw bytes, headers, status, code, param)
    ("bad JSON", "/v1/decisions", b'{"model": "judgesdk", "input": ', None, 400, "invalid_json", None),
    ("a JSON array", "/v1/decisions", [GOOD], None, 400, "invalid_request", None),
    ("no model", "/v1/decisions", {**GOOD, "model": None}, None, 400, "invalid_request", "model"),
    ("another model", "/v1/decisions", {**GOOD, "model": "gpt-6-luna"}, None, 404, "model_not_found", "model"),
    ("questions not an array", "/v1/decisions", {**GOOD, "questions": QUESTION}, None, 400, "invalid_request", "questions"),
    ("a level label of the wrong type", "/v1/decisions", {**GOOD, "questions": [{**QUESTION, "levels": [{"label": 1}, {"label": 2}]}]}, None, 400, "invalid_request", "questions[0].levels[0].label"),
    ("11 levels", "/v1/decisions", {**GOOD, "questions": [{**QUESTION, "levels": [{"label": str(i)} for i in range(11)]}]}, None, 400, "too_many_levels", "questions[0].levels"),
    ("more questions than the limit", "/v1/decisions", {**GOOD, "questions": [QUESTION] * 4}, None, 400, "too_many_questions", "questions"),
    ("a box question", "/v1/decisions", {**GOOD, "questions": [{"type": "box", "instructions": "the mug"}]}, None, 400, "unsupported_question", "questions[0].type"),
    ("a System One box question", "/v1/systemone", {"model": "judgesdk", "state": {"output": "o"}, "questions": {"mug": {"type": "box", "instructions": "the mug in `photo`"}}}, None, 400, "unsupported_question", "questions.mug.type"),
    ("an image", "/v1/decisions", {**GOOD, "input": [IMAGE]}, None, 400, "unsupported_input", "input[0].content[1]"),
    ("System One images", "/v1/systemone", {"model": "judgesdk", "state": "o", "images": ["data:image/png;base64,iVBORw0KGgo="], "questions": {"q": {"type": "noul", "instructions": "?"}}}, None, 400, "unsupported_input", "images"),
    ("a tool-call input item", "/v1/decisions", {**GOOD, "input": [TOOL_CALL]}, None, 400, "unsupported_input", "input[0]"),
    ("a tool output item", "/v1/decisions", {**GOOD, "input": [{"role": "user", "content": "x"}, {"type": "custom_tool_call_output", "call_id": "c1", "output": "y"}]}, None, 400, "unsupported_input", "input[1]"),
    ("an empty state", "/v1/systemone", {"model": "judgesdk", "state": {}, "questions": {"q": {"type": "noul", "instructions": "?"}}}, None, 400, "invalid_request", "state"),
    ("an empty input", "/v1/decisions", {**GOOD, "input": "  "}, None, 400, "invalid_request", "input"),
    ("an unknown question type", "/v1/decisions", {**GOOD, "questions": [{**QUESTION, "type": "rating"}]}, None, 400, "invalid_request", "questions[0].type"),
    ("an oversize body", "/v1/decisions", {**GOOD, "input": "x" * 5000}, None, 413, "body_too_large", None),
    ("no key", "/v1/decisions", GOOD, {}, 401, "invalid_api_key", None),
    ("a wrong key", "/v1/decisions", GOOD, {"Authorization": "Bearer sk-wrong"}, 401, "invalid_api_key", None),
    ("duplicate choices", "/v1/decisions", {**GOOD, "questions": [{"type": "choice", "instructions": "?", "choices": [{"value": "a"}, {"value": "a"}]}]}, None, 400, "invalid_request", "questions[0].choices"),
    ("assets", "/v1/systemone", {"model": "judgesdk", "state": "o", "assets": {"photo": {"format": "png", "data_base64": "AAAA"}}, "questions": {"q": {"type": "noul", "instructions": "?"}}}, None, 400, "unsupported_input", "assets"),
]


@pytest.mark.parametrize(("name", "path", "body", "headers", "status", "code", "param"), MALFORMED, ids=[case[0] for case in MALFORMED])
def test_a_malformed_request_gets_the_schemas_error(server: JudgesdkServe, name, path, body, headers, status, code, param) -> None:
    raw = body if isinstance(body, bytes) else None
    assert_error(post(server, path, None if raw else body, headers, raw=raw), status, code, param)


def test_routes_and_methods_that_do_not_exist_are_json_errors(server: JudgesdkServe) -> None:
    assert_error(httpx.get(f"{server.origin}/v1/decisions", timeout=30), 405, "method_not_allowed")
    assert_error(httpx.post(f"{server.origin}/v1/chat/completions", json={}, timeout=30), 404, "not_found")


def test_models_lists_the_judge_behind_the_key(server: JudgesdkServe) -> None:
    assert_error(httpx.get(f"{server.origin}/v1/models", timeout=30), 401, "invalid_api_key")
    listed = httpx.get(f"{server.origin}/v1/models", headers=HEADERS, timeout=30).json()["data"]
    assert [m["id"] for m in listed] == ["judgesdk"]
    assert listed[0]["judge"]["provider"] == "systemone" and listed[0]["judge"]["fitted_criteria"] == []


def test_a_full_queue_answers_429_with_retry_after(server: JudgesdkServe, upstream: HeldUpstream) -> None:
    upstream.hold.set()
    upstream.release.clear()
    first: dict[str, httpx.Response] = {}
    thread = threading.Thread(target=lambda: first.setdefault("r", post(server, "/v1/decisions", GOOD)))
    try:
        thread.start()
        wait_for(lambda: server.health()["in_flight"] == 1, "the first request to be judging")
        second = post(server, "/v1/decisions", GOOD)
        assert_error(second, 429, "queue_full")
        assert int(second.headers["retry-after"]) >= 1
        assert server.health()["turned_away"] >= 1
    finally:
        upstream.hold.clear()
        upstream.release.set()
        thread.join(timeout=120)
    assert first["r"].status_code == 200


def test_the_access_log_names_requests_never_their_text_or_key(server: JudgesdkServe) -> None:
    post(server, "/v1/decisions", GOOD)
    wait_for(lambda: "POST /v1/decisions 200" in server.log_text(), "the access log line")
    log = server.log_text()
    assert "questions=1" in log and "POST /v1/decisions 401" in log and "POST /v1/decisions 413" in log
    assert MARKER not in log and KEY not in log and "Traceback" not in log


def test_a_spent_budget_answers_503_and_says_so(upstream: HeldUpstream, tmp_path: Path) -> None:
    serve = JudgesdkServe("--config", str(hosted_config(tmp_path, upstream.origin)), "--max-tokens", "15")  # the upstream bills 10 a call
    try:
        serve.start()
        codes = [post(serve, "/v1/decisions", GOOD, headers={}).status_code for _ in range(2)]
        assert codes == [200, 200]  # the second call starts below the cap, and ends past it
        assert_error(post(serve, "/v1/decisions", GOOD, headers={}), 503, "judge_unavailable")
        assert serve.health()["budget"]["stopped"] is True
    finally:
        serve.cleanup()


def draining(serve: JudgesdkServe) -> bool:
    """Whether the server has stopped taking requests: its health says draining, or it no longer accepts connections."""
    try:
        return httpx.get(f"{serve.origin}/health", timeout=30).json()["status"] == "draining"
    except httpx.TransportError:
        return True


def test_sigterm_finishes_the_request_in_flight_then_stops(upstream: HeldUpstream, tmp_path: Path) -> None:
    serve = JudgesdkServe("--config", str(hosted_config(tmp_path, upstream.origin)), "--record", str(tmp_path / "served.jsonl"))
    upstream.hold.set()
    upstream.release.clear()
    answer: dict[str, httpx.Response] = {}
    try:
        serve.start()
        thread = threading.Thread(target=lambda: answer.setdefault("r", post(serve, "/v1/decisions", GOOD, headers={})))
        thread.start()
        wait_for(lambda: serve.health()["in_flight"] == 1, "the request to be judging")
        serve.proc.send_signal(signal.SIGTERM)
        wait_for(lambda: draining(serve), "the server to stop taking new requests")
        upstream.hold.clear()
        upstream.release.set()
        thread.join(timeout=120)
        assert answer["r"].status_code == 200, answer["r"].text
        assert serve.proc.wait(timeout=120) == 0
        rows = [json.loads(line) for line in (tmp_path / "served.jsonl").read_text().splitlines()]
        assert len(rows) == 1 and rows[0]["criterion"] == "coherence" and rows[0]["status"] == "ok"
    finally:
        upstream.hold.clear()
        upstream.release.set()
        serve.cleanup()


def test_an_admitted_body_that_never_arrives_is_answered_408(upstream: HeldUpstream, tmp_path: Path) -> None:
    """A slow upload holds its queue slot only ``--body-timeout-s``: then 408 in the schema, and the slot is free."""
    import socket

    serve = JudgesdkServe("--config", str(hosted_config(tmp_path, upstream.origin)), "--body-timeout-s", "1", "--concurrency", "1", "--queue", "0")
    try:
        serve.start()
        with socket.create_connection(("127.0.0.1", serve.port), timeout=60) as sock:
            sock.sendall(b"POST /v1/decisions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5000\r\n\r\n{")
            data = b""
            while b"}}" not in data:  # the whole error body (it may come in more than one segment)
                chunk = sock.recv(65536)
                if not chunk:
                    break
                data += chunk
        head, _, body = data.partition(b"\r\n\r\n")
        assert head.split(b" ")[1] == b"408", head
        assert b'"body_timeout"' in body and b"Traceback" not in body
        wait_for(lambda: serve.health()["queued"] == 0 and serve.health()["in_flight"] == 0, "the slot to be free")
        assert post(serve, "/v1/decisions", GOOD, headers={}).status_code == 200
    finally:
        serve.cleanup()
