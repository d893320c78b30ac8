"""Which shipped fit ``auto`` would use on each item of each labelled dataset (no model call: the choice is made
on the item's shape, before any signal is computed).

    python benchmarks/fused_envelope.py [--datasets summeval,newsroom,hanna,topicalchat] [--criteria coherence,relevance]

Per dataset and criterion: how many items each shipped fit for the embedded model takes, and how many fall
back (with the most common reason). HANNA's stories and TopicalChat's responses must never get the news fit
(issue 27).
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter

from judgesdk.core import Criterion, JudgeItem, Scale
from judgesdk.fused import bundled_for
from judgesdk.meta import load_dataset, natural, shared_data_dir
from judgesdk.providers import embedded_sha256
from judgesdk.scorers import choose

KINDS = (("grounding fact", "grounding fact"), ("ratio", "output/source length ratio"), ("content words", "share of new words"),
         ("source of", "source length"), ("output of", "output length"))  # fmt: skip


def _kind(reason: str) -> str:
    return next((label for key, label in KINDS if key in reason), reason)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", default="summeval,newsroom,hanna,topicalchat")
    parser.add_argument("--criteria", default="coherence,relevance")
    args = parser.parse_args()
    if shared_data_dir() is None:
        print("shared data not found (../shared/data): nothing to measure", file=sys.stderr)
        return 0
    fits = bundled_for(embedded_sha256())
    print("shipped fits: " + ", ".join(f"{f.domain} ({f.format}, envelope {'yes' if f.envelope else 'no'})" for f in fits))
    print("\n| dataset | items | criterion | items per fit used | fallback | most common reason (items x fits) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for dataset in filter(None, args.datasets.split(",")):
        records = [natural(r) for r in load_dataset(dataset)]
        items = [JudgeItem(output=r.output, source=r.source, reference=r.reference, context=r.context) for r in records]
        for name in filter(None, args.criteria.split(",")):
            criterion = Criterion(name=name, scale=Scale.likert(1, 5))
            chosen = [choose(fits, item, criterion) for item in items]
            used = Counter(f"{c.fitted.domain}/{c.model.variant}" for c in chosen if c.fitted is not None and c.model is not None)
            reasons = Counter(_kind(reason) for c in chosen if c.fitted is None for why in c.reasons.values() for reason in why)
            fallback = sum(c.fitted is None for c in chosen)
            top = reasons.most_common(1)[0][0] if reasons else "—"
            print(f"| {dataset} | {len(items)} | {name} | {', '.join(f'{k} {v}' for k, v in sorted(used.items())) or 'none'} | {fallback} | {top} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
