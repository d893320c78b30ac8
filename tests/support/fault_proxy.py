"""A small fault-injecting HTTP reverse proxy on loopback, for retry tests.

``FaultProxy`` sits in front of an upstream base URL (normally the llama.cpp server started by the
``llama_server`` fixture) and applies one scripted fault per incoming request, then passes requests
through unchanged once the script is used up::

    with FaultProxy("http://127.0.0.1:8080/v1") as proxy:
        proxy.script(["429:retry-after=1", "500", "stall:5", "reset", "pass", "401"])
        client = OpenAI(base_url=proxy.base_url, api_key="x", max_retries=0)
        ...
        assert [r.fault for r in proxy.requests] == ["429:retry-after=1", "500", ...]

Fault grammar (one string per request; parts separated by ``:``):

``pass``
    forward to the upstream and relay its answer (method, path, query, headers, body).
``<status>``
    answer that HTTP status with a JSON error body and no upstream call; any of 400, 401, 403, 404,
    408, 409, 429, 500, 502, 503, 504 (any 4xx/5xx is accepted). Options:
    ``retry-after=N`` (a ``Retry-After: N`` header, seconds), ``retry-after-ms=N``
    (``retry-after-ms``, as OpenAI sends), ``quota`` (a 429 whose body says the quota is
    exhausted: OpenAI's ``insufficient_quota``), ``ratelimit-reset=N`` (Anthropic-style header).
``stall:S``
    read the request, send nothing for ``S`` seconds (meant to exceed the client's timeout), then
    close the connection without a response.
``reset``
    read the request, then close the socket with ``SO_LINGER 0`` so the client sees a TCP RST
    (``ConnectionResetError`` / ``httpx.ReadError``) instead of a response.
``close``
    read the request, then close the connection cleanly without a response (the client sees
    "server disconnected without sending a response").
``delay:S``
    wait ``S`` seconds, then pass through (slow but successful).
``slow:S``
    pass through, but send the upstream's body slowly: the status line and headers at once, then the body
    in :data:`SLOW_CHUNKS` pieces spread over ``S`` seconds (a slow or congested link). Each gap is
    ``S / SLOW_CHUNKS``, so a client whose read timeout is longer than a gap gets the whole answer late.

Error bodies have the shape ``{"type": "error", "error": {"type": ..., "message": ..., "code": ...}}``,
which both the OpenAI and the Anthropic SDKs parse.

Every request is recorded (:class:`RequestRecord`: monotonic time, method, path, fault applied,
status sent) so tests can assert attempt counts and the spacing between attempts (e.g. that a
``Retry-After`` was honoured). Script and records are guarded by one lock; records are bounded.
Stdlib only: ``http.server.ThreadingHTTPServer`` in a daemon thread, ``http.client`` upstream.
"""

from __future__ import annotations

import http.client
import json
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

__all__ = ["SLOW_CHUNKS", "Fault", "FaultProxy", "RequestRecord", "parse_fault"]

SLOW_CHUNKS = 8  # pieces a ``slow:S`` body is sent in

_HOP_BY_HOP = {
    "connection",
    "keep-alive",
    "proxy-authenticate",
    "proxy-authorization",
    "te",
    "trailer",
    "trailers",
    "transfer-encoding",
    "upgrade",
    "content-length",
    "host",
}

_ERROR_TYPES = {
    400: ("invalid_request_error", "Bad request (injected by FaultProxy)."),
    401: ("authentication_error", "Invalid API key (injected by FaultProxy)."),
    403: ("permission_error", "Forbidden (injected by FaultProxy)."),
    404: ("not_found_error", "Not found (injected by FaultProxy)."),
    408: ("timeout_error", "Request timeout (injected by FaultProxy)."),
    409: ("conflict_error", "Conflict (injected by FaultProxy)."),
    413: ("request_too_large", "Request too large (injected by FaultProxy)."),
    422: ("invalid_request_error", "Unprocessable entity (injected by FaultProxy)."),
    429: ("rate_limit_error", "Rate limit reached (injected by FaultProxy)."),
    500: ("api_error", "Internal server error (injected by FaultProxy)."),
    502: ("api_error", "Bad gateway (injected by FaultProxy)."),
    503: ("overloaded_error", "Service unavailable (injected by FaultProxy)."),
    504: ("api_error", "Gateway timeout (injected by FaultProxy)."),
    529: ("overloaded_error", "Overloaded (injected by FaultProxy)."),
}


@dataclass(frozen=True)
class Fault:
    """One parsed fault. ``kind`` is ``pass``, ``status``, ``stall``, ``reset``, ``close``, ``delay`` or ``slow``."""

    spec: str
    kind: str
    status: int | None = None
    seconds: float = 0.0
    headers: tuple[tuple[str, str], ...] = ()
    quota: bool = False


def parse_fault(spec: str | int | Fault) -> Fault:
    """Parse one fault string (see the module docstring); raises ``ValueError`` on anything unknown."""
    if isinstance(spec, Fault):
        return spec
    text = str(spec).strip()
    parts = [p.strip() for p in text.split(":")]
    head = parts[0].lower()
    opts = parts[1:]
    if head == "pass" and not opts:
        return Fault(text, "pass")
    if head in ("reset", "close") and not opts:
        return Fault(text, head)
    if head in ("stall", "delay", "slow"):
        if len(opts) != 1:
            raise ValueError(f"fault {text!r}: expected '{head}:SECONDS'")
        seconds = float(opts[0])
        if seconds < 0:
            raise ValueError(f"fault {text!r}: seconds must be >= 0")
        return Fault(text, head, seconds=seconds)
    if head.isdigit():
        status = int(head)
        if not 400 <= status <= 599:
            raise ValueError(f"fault {text!r}: status must be 4xx or 5xx")
        headers: list[tuple[str, str]] = []
        quota = False
        for opt in opts:
            key, _, value = opt.partition("=")
            key = key.lower()
            if key == "retry-after" and value:
                headers.append(("Retry-After", value))
            elif key == "retry-after-ms" and value:
                headers.append(("retry-after-ms", value))
            elif key == "ratelimit-reset" and value:
                headers.append(("anthropic-ratelimit-requests-reset", value))
            elif key == "quota" and not value:
                quota = True
            else:
                raise ValueError(f"fault {text!r}: unknown option {opt!r}")
        return Fault(text, "status", status=status, headers=tuple(headers), quota=quota)
    raise ValueError(
        f"unknown fault {text!r}: use pass, <4xx|5xx>[:retry-after=N][:quota], stall:S, reset, close, delay:S, slow:S"
    )


@dataclass
class RequestRecord:
    """One request the proxy saw, recorded on arrival (before the fault is carried out).

    ``t`` is ``time.monotonic()`` at arrival; ``status`` is what the client was sent (``None`` for
    stall/reset/close, and while the request is still being handled); ``done`` turns true when the
    handler finished (for a stall: after the stall). ``FaultProxy.requests`` returns copies.
    """

    index: int
    t: float
    method: str
    path: str
    fault: str
    status: int | None
    duration: float | None = None
    body: bytes = field(repr=False, default=b"")
    done: bool = False
    headers: dict = field(repr=False, default_factory=dict)  # request headers, names lower-cased

    def json(self):
        """The request body parsed as JSON, or ``None``."""
        try:
            return json.loads(self.body)
        except ValueError:
            return None


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 64

    def __init__(self, proxy: FaultProxy) -> None:
        self.proxy = proxy
        super().__init__(("127.0.0.1", 0), _Handler)

    def process_request(self, request, client_address):  # track sockets so stop() can close them
        self.proxy._track(request, True)
        super().process_request(request, client_address)

    def shutdown_request(self, request):
        self.proxy._track(request, False)
        super().shutdown_request(request)

    def handle_error(self, request, client_address):  # keep test output quiet on client disconnects
        pass


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server
    _record: RequestRecord | None = None  # the request being handled (keep-alive: one at a time)

    def log_message(self, format, *args):  # noqa: A002 - silence the default stderr log
        pass

    def _read_body(self) -> bytes:
        length = self.headers.get("Content-Length")
        if length is not None:
            return self.rfile.read(int(length)) if int(length) > 0 else b""
        if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
            chunks = []
            while True:
                size_line = self.rfile.readline(65537)
                size = int(size_line.split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline(65537) not in (b"\r\n", b"\n", b""):
                        pass
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline(65537)
            return b"".join(chunks)
        return b""

    def _handle(self) -> None:
        proxy = self.server.proxy
        t0 = time.monotonic()
        body = self._read_body()
        fault = proxy._next_fault()
        record = self._record = proxy._record(t0, self.command, self.path, fault.spec, body, self.headers)
        status: int | None = None
        try:
            if fault.kind == "pass":
                status = self._pass_through(body)
            elif fault.kind == "delay":
                proxy._stopping.wait(fault.seconds)
                status = self._pass_through(body)
            elif fault.kind == "slow":
                status = self._pass_through(body, spread_s=fault.seconds)
            elif fault.kind == "status":
                status = self._send_error(fault)
            elif fault.kind == "stall":
                proxy._stopping.wait(fault.seconds)
                self.close_connection = True
            elif fault.kind == "close":
                self.close_connection = True
            elif fault.kind == "reset":
                self._reset()
        finally:
            self._record = None
            proxy._finish(record, status, time.monotonic() - t0)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = do_OPTIONS = _handle

    def send_response(self, code, message=None):
        """Record the status *before* it goes out, so a client that has its answer never reads a
        record whose status is still ``None`` (the handler's ``_finish`` comes after the write)."""
        if self._record is not None:
            self.server.proxy._sent(self._record, code)
        super().send_response(code, message)

    def _send_error(self, fault: Fault) -> int:
        status = fault.status or 500
        err_type, message = _ERROR_TYPES.get(status, ("api_error", f"HTTP {status} (injected by FaultProxy)."))
        code: str | None = None
        if fault.quota:
            err_type = code = "insufficient_quota"
            message = "You exceeded your current quota, please check your plan and billing details (injected)."
        payload = {"type": "error", "error": {"type": err_type, "message": message, "code": code, "param": None}}
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("x-fault-proxy", fault.spec)
        for name, value in fault.headers:
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
        self.wfile.flush()
        return status

    def _reset(self) -> None:
        """Abort the connection with an RST: SO_LINGER on with a zero timeout, then close the fd."""
        self.close_connection = True
        sock = self.connection
        try:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        except OSError:
            pass
        # The rfile/wfile wrappers hold references to the socket; close them first so that
        # sock.close() really closes the descriptor now (and nothing sends a FIN before the RST).
        for f in (self.rfile, self.wfile):
            try:
                f.close()
            except OSError:
                pass
        try:
            sock.close()
        except OSError:
            pass

    def _pass_through(self, body: bytes, spread_s: float = 0.0) -> int | None:
        proxy = self.server.proxy
        headers = {k: v for k, v in self.headers.items() if k.lower() not in _HOP_BY_HOP}
        headers["Host"] = f"{proxy._up_host}:{proxy._up_port}"
        headers["Accept-Encoding"] = "identity"
        if body or self.command in ("POST", "PUT", "PATCH"):
            headers["Content-Length"] = str(len(body))
        conn = http.client.HTTPConnection(proxy._up_host, proxy._up_port, timeout=proxy.upstream_timeout)
        try:
            conn.request(self.command, self.path, body=body if body else None, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
            status = resp.status
            resp_headers = [(k, v) for k, v in resp.getheaders() if k.lower() not in _HOP_BY_HOP]
        except (OSError, http.client.HTTPException) as exc:
            data = json.dumps(
                {"type": "error", "error": {"type": "api_error", "message": f"FaultProxy upstream error: {exc}"}}
            ).encode()
            status = 502
            resp_headers = [("Content-Type", "application/json")]
        finally:
            conn.close()
        self.send_response(status)
        for name, value in resp_headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self._write_body(data, spread_s)
        self.wfile.flush()
        return status

    def _write_body(self, data: bytes, spread_s: float) -> None:
        """Write ``data`` at once, or (``slow:S``) in :data:`SLOW_CHUNKS` pieces with ``S / SLOW_CHUNKS`` between them."""
        if spread_s <= 0:
            self.wfile.write(data)
            return
        size = max(1, -(-len(data) // SLOW_CHUNKS))
        for start in range(0, len(data), size):
            if start and self.server.proxy._stopping.wait(spread_s / SLOW_CHUNKS):
                return
            self.wfile.write(data[start : start + size])
            self.wfile.flush()


class FaultProxy:
    """Reverse proxy on ``127.0.0.1:<free port>`` in front of ``upstream`` with scripted faults.

    ``base_url`` mirrors the upstream's path, so ``FaultProxy("http://127.0.0.1:8080/v1").base_url``
    is ``http://127.0.0.1:<port>/v1`` and paths are forwarded verbatim.
    ``default`` is the fault applied once the script is used up (``"pass"`` unless set).
    """

    def __init__(
        self, upstream: str, *, default: str = "pass", max_records: int = 10_000, upstream_timeout: float = 300.0
    ) -> None:
        parts = urlsplit(upstream)
        if parts.scheme != "http" or not parts.hostname:
            raise ValueError(f"FaultProxy upstream must be an http:// URL, got {upstream!r}")
        if parts.hostname not in ("127.0.0.1", "localhost", "::1"):
            raise ValueError(f"FaultProxy only proxies to loopback, got {parts.hostname!r}")
        self.upstream = upstream.rstrip("/")
        self._up_host = parts.hostname
        self._up_port = parts.port or 80
        self._up_path = parts.path.rstrip("/")
        self.upstream_timeout = upstream_timeout
        self._lock = threading.Lock()
        self._script: deque[Fault] = deque()
        self._default = parse_fault(default)
        self._records: deque[RequestRecord] = deque(maxlen=max_records)
        self._count = 0
        self._cond = threading.Condition(self._lock)
        self._stopping = threading.Event()
        self._sockets: set[socket.socket] = set()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ------------------------------------------------------------------------------
    def start(self) -> FaultProxy:
        if self._server is not None:
            return self
        self._stopping.clear()
        self._server = _Server(self)
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, name="FaultProxy", daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, wake stalled handlers and close every open connection. Idempotent."""
        server, self._server = self._server, None
        if server is None:
            return
        self._stopping.set()
        server.shutdown()
        with self._lock:
            sockets = list(self._sockets)
            self._sockets.clear()
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
            self._thread = None

    def __enter__(self) -> FaultProxy:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise RuntimeError("FaultProxy is not running")
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>`` plus the upstream's path (e.g. ``/v1``)."""
        return f"http://127.0.0.1:{self.port}{self._up_path}"

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # -- script ---------------------------------------------------------------------------------
    def script(self, faults: Iterable[str | int | Fault], *, default: str | None = None) -> FaultProxy:
        """Replace the pending script (validated up front); optionally change the after-script default."""
        parsed = [parse_fault(f) for f in faults]
        with self._lock:
            self._script = deque(parsed)
            if default is not None:
                self._default = parse_fault(default)
        return self

    def extend(self, faults: Iterable[str | int | Fault]) -> FaultProxy:
        parsed = [parse_fault(f) for f in faults]
        with self._lock:
            self._script.extend(parsed)
        return self

    def set_default(self, fault: str) -> FaultProxy:
        """Fault applied once the script is exhausted, e.g. ``"503"`` to fail every further request."""
        parsed = parse_fault(fault)
        with self._lock:
            self._default = parsed
        return self

    @property
    def pending(self) -> list[str]:
        with self._lock:
            return [f.spec for f in self._script]

    def reset(self) -> None:
        """Forget the script and the records; the default goes back to ``pass``."""
        with self._lock:
            self._script.clear()
            self._records.clear()
            self._count = 0
            self._default = parse_fault("pass")

    def _next_fault(self) -> Fault:
        with self._lock:
            return self._script.popleft() if self._script else self._default

    # -- records --------------------------------------------------------------------------------
    def _record(self, t0, method, path, fault, body, headers) -> RequestRecord:
        hdrs = {k.lower(): v for k, v in headers.items()}
        with self._cond:
            record = RequestRecord(self._count, t0, method, path, fault, None, None, body, headers=hdrs)
            self._records.append(record)
            self._count += 1
            self._cond.notify_all()
            return record

    def _sent(self, record: RequestRecord, status: int) -> None:
        with self._cond:
            record.status = status

    def _finish(self, record: RequestRecord, status, duration) -> None:
        with self._cond:
            record.status = status
            record.duration = duration
            record.done = True
            self._cond.notify_all()

    def _track(self, sock, add: bool) -> None:
        with self._lock:
            if add:
                self._sockets.add(sock)
            else:
                self._sockets.discard(sock)

    @property
    def requests(self) -> list[RequestRecord]:
        """Every recorded request so far, oldest first (bounded by ``max_records``)."""
        with self._lock:
            return [replace(r, headers=dict(r.headers)) for r in self._records]

    @property
    def count(self) -> int:
        """Total requests seen (not bounded)."""
        with self._lock:
            return self._count

    def faults_applied(self) -> list[str]:
        return [r.fault for r in self.requests]

    def gaps(self) -> list[float]:
        """Seconds between consecutive request arrivals (to check backoff / Retry-After)."""
        times = [r.t for r in self.requests]
        return [b - a for a, b in zip(times, times[1:])]

    def wait_for(self, n: int, timeout: float = 10.0, *, done: bool = False) -> bool:
        """Block until at least ``n`` requests have arrived (and, with ``done``, every recorded one
        has been fully handled); ``False`` on timeout."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while self._count < n or (done and not all(r.done for r in self._records)):
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)
            return True

    def __repr__(self) -> str:
        where = self.base_url if self._server else "stopped"
        return f"<FaultProxy {where} -> {self.upstream}>"
