"""A loopback OpenAI-compatible server with a quota on requests in flight: what a hosted API with a concurrency
limit looks like to the judge's item pace (``judgesdk.judging.pace.Pace``).

Runs in its own process (``QuotaServer(latency, quota)``: ``python quota_server.py --port-file F --latency L
--quota Q``), so the client under test never competes with it for a GIL. ``POST /v1/chat/completions`` answers "5"
with top-5 logprobs (the geval answer of :mod:`support.latency_server`) after ``latency`` seconds, or at once with a
429 (no Retry-After: the client's own back-off applies) when ``quota`` requests are already being answered (0: no
quota). ``GET /stats`` returns ``{"requests", "answered", "rejected", "max_in_flight"}``: every chat completion
received, those answered 200, those answered 429, and the most answered at once. Binds 127.0.0.1 only.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from support.latency_server import ChildServer, completion, read_request  # noqa: E402  (the same canned geval answer)

_ERROR = {"message": "too many requests in flight", "type": "rate_limit_error", "code": "rate_limit_exceeded"}
_REJECT = json.dumps({"error": _ERROR}).encode()


class _State:
    def __init__(self, latency: float, quota: int) -> None:
        self.latency = latency
        self.quota = quota
        self.in_flight = 0
        self.counts = {"requests": 0, "answered": 0, "rejected": 0, "max_in_flight": 0}


async def _handle(state: _State, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    try:
        while True:
            method, path, raw = await read_request(reader)
            status = b"200 OK"
            if method == "GET" and path == "/stats":
                data = json.dumps(state.counts).encode()
            elif method == "GET" and path.endswith("/models"):  # the openai provider's listing: not counted
                data = json.dumps({"object": "list", "data": []}).encode()
            else:
                state.counts["requests"] += 1
                if state.quota and state.in_flight >= state.quota:
                    state.counts["rejected"] += 1
                    status, data = b"429 Too Many Requests", _REJECT
                else:
                    state.in_flight += 1
                    state.counts["max_in_flight"] = max(state.counts["max_in_flight"], state.in_flight)
                    try:
                        await asyncio.sleep(state.latency)
                    finally:
                        state.in_flight -= 1
                    state.counts["answered"] += 1
                    data = completion(json.loads(raw or b"{}"))
            head = b"HTTP/1.1 " + status + b"\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(data)
            writer.write(head + data)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def _serve(port_file: Path, latency: float, quota: int) -> None:
    state = _State(latency, quota)
    server = await asyncio.start_server(lambda r, w: _handle(state, r, w), "127.0.0.1", 0, backlog=4096)
    port_file.write_text(str(server.sockets[0].getsockname()[1]))
    async with server:
        await server.serve_forever()


class QuotaServer(ChildServer):
    """The server in a child process: ``base_url`` for the openai provider, :meth:`stats`, :meth:`stop`."""

    def __init__(self, latency: float = 0.2, quota: int = 0) -> None:
        self._spawn("quota", [__file__, "--latency", str(latency), "--quota", str(quota)])

    def stats(self) -> dict[str, int]:
        """Chat completions received (``requests``), answered, rejected with a 429, and the most answered at once."""
        with urllib.request.urlopen(self.origin + "/stats", timeout=30) as answer:
            return {k: int(v) for k, v in json.loads(answer.read()).items()}


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--port-file", required=True)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--quota", type=int, default=0)
    args = parser.parse_args()
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    asyncio.run(_serve(Path(args.port_file), args.latency, args.quota))
