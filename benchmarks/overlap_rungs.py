"""The overlap rung measured on the shared data, each dataset and shape held out (issue 45, step 1; no model call).

    .venv/bin/python benchmarks/overlap_rungs.py [--bootstrap 1000] [--write]

Per dataset of ``../shared/data`` (natural text, :func:`judgesdk.meta.natural`) and per shape made from it:

* ``natural``: every item as given;
* ``short``: the source cut to its first 2 sentences and the output to its first 2 (sentences end at ``.``, ``!``
  or ``?`` before white space); the human scores are those of the whole output (an approximation: a cut output
  was not what the annotators read);
* ``abstractive``: the dataset's top quartile by the share of the output's content words absent from the source
  (where a quarter or more tie at the lowest share, as in SummEval and NewsRoom where most outputs copy, the items
  above it);
* ``long_cut``: items whose source has more than 6 sentences, the source cut to its first 3;

every overlap signal (:data:`judgesdk.fused.OVERLAP_SIGNS`, each in its fixed direction) is ranked against every
human criterion of the dataset: the mean per-document Spearman with a 95 % bootstrap interval over documents
(1,000 resamples, seed 0). Two rungs are reported per criterion and variant (``source``: source signals only;
``reference``: all signals, on the datasets that carry references):

* ``prior``: the signal fixed in advance for the criterion (:data:`judgesdk.fused.RUNG_SIGNALS`, consistency and
  relevance only); it has no parameters, so every row is held out;
* ``lodo``: the signal with the best mean Spearman over the *other* datasets with the same criterion name and
  shape, reported on the held-out one (no row where no other dataset has the criterion, e.g. consistency).

``--write`` saves ``judgesdk/fused/data/overlap_rungs.json``: every row, the pooled ``prior`` figure per
(criterion, variant, shape) that ``auto`` reads (documents of every dataset with the criterion pooled; a rung
holds where its interval lies above 0 and no dataset's interval lies below 0), the signals' quantile grids
(the score map) and the abstractive cut.
"""

from __future__ import annotations

import argparse
import datetime
import functools
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np

from judgesdk.fused import (
    OVERLAP_SIGNS,
    REFERENCE_OVERLAP_SIGNALS,
    RUNG_SIGNALS,
    SOURCE_OVERLAP_SIGNALS,
    figure,
    novel_share,
    overlap_signals,
    sentences,
)
from judgesdk.meta import load_dataset, natural, shared_data_dir

OUT = Path(__file__).resolve().parents[1] / "judgesdk" / "fused" / "data" / "overlap_rungs.json"
DATASETS = ("summeval", "newsroom", "topicalchat", "hanna")
SHAPES = ("natural", "short", "abstractive", "long_cut")
COMMAND = ".venv/bin/python benchmarks/overlap_rungs.py --bootstrap 1000 --write"


def _cut(text: str, n: int) -> str:
    return " ".join(sentences(text)[:n])


def shaped(records: list[Any], shape: str) -> list[tuple[Any, str, str, str | None]]:
    """(record, output, source, reference) of ``records`` in ``shape`` (see the module docstring)."""
    rows = [(r, r.output, r.source or "", r.reference) for r in records]
    if shape == "short":
        return [(r, _cut(o, 2), _cut(s, 2), ref) for r, o, s, ref in rows]
    if shape == "abstractive":
        novel = np.array([novel_share(o, s) for _, o, s, _ in rows])
        cut = float(np.quantile(novel, 0.75))
        above = novel > cut if cut <= novel.min() else novel >= cut  # a quarter tied at the lowest share: those above it
        return [row for row, v in zip(rows, above) if v]
    if shape == "long_cut":
        return [(r, o, _cut(s, 3), ref) for r, o, s, ref in rows if len(sentences(s)) > 6]
    return rows


def _mean_rho(others: list[dict[str, dict[str, Any]]], name: str) -> float:
    """Mean of ``name``'s per-document Spearman over the ``others`` (the datasets a held-out one is chosen on)."""
    rhos = [o[name]["rho"] for o in others if o[name]["rho"] is not None]
    return float(np.mean(rhos)) if rhos else -np.inf


def measure(n_boot: int) -> dict[str, Any]:
    rows: list[dict[str, Any]] = []
    pooled: dict[str, dict[str, list[Any]]] = {}  # criterion/variant/shape -> signal values, labels, codes
    grids: dict[str, list[float]] = {name: [] for name in OVERLAP_SIGNS}
    per: dict[tuple[str, str, str, str], dict[str, dict[str, Any]]] = {}  # (dataset, shape, criterion, variant) -> signal -> figure
    for dataset in DATASETS:
        records = [natural(r) for r in load_dataset(dataset)]
        for shape in SHAPES:
            items = shaped(records, shape)
            values = [overlap_signals(o, s, ref) for _, o, s, ref in items]
            if shape == "natural":
                for v in values:
                    for name, x in v.items():
                        grids[name].append(x)
            codes = np.unique([f"{dataset}:{r.doc_id}" for r, *_ in items], return_inverse=True)[1]
            criteria = sorted({c for r, *_ in items for c in r.scores})
            has_ref = all(ref and ref.strip() for *_, ref in items)
            for criterion in criteria:
                keep = np.array([criterion in r.scores for r, *_ in items])
                y = np.array([r.scores.get(criterion, np.nan) for r, *_ in items], dtype=float)
                for variant in ("source", "reference") if has_ref else ("source",):
                    names = SOURCE_OVERLAP_SIGNALS + (REFERENCE_OVERLAP_SIGNALS if variant == "reference" else ())
                    found = {}
                    for name in names:
                        directed = OVERLAP_SIGNS[name] * np.array([v[name] for v in values])
                        found[name] = figure(directed[keep], y[keep], codes[keep], n_boot=n_boot)
                    per[(dataset, shape, criterion, variant)] = found
                    rung = (criterion, variant)
                    if rung in RUNG_SIGNALS:
                        name = RUNG_SIGNALS[rung]
                        slot = pooled.setdefault(f"{rung[0]}/{variant}/{shape}", {"x": [], "y": [], "codes": [], "datasets": []})
                        slot["x"] += list(OVERLAP_SIGNS[name] * np.array([v[name] for v in values])[keep])
                        slot["y"] += list(y[keep])
                        slot["codes"] += [f"{dataset}:{r.doc_id}" for (r, *_), k in zip(items, keep) if k]
                        slot["datasets"].append(dataset)
    # the two rungs per row
    for (dataset, shape, criterion, variant), found in per.items():
        rung = (criterion, variant)
        if rung in RUNG_SIGNALS:
            name = RUNG_SIGNALS[rung]
            rows.append({"dataset": dataset, "shape": shape, "criterion": criterion, "variant": variant, "rung": "prior", "signal": name, **found[name]})
        others = [per[k] for k in per if k[0] != dataset and k[1:] == (shape, criterion, variant)]
        if others:
            best = max(found, key=functools.partial(_mean_rho, others))
            rows.append({
                "dataset": dataset, "shape": shape, "criterion": criterion, "variant": variant, "rung": "lodo", "signal": best,
                "chosen_on": sorted(k[0] for k in per if k[0] != dataset and k[1:] == (shape, criterion, variant)),
                "candidates": len(found), **found[best],
            })  # fmt: skip
        rows.append({"dataset": dataset, "shape": shape, "criterion": criterion, "variant": variant, "rung": "signals",
                     "figures": {k: {"rho": v["rho"], "ci": v["ci"]} for k, v in found.items()}, "n_items": next(iter(found.values()))["n_items"]})  # fmt: skip
    rungs: dict[str, Any] = {}
    for key, slot in sorted(pooled.items()):
        criterion, variant, shape = key.split("/")
        codes = np.unique(slot["codes"], return_inverse=True)[1]
        row = {"signal": RUNG_SIGNALS[(criterion, variant)], "datasets": slot["datasets"],
               **figure(np.array(slot["x"]), np.array(slot["y"]), codes, n_boot=n_boot)}  # fmt: skip
        against = [r["dataset"] for r in rows if r["rung"] == "prior" and (r["criterion"], r["variant"], r["shape"]) == (criterion, variant, shape)
                   and r["ci"] and r["ci"][1] < 0]  # fmt: skip
        if against:
            row["contradicted_by"] = against
        rungs[key] = row
    quantiles = {name: [round(float(q), 5) for q in np.quantile(np.array(v), np.linspace(0, 1, 201))] for name, v in grids.items() if v}
    prior_rows = sum(r["rung"] == "prior" for r in rows)
    lodo_rows = sum(r["rung"] == "lodo" for r in rows)
    return {
        "format": "judgesdk.overlap-rungs/1",
        "made": datetime.date.today().isoformat(),
        "command": COMMAND,
        "bootstrap": {"resamples": n_boot, "seed": 0, "level": 0.95, "over": "documents"},
        "signs": OVERLAP_SIGNS,
        "rung_signals": {f"{c}/{v}": s for (c, v), s in RUNG_SIGNALS.items()},
        "shapes": {
            "natural": "every item as given",
            "short": "source and output each cut to their first 2 sentences (human scores of the whole output)",
            "abstractive": "the dataset's top quartile by the output's share of content words absent from the source "
                           "(where a quarter or more tie at the lowest share: the items above it)",
            "long_cut": "items whose source has more than 6 sentences, the source cut to its first 3",
        },
        "comparisons": {"prior_rows": prior_rows, "lodo_rows": lodo_rows,
                        "lodo_candidates": f"{len(SOURCE_OVERLAP_SIGNALS)} (source) or {len(OVERLAP_SIGNS)} (reference) signals per row"},  # fmt: skip
        "rungs": rungs,
        "quantiles": quantiles,
        "rows": rows,
    }


def _fmt(row: dict[str, Any]) -> str:
    if row["rho"] is None:
        return "—"
    return f"{row['rho']:.3f} [{row['ci'][0]:.3f}, {row['ci'][1]:.3f}]"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--bootstrap", type=int, default=1000)
    parser.add_argument("--write", action="store_true", help=f"save {OUT.relative_to(OUT.parents[3])}")
    args = parser.parse_args()
    if shared_data_dir() is None:
        print("shared data not found (../shared/data): nothing to measure", file=sys.stderr)
        return 0
    data = measure(args.bootstrap)
    print("| dataset / shape | criterion | variant | rung (signal) | documents | items | per-document Spearman [95 % CI] |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for row in data["rows"]:
        if row["rung"] == "signals":
            continue
        label = f"{row['rung']} ({row['signal']})"
        print(f"| {row['dataset']} / {row['shape']} | {row['criterion']} | {row['variant']} | {label} | {row['n_docs']} | {row['n_items']} | {_fmt(row)} |")
    print("\nPooled over the datasets with the criterion (what auto reads):\n")
    print("| criterion / variant / shape | signal | datasets | documents | items | per-document Spearman [95 % CI] | answers |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for key, row in data["rungs"].items():
        answers = "yes" if row["ci"] and row["ci"][0] > 0 and not row.get("contradicted_by") else "no (refused)"
        print(f"| {key} | {row['signal']} | {', '.join(row['datasets'])} | {row['n_docs']} | {row['n_items']} | {_fmt(row)} | {answers} |")
    print(f"\ncomparisons: {data['comparisons']}")
    if args.write:
        OUT.write_text(json.dumps(data, indent=1) + "\n")
        print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
