"""Every judging method on one fixed SummEval subset with the embedded local model.

For each method, every summary of the first ``--docs`` documents (16 systems each) is judged on one
criterion and compared with the human scores: sample-level Spearman (000 App. B: within each document
across systems, averaged over documents; constant groups skipped and counted) and the pooled
summary-level figure. ``pairwise`` ranks each document's 16 summaries by comparative assessment (004:
win ratio over a symmetric partial matrix of ``--budget`` comparisons per document, both orders each).

    .venv/bin/python benchmarks/methods_bench.py --docs 4 --criterion coherence

Predictions go to ``--out`` (resumable: a re-run judges only what is missing) and a disk cache in
``--out/cache``; the summary table is printed as JSON lines and written to ``--out/summary.jsonl``.
Skips cleanly when ``../shared/data`` is absent.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from judgesdk.core import Criterion
from judgesdk.judging import Judge
from judgesdk.meta import HumanRecord, MetaEvalResult, evaluate, load_dataset, predictions_path, run_criterion, select, shared_data_dir
from judgesdk.prompting import criterion as preset
from judgesdk.provider import CachedProvider, open_cache
from judgesdk.providers import LlamaCppProvider
from judgesdk.records import append, done_ids

SCORE_METHODS = ("geval", "direct", "sampling", "rts", "mcq", "likelihood", "synthetic", "fusion")
# Kept small so the whole table runs in well under an hour on 2 cores; the papers' settings are in
# each scorer's docstring (000: 5 rungs; 003: k = 8; 002: 20 samples; 001: rationales up to 256 tokens).
OPTIONS = {"synthetic": {"rungs": 3}, "fusion": {"k": 4}, "rts": {"max_tokens": 96}}
SAMPLES = 8


def judge_for(provider, method: str) -> Judge:
    from judgesdk.estimation import EstimationSettings

    return Judge(provider, method=method if method != "pairwise" else "geval",
                 settings=EstimationSettings(samples=SAMPLES), method_options=OPTIONS.get(method, {}))  # fmt: skip


def run_pairwise(judge: Judge, records: list[HumanRecord], crit: Criterion, budget: int, path: Path) -> None:
    """Win ratios of each document's outputs from a symmetric partial comparison matrix (004 §3.4)."""
    done = done_ids(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as sink:
        for doc in dict.fromkeys(r.doc_id for r in records):
            group = [r for r in records if r.doc_id == doc]
            if all(f"{r.doc_id}::{r.system_id}" in done for r in group):
                continue
            ranking = judge.rank([r.output for r in group], source=group[0].source, criterion=crit,
                                 strategy="symmetric", budget=budget)  # fmt: skip
            for record, score in zip(group, ranking.scores):
                append(sink, {"id": f"{record.doc_id}::{record.system_id}", "doc_id": record.doc_id,
                              "system_id": record.system_id, "score": score,
                              "status": "ok" if score is not None else "unparsed"})  # fmt: skip


def summary_row(method: str, result: MetaEvalResult, seconds: float) -> dict:
    levels = {(lv.correlation.level, lv.correlation.method): lv.correlation for lv in result.levels}
    sample, pooled = levels[("sample", "spearman")], levels[("summary", "spearman")]
    join = result.counts.join
    return {
        "method": method,
        "sample_spearman": None if sample.value is None else round(sample.value, 3),
        "summary_spearman": None if pooled.value is None else round(pooled.value, 3),
        "items": join.n_joined,
        "unparsed": join.n_unparsed,
        "docs_skipped": sum(sample.skipped.values()) if sample.skipped else 0,
        "seconds": round(seconds, 1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=4)
    parser.add_argument("--criterion", default="coherence")
    parser.add_argument("--methods", default=",".join((*SCORE_METHODS, "pairwise")))
    parser.add_argument("--budget", type=int, default=48, help="comparisons per document for pairwise (full: 240)")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/out/methods"))
    args = parser.parse_args(argv)
    if shared_data_dir() is None:
        print("skipped: ../shared/data not found (set JUDGESDK_SHARED_DATA)", file=sys.stderr)
        return 0
    records = select(load_dataset("summeval"), docs=args.docs)
    crit = preset("summeval", args.criterion)
    provider = CachedProvider(LlamaCppProvider.from_options(), open_cache(args.out / "cache"))
    rows = []
    for method in args.methods.split(","):
        path = predictions_path(args.out, "summeval", crit.name, method)
        started = time.perf_counter()
        judge = judge_for(provider, method)
        if method == "pairwise":
            run_pairwise(judge, records, crit, args.budget, path)
        else:
            run_criterion(judge, records, crit, method, path)
        rows.append(summary_row(method, evaluate(records, crit, path), time.perf_counter() - started))
        print(json.dumps(rows[-1]), flush=True)
    with (args.out / "summary.jsonl").open("w", encoding="utf-8") as sink:
        for row in rows:
            sink.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
