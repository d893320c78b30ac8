"""Decision models as judges, both ways (issue 26): calls per item, and what serving costs over the judge itself.

1. **Calls per item, 4 SummEval criteria.** The same items judged on coherence, consistency, fluency and
   relevance (fine-grained, as ``judgesdk score --preset summeval`` does) two ways, counting the requests that
   reach the model server:
   * the decision path: judgesdk's ``systemone`` provider against ``judgesdk serve`` (the embedded judge), one
     decision request per item with a question per criterion; counted by the server (``GET /health``);
   * today's logprob path: ``geval`` through the openai adapter on ``python -m llama_cpp.server`` (top-20
     logprobs on its chat API), one prompt per criterion; counted from the results' ``usage.calls``
     (``on_low_coverage = "flag"``: the logprob request alone, no fallback to sampling).
2. **Serving overhead.** Items with 4 questions each, judged by the embedded judge (the fused judge's level
   distributions, no cache anywhere) at concurrency C = 1, 8, 32, in rounds: each round a new batch of max(N, C) items
   judged twice, by
   * the judge's own call in this process: ``Judge.ascore_many`` (concurrency C), wall time / N;
   * the server: the same items sent as ``POST /v1/systemone`` by C concurrent clients to ``judgesdk serve
     --concurrency C`` (its own process, its own copy of the model), wall time / N; requests per second and
     the p50/p95 latency of the requests;
   the two in alternating order round by round, after one untimed warm-up item each, so that a change of
   load hits both. Overhead = served / own time per item - 1, median over rounds (the bar: <= 5 %); the
   1-minute load average is read at each round.

    nice -n 10 .venv/bin/python benchmarks/decisions_serve.py --calls-items 8 --items 8 --rounds 2 --concurrency 1 8 32

Writes ``benchmarks/out/decisions_serve.json``. Never contacts anything but 127.0.0.1.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))  # support.servers, support.serve_process

CRITERIA = ("coherence", "consistency", "fluency", "relevance")


def items(n: int, skip: int = 0) -> list[Any]:
    from judgesdk.meta import load_dataset, natural

    records = [natural(r) for r in load_dataset("summeval")]
    return records[skip : skip + n]


def load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def serve_process(*args: str, cache: Path) -> Any:
    from support.serve_process import JudgesdkServe

    server = JudgesdkServe(*args, env={"JUDGESDK_NO_CACHE": "1"}, cache=cache)
    return server.start()


def state(record: Any) -> dict[str, Any]:
    return {"output": record.output, "source": record.source, "doc_id": record.doc_id, "system_id": record.system_id}


def systemone_body(criteria: list[Any]) -> dict[str, Any]:
    from judgesdk.providers import question_body
    from judgesdk.scorers import question_for

    return {name: question_body(question_for(c)) for name, c in zip(CRITERIA, criteria)}


# -- 1. calls per item ------------------------------------------------------------------------------------


def calls_per_item(n: int, workdir: Path) -> dict[str, Any]:
    from judgesdk.judging import Judge
    from judgesdk.prompting import criterion

    from support.servers import LlamaServer, embedded_gguf_path

    criteria = [criterion("summeval", name) for name in CRITERIA]
    chosen = items(n)
    found: dict[str, Any] = {"items": n, "criteria": list(CRITERIA)}
    server = serve_process("--concurrency", "4", cache=workdir / "cache-calls")
    try:
        before = sum(server.health()["served"].values())
        config: dict[str, Any] = {"providers": [{"kind": "systemone", "model": "judgesdk", "base_url": server.origin}], "cache": {"enabled": False}}
        with Judge.from_config(config) as judge:
            results = judge.score_many([{"output": r.output, "source": r.source} for r in chosen], criterion=criteria)
        served = sum(server.health()["served"].values()) - before
        found["decision"] = {"requests_at_server": served, "per_item": served / n, "statuses": sorted({r.status for r in results})}
    finally:
        server.cleanup()
    llama = LlamaServer(embedded_gguf_path())
    try:
        llama.start()
        config = {
            "providers": [{"kind": "openai", "model": llama.model, "base_url": llama.base_url, "api": "chat", "timeout_s": 900,
                           "capabilities": {"logprobs": True, "max_top_logprobs": 20}}],
            "method": "geval", "cache": {"enabled": False}, "estimation": {"on_low_coverage": "flag"},
            "concurrency": 1,  # llama.cpp's server computes one request at a time: queued requests would time out under load
        }  # fmt: skip
        with Judge.from_config(config) as judge:
            results = judge.score_many([{"output": r.output, "source": r.source} for r in chosen], criterion=criteria)
        calls = sum(r.usage.calls for r in results)
        found["logprobs"] = {
            "calls": calls, "per_item": calls / n, "calls_each_item": [r.usage.calls for r in results], "methods": sorted({p.method for r in results for p in (r.parts or {}).values()}),
            "statuses": sorted({r.status for r in results}), "errors": sorted({r.error for r in results if r.error})[:3],
        }  # fmt: skip
    finally:
        llama.cleanup()
    return found


# -- 2. serving overhead ---------------------------------------------------------------------------------


async def own_run(judge: Any, chosen: list[Any], criteria: list[Any], concurrency: int) -> float:
    judge.concurrency = concurrency
    started = time.perf_counter()
    results = await judge.ascore_many([{"output": r.output, "source": r.source, "id": f"{r.doc_id}:{r.system_id}"} for r in chosen], criterion=criteria)
    wall = time.perf_counter() - started
    assert all(r.status == "ok" for r in results), sorted({r.status for r in results})
    return wall


async def served_run(origin: str, chosen: list[Any], questions: dict[str, Any], concurrency: int) -> tuple[float, list[float]]:
    import httpx

    gate = asyncio.Semaphore(concurrency)
    latencies: list[float] = []
    async with httpx.AsyncClient(timeout=3600, limits=httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)) as client:

        async def one(record: Any) -> None:
            async with gate:
                started = time.perf_counter()
                answer = await client.post(f"{origin}/v1/systemone", json={"model": "judgesdk", "state": state(record), "questions": questions})
                latencies.append(time.perf_counter() - started)
                assert answer.status_code == 200 and len(answer.json()["answers"]) == len(questions), answer.text[:300]

        started = time.perf_counter()
        await asyncio.gather(*(one(r) for r in chosen))
        return time.perf_counter() - started, latencies


def percentile(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1] if len(values) > 1 else values[0]


def overhead(n: int, levels: list[int], rounds: int, workdir: Path) -> list[dict[str, Any]]:
    """Per C: ``rounds`` rounds, each the same new batch of items judged by the judge in this process, then by the
    server (the order alternating round by round), so that a change of load hits both; medians over rounds."""
    from judgesdk.judging import Judge
    from judgesdk.prompting import criterion

    criteria = [criterion("summeval", name) for name in CRITERIA]
    questions = systemone_body(criteria)
    config = {"providers": [{"kind": "local"}], "method": "auto", "method_options": {"fused_levels": True}, "cache": {"enabled": False}}
    warm = items(1, skip=1500)
    rows = []
    judge = Judge.from_config(config)
    try:
        judge.run(own_run(judge, warm, criteria, 1))  # the model loaded, the code warm
        for c in levels:
            server = serve_process("--concurrency", str(c), "--queue", str(max(64, c)), cache=workdir / f"cache-{c}")
            try:
                asyncio.run(served_run(server.origin, warm, questions, 1))
                own_times, served_times, latencies, loads = [], [], [], []
                for r in range(rounds):
                    size = max(n, c)  # at least C items, so that C requests are in flight
                    batch = items(size, skip=100 * (1 + levels.index(c)) + r * size)  # items no other round judged
                    loads.append(load()[0])
                    for which in (("own", "served") if r % 2 == 0 else ("served", "own")):
                        if which == "own":
                            own_times.append(judge.run(own_run(judge, batch, criteria, c)) / size)
                        else:
                            wall, seen = asyncio.run(served_run(server.origin, batch, questions, c))
                            served_times.append(wall / size)
                            latencies += seen
                    print(json.dumps({"concurrency": c, "round": r, "own_s_per_item": own_times[-1], "served_s_per_item": served_times[-1], "load1": loads[-1]}), flush=True)
                loads.append(load()[0])
            finally:
                server.cleanup()
            ratios = [s_ / o for s_, o in zip(served_times, own_times)]
            row = {
                "concurrency": c, "items_per_round": max(n, c), "rounds": rounds, "questions_per_item": len(CRITERIA),
                "own_s_per_item": statistics.median(own_times), "served_s_per_item": statistics.median(served_times),
                "served_rps": 1.0 / statistics.median(served_times), "p50_s": percentile(latencies, 50), "p95_s": percentile(latencies, 95),
                "overhead_median": statistics.median(ratios) - 1.0, "overhead_per_round": [round(x - 1.0, 4) for x in ratios],
                "own_per_round": own_times, "served_per_round": served_times, "load1_per_round": loads,
            }  # fmt: skip
            print(json.dumps(row), flush=True)
            rows.append(row)
    finally:
        judge.close()
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--items", type=int, default=8, help="items per round of the overhead runs")
    parser.add_argument("--rounds", type=int, default=2, help="rounds per concurrency (own and served alternate)")
    parser.add_argument("--calls-items", type=int, default=8, help="items for the calls-per-item count (0: skip it)")
    parser.add_argument("--concurrency", type=int, nargs="+", default=[1, 8, 32])
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "out" / "decisions_serve.json")
    args = parser.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    workdir = args.out.parent / "decisions_serve"
    workdir.mkdir(exist_ok=True)
    report: dict[str, Any] = {"cpus": os.cpu_count(), "load_at_start": load()}
    if args.calls_items:
        report["calls"] = calls_per_item(args.calls_items, workdir)
        print(json.dumps(report["calls"]), flush=True)
    if args.rounds:
        report["overhead"] = overhead(args.items, args.concurrency, args.rounds, workdir)
    report["load_at_end"] = load()
    args.out.write_text(json.dumps(report, indent=1) + "\n")
    print(f"written to {args.out}", file=sys.stderr)


if __name__ == "__main__":
    main()
