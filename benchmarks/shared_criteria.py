"""Fine-grained scoring of four SummEval criteria with two templates: speed and agreement with humans.

Every summary of the first ``--docs`` SummEval documents (16 systems each) is judged on coherence,
consistency, fluency and relevance (002 §4.1.2 fine-grained: one request per criterion, ``geval`` exact
label probabilities) by the embedded model, once per template, each on a fresh provider (no disk cache):

* ``direct.likert``: the SDK default; the criterion's definition comes before the source, so each
  criterion's prompt shares only the opening instructions with the others;
* ``direct.likert.shared_criteria``: every definition up front, the judged criterion only in the answer
  prefix, so an output's four prompts differ only in their last ~10 tokens.

For each: wall time, tokens evaluated (the provider's counters) and, per criterion, the sample-level
Spearman with the expert scores (000 App. B: within each document, averaged over documents).

    .venv/bin/python benchmarks/shared_criteria.py --docs 10 --out benchmarks/out/shared_criteria

Predictions go to ``--out/<template>.<criterion>.jsonl``; prints one JSON object.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path

from judgesdk.core import Criterion
from judgesdk.judging import Judge
from judgesdk.meta import HumanRecord, evaluate, item_of, load_dataset, select, shared_data_dir
from judgesdk.prompting import criterion as preset
from judgesdk.providers import LlamaCppProvider
from judgesdk.records import append, result_line

CRITERIA = ("coherence", "consistency", "fluency", "relevance")
TEMPLATES = ("direct.likert", "direct.likert.shared_criteria")


def run_template(template: str, records: list[HumanRecord], crits: list[Criterion], out: Path, concurrency: int) -> dict[str, object]:
    provider = LlamaCppProvider.from_options()
    judge = Judge(provider, template=template, concurrency=concurrency)
    judge.score("Hello.", source="Hi.", criterion=crits[0])  # loads the model outside the timing
    provider.reset_counters()
    started = time.perf_counter()
    results = judge.score_many([item_of(r) for r in records], criterion=crits)
    wall = time.perf_counter() - started
    judge.close()
    asyncio.run(provider.aclose())
    out.mkdir(parents=True, exist_ok=True)
    row: dict[str, object] = {"wall_s": round(wall, 1), "load": " ".join(f"{x:.2f}" for x in os.getloadavg()),
                              "tokens_evaluated": provider.counters.tokens_evaluated,
                              "prompt_tokens": provider.counters.prompt_tokens}  # fmt: skip
    for crit in crits:
        path = out / f"{template}.{crit.name}.jsonl"
        path.unlink(missing_ok=True)
        with path.open("w", encoding="utf-8") as sink:
            for record, result in zip(records, results):
                key = {"id": f"{record.doc_id}::{record.system_id}", "doc_id": record.doc_id, "system_id": record.system_id}
                append(sink, {**result_line(result.parts[crit.name], key), **key})  # type: ignore[index]
        levels = {(lv.correlation.level, lv.correlation.method): lv.correlation for lv in evaluate(records, crit, path).levels}
        value = levels[("sample", "spearman")].value
        row[f"{crit.name}_sample_spearman"] = None if value is None else round(value, 3)
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--docs", type=int, default=10)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--out", type=Path, default=Path("benchmarks/out/shared_criteria"))
    args = parser.parse_args(argv)
    if shared_data_dir() is None:
        print("skipped: ../shared/data not found (set JUDGESDK_SHARED_DATA)", file=sys.stderr)
        return 0
    records = select(load_dataset("summeval"), docs=args.docs)
    crits = [preset("summeval", name) for name in CRITERIA]
    report = {"items": len(records), "criteria": list(CRITERIA), "load_start": " ".join(f"{x:.2f}" for x in os.getloadavg())}
    for template in TEMPLATES:
        report[template] = run_template(template, records, crits, args.out, args.concurrency)
        print(json.dumps({template: report[template]}), file=sys.stderr, flush=True)
    print(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
