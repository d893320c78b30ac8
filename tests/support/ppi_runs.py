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
