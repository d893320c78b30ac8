"""Compute the fused local judge's signals for every output of a shared benchmark (resumable).

    python benchmarks/fused_signals.py --dataset summeval [--docs N] [--out benchmarks/out/signals]
    python benchmarks/fused_signals.py --dataset topicalchat     # dialogue prompts, with the pass without the fact
    python benchmarks/fused_signals.py --dataset hanna           # story prompts
    python benchmarks/fused_signals.py --dataset hanna --sample-docs 40 --seed 27 --stop-at 23:45   # a seeded subsample, whole prompts

``--sample-docs N --seed S`` keeps N documents (prompts, contexts) drawn at random with that seed, every output
of each, and judges them document by document in the drawn order; ``--stop-at HH:MM`` (UTC) starts no new
document after that time, so a stopped run holds whole documents only (a re-run resumes).

Writes one JSON line per output to ``<out>/<dataset>.jsonl``: ids, human scores, the raw evidence
(token log-probabilities, yes/no margins, text features, seconds per signal kind) and the derived
features. Text is put in natural form first (judgesdk.meta.naturalize). Each dataset is read with its task's
prompts (``--domain``, by default news for SummEval and NewsRoom, dialogue for TopicalChat, story for HANNA). Items are judged document by
document, one output at a time, on the embedded model with its default options, so the source is
evaluated once per document. A re-run skips outputs already in the file.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import json
import os
import random
import sys
import time
from pathlib import Path

from judgesdk.fused import QUESTIONS, extract, features
from judgesdk.meta import HumanRecord, item_of, load_dataset, natural, select, shared_data_dir
from judgesdk.providers import LlamaCppProvider

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
    parser.add_argument("--sample-docs", type=int, default=None, help="keep this many documents drawn with --seed (all outputs of each)")
    parser.add_argument("--seed", type=int, default=27)
    parser.add_argument("--stop-at", default=None, help="HH:MM UTC: start no new document after this time")
    parser.add_argument("--domain", choices=["news", "dialogue", "story"], help="the task's prompts (default: by dataset)")
    args = parser.parse_args()
    domain = args.domain or DOMAIN_OF.get(args.dataset, "news")
    if shared_data_dir() is None:
        print("shared data not found (../shared/data): nothing to measure", file=sys.stderr)
        return 0
    records = select(load_dataset(args.dataset), docs=args.docs)
    if args.sample_docs:
        order = list(dict.fromkeys(r.doc_id for r in records))
        drawn = random.Random(args.seed).sample(order, min(args.sample_docs, len(order)))
        rank = {doc: n for n, doc in enumerate(drawn)}
        records = sorted((r for r in records if r.doc_id in rank), key=lambda r: rank[r.doc_id])
        print(f"sampled {len(drawn)} of {len(order)} documents with seed {args.seed}: {' '.join(drawn)}", flush=True)
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
    stop_at = None
    if args.stop_at:
        hour, minute = (int(x) for x in args.stop_at.split(":"))
        now = datetime.datetime.now(datetime.timezone.utc)
        stop_at = now.replace(hour=hour, minute=minute, second=0, microsecond=0)
        if stop_at < now - datetime.timedelta(hours=12):
            stop_at += datetime.timedelta(days=1)
    return asyncio.run(run(
        todo, path, reference=not args.no_reference, questions=questions, unconditional=not args.no_unconditional, domain=domain, stop_at=stop_at,
    ))  # fmt: skip


async def run(
    todo: list[HumanRecord], path: Path, *, reference: bool, questions: bool, unconditional: bool = True, domain: str = "news", stop_at: datetime.datetime | None = None,
) -> int:
    provider = LlamaCppProvider.from_options()
    started = time.perf_counter()
    totals: dict[str, float] = {}
    with path.open("a", encoding="utf-8") as sink:
        previous_doc = None
        for n, record in enumerate(todo, start=1):
            if stop_at is not None and record.doc_id != previous_doc and datetime.datetime.now(datetime.timezone.utc) >= stop_at:
                print(f"stop-at {stop_at:%H:%M} UTC reached: stopped before document {record.doc_id} ({n - 1}/{len(todo)} done)", flush=True)
                break
            previous_doc = record.doc_id
            item = item_of(record)
            evidence = await extract(
                provider, item, reference=reference, questions=tuple(QUESTIONS) if questions else (), unconditional=unconditional,
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
