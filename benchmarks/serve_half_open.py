"""``judgesdk serve`` under a flood of half-open connections (issue 41, item 4: "serve under attack").

Starts ``judgesdk serve`` (its judge a configured System One chain whose upstream is a loopback server in this
process: no hosted key, no model) under ``ulimit -n 1024`` (``--server-nofile``), raises this client's own
RLIMIT_NOFILE, opens ``--connections`` connections (default 2,000) that each send half a request header and stop,
then measures ``GET /health`` on a fresh connection (``--probes`` times: each must answer within 1 s) and the size
of the server's stderr, before and after ``--hold`` seconds of holding the flood. Done when every probe answers
200 within 1 s and stderr stays below 1 MB.

    .venv/bin/python benchmarks/serve_half_open.py --connections 2000 --server-nofile 1024

Never contacts anything but 127.0.0.1.
"""

from __future__ import annotations

import argparse
import os
import resource
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from support.serve_process import HeldUpstream  # noqa: E402
from support.servers import LOOPBACK, _child_env, free_port  # noqa: E402


def start_server(tmp: Path, upstream: str, port: int, nofile: int) -> tuple[subprocess.Popen[bytes], Path]:
    """``judgesdk serve`` under ``ulimit -n nofile`` (set in the child before it runs), its stderr to a file."""
    config = tmp / "upstream.toml"
    config.write_text(f'[[providers]]\nkind = "systemone"\nmodel = "jev"\nbase_url = "{upstream}"\n[cache]\nenabled = false\n')
    log = tmp / "serve.stderr"

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

    command = [sys.executable, "-m", "judgesdk.cli.app", "serve", "--config", str(config), "--host", LOOPBACK, "--port", str(port)]
    with open(log, "wb") as sink:
        proc = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=sink, env=_child_env({"JUDGESDK_CACHE_DIR": str(tmp / "cache")}), preexec_fn=limit)
    deadline = time.monotonic() + 300
    while probe(port, timeout=1.0)[0] != 200:
        if proc.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the server did not start: {log.read_text()[-2000:]}")
        time.sleep(0.2)
    return proc, log


def probe(port: int, timeout: float) -> tuple[int, float]:
    """``GET /health`` on a new connection: (status, or 0 when none came within ``timeout``; seconds taken)."""
    started = time.perf_counter()
    try:
        with socket.create_connection((LOOPBACK, port), timeout=timeout) as sock:
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            data = b""
            while b"\r\n" not in data:
                chunk = sock.recv(4096)
                if not chunk:
                    break
                data += chunk
        status = int(data.split(b" ", 2)[1]) if data.startswith(b"HTTP/") else 0
    except OSError:
        status = 0
    return status, time.perf_counter() - started


def flood(port: int, count: int) -> tuple[list[socket.socket], int]:
    """``count`` connections that send half a header and stop; (the sockets, how many connects failed)."""
    held, failed = [], 0
    for _ in range(count):
        try:
            sock = socket.create_connection((LOOPBACK, port), timeout=5)
            sock.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Half: ")
            held.append(sock)
        except OSError:
            failed += 1
    return held, failed


def measure(port: int, probes: int) -> list[tuple[int, float]]:
    return [probe(port, timeout=5.0) for _ in range(probes)]


def report(label: str, results: list[tuple[int, float]], log: Path) -> bool:
    slowest = max(seconds for _, seconds in results)
    ok = all(status == 200 and seconds < 1.0 for status, seconds in results)
    statuses = sorted({status for status, _ in results})
    print(f"{label}: /health statuses {statuses}, slowest {1000 * slowest:.0f} ms, stderr {log.stat().st_size} bytes")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--connections", type=int, default=2000)
    parser.add_argument("--server-nofile", type=int, default=1024)
    parser.add_argument("--probes", type=int, default=10)
    parser.add_argument("--hold", type=float, default=15.0, help="seconds to hold the flood before probing again")
    args = parser.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, args.connections + 256)), hard))
    print(f"client RLIMIT_NOFILE {resource.getrlimit(resource.RLIMIT_NOFILE)[0]}; server ulimit -n {args.server_nofile}")
    with tempfile.TemporaryDirectory() as name, HeldUpstream() as upstream:
        port = free_port()
        proc, log = start_server(Path(name), upstream.origin, port, args.server_nofile)
        held: list[socket.socket] = []
        try:
            ok = report("before the flood", measure(port, args.probes), log)
            started = time.perf_counter()
            held, failed = flood(port, args.connections)
            print(f"opened {len(held)} half-open connections in {time.perf_counter() - started:.1f} s ({failed} connects failed)")
            ok &= report("during the flood", measure(port, args.probes), log)
            time.sleep(args.hold)
            ok &= report(f"after holding it {args.hold:g} s", measure(port, args.probes), log)
            ok &= proc.poll() is None and log.stat().st_size < 1_000_000
        finally:
            for sock in held:
                sock.close()
            proc.terminate()
            proc.wait(timeout=60)
        tail = log.read_text(errors="replace").strip().splitlines()[-3:]
        print("server stderr ends:", *tail, sep="\n  ")
    print("PASS" if ok else "FAIL", "(every /health within 1 s, stderr < 1 MB, server alive)")
    return 0 if ok else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    raise SystemExit(main())
