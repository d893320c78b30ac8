"""Fit the fused local judge on SummEval signals and measure it (nested CV by document).

    python benchmarks/fused_signals.py --dataset summeval        # the signals (about an hour on 2 cores)
    python benchmarks/fused_fit.py [--write] [--bootstrap 1000]

Prints, per criterion: each signal alone (mean per-document Spearman, its sign as measured), the fused
model's outer-fold agreement (per-document Spearman, pooled Spearman, system-level Kendall, with bootstrap
CIs over documents), and what the inner folds chose. ``--write`` saves the fit shipped in the package
(judgesdk/fused_data/). ``--transfer FILE`` applies the shipped fit, unchanged, to another dataset's
signals (e.g. NewsRoom) and compares it with each signal alone there.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

from judgesdk.fused import model as fused_model
from judgesdk.fused.fit import CriterionFit, fit_criterion, group_codes, mean_group_spearman, system_kendall
from judgesdk.fused.model import ModelIdentity
from judgesdk.fused.signals import Evidence, features as evidence_features
from judgesdk.fused.text import text_features
from judgesdk.meta.datasets import load_dataset
from judgesdk.meta.natural import natural
from judgesdk.fused.train import fit_file, signal_table
from judgesdk.meta.datasets import shared_data_dir
from judgesdk.providers.llamacpp import EMBEDDED_MODEL, embedded_sha256

CRITERIA = ("coherence", "consistency", "fluency", "relevance")
SHIPPED = Path(__file__).resolve().parents[1] / "judgesdk" / "fused_data" / f"{EMBEDDED_MODEL}.summeval.json"


def load(path: Path, dataset: str) -> list[dict]:
    """Signal rows with their model-free features recomputed from the natural text (they cost no model
    call, so changing them needs no new extraction), the reference's n-gram overlap included, and without
    the likelihood given the reference (computed for the first outputs only: too slow for every one)."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    records = {f"{r.doc_id}::{r.system_id}": natural(r) for r in load_dataset(dataset)}
    for row in rows:
        record = records[row["id"]]
        evidence = Evidence.model_validate(row["evidence"]).model_copy(update={"reference": None})
        evidence = evidence.model_copy(update={"text": text_features(record.output, record.source, record.reference)})
        row["features"] = evidence_features(evidence)
    return rows


def bootstrap(pred: np.ndarray, y: np.ndarray, docs: list[str], n: int, seed: int = 0) -> tuple[float, float]:
    codes = group_codes(docs)
    unique = np.unique(codes)
    rng = np.random.default_rng(seed)
    per_doc = {}
    for g in unique:
        m = codes == g
        per_doc[g] = mean_group_spearman(pred[m], y[m], np.zeros(m.sum(), dtype=int))
    values = np.array([per_doc[g] for g in unique])
    values = values[np.isfinite(values)]
    stats = [rng.choice(values, len(values)).mean() for _ in range(n)]
    return float(np.quantile(stats, 0.025)), float(np.quantile(stats, 0.975))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--signals", type=Path, default=Path("benchmarks/out/signals/summeval.jsonl"))
    parser.add_argument("--write", action="store_true", help=f"save the fit to {SHIPPED}")
    parser.add_argument("--bootstrap", type=int, default=0)
    parser.add_argument("--variant", choices=["source", "source+reference"], default="source", help="which variant's table to print")
    parser.add_argument("--transfer", type=Path, help="signals of another dataset to apply the shipped fit to")
    parser.add_argument("--map", default="", help="transfer criterion mapping, e.g. informativeness=relevance")
    args = parser.parse_args()
    if shared_data_dir() is None or not args.signals.exists():
        print("shared data or signals not found: run benchmarks/fused_signals.py first", file=sys.stderr)
        return 0
    if args.transfer:
        return transfer(args.transfer, dict(kv.split("=") for kv in args.map.split(",") if kv))
    rows = load(args.signals, "summeval")
    features = [r["features"] for r in rows]
    docs = [r["doc_id"] for r in rows]
    systems = [r["system_id"] for r in rows]
    print(f"{len(rows)} outputs, {len(set(docs))} documents")
    summary = {}
    names = sorted(set.intersection(*(set(f) for f in features)))
    for name in CRITERIA:
        y = np.array([r["scores"][name] for r in rows])
        aux = np.mean([[r["scores"][c] for c in CRITERIA] for r in rows], axis=1)
        fitted: CriterionFit = fit_criterion(features, y, docs, criterion=name, variant=args.variant, low=1.0, high=5.0, auxiliary=aux)
        summary[name] = mean_group_spearman(fitted.predictions, y, group_codes(docs))
        print(f"\n### {name}\n\nchosen by the inner folds on all data: {fitted.model.choice}\n")
        print("| predictor | per-document Spearman [95% CI] | pooled Spearman | system Kendall |\n| --- | --- | --- | --- |")
        columns = [("fused (nested CV)", fitted.predictions)] + [(n, np.array([f[n] for f in features])) for n in names]
        for label, pred in sorted(columns, key=lambda c: -abs(mean_group_spearman(c[1], y, group_codes(docs))) if c[0] != "fused (nested CV)" else -9):
            per_doc = mean_group_spearman(pred, y, group_codes(docs))
            ci = bootstrap(pred, y, docs, args.bootstrap) if args.bootstrap else None
            pooled = float(spearmanr(pred, y).statistic)
            ci_text = f" [{ci[0]:+.3f}, {ci[1]:+.3f}]" if ci else ""
            print(f"| {label} | {per_doc:+.3f}{ci_text} | {pooled:+.3f} | {system_kendall(pred, y, systems):+.3f} |")
    print(f"\naverage per-document Spearman of the fused judge (nested CV): {np.mean(list(summary.values())):.3f} "
          + ", ".join(f"{c} {v:.3f}" for c, v in summary.items()))
    if args.write:
        labels = {c: [r["scores"][c] for r in rows] for c in CRITERIA}
        identity = ModelIdentity(name=EMBEDDED_MODEL, sha256=embedded_sha256())
        data_file = shared_data_dir() / "summeval.jsonl"  # type: ignore[operator]
        data = {
            "dataset": "summeval", "items": len(rows), "documents": len(set(docs)),
            "file_sha256": hashlib.sha256(data_file.read_bytes()).hexdigest(), "text": "judgesdk.meta.natural",
        }  # fmt: skip
        fitted_file = fit_file(features, labels, docs, model=identity, scales={c: (1.0, 5.0) for c in CRITERIA}, data=data)
        print(f"saved {fused_model.save(fitted_file, SHIPPED)}")
    return 0


def transfer(path: Path, mapping: dict[str, str]) -> int:
    fitted = fused_model.load(SHIPPED)
    rows = load(path, path.stem)
    docs = [r["doc_id"] for r in rows]
    codes = group_codes(docs)
    dims = sorted(rows[0]["scores"])
    for dim in dims:
        target = mapping.get(dim, dim)
        model = fitted.for_criterion(target, has_reference=False)
        if model is None:
            continue
        y = np.array([r["scores"][dim] for r in rows])
        pred = np.array([model.predict(r["features"])[0] for r in rows])
        singles = signal_table([r["features"] for r in rows], y, docs)
        best = max(singles.items(), key=lambda kv: kv[1])
        print(f"{dim} (fit: {target}): fused {mean_group_spearman(pred, y, codes):.3f}; best single signal {best[0]} {best[1]:+.3f}; "
              f"cond_mean {singles.get('cond_mean', float('nan')):+.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
