"""Coverage of the default corrected interval (``ppi_mean``, method "cross-fit", bounded by the 1-5 scale) over
judge quality, judge bias, the judge's scale, label skew and slice size (issue 28, items 1 and 2); the false-fail
rate of ``ppi_regression`` at the boundary; and the coverage of the corrected pass rate, which uses the same
interval on pass/fail indicators.

Population: SummEval's 1,600 summaries with their expert means (consistency: 82 % at 5, fluency: 72 %; both
skewness -2.8). A simulated judge ``f = T(h + bias + sigma * N(0, 1))`` (noise seed 7) with sigma set for a
correlation r with the labels, bias 0 or +1, and the judge's scale T one of ``x - 4``, ``x``, ``x + 10``,
``4x + 100``. For each slice size n, slices are drawn by the label planner (``judgesdk.gate.draw_slice``, seed
= replication), the other 1,600 - n items are the unlabelled ones, and a slice's interval covers when it holds
the mean of all 1,600 expert means; beside the coverage, the false passes at the boundary: the share of slices
whose interval's low end lies at or above that mean (a gate whose min is the true mean passes; the ``--agreeing``
definition). 1,000 slices a cell, 2,000 where a cell comes out below 0.93 (all the
cells of that criterion, r and n together, on the same slices). Every shift of the judge (bias 0/+1 times
x - 4, x, x + 10) is computed on the same slices and compared: the largest difference of an estimate or an end
over all slices is printed (the requirement: below 1e-9). ``4x + 100`` moves nothing unless lambda's clip to
[0, 1] binds; the count of slices where it moved is printed.

``--regression``: two runs of the same population (no drop), each with its own slice of n labels (independent
seeds), the judge ``h + 1 + N(0, 0.5)``: the share of pairs that ``ppi_regression`` (alpha 0.05, max_drop 0)
fails, through the gate's own code (``judgesdk.gate.decide``).

``--pass-rate``: the corrected pass rate (PPI++ on pass indicators, the ``corrected_pass_rate`` default): human
pass = expert mean at or above a threshold, judge pass = the simulated judge at or above its own quantile of
the same share; coverage of the population's pass rate and false passes at the boundary (low >= the true pass
rate), at ``--pass-rate-sizes`` (default min_labels, 50, 100).

    .venv/bin/python benchmarks/ppi_coverage_grid.py --json benchmarks/out/ppi-grid.json
    .venv/bin/python benchmarks/ppi_coverage_grid.py --regression --pass-rate --json benchmarks/out/ppi-grid.json
    .venv/bin/python benchmarks/ppi_coverage_grid.py --no-grid --agreeing --json benchmarks/out/ppi-agreeing.json

``--agreeing`` (issue 41, item 7): judges that agree with the labels on most items, where a 30-item slice often
shows no disagreement at all: integer-valued judges equal to the (rounded) label but for a 5 given to 5 or 10 %
of the items or one point more to 10 or 30 %, a good lenient continuous judge, and pass/fail judges that pass
every human pass and a share of the fails, on pass rates near 0.9 (SummEval consistency >= 4, fluency >= 4,
relevance >= 3), with a weak judge beside them; per cell the coverage, the false-pass rate of a gate whose min is
the true value (low >= truth) and the median width over the labels-only one, at n = 10, 20 and the default
``min_labels`` (``--agreeing-sizes``); for pass/fail also Rogan-Gladen's. ``--sizes`` restricts the grid's slice
sizes (``--sizes 30``: the default label count only).

Cells finished are kept in ``--cache`` (JSONL, default benchmarks/out/ppi-grid-cells.jsonl): a re-run skips them.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from judgesdk.core import Criterion, JudgeResult, Scale
from judgesdk.gate import CriterionRun, GateRun, HumanLabels, PPICILowerGate, decide, draw_slice, load_gate_config, ppi_mean
from judgesdk.meta import load_dataset
from judgesdk.stats import RoganGladen, ppi_lambdas_left_out, proportion_interval, rogan_gladen

CRITERIA = ("consistency", "fluency")
QUALITIES = (0.3, 0.6, 0.9)
BIASES = (0.0, 1.0)
SCALES = {"x - 4": (1.0, -4.0), "x": (1.0, 0.0), "x + 10": (1.0, 10.0), "4x + 100": (4.0, 100.0)}
SIZES = (10, 20, 30, 50, 100)
BOUNDS = (1.0, 5.0)
MIN_LABELS = PPICILowerGate.model_fields["min_labels"].default
INTERVAL_VERSION = "floor2w"  # in every cache key: cells of an earlier interval are not reused (issue 41: the variance floor)


def _labels(dimension: str) -> np.ndarray:
    return np.array([r.scores[dimension] for r in load_dataset("summeval") if dimension in r.scores], dtype=float)


def _judge(h: np.ndarray, r: float, seed: int = 7) -> np.ndarray:
    """h + sigma * N(0, 1) with sigma = sd(h) * sqrt(1/r^2 - 1): correlation about r with h."""
    return h + float(np.std(h)) * math.sqrt(1 / r**2 - 1) * np.random.default_rng(seed).standard_normal(len(h))


def _masks(n_items: int, n: int, reps: range) -> list[np.ndarray]:
    ids = [str(i) for i in range(n_items)]
    masks = []
    for rep in reps:
        mask = np.zeros(n_items, bool)
        mask[[int(i) for i in draw_slice(ids, n, seed=rep)]] = True
        masks.append(mask)
    return masks


def _cell(h: np.ndarray, base: np.ndarray, n: int, reps: range) -> dict:
    """Every (bias, scale) variant of the judge on the same slices: coverage counts, widths, shift differences."""
    truth = float(h.mean())
    variants = {(b, s): a * (base + b) + c for b in BIASES for s, (a, c) in SCALES.items()}
    hits = {k: 0 for k in variants}
    passes = {k: 0 for k in variants}  # false passes at the boundary: a gate with min = the truth passes (low >= truth)
    hits_human, passes_human, human_widths = 0, 0, []
    widths: dict[tuple[float, str], list[float]] = {k: [] for k in variants}
    shift_diff, rescale_moved, rescale_moved_clipped = 0.0, 0, 0
    for mask in _masks(len(h), n, reps):
        y = h[mask]
        out = {k: ppi_mean(y, f[mask], f[~mask], bounds=BOUNDS) for k, f in variants.items()}
        for k, est in out.items():
            c = est.corrected
            hits[k] += c.low <= truth <= c.high
            passes[k] += c.low >= truth
            widths[k].append(c.width)
        reference = out[(0.0, "x")]
        ends = lambda e: np.array([e.corrected.estimate, e.corrected.low, e.corrected.high, e.human_only.low, e.human_only.high])  # noqa: E731
        for (b, s), est in out.items():
            if s != "4x + 100":
                shift_diff = max(shift_diff, float(np.max(np.abs(ends(est) - ends(reference)))))
            elif float(np.max(np.abs(ends(est) - ends(out[(b, "x")])))) > 1e-9:
                rescale_moved += 1
                raw = ppi_lambdas_left_out(y, variants[(b, "x")][mask], variants[(b, "x")][~mask], clip=False)
                rescale_moved_clipped += bool(np.any((raw < 0) | (raw > 1) | (raw / 4 < 0) | (raw / 4 > 1)))
        hits_human += reference.human_only.low <= truth <= reference.human_only.high
        passes_human += reference.human_only.low >= truth
        human_widths.append(reference.human_only.width)
    count = len(reps)
    return {
        "slices": count,
        "coverage": {f"{b:+g}|{s}": hits[(b, s)] / count for (b, s) in variants},
        "false_pass": {f"{b:+g}|{s}": passes[(b, s)] / count for (b, s) in variants},
        "median_width": {f"{b:+g}|{s}": float(np.median(widths[(b, s)])) for (b, s) in variants},
        "coverage_labels_only": hits_human / count,
        "false_pass_labels_only": passes_human / count,
        "median_width_labels_only": float(np.median(human_widths)),
        "max_shift_difference": shift_diff,
        "rescale_moved": rescale_moved,
        "rescale_moved_where_clip_binds": rescale_moved_clipped,
    }


def _merge(first: dict, second: dict) -> dict:
    """Two cells on disjoint slices as one."""
    a, b = first["slices"], second["slices"]
    weigh = lambda x, y: (x * a + y * b) / (a + b)  # noqa: E731
    return {
        "slices": a + b,
        "coverage": {k: weigh(v, second["coverage"][k]) for k, v in first["coverage"].items()},
        "false_pass": {k: weigh(v, second["false_pass"][k]) for k, v in first["false_pass"].items()},
        "median_width": first["median_width"],  # of the first 1,000
        "coverage_labels_only": weigh(first["coverage_labels_only"], second["coverage_labels_only"]),
        "false_pass_labels_only": weigh(first["false_pass_labels_only"], second["false_pass_labels_only"]),
        "median_width_labels_only": first["median_width_labels_only"],
        "max_shift_difference": max(first["max_shift_difference"], second["max_shift_difference"]),
        "rescale_moved": first["rescale_moved"] + second["rescale_moved"],
        "rescale_moved_where_clip_binds": first["rescale_moved_where_clip_binds"] + second["rescale_moved_where_clip_binds"],
    }


def _cached(cache: Path) -> dict[str, dict]:
    done = {}
    if cache.exists():
        for line in cache.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
                done[row["key"]] = row["value"]
            except (json.JSONDecodeError, KeyError):
                continue  # a line cut by an interrupted run
    return done


def _keep(cache: Path, key: str, value: dict) -> None:
    cache.parent.mkdir(parents=True, exist_ok=True)
    with cache.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps({"key": key, "value": value}) + "\n")


def grid(reps: int, extend_below: float, cache: Path, sizes: tuple[int, ...] = SIZES) -> dict:
    done = _cached(cache)
    cells = {}
    for dim in CRITERIA:
        h = _labels(dim)
        for r in QUALITIES:
            base = _judge(h, r)
            for n in sizes:
                key = f"grid|{INTERVAL_VERSION}|{dim}|{r}|{n}|{reps}|{extend_below}"
                if "false_pass" not in done.get(key, {}):  # a cell cached before false passes were counted is run again
                    started = time.perf_counter()
                    value = _cell(h, base, n, range(reps))
                    if min(value["coverage"].values()) < extend_below:
                        value = _merge(value, _cell(h, base, n, range(reps, 2 * reps)))
                    value["r"] = float(np.corrcoef(h, base)[0, 1])
                    _keep(cache, key, value)
                    done[key] = value
                    print(f"{dim} r={r} n={n}: {value['slices']} slices, {time.perf_counter() - started:.0f}s", file=sys.stderr, flush=True)
                cells[(dim, r, n)] = done[key]
    return cells


def regression(pairs: int, sizes: tuple[int, ...], cache: Path) -> dict:
    """False fails of ppi_regression at the boundary (no drop), through judgesdk.gate.decide."""
    done = _cached(cache)
    out = {}
    config = load_gate_config({
        "criteria": [{"name": "q", "scale": "1-5", "labels": "new.jsonl", "baseline_labels": "base.jsonl"}],
        "gates": [{"kind": "ppi_regression", "criterion": "q"}],
    })  # fmt: skip
    for dim in CRITERIA:
        h = _labels(dim)
        f = h + 1 + np.random.default_rng(7).normal(0, 0.5, len(h))
        ids = [str(i) for i in range(len(h))]
        results = [JudgeResult(score=float(s), status="ok", criterion="q", method="geval/exact", item_id=i) for i, s in zip(ids, f)]
        run = GateRun(criteria={"q": CriterionRun(criterion=Criterion(name="q", description="q", scale=Scale.likert(1, 5)),
                                                  expected=ids, results=results, baseline=results)})
        for n in sizes:
            key = f"regression|{INTERVAL_VERSION}|{dim}|{n}|{pairs}"
            if key not in done:
                fails, ps = 0, []
                for k in range(pairs):
                    new, old = (draw_slice(ids, n, seed=10**6 + 2 * k + side) for side in (0, 1))
                    verdict = decide(config, run, {"q": HumanLabels(path="new", values={i: float(h[int(i)]) for i in new})},
                                     {"q": HumanLabels(path="base", values={i: float(h[int(i)]) for i in old})})
                    gate = next(g for g in verdict.gates if g.check == "ppi_regression")
                    fails += gate.outcome == "fail"
                    ps.append(gate.details["p"])
                value = {"pairs": pairs, "false_fail": fails / pairs, "r": float(np.corrcoef(h, f)[0, 1]), "fails": fails,
                         "share_p_below_0.10": float(np.mean(np.array(ps) < 0.10))}
                _keep(cache, key, value)
                done[key] = value
                print(f"regression {dim} n={n}: {fails}/{pairs}", file=sys.stderr, flush=True)
            out[(dim, n)] = done[key]
    return out


PASS_RULES = (("consistency", 5.0), ("fluency", 4.5), ("coherence", 3.0))


def pass_rate(reps: int, sizes: tuple[int, ...], cache: Path) -> dict:
    done = _cached(cache)
    out = {}
    for dim, threshold in PASS_RULES:
        scores = _labels(dim)
        h = (scores >= threshold).astype(float)
        for r in QUALITIES:
            judge = _judge(scores, r) + 1.0
            f = (judge >= np.quantile(judge, 1 - h.mean())).astype(float)
            for n in sizes:
                key = f"pass|{INTERVAL_VERSION}|{dim}|{threshold}|{r}|{n}|{reps}"
                if "false_pass" not in done.get(key, {}):  # a cell cached before false passes were counted is run again
                    hits, passes, widths, truth = 0, 0, [], float(h.mean())
                    for mask in _masks(len(h), n, range(reps)):
                        c = ppi_mean(h[mask], f[mask], f[~mask], bounds=(0.0, 1.0)).corrected
                        hits += c.low <= truth <= c.high
                        passes += c.low >= truth  # a gate whose min is the true pass rate passes: a false pass
                        widths.append(c.width)
                    value = {"slices": reps, "coverage": hits / reps, "false_pass": passes / reps,
                             "median_width": float(np.median(widths)), "truth": truth,
                             "r": float(np.corrcoef(h, f)[0, 1])}
                    _keep(cache, key, value)
                    done[key] = value
                out[(dim, threshold, r, n)] = done[key]
    return out


AGREEING_MEAN = ("consistency", "relevance")
AGREEING_PASS = (("consistency", 4.0), ("fluency", 4.0), ("relevance", 3.0))  # pass rates .904, .918, .918


def _agreeing_judges(y: np.ndarray, h: np.ndarray) -> dict[str, np.ndarray]:
    """Judges that agree with the integer labels ``y`` on most items (issue 41, item 7): integer-valued ones that
    give a 5 to a share of the items or one point more to a share, and a good lenient continuous one (``h`` the
    expert means + 0.5 + N(0, 0.3))."""
    rng = np.random.default_rng(11)
    u, noise = rng.random(len(y)), rng.standard_normal(len(y))
    return {
        "integer, a 5 to 5 %": np.where(u < 0.05, 5.0, y), "integer, a 5 to 10 %": np.where(u < 0.10, 5.0, y),
        "integer, +1 on 10 %": np.where(u < 0.10, np.minimum(y + 1, 5.0), y),
        "integer, +1 on 30 %": np.where(u < 0.30, np.minimum(y + 1, 5.0), y),
        "lenient, h + 0.5 + N(0, 0.3)": h + 0.5 + 0.3 * noise,
    }  # fmt: skip


def _pass_judges(hp: np.ndarray, scores: np.ndarray) -> dict[str, np.ndarray]:
    """Pass/fail judges for human passes ``hp``: lenient ones that pass every human pass and a share of the fails
    (one also missing 3 % of the passes), and a weak one (r = 0.3 on the expert means ``scores``, passing the
    same share)."""
    rng = np.random.default_rng(12)
    u, v = rng.random(len(hp)), rng.random(len(hp))
    weak = _judge(scores, 0.3)
    return {
        "lenient, passes 30 % of fails": np.where(hp, True, u < 0.3), "lenient, passes 60 % of fails": np.where(hp, True, u < 0.6),
        "lenient 50 %, misses 3 % of passes": np.where(hp, v >= 0.03, u < 0.5),
        "weak, r = 0.3": weak >= np.quantile(weak, 1 - hp.mean()),
    }  # fmt: skip


def _agreeing_cell(h: np.ndarray, f: np.ndarray, n: int, reps: int, bounds: tuple[float, float], pass_fail: bool) -> dict:
    """Coverage, false passes at the boundary (a gate whose min is the truth passes: low >= truth) and median
    width over the labels-only width, of the default interval; for pass/fail also Rogan-Gladen's."""
    truth = float(h.mean())
    hits = passes = 0
    ratios, widths = [], []
    rg_hits = rg_passes = rg_answered = 0
    for mask in _masks(len(h), n, range(reps)):
        est = ppi_mean(h[mask], f[mask], f[~mask], bounds=bounds)
        c = est.corrected
        hits += c.low <= truth <= c.high
        passes += c.low >= truth
        widths.append(c.width)
        ratios.append(c.width / est.human_only.width if est.human_only.width > 0 else 1.0)
        if pass_fail:
            rg = rogan_gladen(h[mask] > 0.5, f[mask] > 0.5, f[~mask] > 0.5)
            if isinstance(rg, RoganGladen):
                rg_answered += 1
                rg_hits += rg.corrected.low <= truth <= rg.corrected.high
                rg_passes += rg.corrected.low >= truth
    value: dict[str, Any] = {"slices": reps, "truth": truth, "coverage": hits / reps, "false_pass": passes / reps,
             "median_width": float(np.median(widths)), "median_width_ratio": float(np.median(ratios))}
    if pass_fail:
        value["rogan_gladen"] = {"answered": rg_answered / reps, "coverage": rg_hits / max(rg_answered, 1),
                                 "false_pass": rg_passes / reps}
    return value


def agreeing(reps: int, sizes: tuple[int, ...], cache: Path) -> dict:
    """Judges that agree with the labels on most items, where a slice often shows no disagreement (issue 41, item
    7): the mean on SummEval's expert means rounded to integers, and pass rates near 0.9 (PASS_RULES' rounded
    labels); every cell on the same slices as the grid's."""
    done = _cached(cache)
    out = {}
    cells = []
    for dim in AGREEING_MEAN:
        h = _labels(dim)
        y = np.round(h)
        cells += [(f"mean|{dim}|{name}", y, f, BOUNDS, False) for name, f in _agreeing_judges(y, h).items()]
    for dim, threshold in AGREEING_PASS:
        h = _labels(dim)
        hp = np.round(h) >= threshold
        cells += [(f"pass|{dim} >= {threshold:g}|{name}", hp.astype(float), f.astype(float), (0.0, 1.0), True)
                  for name, f in _pass_judges(hp, h).items()]
    for name, y, f, bounds, pass_fail in cells:
        for n in sizes:
            key = f"agreeing|{INTERVAL_VERSION}|{name}|{n}|{reps}"
            if key not in done:
                value = _agreeing_cell(y, f, n, reps, bounds, pass_fail)
                value["r"] = float(np.corrcoef(y, f)[0, 1])
                _keep(cache, key, value)
                done[key] = value
                print(f"{name} n={n}: coverage {value['coverage']:.3f}", file=sys.stderr, flush=True)
            out[(name, n)] = done[key]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reps", type=int, default=1000, help="slices a cell (default 1000)")
    parser.add_argument("--extend-below", type=float, default=0.93, help="a cell below this gets as many slices again (default 0.93)")
    parser.add_argument("--regression", action="store_true", help="also the ppi_regression false-fail rate at the boundary")
    parser.add_argument("--pairs", type=int, default=2000, help="--regression: pairs of slices (default 2000)")
    parser.add_argument("--pass-rate", action="store_true", help="also the corrected pass rate's coverage")
    parser.add_argument("--pass-rate-sizes", default=f"{MIN_LABELS},50,100",
                        help="--pass-rate: slice sizes, comma list")
    parser.add_argument("--no-grid", action="store_true", help="skip the coverage grid")
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)), help="the grid's slice sizes, comma list (default 10,20,30,50,100)")
    parser.add_argument("--agreeing", action="store_true", help="also integer-valued and lenient judges, pass rates near 0.9 (issue 41)")
    parser.add_argument("--agreeing-sizes", default=f"10,20,{MIN_LABELS}", help="--agreeing: slice sizes, comma list")
    parser.add_argument("--cache", type=Path, default=Path("benchmarks/out/ppi-grid-cells.jsonl"))
    parser.add_argument("--json", type=Path, help="write every figure as JSON here")
    args = parser.parse_args(argv)
    report: dict = {}
    if not args.no_grid:
        sizes = tuple(int(v) for v in args.sizes.split(","))
        cells = grid(args.reps, args.extend_below, args.cache, sizes)
        print(f"Default corrected interval (cross-fit, bounded by 1-5), 95 %; coverage of the mean of 1,600 expert means; "
              f"{args.reps:,} slices a cell ({2 * args.reps:,} where a cell came out below {args.extend_below}).\n")
        print("| criterion | r(judge, human) | judge bias | judge scale | "
              + " | ".join(f"n = {n}: coverage, false pass" for n in sizes)
              + f" | median width n = {MIN_LABELS if MIN_LABELS in sizes else sizes[0]} (labels only) |")
        print("| --- | --- | --- | --- | " + " | ".join("---" for _ in sizes) + " | --- |")
        at_default, false_at_default = [], []
        for dim in CRITERIA:
            for r in QUALITIES:
                for b in BIASES:
                    for s in SCALES:
                        k = f"{b:+g}|{s}"
                        row = [cells[(dim, r, n)]["coverage"][k] for n in sizes]
                        at_default += [(cells[(dim, r, n)]["coverage"][k], (dim, r, b, s, n)) for n in sizes if n >= MIN_LABELS]
                        false_at_default += [(cells[(dim, r, n)]["false_pass"][k], (dim, r, b, s, n))
                                             for n in sizes if n >= MIN_LABELS]
                        marks = [f"{c:.3f}" + ("*" if cells[(dim, r, n)]["slices"] > args.reps else "")
                                 + f", {cells[(dim, r, n)]['false_pass'][k]:.3f}" for c, n in zip(row, sizes)]
                        c30 = cells[(dim, r, MIN_LABELS if MIN_LABELS in sizes else sizes[0])]
                        print(f"| {dim} | {c30['r']:.2f} | {b:+g} | {s} | " + " | ".join(marks) +
                              f" | {c30['median_width'][k]:.3f} ({c30['median_width_labels_only']:.3f}) |")
        values = [c for c, _ in at_default] or [float("nan")]
        worst = min(at_default) if at_default else (float("nan"), ("no cell with n >= min_labels",))
        shift = max(c["max_shift_difference"] for c in cells.values())
        moved = sum(c["rescale_moved"] for c in cells.values())
        moved_clip = sum(c["rescale_moved_where_clip_binds"] for c in cells.values())
        slices = sum(c["slices"] for c in cells.values())
        print(f"\n(* {2 * args.reps:,} slices.) Over the {len(at_default)} cells with n >= {MIN_LABELS} (the default min_labels): mean coverage "
              f"{np.mean(values):.3f}, lowest {worst[0]:.3f} ({', '.join(map(str, worst[1]))}). Largest difference of an estimate or "
              f"an interval end between the judge's shifts (bias 0/+1 x scale x - 4, x, x + 10) on the same slice, over "
              f"{slices:,} slices x 6 shifts: {shift:.1e}. 4x + 100 moved the interval (by more than 1e-9) on {moved} of "
              f"{2 * slices:,} slice-judges, {moved_clip} of them where a lambda's clip to [0, 1] binds.")
        most_false = max(false_at_default) if false_at_default else (float("nan"), ("no cell with n >= min_labels",))
        print("False passes at the boundary (a gate whose min is the true mean passes: low >= truth), same cells: "
              f"mean {np.mean([v for v, _ in false_at_default] or [float('nan')]):.3f}, highest {most_false[0]:.3f} "
              f"({', '.join(map(str, most_false[1]))}).")
        failing = [key for c, key in at_default if c < 0.93] + [key for v, key in false_at_default if v > 0.05]
        print("Cells with n >= min_labels below .93 coverage or above 5 % false passes: "
              + ("; ".join(", ".join(map(str, key)) for key in dict.fromkeys(failing)) or "none") + ".")
        labels_only = [(cells[(d, r, n)]["coverage_labels_only"], cells[(d, r, n)]["false_pass_labels_only"], d, n)
                       for d in CRITERIA for r in QUALITIES[:1] for n in sizes]
        print("Labels only (the same construction at lambda 0), coverage and false passes: "
              + "; ".join(f"{d} n = {n}: {c:.3f}, {v:.3f}" for c, v, d, n in labels_only))
        report["grid"] = {"|".join(map(str, k)): v for k, v in cells.items()}
        report["summary"] = {"cells_at_default": len(values), "mean": float(np.mean(values)), "lowest": worst[0],
                             "lowest_cell": list(map(str, worst[1])), "highest_false_pass": most_false[0],
                             "highest_false_pass_cell": list(map(str, most_false[1])),
                             "max_shift_difference": shift, "rescale_moved": moved,
                             "rescale_moved_where_clip_binds": moved_clip}
    if args.regression:
        sizes = (MIN_LABELS, 50, 100)
        out = regression(args.pairs, sizes, args.cache)
        print(f"\nppi_regression at the boundary (no drop; alpha 0.05, max_drop 0; judge = human + 1 + N(0, 0.5)); {args.pairs:,} pairs of "
              "independent slices of the same 1,600 items, through judgesdk.gate.decide:\n")
        print("| criterion | r(judge, human) | n | false-fail rate | 95 % CI (Wilson) |")
        print("| --- | --- | --- | --- | --- |")
        for (dim, n), v in out.items():
            ci = proportion_interval(v["fails"], v["pairs"])
            print(f"| {dim} | {v['r']:.2f} | {n} | {v['false_fail']:.4f} | [{ci.low:.4f}, {ci.high:.4f}] |")
        report["regression"] = {f"{d}|{n}": v for (d, n), v in out.items()}
    if args.pass_rate:
        sizes = tuple(int(v) for v in args.pass_rate_sizes.split(","))
        out = pass_rate(args.reps, sizes, args.cache)
        print(f"\nCorrected pass rate (PPI++ on pass indicators, the corrected_pass_rate default); {args.reps:,} slices a cell:\n")
        print("| human pass | true pass rate | r(judge, human) on the simulated scale | "
              + " | ".join(f"n = {n}: coverage, false pass (width)" for n in sizes) + " |")
        print("| --- | --- | --- | " + " | ".join("---" for _ in sizes) + " |")
        for dim, threshold in PASS_RULES:
            for r in QUALITIES:
                row = [out[(dim, threshold, r, n)] for n in sizes]
                print(f"| {dim} >= {threshold:g} | {row[0]['truth']:.3f} | {r} (pass/fail r = {row[0]['r']:.2f}) | "
                      + " | ".join(f"{c['coverage']:.3f}, {c['false_pass']:.3f} ({c['median_width']:.3f})" for c in row)
                      + " |")
        pooled = [v["coverage"] for v in out.values()]
        false = [v["false_pass"] for v in out.values()]
        print(f"\nOver the {len(pooled)} pass-rate cells: mean coverage {np.mean(pooled):.3f}, "
              f"lowest {min(pooled):.3f}; false passes at "
              f"the boundary (low >= the true pass rate) mean {np.mean(false):.3f}, highest {max(false):.3f}.")
        report["pass_rate"] = {"|".join(map(str, k)): v for k, v in out.items()}
    if args.agreeing:
        sizes = tuple(int(v) for v in args.agreeing_sizes.split(","))
        out = agreeing(args.reps, sizes, args.cache)
        print(f"\nJudges that agree with the labels on most items (labels: SummEval expert means rounded to integers); "
              f"{args.reps:,} slices a cell; false pass: a gate whose min is the true value passes (low >= truth); "
              "width: median of corrected / labels-only:\n")
        print("| target | labels | judge | r | truth | " + " | ".join(f"n = {n}: coverage, false pass, width" for n in sizes) +
              f" | Rogan-Gladen n = {sizes[-1]}: answered, coverage, false pass |")
        print("| --- | --- | --- | --- | --- | " + " | ".join("---" for _ in sizes) + " | --- |")
        for name in dict.fromkeys(k for k, _ in out):
            row = [out[(name, n)] for n in sizes]
            target, dim, judge = name.split("|")
            rg = row[-1].get("rogan_gladen")
            rg_cell = "—" if rg is None else f"{rg['answered']:.3f}, {rg['coverage']:.3f}, {rg['false_pass']:.3f}"
            print(f"| {target} | {dim} | {judge} | {row[0]['r']:.2f} | {row[0]['truth']:.3f} | "
                  + " | ".join(f"{c['coverage']:.3f}, {c['false_pass']:.3f}, {c['median_width_ratio']:.2f}" for c in row) + f" | {rg_cell} |")
        for n in sizes:
            cov = [v["coverage"] for (_, m), v in out.items() if m == n]
            fp = [v["false_pass"] for (_, m), v in out.items() if m == n]
            print(f"n = {n}: coverage {min(cov):.3f}-{max(cov):.3f}, false passes at most {max(fp):.3f} over {len(cov)} cells")
        report["agreeing"] = {"|".join(map(str, k)): v for k, v in out.items()}
    if args.json is not None:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
