"""Hosted runs at the provider's pace (issue 46, item 1): the judge's default item pace against fixed concurrencies.

N SummEval items (``--items``, default 200), ``geval`` with logprobs (one request each), judged through the
configured hosted stack (``Judge.from_config``: the openai adapter, coalescing, retry, overload guard; no cache,
no rate limit) against a loopback OpenAI-compatible server in its own process (``tests/support/quota_server.py``)
answering after ``--latency`` seconds (default 0.2).

1. **Latency.** The same run with no ``concurrency`` configured (the pace: ``judgesdk.judging.pace.Pace``) and with
   each fixed ``--fixed`` concurrency, interleaved repeat by repeat (a change of load hits all alike); figure: the
   pace's median wall over the best fixed median (done when <= 1.2).
2. **Quota.** The pace against a server that answers 429 above ``--quota`` (default 8) requests in flight; figure:
   requests the server received over items (done when <= 1.1), with the 429s and the most answered at once. A
   fixed concurrency above the quota is shown beside it for scale.

    .venv/bin/python benchmarks/adaptive_concurrency.py --items 200 --latency 0.2 --fixed 4 16 32 64 --repeats 3

Never contacts anything but 127.0.0.1.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from judgesdk.core import JudgeItem  # noqa: E402

from support.quota_server import QuotaServer  # noqa: E402


def summeval_items(n: int) -> tuple[list[JudgeItem], Any]:
    """The first ``n`` SummEval summaries and the coherence criterion."""
    import math

    from judgesdk.meta import item_of, load_dataset, select
    from judgesdk.prompting import criteria_for

    records = select(load_dataset("summeval"), docs=math.ceil(n / 16))[:n]
    criterion = next(c for c in criteria_for("summeval") if c.name == "coherence")
    return [item_of(r) for r in records], criterion


def config(base_url: str, concurrency: int | None) -> dict[str, Any]:
    """A hosted judge's config as a user writes it; ``concurrency`` None leaves it unset (the pace)."""
    os.environ.setdefault("JUDGESDK_BENCH_KEY", "loopback")
    provider = {"kind": "openai", "model": "bench-model", "base_url": base_url, "api_key_env": "JUDGESDK_BENCH_KEY"}
    data: dict[str, Any] = {"providers": [provider], "cache": {"enabled": False}, "method": "geval"}
    if concurrency is not None:
        data["concurrency"] = concurrency
    return data


def one_run(base_url: str, concurrency: int | None, items: list[JudgeItem], criterion: Any) -> tuple[float, int]:
    """Seconds to judge ``items`` on a fresh judge (after a one-item warm-up: imports and the first connection),
    and how many results are ``ok``."""
    from judgesdk.judging import Judge

    os.environ.pop("JUDGESDK_CONCURRENCY", None)
    with Judge.from_config(config(base_url, concurrency)) as judge:
        judge.score_many(items[:1], criterion=criterion)
        started = time.perf_counter()
        results = judge.score_many(items, criterion=criterion)
        wall = time.perf_counter() - started
    return wall, sum(r.status == "ok" for r in results)


def latency_table(
    items: list[JudgeItem], criterion: Any, latency: float, fixed: list[int], repeats: int
) -> dict[str, Any]:
    names = ["pace", *(f"fixed_{c}" for c in fixed)]
    walls: dict[str, list[float]] = {name: [] for name in names}
    most = 0
    with QuotaServer(latency=latency) as server:
        for r in range(repeats):
            for name, concurrency in zip(names, [None, *fixed], strict=True):
                wall, ok = one_run(server.base_url, concurrency, items, criterion)
                assert ok == len(items), (name, ok)
                walls[name].append(wall)
                if r == 0 and concurrency is None:  # the server's first run: its peak is the pace's
                    most = server.stats()["max_in_flight"]
    medians = {name: statistics.median(values) for name, values in walls.items()}
    best = min((medians[f"fixed_{c}"], c) for c in fixed)
    return {
        "items": len(items), "latency_s": latency, "repeats": repeats,
        "wall_s_median": {name: round(value, 3) for name, value in medians.items()},
        "walls": {name: [round(w, 3) for w in values] for name, values in walls.items()},
        "best_fixed": best[1],
        "pace_over_best_fixed": round(medians["pace"] / best[0], 3),
        "server_max_in_flight_seen": most,
        "load": os.getloadavg(),
    }  # fmt: skip


def quota_table(items: list[JudgeItem], criterion: Any, latency: float, quota: int, over: int) -> dict[str, Any]:
    rows = {}
    for name, concurrency in (("pace", None), (f"fixed_{over}", over)):
        with QuotaServer(latency=latency, quota=quota) as server:
            wall, ok = one_run(server.base_url, concurrency, items, criterion)
            stats = server.stats()
        sent = stats["requests"] - 1  # less the warm-up item's request
        rows[name] = {
            "wall_s": round(wall, 3), "ok": ok, "requests": sent, "rejected_429": stats["rejected"],
            "requests_over_items": round(sent / len(items), 3), "server_max_in_flight": stats["max_in_flight"],
        }  # fmt: skip
    return {"items": len(items), "latency_s": latency, "quota": quota, "runs": rows, "load": os.getloadavg()}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--fixed", type=int, nargs="+", default=[4, 16, 32, 64])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--quota", type=int, default=8)
    args = parser.parse_args()
    os.environ["NO_PROXY"] = os.environ["no_proxy"] = "127.0.0.1,localhost"
    items, criterion = summeval_items(args.items)
    report = {
        "load_start": os.getloadavg(),
        "latency": latency_table(items, criterion, args.latency, args.fixed, args.repeats),
        "quota": quota_table(items, criterion, args.latency, args.quota, over=max(args.fixed)),
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
