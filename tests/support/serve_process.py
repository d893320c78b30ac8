"""``judgesdk serve`` as a subprocess on 127.0.0.1, for tests/serve/ and the serve tests of tests/integration/, and a loopback
System One upstream that a test can hold (a judge behind the server whose answers come when the test says).

:class:`JudgesdkServe` runs the real command (``python -m judgesdk.cli.app serve ...``) with its own cache folder;
it is ready when ``GET /health`` answers 200, and :meth:`JudgesdkServe.health` reads the counters there. With
``nofile`` it runs under that ``ulimit -n``; with ``full_disk`` (a path), every write to a results file fails with
ENOSPC while that path exists (injected at the ledger's writer, the one place a row reaches the disk): a full disk
a test can fill and free.
:class:`HeldUpstream` answers System One requests (every question: the same distribution) and, while
``hold`` is set, keeps each request waiting until the test releases it, so that "one request in flight" is a
state a test reaches by waiting for it, never by timing.
"""

from __future__ import annotations

import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from judgesdk.core.types import Usage
from judgesdk.provider.decisions import DecisionAnswer
from judgesdk.providers import systemone_wire

from support.patience import CEILING_S, PROBE_S
from support.servers import LOOPBACK, ServerProcess, _child_env, _http_get

P5 = (0.1, 0.2, 0.4, 0.2, 0.1)

# ``python -c BOOT NOFILE FULL_DISK serve ...``: the serve command under a descriptor limit, with a full disk on demand
BOOT = """
import errno, os, resource, sys
nofile, full = int(sys.argv[1]), sys.argv[2]
if nofile:
    resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
if full:
    from judgesdk.records import ledger
    real = ledger._write_all
    def _write_all(handle, data):
        if os.path.exists(full):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(handle, data)
    ledger._write_all = _write_all
from judgesdk.cli.app import main
sys.exit(main(sys.argv[3:]))
"""


class JudgesdkServe(ServerProcess):
    name = "judgesdk-serve"

    def __init__(
        self, *args: str, env: dict[str, str] | None = None, cache: Path | None = None, startup_timeout: float = CEILING_S,
        nofile: int | None = None, full_disk: Path | None = None,
    ) -> None:  # fmt: skip
        super().__init__()
        self.args = list(args)
        self.nofile, self.full_disk = nofile, full_disk
        self.extra_env = dict(env or {})
        self.extra_env["JUDGESDK_CACHE_DIR"] = str(cache or self.workdir / "cache")
        self.startup_timeout = startup_timeout

    def command(self) -> list[str]:
        serve = ["serve", "--host", LOOPBACK, "--port", str(self.port), *self.args]
        if self.nofile is None and self.full_disk is None:
            return [sys.executable, "-m", "judgesdk.cli.app", *serve]
        return [sys.executable, "-c", BOOT, str(self.nofile or 0), os.fspath(self.full_disk or ""), *serve]

    def env(self) -> dict[str, str]:
        return _child_env(self.extra_env)

    def ready(self) -> bool:
        status, _ = _http_get(f"{self.origin}/health", timeout=PROBE_S)
        return status == 200

    @property
    def base_url(self) -> str:
        return f"{self.origin}/v1"

    def health(self) -> dict[str, Any]:
        _, body = _http_get(f"{self.origin}/health", timeout=CEILING_S)
        return json.loads(body)

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")


class _Upstream(BaseHTTPRequestHandler):
    server: HeldUpstream  # type: ignore[assignment]

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        upstream = self.server
        with upstream.lock:
            upstream.received += 1
        upstream.release.wait() if upstream.hold.is_set() else None
        _, request, _ = systemone_wire.read_request(body, max_questions=1000)
        answers = [
            DecisionAnswer(name=q.name, status="ok", probability=0.7) if q.type == "predicate" else DecisionAnswer(name=q.name, status="ok", probabilities=P5)
            for q in request.questions
        ]
        data = json.dumps(systemone_wire.response_body(request, answers, "upstream-1", Usage(input_tokens=10))).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


class HeldUpstream(ThreadingHTTPServer):
    """A System One server on 127.0.0.1 (see the module docstring); ``with HeldUpstream() as up: up.origin``."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__((LOOPBACK, 0), _Upstream)
        self.hold, self.release, self.lock = threading.Event(), threading.Event(), threading.Lock()
        self.received = 0

    @property
    def origin(self) -> str:
        return f"http://{LOOPBACK}:{self.server_address[1]}"

    def __enter__(self) -> HeldUpstream:
        threading.Thread(target=self.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self.shutdown()
        self.server_close()
