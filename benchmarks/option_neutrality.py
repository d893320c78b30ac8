"""Whether a local provider option moves scores (issue 28 item 5): the same SummEval summaries judged on the embedded
model with the adapter's defaults and with one option changed at a time (n_batch, n_threads, n_threads_batch, n_ctx);
the largest score difference from the defaults' run, per option. An option that moves no score on this run is
declared answer-neutral by the local adapter (ProviderSpec.answer_neutral in providers/llamacpp/spec.py); one that moves any is part of the cache key.

    python benchmarks/option_neutrality.py geval coherence,consistency 2     # METHOD CRITERIA DOCUMENTS
    python benchmarks/option_neutrality.py geval coherence,consistency 2 "n_ctx 2048,n_ctx 8192"   # ... [VARIANTS]
"""
from __future__ import annotations

import json
import sys
import time

from judgesdk import Criterion
from judgesdk.judging import Judge
from judgesdk.meta import shared_data_dir
from judgesdk.prompting import criterion
from judgesdk.providers import LlamaCppProvider, embedded_model_path, embedded_sha256

VARIANTS = {
    "defaults (n_batch 512, n_threads all, n_ctx 4096)": {},
    "n_batch 64": {"n_batch": 64},
    "n_batch 136": {"n_batch": 136},
    "n_threads 1": {"n_threads": 1},
    "n_threads_batch 1": {"n_threads_batch": 1},
    "n_ctx 2048": {"n_ctx": 2048},
    "n_ctx 8192": {"n_ctx": 8192},
}


def run(items: list[dict[str, str]], method: str, crits: list[Criterion], **opts: object) -> tuple[dict[tuple[str | None, str], float | None], float]:
    prov = LlamaCppProvider(embedded_model_path(), model_name="gemma3-270m-q4_k_m", model_sha256=embedded_sha256(), **opts)
    started = time.perf_counter()
    with Judge(prov, method=method, concurrency=1) as judge:
        results = judge.score_many(items, criterion=crits if len(crits) > 1 else crits[0])
    scores: dict[tuple[str | None, str], float | None] = {}
    for r in results:
        for name, part in (r.parts or {"": r}).items():
            scores[(r.item_id, name)] = part.score
    return scores, time.perf_counter() - started


def main() -> None:
    method = sys.argv[1]
    crits = [criterion("summeval", name) for name in sys.argv[2].split(",")]
    ndocs = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    data = shared_data_dir()
    if data is None:
        sys.exit("shared data not found (../shared/data): nothing to measure")
    rows = [json.loads(line) for line in (data / "summeval.jsonl").read_text().splitlines()]
    docs: list[str] = []
    for r in rows:
        if r["doc_id"] not in docs:
            docs.append(r["doc_id"])
    items = [
        {"id": f'{r["doc_id"][-8:]}:{r["system_id"]}', "output": r["output"], "source": r["source"]}
        for r in rows
        if r["doc_id"] in docs[:ndocs] and r["system_id"] in ("M11", "M13", "M1", "M14", "M15", "M8")
    ]
    only = set(sys.argv[4].split(",")) if len(sys.argv) > 4 else set(VARIANTS)
    base = None
    for name, opts in VARIANTS.items():
        if base is not None and name not in only:  # the defaults' run is always first
            continue
        scores, seconds = run(items, method, crits, **opts)
        if base is None:
            base = scores
            print(f"{name}: {len(scores)} scores, {seconds:.1f}s", flush=True)
            continue
        diffs = [abs((scores[k] or 0.0) - (base[k] or 0.0)) for k in base]
        moved = sum(d > 0 for d in diffs)
        print(f"{name}: largest difference {max(diffs):.4f}, {moved} of {len(diffs)} scores moved, {seconds:.1f}s", flush=True)


if __name__ == "__main__":
    main()
