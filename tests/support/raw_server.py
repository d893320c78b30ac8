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
gets every byte well within its read timeout, never the whole body within a total one). ``Reply.encoding``
("gzip" or "deflate") sends the body compressed, with its ``Content-Encoding``: a body of a few kilobytes that
inflates to megabytes (:func:`padded`, a decompression bomb kept small). Stdlib only.
"""

from __future__ import annotations

import gzip
import json
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from support.loopback import LoopbackServer, QuietHTTPServer

__all__ = ["RawRequest", "RawServer", "Reply", "chat_completion", "padded"]


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
    encoding: str = ""  # "gzip" or "deflate": the body is sent compressed, with its Content-Encoding header

    def payload(self) -> bytes:
        """The body as sent (compressed where ``encoding`` says so)."""
        plain = self.body if self.body is not None else json.dumps(self.json_body).encode()
        if self.encoding == "gzip":
            return gzip.compress(plain, compresslevel=9)
        if self.encoding == "deflate":
            return zlib.compress(plain, 9)
        return plain


def padded(body: bytes, size: int) -> bytes:
    """``body`` (JSON) followed by whitespace up to ``size`` bytes: the same JSON once parsed, ``size`` bytes once
    decoded, a few kilobytes once compressed."""
    return body + b" " * max(size - len(body), 0)


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
        headers = {"content-type": "application/json", **({"content-encoding": reply.encoding} if reply.encoding else {})}
        headers.update({k.lower(): v for k, v in reply.headers.items()})
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
