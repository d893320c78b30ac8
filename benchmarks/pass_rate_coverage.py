"""Coverage, width and refusals of the corrected human pass rate (the ``corrected_pass_rate`` gate) from a
small human slice, on real labels, by both of its methods: repeat many random slices of n labelled items
drawn by the label planner and count how often each interval, and the labels-only Wilson interval of the
same slice, hold the true human pass rate of all the judged items. ``ppi`` (the default: PPI++ on the pass
indicators, cross-fit, bounded by [0, 1]) always answers; how often ``rogan-gladen`` refuses (judge too
close to chance on the slice) is counted apart, and its coverage is over the slices it answered.

The judge scores come from a signals file, as in benchmarks/ppi_coverage.py (`--signals FILE --feature
NAME`); the judge passes an item when its score is at or above its own q-quantile over the run (one row per
``--judge-quantiles`` entry), the human when the label is at or above ``--item-min``:

    python benchmarks/pass_rate_coverage.py --signals benchmarks/out/signals-v2/summeval.jsonl --dataset summeval \\
        --item-min 4 --judge-quantiles 0.2,0.5 --n 50 --reps 1000

``--item-min 4`` on SummEval's consistency and fluency puts the true pass rate near 0.9 (0.90, 0.92), where a
slice of 30 often holds no item on which judge and human disagree; the last column counts how often a gate whose
``min`` is the true rate passes (the interval's low end reaches it: at most 5 % for a 95 % interval, issue 41).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ppi_coverage import judge_scores  # noqa: E402  (the same reading of a signals file)

from judgesdk.gate import draw_slice, ppi_mean, rogan_gladen  # noqa: E402
from judgesdk.meta import dimensions, load_dataset  # noqa: E402
from judgesdk.stats import RoganGladen  # noqa: E402


def replicate(human_pass: np.ndarray, judge_pass: np.ndarray, n: int, reps: int, seed: int) -> dict:
    truth = float(human_pass.mean())
    ids = [str(i) for i in range(len(human_pass))]
    y, f = human_pass.astype(float), judge_pass.astype(float)
    rg, ppi, wilson = [], [], []  # (covers, width) per slice; Rogan-Gladen's only where it answered
    false_pass = {"ppi": 0, "rogan_gladen": 0}  # a gate whose min is the truth passes: the interval's low end reaches it
    for rep in range(reps):
        chosen = np.array([int(i) for i in draw_slice(ids, n, seed=seed + rep)])
        mask = np.zeros(len(human_pass), bool)
        mask[chosen] = True
        est = rogan_gladen(human_pass[chosen], judge_pass[chosen], judge_pass[~mask])
        if isinstance(est, RoganGladen):
            rg.append((est.corrected.low <= truth <= est.corrected.high, est.corrected.width))
            false_pass["rogan_gladen"] += est.corrected.low >= truth
        wilson.append((est.human_only.low <= truth <= est.human_only.high, est.human_only.width))
        corrected = ppi_mean(y[chosen], f[chosen], f[~mask], bounds=(0.0, 1.0)).corrected
        ppi.append((corrected.low <= truth <= corrected.high, corrected.width))
        false_pass["ppi"] += corrected.low >= truth

    def summary(rows: list) -> tuple[float | None, float | None]:
        if not rows:
            return None, None
        a = np.array(rows, dtype=float)
        return float(a[:, 0].mean()), float(np.median(a[:, 1]))

    return {"truth": truth, "refused": 1 - len(rg) / reps, "rogan_gladen": summary(rg), "ppi": summary(ppi), "wilson": summary(wilson),
            "false_pass": {k: v / reps for k, v in false_pass.items()}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--signals", type=Path, required=True, help="a signals JSONL (doc_id, system_id, features)")
    parser.add_argument("--feature", default="cond_mean")
    parser.add_argument("--dataset", required=True, help="a dataset in ../shared/data, e.g. summeval")
    parser.add_argument("--item-min", type=float, default=4.0, help="a human label at or above this passes (default 4)")
    parser.add_argument("--judge-quantiles", default="0.2,0.5", help="comma list: the judge passes at or above its own q-quantile")
    parser.add_argument("--n", type=int, default=50)
    parser.add_argument("--reps", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    args.predictions = None
    scores = judge_scores(args)
    records = load_dataset(args.dataset)
    quantiles = [float(q) for q in args.judge_quantiles.split(",") if q.strip()]
    print(f"judge: {args.signals} features.{args.feature}; human pass: label >= {args.item_min:g}; n = {args.n}, "
          f"{args.reps} slices, 95% intervals, seed {args.seed}")
    print("| criterion | judge passes at | true pass rate | ppi: coverage / median width | rogan-gladen: refused, coverage / median width "
          "when answered | labels only (Wilson): coverage / median width | false passes at the boundary: ppi, rogan-gladen |")
    print("| --- | --- | --- | --- | --- | --- | --- |")

    def cell(pair: tuple[float | None, float | None]) -> str:
        return "—" if pair[0] is None else f"{pair[0]:.3f} / {pair[1]:.3f}"

    for dim in dimensions(records):
        pairs = [(float(r.scores[dim]), scores[r.key]) for r in records if dim in r.scores and r.key in scores]
        human, judge = (np.array(v) for v in zip(*pairs))
        for q in quantiles:
            r = replicate(human >= args.item_min, judge >= np.quantile(judge, q), args.n, args.reps, args.seed)
            print(f"| {dim} | q{q:g} | {r['truth']:.3f} | {cell(r['ppi'])} | {r['refused']:.1%}, {cell(r['rogan_gladen'])} | {cell(r['wilson'])} | "
                  f"{r['false_pass']['ppi']:.3f}, {r['false_pass']['rogan_gladen']:.3f} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
