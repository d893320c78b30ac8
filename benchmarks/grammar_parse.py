"""Grammar-constrained generation (issue 11 item 5): how often direct, RTS and Fusion-Eval answers parse on
the embedded model with and without the verdict-format grammar, and what the parsed scores are worth.

For each method and each setting (``free``: grammar off; ``grammar``: answers constrained by
:mod:`judgesdk.estimation.grammars`, one repair on failure), every summary of the first ``--docs`` SummEval documents
is judged on one criterion. Per row: results that parsed (status ``ok``), for Fusion-Eval also the share of
its k predictions that parsed, repairs asked and how many of them parsed, how many distinct scores came
back (a grammar can force a parse and still say the same thing for every summary), Spearman with the mean
expert score within each document (undefined for a document whose predictions are constant), their mean
(sample-level, 000 App. B) and the pooled summary-level figure from ``judgesdk.meta.bench.evaluate``.

    .venv/bin/python benchmarks/grammar_parse.py --docs 4 --criterion coherence

Settings follow benchmarks/methods_bench.py (issue 4) so the ``free`` rows repeat that run: RTS answers up
to 96 tokens, Fusion-Eval k = 4 at T = 0.5 with all built-in assistants. Predictions go to ``--out``
(resumable) with a disk cache in ``--out/cache``; the table is printed and written to ``--out/summary.jsonl``.
Skips cleanly when ``../shared/data`` is absent.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

from judgesdk.core import Criterion
from judgesdk.judging import Judge
from judgesdk.meta import HumanRecord, correlate, evaluate, load_dataset, run_criterion, select, shared_data_dir
from judgesdk.prompting import criteria_for
from judgesdk.provider import CachedProvider, open_cache
from judgesdk.providers import LlamaCppProvider

METHODS = ("direct", "rts", "fusion")
OPTIONS = {"direct": {}, "rts": {"max_tokens": 96}, "fusion": {"k": 4}}  # as benchmarks/methods_bench.py


def summarise(method: str, setting: str, records: list[HumanRecord], crit: Criterion, path: Path, seconds: float) -> dict:
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    by_id = {line["id"]: line for line in lines}
    ok = [line for line in lines if line["status"] == "ok" and line["score"] is not None]
    formats = [line["details"]["answer_format"] for line in lines if "answer_format" in (line.get("details") or {})]
    row: dict = {
        "method": method,
        "setting": setting,
        "items": len(lines),
        "parsed": len(ok),
        "parse_rate": round(len(ok) / len(lines), 3) if lines else None,
        "constrained": len(formats),
        "repairs": sum(f["repairs"] for f in formats),
        "repaired": sum(f["repaired"] for f in formats),
        "distinct_scores": sorted({line["score"] for line in ok}),
    }
    if method == "fusion":  # k predictions per result: how many of them parsed
        dists = [line["distribution"] for line in lines if line.get("distribution")]
        k = OPTIONS["fusion"]["k"]
        parsed_predictions = sum(d["n_samples"] - d["n_unparsed"] for d in dists)
        row["prediction_parse_rate"] = round(parsed_predictions / (k * len(lines)), 3) if lines else None
    per_doc = {}
    for doc in dict.fromkeys(r.doc_id for r in records):
        pairs = [(by_id[i]["score"], r.scores[crit.name]) for r in records if r.doc_id == doc
                 and (i := f"{r.doc_id}::{r.system_id}") in by_id and by_id[i]["status"] == "ok"]  # fmt: skip
        found = correlate([p for p, _ in pairs], [h for _, h in pairs]) if len(pairs) > 1 else None
        per_doc[doc[-8:]] = None if found is None or found.value is None else round(found.value, 3)
    row["per_doc_spearman"] = per_doc
    defined = [v for v in per_doc.values() if v is not None]
    row["mean_doc_spearman"] = round(statistics.fmean(defined), 3) if defined else None
    row["docs_undefined"] = len(per_doc) - len(defined)
    result = evaluate(records, crit, path)
    levels = {(lv.correlation.level, lv.correlation.method): lv.correlation for lv in result.levels}
    for level in ("sample", "summary"):
        value = levels[(level, "spearman")].value
        row[f"{level}_spearman"] = None if value is None else round(value, 3)
    row["seconds"] = round(seconds, 1)
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=4)
    parser.add_argument("--criterion", default="coherence")
    parser.add_argument("--methods", default=",".join(METHODS))
    parser.add_argument("--settings", default="free,grammar", help="free (grammar off), grammar, or both")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/out/grammar"))
    args = parser.parse_args(argv)
    if shared_data_dir() is None:
        print("skipped: ../shared/data not found (set JUDGESDK_SHARED_DATA)", file=sys.stderr)
        return 0
    records = select(load_dataset("summeval"), docs=args.docs)
    crit = next(c for c in criteria_for("summeval") if c.name == args.criterion)
    local = LlamaCppProvider.from_options()
    provider = CachedProvider(local, open_cache(args.out / "cache"))
    rows = []
    for method in args.methods.split(","):
        for setting in args.settings.split(","):
            path = args.out / f"summeval.{crit.name}.{method}.{setting}.jsonl"
            judge = Judge(provider, method=method, method_options={**OPTIONS[method], "grammar": setting == "grammar"})
            started = time.perf_counter()
            run_criterion(judge, records, crit, method, path)
            rows.append(summarise(method, setting, records, crit, path, time.perf_counter() - started))
            print(json.dumps(rows[-1]), flush=True)
    with (args.out / "summary.jsonl").open("w", encoding="utf-8") as sink:
        for row in rows:
            sink.write(json.dumps(row) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
