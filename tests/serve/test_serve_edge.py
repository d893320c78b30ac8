"""What ``judgesdk serve`` checks at its edge (:mod:`judgesdk.serve.edge`) and how many connections it holds
(:mod:`judgesdk.serve.connections`): unit tests, no server. The server-level rows are in
tests/catalogue/test_hostile_serve.py."""

from __future__ import annotations

import json

import pytest
from conftest import need

need("starlette")
need("uvicorn")

from judgesdk.provider import RequestError  # noqa: E402
from judgesdk.serve.connections import ConnectionGuard, connection_limit, listen_backlog  # noqa: E402
from judgesdk.serve.edge import MAX_DEPTH, check_texts, parse_body  # noqa: E402


def test_json_deeper_than_the_limit_is_refused_at_any_depth_up_to_the_recursion_limit() -> None:
    for depth in (MAX_DEPTH + 1, 900, 5000):
        with pytest.raises(RequestError) as caught:
            parse_body(("[" * depth + "]" * depth).encode())
        assert caught.value.code == "too_deep" and caught.value.status == 400
    assert parse_body(("[" * MAX_DEPTH + "]" * MAX_DEPTH).encode()) is not None


def test_a_lone_surrogate_anywhere_is_refused_with_its_path() -> None:
    for body, param in (({"questions": [{"name": "a\ud800"}]}, "questions[0].name"), ({"q\udfff": 1}, "q\\udfff")):
        with pytest.raises(RequestError) as caught:
            parse_body(json.dumps(body).encode())
        assert caught.value.code == "invalid_text" and caught.value.param == param
    assert parse_body(json.dumps({"name": "a \U0001f600 pair"}).encode()) == {"name": "a \U0001f600 pair"}


def test_bad_json_and_bad_utf8_are_invalid_json() -> None:
    for raw in (b'{"model": ', b"\xff\xfe"):
        with pytest.raises(RequestError) as caught:
            parse_body(raw)
        assert caught.value.code == "invalid_json"
    check_texts({"fine": ["text", 1, None]}, "")


def test_the_connection_limit_keeps_an_accept_burst_and_a_reserve_below_ulimit() -> None:
    for fds in (256, 1024, 4096, 65536):
        limit = connection_limit(4, fds, in_use=30)
        assert 8 <= limit and limit + 3 * listen_backlog(fds) + 30 < fds  # 30 descriptors already open


class _Transport:
    def __init__(self) -> None:
        self.aborted = False

    def abort(self) -> None:
        self.aborted = True


class _Protocol:
    def __init__(self) -> None:
        self.transport = _Transport()


def test_a_newcomer_past_the_limit_closes_the_oldest_connection_still_waiting_for_its_header() -> None:
    import asyncio

    loop = asyncio.new_event_loop()
    try:
        guard = ConnectionGuard(limit=2, header_timeout_s=60)
        first, second, busy, newcomer = _Protocol(), _Protocol(), _Protocol(), _Protocol()
        for protocol in (first, second, busy):
            guard.open += 1
            guard.wait(protocol, loop)
        guard.done_waiting(busy)  # its header came: never evicted
        assert guard.make_room(busy)  # 3 open, limit 2: the oldest waiting one goes
        assert first.transport.aborted and not second.transport.aborted and not busy.transport.aborted
        guard.open += 1
        guard.wait(newcomer, loop)
        guard.done_waiting(second)
        assert not guard.make_room(newcomer) and guard.refused == 1  # every other connection busy: the newcomer goes
    finally:
        loop.close()


def test_the_depth_scan_leaves_strings_out_and_never_recurses() -> None:
    from judgesdk.serve.edge import json_depth

    assert json_depth(b'[[1, {"a": "[[[[ {{"}]]') == 3
    assert json_depth(b'"\\"[[[" []') == 1  # an escaped quote does not end the string
    assert json_depth(b"[" * 100_000) == 100_000  # no RecursionError: a count, not a parse
    assert json_depth(b'"unterminated [[[') == 0
    with pytest.raises(RequestError) as caught:  # the input text, parsed as JSON by the wire reader, is scanned first
        check_texts({"input": '{"output": "x", "source": ' + "[" * 2000 + "]" * 2000 + "}"}, "")
    assert caught.value.code == "too_deep" and "input" in caught.value.message
