"""Running ``judgesdk serve``: the judge opened, the record opened, uvicorn on the chosen address until SIGTERM.

uvicorn stops accepting connections on SIGTERM (or SIGINT) and waits up to ``grace_s`` for requests in flight;
the service answers 503 to any request that still reaches it meanwhile, and the judge and the results file
are closed once uvicorn has stopped, so every answer given was recorded.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
from typing import Any

from judgesdk.core import ConfigError
from judgesdk.provider import Budget
from judgesdk.serve.app import Service, build_app
from judgesdk.serve.backend import Backend
from judgesdk.serve.record import Recorder
from judgesdk.serve.settings import ServeSettings

__all__ = ["open_service", "serve"]

log = logging.getLogger("judgesdk.serve")


def open_service(settings: ServeSettings) -> Service:
    """The judge, the record and the admission state of a server, opened (a :class:`ConfigError` or
    :class:`InputError` names what cannot be used, before anything listens)."""
    if settings.api_key_env and not os.environ.get(settings.api_key_env):  # before the judge (a model) is loaded
        raise ConfigError(f"--api-key-env names {settings.api_key_env}, which is not set: export {settings.api_key_env}=<key>")
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


def serve(settings: ServeSettings, *, ready: Any = None) -> int:
    """Serve until SIGTERM/SIGINT; 0 once stopped cleanly. ``ready(port)`` is called once it listens.

    ``settings``: what to serve and where (host, port, the judge config, limits, the grace period on SIGTERM);
    ``ready``: a callable given the port actually bound (port 0 picks a free one), or None. On a signal new
    requests get 503 while those in flight finish, then the judge and the record are closed. Returns the exit
    code: 0 once stopped cleanly, 1 when the server never started listening (e.g. the port was taken)."""
    import uvicorn

    service = open_service(settings)
    app = build_app(service)
    _access_log()

    class _Server(uvicorn.Server):
        def handle_exit(self, sig: int, frame: Any) -> None:  # SIGTERM/SIGINT: answer 503 from now on, let in-flight finish
            service.draining = True
            super().handle_exit(sig, frame)
            # uvicorn re-raises a captured signal once it has shut down, which would end the process before the judge
            # and the record are closed: stop as a finished run instead (exit 0), the signal having been honoured
            self._captured_signals.clear()

    config = uvicorn.Config(
        app, host=settings.host, port=settings.port, access_log=False, log_level="warning", lifespan="off",
        # uvicorn annotates this int but only hands it to asyncio.wait_for(timeout=), which takes seconds as a float
        timeout_graceful_shutdown=settings.grace_s,  # type: ignore[arg-type]
        server_header=False,
    )  # fmt: skip
    server = _Server(config)

    async def main() -> None:
        task = asyncio.ensure_future(server.serve())
        while not server.started and not task.done():
            await asyncio.sleep(0.05)
        if server.started:
            port = server.servers[0].sockets[0].getsockname()[1] if server.servers else settings.port
            print(f"judgesdk serve: {settings.name} on http://{settings.host}:{port} (POST /v1/decisions, /v1/systemone)", file=sys.stderr, flush=True)
            if ready is not None:
                ready(port)
        try:
            await task
        finally:
            await service.backend.close()

    try:
        asyncio.run(main())
    finally:
        if service.recorder is not None:
            service.recorder.close()
    return 0 if server.started else 1
