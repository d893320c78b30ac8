"""Compute the fused local judge's signals for every output of a shared benchmark (resumable).

    python benchmarks/fused_signals.py --dataset summeval [--docs N] [--out benchmarks/out/signals]
    python benchmarks/fused_signals.py --dataset topicalchat     # dialogue prompts, with the pass without the fact
    python benchmarks/fused_signals.py --dataset hanna           # story prompts

Writes one JSON line per output to ``<out>/<dataset>.jsonl``: ids, human scores, the raw evidence
(token log-probabilities, yes/no margins, text features, seconds per signal kind) and the derived
features. Text is put in natural form first (judgesdk.meta.natural). Each dataset is read with its task's
prompts (``--domain``, by default news for SummEval and NewsRoom, dialogue for TopicalChat, story for HANNA). Items are judged document by
document, one output at a time, on the embedded model with its default options, so the source is
evaluated once per document. A re-run skips outputs already in the file.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path

from judgesdk.fused.signals import QUESTIONS, extract, features
from judgesdk.meta.bench import item_of, select
from judgesdk.meta.datasets import load_dataset, shared_data_dir
from judgesdk.meta.natural import natural
from judgesdk.providers.llamacpp import LlamaCppProvider

DOMAIN_OF = {"summeval": "news", "newsroom": "news", "topicalchat": "dialogue", "hanna": "story"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", default="summeval")
    parser.add_argument("--docs", type=int, default=None)
    parser.add_argument("--out", default="benchmarks/out/signals")
    parser.add_argument("--no-reference", action="store_true")
    parser.add_argument("--no-questions", action="store_true", help="skip the yes/no questions")
    parser.add_argument("--raw-text", action="store_true", help="skip the natural-text view (to measure its effect)")
    parser.add_argument("--no-unconditional", action="store_true", help="skip the pass without the source (the shipped fit does not read it)")
    parser.add_argument("--domain", choices=["news", "dialogue", "story"], help="the task's prompts (default: by dataset)")
    args = parser.parse_args()
    domain = args.domain or DOMAIN_OF.get(args.dataset, "news")
    if shared_data_dir() is None:
        print("shared data not found (../shared/data): nothing to measure", file=sys.stderr)
        return 0
    records = select(load_dataset(args.dataset), docs=args.docs)
    if not args.raw_text:
        records = [natural(r) for r in records]
    path = Path(args.out) / f"{args.dataset}{'.raw' if args.raw_text else ''}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    done = set()
    if path.exists():
        done = {json.loads(line)["id"] for line in path.read_text().splitlines() if line.strip()}
    todo = [r for r in records if f"{r.doc_id}::{r.system_id}" not in done]
    print(f"{len(records)} outputs, {len(done)} done, {len(todo)} to go; load {os.getloadavg()}", flush=True)
    questions = not args.no_questions and domain == "news"
    return asyncio.run(run(todo, path, reference=not args.no_reference, questions=questions, unconditional=not args.no_unconditional, domain=domain))


async def run(todo, path: Path, *, reference: bool, questions: bool, unconditional: bool = True, domain: str = "news") -> int:  # type: ignore[no-untyped-def]
    provider = LlamaCppProvider.from_options()
    started = time.perf_counter()
    totals: dict[str, float] = {}
    with path.open("a", encoding="utf-8") as sink:
        for n, record in enumerate(todo, start=1):
            item = item_of(record)
            evidence = await extract(
                provider, item, reference=reference, questions=QUESTIONS if questions else (), unconditional=unconditional,
                domain=domain, without_context=domain == "dialogue",
            )  # fmt: skip
            for kind, seconds in evidence.seconds.items():
                totals[kind] = totals.get(kind, 0.0) + seconds
            line = {
                "id": item.id, "doc_id": record.doc_id, "system_id": record.system_id, "scores": record.scores,
                "features": features(evidence), "evidence": evidence.model_dump(mode="json"),
            }  # fmt: skip
            sink.write(json.dumps(line) + "\n")
            sink.flush()
            if n % 16 == 0 or n == len(todo):
                elapsed = time.perf_counter() - started
                print(f"{n}/{len(todo)} {elapsed:.0f}s ({elapsed / n:.2f}s/output) " + " ".join(f"{k}={v:.0f}s" for k, v in totals.items()), flush=True)
    counters = provider.counters.model_dump()
    await provider.aclose()
    print(json.dumps({"seconds": round(time.perf_counter() - started, 1), "per_kind_s": {k: round(v, 1) for k, v in totals.items()}, "counters": counters, "load": os.getloadavg()}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
