"""The overlap rung: model-free overlap signals, their measured figures, and the rule for when one may answer.

Where no fused fit holds an item, ``auto`` used to fall back to the prompted method (``geval``), which on the
embedded model is measured at chance (``data/fallbacks.json``). A method measured at chance on a model is never a
fallback for it (issue 45). In its place this rung answers with one overlap signal, fixed in advance per
criterion and per item variant (with or without a reference, :data:`RUNG_SIGNALS`), wherever that signal's
per-document Spearman with the human scores was measured on the shared data (``data/overlap_rungs.json``, made by
``benchmarks/overlap_rungs.py``) with a 95 % interval above 0 for the item's shape; elsewhere nothing measured
holds and the answer is ``refused``.

The signals (every one a share in [0, 1], 0 for an empty side, signs fixed in advance in :data:`OVERLAP_SIGNS`):

* against the source: ``src_unigram_precision`` (share of the output's words, with repeats, found in the source),
  ``src_content_precision`` (the same over content words: :func:`judgesdk.fused.text.content`) and
  ``src_novel_names`` (share of the output's capitalised words and numbers absent from the source: sign -1);
* against a reference: ``ref_unigram_recall`` / ``ref_bigram_recall`` (share of the reference's distinct unigrams /
  bigrams the output has), ``ref_unigram_precision`` / ``ref_bigram_precision`` (clipped ROUGE-N precision),
  ``ref_content_recall`` (share of the reference's distinct content words the output has) and ``rouge1_recall``:
  ROUGE-1 recall computed here as the clipped unigram-overlap count over the reference's unigram count (no
  stemming; words are lowercased ``\\w+`` runs), which is what ``rouge-score``'s ``rouge1`` recall counts without
  its stemmer (the package is not a dependency).
"""

from __future__ import annotations

import hashlib
import json
import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from typing import Any

import numpy as np
from scipy.stats import rankdata

from judgesdk.fused.text import STOPWORDS, content, overlap, recall, words

FORMAT = "judgesdk.overlap-rungs/1"
# More overlap with the source or the reference = better; names and numbers the source lacks = worse. Fixed before
# any measurement (the "signs fixed in advance"); the measurement negates a -1 signal before ranking.
OVERLAP_SIGNS: dict[str, int] = {
    "src_unigram_precision": 1,
    "src_content_precision": 1,
    "src_novel_names": -1,
    "ref_unigram_recall": 1,
    "ref_unigram_precision": 1,
    "ref_bigram_recall": 1,
    "ref_bigram_precision": 1,
    "ref_content_recall": 1,
    "rouge1_recall": 1,
}
SOURCE_OVERLAP_SIGNALS = ("src_unigram_precision", "src_content_precision", "src_novel_names")
REFERENCE_OVERLAP_SIGNALS = tuple(name for name in OVERLAP_SIGNS if name.startswith(("ref_", "rouge")))
# The one signal the rung reads per (criterion, variant), chosen before measuring: consistency is about the source
# (a reference does not change what is supported), so it reads plain unigram precision against the source in both
# variants; relevance reads ROUGE-1 recall against a reference when one is given, else the share of the output's
# content words that come from the source.
RUNG_SIGNALS: dict[tuple[str, str], str] = {
    ("consistency", "source"): "src_unigram_precision",
    ("consistency", "reference"): "src_unigram_precision",
    ("relevance", "source"): "src_content_precision",
    ("relevance", "reference"): "rouge1_recall",
}
# Other names users give these criteria (the fits' aliases; NewsRoom's informativeness is its relevance).
ALIASES = {"faithfulness": "consistency", "factuality": "consistency", "factual consistency": "consistency", "informativeness": "relevance"}
SHORT_SENTENCES = 2  # the short shape: a source and an output of at most this many sentences each
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_NAME_OR_NUMBER = re.compile(r"\b(?:[A-Z]\w*|\d[\d.,]*)\b")


def sentences(text: str) -> list[str]:
    """``text`` split after ``.``, ``!`` or ``?`` followed by white space (empty pieces dropped)."""
    return [s for s in _SENTENCE_END.split(text.strip()) if s.strip()]


def names_and_numbers(text: str) -> list[str]:
    """The capitalised words and numbers of ``text`` (lowercased, with repeats), function words left out (a
    capitalised "The" that opens a sentence is no name)."""
    found = [m.group(0).lower().rstrip(".,") for m in _NAME_OR_NUMBER.finditer(text)]
    return [w for w in found if w and w not in STOPWORDS]


def source_signals(output: str, source: str) -> dict[str, float]:
    """The three signals of ``output`` against ``source`` (see the module docstring); an empty side gives 0, and
    an output with no names or numbers has no novel ones (0)."""
    out, src = words(output), words(source)
    seen = set(src)
    out_content = content(out)
    named = names_and_numbers(output)
    return {
        "src_unigram_precision": sum(w in seen for w in out) / len(out) if out else 0.0,
        "src_content_precision": sum(w in seen for w in out_content) / len(out_content) if out_content else 0.0,
        "src_novel_names": sum(all(p not in seen for p in words(w)) for w in named) / len(named) if named else 0.0,
    }


def reference_signals(output: str, reference: str) -> dict[str, float]:
    """The six signals of ``output`` against ``reference`` (see the module docstring)."""
    out, ref = words(output), words(reference)
    p1, r1 = overlap(out, ref, 1)
    p2, _ = overlap(out, ref, 2)
    wanted = set(content(ref))
    return {
        "ref_unigram_recall": recall(out, ref, 1),
        "ref_unigram_precision": p1,
        "ref_bigram_recall": recall(out, ref, 2),
        "ref_bigram_precision": p2,
        "ref_content_recall": len(wanted & set(out)) / len(wanted) if wanted else 0.0,
        "rouge1_recall": r1,
    }


def overlap_signals(output: str, source: str | None, reference: str | None) -> dict[str, float]:
    """Every signal of ``output`` that applies: the source's where ``source`` has text, the reference's where
    ``reference`` has."""
    values: dict[str, float] = {}
    if source and source.strip():
        values.update(source_signals(output, source))
    if reference and reference.strip():
        values.update(reference_signals(output, reference))
    return values


def novel_share(output: str, source: str) -> float:
    """Share of the output's content words absent from the source (what the abstractive shape is cut on)."""
    return 1.0 - source_signals(output, source)["src_content_precision"] if content(words(output)) else 0.0


def item_shape(output: str, source: str) -> str:
    """The shape whose measured figures decide for an item: ``short`` (a source and an output of at most
    :data:`SHORT_SENTENCES` sentences each), else ``long`` (then the natural, abstractive and cut-source
    figures must all hold: one item cannot be told apart as one of them by its text alone)."""
    if len(sentences(source)) <= SHORT_SENTENCES and len(sentences(output)) <= SHORT_SENTENCES:
        return "short"
    return "long"


LONG_SHAPES = ("natural", "abstractive", "long_cut")  # the measured shapes a ``long`` item may be


# -- measurement -------------------------------------------------------------------------------------------------


def group_rhos(pred: np.ndarray, y: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Per group (``codes``) of 3 or more items whose human scores ``y`` vary, Spearman of ``pred`` and ``y``; a
    group where ``pred`` ties every item counts 0 (it ranks none of them: the convention of
    :func:`judgesdk.fused.fit.mean_group_spearman`, kept here so the mean and its bootstrap count the same groups)."""
    out = []
    order = np.argsort(codes, kind="stable")
    for m in np.split(order, np.flatnonzero(np.diff(codes[order])) + 1):
        if len(m) < 3 or np.ptp(y[m]) == 0:
            continue
        if np.ptp(pred[m]) == 0:
            out.append(0.0)
            continue
        rp, rt = rankdata(pred[m]), rankdata(y[m])
        rp, rt = rp - rp.mean(), rt - rt.mean()
        out.append(float((rp * rt).sum() / np.sqrt((rp**2).sum() * (rt**2).sum())))
    return np.asarray(out)


def figure(pred: np.ndarray, y: np.ndarray, codes: np.ndarray, n_boot: int = 1000, seed: int = 0) -> dict[str, Any]:
    """The mean per-group Spearman of ``pred`` with ``y`` (groups ``codes``) and its 95 % percentile bootstrap
    interval over groups (``n_boot`` resamples, ``seed``): ``{"n_docs", "n_items", "rho", "ci"}``; rho and ci are
    None where fewer than 2 groups count."""
    values = group_rhos(pred, y, codes)
    row: dict[str, Any] = {"n_docs": int(len(values)), "n_items": int(len(y)), "rho": None, "ci": None}
    if len(values) < 2:
        return row
    rng = np.random.default_rng(seed)
    means = values[rng.integers(0, len(values), size=(n_boot, len(values)))].mean(axis=1)
    row["rho"] = round(float(values.mean()), 4)
    row["ci"] = [round(float(np.quantile(means, 0.025)), 4), round(float(np.quantile(means, 0.975)), 4)]
    return row


# -- the shipped figures and the rule ----------------------------------------------------------------------------


@lru_cache(maxsize=1)
def rungs() -> dict[str, Any]:
    """The measured rung file (``data/overlap_rungs.json``)."""
    data: dict[str, Any] = json.loads(resources.files("judgesdk.fused.data").joinpath("overlap_rungs.json").read_text())
    return data


@lru_cache(maxsize=1)
def fallbacks() -> dict[str, Any]:
    """Measured figures of the prompted fallback per model file (``data/fallbacks.json``)."""
    data: dict[str, Any] = json.loads(resources.files("judgesdk.fused.data").joinpath("fallbacks.json").read_text())
    return data


@lru_cache(maxsize=1)
def ladder_label() -> str:
    """The ladder data's identity by content (the head of the sha256 of both data files): results the rung gives
    name it as their calibration, so a re-measured file is visible in their provenance."""
    digest = hashlib.sha256()
    for name in ("fallbacks.json", "overlap_rungs.json"):
        digest.update(resources.files("judgesdk.fused.data").joinpath(name).read_bytes())
    return f"overlap {FORMAT} sha256:{digest.hexdigest()[:16]}"


def at_chance(model_sha256: str | None, method: str) -> dict[str, Any] | None:
    """The measured entry saying ``method`` is at chance on the model file ``model_sha256`` (its figures and the
    section they come from), or None where it was not measured at chance there."""
    for entry in fallbacks()["entries"]:
        if model_sha256 and entry["model_sha256"] == model_sha256 and entry["method"] == method and entry["at_chance"]:
            return dict(entry)
    return None


def holds(row: dict[str, Any] | None) -> bool:
    """A measured row holds where its pooled 95 % interval lies above 0 and no dataset's lies below 0."""
    return bool(row and row.get("ci") and row["ci"][0] > 0 and not row.get("contradicted_by"))


@dataclass
class Rung:
    """What the overlap rung does for one item and criterion: ``signal`` answers (with ``figure``, the measured
    row that lets it) or, where ``signal`` is None, ``why`` it declines."""

    criterion: str
    variant: str
    shape: str
    signal: str | None
    figure: dict[str, Any] | None
    why: str


def decide(criterion: str, output: str, source: str | None, reference: str | None, context: str | None = None) -> Rung:
    """Whether the overlap rung may answer ``criterion`` (its name; aliases allowed) for this item (``output``,
    ``source``, ``reference``, ``context``: a grounding fact, which no measured item carried, so the rung declines
    it): only where the signal fixed for the criterion and variant was measured with a
    95 % interval above 0 for the item's shape, pooled over the shared datasets that carry the criterion (for a
    ``long`` item, on every long shape); the figure kept is the weakest of those."""
    name = ALIASES.get(criterion.lower(), criterion.lower())
    has_ref = bool(reference and reference.strip())
    variant = "reference" if has_ref else "source"
    if not source or not source.strip():
        return Rung(name, variant, "-", None, None, "the item has no source, and the overlap rung measures the output against it")
    if context and context.strip():
        return Rung(name, variant, "-", None, None, "the item carries a grounding fact (context), and the rung was measured on items without one")
    shape_name = item_shape(output, source)
    signal = RUNG_SIGNALS.get((name, variant))
    if signal is None:
        known = sorted({c for c, _ in RUNG_SIGNALS})
        return Rung(name, variant, shape_name, None, None, f"no overlap signal was fixed for {criterion!r} (only for {', '.join(known)})")
    measured = rungs()["rungs"]
    keys = [f"{name}/{variant}/{s}" for s in (("short",) if shape_name == "short" else LONG_SHAPES)]
    for key in keys:
        row = measured.get(key)
        if not holds(row):
            seen = f"rho {row['rho']} [{row['ci'][0]}, {row['ci'][1]}]" if row and row.get("ci") else "not measured"
            against = f", below 0 on {', '.join(row['contradicted_by'])}" if row and row.get("contradicted_by") else ""
            return Rung(name, variant, shape_name, None, row, f"{signal} on {key}: {seen}{against}; no interval above 0 there")
    worst = min((measured[k] for k in keys), key=lambda r: r["ci"][0])
    return Rung(name, variant, shape_name, signal, worst, f"measured above 0 on {', '.join(keys)}")


def to_scale(signal: str, value: float, low: float, high: float) -> float:
    """``value`` of ``signal`` as its empirical quantile among the shared data's items (in the signal's fixed
    direction), mapped linearly onto ``low``..``high``: a rank position on the scale, not a calibrated human score."""
    grid = rungs()["quantiles"][signal]
    position = (bisect_left(grid, value) + bisect_right(grid, value)) / 2 / len(grid)
    if OVERLAP_SIGNS[signal] < 0:
        position = 1.0 - position
    return low + position * (high - low)
