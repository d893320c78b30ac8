"""Cold vs warm cache: the same workload judged twice with the embedded local model.

The cold run starts with an empty cache directory (and so loads the model); the warm run uses a new
Judge over the same directory, so every call is served from disk and the model is never loaded.

    python benchmarks/cache_cold_warm.py [--items N]

Reads SummEval from ../shared/data when present (first N items), else examples/summaries.jsonl.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

from judgesdk.judge import Judge
from judgesdk.presets import criterion
from judgesdk.types import JudgeItem

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
    args = parser.parse_args()
    items, origin = load_items(args.items)
    with tempfile.TemporaryDirectory() as cache_dir:
        cold, _ = timed_run(cache_dir, items)
        warm, hits = timed_run(cache_dir, items)
    print(json.dumps({
        "workload": f"{len(items)} items of {origin}, criterion consistency, method geval (exact)",
        "cold_s": round(cold, 3),
        "warm_s": round(warm, 4),
        "warm_cache_hits": hits,
        "speedup": round(cold / warm, 1),
    }, indent=2))


if __name__ == "__main__":
    main()
