"""Load and faults (issue 12, item 11): is every item judged once, by its own answer, under faults and overload?

Two cases, each judged through the configured stack (``Judge.from_config``: coalescing over cache (off here)
over retry over the overload guard over the OpenAI adapter) with every result written to a results file as
``judgesdk score -o`` writes it (``records.row_for`` into a locked ``records.Ledger``), then read back with
``records.read_rows``. Calls are counted at the adapter (one per HTTP request; the SDK's own retries are off).

``faults``
    N items through :class:`tests.fault_proxy.FaultProxy` in front of a scripted OpenAI-compatible upstream
    (:class:`tests.batch_server.BatchServer`). Each item's text carries its number; the upstream answers
    ``P("5") = f, P("1") = 1 - f`` with ``f`` derived from that number, so a ``geval`` score of ``1 + 4f``
    belongs to exactly one item and a misattributed row is caught. The proxy's script injects, on a seeded
    random ``--fault-rate`` of requests, equally often: 429 with Retry-After, 5xx (500/502/503 in turn),
    a stall past the client timeout, a TCP reset and a slow body.
``overload``
    ``python -m llama_cpp.server`` with the embedded model (``--logits_all true``, one request computed at a
    time), a ``--timeout`` client timeout and ``--concurrency`` items in flight: ``direct`` judgements of
    SummEval summaries (fluency, one request each, no logprobs: llama-cpp-python's logprobs cost seconds
    per request on this model, more than the timeout). ``--via-proxy`` puts a pass-through FaultProxy in
    between, which does not pass a client's disconnect on: the server then computes every abandoned
    request (directly, it skips queued requests whose client has gone).

Reported: items lost (no row), duplicated (more than one row), misattributed (a row's result names another
item, or, in ``faults``, its score is not its item's), completed (a final row: a score or ``unparsed``),
scored, calls per item, wall time, what the guard did (its stats), and, in ``overload``, ``alone_s``: the
median time of three items judged one at a time beforehand (what one request costs the server unloaded).
``--guard off`` runs without the overload guard (``overload.enabled = false``), as before it existed.

    .venv/bin/python benchmarks/fault_bench.py faults --items 500 --concurrency 16 --fault-rate 0.3
    .venv/bin/python benchmarks/fault_bench.py overload --items 50 --concurrency 16 --timeout 2 [--via-proxy]

Never contacts anything but 127.0.0.1.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import re
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from judgesdk.core import Criterion, JudgeItem, JudgeResult, Scale  # noqa: E402
from judgesdk.judging import (
    Judge,  # noqa: E402
    JudgeConfig,
    ask_for,
    load_config,
)
from judgesdk.provider import (  # noqa: E402
    GenerateRequest,
    GenerateResponse,
    Provider,
    ProviderConfig,  # noqa: E402
    WrapperProvider,
    bottom,  # noqa: E402
)
from judgesdk.records import Ledger, is_final, read_rows, row_for  # noqa: E402

from support.batch_server import BatchServer  # noqa: E402
from support.fault_proxy import FaultProxy  # noqa: E402

MARK = re.compile(r"\[item (\d+)\]")


class Counted(WrapperProvider):
    """Counts the calls that reach the adapter: one HTTP request each."""

    def __init__(self, inner: Provider) -> None:
        super().__init__(inner)
        self.calls = 0

    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        self.calls += 1
        return await self.inner.generate(request)


def share_of_five(number: int) -> float:
    """The probability the scripted upstream gives the answer "5" for item ``number`` (else "1"), in (0.05, 0.95)."""
    return 0.05 + 0.9 * ((number * 7919) % 1000) / 1000


def scripted_reply(body: dict) -> dict:
    text = " ".join(str(m.get("content", "")) for m in body.get("messages", []))
    found = MARK.findall(text)
    f = share_of_five(int(found[-1])) if found else 0.5
    return {"text": "5" if f >= 0.5 else "1", "top_logprobs": {"5": math.log(f), "1": math.log(1 - f)}}


def fault_script(requests: int, rate: float, stall_s: float, slow_s: float, seed: int) -> list[str]:
    """One fault (or ``pass``) per request, in arrival order: ``rate`` of them faults, the kinds equally often."""
    rng = random.Random(seed)
    statuses = ["500", "502", "503"]
    kinds: list[Callable[[int], str]] = [
        lambda i: "429:retry-after=1",
        lambda i: statuses[i % 3],
        lambda i: f"stall:{stall_s:g}",
        lambda i: "reset",
        lambda i: f"slow:{slow_s:g}",
    ]
    script = []
    for i in range(requests):
        script.append(kinds[rng.randrange(len(kinds))](i) if rng.random() < rate else "pass")
    return script


def judge_into(config: JudgeConfig, items: list[JudgeItem], criterion: Criterion, path: Path) -> tuple[int, float, int, dict[str, Any]]:
    """Judge ``items`` into the results file ``path`` as ``judgesdk score -o`` does: calls, wall seconds,
    errors that escaped ``score_many`` (none may), and what the overload guard did (where there is one)."""
    counters: list[Counted] = []

    def counted(source: ProviderConfig) -> Provider:  # each configured adapter (under its rate limit), counted
        counters.append(Counted(bottom(source)))
        return counters[-1]

    judge = Judge.from_config(config, adapters=[partial(counted, source) for source in config.providers])
    ask = ask_for(config, criterion)
    escaped = 0
    started = time.perf_counter()
    with Ledger.open(path) as ledger:

        def on_result(index: int, result: JudgeResult) -> None:
            ledger.write(row_for(result, items[index].id or "", ask))

        try:
            judge.score_many(items, criterion=criterion, on_result=on_result)
        except Exception as exc:  # noqa: BLE001 - counted and shown: nothing may escape the runner
            escaped += 1
            print(f"score_many raised {type(exc).__name__}: {exc}", file=sys.stderr)
        finally:
            wall = time.perf_counter() - started
            guard = _guard_stats(judge)
            judge.close()
    return sum(c.calls for c in counters), wall, escaped, guard


def _guard_stats(judge: Judge) -> dict[str, Any]:
    try:
        from judgesdk.provider import OverloadGuard
    except ImportError:  # a build from before the guard
        return {}
    from judgesdk.provider import find_layer

    layers = [find_layer(p, OverloadGuard) for p in judge.providers_in_use]
    return next((layer.stats.model_dump() for layer in layers if layer is not None), {})


def tally(path: Path, items: list[JudgeItem], expected: Callable[[str, dict[str, Any]], bool] | None = None) -> dict[str, Any]:
    """Lost, duplicated, misattributed, completed and scored items, from the results file itself."""
    rows, unreadable = read_rows(path)
    per_id = Counter(str(r["id"]) for r in rows)
    wanted = [item.id or "" for item in items]
    known = set(wanted)
    misattributed = [
        r for r in rows
        if str(r["id"]) not in known or r.get("item_id") != r["id"]
        or (expected is not None and r.get("score") is not None and not expected(str(r["id"]), r))
    ]  # fmt: skip
    final = {str(r["id"]) for r in rows if is_final(r)}
    return {
        "items": len(items),
        "rows": len(rows),
        "unreadable_lines": unreadable,
        "lost": sum(1 for i in wanted if per_id[i] == 0),
        "duplicated": sum(1 for i in wanted if per_id[i] > 1),
        "misattributed": len(misattributed),
        "completed": len(final & known),
        "scored": len({str(r["id"]) for r in rows if r.get("score") is not None} & known),
        "errors": Counter(str(r.get("error") or "")[:120] for r in rows if r.get("status") == "error").most_common(3),
    }


def with_guard(data: dict[str, Any], guard: str) -> dict[str, Any]:
    """``--guard off``: the overload guard disabled (where this build has one)."""
    if guard == "off" and "overload" in JudgeConfig.model_fields:
        data["overload"] = {"enabled": False}
    return data


def run_faults(args: argparse.Namespace) -> dict[str, Any]:
    text = "[item {n}] A short summary, number {n}, of a news story."
    items = [JudgeItem(id=f"item-{n:05d}", output=text.format(n=n), source=f"Story {n}.") for n in range(args.items)]
    criterion = Criterion(name="coherence", description="coherence", scale=Scale.likert(1, 5))

    def expected(item_id: str, row: dict[str, Any]) -> bool:
        return abs(float(row["score"]) - (1 + 4 * share_of_five(int(item_id.split("-")[1])))) < 1e-6

    script = fault_script(args.items * 4, args.fault_rate, args.stall, args.slow, args.seed)
    with BatchServer(scripted_reply) as upstream, FaultProxy(upstream.openai_base_url) as proxy:
        proxy.script(script)
        config = load_config(with_guard({
            "providers": [{"kind": "openai", "model": "scripted", "base_url": proxy.base_url, "api": "chat", "timeout_s": args.timeout}],
            "cache": {"enabled": False}, "method": "geval", "concurrency": args.concurrency,
        }, args.guard))  # fmt: skip
        path = args.out / f"faults.{args.guard}.jsonl"
        path.unlink(missing_ok=True)
        calls, wall, escaped, guard = judge_into(config, items, criterion, path)
        proxy.wait_for(proxy.count, timeout=args.stall + 5, done=True)
        applied = Counter(_kind(r.fault) for r in proxy.requests)
    report = tally(path, items, expected)
    faults = sum(n for kind, n in applied.items() if kind != "pass")
    return {
        **report, "case": "faults", "guard": args.guard, "concurrency": args.concurrency, "timeout_s": args.timeout,
        "calls": calls, "proxy_requests": sum(applied.values()), "calls_per_item": round(calls / len(items), 3),
        "faults_injected": faults, "fault_share": round(faults / max(sum(applied.values()), 1), 3),
        "faults_by_kind": dict(applied), "wall_s": round(wall, 1), "escaped": escaped, "guard_stats": guard,
    }  # fmt: skip


def _kind(spec: str) -> str:
    head = spec.split(":")[0]
    return "5xx" if head.isdigit() and head.startswith("5") else head


def run_overload(args: argparse.Namespace) -> dict[str, Any]:
    from judgesdk.meta import item_of, load_dataset, select
    from judgesdk.prompting import criteria_for

    from support.servers import LlamaServer, embedded_gguf_path

    records = select(load_dataset("summeval"), docs=math.ceil(args.items / 16))[: args.items]
    items = [item_of(r).model_copy(update={"source": None}) for r in records]  # fluency needs no source
    criterion = next(c for c in criteria_for("summeval") if c.name == "fluency")
    server = LlamaServer(embedded_gguf_path())
    try:
        server.start()
        proxy = FaultProxy(server.base_url).start() if args.via_proxy else None
        base_url = proxy.base_url if proxy is not None else server.base_url

        def config(timeout: float, concurrency: int) -> JudgeConfig:
            return load_config(with_guard({
                "providers": [{"kind": "openai", "model": server.model, "base_url": base_url, "api": "completions", "timeout_s": timeout}],
                "cache": {"enabled": False}, "method": "direct", "concurrency": concurrency,
            }, args.guard))  # fmt: skip

        judge_into(config(120, 1), items[:1], criterion, args.out / "overload.warmup.jsonl")  # the template's prefix
        alone = [judge_into(config(120, 1), [i], criterion, args.out / "overload.alone.jsonl")[1] for i in items[1:4]]
        path = args.out / f"overload.{args.guard}{'.proxy' if proxy else ''}.jsonl"
        path.unlink(missing_ok=True)
        load_before = os.getloadavg()[0]
        calls, wall, escaped, guard = judge_into(config(args.timeout, args.concurrency), items, criterion, path)
        load_after = os.getloadavg()[0]
        if proxy is not None:
            proxy.stop()
    finally:
        server.cleanup()
    return {
        **tally(path, items), "case": "overload", "guard": args.guard, "via_proxy": bool(args.via_proxy),
        "concurrency": args.concurrency, "timeout_s": args.timeout, "alone_s": round(sorted(alone)[1], 2),
        "calls": calls,
        "calls_per_item": round(calls / len(items), 3), "wall_s": round(wall, 1), "escaped": escaped,
        "load_1min": [round(load_before, 2), round(load_after, 2)], "guard_stats": guard,
    }  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("case", choices=["faults", "overload"])
    parser.add_argument("--items", type=int, default=None, help="items (faults: 500, overload: 50)")
    parser.add_argument("--concurrency", type=int, default=16, help="items in flight (the judge's concurrency)")
    parser.add_argument("--timeout", type=float, default=2.0, help="client timeout per request, seconds (timeout_s)")
    parser.add_argument("--fault-rate", type=float, default=0.3, help="faults: share of requests given a fault")
    parser.add_argument("--stall", type=float, default=3.0, help="faults: seconds a stall lasts (past the timeout)")
    parser.add_argument("--slow", type=float, default=1.0, help="faults: seconds a slow body takes")
    parser.add_argument("--seed", type=int, default=12)
    parser.add_argument("--via-proxy", action="store_true", help="overload: through a pass-through FaultProxy")
    parser.add_argument("--guard", choices=["on", "off"], default="on", help="the overload guard (overload.enabled)")
    parser.add_argument("--out", type=Path, default=Path(tempfile.gettempdir()) / "judgesdk-fault-bench")
    args = parser.parse_args(argv)
    args.items = args.items or (500 if args.case == "faults" else 50)
    args.out.mkdir(parents=True, exist_ok=True)
    report = run_faults(args) if args.case == "faults" else run_overload(args)
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
