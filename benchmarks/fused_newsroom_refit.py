"""How many of their own labelled articles a team needs before ``judgesdk calibrate --fused`` gives intervals that
hold on its raters: NewsRoom as that team (issue 27, item 4).

    python benchmarks/fused_signals.py --dataset newsroom --no-reference --no-questions   # the signals (once)
    python benchmarks/fused_newsroom_refit.py [--articles 5 10 20 30] [--draws 20]

The shipped news fit ranks NewsRoom's summaries about as well as on SummEval but places them a point below
NewsRoom's raters, so its 80 % intervals hold 55-72 % of NewsRoom's scores (benchmarks/README.md). For each
size k, ``--draws`` times: k of NewsRoom's 60 articles drawn at random (every summary of each), the fused judge
refitted on them exactly as ``calibrate --fused`` does (:func:`judgesdk.fused.train.fit_file`: nested CV grouped
by article, news sign priors, per-bin conformal intervals), then applied to the other 60 - k articles. Printed per
criterion and k: the median over draws of the held-out 80 % interval coverage and per-article Spearman, with the
5th-95th percentile over draws, beside the shipped file's on the same held-out articles. Model-free once the
signal file exists (seconds per fit).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fused_domains import coverage, load  # noqa: E402

from judgesdk.fused import (  # noqa: E402  # noqa: E402
    FusedModelFile,
    bundled,
    fit_file,  # noqa: E402
    group_codes,
    mean_group_spearman,
)

CRITERIA = {"coherence": "coherence", "fluency": "fluency", "relevance": "relevance", "informativeness": "relevance"}


def held_out(fitted: FusedModelFile, criterion: str, rows: list[dict], dim: str) -> tuple[float, float]:
    """(80 % interval coverage, per-article Spearman) of ``fitted``'s ``criterion`` model on ``rows``' ``dim``."""
    model = fitted.for_criterion(criterion, has_reference=False)
    assert model is not None, criterion
    predicted = [model.predict(r["features"]) for r in rows]
    pred = np.array([p[0] for p in predicted])
    intervals = np.array([p[1] for p in predicted])
    y = np.array([r["scores"][dim] for r in rows], dtype=float)
    return coverage(intervals, y)["share"], mean_group_spearman(pred, y, group_codes([r["doc_id"] for r in rows]))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--signals", type=Path, default=Path("benchmarks/out/signals/newsroom.jsonl"))
    parser.add_argument("--articles", type=int, nargs="+", default=[5, 10, 20, 30])
    parser.add_argument("--draws", type=int, default=20)
    parser.add_argument("--json", type=Path, default=Path("benchmarks/out/fused_newsroom_refit.json"))
    args = parser.parse_args()
    if not args.signals.exists():
        print(f"{args.signals} not found: run benchmarks/fused_signals.py --dataset newsroom --no-reference --no-questions", file=sys.stderr)
        return 0
    rows = load(args.signals, "newsroom")
    shipped = next(f for f in bundled() if f.domain == "news")
    articles = sorted({r["doc_id"] for r in rows})
    report: dict[str, dict[str, dict[str, list[float]]]] = {}
    for k in args.articles:
        for draw in range(args.draws):
            chosen = set(np.random.default_rng(1000 * k + draw).choice(articles, size=k, replace=False))
            train = [r for r in rows if r["doc_id"] in chosen]
            test = [r for r in rows if r["doc_id"] not in chosen]
            for dim, criterion in CRITERIA.items():
                fitted = fit_file(
                    [r["features"] for r in train], {criterion: [r["scores"][dim] for r in train]}, [r["doc_id"] for r in train],
                    model=shipped.model, scales={criterion: (1.0, 5.0)}, data={"dataset": "newsroom", "articles": k}, seed=0,
                )  # fmt: skip
                cell = report.setdefault(dim, {}).setdefault(str(k), {"coverage": [], "spearman": [], "shipped_coverage": [], "shipped_spearman": []})
                share, rho = held_out(fitted, criterion, test, dim)
                base_coverage, base_rho = held_out(shipped, criterion, test, dim)
                cell["coverage"].append(share)
                cell["spearman"].append(rho)
                cell["shipped_coverage"].append(base_coverage)
                cell["shipped_spearman"].append(base_rho)
            print(f"k={k} draw={draw} done", file=sys.stderr)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=1))

    def summary(values: list[float]) -> str:
        low, mid, high = np.percentile(values, [5, 50, 95])
        return f"{mid:.3f} ({low:.3f}-{high:.3f})"

    print("| criterion | articles labelled | refit: held-out 80 % coverage | refit: per-article Spearman | shipped: coverage | shipped: Spearman |")
    print("| --- | --- | --- | --- | --- | --- |")
    for dim, by_k in report.items():
        for k, cell in by_k.items():
            print(
                f"| {dim} | {k} ({60 - int(k)} held out) | {summary(cell['coverage'])} | {summary(cell['spearman'])} | "
                f"{summary(cell['shipped_coverage'])} | {summary(cell['shipped_spearman'])} |"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
