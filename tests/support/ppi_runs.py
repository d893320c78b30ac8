"""PPI test helpers, shared by the PPI and the label-scale tests: a population of labels with a correlated judge, a
run's results and a planner-drawn labels file written from it, and a gate config over them."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from judgesdk.gate import draw_slice


def population(rng, n, rho, bias=0.0, scale=1.0):
    """Labels on a 1-5 scale and a judge correlated rho with them, biased and on its own scale."""
    y = np.clip(3.2 + 0.9 * rng.standard_normal(n), 1, 5)
    noise = rng.standard_normal(n)
    z = (y - 3.2) / 0.9
    f = bias + scale * (rho * z + np.sqrt(1 - rho**2) * noise)
    return y, f


def write_run(
    tmp_path: Path, *, rho: float = 0.8, n_items: int = 400, n_labels: int = 50, seed: int = 0, bias: float = -0.6,
    human_shift: float = 0.0, slice_seed: int | None = None, name: str = "",
):
    """A results file of judge scores, and a labels file for a slice drawn by the planner (``name`` prefixes
    both files; ``human_shift`` moves the human scores the judge does not see)."""
    rng = np.random.default_rng(seed)
    y, f = population(rng, n_items, rho=rho, bias=3.2 + bias, scale=0.9)
    y = np.clip(y + human_shift, 1, 5)
    ids = [f"doc{k // 4}:sys{k % 4}" for k in range(n_items)]
    rows = [{"id": i, "criterion": "quality", "method": "geval/exact", "status": "ok", "score": float(s)} for i, s in zip(ids, f)]
    (tmp_path / f"{name}results.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    human = dict(zip(ids, np.round(y)))
    chosen = draw_slice(ids, n_labels, seed=seed if slice_seed is None else slice_seed)
    (tmp_path / f"{name}labels.jsonl").write_text("".join(json.dumps({"id": i, "label": float(human[i])}) + "\n" for i in chosen))
    return float(np.mean(list(human.values()))), float(np.mean(f))


def gate_file(tmp_path: Path, gates: str, labels: str = 'labels = "labels.jsonl"\n') -> Path:
    path = tmp_path / "gate.toml"
    path.write_text(f'results = "results.jsonl"\n[[criteria]]\nname = "quality"\n{labels}' + gates)
    return path


def gate_of(verdict, check):
    return next(g for g in verdict.gates if g.check == check)


TOP_PILED = (0.02, 0.03, 0.06, 0.29, 0.60)  # labels 1-5 piled at the top: 89 % at 4 or above
SPREAD = (0.10, 0.20, 0.30, 0.25, 0.15)


def integer_labels(rng, n, probs=SPREAD):
    """``n`` integer labels on 1-5 drawn with the shares ``probs`` (of 1, 2, ..., 5)."""
    return rng.choice([1.0, 2.0, 3.0, 4.0, 5.0], size=n, p=list(probs))


def slice_coverage(human, judge, n_labels, reps, bounds, seed=0, **kwargs):
    """Draw ``reps`` random slices of ``n_labels`` items (seeded), the rest unlabelled, and run the default
    corrected interval (``judgesdk.stats.ppi_mean``, ``bounds`` the scale) on each: (share of intervals that hold
    the population mean of ``human``, share whose low end reaches it, i.e. a gate with min = the truth passes,
    median width of the corrected interval over the labels-only one)."""
    from judgesdk.stats import ppi_mean

    rng = np.random.default_rng(seed)
    truth, covered, passed, ratios = float(np.mean(human)), 0, 0, []
    for _ in range(reps):
        mask = np.zeros(len(human), bool)
        mask[rng.choice(len(human), n_labels, replace=False)] = True
        est = ppi_mean(human[mask], judge[mask], judge[~mask], bounds=bounds, **kwargs)
        covered += est.corrected.low <= truth <= est.corrected.high
        passed += est.corrected.low >= truth
        ratios.append(est.corrected.width / est.human_only.width)
    return covered / reps, passed / reps, float(np.median(ratios))
