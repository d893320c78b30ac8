"""A full meta-evaluation run: read predictions, join them to human scores, compute every indicator.

This is what ``judgesdk meta-eval`` prints and what a benchmark run reports at its end. Prediction
files are JSON Lines, one judged output per line::

    {"doc_id": "...", "system_id": "M8", "score": 3.67}                 # a number, or
    {"doc_id": "...", "system_id": "M8", "response": "... Score: 4"}    # raw judge text, parsed

``score`` wins when it is a number; otherwise ``response`` is read with
:func:`judgesdk.parsing.parse_score` (``parse="rts"``: numbers on the Likert scale; ``"mcq"``:
letters A.. standing for the scale's values, 001's MCQ). ``score: null`` without a response counts
as unparsed. Optional fields feed the other indicators: ``samples`` (repeated scores -> variance
across repeats and sample spread), ``distribution`` (``coverage``, ``entropy``; as ``judgesdk
score`` writes it), ``latency_s``/``usage``/``cached``/``status`` (time and cost per 1,000).
Lines are joined to the human file on (doc_id, system_id); duplicate keys keep the first line.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, Field

from judgesdk.errors import InputError, JudgeSDKError
from judgesdk.runlog import read_objects
from judgesdk.meta._stats import METHODS, check_method
from judgesdk.meta.bootstrap import BootstrapCI, bootstrap_ci
from judgesdk.meta.correlation import LevelCorrelation, get_convention, level_correlation, resolve_level
from judgesdk.meta.datasets import HumanRecord, human_scores, require_dimension
from judgesdk.meta.items import JoinReport, Key, PairwiseJudgement, ScoredItem, join
from judgesdk.meta.preferences import CorrectPreferences, correct_preferences, correct_preferences_h2h
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
from judgesdk.cost import CostModel
from judgesdk.meta.report import LengthBias, RepeatVariance, Throughput, length_bias, repeat_variance, throughput
from judgesdk.parsing import parse_choice, parse_score
from judgesdk.provider import Usage
from judgesdk.types import JudgeResult, Scale

__all__ = [
    "MetaEvalResult",
    "Prediction",
    "load_pairwise",
    "load_predictions",
    "meta_evaluate",
    "scale_for",
]

ParseMode = Literal["rts", "mcq"]


class Prediction(BaseModel):
    """One prediction line, parsed."""

    doc_id: str
    system_id: str
    value: float | None
    status: str  # "ok", "unparsed", "out_of_range", or the line's own status
    samples: list[float | None] | None = None
    coverage: float | None = None
    entropy: float | None = None  # normalised to [0, 1] by ln(number of labels)
    latency_s: float | None = None
    usage: Usage | None = None
    cached: bool = False

    @property
    def key(self) -> Key:
        return (self.doc_id, self.system_id)


def scale_for(records: Sequence[HumanRecord], dimension: str, override: str | None = None) -> tuple[Scale, str]:
    """The dimension's scale and where it came from: ``override`` ("1-5"), the dataset preset, or the data."""
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
            from judgesdk import presets

            return presets.criterion(dataset, dimension).scale, f"preset {dataset}/{dimension}"
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


def _ids(row: dict[str, Any], where: str) -> tuple[str, str]:
    missing = [k for k in ("doc_id", "system_id") if row.get(k) is None]
    if missing:
        raise InputError(f"{where}: missing {' and '.join(missing)}; every prediction line needs doc_id and system_id")
    return str(row["doc_id"]), str(row["system_id"])


def _number(value: Any, where: str, field: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(f"{where}: {field} must be a finite number or null, got {value!r}; put raw judge text in 'response'")
    return float(value)


def _distribution_signals(dist: Any) -> tuple[float | None, float | None]:
    """(coverage, normalised entropy) from a ``distribution`` object (judgesdk score's or a LabelDistribution dump)."""
    if not isinstance(dist, dict):
        return None, None
    probs = dist.get("probs")
    values = list(probs.values()) if isinstance(probs, dict) else list(probs or [])
    coverage = dist.get("coverage")
    entropy = dist.get("entropy")
    if entropy is None and values:
        entropy = -sum(p * math.log(p) for p in values if p > 0)
    norm = entropy / math.log(len(values)) if entropy is not None and len(values) > 1 else None
    clip = lambda v: None if v is None else min(max(float(v), 0.0), 1.0)  # noqa: E731
    return clip(coverage), clip(norm)


def load_predictions(path: str | Path, scale: Scale, parse: ParseMode = "rts") -> list[Prediction]:
    """Prediction lines of ``path`` (format in the module docstring), responses parsed on ``scale``."""
    if parse not in ("rts", "mcq"):
        raise InputError(f"--parse must be rts or mcq, got {parse!r}")
    read_scale = scale if parse == "rts" else Scale.letters(scale.values)
    p = Path(path)
    out = []
    for number, row in read_objects(p, "predictions"):
        where = f"{p}:{number}"
        doc, system = _ids(row, where)
        value, status = _number(row.get("score"), where, "score"), "ok"
        if value is None and isinstance(row.get("response"), str):
            parsed = parse_score(row["response"], read_scale)
            value, status = parsed.value, parsed.status
        elif value is None:
            status = str(row.get("status") or "unparsed")
            if status == "ok":
                status = "unparsed"
        samples = row.get("samples")
        if samples is not None and not isinstance(samples, list):
            raise InputError(f"{where}: samples must be a list of numbers (or nulls)")
        coverage, entropy = _distribution_signals(row.get("distribution"))
        usage = row.get("usage")
        out.append(
            Prediction(
                doc_id=doc,
                system_id=system,
                value=value,
                status=status,
                samples=None if samples is None else [_number(s, where, "samples[]") for s in samples],
                coverage=coverage,
                entropy=entropy,
                latency_s=_number(row.get("latency_s"), where, "latency_s"),
                usage=Usage.model_validate(usage) if isinstance(usage, dict) else None,
                cached=bool(row.get("cached", False)),
            )
        )
    return out


_WINNERS = {"first": "first", "a": "first", "1": "first", "second": "second", "b": "second", "2": "second", "tie": "tie", "c": "tie"}


def load_pairwise(path: str | Path) -> list[PairwiseJudgement]:
    """Head-to-head verdicts: ``doc_id``, ``first``, ``second`` (system ids in shown order) and
    ``winner`` ("first"/"second"/"tie") or raw ``response`` (001 H2H: A = first, B = second, C = tie)."""
    p = Path(path)
    out = []
    for number, row in read_objects(p, "pairwise"):
        where = f"{p}:{number}"
        if any(row.get(k) is None for k in ("doc_id", "first", "second")):
            raise InputError(f"{where}: a pairwise line needs doc_id, first and second (system ids in the order shown)")
        winner = row.get("winner")
        if winner is None and isinstance(row.get("response"), str):
            winner = parse_choice(row["response"], ["A", "B", "C", "tie", "first", "second"])
        if winner is None:
            continue  # unclear verdicts do not count toward either position
        if str(winner).lower() not in _WINNERS:
            raise InputError(f"{where}: winner must be first, second or tie, got {winner!r}")
        out.append(
            PairwiseJudgement(doc_id=str(row["doc_id"]), first=str(row["first"]), second=str(row["second"]), winner=_WINNERS[str(winner).lower()])  # type: ignore[arg-type]
        )
    return out


class Counts(BaseModel):
    """Joining and parsing, for the prediction file(s)."""

    join: JoinReport
    out_of_range: int
    status: dict[str, int]


class LevelResult(BaseModel):
    correlation: LevelCorrelation
    ci: BootstrapCI | None = None


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
    review: dict[str, Any] | None = None


def _join(records: Sequence[HumanRecord], dimension: str, preds: Sequence[Prediction]) -> tuple[list[ScoredItem], Counts]:
    human = human_scores(records, dimension)
    items, report = join(human, [(p.key, p.value) for p in preds])
    first: dict[Key, Prediction] = {}
    for p in preds:
        first.setdefault(p.key, p)
    joined = [first[it.key] for it in items]
    status: dict[str, int] = {}
    for p in joined:
        status[p.status] = status.get(p.status, 0) + 1
    if not items:
        raise InputError(
            f"no prediction matches a human item on (doc_id, system_id) for {dimension!r}: "
            f"{report.n_predictions_unmatched} prediction keys are unknown to the human file"
        )
    return items, Counts(join=report, out_of_range=status.get("out_of_range", 0), status=status)


def _review(preds: Sequence[Prediction], keys: set[Key], scale: Scale, b: dict[Key, float | None], threshold: float) -> dict[str, Any] | None:
    width = scale.high - scale.low
    signals = []
    seen: set[Key] = set()
    for p in preds:
        if p.key not in keys or p.key in seen:
            continue
        seen.add(p.key)
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


def _repeats(preds: Sequence[Prediction], keys: set[Key]) -> RepeatVariance | None:
    samples: dict[Key, list[float | None]] = {}
    for p in preds:
        if p.key in keys and p.samples and p.key not in samples:
            samples[p.key] = p.samples
    return repeat_variance(samples) if samples else None


def _sd(values: Sequence[float]) -> float:
    mean = sum(values) / len(values)
    return math.sqrt(sum((v - mean) ** 2 for v in values) / (len(values) - 1))


def _results(preds: Sequence[Prediction], keys: set[Key], dimension: str) -> list[JudgeResult] | None:
    chosen = [p for p in preds if p.key in keys and (p.latency_s is not None or p.usage is not None)]
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
    bootstrap: int = 0,
    seed: int = 0,
    tolerance: float | None = None,
    review_threshold: float = 0.5,
    cost: CostModel | None = None,
    scale: Scale | None = None,
    labels: dict[str, str] | None = None,
) -> MetaEvalResult:
    """Every indicator of :mod:`judgesdk.meta` for one judge (and optionally a second method / H2H verdicts).

    ``labels`` fills the descriptive fields of the result (file names, parse mode, scale source).
    """
    conv = get_convention(convention)
    lvls = [resolve_level(lv) for lv in levels]
    ms = [check_method(m) for m in methods]
    items, counts = _join(records, dimension, predictions)
    keys = {it.key for it in items}
    lab = labels or {}
    scale = scale or Scale.likert(1, 5)
    level_results = []
    for lv in lvls:
        for m in ms:
            corr = level_correlation(items, lv, m, conv)
            ci = bootstrap_ci(items, lv, m, conv, n_resamples=bootstrap, seed=seed) if bootstrap > 0 else None
            level_results.append(LevelResult(correlation=corr, ci=ci))
    lengths = {r.key: float(len(r.output.split())) for r in records if r.key in keys and r.output}
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
        correct_preferences={name: correct_preferences(items, name) for name in ("all", "challenge")},  # type: ignore[arg-type]
        length=length_bias(items, lengths) if lengths else None,
        repeats=_repeats(predictions, keys),
        throughput=throughput(results, cost) if (results := _results(predictions, keys, dimension)) else None,
    )
    b_values: dict[Key, float | None] = {}
    if predictions_b is not None:
        items_b, result.counts_b = _join(records, dimension, predictions_b)
        result.predictions_b_file = lab.get("predictions_b_file", "")
        result.agreement = [method_agreement(items, items_b, m, conv, tolerance) for m in ms]
        b_values = {it.key: it.prediction for it in items_b}
    if pairwise:
        result.positional = positional_bias(pairwise)
        result.correct_preferences_h2h = {name: correct_preferences_h2h(pairwise, items, name) for name in ("all", "challenge")}  # type: ignore[arg-type]
    result.review = _review(predictions, keys, scale, b_values, review_threshold)
    return result
