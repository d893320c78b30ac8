"""The hostile catalogue, class **serve under attack** (issue 41, item 4): ``judgesdk serve`` against hostile
bodies, slow and half-open clients, a SIGTERM shorter than a request, a record file removed or on a full disk,
and a careless start.

Each row starts the real command (tests/support/serve_process.py: a subprocess on 127.0.0.1, its judge a
configured System One chain whose loopback upstream the test can hold, so no hosted key is needed) and asserts
what a client and the operator see: the status and the schemas' error body, the server still answering
``/health``, the record file, the exit code and its one line, and no traceback anywhere. Each row failed on
d1a3c5d (a 500, a hang, a traceback, rows that vanish, exit 0).
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from conftest import need

from support.patience import wait_for
from support.serve_process import HeldUpstream, JudgesdkServe
from support.servers import LOOPBACK, _child_env, free_port

httpx = need("httpx")
need("starlette")
need("uvicorn")

pytestmark = pytest.mark.integration

KEY_ENV, KEY = "JUDGESDK_TEST_SERVE_KEY", "sk-serve-under-attack"
QUESTION = {"type": "score", "name": "coherence", "instructions": "Rate it.", "levels": [{"label": str(i)} for i in range(1, 6)]}
GOOD = {"model": "judgesdk", "input": json.dumps({"output": "A short summary.", "source": "The source text."}), "questions": [QUESTION]}
DEEP = 1000


@pytest.fixture(scope="module")
def upstream():
    with HeldUpstream() as up:
        yield up


def hosted_config(tmp: Path, upstream: str) -> Path:
    path = tmp / "upstream.toml"
    path.write_text(f'[[providers]]\nkind = "systemone"\nmodel = "jev"\nbase_url = "{upstream}"\n[cache]\nenabled = false\n[retry]\nmax_attempts = 1\n')
    return path


def started(tmp: Path, upstream: HeldUpstream, *args: str, **options: Any) -> JudgesdkServe:
    serve = JudgesdkServe("--config", str(hosted_config(tmp, upstream.origin)), *args, **options)
    serve.start()
    return serve


def post(serve: JudgesdkServe, body: Any = GOOD, raw: bytes | None = None, path: str = "/v1/decisions") -> httpx.Response:
    content = raw if raw is not None else json.dumps(body).encode()
    return httpx.post(f"{serve.origin}{path}", content=content, headers={"Content-Type": "application/json"}, timeout=120)


def assert_error(response: httpx.Response, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json"), response.text
    assert response.json()["error"]["code"] == code, response.text



@pytest.fixture(scope="module")
def server(upstream: HeldUpstream, tmp_path_factory: pytest.TempPathFactory):
    tmp = tmp_path_factory.mktemp("serve-attack")
    serve = started(tmp, upstream, "--record", str(tmp / "served.jsonl"))
    serve.record = tmp / "served.jsonl"  # type: ignore[attr-defined]
    try:
        yield serve
    finally:
        serve.cleanup()


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


DEEP_BODIES = {
    "the body": nested(DEEP).encode(),
    "a question": json.dumps({**GOOD, "questions": [{**QUESTION, "levels": "LEVELS"}]}).replace('"LEVELS"', nested(DEEP)).encode(),
    "the input text": json.dumps({**GOOD, "input": '{"output": "x", "source": ' + nested(DEEP) + "}"}).encode(),
}


@pytest.mark.parametrize("where", list(DEEP_BODIES))
def test_json_nested_a_thousand_levels_deep_is_a_400_not_a_recursion_500(server: JudgesdkServe, where: str) -> None:
    """Serve under attack: JSON nested 1,000 deep overflowed the recursion limit (500 RecursionError)."""
    answer = post(server, raw=DEEP_BODIES[where])
    assert_error(answer, 400, "too_deep")
    assert server.health()["status"] == "ok"
    assert "Traceback" not in server.log_text() and "RecursionError" not in server.log_text()


def test_a_lone_surrogate_in_a_question_name_is_a_400_never_recorded_or_counted(server: JudgesdkServe) -> None:
    """Serve under attack: a lone surrogate in a question's name was a 500, yet recorded and counted as served."""
    before = server.health()["served"]["/v1/decisions"]
    rows = server.record.read_text().count("\n") if server.record.exists() else 0  # type: ignore[attr-defined]
    raw = json.dumps({**GOOD, "questions": [{**QUESTION, "name": "coherence\ud800"}]}).encode()  # ensure_ascii: the \ud800 escape
    answer = post(server, raw=raw)
    assert_error(answer, 400, "invalid_text")
    assert answer.json()["error"]["param"] == "questions[0].name"
    assert server.health()["served"]["/v1/decisions"] == before
    assert (server.record.read_text().count("\n") if server.record.exists() else 0) == rows  # type: ignore[attr-defined]
    assert post(server).status_code == 200  # and the server answers the next request


def half_open(origin_port: int, count: int) -> list[socket.socket]:
    """``count`` connections that each send half a request header and stop."""
    held = []
    for _ in range(count):
        sock = socket.create_connection((LOOPBACK, origin_port), timeout=30)
        sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Half: ")
        held.append(sock)
    return held


@pytest.mark.slow
def test_half_open_connections_past_the_descriptor_limit_never_stop_health(upstream: HeldUpstream, tmp_path: Path) -> None:
    """Serve under attack: under ``ulimit -n``, connections that send half a header and stop held a descriptor each
    for ever; past the limit every accept() failed with a "Too many open files" traceback and /health went silent.
    Scaled down: the server under ``ulimit -n 256``, 400 half-open connections (the benchmark: 1024 and 2,000)."""
    serve = started(tmp_path, upstream, nofile=256)
    held: list[socket.socket] = []
    try:
        held = half_open(serve.port, 400)
        for _ in range(3):
            answer = httpx.get(f"{serve.origin}/health", timeout=30)
            assert answer.status_code == 200, answer.text
        assert serve.alive()
        log = serve.log_text()
        assert len(log.encode()) < 100_000 and "Too many open files" not in log and "Traceback" not in log, log[-2000:]
    finally:
        for sock in held:
            sock.close()
        serve.cleanup()


def test_a_header_sent_too_slowly_is_closed_by_the_server(upstream: HeldUpstream, tmp_path: Path) -> None:
    """Serve under attack: a connection that never finished its header was held for ever (no header deadline)."""
    serve = started(tmp_path, upstream)  # the default deadline (10 s)
    try:
        (sock,) = half_open(serve.port, 1)
        sock.settimeout(60)
        assert sock.recv(1024) == b""  # closed by the server, long before the test's own timeout
        sock.close()
    finally:
        serve.cleanup()


def slow_upload(port: int) -> socket.socket:
    """An authenticated upload that declares 500 kB and sends 10 bytes."""
    sock = socket.create_connection((LOOPBACK, port), timeout=60)
    head = f"POST /v1/decisions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer {KEY}\r\nContent-Type: application/json\r\nContent-Length: 500000\r\n\r\n"
    sock.sendall(head.encode() + b'{"model": ')
    return sock


def status_of(sock: socket.socket) -> int:
    data = b""
    while b"\r\n" not in data:
        chunk = sock.recv(4096)
        if not chunk:
            break
        data += chunk
    return int(data.split(b" ", 2)[1])


def test_slow_uploads_are_admitted_before_their_bodies_are_read(upstream: HeldUpstream, tmp_path: Path) -> None:
    """Serve under attack: bodies were read before admission, so slow uploads cost memory outside --concurrency and
    --queue; now past them an upload is turned away at once (429, its body unread). (An admitted upload that does
    not finish within --body-timeout-s is answered 408: tests/serve/test_serve_http.py.)"""
    serve = started(
        tmp_path, upstream, "--api-key-env", KEY_ENV, "--concurrency", "1", "--queue", "1", "--max-body-bytes", "1000000",
        env={KEY_ENV: KEY},
    )  # fmt: skip
    uploads: list[socket.socket] = []
    try:
        uploads = [slow_upload(serve.port) for _ in range(2)]
        wait_for(lambda: serve.health()["queued"] + serve.health()["in_flight"] == 2, "two uploads admitted")
        late = [slow_upload(serve.port) for _ in range(4)]
        uploads += late
        assert [status_of(sock) for sock in late] == [429] * 4
        assert serve.health()["turned_away"] == 4
    finally:
        for sock in uploads:
            sock.close()
        serve.cleanup()


def test_sigterm_shorter_than_a_request_answers_it_503_in_the_schema(upstream: HeldUpstream, tmp_path: Path) -> None:
    """Serve under attack: SIGTERM with --grace-s shorter than a request in flight gave that client a plain-text 500
    and wrote an ASGI traceback."""
    serve = started(tmp_path, upstream, "--grace-s", "1")
    upstream.hold.set()
    upstream.release.clear()
    answer: dict[str, httpx.Response] = {}
    thread = threading.Thread(target=lambda: answer.setdefault("r", post(serve)))
    try:
        thread.start()
        wait_for(lambda: serve.health()["in_flight"] == 1, "the request to be judging")
        proc = serve.proc
        proc.send_signal(signal.SIGTERM)
        thread.join(timeout=120)
        assert_error(answer["r"], 503, "shutting_down")
        assert proc.wait(timeout=120) == 0
        assert "Traceback" not in serve.log_text() and "Exception in ASGI" not in serve.log_text(), serve.log_text()
    finally:
        upstream.hold.clear()
        upstream.release.set()
        serve.cleanup()


@pytest.mark.slow
def test_a_record_file_removed_while_serving_is_recreated_and_held(upstream: HeldUpstream, tmp_path: Path) -> None:
    """Serve under attack: a --record file deleted while serving was not recreated (later rows vanished without a
    word) and a second server could then open the same path."""
    record = tmp_path / "served.jsonl"
    serve = started(tmp_path, upstream, "--record", str(record))
    try:
        assert post(serve).status_code == 200
        record.unlink()
        wait_for(record.exists, "the record file to be recreated")
        assert post(serve).status_code == 200
        rows = [json.loads(line) for line in record.read_text().splitlines()]
        assert len(rows) == 1 and rows[0]["status"] == "ok"
        assert "recreated" in serve.log_text()
        second = serve_command(tmp_path, upstream, "--record", str(record))
        assert_one_line(second, "being written by another")
    finally:
        serve.cleanup()


def test_a_full_disk_answers_503_keeps_serving_and_exits_non_zero(upstream: HeldUpstream, tmp_path: Path) -> None:
    """Serve under attack: --record on a full disk answered every judged request with a 500 (the judgement thrown
    away) and the server then exited 0. ENOSPC is injected at the ledger's writer."""
    record, full = tmp_path / "served.jsonl", tmp_path / "disk-is-full"
    serve = started(tmp_path, upstream, "--record", str(record), full_disk=full)
    try:
        full.touch()
        assert_error(post(serve), 503, "record_unavailable")
        assert serve.health()["not_recorded"] == 1
        full.unlink()
        assert post(serve).status_code == 200
        proc = serve.proc
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=120) == 1
        log = serve.log_text()
        assert "1 served judgement(s) were not recorded" in log and "Traceback" not in log, log
        assert len(record.read_text().splitlines()) == 1
    finally:
        serve.cleanup()


def serve_command(tmp: Path, upstream: HeldUpstream, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``judgesdk serve`` expected to refuse to start (a timeout here means it served instead)."""
    command = [sys.executable, "-m", "judgesdk.cli.app", "serve", "--config", str(hosted_config(tmp, upstream.origin)), *args]
    child_env = _child_env({"JUDGESDK_CACHE_DIR": str(tmp / "cache"), **(env or {})})
    return subprocess.run(command, capture_output=True, text=True, timeout=120, env=child_env)


def assert_one_line(done: subprocess.CompletedProcess[str], needle: str) -> None:
    assert done.returncode == 3, done.stderr
    assert done.stderr.startswith("judgesdk") and done.stderr.strip().count("\n") == 0, done.stderr
    assert "Traceback" not in done.stderr and needle in done.stderr, done.stderr


def test_a_port_in_use_is_one_line(upstream: HeldUpstream, tmp_path: Path) -> None:
    """Serve under attack: a port in use printed a traceback."""
    with socket.create_server((LOOPBACK, 0)) as taken:
        port = taken.getsockname()[1]
        assert_one_line(serve_command(tmp_path, upstream, "--port", str(port)), "in use")


def test_a_host_that_does_not_resolve_is_one_line(upstream: HeldUpstream, tmp_path: Path) -> None:
    """Serve under attack: an unresolvable --host printed a traceback."""
    done = serve_command(tmp_path, upstream, "--host", "no-such-host.invalid", "--port", str(free_port()))
    assert_one_line(done, "does not resolve")


def test_a_key_variable_with_whitespace_around_it_is_one_line(upstream: HeldUpstream, tmp_path: Path) -> None:
    """Serve under attack: an API key variable with a trailing newline started a server every client failed 401
    against, with nothing saying why."""
    done = serve_command(tmp_path, upstream, "--api-key-env", KEY_ENV, "--port", str(free_port()), env={KEY_ENV: KEY + "\n"})
    assert_one_line(done, "whitespace")
    assert KEY not in done.stderr
