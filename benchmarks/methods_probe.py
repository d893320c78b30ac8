"""Likelihood (GPTScore) vs G-Eval with the embedded local model on a fixed SummEval subset.

Reads ``../shared/data/summeval.jsonl`` beside the repository (or ``--data``), takes the first
``--docs`` documents in file order with all their systems (16 each), scores every summary with

* ``likelihood`` in each normalisation (mean, sum, ratio; ``judgesdk.scorers.likelihood``), and
* ``geval`` (``direct.likert``, exact label probabilities, expected value),

and prints the sample-level Spearman correlation with the human scores (000 App. B: Spearman across
the systems of each document, averaged over documents; documents whose human or predicted scores are
constant are skipped and counted) and, for reference, the pooled (000's summary-level) figure.

    /tmp/work/venv/bin/python benchmarks/methods_probe.py --docs 5 --criterion coherence

Skips cleanly (exit 0, with a message) when the data or the local model is absent. Requests go
through a disk cache (``--cache``, default a temporary folder), so the conditional half of ``ratio``
and all of ``sum`` reuse the ``mean`` calls.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from scipy.stats import spearmanr

REPO = Path(__file__).resolve().parents[1]
DEFAULT_DATA = REPO.parent / "shared" / "data" / "summeval.jsonl"


def load_subset(path: Path, docs: int) -> list[dict]:
    """Every record of the first ``docs`` documents, in file order."""
    chosen: list[str] = []
    records = []
    with path.open(encoding="utf-8") as handle:
        for line in handle:
            record = json.loads(line)
            if record["doc_id"] not in chosen:
                if len(chosen) == docs:
                    continue
                chosen.append(record["doc_id"])
            records.append(record)
    return records


def sample_level(records: list[dict], predictions: list[float | None], criterion: str) -> tuple[float | None, int]:
    """Mean over documents of Spearman(pred, human) across systems; (None, skipped) if none defined."""
    by_doc: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for record, pred in zip(records, predictions):
        if pred is not None:
            by_doc[record["doc_id"]].append((pred, record["scores"][criterion]))
    values, skipped = [], 0
    for pairs in by_doc.values():
        preds, humans = zip(*pairs)
        if len(set(preds)) < 2 or len(set(humans)) < 2:
            skipped += 1
            continue
        values.append(float(spearmanr(preds, humans).statistic))
    return (sum(values) / len(values) if values else None), skipped


def pooled(records: list[dict], predictions: list[float | None], criterion: str) -> float | None:
    pairs = [(p, r["scores"][criterion]) for r, p in zip(records, predictions) if p is not None]
    return float(spearmanr(*zip(*pairs)).statistic) if len(pairs) > 2 else None


async def run(args: argparse.Namespace) -> int:
    from judgesdk.cache import CachedProvider, open_cache
    from judgesdk.errors import ProviderError
    from judgesdk.presets import criterion as preset
    from judgesdk.providers.llamacpp import LlamaCppProvider
    from judgesdk.scorers import likelihood, likert
    from judgesdk.scorers.common import ScorerOptions
    from judgesdk.types import JudgeItem

    records = load_subset(args.data, args.docs)
    crit = preset("summeval", args.criterion)
    items = [JudgeItem(output=r["output"], source=r["source"], id=f"{r['doc_id']}/{r['system_id']}") for r in records]
    cache_dir = args.cache or tempfile.mkdtemp(prefix="methods_probe_")
    try:
        local = LlamaCppProvider.from_options()
    except ProviderError as exc:  # the embedded model is an optional extra
        print(f"skipped: embedded local model unavailable ({exc})")
        return 0
    provider = CachedProvider(local, open_cache(cache_dir))
    shape = f"{args.docs} docs x {len(items) // max(args.docs, 1)} systems"
    print(f"{len(items)} summaries ({shape}), criterion {crit.name}, model {local.model}")
    rows = []
    for name in args.methods:
        started = time.perf_counter()
        if name == "geval":
            results = [await likert.score(provider, item, crit, ScorerOptions(), "geval") for item in items]
        else:
            options = ScorerOptions(extra={"normalization": name.split("/")[1]})
            results = await likelihood.score_many(provider, items, crit, options)
        preds = [r.score for r in results]
        rho, skipped = sample_level(records, preds, crit.name)
        statuses = sorted({r.status for r in results})
        rows.append((name, rho, skipped, pooled(records, preds, crit.name), time.perf_counter() - started, statuses))
    await provider.aclose()
    print(f"{'method':18} {'sample-level rho':>16} {'skipped docs':>12} {'pooled rho':>10} {'seconds':>8}  statuses")
    for name, rho, skipped, pool, secs, statuses in rows:
        fmt = lambda x: "n/a" if x is None else f"{x:+.3f}"
        print(f"{name:18} {fmt(rho):>16} {skipped:>12} {fmt(pool):>10} {secs:>8.1f}  {','.join(statuses)}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--docs", type=int, default=5)
    parser.add_argument("--criterion", default="coherence")
    parser.add_argument(
        "--methods", nargs="+", default=["likelihood/mean", "likelihood/sum", "likelihood/ratio", "geval"],
        help="likelihood/<mean|sum|ratio> and/or geval",
    )  # fmt: skip
    parser.add_argument("--cache", default=None, help="disk cache folder (default: a new temporary one)")
    args = parser.parse_args(argv)
    if not args.data.is_file():
        print(f"skipped: {args.data} not found (the shared data sits beside the checkout at ../shared/data)")
        return 0
    return asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
