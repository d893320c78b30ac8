"""What the hand-written loopback HTTP servers of the tests share: a ``ThreadingHTTPServer`` on 127.0.0.1 and a free
port, served from a daemon thread, started and stopped as a context manager. A server subclasses
:class:`LoopbackServer` and names its request handler class (``handler``: it reaches the server as ``self.app``)."""

from __future__ import annotations

import http.client
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

from typing_extensions import Self


class QuietHTTPServer(ThreadingHTTPServer):
    """A server that does not print a traceback when a client hangs up mid-request (a killed child: not news)."""

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass


class LoopbackServer:
    handler: ClassVar[type[BaseHTTPRequestHandler]]
    server_class: ClassVar[type[ThreadingHTTPServer]] = ThreadingHTTPServer
    _server: ThreadingHTTPServer | None = None

    def start(self) -> Self:
        handler = type("Handler", (self.handler,), {"app": self})
        self._server = self.server_class(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def origin(self) -> str:
        assert self._server is not None, f"{type(self).__name__} is not running"
        return f"http://127.0.0.1:{self._server.server_address[1]}"


def http_get(port: int, path: str, headers: dict | None = None) -> tuple[int, dict, bytes]:
    """``GET path`` from a server on 127.0.0.1:``port``: its status, headers and body (a 30 s ceiling: it bounds a
    hang, it is no timing assertion)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        conn.request("GET", path, headers=headers or {})
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()

