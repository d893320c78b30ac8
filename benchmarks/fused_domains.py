"""Fit and measure the fused local judge per domain: news (source-only and with the reference), dialogue, stories.

    python benchmarks/fused_signals.py --dataset summeval --no-questions            # news, with the reference pass
    python benchmarks/fused_signals.py --dataset newsroom --no-reference --no-questions
    python benchmarks/fused_signals.py --dataset topicalchat --no-reference        # dialogue prompts
    python benchmarks/fused_signals.py --dataset hanna --no-reference              # story prompts
    python benchmarks/fused_domains.py [--domains news,dialogue,story] [--write]
    python benchmarks/fused_domains.py --envelope-only      # the shipped news fit, weights unchanged, with its envelope

Per domain and criterion (nested CV by group: SummEval by document, TopicalChat by dialogue context, HANNA
by writing prompt; 5 outer x 4 inner folds, seed 0): the fused model's per-group Spearman with a 95 %
bootstrap CI over groups, pooled Spearman, system-level Kendall, the best single signal (chosen on the same
data with its sign: optimistic; and chosen inside each outer fold: honest), the share of held-out human
scores inside the 80 % interval with its item count and Clopper-Pearson 95 % CI, and whether the criterion
ships (dialogue and stories: its CI above 0 and above the best single signal). News is fitted source-only
and with the reference (n-gram overlap alone, and with the likelihood given the reference). Then the
checks on data no fit saw: NewsRoom for the news fit (agreement, interval coverage, share of items inside
the envelope), and for stories a fit on one half of HANNA's prompts tested on the other half (both ways).
Each pass's seconds per output come from the signal files. ``--write`` saves the shipped fit files
(judgesdk/fused/data/); the full report goes to ``--json``. ``--envelope-only`` refits nothing: it gives the
shipped news fit (its weights, calibration and intervals unchanged) the domain and the envelope of SummEval's
1,600 items (their shapes need no model call) and saves it as format 2, so ``auto`` stops applying it to items
of another shape (HANNA's stories) without the refit that needs every output's signals.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

import numpy as np
from scipy.stats import binomtest, spearmanr

from judgesdk.fused import (
    FORMAT,
    CriterionFit,
    Declined,
    Evidence,
    FusedModelFile,
    ModelIdentity,
    envelope,
    fit_file,
    group_bootstrap,
    group_codes,
    mean_group_spearman,
    save,
    shape,
    signal_table,
    system_kendall,
    text_features,
)
from judgesdk.fused import features as evidence_features
from judgesdk.fused import load as fused_model_load
from judgesdk.meta import load_dataset, natural, shared_data_dir
from judgesdk.providers import EMBEDDED_MODEL, embedded_sha256

DATA = Path(__file__).resolve().parents[1] / "judgesdk" / "fused" / "data"
DOMAINS = {
    # domain: dataset, criteria with their scales, who may read the pass without the source, ship rule
    "news": ("summeval", {c: (1.0, 5.0) for c in ("coherence", "consistency", "fluency", "relevance")}, {"consistency"}, "always"),
    "dialogue": (
        "topicalchat",
        {"naturalness": (1.0, 3.0), "coherence": (1.0, 3.0), "engagingness": (1.0, 3.0), "groundedness": (0.0, 1.0),
         "understandability": (0.0, 1.0), "overall": (1.0, 5.0)},
        None, "beats-single",
    ),
    "story": ("hanna", {c: (1.0, 5.0) for c in ("relevance", "coherence", "empathy", "surprise", "engagement", "complexity")}, None, "beats-single"),
}  # fmt: skip
REFERENCE_LIKELIHOOD = ("ref_mean", "ref_pmi")
# A dialogue or story fit ships only with at least this many groups behind it (TopicalChat has 60 conversations;
# HANNA's subsample may have fewer prompts): with three to nine groups a bootstrap CI over groups is too coarse
# to say "above 0".
MIN_GROUPS_TO_SHIP = 10


def load(path: Path, dataset: str, *, reference_likelihood: bool = True) -> list[dict]:
    """Signal rows with their model-free features recomputed from the natural text (they cost no model call),
    the shape of each item, and, unless ``reference_likelihood`` is off, the likelihood given the reference
    where it was computed."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    records = {f"{r.doc_id}::{r.system_id}": natural(r) for r in load_dataset(dataset)}
    for row in rows:
        record = records[row["id"]]
        evidence = Evidence.model_validate(row["evidence"])
        if not reference_likelihood:
            evidence = evidence.model_copy(update={"reference": None})
        context = record.context if record.context and record.context.strip() else None
        text = text_features(record.output, record.source, record.reference, context=context)
        row["features"] = evidence_features(evidence.model_copy(update={"text": text}))
        row["shape"] = shape(record.output, record.source)
        row["has_context"] = context is not None
        row["seconds"] = evidence.seconds
    return rows


def coverage(intervals: np.ndarray, y: np.ndarray) -> dict[str, float]:
    inside = (intervals[:, 0] <= y + 1e-9) & (y - 1e-9 <= intervals[:, 1])
    k, n = int(inside.sum()), len(y)
    ci = binomtest(k, n).proportion_ci(confidence_level=0.95)
    return {"share": k / n, "items": n, "ci_low": float(ci.low), "ci_high": float(ci.high), "overlaps_0.75-0.85": bool(ci.high >= 0.75 and ci.low <= 0.85)}


def describe(fit: CriterionFit, y: np.ndarray, docs: list[str], systems: list[str], features: list[dict[str, float]]) -> dict[str, object]:
    codes = group_codes(docs)
    pred = fit.predictions
    low, high = group_bootstrap(pred, y, codes, 1000, 0)
    table = signal_table(features, list(y), docs)
    best = max(table.items(), key=lambda kv: abs(kv[1]))
    cv = fit.model.cv
    return {
        "per_group": mean_group_spearman(pred, y, codes), "ci": [low, high],
        "pooled": float(spearmanr(pred, y).statistic), "system_kendall": system_kendall(pred, y, systems),
        "best_single": {"signal": best[0], "per_group": best[1], "nested": cv.get("best_single_signal_nested_per_doc_spearman")},
        "coverage": coverage(fit.intervals, y) if fit.intervals is not None else None,
        "choice": fit.model.choice, "features": fit.model.features, "items": len(y), "groups": len(set(docs)),
    }  # fmt: skip


def fit_domain(
    domain: str, rows: list[dict], *, reference: bool = False, drop: tuple[str, ...] = (), ship: str | None = None
) -> tuple[FusedModelFile, dict]:
    dataset, scales, without_source, rule = DOMAINS[domain]
    ship = ship or rule
    criteria = [c for c in scales if any(c in r["scores"] for r in rows)]
    # without the reference variant, no reference signal is read, not even as the best single signal: HANNA's and
    # TopicalChat's "reference" is the human story or response of the same group (the Human system's output itself)
    feats = [{k: v for k, v in r["features"].items() if k not in drop and (reference or not k.startswith("ref_"))} for r in rows]
    labels = {c: [r["scores"].get(c) for r in rows] for c in criteria}
    files = {dataset: shared_data_dir() / f"{dataset}.jsonl"}  # type: ignore[operator]
    data = {
        "dataset": dataset, "items": len(rows), "documents": len({r["doc_id"] for r in rows}),
        # which documents (prompts, conversations) were fitted: the others in the file are data the fit never saw
        "groups": sorted({r["doc_id"] for r in rows}),
        "file_sha256": {d: hashlib.sha256(f.read_bytes()).hexdigest() for d, f in files.items()}, "text": "judgesdk.meta.naturalize",
    }  # fmt: skip
    fits: dict[str, dict[str, CriterionFit]] = {}
    fitted = fit_file(
        feats, labels, [r["doc_id"] for r in rows], model=ModelIdentity(name=EMBEDDED_MODEL, sha256=embedded_sha256()),
        scales={c: scales[c] for c in criteria}, data=data, domain=domain, shapes=[r["shape"] for r in rows], ship=ship,
        reference_variant=reference, without_source_for=without_source, fits=fits,
    )  # fmt: skip
    groups = len({r["doc_id"] for r in rows})
    if ship == "beats-single" and groups < MIN_GROUPS_TO_SHIP:
        why = f"fitted on {groups} groups: fewer than {MIN_GROUPS_TO_SHIP}, too few for a bootstrap CI over groups to mean anything"
        moved = [Declined(criterion=name, reason=why, cv=models[0].cv) for name, models in fitted.criteria.items()]
        fitted = fitted.model_copy(update={"criteria": {}, "aliases": {}, "declined": [*moved, *fitted.declined]})
    report: dict[str, dict[str, object]] = {}
    for name, variants in fits.items():
        keep = [i for i, r in enumerate(rows) if r["scores"].get(name) is not None]
        y = np.array([rows[i]["scores"][name] for i in keep], dtype=float)
        docs, systems = [rows[i]["doc_id"] for i in keep], [rows[i]["system_id"] for i in keep]
        for variant, fit in variants.items():
            report[f"{name}/{variant}"] = describe(fit, y, docs, systems, [feats[i] for i in keep])
            report[f"{name}/{variant}"]["ships"] = any(m.variant == variant for m in fitted.criteria.get(name, []))
    report["declined"] = {f"{d.criterion}/{d.variant}": d.reason for d in fitted.declined}
    return fitted, report


def apply(
    fitted: FusedModelFile, rows: list[dict], mapping: dict[str, str] | None = None, *, reference: bool = True, with_reference: bool = False
) -> dict[str, object]:
    """A fit, unchanged, on rows it never saw: agreement, interval coverage, the share inside its envelope.
    ``reference`` off: no ref_* signal competes as the best single signal (see :func:`fit_domain`).
    ``with_reference``: each criterion's source+reference variant where the fit has one, as ``auto`` picks it for
    an item that carries a reference (every NewsRoom item does)."""
    inside = [not fitted.envelope.outside(r["shape"], has_context=r["has_context"]) for r in rows] if fitted.envelope else [True] * len(rows)
    out: dict[str, object] = {"inside_envelope": sum(inside), "items": len(rows)}
    for dim in sorted(rows[0]["scores"]):
        target = (mapping or {}).get(dim, dim)
        model = fitted.for_criterion(target, has_reference=with_reference)
        if model is None:
            continue
        y = np.array([r["scores"][dim] for r in rows], dtype=float)
        docs = [r["doc_id"] for r in rows]
        codes = group_codes(docs)
        predicted = [model.predict(r["features"]) for r in rows]
        pred = np.array([p[0] for p in predicted])
        intervals = np.array([p[1] for p in predicted])
        low, high = group_bootstrap(pred, y, codes, 1000, 0)
        mask = np.array(inside)
        table = signal_table([{k: v for k, v in r["features"].items() if reference or not k.startswith("ref_")} for r in rows], list(y), docs)
        best = max(table.items(), key=lambda kv: abs(kv[1]))
        out[dim] = {
            "fit": target, "per_group": mean_group_spearman(pred, y, codes), "ci": [low, high], "pooled": float(spearmanr(pred, y).statistic),
            "system_kendall": system_kendall(pred, y, [r["system_id"] for r in rows]), "coverage": coverage(intervals, y),
            "per_group_inside_envelope": mean_group_spearman(pred[mask], y[mask], group_codes([d for d, m in zip(docs, mask) if m])),
            "best_single": {"signal": best[0], "per_group": best[1]},
        }  # fmt: skip
    return out


def halves(rows: list[dict], seed: int = 0) -> tuple[list[dict], list[dict]]:
    prompts = sorted({r["doc_id"] for r in rows})
    first = set(np.random.default_rng(seed).permutation(prompts)[: len(prompts) // 2])
    return [r for r in rows if r["doc_id"] in first], [r for r in rows if r["doc_id"] not in first]


def seconds_per_pass(rows: list[dict]) -> dict[str, float]:
    kinds = sorted({k for r in rows for k in r["seconds"]})
    return {k: round(float(np.mean([r["seconds"][k] for r in rows if k in r["seconds"]])), 3) for k in kinds}


def fmt(value: float | None, digits: int = 3) -> str:
    return "—" if value is None or not np.isfinite(value) else f"{value:.{digits}f}"


def print_table(domain: str, report: dict) -> None:
    print(f"\n### {domain}\n")
    print("| criterion | variant | per-group Spearman [95 % CI] | pooled | system Kendall | best single signal (in-sample / nested) | 80 % interval coverage [95 % CI], items | ships |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for key, r in report.items():
        if key == "declined":
            continue
        name, variant = key.split("/", 1)
        b, c = r["best_single"], r["coverage"]
        cov = f"{c['share']:.3f} [{c['ci_low']:.3f}, {c['ci_high']:.3f}], {c['items']}" if c else "—"
        print(f"| {name} | {variant} | {fmt(r['per_group'])} [{fmt(r['ci'][0])}, {fmt(r['ci'][1])}] | {fmt(r['pooled'])} | {fmt(r['system_kendall'])} | "
              f"`{b['signal']}` {fmt(b['per_group'])} / {fmt(b['nested'])} | {cov} | {'yes' if r['ships'] else 'no'} |")  # fmt: skip
    for key, reason in report.get("declined", {}).items():
        print(f"- declined {key}: {reason}")


def envelope_only() -> Path:
    """The shipped news fit with the envelope of the items it was fitted on (SummEval's, natural text)."""
    path = DATA / f"{EMBEDDED_MODEL}.news.json"
    fitted = fused_model_load(path)
    dataset = str(fitted.data.get("dataset", "summeval"))
    shapes = [shape(r.output, r.source) for r in map(natural, load_dataset(dataset))]
    bounded = fitted.model_copy(update={"format": FORMAT, "domain": "news", "envelope": envelope(shapes, context="absent")})
    return save(bounded, path)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--signals", type=Path, default=Path("benchmarks/out/signals"))
    parser.add_argument("--domains", default="news,dialogue,story")
    parser.add_argument("--reference", choices=["none", "ngram", "likelihood", "both"], default="both",
                        help="news with the reference: n-gram overlap alone, with the likelihood given it, or both (reported; --write ships --ship-reference)")
    parser.add_argument("--ship-reference", choices=["ngram", "likelihood"], default="ngram", help="which reference variant the written news fit carries")
    parser.add_argument("--write", action="store_true", help=f"save the shipped fits to {DATA}")
    parser.add_argument("--json", type=Path, default=Path("benchmarks/out/fused_domains.json"))
    parser.add_argument("--envelope-only", action="store_true", help="add the envelope to the shipped news fit, refitting nothing")
    args = parser.parse_args()
    if shared_data_dir() is None:
        print("shared data not found (../shared/data): nothing to measure", file=sys.stderr)
        return 0
    if args.envelope_only:
        print(f"saved {envelope_only()}")
        return 0
    report: dict[str, object] = {}
    for domain in filter(None, args.domains.split(",")):
        dataset = DOMAINS[domain][0]
        path = args.signals / f"{dataset}.jsonl"
        if not path.exists():
            print(f"{path} not found: run benchmarks/fused_signals.py --dataset {dataset}", file=sys.stderr)
            continue
        rows = load(path, dataset)
        print(f"\n## {domain}: {dataset}, {len(rows)} outputs, {len({r['doc_id'] for r in rows})} groups; seconds per output and pass {seconds_per_pass(rows)}")
        if domain == "news":
            variants = {"ngram": REFERENCE_LIKELIHOOD, "likelihood": ()}
            chosen = [args.ship_reference] + [v for v in variants if v != args.ship_reference and args.reference in (v, "both")]
            for name in chosen:
                fitted, part = fit_domain(domain, rows, reference=args.reference != "none", drop=variants[name])
                report[f"news ({name})"] = part
                print_table(f"news, reference variant: {name}", part)
                if name == args.ship_reference:
                    shipped = fitted
            newsroom = args.signals / "newsroom.jsonl"
            if newsroom.exists():
                newsroom_rows = load(newsroom, "newsroom")
                report["newsroom"] = apply(shipped, newsroom_rows, {"informativeness": "relevance"})
                print(f"\nNewsRoom, the news fit unchanged: {json.dumps(report['newsroom'], indent=1)}")
                # NewsRoom carries each article's published summary as its reference, so auto reads that variant there
                report["newsroom, with the reference"] = apply(shipped, newsroom_rows, {"informativeness": "relevance"}, with_reference=True)
                print(f"\nNewsRoom with its reference, the news fit unchanged: {json.dumps(report['newsroom, with the reference'], indent=1)}")
        else:
            shipped, part = fit_domain(domain, rows)
            report[domain] = part
            print_table(domain, part)
            if domain == "story":
                a, b = halves(rows)
                transfer: dict[str, object] = {}
                for label, (train, test) in {"first half -> second": (a, b), "second half -> first": (b, a)}.items():
                    if len({r["doc_id"] for r in train}) < 3:  # nested CV needs three groups
                        transfer[label] = f"not measured: {len({r['doc_id'] for r in train})} prompts to fit on"
                        continue
                    half_fit, _ = fit_domain(domain, train, ship="always")  # every criterion, to see how each transfers
                    transfer[label] = apply(half_fit, test, reference=False)
                report["story transfer"] = transfer
                print(f"\nHANNA, fit on half of the prompts, tested on the other half: {json.dumps(transfer, indent=1)}")
        if args.write and not shipped.criteria:
            print(f"no {domain} criterion ships: no fit file written (auto falls back for this domain)")
        elif args.write:
            print(f"saved {save(shipped, DATA / f'{EMBEDDED_MODEL}.{domain}.json')}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=1, default=float))
    print(f"\nreport: {args.json}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
