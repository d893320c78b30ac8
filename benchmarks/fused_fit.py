"""Fit the fused local judge on annotated news-summary signals and measure it (nested CV by document).

    python benchmarks/fused_signals.py --dataset summeval --no-reference --no-questions   # ~50 min on 2 cores
    python benchmarks/fused_signals.py --dataset newsroom --no-reference --no-questions
    python benchmarks/fused_fit.py [--bootstrap 1000]                                     # the news fit's tables
    python benchmarks/fused_fit.py --transfer benchmarks/out/signals/newsroom.jsonl \
        --map informativeness=relevance                                                   # unseen data

The shipped fit is made on SummEval alone, so NewsRoom measures it on data it never saw. ``--also``
remains for experiments (a fit on both data sets).

Prints, per criterion: the fused model's outer-fold agreement on each dataset (per-document Spearman,
pooled Spearman, system-level Kendall, bootstrap CIs over documents), what the inner folds chose, and each
signal alone on SummEval. ``--also`` adds other datasets' rows to the fit (a criterion a dataset does not
annotate leaves its rows out of that criterion's model; documents stay whole in the folds). The fits
shipped in the package (judgesdk/fused/data/: news with its envelope and reference variant, dialogue,
stories) are written by ``benchmarks/fused_domains.py --write``; ``--fit-out`` saves this script's fit elsewhere.
``--transfer FILE`` applies a fit (``--model``, default the shipped one), unchanged, to another dataset's
signals and compares it with each signal alone there.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import numpy as np
from scipy.stats import spearmanr

from judgesdk.fused import (
    CriterionFit,
    Evidence,
    ModelIdentity,
    fit_criterion,
    fit_file,
    group_codes,
    mean_group_spearman,
    readable,
    save,
    signal_table,
    signs_for,
    system_kendall,
    text_features,
)
from judgesdk.fused import features as evidence_features
from judgesdk.fused import load as fused_model_load
from judgesdk.meta import load_dataset, natural, shared_data_dir
from judgesdk.providers import EMBEDDED_MODEL, embedded_sha256

CRITERIA = ("coherence", "consistency", "fluency", "relevance")
SHIPPED = Path(__file__).resolve().parents[1] / "judgesdk" / "fused" / "data" / f"{EMBEDDED_MODEL}.news.json"


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
    parser.add_argument("--also", default="", help="comma list of other datasets whose signals (same folder) join the fit, e.g. newsroom")
    parser.add_argument("--write", action="store_true", help="moved: benchmarks/fused_domains.py --write writes the shipped fits")
    parser.add_argument("--fit-out", type=Path, help="save the fit to this file instead")
    parser.add_argument("--bootstrap", type=int, default=0)
    parser.add_argument("--drop", default="", help="comma list of features to leave out (e.g. the unconditional pass's)")
    parser.add_argument("--without-source-for", default="consistency",
                        help="comma list of criteria that may read the pass without the source (it doubles a criterion's model time)")
    parser.add_argument("--variant", choices=["source", "source+reference"], default="source", help="which variant's table to print")
    parser.add_argument("--transfer", type=Path, help="signals of another dataset to apply a fit to")
    parser.add_argument("--model", type=Path, default=SHIPPED, help="the fit --transfer applies")
    parser.add_argument("--map", default="", help="transfer criterion mapping, e.g. informativeness=relevance")
    args = parser.parse_args()
    if shared_data_dir() is None or not args.signals.exists():
        print("shared data or signals not found: run benchmarks/fused_signals.py first", file=sys.stderr)
        return 0
    if args.write:
        print("the shipped fits are written by benchmarks/fused_domains.py --write (with their envelopes)", file=sys.stderr)
        return 2
    if args.transfer:
        return transfer(args.transfer, args.model, dict(kv.split("=") for kv in args.map.split(",") if kv))
    datasets = ["summeval"] + [d for d in args.also.split(",") if d]
    rows = []
    for name in datasets:
        for row in load(args.signals.parent / f"{name}.jsonl" if name != "summeval" else args.signals, name):
            rows.append({**row, "dataset": name, "doc_id": f"{name}:{row['doc_id']}"})  # doc ids stay apart
    for name in filter(None, args.drop.split(",")):
        for row in rows:
            row["features"].pop(name, None)
    print(", ".join(f"{d}: {sum(r['dataset'] == d for r in rows)} outputs, {len({r['doc_id'] for r in rows if r['dataset'] == d})} documents" for d in datasets))
    criteria = [c for c in CRITERIA if any(c in r["scores"] for r in rows)]
    without_source = set(filter(None, args.without_source_for.split(",")))
    labels = {c: [r["scores"].get(c) for r in rows] for c in criteria}
    # the auxiliary target (mean of every criterion) where all of a criterion's rows have every label, as
    # judgesdk.fused.train.fit_file does for the shipped fit
    mean_label = [float(np.mean([labels[c][i] for c in criteria])) if all(labels[c][i] is not None for c in criteria) else None for i in range(len(rows))]
    summary: dict[str, dict[str, float]] = {}
    for name in criteria:
        keep = [i for i, v in enumerate(labels[name]) if v is not None]
        sub = [rows[i] for i in keep]
        features = readable([r["features"] for r in sub], name, without_source)  # what fit_file reads
        docs = [r["doc_id"] for r in sub]
        y = np.array([labels[name][i] for i in keep], dtype=float)
        aux = None if any(mean_label[i] is None for i in keep) else np.array([mean_label[i] for i in keep])
        fitted: CriterionFit = fit_criterion(features, y.tolist(), docs, criterion=name, variant=args.variant, low=1.0, high=5.0, auxiliary=None if aux is None else aux.tolist(), signs=signs_for(name))
        print(f"\n### {name}\n\nchosen by the inner folds on all data: {fitted.model.choice}\n")
        print("| data | predictor | per-document Spearman [95% CI] | pooled Spearman | system Kendall |\n| --- | --- | --- | --- | --- |")
        for dataset in datasets:
            idx = [i for i, r in enumerate(sub) if r["dataset"] == dataset]
            if not idx:
                continue
            d_docs, d_y = [docs[i] for i in idx], y[idx]
            d_systems = [sub[i]["system_id"] for i in idx]
            columns = [("fused (nested CV)", fitted.predictions[idx])]
            if dataset == "summeval":
                names = sorted(set.intersection(*(set(features[i]) for i in idx)))
                singles = [(n, np.array([features[i][n] for i in idx])) for n in names]
                columns += sorted(singles, key=lambda c: -abs(mean_group_spearman(c[1], d_y, group_codes(d_docs))))
            for label, pred in columns:
                per_doc = mean_group_spearman(pred, d_y, group_codes(d_docs))
                if label.startswith("fused"):
                    summary.setdefault(dataset, {})[name] = per_doc
                ci = bootstrap(pred, d_y, d_docs, args.bootstrap) if args.bootstrap else None
                ci_text = f" [{ci[0]:+.3f}, {ci[1]:+.3f}]" if ci else ""
                pooled = float(spearmanr(pred, d_y).statistic)
                print(f"| {dataset} | {label} | {per_doc:+.3f}{ci_text} | {pooled:+.3f} | {system_kendall(pred, d_y, d_systems):+.3f} |")
    for dataset, values in summary.items():
        print(f"\n{dataset}: average per-document Spearman of the fused judge (nested CV): {np.mean(list(values.values())):.3f} "
              + ", ".join(f"{c} {v:.3f}" for c, v in values.items()))
    target = args.fit_out
    if target:
        identity = ModelIdentity(name=EMBEDDED_MODEL, sha256=embedded_sha256())
        files = {d: shared_data_dir() / f"{d}.jsonl" for d in datasets}  # type: ignore[operator]
        data = {
            "dataset": "+".join(datasets), "items": len(rows), "documents": len({r["doc_id"] for r in rows}),
            "file_sha256": {d: hashlib.sha256(f.read_bytes()).hexdigest() for d, f in files.items()},
            "text": "judgesdk.meta.naturalize",
        }  # fmt: skip
        fitted_file = fit_file([r["features"] for r in rows], labels, [r["doc_id"] for r in rows], model=identity,
                               scales={c: (1.0, 5.0) for c in criteria}, data=data, without_source_for=without_source)  # fmt: skip
        print(f"saved {save(fitted_file, target)}")
    return 0


def transfer(path: Path, model_path: Path, mapping: dict[str, str]) -> int:
    fitted = fused_model_load(model_path)
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
        singles = signal_table([r["features"] for r in rows], y.tolist(), docs)
        best = max(singles.items(), key=lambda kv: kv[1])
        low, high = bootstrap(pred, y, docs, 1000)
        print(f"{dim} (fit: {target}): fused {mean_group_spearman(pred, y, codes):.3f} [{low:.3f}, {high:.3f}] "
              f"(pooled {spearmanr(pred, y).statistic:.3f}, system Kendall {system_kendall(pred, y, [r['system_id'] for r in rows]):.3f}); "
              f"best single signal {best[0]} {best[1]:+.3f}; cond_mean {singles.get('cond_mean', float('nan')):+.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
