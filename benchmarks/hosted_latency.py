"""Hosted-API throughput at injected latency (issue 6, benchmark 2), against a loopback OpenAI-compatible server.

A tiny asyncio HTTP server (this file with ``--serve``, in its own process so it never competes with the
client for the GIL) answers ``POST .../v1/chat/completions`` with a fixed score and top-5 logprobs after
sleeping L seconds; L is part of the URL (``/lat/<L>/v1``), so one server serves every configuration.

1. **Wall vs ideal.** N = ``--rounds`` × C different items judged with ``geval`` (one logprobs request
   each) through the configured hosted stack (``Judge.from_config`` with ``[providers.rate_limit]
   max_concurrency = C``: coalescing over retry over rate limit over the OpenAI adapter; no cache),
   ``concurrency = C``: wall time vs the ideal N·L/C (N a multiple of C, so
   the ideal is reachable). Median of ``--repeats``.
   ``--clients`` sets how many adapter instances the rate limiter spreads requests over (0: one per 16
   in flight; see ``judgesdk.provider.layers.ratelimit.ProviderPool``). The same N requests are also sent from bare
   ``openai.AsyncOpenAI`` clients (as many, round robin) under a semaphore of C: the SDK's own ceiling.
2. **Per-call overhead.** At L = 0, one request at a time: the bare ``openai.AsyncOpenAI`` call, the same
   call through the judgesdk adapter and wrappers (``provider.generate``), and a whole ``judge.ascore``
   (template, estimation, distribution, result). Medians over ``--calls`` calls.

    .venv/bin/python benchmarks/hosted_latency.py --rounds 12 --latency 0.25 1.0 --concurrency 16 64

Never contacts anything but 127.0.0.1.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from support.latency_server import completion  # noqa: E402  (the same canned geval answer as the tests' server)

if TYPE_CHECKING:  # imported where used, at run time
    from judgesdk.core import JudgeItem
    from judgesdk.judging import Judge

# -- the server ------------------------------------------------------------------------------------


RECORDED: list[dict] = []  # request bodies sent to ``/rec/v1``, handed out (and forgotten) by ``POST /dump``


async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """HTTP/1.1 with keep-alive: read a request, sleep the URL's latency, answer; repeat until the client closes.
    ``/rec/v1/...`` answers at once and keeps the body, so the bare client can later send the very requests
    judgesdk sent; ``POST /dump`` returns the kept bodies."""
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            path = lines[0].split(" ")[1]
            headers = {k.strip().lower(): v.strip() for k, _, v in (line.partition(":") for line in lines[1:] if line)}
            body = json.loads(await reader.readexactly(int(headers.get("content-length", "0"))) or b"{}")
            parts = path.split("/")
            latency = float(parts[2]) if len(parts) > 2 and parts[1] == "lat" else 0.0
            if latency:
                await asyncio.sleep(latency)
            if len(parts) > 1 and parts[1] == "rec":
                RECORDED.append(body)
            if path == "/dump":
                data = json.dumps(RECORDED).encode()
                RECORDED.clear()
            else:
                data = completion(body)
            writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(data) + data)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        pass
    finally:
        writer.close()


async def serve(port_file: Path) -> None:
    server = await asyncio.start_server(handle, "127.0.0.1", 0, backlog=1024)
    port_file.write_text(str(server.sockets[0].getsockname()[1]))
    async with server:
        await server.serve_forever()


def start_server() -> tuple[subprocess.Popen, str]:
    port_file = Path(f"/tmp/judgesdk-hosted-bench-{os.getpid()}.port")
    port_file.unlink(missing_ok=True)
    proc = subprocess.Popen([sys.executable, __file__, "--serve", str(port_file)])
    deadline = time.monotonic() + 20
    while not port_file.exists() or not port_file.read_text():
        if time.monotonic() > deadline or proc.poll() is not None:
            proc.kill()
            raise RuntimeError("the loopback server did not start")
        time.sleep(0.05)
    origin = f"http://127.0.0.1:{port_file.read_text()}"
    port_file.unlink()
    return proc, origin


# -- the client ------------------------------------------------------------------------------------


def hosted_judge(base_url: str, concurrency: int, clients: int | None = None) -> Judge:
    """A judge from config, as a user would build it: coalescing over retry over the rate limit
    (``max_concurrency = C``, a pool of ``clients`` SDK clients) over the OpenAI adapter; no cache."""
    from judgesdk.judging import Judge

    os.environ.setdefault("JUDGESDK_BENCH_KEY", "loopback")
    limits = {"max_concurrency": concurrency, **({"clients": clients} if clients else {})}
    provider = {"kind": "openai", "model": "bench-model", "base_url": base_url, "api_key_env": "JUDGESDK_BENCH_KEY", "rate_limit": limits}
    return Judge.from_config({"providers": [provider], "cache": {"enabled": False}, "concurrency": concurrency})


def items(n: int, tag: str) -> list[JudgeItem]:
    from judgesdk.core import JudgeItem

    return [JudgeItem(output=f"Summary {tag}-{i}: the council approved the park.", source="The council met on Tuesday.") for i in range(n)]


def recorded_requests(origin: str, judged: list[JudgeItem], concurrency: int, clients: int | None) -> list[dict[str, Any]]:
    """The request bodies judgesdk sends for ``judged``, as the server received them (no latency), so the bare
    client's run sends the very same requests."""
    import urllib.request

    judge = hosted_judge(f"{origin}/rec/v1", concurrency, clients)
    judge.score_many(judged, criterion="coherence")
    judge.close()
    with urllib.request.urlopen(urllib.request.Request(f"{origin}/dump", data=b"{}", method="POST")) as answer:
        bodies = json.loads(answer.read())
    assert len(bodies) == len(judged), (len(bodies), len(judged))
    return bodies


def walls(origin: str, n: int, latency: float, concurrency: int, repeats: int, clients: int | None) -> dict[str, object]:
    """judgesdk's wall and the bare client's on the same N requests, interleaved repeat by repeat (so a change
    of load hits both alike): the judge built from config, then bare ``openai.AsyncOpenAI`` clients (as many
    as the judge's pool) sending the bodies judgesdk sent, C in flight."""
    count = clients or max(1, -(-concurrency // 16))
    ideal = n * latency / concurrency
    judged_walls, bare_walls = [], []
    for r in range(repeats):
        judged = items(n, f"{concurrency}-{r}")
        bodies = recorded_requests(origin, judged, concurrency, clients)
        judge = hosted_judge(f"{origin}/lat/{latency}/v1", concurrency, clients)  # providers built on its own loop
        judge.score_many(items(concurrency, f"warm-up-{r}"), criterion="coherence")  # C connections and imports, outside the timing, as for the bare client
        started = time.perf_counter()
        results = judge.score_many(judged, criterion="coherence")
        judged_walls.append(time.perf_counter() - started)
        judge.close()
        assert all(x.status == "ok" for x in results), {x.status for x in results}
        bare_walls.append(asyncio.run(bare_wall(origin, bodies, latency, concurrency, count)))

    def row(values: list[float]) -> dict[str, object]:
        wall = statistics.median(values)
        return {"wall_s_median": round(wall, 3), "walls": [round(w, 3) for w in values], "wall_over_ideal": round(wall / ideal, 3)}

    judged_row, bare_row = row(judged_walls), row(bare_walls)
    return {"n": n, "latency_s": latency, "concurrency": concurrency, "clients": count, "ideal_s": round(ideal, 3),
            "judgesdk": judged_row, "bare_openai": bare_row,
            "judgesdk_over_bare": round(float(judged_row["wall_s_median"]) / float(bare_row["wall_s_median"]), 3),  # type: ignore[arg-type]
            "load": os.getloadavg()}  # fmt: skip


async def bare_wall(origin: str, bodies: list[dict[str, Any]], latency: float, concurrency: int, clients: int) -> float:
    """``bodies`` from bare ``openai.AsyncOpenAI`` clients (round robin), C in flight: seconds."""
    import itertools

    import openai

    pool = [openai.AsyncOpenAI(base_url=f"{origin}/lat/{latency}/v1", api_key="loopback", max_retries=0) for _ in range(clients)]
    turn = itertools.cycle(pool)
    gate = asyncio.Semaphore(concurrency)

    async def one(body: dict[str, Any]) -> None:
        async with gate:
            await next(turn).chat.completions.create(**body)

    await asyncio.gather(*(one(bodies[i % len(bodies)]) for i in range(concurrency)))  # open the connections outside the timing
    started = time.perf_counter()
    await asyncio.gather(*(one(body) for body in bodies))
    wall = time.perf_counter() - started
    for client in pool:
        await client.close()
    return wall


async def per_call(origin: str, calls: int) -> dict[str, object]:
    import openai

    from judgesdk.provider import GenerateRequest, Message

    base_url = f"{origin}/v1"
    bare = openai.AsyncOpenAI(base_url=base_url, api_key="loopback", max_retries=0)
    stack_owner = hosted_judge(base_url, 1)
    stack = stack_owner.provider(0)  # the whole configured stack, called directly
    judge = hosted_judge(base_url, 1)
    body = {"model": "bench-model", "max_tokens": 8, "temperature": 0.0, "seed": 0, "logprobs": True, "top_logprobs": 5}

    async def bare_call(i: int) -> None:
        await bare.chat.completions.create(messages=[{"role": "user", "content": f"Rate item {i}."}], **body)  # type: ignore[call-overload]

    async def provider_call(i: int) -> None:
        await stack.generate(GenerateRequest(messages=(Message(role="user", content=f"Rate item {i}."),), max_tokens=8, top_logprobs=5, seed=0))

    async def judge_call(i: int) -> None:
        await judge.ascore(f"Summary {i}.", source="The council met.", criterion="coherence")

    timings: dict[str, list[float]] = {"bare_openai": [], "judgesdk_provider": [], "judgesdk_ascore": []}
    for i in range(calls + 5):  # interleaved, so load changes hit every variant alike; 5 warm-up rounds
        for name, call in (("bare_openai", bare_call), ("judgesdk_provider", provider_call), ("judgesdk_ascore", judge_call)):
            started = time.perf_counter()
            await call(i)
            if i >= 5:
                timings[name].append(time.perf_counter() - started)
    await bare.close()
    await stack_owner.aclose()
    await judge.aclose()
    medians = {name: statistics.median(values) * 1000 for name, values in timings.items()}
    return {
        "calls": calls,
        "median_ms": {k: round(v, 3) for k, v in medians.items()},
        "overhead_ms_provider_vs_bare": round(medians["judgesdk_provider"] - medians["bare_openai"], 3),
        "overhead_ms_ascore_vs_bare": round(medians["judgesdk_ascore"] - medians["bare_openai"], 3),
        "load": os.getloadavg(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--serve", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--rounds", type=int, default=12, help="N = rounds x concurrency requests")
    parser.add_argument("--latency", type=float, nargs="+", default=[0.25, 1.0])
    parser.add_argument("--concurrency", type=int, nargs="+", default=[16, 64])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--clients", type=int, nargs="+", default=[0], help="adapter instances per stack (0: auto, one per 16 in flight)")
    args = parser.parse_args()
    if args.serve:
        asyncio.run(serve(args.serve))
        return
    os.environ["NO_PROXY"] = os.environ["no_proxy"] = "127.0.0.1,localhost"
    proc, origin = start_server()
    try:
        report = {
            "load_start": os.getloadavg(),
            "wall_vs_ideal": [
                walls(origin, args.rounds * c, lat, c, args.repeats, k or None)
                for lat in args.latency for c in args.concurrency for k in args.clients
            ],
            "per_call_overhead": asyncio.run(per_call(origin, args.calls)),
        }
    finally:
        proc.terminate()
        proc.wait(timeout=10)
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
