"""Coverage and width of the corrected (PPI++) interval of the mean human score from a small human slice
(issue 14, item 1): repeat many random slices of n labelled items drawn by the label planner, and count how
often the corrected interval, the human-only interval of the same labels and the judge-only interval cover
the true mean human score of all the judged items; report median widths.

The judge scores are precomputed (no model call here), in `judgesdk meta-eval --predictions` format (one
JSON object per line: doc_id, system_id, score), or read from a signals file (`--signals FILE --feature
NAME`: the lines of benchmarks/fused_signals.py, each with doc_id, system_id and features.NAME):

    python benchmarks/ppi_coverage.py --predictions preds.jsonl --dataset summeval --dimension consistency
    python benchmarks/ppi_coverage.py --signals benchmarks/out/signals-v2/summeval.jsonl --feature cond_mean \\
        --dataset summeval --n 50 --reps 1000 --check-ppi-py

The population is the set of items with both a judge score and a human score; its mean human score is the
truth. Each replication draws the slice with judgesdk.gate.draw_slice (seed = --seed + replication), treats
the other items as unlabelled, and computes judgesdk.gate.ppi_mean with each --methods entry: `cross-fit`
(the gate's default, bounded by --scale) and `ppi++` (ppi-python's interval). With --check-ppi-py every
`ppi++` replication is also computed by ppi-python (ppi_py.ppi_mean_ci, lam=None) and the largest
difference is printed.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from types import ModuleType
from typing import Literal

import numpy as np

from judgesdk.core import Scale
from judgesdk.gate import draw_slice, ppi_mean
from judgesdk.meta import dimensions, load_dataset, load_jsonl, load_predictions

Method = Literal["cross-fit", "ppi++"]  # judgesdk.gate.ppi_mean's methods
METHODS: dict[str, Method] = {"cross-fit": "cross-fit", "ppi++": "ppi++"}


def judge_scores(args: argparse.Namespace) -> dict[tuple[str, str], float]:
    """(doc_id, system_id) -> judge score, from a predictions file or a signals file's feature."""
    if args.predictions is not None:
        scores = {}
        for p in load_predictions(args.predictions, Scale.likert(1, 5)):
            if p.value is not None:
                scores[p.key] = p.value  # a key written twice: the latest line wins
        return scores
    scores, skipped = {}, 0
    for line in Path(args.signals).read_text(encoding="utf-8").splitlines():
        try:  # the file may be growing: a line cut mid-write is skipped
            row = json.loads(line)
            value = row["features"][args.feature]
        except (json.JSONDecodeError, KeyError, TypeError):
            skipped += 1
            continue
        if value is not None:
            scores[(str(row["doc_id"]), str(row["system_id"]))] = float(value)
    if skipped:
        print(f"{args.signals}: {skipped} line(s) without features.{args.feature} skipped", file=sys.stderr)
    return scores


def replicate(
    human: np.ndarray, judge: np.ndarray, n: int, reps: int, seed: int, confidence: float, check: ModuleType | None,
    method: Method = "cross-fit", bounds: tuple[float, float] | None = None,
) -> dict:
    truth = float(human.mean())
    ids = [str(i) for i in range(len(human))]
    rows, worst = [], 0.0
    check = check if method == "ppi++" else None
    for rep in range(reps):
        chosen = np.array([int(i) for i in draw_slice(ids, n, seed=seed + rep)])
        mask = np.zeros(len(human), bool)
        mask[chosen] = True
        est = ppi_mean(human[chosen], judge[chosen], judge[~mask], confidence=confidence, method=method, bounds=bounds)
        if check is not None:
            low, high = (float(np.squeeze(v)) for v in check.ppi_mean_ci(human[chosen], judge[chosen], judge[~mask], alpha=1 - confidence))
            worst = max(worst, abs(low - est.corrected.low), abs(high - est.corrected.high))
        rows.append((est.corrected.low, est.corrected.high, est.human_only.low, est.human_only.high, est.lam, est.effective_labels))
    a = np.array(rows)
    judge_only = ppi_mean(human[:2], judge[:2], judge[2:]).judge_only  # the same for every slice
    return {
        "method": method,
        "items": len(human),
        "truth": truth,
        "correlation": float(np.corrcoef(human, judge)[0, 1]),
        "coverage_corrected": float(np.mean((a[:, 0] <= truth) & (truth <= a[:, 1]))),
        "coverage_human_only": float(np.mean((a[:, 2] <= truth) & (truth <= a[:, 3]))),
        "judge_only_covers": bool(judge_only.low <= truth <= judge_only.high),
        "judge_only": [judge_only.estimate, judge_only.low, judge_only.high],
        "median_width_corrected": float(np.median(a[:, 1] - a[:, 0])),
        "median_width_human_only": float(np.median(a[:, 3] - a[:, 2])),
        "median_lambda": float(np.median(a[:, 4])),
        "median_effective_labels": float(np.median(a[:, 5])),
        "max_abs_diff_vs_ppi_py": worst if check is not None else None,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--predictions", type=Path, help="judge scores, meta-eval --predictions format (doc_id, system_id, score)")
    source.add_argument("--signals", type=Path, help="a signals JSONL (doc_id, system_id, features); use with --feature")
    parser.add_argument("--feature", default="cond_mean", help="with --signals: the feature used as the judge score (default cond_mean)")
    human = parser.add_mutually_exclusive_group(required=True)
    human.add_argument("--dataset", help="a dataset in ../shared/data (judgesdk.meta.datasets.load_dataset), e.g. summeval")
    human.add_argument("--human", type=Path, help="a human JSONL with doc_id, system_id, scores")
    parser.add_argument("--dimension", action="append", help="human dimension(s) (default: all the file has)")
    parser.add_argument("--systems", help="comma list: only these systems' outputs (e.g. those a partial signals run covers for every document)")
    parser.add_argument("--n", type=int, default=50, help="labels per slice (default 50)")
    parser.add_argument("--reps", type=int, default=1000, help="random slices (default 1000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--confidence", type=float, default=0.95)
    parser.add_argument("--methods", default="cross-fit,ppi++", help="comma list of ppi_mean methods (default cross-fit,ppi++)")
    parser.add_argument("--scale", default="1-5", help="the labels' scale LOW-HIGH, which bounds the cross-fit interval (default 1-5)")
    parser.add_argument("--check-ppi-py", action="store_true", help="also compute every interval with ppi-python and report the largest difference")
    parser.add_argument("--json", type=Path, help="write the figures as JSON here")
    parser.add_argument("--write-predictions", type=Path, help="also write the judge scores read, in --predictions format (a snapshot of a growing signals file)")
    args = parser.parse_args(argv)
    if args.signals is not None and not args.feature:
        parser.error("--signals needs --feature")
    check = None
    if args.check_ppi_py:
        import ppi_py

        check = ppi_py
    records = load_dataset(args.dataset) if args.dataset else load_jsonl(args.human)
    scores = judge_scores(args)
    if args.systems:
        wanted = {name.strip() for name in args.systems.split(",")}
        scores = {key: value for key, value in scores.items() if key[1] in wanted}
    if args.write_predictions is not None:
        args.write_predictions.parent.mkdir(parents=True, exist_ok=True)
        args.write_predictions.write_text(
            "".join(json.dumps({"doc_id": d, "system_id": s, "score": v}) + "\n" for (d, s), v in scores.items()), encoding="utf-8"
        )
    names = [m.strip() for m in args.methods.split(",") if m.strip()]
    if not names or any(m not in METHODS for m in names):
        parser.error(f"--methods takes cross-fit and/or ppi++, got {args.methods!r}")
    methods = [METHODS[m] for m in names]
    low, _, high = args.scale.partition("-")
    bounds = (float(low), float(high))
    started = time.perf_counter()
    results = {}
    for dim in args.dimension or dimensions(records):
        pairs = [(float(r.scores[dim]), scores[r.key]) for r in records if dim in r.scores and r.key in scores]
        if len(pairs) <= args.n:
            print(f"{dim}: only {len(pairs)} items have both scores; need more than --n {args.n}", file=sys.stderr)
            continue
        h, j = (np.array(v) for v in zip(*pairs))
        for method in methods:
            results[f"{dim} ({method})"] = replicate(h, j, args.n, args.reps, args.seed, args.confidence, check, method, bounds)
    judged_by = args.predictions or f"{args.signals} features.{args.feature}"
    print(f"judge: {judged_by}; human: {args.dataset or args.human}; n = {args.n} labels per slice, {args.reps} slices, "
          f"{args.confidence:.0%} intervals, seed {args.seed}, cross-fit bounded by {args.scale} ({time.perf_counter() - started:.1f}s)")
    print("| dimension | items | r(judge, human) | coverage corrected | coverage human-only | Monte Carlo s.e. | judge-only covers | "
          "median width corrected | median width human-only | ratio | median lambda | median effective labels |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for dim, r in results.items():
        print(f"| {dim} | {r['items']} | {r['correlation']:.3f} | {r['coverage_corrected']:.3f} | {r['coverage_human_only']:.3f} | "
              f"{(r['coverage_corrected'] * (1 - r['coverage_corrected']) / args.reps) ** 0.5:.3f} | {'yes' if r['judge_only_covers'] else 'no'} | {r['median_width_corrected']:.3f} | {r['median_width_human_only']:.3f} | "
              f"{r['median_width_corrected'] / r['median_width_human_only']:.3f} | {r['median_lambda']:.2f} | "
              f"{r['median_effective_labels']:.1f} |")
    if check is not None and "ppi++" in methods:
        print("largest |difference| of ppi++ from ppi-python over all slices: "
              + ", ".join(f"{d} {r['max_abs_diff_vs_ppi_py']:.1e}" for d, r in results.items() if r["method"] == "ppi++"))
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
