"""A full meta-evaluation run: read predictions, join them to human scores, compute every indicator.

This is what ``judgesdk meta-eval`` prints and what a benchmark run reports at its end. The files it
reads are described in :mod:`judgesdk.meta.readers`. Lines are joined to the human file on
(doc_id, system_id); a key written twice keeps its last line by default (``duplicates="first"``
keeps the first), and every indicator uses the line the join kept.

#CP's challenge set (001 App. E) pairs systems of consecutive quality. ``challenge_order="average"``
(the default) orders them as 001 does, by the human score averaged over every dimension of the human
file (Table 21), so the pairs are the same whichever dimension is evaluated and a head-to-head
verdict file built for them covers them all; ``"dimension"`` orders by the evaluated dimension alone.
Head-to-head verdicts are compared with the human scores of the human file, so a pair is never lost
because a pointwise prediction is missing; pairs without verdicts and unreadable verdicts are counted.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel, Field

from judgesdk.core import InputError, JudgeResult, JudgeSDKError, Scale
from judgesdk.meta.bootstrap import BootstrapCI, bootstrap_ci
from judgesdk.meta.correlation import LevelCorrelation, get_convention, level_correlation, resolve_level
from judgesdk.meta.datasets import HumanRecord, dimensions, human_scores, require_dimension
from judgesdk.meta.items import JoinReport, Keep, Key, PairwiseJudgement, ScoredItem, check_keep, join
from judgesdk.meta.preferences import (
    CHALLENGE_ORDERS,
    CorrectPreferences,
    average_quality,
    check_challenge_order,
    correct_preferences,
    correct_preferences_h2h,
)
from judgesdk.meta.readers import PARSE_MODES, ParseMode, Prediction, load_pairwise, load_predictions, read_pairwise
from judgesdk.meta.reliability import (
    Agreement,
    ItemSignals,
    MetaCorrelation,
    PositionalBias,
    ReviewPolicy,
    SystemCorrelations,
    meta_correlation,
    method_agreement,
    per_system_correlations,
    positional_bias,
    review_flags,
)
from judgesdk.meta.report import LengthBias, RepeatVariance, Throughput, length_bias, repeat_variance, throughput
from judgesdk.prompting import criterion
from judgesdk.provider import CostModel, Usage
from judgesdk.stats import METHODS, check_method

__all__ = [
    "MetaEvalResult",
    "PairwiseCounts",
    "ParseMode",
    "Prediction",
    "load_pairwise",
    "load_predictions",
    "meta_evaluate",
    "read_pairwise",
    "scale_for",
]


def scale_for(records: Sequence[HumanRecord], dimension: str, override: str | None = None) -> tuple[Scale, str]:
    """The scale of ``dimension`` in the human ``records`` and where it came from: ``override`` ("1-5"), the
    dataset preset, or the data (every annotator's scores, rounded outward to whole numbers). A malformed
    override, or scores that leave no range, is an :class:`~judgesdk.core.errors.InputError`."""
    require_dimension(records, dimension)
    if override:
        try:
            low, high = (int(p) for p in override.split("-", 1))
        except ValueError as exc:
            raise InputError(f"--scale must look like LOW-HIGH, e.g. 1-5; got {override!r}") from exc
        return Scale.likert(low, high), "--scale"
    dataset = next((r.dataset for r in records if r.dataset), "")
    if dataset:
        try:
            return criterion(dataset, dimension).scale, f"preset {dataset}/{dimension}"
        except (ImportError, JudgeSDKError, KeyError, ValueError):  # no preset for this dataset/dimension: use the data
            pass
    values: list[float] = []
    for r in records:
        per_annotator = (r.annotator_scores or {}).get(dimension)
        if per_annotator:
            values.extend(per_annotator)
        elif dimension in r.scores:
            values.append(r.scores[dimension])
    low, high = math.floor(min(values)), math.ceil(max(values))
    if high <= low:
        raise InputError(f"cannot infer the scale of {dimension!r} (all human scores are {low}): pass --scale LOW-HIGH")
    return Scale.likert(low, high), "inferred from the human scores (pass --scale to set it)"


class Counts(BaseModel):
    """Joining and parsing, for the prediction file(s)."""

    join: JoinReport
    out_of_range: int
    status: dict[str, int]


class LevelResult(BaseModel):
    correlation: LevelCorrelation
    ci: BootstrapCI | None = None


class PairwiseCounts(BaseModel):
    """What became of the head-to-head verdict lines."""

    n_verdicts: int  # readable verdicts
    n_unclear: int  # lines whose response named no winner (counted toward neither position)
    n_unmatched: int  # readable verdicts naming an output the human file does not score on the dimension


class MetaEvalResult(BaseModel):
    """Everything ``judgesdk meta-eval`` reports (its ``--json`` output)."""

    human_file: str
    predictions_file: str
    dimension: str
    parse: str
    scale: list[float]
    scale_source: str
    convention: str
    convention_description: str
    counts: Counts
    levels: list[LevelResult]
    per_system: list[SystemCorrelations]
    meta_correlation: list[MetaCorrelation]
    correct_preferences: dict[str, CorrectPreferences]
    length: LengthBias | None = None
    repeats: RepeatVariance | None = None
    throughput: Throughput | None = None
    predictions_b_file: str | None = None
    counts_b: Counts | None = None
    agreement: list[Agreement] = Field(default_factory=list)
    positional: PositionalBias | None = None
    correct_preferences_h2h: dict[str, CorrectPreferences] = Field(default_factory=dict)
    pairwise_counts: PairwiseCounts | None = None
    review: dict[str, Any] | None = None
    duplicates: str = "last"  # which line of a repeated key was kept
    challenge_order: str = "average"
    challenge_order_description: str = CHALLENGE_ORDERS["average"]


def _role(lab: dict[str, str], second: bool) -> str:
    """How a prediction file is named in messages: its path and the flag that chose its parse mode."""
    path = lab.get("predictions_b_file" if second else "predictions_file") or "the predictions"
    flag, mode = ("--parse-b", lab.get("parse_b", "")) if second else ("--parse", lab.get("parse", ""))
    if mode not in PARSE_MODES:
        return path
    other = next(m for m in PARSE_MODES if m != mode)
    return f"{path} ({flag} {mode} reads {PARSE_MODES[mode]}; if its responses are {PARSE_MODES[other]}, pass {flag} {other})"


def _join(
    records: Sequence[HumanRecord], dimension: str, preds: Sequence[Prediction], keep: Keep, role: str
) -> tuple[list[ScoredItem], Counts, list[Prediction]]:
    """Join, count, and return the prediction line kept for each joined item (in item order)."""
    human = human_scores(records, dimension)
    items, report = join(human, [(p.key, p.value) for p in preds], keep)
    kept: dict[Key, Prediction] = {}
    for p in preds:
        if keep == "last" or p.key not in kept:
            kept[p.key] = p
    joined = [kept[it.key] for it in items]
    status: dict[str, int] = {}
    for p in joined:
        status[p.status] = status.get(p.status, 0) + 1
    if not items:
        raise InputError(
            f"no prediction matches a human item on (doc_id, system_id) for {dimension!r}: "
            f"{report.n_predictions_unmatched} prediction keys are unknown to the human file"
        )
    if all(it.prediction is None for it in items):
        found = ", ".join(f"{k} {v}" for k, v in sorted(status.items()))
        raise InputError(f"none of the {len(items)} predictions that match a human item has a score ({found}): {role}")
    return items, Counts(join=report, out_of_range=status.get("out_of_range", 0), status=status), joined


def _h2h(
    records: Sequence[HumanRecord],
    dimension: str,
    pairwise: Sequence[PairwiseJudgement],
    unclear: int,
    quality_of: Callable[[set[Key]], dict[str, float]],
    pointwise: set[Key],
) -> tuple[dict[str, CorrectPreferences], PairwiseCounts]:
    """H2H #CP against the human file's scores of the outputs the verdicts compare.

    The pair sets range over the systems of the pointwise run and of the verdicts, ordered by the
    same quality, so that H2H and pointwise #CP count the same pairs and a pair the verdicts do not
    cover is listed as skipped instead of vanishing."""
    human = human_scores(records, dimension)
    judged = {(j.doc_id, s) for j in pairwise for s in (j.first, j.second)}
    matched = [j for j in pairwise if (j.doc_id, j.first) in human and (j.doc_id, j.second) in human]
    counts = PairwiseCounts(n_verdicts=len(pairwise), n_unclear=unclear, n_unmatched=len(pairwise) - len(matched))
    items = [ScoredItem(doc_id=k[0], system_id=k[1], human=v) for k, v in human.items() if k in judged]
    if not matched:
        raise InputError(
            f"no head-to-head verdict compares two outputs the human file scores on {dimension!r}: "
            "check doc_id, first and second of the --pairwise file against the human file's doc_id and system_id"
        )
    quality = quality_of(pointwise | {it.key for it in items})
    cp = {name: correct_preferences_h2h(matched, items, name, quality=quality) for name in ("all", "challenge")}
    return cp, counts


def _review(preds: Sequence[Prediction], scale: Scale, b: dict[Key, float | None], threshold: float) -> dict[str, Any] | None:
    width = scale.high - scale.low
    signals = []
    for p in preds:
        parsed = [s for s in (p.samples or []) if s is not None]
        spread = min(_sd(parsed) / (width / 2), 1.0) if len(parsed) >= 2 and width > 0 else None
        other = b.get(p.key)
        disagreement = min(abs(p.value - other) / width, 1.0) if p.value is not None and other is not None and width > 0 else None
        signals.append(
            ItemSignals(
                item_id=f"{p.doc_id}\t{p.system_id}", coverage=p.coverage, entropy=p.entropy,
                sample_spread=spread, method_disagreement=disagreement,
            )
        )
    if not any(s.risks() for s in signals):
        return None
    flags = review_flags(signals, ReviewPolicy(threshold=threshold))
    flagged = [f for f in flags if f.needs_review]
    reasons: dict[str, int] = {}
    for f in flagged:
        for r in f.reasons:
            reasons[r] = reasons.get(r, 0) + 1
    return {
        "threshold": threshold,
        "n_items": len(flags),
        "n_flagged": len(flagged),
        "reasons": reasons,
        "flagged": [{"doc_id": f.item_id.split("\t")[0], "system_id": f.item_id.split("\t")[1], "risk": f.risk, "reasons": f.reasons} for f in flagged],
    }


def _repeats(preds: Sequence[Prediction]) -> RepeatVariance | None:
    samples = {p.key: p.samples for p in preds if p.samples}
    return repeat_variance(samples) if samples else None


def _sd(values: Sequence[float]) -> float:
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def _results(preds: Sequence[Prediction], dimension: str) -> list[JudgeResult] | None:
    chosen = [p for p in preds if p.latency_s is not None or p.usage is not None]
    if not chosen:
        return None
    return [
        JudgeResult(
            score=p.value, status="ok" if p.value is not None else "unparsed", criterion=dimension, method="predictions",
            latency_s=p.latency_s or 0.0, usage=p.usage or Usage(), cached=p.cached,
        )
        for p in chosen
    ]


def meta_evaluate(
    records: Sequence[HumanRecord],
    predictions: Sequence[Prediction],
    dimension: str,
    *,
    levels: Sequence[str] = ("sample", "summary", "system"),
    methods: Sequence[str] = METHODS,
    convention: str = "skip-and-count",
    predictions_b: Sequence[Prediction] | None = None,
    pairwise: Sequence[PairwiseJudgement] | None = None,
    pairwise_unclear: int = 0,
    bootstrap: int = 0,
    seed: int = 0,
    tolerance: float | None = None,
    review_threshold: float = 0.5,
    cost: CostModel | None = None,
    scale: Scale | None = None,
    duplicates: str = "last",
    challenge_order: str = "average",
    labels: dict[str, str] | None = None,
) -> MetaEvalResult:
    """Every indicator of :mod:`judgesdk.meta` for one judge (and optionally a second method / H2H verdicts).

    ``duplicates`` and ``challenge_order`` are described in the module docstring; ``pairwise_unclear``
    is the number of verdict lines :func:`read_pairwise` could not read (reported, not used).
    ``labels`` fills the descriptive fields of the result (file names, parse modes, scale source).

    ``records`` is the human file and ``predictions`` the judge's, joined on (doc_id, system_id) for
    ``dimension``; agreement is computed at ``levels`` x ``methods`` under ``convention``, with ``bootstrap``
    resamples (0: no CIs) seeded by ``seed``. ``predictions_b`` (a second method's predictions) adds 001's
    method agreement, with ``tolerance`` r flagging systems that need humans; ``pairwise`` head-to-head
    verdicts add positional bias and the H2H #CP. ``review_threshold`` is the review policy's threshold for
    items flagged for review; ``cost`` prices the throughput figures; ``scale`` is the human scale (default
    1-5). Returns the :class:`MetaEvalResult`.
    """
    conv = get_convention(convention)
    lvls = [resolve_level(lv) for lv in levels]
    ms = [check_method(m) for m in methods]
    keep, order = check_keep(duplicates), check_challenge_order(challenge_order)
    lab = labels or {}
    items, counts, kept = _join(records, dimension, predictions, keep, _role(lab, second=False))
    keys = {it.key for it in items}
    scale = scale or Scale.likert(1, 5)

    def quality_of(compared: set[Key]) -> dict[str, float]:
        dims = dimensions(records) if order == "average" else [dimension]
        return average_quality({d: human_scores(records, d) for d in dims}, compared)

    level_results = []
    for lv in lvls:
        for m in ms:
            corr = level_correlation(items, lv, m, conv)
            ci = bootstrap_ci(items, lv, m, conv, n_resamples=bootstrap, seed=seed) if bootstrap > 0 else None
            level_results.append(LevelResult(correlation=corr, ci=ci))
    lengths = {r.key: float(len(r.output.split())) for r in records if r.key in keys and r.output}
    quality = quality_of(keys) if order == "average" else None  # None: #CP's own Q_i of the parsed items
    result = MetaEvalResult(
        human_file=lab.get("human_file", ""),
        predictions_file=lab.get("predictions_file", ""),
        dimension=dimension,
        parse=lab.get("parse", ""),
        scale=list(scale.values),
        scale_source=lab.get("scale_source", ""),
        convention=conv.name,
        convention_description=conv.description,
        counts=counts,
        levels=level_results,
        per_system=[per_system_correlations(items, m, conv) for m in ms],
        meta_correlation=[meta_correlation(items, m, conv) for m in ms],
        correct_preferences={name: correct_preferences(items, name, quality=quality) for name in ("all", "challenge")},
        length=length_bias(items, lengths) if lengths else None,
        repeats=_repeats(kept),
        throughput=throughput(results, cost) if (results := _results(kept, dimension)) else None,
        duplicates=keep,
        challenge_order=order,
        challenge_order_description=CHALLENGE_ORDERS[order],
    )
    b_values: dict[Key, float | None] = {}
    if predictions_b is not None:
        items_b, result.counts_b, _ = _join(records, dimension, predictions_b, keep, _role(lab, second=True))
        result.predictions_b_file = lab.get("predictions_b_file", "")
        result.agreement = [method_agreement(items, items_b, m, conv, tolerance) for m in ms]
        b_values = {it.key: it.prediction for it in items_b}
    if pairwise:
        result.positional = positional_bias(pairwise)
        result.correct_preferences_h2h, result.pairwise_counts = _h2h(records, dimension, pairwise, pairwise_unclear, quality_of, keys)
    result.review = _review(kept, scale, b_values, review_threshold)
    return result
