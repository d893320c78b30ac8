"""Cold vs warm cache: the same workload judged twice with the embedded local model.

The cold run starts with an empty cache directory (and so loads the model); the warm run uses a new
Judge over the same directory, so every call is served from disk and the model is never loaded.

    python benchmarks/cache_cold_warm.py [--items N] [--repeats R]

With ``--repeats R`` the pair of runs is repeated R times, each on a fresh cache directory, and the
medians are reported with every run's figures and the load average.

Reads SummEval from ../shared/data when present (first N items), else examples/summaries.jsonl.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

from judgesdk.core import JudgeItem
from judgesdk.judging import Judge
from judgesdk.prompting import criterion

REPO = Path(__file__).resolve().parents[1]


def load_items(n: int) -> tuple[list[JudgeItem], str]:
    shared = REPO.parent / "shared" / "data" / "summeval.jsonl"
    path = shared if shared.exists() else REPO / "examples" / "summaries.jsonl"
    items = []
    for line in path.read_text().splitlines()[:n]:
        raw = json.loads(line)
        items.append(JudgeItem(output=raw["output"], source=raw["source"], id=str(raw.get("id") or raw.get("item_index"))))
    return items, str(path.relative_to(REPO.parent))


def timed_run(cache_dir: str, items: list[JudgeItem]) -> tuple[float, int]:
    config = {"providers": [{"kind": "local"}], "cache": {"directory": cache_dir}}
    started = time.perf_counter()
    with Judge.from_config(config) as judge:
        results = judge.score_many(items, criterion=criterion("summeval", "consistency"))
    return time.perf_counter() - started, sum(r.cached for r in results)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=1)
    args = parser.parse_args()
    items, origin = load_items(args.items)
    colds, warms, hits = [], [], 0
    load_start = os.getloadavg()
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory() as cache_dir:
            cold, _ = timed_run(cache_dir, items)
            warm, hits = timed_run(cache_dir, items)
        colds.append(cold)
        warms.append(warm)
    cold, warm = statistics.median(colds), statistics.median(warms)
    print(json.dumps({
        "workload": f"{len(items)} items of {origin}, criterion consistency, method geval (exact)",
        "cold_s": round(cold, 3),
        "warm_s": round(warm, 4),
        "warm_cache_hits": hits,
        "speedup": round(cold / warm, 1),
        "runs": [{"cold_s": round(c, 3), "warm_s": round(w, 4)} for c, w in zip(colds, warms)],
        "load_start": load_start,
        "load_end": os.getloadavg(),
    }, indent=2))


if __name__ == "__main__":
    main()
