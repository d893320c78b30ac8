"""A loopback OpenAI-compatible server that answers every chat completion after a fixed latency and counts the
requests in flight over time: what a hosted API looks like to the Ray engine's tests and benchmarks.

Runs in its own process (``LatencyServer()``: ``python latency_server.py --port-file F --latency L``), so the
clients under test never compete with it for a GIL. ``POST /v1/chat/completions`` answers "5" with top-5
logprobs (a geval judgement) after ``latency`` seconds; ``GET /events`` returns ``[[time, in_flight], ...]``,
one entry per request start and end (``time.time()``, comparable across processes on one machine),
``GET /count`` the number of completions answered, ``GET /busy`` ``{client port: seconds in flight}`` for each
request being answered now (which client process holds a permit: :func:`client_ports`); ``GET /v1/models`` an empty listing (not counted). A client that disconnects mid-request still counts until
its latency has passed (a real API finishes what it was sent). Binds 127.0.0.1 only.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import TypeVar

ANSWER = {"5": -0.05, "4": -3.2, "3": -4.5, "2": -6.0, "1": -7.0}


def completion(body: dict) -> bytes:
    top = [{"token": t, "logprob": lp, "bytes": None} for t, lp in ANSWER.items()]
    choice = {
        "index": 0, "message": {"role": "assistant", "content": "5"}, "finish_reason": "stop",
        "logprobs": {"content": [{"token": "5", "logprob": -0.05, "bytes": None, "top_logprobs": top}]} if body.get("logprobs") else None,
    }  # fmt: skip
    return json.dumps({
        "id": "chatcmpl-loopback", "object": "chat.completion", "created": 0, "model": body.get("model", ""),
        "choices": [choice], "usage": {"prompt_tokens": 100, "completion_tokens": 1, "total_tokens": 101},
    }).encode()  # fmt: skip


class _State:
    def __init__(self, latency: float) -> None:
        self.latency = latency
        self.in_flight = 0
        self.answered = 0
        self.events: list[tuple[float, int]] = []
        self.busy: dict[int, float] = {}  # client port -> when its request in flight started

    def moved(self, delta: int) -> None:
        self.in_flight += delta
        self.events.append((time.time(), self.in_flight))


async def read_request(reader: asyncio.StreamReader) -> tuple[str, str, bytes]:
    """One HTTP/1.1 request off a kept-alive connection: its method, path and body (``Content-Length`` bytes)."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, path = lines[0].split(" ")[:2]
    headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
    return method, path, await reader.readexactly(int(headers.get("content-length", "0")))


async def _handle(state: _State, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    peer = writer.get_extra_info("peername")[1]
    try:
        while True:
            method, path, raw = await read_request(reader)
            if method == "GET" and path == "/events":
                data = json.dumps(state.events).encode()
            elif method == "GET" and path == "/count":
                data = json.dumps(state.answered).encode()
            elif method == "GET" and path == "/busy":
                now = time.time()
                data = json.dumps({port: now - started for port, started in state.busy.items()}).encode()
            elif method == "GET" and path.endswith("/models"):  # a hosted API's listing (the openai provider asks once per
                data = json.dumps({"object": "list", "data": []}).encode()  # run, issue 29 item 3); names no model, not counted
            else:
                state.moved(+1)
                state.busy[peer] = time.time()
                try:
                    await asyncio.sleep(state.latency)
                finally:
                    state.moved(-1)
                    state.busy.pop(peer, None)
                state.answered += 1
                data = completion(json.loads(raw or b"{}"))
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(data) + data)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def _serve(port_file: Path, latency: float) -> None:
    state = _State(latency)
    server = await asyncio.start_server(lambda r, w: _handle(state, r, w), "127.0.0.1", 0, backlog=4096)
    port_file.write_text(str(server.sockets[0].getsockname()[1]))
    async with server:
        await server.serve_forever()


_Server = TypeVar("_Server", bound="ChildServer")


class ChildServer:
    """A loopback server in a child process (``_process``), stopped by :meth:`stop` or by leaving a ``with``."""

    _process: subprocess.Popen[bytes]
    origin: str
    base_url: str

    def _spawn(self, name: str, script: list[str]) -> None:
        """Start ``python script... --port-file F`` and wait until it has written its port to F (a 600 s ceiling, not
        a wait: tests/support/patience.py); ``origin`` and ``base_url`` then point at it."""
        port_file = Path(tempfile.mkdtemp(prefix=f"judgesdk-{name}-")) / "port"
        self._process = subprocess.Popen([sys.executable, *script, "--port-file", str(port_file)])
        deadline = time.monotonic() + 600
        while not (port_file.exists() and port_file.read_text()):
            if time.monotonic() > deadline or self._process.poll() is not None:
                self.stop()
                raise RuntimeError(f"the loopback {name} server did not start")
            time.sleep(0.05)
        self.origin = f"http://127.0.0.1:{port_file.read_text()}"
        self.base_url = self.origin + "/v1"

    def stop(self) -> None:
        if self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()

    def __enter__(self: _Server) -> _Server:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


class LatencyServer(ChildServer):
    """The server in a child process; ``base_url`` for the openai provider, :meth:`events`, :meth:`stop`."""

    def __init__(self, latency: float = 0.05) -> None:
        self._spawn("latency", [__file__, "--latency", str(latency)])

    def _get(self, path: str):  # type: ignore[no-untyped-def]
        with urllib.request.urlopen(self.origin + path, timeout=30) as answer:
            return json.loads(answer.read())

    def events(self) -> list[tuple[float, int]]:
        return [(t, n) for t, n in self._get("/events")]

    def answered(self) -> int:
        return int(self._get("/count"))

    def busy(self) -> dict[int, float]:
        """``{client port: seconds its request has been in flight}`` for the requests being answered now."""
        return {int(port): age for port, age in self._get("/busy").items()}

    @property
    def port(self) -> int:
        return int(self.origin.rsplit(":", 1)[1])


def client_ports(pid: int, server_port: int) -> set[int]:
    """The local ports of process ``pid``'s TCP connections to ``127.0.0.1:server_port`` (Linux: its socket inodes
    from ``/proc/PID/fd``, matched in ``/proc/net/tcp``); empty if the process is gone."""
    inodes = set()
    try:
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            try:
                target = os.readlink(fd)
            except OSError:
                continue
            if target.startswith("socket:["):
                inodes.add(target[8:-1])
    except OSError:
        return set()
    ports = set()
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        fields = line.split()
        local, remote, inode = fields[1], fields[2], fields[9]
        if inode in inodes and int(remote.split(":")[1], 16) == server_port:
            ports.add(int(local.split(":")[1], 16))
    return ports


def in_flight_at(events: list[tuple[float, int]], when: float) -> int:
    """Requests in flight at time ``when`` (the last event at or before it)."""
    level = 0
    for t, n in events:
        if t > when:
            break
        level = n
    return level


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--latency", type=float, default=0.05)
    args = parser.parse_args()
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    asyncio.run(_serve(Path(args.port_file), args.latency))
