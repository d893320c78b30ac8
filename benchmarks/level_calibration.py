"""How well the fused judge's level probabilities (what ``judgesdk serve`` answers) match human ratings, held
out by document: ranked probability score and per-level calibration, against a uniform and a point-mass baseline.

    python benchmarks/fused_signals.py --dataset summeval --no-reference --no-questions   # ~50 min on 2 cores (model calls)
    python benchmarks/level_calibration.py [--signals benchmarks/out/signals/summeval.jsonl] [--json out.json]

What is measured: per criterion, the fused fit is refitted on the signals with its own nested cross-validation,
folds by document (:func:`judgesdk.fused.fit_criterion`, as ``benchmarks/fused_fit.py``), so each item's point
prediction and 80 % interval come from a model that never saw its document. Its level distribution is
:func:`judgesdk.fused.levels_with_mean` (the served one: expected level = the prediction, the spread from the
held-out interval's half-width over z(0.9)). The human outcome is the level nearest the experts' mean rating.
Compared on the same items:

* ``served``: the distribution above;
* ``binned (before)``: the normal through the interval binned with its tails cut at the scale's ends (what was
  served before issue 44; its mean is not the point score);
* ``uniform``: 1/5 per level;
* ``point``: all mass on the level nearest the point prediction (a judge that reports only its score).

Columns: RPS (ranked probability score, mean over items, lower is better; normalised by K - 1), the log loss
(uniform: ln 5), the per-level calibration error (mean over levels of |mean predicted probability - observed
frequency|, weighted by nothing), and the predicted and observed share of each level.

Nothing here calls a model: without the signals file (written by ``benchmarks/fused_signals.py``, model calls),
the script says so and exits 2. The fused fits in ``judgesdk/fused/data`` do not keep per-item cross-validated
predictions (only residual quantiles and summary CV figures), so the table cannot be made from them alone.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from scipy import stats

LEVELS = (1.0, 2.0, 3.0, 4.0, 5.0)
INTERVAL_LEVEL = 0.8


def rps(probs: Sequence[float], outcome: int) -> float:
    """Ranked probability score of ``probs`` (over ordered levels) for the observed level index ``outcome``."""
    cumulative, total = 0.0, 0.0
    for k in range(len(probs) - 1):
        cumulative += probs[k]
        total += (cumulative - (1.0 if outcome <= k else 0.0)) ** 2
    return total / (len(probs) - 1)


def nearest(value: float, levels: Sequence[float] = LEVELS) -> int:
    """The index of the level nearest ``value`` (ties to the lower level)."""
    return min(range(len(levels)), key=lambda k: (abs(levels[k] - value), k))


def binned_before(score: float, spread: float, levels: Sequence[float] = LEVELS) -> tuple[float, ...]:
    """The pre-issue-44 distribution: N(score, spread) binned at the midpoints, the end levels taking the tails."""
    edges = [(a + b) / 2.0 for a, b in zip(levels, levels[1:])]
    cdf = [0.0, *(float(stats.norm.cdf(e, loc=score, scale=spread)) for e in edges), 1.0]
    return tuple(cdf[k + 1] - cdf[k] for k in range(len(levels)))


def measure(distributions: Sequence[Sequence[float]], outcomes: Sequence[int]) -> dict[str, object]:
    """RPS, log loss and per-level calibration of ``distributions`` against ``outcomes`` (level indexes)."""
    probs = np.array(distributions, dtype=float)
    observed = np.bincount(np.array(outcomes), minlength=probs.shape[1]) / len(outcomes)
    predicted = probs.mean(axis=0)
    eps = 1e-6
    return {
        "rps": float(np.mean([rps(p, o) for p, o in zip(probs, outcomes)])),
        "log_loss": float(np.mean([-math.log(max(p[o], eps)) for p, o in zip(probs, outcomes)])),
        "calibration_error": float(np.mean(np.abs(predicted - observed))),
        "predicted": [round(float(v), 4) for v in predicted],
        "observed": [round(float(v), 4) for v in observed],
    }


def held_out(signals: Path) -> dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]:
    """Per criterion: (held-out predictions, held-out intervals, human scores) from a nested CV by document."""
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from fused_fit import CRITERIA, load  # the signal rows as the fit reads them

    from judgesdk.fused import fit_criterion, readable, signs_for

    rows = load(signals, "summeval")
    out = {}
    for name in CRITERIA:
        keep = [r for r in rows if r["scores"].get(name) is not None]
        features = readable([r["features"] for r in keep], name, {"consistency"})
        y = np.array([r["scores"][name] for r in keep], dtype=float)
        fitted = fit_criterion(features, y.tolist(), [r["doc_id"] for r in keep], criterion=name, variant="source", low=1.0, high=5.0, signs=signs_for(name))
        if fitted.intervals is None:
            raise SystemExit(f"the fit of {name} returned no held-out intervals")
        out[name] = (np.asarray(fitted.predictions, dtype=float), np.asarray(fitted.intervals, dtype=float), y)
    return out


def table(name: str, predictions: np.ndarray, intervals: np.ndarray, human: np.ndarray) -> dict[str, dict[str, object]]:
    """The four distributions' figures for one criterion."""
    from judgesdk.fused import levels_with_mean

    z = float(stats.norm.ppf((1.0 + INTERVAL_LEVEL) / 2.0))
    spreads = np.maximum((intervals[:, 1] - intervals[:, 0]) / (2.0 * z), 1e-3)
    outcomes = [nearest(float(v)) for v in human]
    served = [levels_with_mean(LEVELS, float(s), float(sd)) for s, sd in zip(predictions, spreads)]
    rows = {
        "served": measure(served, outcomes),
        "binned (before)": measure([binned_before(float(s), float(sd)) for s, sd in zip(predictions, spreads)], outcomes),
        "uniform": measure([[0.2] * 5 for _ in outcomes], outcomes),
        "point": measure([[1.0 if k == nearest(float(s)) else 0.0 for k in range(5)] for s in predictions], outcomes),
    }
    print(f"\n### {name} ({len(outcomes)} outputs, held out by document)\n")
    print("| distribution | RPS | log loss | calibration error | predicted share 1..5 | observed share 1..5 |\n| --- | --- | --- | --- | --- | --- |")
    for label, figures in rows.items():
        print(f"| {label} | {figures['rps']:.4f} | {figures['log_loss']:.3f} | {figures['calibration_error']:.4f} | "
              f"{figures['predicted']} | {figures['observed']} |")  # fmt: skip
    return rows


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--signals", type=Path, default=Path("benchmarks/out/signals/summeval.jsonl"))
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    if not args.signals.is_file():
        print(f"{args.signals} not found: run benchmarks/fused_signals.py --dataset summeval --no-reference --no-questions first "
              "(model calls; the shipped fits keep no per-item held-out predictions)", file=sys.stderr)  # fmt: skip
        return 2
    figures = {name: table(name, *columns) for name, columns in held_out(args.signals).items()}
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
