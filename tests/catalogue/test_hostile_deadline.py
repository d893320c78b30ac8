"""The hostile catalogue, deadline and size half (issue 41, item 3): a server that answers too slowly as a whole, or
too much once decoded, through every HTTP route (the openai package's chat and ``api = "decisions"``, anthropic's
Messages, the systemone client, LiteLLM's chat, ``adecisions`` and ``asystemone``), against a loopback server that
answers exactly as the row scripts it (tests/support/raw_server.py).

Two classes of rows:

* ``deadline``: a body trickled one byte at a time (each byte well within the read timeout, the whole far past
  ``timeout_s``) is a :class:`~judgesdk.core.errors.ProviderTimeoutError` ("within timeout_s") soon after
  ``timeout_s``: the HTTP clients' own timeout bounds each read, never the whole request. The margins are generous
  (a 1 s deadline, a 30 s body, a bound of 15 s): they hold on a loaded machine and fail without the deadline.
* ``answer size``: a gzip (or deflate) body of a few kilobytes that inflates to megabytes, against a lowered
  ``max_answer_bytes``, is refused while it is read, naming the cap, and never cached (a second run asks again);
  the control: a compressed answer within the cap is read whole, a verdict, and cached. Kept small (4 MB decoded)
  so CI's memory and time stay safe.
"""

from __future__ import annotations

import asyncio
import gc
import gzip
import json
import time
import zlib
from collections.abc import Callable
from typing import Any

import pytest
from conftest import need

from judgesdk.core.types import Criterion, Scale
from judgesdk.judging.judge import Judge
from judgesdk.provider.decisions import DecisionAnswer
from judgesdk.provider.protocol import Usage
from judgesdk.providers import decisions_wire, systemone_wire

from support.raw_server import RawRequest, RawServer, Reply, chat_completion, padded

COHERENCE = Criterion(name="coherence", description="Well organised.", scale=Scale.likert(1, 5))
P5 = (0.1, 0.2, 0.4, 0.2, 0.1)
CAP = 1_000_000  # max_answer_bytes in the size rows
BOMB = 4_000_000  # what the bomb decodes to (a few kilobytes sent)
TRICKLE_S = 30.0  # how long a trickled body takes in all
DEADLINE_BOUND_S = 15.0  # a trickled request with timeout_s = 1 ends well within this (without the deadline: 30 s)

DECISION_ROUTES: dict[str, Callable[[RawServer], dict[str, Any]]] = {
    "openai-decisions": lambda s: {"kind": "openai", "api": "decisions", "model": "m", "base_url": s.base_url},
    "systemone": lambda s: {"kind": "systemone", "model": "jev", "base_url": s.base_url},
    "litellm-decisions": lambda s: {"kind": "litellm", "api": "decisions", "model": "openai/m", "base_url": s.base_url},
    "litellm-systemone": lambda s: {"kind": "litellm", "api": "systemone", "model": "hosted_vllm/jev", "base_url": s.origin},
}
CHAT_ROUTES: dict[str, Callable[[RawServer], dict[str, Any]]] = {
    "openai-chat": lambda s: {"kind": "openai", "model": "m", "base_url": s.base_url},
    "anthropic": lambda s: {"kind": "anthropic", "model": "m", "base_url": s.origin},
    "litellm-chat": lambda s: {"kind": "litellm", "model": "openai/m", "base_url": s.base_url},
}
ROUTES = {**DECISION_ROUTES, **CHAT_ROUTES}


@pytest.fixture(autouse=True)
def _collect_litellm_leftovers():
    """LiteLLM leaves its logging worker's coroutine pending when a judge's event loop closes; collected at a random
    later moment (inside pytest's assertion rewriting of a module imported at the session's end), its finalizer trips
    CPython 3.11's "AST constructor recursion depth mismatch". Collected here, after each row, it is only a warning."""
    yield
    gc.collect()


def _need(route: str) -> None:
    need("anthropic" if route == "anthropic" else "openai")
    if route.startswith("litellm"):
        need("litellm")


def _answer(request: RawRequest) -> bytes:
    """A good answer to ``request``, in the format of the path it was sent to (the model listing the openai adapter
    reads once, to learn which model answers)."""
    if request.method == "GET":
        return json.dumps({"object": "list", "data": [{"id": "m", "object": "model", "owned_by": "raw"}]}).encode()
    if request.path.endswith("/messages"):  # Anthropic Messages
        return json.dumps({
            "id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": [{"type": "text", "text": "4"}],
            "stop_reason": "end_turn", "stop_sequence": None, "usage": {"input_tokens": 3, "output_tokens": 1},
        }).encode()  # fmt: skip
    if request.path.endswith("/chat/completions"):
        return json.dumps(chat_completion("4")).encode()
    wire = systemone_wire if request.path.endswith("systemone") else decisions_wire
    _, asked, _ = wire.read_request(request.body, max_questions=100)
    answers = [DecisionAnswer(name=q.name, status="ok", probabilities=P5) for q in asked.questions]
    return json.dumps(wire.response_body(asked, answers, "stub", Usage(input_tokens=5))).encode()


def _judge(server: RawServer, route: str, cache: Any, **provider: Any) -> Any:
    """One item judged through ``route`` at ``server``: ``provider`` adds to its ``[[providers]]`` entry; one attempt,
    no overload guard (a row's request is the only one), the cache at ``cache``."""
    config = {
        "providers": [{**ROUTES[route](server), "timeout_s": 10, **provider}],
        "cache": {"enabled": True, "directory": str(cache)},
        "retry": {"max_attempts": 1},
        "overload": {"enabled": False},
        "method": "decision" if route in DECISION_ROUTES else "direct",
    }
    with Judge.from_config(config) as judge:
        return judge.score("The park opens in May.", source="A park will open in May.", criterion=COHERENCE)


def _asked(server: RawServer) -> int:
    """The answer requests ``server`` got (the openai adapter also reads ``GET /models`` once, to learn the model)."""
    return sum(request.method == "POST" for request in server.requests)


# -- deadline -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("route", list(ROUTES))
def test_deadline_a_body_trickled_past_timeout_s_is_a_timeout_on_every_route(route, tmp_path):
    """Class: deadline. Each byte arrives within the read timeout; the body as a whole takes 30 s against
    ``timeout_s = 1`` (before: 144 s and more on a decision route with ``timeout_s = 5``)."""
    _need(route)

    def trickled(request: RawRequest) -> Reply:
        body = _answer(request)
        return Reply(200, body=body, trickle_s=TRICKLE_S / len(body))

    with RawServer(trickled) as server:
        started = time.monotonic()
        result = _judge(server, route, tmp_path / "cache", timeout_s=1)
        took = time.monotonic() - started
        assert result.status == "error" and "within timeout_s = 1 s" in (result.error or ""), (result.status, result.error)
        assert took < DEADLINE_BOUND_S, f"{took:.1f} s: timeout_s did not bound the whole request"
        asked = _asked(server)
        _judge(server, route, tmp_path / "cache", timeout_s=1)
        assert _asked(server) > asked, "a request past its deadline was cached"


# -- answer size ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("encoding", ["gzip", "deflate"])
@pytest.mark.parametrize("route", list(ROUTES))
def test_answer_size_a_decompression_bomb_is_refused_naming_the_cap_and_not_cached(route, encoding, tmp_path):
    """Class: answer size. A few kilobytes that inflate to 4 MB against ``max_answer_bytes = 1000000`` (before:
    1 MB inflating to 1 GB raised the client's memory by 2 GB and was accepted as ``ok``)."""
    _need(route)
    with RawServer(lambda request: Reply(200, body=padded(_answer(request), BOMB), encoding=encoding)) as server:
        result = _judge(server, route, tmp_path / "cache", max_answer_bytes=CAP)
        assert result.status == "error" and "max_answer_bytes = 1,000,000" in (result.error or ""), (result.status, result.error)
        asked = _asked(server)
        assert asked == 1, asked  # permanent: not retried
        again = _judge(server, route, tmp_path / "cache", max_answer_bytes=CAP)
        assert _asked(server) > asked and not again.cached, "a refused answer was cached"


@pytest.mark.parametrize("route", list(ROUTES))
def test_answer_size_a_compressed_answer_within_the_cap_is_read_whole_and_cached(route, tmp_path):
    """Class: answer size (the control: the capped reading decodes an answer within the cap exactly, through every
    route's HTTP client, so the rows above fail for the cap and nothing else)."""
    _need(route)
    with RawServer(lambda request: Reply(200, body=padded(_answer(request), CAP // 2), encoding="gzip")) as server:
        first = _judge(server, route, tmp_path / "cache", max_answer_bytes=CAP)
        assert first.status == "ok", (first.status, first.error)
        asked = _asked(server)
        second = _judge(server, route, tmp_path / "cache", max_answer_bytes=CAP)
        assert _asked(server) == asked and second.cached


def test_answer_size_raw_deflate_is_decoded_and_capped():
    """Class: answer size. Some servers send ``Content-Encoding: deflate`` without the zlib wrapper (httpx reads
    both): the capped reading does too, and caps it alike."""
    need("httpx")
    from judgesdk.providers import _sdk

    raw = zlib.compressobj(9, zlib.DEFLATED, -zlib.MAX_WBITS)
    body = raw.compress(b"x" * 300_000) + raw.flush()
    inflater = _sdk._Inflater("deflate")
    decoded = b"".join(piece for i in range(0, len(body), 7) for piece in inflater.pieces(body[i : i + 7]))  # a byte at a time, nearly
    assert decoded == b"x" * 300_000
    assert max(len(piece) for piece in _sdk._Inflater("gzip").pieces(gzip.compress(b"y" * 1_000_000))) <= 64 * 1024


def test_answer_size_only_answer_calls_are_capped():
    """Class: answer size (the control of the mechanism: the cap is the answer call's, set by ``within``; the same client
    outside one, reading a batch's result file, which may be large, reads the body whole)."""
    httpx = need("httpx")
    from judgesdk.providers import _sdk

    async def read(capped: bool) -> int:
        async with _sdk.capped_client(httpx.AsyncClient()) as client:
            get = client.get(f"{server.base_url}/files/1/content")
            answer = await (_sdk.within(10, get, "test", CAP) if capped else get)
            return len(answer.content)

    with RawServer(lambda request: Reply(200, body=padded(b"{}", BOMB), encoding="gzip")) as server:
        assert asyncio.run(read(capped=False)) == BOMB
        with pytest.raises(_sdk.OversizedAnswerError, match="max_answer_bytes = 1,000,000"):
            asyncio.run(read(capped=True))
