"""Running ``judgesdk serve``: the judge opened, the record opened, uvicorn on the chosen address until SIGTERM.

The address is bound here, before uvicorn starts, so that a port in use or a host that does not resolve is one
:class:`ConfigError` line (exit 3), never a traceback. uvicorn serves through :mod:`judgesdk.serve.connections`
(a header deadline and a connection limit under ``ulimit -n``) on asyncio's own event loop, whose accept loop takes
at most the listen backlog per wake-up; anything the loop would report with a traceback is one rate-limited line.

uvicorn stops accepting connections on SIGTERM (or SIGINT) and waits up to ``grace_s`` for requests in flight;
the service answers 503 to any request that still reaches it meanwhile, and to any still in flight when the grace
ends (in the route's error schema, before uvicorn would cancel it), and the judge and the results file are closed
once uvicorn has stopped, so every answer given was recorded. A server that could not record some judgement
(``--record`` on a full disk, or removed and not recreatable) exits 1 with a line saying so.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import socket
import sys
import time
from typing import Any

from judgesdk.core import ConfigError
from judgesdk.provider import Budget
from judgesdk.serve.app import Service, api_key, build_app
from judgesdk.serve.backend import Backend
from judgesdk.serve.connections import KERNEL_QUEUE, ConnectionGuard, connection_limit, guarded_protocol, listen_backlog
from judgesdk.serve.record import Recorder, RecordUnavailable
from judgesdk.serve.settings import ServeSettings

__all__ = ["bind", "open_service", "serve"]

MAX_HEADER_BYTES = 16 * 1024  # a request header larger than this is refused (h11's own default, set explicitly)

log = logging.getLogger("judgesdk.serve")


def open_service(settings: ServeSettings) -> Service:
    """The judge, the record and the admission state of a server, opened (a :class:`ConfigError` or
    :class:`InputError` names what cannot be used, before anything listens)."""
    api_key(settings.api_key_env)  # unset or with whitespace around it: said before the judge (a model) is loaded
    budget = Budget(max_tokens=settings.max_tokens, max_usd=settings.max_usd) if settings.max_tokens or settings.max_usd else None
    backend = Backend.open(settings.config, allow_unfitted=settings.allow_unfitted, budget=budget)
    recorder = None
    try:
        recorder = Recorder(settings.record, backend.config) if settings.record is not None else None
        return Service(settings, backend, recorder)
    except BaseException:
        backend.judge.close()
        if recorder is not None:
            recorder.close()
        raise


def _access_log() -> None:
    """The access log on stderr, one line a request (``judgesdk.serve.access``; its lines hold no text and no key)."""
    access = logging.getLogger("judgesdk.serve.access")
    if not access.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s %(message)s"))
        access.addHandler(handler)
        access.setLevel(logging.INFO)
        access.propagate = False


def bind(host: str, port: int, backlog: int) -> socket.socket:
    """A listening socket on ``host``:``port`` (port 0: any free one) with ``backlog``; a one-line
    :class:`ConfigError` when the host does not resolve or the address cannot be taken."""
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except (socket.gaierror, UnicodeError) as exc:
        raise ConfigError(f"--host {host!r} does not resolve to an address of this machine ({exc}): give an IP address or a known name") from None
    family, kind, proto, _, address = sorted(found, key=lambda entry: entry[0] != socket.AF_INET)[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(backlog)
    except OSError as exc:
        sock.close()
        if exc.errno == errno.EADDRINUSE:
            raise ConfigError(f"port {port} on {host} is in use (another server?): stop it, or give another --port (0: any free one)") from None
        raise ConfigError(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    return sock


def _quiet_loop_errors(loop: asyncio.AbstractEventLoop) -> None:
    """What the event loop reports (e.g. ``accept()`` out of file descriptors) as one line, at most one a second:
    never a traceback, never megabytes of them under a flood of connections."""
    last = [0.0]

    def handler(_: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        now = time.monotonic()
        if now - last[0] >= 1.0:
            last[0] = now
            exc = context.get("exception")
            log.warning("judgesdk serve: %s%s", context.get("message", "event loop error"), f": {exc}" if exc else "")

    loop.set_exception_handler(handler)


async def _keep_record(service: Service) -> None:
    """The record file checked every second, so a removed one is recreated (and locked) at once."""
    recorder = service.recorder
    while recorder is not None:
        await asyncio.sleep(1.0)
        try:
            recorder.check()
        except RecordUnavailable:
            pass  # counted; every judged request is answered 503 until it can be recreated


def _server(service: Service, settings: ServeSettings, guard: ConnectionGuard, backlog: int) -> Any:
    """The uvicorn server of ``service``: guarded connections, SIGTERM handed to the service's grace."""
    import uvicorn

    class _Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:  # SIGTERM/SIGINT: answer 503 from now on, let in-flight finish
            service.stop_after(settings.grace_s)
            super().handle_exit(sig, frame)
            # uvicorn re-raises a captured signal once it has shut down, which would end the process before the judge
            # and the record are closed: stop as a finished run instead (exit 0), the signal having been honoured
            self._captured_signals.clear()

    config = uvicorn.Config(
        build_app(service), access_log=False, log_level="warning", lifespan="off", server_header=False,
        http=guarded_protocol(guard), backlog=backlog, h11_max_incomplete_event_size=MAX_HEADER_BYTES,
        timeout_keep_alive=5,
        # past the grace the service itself answers 503 (Service.stop_after); uvicorn cancels only what is left a
        # second later. uvicorn annotates this int but hands it to asyncio.wait_for(timeout=), which takes a float
        timeout_graceful_shutdown=settings.grace_s + 1.0,  # type: ignore[arg-type]
    )  # fmt: skip
    return _Server(config)


def serve(settings: ServeSettings, *, ready: Any = None) -> int:
    """Serve until SIGTERM/SIGINT; 0 once stopped cleanly. ``ready(port)`` is called once it listens.

    ``settings``: what to serve and where (host, port, the judge config, limits, the grace period on SIGTERM);
    ``ready``: a callable given the port actually bound (port 0 picks a free one), or None. On a signal new
    requests get 503 while those in flight finish (503 too past the grace), then the judge and the record are
    closed. Returns the exit code: 0 once stopped cleanly, 1 when some served judgement could not be recorded.
    A port in use or a host that does not resolve is a :class:`ConfigError`."""
    backlog = listen_backlog()
    sock = bind(settings.host, settings.port, backlog)
    try:
        service = open_service(settings)
    except BaseException:
        sock.close()
        raise
    if not settings.loopback:  # said once the address is taken (an address that cannot be is one line, alone)
        who = "callers need the key in $" + settings.api_key_env if settings.api_key_env else "anyone who reaches it can use it: set --api-key-env"
        print(f"judgesdk serve: listening on {settings.host}, reachable from other machines; {who}", file=sys.stderr)
    guard = ConnectionGuard(settings.max_connections or connection_limit(settings.concurrency), settings.header_timeout_s)
    service.connections = guard
    _access_log()
    server = _server(service, settings, guard, backlog)

    async def main() -> None:
        service.start()
        _quiet_loop_errors(asyncio.get_running_loop())
        keeper = asyncio.ensure_future(_keep_record(service))
        task = asyncio.ensure_future(server.serve(sockets=[sock]))
        while not server.started and not task.done():
            await asyncio.sleep(0.05)
        if server.started:
            sock.listen(KERNEL_QUEUE)  # asyncio set the kernel's queue to the accept burst: a long queue, small bursts
            port = sock.getsockname()[1]
            print(f"judgesdk serve: {settings.name} on http://{settings.host}:{port} (POST /v1/decisions, /v1/systemone)", file=sys.stderr, flush=True)
            if ready is not None:
                ready(port)
        try:
            await task
        finally:
            keeper.cancel()
            await service.backend.close()

    try:
        asyncio.run(main())
    finally:
        sock.close()
        if service.recorder is not None:
            service.recorder.close()
    return _exit_code(service)


def _exit_code(service: Service) -> int:
    recorder = service.recorder
    if recorder is not None and recorder.failures:
        print(f"judgesdk serve: {recorder.failures} served judgement(s) were not recorded to {recorder.path}: {recorder.problem}", file=sys.stderr, flush=True)
        return 1
    return 0
