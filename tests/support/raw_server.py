"""A loopback HTTP server that answers every request exactly as a test scripts it, bytes and timing included.

For answers no well-behaved server gives and the other fakes cannot make (:mod:`support.batch_server` always
builds a valid completion; :mod:`support.fault_proxy` needs an upstream): a body that is not JSON, a JSON body
of the wrong shape, a body trickled a byte at a time, a redirect loop, a 429 with a Retry-After of any text.

``RawServer(answer)`` binds 127.0.0.1 on a free port; ``answer(request)`` gets a :class:`RawRequest` (method,
path, lower-cased headers, parsed JSON body) and returns a :class:`Reply`::

    with RawServer(lambda request: Reply(200, json_body={"choices": []})) as server:
        ... base_url = server.base_url ...   # http://127.0.0.1:PORT/v1
        assert len(server.requests) == 1

``Reply.trickle_s`` sends the body one byte per ``trickle_s`` seconds after the headers (the test's client
gets every byte well within its read timeout, never the whole body within a total one). Stdlib only.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from support.loopback import LoopbackServer, QuietHTTPServer

__all__ = ["RawRequest", "RawServer", "Reply", "chat_completion"]


@dataclass
class RawRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: Any = None  # the JSON body, or the raw bytes when it is not JSON


@dataclass
class Reply:
    status: int = 200
    json_body: Any = None  # sent as JSON when ``body`` is None
    body: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    trickle_s: float = 0.0  # > 0: one byte of the body per trickle_s seconds

    def payload(self) -> bytes:
        if self.body is not None:
            return self.body
        return json.dumps(self.json_body).encode()


def chat_completion(text: str = "4", *, model: str = "m", logprobs: Any = None) -> dict[str, Any]:
    """A minimal OpenAI chat completion answering ``text`` (``logprobs``: the choice's logprobs object as sent)."""
    choice: dict[str, Any] = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop", "logprobs": logprobs}
    return {"id": "c1", "object": "chat.completion", "created": 0, "model": model, "choices": [choice],
            "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}}  # fmt: skip


class RawServer(LoopbackServer):
    server_class = QuietHTTPServer

    def __init__(self, answer: Callable[[RawRequest], Reply]) -> None:
        self.answer = answer
        self.requests: list[RawRequest] = []
        self._lock = threading.Lock()

    @property
    def base_url(self) -> str:
        return f"{self.origin}/v1"



class _Handler(BaseHTTPRequestHandler):
    app: RawServer
    protocol_version = "HTTP/1.1"

    def log_message(self, *args: object) -> None:  # quiet
        pass

    def _handle(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        data = self.rfile.read(length) if length else b""
        try:
            body: Any = json.loads(data) if data else None
        except ValueError:
            body = data
        request = RawRequest(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body)
        with self.app._lock:
            self.app.requests.append(request)
        reply = self.app.answer(request)
        payload = reply.payload()
        self.send_response(reply.status)
        headers = {"content-type": "application/json", **{k.lower(): v for k, v in reply.headers.items()}}
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        try:
            if reply.trickle_s <= 0:
                self.wfile.write(payload)
                return
            for index in range(len(payload)):
                self.wfile.write(payload[index : index + 1])
                self.wfile.flush()
                time.sleep(reply.trickle_s)
        except OSError:  # the client gave up: nothing more to send
            self.close_connection = True

    do_GET = do_POST = _handle


RawServer.handler = _Handler  # defined below the server class, which names it for LoopbackServer.start
