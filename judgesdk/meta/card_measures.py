"""The measures of a judge card that meta-eval does not compute: the human ceiling, parse and coverage, and
self-consistency, each with the model the card holds (:mod:`judgesdk.meta.card` has the rules in its docstring
and assembles them into a :class:`~judgesdk.meta.card.CriterionCard`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, Field

from judgesdk.core import InputError, Scale
from judgesdk.meta.correlation import level_correlation
from judgesdk.meta.datasets import HumanRecord
from judgesdk.meta.evaluation import MetaEvalResult
from judgesdk.meta.items import Key, ScoredItem
from judgesdk.meta.report import RepeatVariance, repeat_variance
from judgesdk.records import ResultRow

__all__ = ["CeilingLevel", "HumanCeiling", "ParseCoverage", "SelfConsistency", "human_ceiling", "parse_coverage", "self_consistency"]


class CeilingLevel(BaseModel):
    """One level x method of the human ceiling: each annotator against the mean of the others."""

    level: str
    method: str
    value: float | None  # mean over annotators of the defined per-annotator values
    per_annotator: list[float | None]
    judge: float | None  # the judge (vs the mean of all annotators) on the same items, same level and method


class HumanCeiling(BaseModel):
    """Leave-one-annotator-out agreement, where the human file has per-annotator scores."""

    available: bool
    reason: str = ""  # why not, when not available
    n_items: int = 0
    n_documents: int = 0
    systems: list[str] = Field(default_factory=list)
    n_annotators: int = 0
    rests_on: str = ""  # the items, in words
    convention: str = ""
    levels: list[CeilingLevel] = Field(default_factory=list)


class ParseCoverage(BaseModel):
    """How many items got a usable score, and how much probability mass the label distributions held."""

    n_selected: int  # labelled items in the selection (human score on this criterion)
    n_rows: int  # of those, items with a row in the results
    n_scored: int
    share_scored: float | None  # n_scored / n_selected
    status: dict[str, int]
    n_with_distribution: int
    mean_coverage: float | None
    min_coverage: float | None
    share_low_coverage: float | None  # status low_coverage / rows


class SelfConsistency(BaseModel):
    """Agreement of a judge with itself across repeated samples of one item (or why there is none)."""

    applicable: bool
    reason: str = ""
    source: str = ""  # "samples" (the rows' repeated scores) or "sampled distributions"
    samples_per_item: float | None = None
    n_items_sampled: int | None = None  # items whose rows carry repeated samples (any parsed)
    variance: RepeatVariance | None = None
    mean_modal_share: float | None = None  # mean over items with >= 2 parsed samples of the share that gave the modal answer


def human_ceiling(
    records: Sequence[HumanRecord],
    dimension: str,
    keys: set[Key],
    judge_items: Sequence[ScoredItem],
    *,
    levels: Sequence[str],
    methods: Sequence[str],
    convention: str = "skip-and-count",
) -> HumanCeiling:
    """Leave-one-annotator-out agreement on the items of ``keys`` that have per-annotator scores on
    ``dimension`` (module docstring). Items with another number of annotators than the most common one are
    left out (the mean of "the others" would mean different things); the judge's figure is computed on the
    same items."""
    scored: dict[Key, list[float]] = {}
    for r in records:
        values = (r.annotator_scores or {}).get(dimension)
        if r.key in keys and values and r.key not in scored:
            scored[r.key] = [float(v) for v in values]
    if not scored:
        return HumanCeiling(available=False, reason=f"no item of the selection has per-annotator scores on {dimension!r}")
    counts: dict[int, int] = {}
    for values in scored.values():
        counts[len(values)] = counts.get(len(values), 0) + 1
    k = max(counts, key=lambda n: (counts[n], n))
    if k < 2:
        return HumanCeiling(available=False, reason=f"the items have {k} annotator score per item on {dimension!r}: no one to leave out")
    scored = {key: values for key, values in scored.items() if len(values) == k}
    per_annotator: list[list[ScoredItem]] = []
    for a in range(k):
        per_annotator.append(
            [
                ScoredItem(doc_id=doc, system_id=system, human=(sum(v) - v[a]) / (k - 1), prediction=v[a])
                for (doc, system), v in scored.items()
            ]
        )
    judged = [it for it in judge_items if it.key in scored]
    out = []
    for lv in levels:
        for m in methods:
            level_values = [level_correlation(items, lv, m, convention).value for items in per_annotator]
            defined = [v for v in level_values if v is not None]
            judge = _safe_level(judged, lv, m, convention)
            out.append(
                CeilingLevel(
                    level=lv, method=m, value=sum(defined) / len(defined) if defined else None, per_annotator=level_values, judge=judge,
                )
            )  # fmt: skip
    docs = sorted({d for d, _ in scored})
    systems = sorted({s for _, s in scored})
    left_out = sum(n for size, n in counts.items() if size != k)
    rests_on = (
        f"{len(scored)} items with {k} annotator scores each on {dimension} ({len(docs)} documents x systems "
        f"{', '.join(systems)})" + (f"; {left_out} items with another number of annotators left out" if left_out else "")
    )
    return HumanCeiling(
        available=True, n_items=len(scored), n_documents=len(docs), systems=systems, n_annotators=k,
        rests_on=rests_on, convention=convention, levels=out,
    )  # fmt: skip


def _safe_level(items: Sequence[ScoredItem], level: str, method: str, convention: str) -> float | None:
    if not any(it.prediction is not None for it in items):
        return None
    return level_correlation(items, level, method, convention).value


def parse_coverage(result: MetaEvalResult, preds: Sequence[Any], n_selected: int, rows: Mapping[Key, ResultRow]) -> ParseCoverage:
    """How many of the ``n_selected`` labelled items got a usable score in meta-eval's ``result`` over the predictions
    ``preds``, by the rows' own statuses (``rows``), and the probability mass their label distributions held."""
    n_rows = result.counts.join.n_joined
    n_scored = n_rows - result.counts.join.n_unparsed
    coverages = [p.coverage for p in preds if p.coverage is not None]
    joined = {p.key for p in preds}
    found: dict[str, int] = {}
    for key in joined:  # the rows' own statuses (meta-eval's counts say only whether a score was read)
        row = rows.get(key)
        status = (row.status if row is not None else None) or next(p.status for p in preds if p.key == key)
        found[status] = found.get(status, 0) + 1
    status = dict(sorted(found.items()))
    low = found.get("low_coverage", 0)
    return ParseCoverage(
        n_selected=n_selected,
        n_rows=n_rows,
        n_scored=n_scored,
        share_scored=n_scored / n_selected if n_selected else None,
        status=status,
        n_with_distribution=len(coverages),
        mean_coverage=sum(coverages) / len(coverages) if coverages else None,
        min_coverage=min(coverages) if coverages else None,
        share_low_coverage=low / n_rows if n_rows else None,
    )


def _label_value(label: str, scale: Scale) -> float | None:
    if label in scale.labels:
        return scale.value_of(label)
    try:
        value = float(label)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def self_consistency(result: MetaEvalResult, rows: Mapping[Key, ResultRow], keys: set[Key], scale: Scale, method: str) -> SelfConsistency:
    """Spread across repeated samples: the rows' ``samples`` (meta-eval's repeats), else sampled distributions."""
    if result.repeats is not None:
        counts = [len(row.samples or []) for key, row in rows.items() if key in keys and row.samples]
        return SelfConsistency(
            applicable=True, source="samples", variance=result.repeats, n_items_sampled=len(counts),
            samples_per_item=sum(counts) / len(counts) if counts else None,
        )  # fmt: skip
    repeats: dict[Key, list[float | None]] = {}
    modal: list[float] = []
    for key, row in rows.items():
        dist = row.distribution
        if key not in keys or dist is None or dist.passed("method") != "sampling" or not isinstance(dist.probs, dict):
            continue
        n = int(dist.passed("n_samples") or 0)
        n_unparsed = int(dist.passed("n_unparsed") or 0)
        parsed = n - n_unparsed
        values: list[float | None] = []
        for label, p in dist.probs.items():
            value = _label_value(str(label), scale)
            count = round(float(p) * parsed)
            if value is not None and count:
                values.extend([value] * count)
        if len(values) != parsed:  # the probabilities do not come from `parsed` whole samples: no counts to rebuild
            raise InputError(f"row {row.id or key}: its sampled distribution does not add up to {parsed} parsed samples")
        repeats[key] = values + [None] * n_unparsed
        if parsed >= 2:  # the items the spread is measured on
            modal.append(max(float(p) for p in dist.probs.values()))
    if not repeats:
        return SelfConsistency(
            applicable=False,
            reason=f"method {method} gives one deterministic judgement per item (no repeated samples: the rows carry "
            "neither 'samples' nor a sampled distribution)",
        )
    sizes = [len(v) for v in repeats.values()]
    return SelfConsistency(
        applicable=True, source="sampled distributions", samples_per_item=sum(sizes) / len(sizes), n_items_sampled=len(repeats),
        variance=repeat_variance(repeats), mean_modal_share=sum(modal) / len(modal) if modal else None,
    )  # fmt: skip
