"""``judgesdk view --serve``: the page from a loopback HTTP server, refreshed as a run in progress appends rows.

The standard library's :class:`http.server.ThreadingHTTPServer` answers three paths: ``/`` (the page, with the
data of that moment), ``/data.json`` (the data, rebuilt when a file of the run changed: size or modification
time, :func:`judgesdk.view.load.stamp`; ``If-None-Match`` with the current version gets ``304``) and
``/healthz``. The page asks for ``/data.json`` every second and redraws what changed, keeping its filters and
the open item.

It binds 127.0.0.1 unless told otherwise, and on a loopback address answers only requests whose ``Host``
names that address (or ``localhost``), so a web page elsewhere cannot read a run through DNS rebinding (bound
to another address with ``--host``, it was exposed on purpose and answers any name); every answer carries the
page's Content-Security-Policy and ``X-Content-Type-Options: nosniff``.
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import logging
import threading
from collections.abc import Callable
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from judgesdk.core import InputError
from judgesdk.view.html import content_security_policy, data_json, packed, render_page

log = logging.getLogger("judgesdk.view")


class LiveData:
    """The page's data, rebuilt by ``build`` when ``stamp`` changes; each build gets a version (a hash of its stamp)."""

    def __init__(self, build: Callable[[], dict[str, Any]], stamp: Callable[[], Any]) -> None:
        self._build, self._stamp = build, stamp
        self._lock = threading.Lock()
        self._seen: Any = object()
        self.data: dict[str, Any] = {}
        self.body = b""
        self.error: str | None = None

    def current(self) -> tuple[dict[str, Any], bytes]:
        with self._lock:
            now = self._stamp()
            if now != self._seen:
                try:
                    data = self._build()
                except InputError as exc:  # e.g. a line being written: keep showing the last good data, say why
                    self.error = str(exc)
                    if not self.data:
                        raise
                except Exception as exc:  # anything else a file can provoke: the server stays up on the last good data
                    if not self.data:
                        raise
                    self.error = f"the page could not be rebuilt ({type(exc).__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}); showing the last good data"
                    log.warning("judgesdk view: %s", self.error)
                else:
                    self._seen, self.error = now, None
                    data["version"] = hashlib.sha256(repr(now).encode()).hexdigest()[:16]
                    self.data, self.body = data, data_json(packed(data)).encode("utf-8")
            return self.data, self.body


def make_server(live: LiveData, host: str = "127.0.0.1", port: int = 0) -> ThreadingHTTPServer:
    """A server for ``live`` on ``host:port`` (port 0: any free one); call ``serve_forever`` to run it."""
    live.current()  # the first build: bad input is an error now, before a port is opened

    class Handler(BaseHTTPRequestHandler):
        server_version = "judgesdk-view"
        sys_version = ""

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - the base class's name
            log.debug("view: " + format, *args)

        def _allowed_host(self) -> bool:
            address = self.server.server_address
            assert isinstance(address, tuple)  # an IP server's (host, port, ...), never a Unix socket's path
            bound_host, bound_port = address[:2]
            if not ipaddress.ip_address(bound_host).is_loopback:  # exposed on purpose (--host): any name may reach it
                return True
            given = (self.headers.get("Host") or "").strip().lower()
            allowed = {f"{name}:{bound_port}" for name in {str(bound_host).lower(), "localhost", "127.0.0.1", "[::1]"}}
            return given in allowed

        def _send(self, status: int, body: bytes, content_type: str, extra: dict[str, str] | None = None) -> None:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Content-Security-Policy", content_security_policy())
            self.send_header("X-Content-Type-Options", "nosniff")
            self.send_header("Cache-Control", "no-store")
            self.send_header("Referrer-Policy", "no-referrer")
            for key, value in (extra or {}).items():
                self.send_header(key, value)
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def do_HEAD(self) -> None:  # noqa: N802 - http.server's name
            self.do_GET()

        def do_GET(self) -> None:  # noqa: N802 - http.server's name
            if not self._allowed_host():
                self._send(HTTPStatus.MISDIRECTED_REQUEST, b"this server answers requests for its own address only\n", "text/plain; charset=utf-8")
                return
            path = self.path.split("?", 1)[0]
            try:
                data, body = live.current()
            except InputError as exc:
                if path == "/healthz":  # the server is up: say so, and why there is no page
                    self._send(HTTPStatus.OK, json.dumps({"rows": 0, "version": None, "error": str(exc)}).encode(), "application/json")
                    return
                self._send(HTTPStatus.SERVICE_UNAVAILABLE, f"{exc}\n".encode(), "text/plain; charset=utf-8")
                return
            etag = f'"{data.get("version", "")}"'
            if path in ("/", "/index.html"):
                self._send(HTTPStatus.OK, render_page(data).encode("utf-8"), "text/html; charset=utf-8")
            elif path == "/data.json":
                if self.headers.get("If-None-Match") == etag:
                    self._send(HTTPStatus.NOT_MODIFIED, b"", "application/json", {"ETag": etag})
                else:
                    self._send(HTTPStatus.OK, body, "application/json; charset=utf-8", {"ETag": etag})
            elif path == "/healthz":
                status = {"rows": len(data.get("items", {}).get("id", [])), "version": data.get("version"), "error": live.error}
                self._send(HTTPStatus.OK, json.dumps(status).encode(), "application/json")
            else:
                self._send(HTTPStatus.NOT_FOUND, b"not found\n", "text/plain; charset=utf-8")

    try:
        return ThreadingHTTPServer((host, port), Handler)
    except OSError as exc:
        raise InputError(f"cannot serve on {host}:{port}: {exc.strerror or exc}; choose another --port (0: any free port)") from None
