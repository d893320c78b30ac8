"""How much a local score moves with batching (issue 12, item 15): the same SummEval summaries judged six
times on the embedded model (concurrency 1 and 4, in file order and reversed, prefix reuse off, and label
requests one per decode instead of grouped as parallel sequences); the largest difference from the first
run, per run.

    python benchmarks/reproducibility.py auto consistency 2                  # METHOD CRITERIA DOCUMENTS
    python benchmarks/reproducibility.py geval coherence,consistency,fluency,relevance 2 direct.likert.shared_criteria
                                                                             # ... [TEMPLATE]
"""
from __future__ import annotations

import json
import sys
import time
from typing import Any

from judgesdk import Criterion
from judgesdk.judging import Judge
from judgesdk.meta import shared_data_dir
from judgesdk.prompting import criterion
from judgesdk.providers import LlamaCppProvider, embedded_model_path, embedded_sha256


def run(
    items: list[dict[str, str]], method: str, crits: list[Criterion], conc: int, order: str, template: str | None, **opts: object
) -> tuple[dict[tuple[str | None, str], float | None], float, Any]:
    prov = LlamaCppProvider(embedded_model_path(), model_name="gemma3-270m-q4_k_m", model_sha256=embedded_sha256(), **opts)
    seq = items if order == "fwd" else items[::-1]
    t = time.perf_counter()
    chosen: dict[str, Any] = {"template": template} if template else {}
    with Judge(prov, method=method, concurrency=conc, **chosen) as j:
        res = j.score_many(seq, criterion=crits if len(crits) > 1 else crits[0])
    scores: dict[tuple[str | None, str], float | None] = {}
    for r in res:
        for name, part in (r.parts or {"": r}).items():
            scores[(r.item_id, name)] = part.score
    return scores, time.perf_counter() - t, prov.counters


def main() -> None:
    method = sys.argv[1]
    crits = [criterion("summeval", name) for name in sys.argv[2].split(",")]
    ndocs = int(sys.argv[3]) if len(sys.argv) > 3 else 2
    template = sys.argv[4] if len(sys.argv) > 4 else None
    data = shared_data_dir()
    if data is None:
        sys.exit("shared data not found (../shared/data): nothing to measure")
    rows = [json.loads(line) for line in (data / "summeval.jsonl").read_text().splitlines()]
    docs: list[str] = []
    for r in rows:
        if r["doc_id"] not in docs:
            docs.append(r["doc_id"])
    chosen = docs[:ndocs]
    items = [{"id": f'{r["doc_id"][-8:]}:{r["system_id"]}', "output": r["output"], "source": r["source"]} for r in rows if r["doc_id"] in chosen]
    items = [it for it in items if it["id"].split(":")[1] in ("M11", "M13", "M1", "M14", "M15", "M8")]

    modes: dict[str, tuple[int, str, dict[str, object]]] = {
        "c1": (1, "fwd", {}),
        "c4": (4, "fwd", {}),
        "c4rev": (4, "rev", {}),
        "noreuse": (1, "fwd", {"prefix_reuse": False}),
        "c1rev": (1, "rev", {}),
        "c4 one per decode": (4, "fwd", {"parallel_suffixes": 1}),
    }
    out = {}
    for name, (c, o, opts) in modes.items():
        out[name], dt, counters = run(items, method, crits, c, o, template, **opts)
        print(f"{name}: {dt:.1f}s, {counters.tokens_evaluated} tokens evaluated, {counters.batched_requests} requests in parallel decodes", flush=True)
    base = out["c1"]
    for name, sc in out.items():
        diffs = [abs(a - b) for k in base if (a := sc[k]) is not None and (b := base[k]) is not None]
        print(name, "max |diff| vs c1:", f"{max(diffs):.4f}", "n", len(diffs))


if __name__ == "__main__":
    main()
