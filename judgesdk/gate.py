"""Release gates on judge scores: named checks, one verdict, one exit code, several renderings.

A gate config (``gate.toml``, :class:`GateConfig`) names the judge config, the items to judge (or a
previous run's results), the criteria and the gates. Running it has two steps:

1. :func:`collect` (impure): judge the items (results appended to a JSONL as they finish, so a re-run
   resumes and a budget stop keeps what finished) or read earlier results; load calibrations and the
   baseline. It returns a :class:`GateRun`.
2. :func:`decide` (pure): compute a :class:`Verdict` from the config and the run.

The exit code is a property of the verdict and nothing else, and the text, JUnit XML, Markdown and
JSON outputs are renderings of that same object, so a printed "FAIL" can never exit 0 (and a
"PASS" never exits non-zero). Exit codes:

* 0 every gate passed;
* 1 a quality gate failed (mean, pass rate, CI lower bound, regression) and the judge was reliable
  and the run complete;
* 2 inconclusive: a reliability gate (review share, coverage) or a completeness gate (items left
  without a score, budget stop) failed, or a gate could not be evaluated. This wins over 1 on
  purpose: a quality verdict from an unreliable judge or an incomplete run is not evidence;
* 3 (from the CLI, before any verdict exists) a usage or configuration error.

Thresholds are on the human scale when a criterion names a calibration (:mod:`judgesdk.calibration`):
scores, the per-item threshold, the CI and the baseline comparison all use calibrated scores.

Statistics (seeded, so a verdict is reproducible): the CI gate is a percentile bootstrap of the mean
that resamples items with replacement; the regression gate pairs items by id with the baseline run
and runs a one-sided sign-flip permutation test on the paired differences shifted by the allowed
drop delta (H0: mean change >= -delta); it fails when that is rejected at ``alpha``.
(:mod:`judgesdk.meta.bootstrap` resamples *correlations* over documents, a different statistic, so
the two small resamplers for a mean live here.)
"""

from __future__ import annotations

import json
import math
import os
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Annotated, Any, Literal, TextIO

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError, computed_field, model_validator

from judgesdk.calibration import Calibration
from judgesdk.cost import Budget, BudgetMeter, BudgetState, CostReport, summarize_usage
from judgesdk.errors import ConfigError, InputError
from judgesdk.meta.reliability import ItemSignals, ReviewPolicy, review_flags
from judgesdk.types import Criterion, JudgeResult, LabelDistribution, Scale

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = [
    "CriterionRun",
    "CriterionSpec",
    "GateConfig",
    "GateResult",
    "GateRun",
    "Verdict",
    "collect",
    "decide",
    "evaluate_gates",
    "load_gate_config",
    "render_json",
    "render_junit",
    "render_markdown",
    "render_text",
    "result_from_record",
    "write_reports",
]

GateKind = Literal["quality", "reliability", "completeness"]
Outcome = Literal["pass", "fail", "undetermined"]
Status = Literal["pass", "fail", "inconclusive"]
EXIT_CODES: dict[str, int] = {"pass": 0, "fail": 1, "inconclusive": 2}


# -- config ----------------------------------------------------------------------------------------


class CriterionSpec(BaseModel):
    """A criterion the gates judge: its definition and scale, or a dataset preset; optionally a calibration."""

    model_config = ConfigDict(extra="forbid")

    name: str
    definition: str | None = None
    scale: str = "1-5"  # LOW-HIGH Likert scale
    preset: str | None = None  # dataset whose published criterion (definition, scale) to use, e.g. "summeval"
    calibration: Path | None = None  # a calibration JSON: scores and thresholds on the human scale

    def criterion(self) -> Criterion:
        if self.preset:
            from judgesdk.presets import criterion

            return criterion(self.preset, self.name)
        try:
            low, high = (int(part) for part in self.scale.split("-", 1))
        except ValueError as exc:
            raise ConfigError(f"criterion {self.name!r}: scale must look like 1-5, got {self.scale!r}") from exc
        return Criterion(name=self.name, description=self.definition or self.name, scale=Scale.likert(low, high))


class _Gate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str | None = None  # default: "<criterion> <kind>"
    criterion: str

    @property
    def label(self) -> str:
        return self.name or f"{self.criterion} {self.kind}"


class MeanGate(_Gate):
    """Quality: the mean score is at least ``min``."""

    kind: Literal["mean"]
    min: float


class PassRateGate(_Gate):
    """Quality: the share of scored items with score >= ``item_min`` is at least ``min``."""

    kind: Literal["pass_rate"]
    item_min: float
    min: float = Field(ge=0.0, le=1.0)


class CILowerGate(_Gate):
    """Quality: the lower bound of the bootstrap CI of the mean is at least ``min``."""

    kind: Literal["ci_lower"]
    min: float
    confidence: float = Field(default=0.95, gt=0.0, lt=1.0)
    n_resamples: int = Field(default=2000, ge=100)
    seed: int = 0


class RegressionGate(_Gate):
    """Quality: no significant drop of the mean beyond ``max_drop`` against the baseline run (paired by id)."""

    kind: Literal["regression"]
    max_drop: float = Field(default=0.0, ge=0.0)
    alpha: float = Field(default=0.05, gt=0.0, lt=1.0)
    n_permutations: int = Field(default=10000, ge=100)
    seed: int = 0


class ReviewGate(_Gate):
    """Reliability: the share of items flagged "needs human review" (meta.reliability rules) is at most ``max_share``."""

    kind: Literal["review"]
    max_share: float = Field(ge=0.0, le=1.0)
    policy: ReviewPolicy = Field(default_factory=ReviewPolicy)


class CoverageGate(_Gate):
    """Reliability: the mean label-mass coverage of the distributions is at least ``min``."""

    kind: Literal["coverage"]
    min: float = Field(ge=0.0, le=1.0)


Gate = Annotated[
    MeanGate | PassRateGate | CILowerGate | RegressionGate | ReviewGate | CoverageGate, Field(discriminator="kind")
]


class GateConfig(BaseModel):
    """What ``judgesdk gate`` checks. Relative paths in a file are relative to that file."""

    model_config = ConfigDict(extra="forbid")

    judge: Path | dict[str, Any] | None = None  # judge config: a TOML/YAML path or an inline table
    input: Path | None = None  # JSONL of outputs to judge
    results: Path | None = None  # results JSONL: appended to when judging (resumable), else read
    baseline: Path | None = None  # a stored results JSONL to compare against (regression gates)
    max_unscored_share: float = Field(default=0.0, ge=0.0, le=1.0)  # items allowed to end without a score
    budget: Budget | None = None
    criteria: list[CriterionSpec] = Field(min_length=1)
    gates: list[Gate] = Field(min_length=1)

    @model_validator(mode="after")
    def _check(self) -> GateConfig:
        names = [c.name for c in self.criteria]
        if len(set(names)) != len(names):
            raise ValueError(f"criterion names must be unique, got {names}")
        for gate in self.gates:
            if gate.criterion not in names:
                raise ValueError(f"gate {gate.label!r} names criterion {gate.criterion!r}, which is not among [[criteria]] ({', '.join(names)})")
        labels = [g.label for g in self.gates]
        duplicates = sorted({label for label in labels if labels.count(label) > 1})
        if duplicates:
            raise ValueError(f"gate names must be unique; give these a distinct name: {duplicates}")
        return self


def _resolve(data: dict[str, Any], base: Path) -> dict[str, Any]:
    """Relative paths of a gate file, made relative to the file's folder."""
    def under(value: str) -> str:
        return os.path.normpath(base / value)

    out = dict(data)
    for key in ("judge", "input", "results", "baseline"):
        if isinstance(out.get(key), str):
            out[key] = under(out[key])
    out["criteria"] = [
        {**c, "calibration": under(c["calibration"])} if isinstance(c, dict) and isinstance(c.get("calibration"), str) else c
        for c in out.get("criteria") or []
    ]
    if out.get("input") and not out.get("results"):
        out["results"] = under("gate-results.jsonl")
    return out


def load_gate_config(source: str | Path | Mapping[str, Any]) -> GateConfig:
    """A validated gate config from a TOML file or a mapping; ConfigError says what to fix."""
    if isinstance(source, Mapping):
        data, where = dict(source), "gate config"
    else:
        path = Path(source)
        if not path.is_file():
            raise ConfigError(f"gate config {path} does not exist")
        try:
            data = _resolve(tomllib.loads(path.read_text(encoding="utf-8")), path.resolve().parent)
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"gate config {path} is not valid TOML: {exc}") from exc
        where = f"gate config {path}"
    try:
        return GateConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"invalid {where}: {exc}") from exc


# -- the run ---------------------------------------------------------------------------------------


class CriterionRun(BaseModel):
    """Everything the gates of one criterion look at."""

    criterion: Criterion
    expected: list[str]  # ids that should have a result
    results: list[JudgeResult]  # one per id (first wins), uncalibrated
    baseline: list[JudgeResult] | None = None
    calibration: Calibration | None = None


class GateRun(BaseModel):
    criteria: dict[str, CriterionRun]
    budget: BudgetState | None = None  # None when nothing was judged under a budget
    usage: CostReport | None = None
    source: str = ""  # what was judged or read, for the report
    notes: list[str] = Field(default_factory=list)


def result_from_record(record: Mapping[str, Any], scale: Scale, criterion: str) -> JudgeResult:
    """A result line (``judgesdk score -o``, :func:`judgesdk.runlog.result_line`) back into a JudgeResult.

    The distribution summary is rebuilt on ``scale`` (or on its own numeric labels), so review flags
    and coverage read the same from a fresh run and from a file. Lines with only ``id`` and ``score``
    are accepted (status ``ok``, or ``unparsed`` when the score is null).
    """
    data = {k: v for k, v in record.items() if k != "distribution"}
    data.setdefault("status", "ok" if data.get("score") is not None else "unparsed")
    data.setdefault("method", "unknown")
    data.setdefault("criterion", criterion)
    data["item_id"] = str(record.get("id", data.get("item_id")))
    data["distribution"] = _distribution(record.get("distribution"), scale)
    return JudgeResult.model_validate(data)


def _distribution(summary: Any, scale: Scale) -> LabelDistribution | None:
    if not isinstance(summary, Mapping) or not isinstance(summary.get("probs"), Mapping) or len(summary["probs"]) < 2:
        return None
    labels = tuple(str(k) for k in summary["probs"])
    if set(labels) == set(scale.labels):
        own = scale
    else:
        try:
            own = Scale(labels=labels, values=tuple(float(label) for label in labels))
        except ValueError:
            own = Scale(labels=labels, values=scale.values if len(scale.values) == len(labels) else tuple(map(float, range(len(labels)))))
    method = summary.get("method") if summary.get("method") in ("exact", "logprobs", "sampling", "parsed") else "parsed"
    return LabelDistribution(
        scale=own, probs=tuple(float(summary["probs"][label]) for label in own.labels), method=method,
        coverage=summary.get("coverage"), low_coverage=bool(summary.get("low_coverage", False)),
        n_samples=summary.get("n_samples"), n_unparsed=summary.get("n_unparsed"), stderr=summary.get("stderr"),
    )  # fmt: skip


def read_records(path: Path) -> tuple[list[dict[str, Any]], int]:
    """Result lines of a JSONL file and how many unreadable lines were skipped.

    A line cut by a crash is skipped (as :func:`judgesdk.runlog.done_ids` does), so a re-run judges
    its item again; the verdict notes the skip. A file with no readable line at all, or a line that is
    JSON but not a result, is an InputError.
    """
    if not path.is_file():
        raise InputError(f"results file {path} does not exist")
    records, skipped = [], 0
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            skipped += 1
            continue
        if not isinstance(record, dict) or record.get("id") is None:
            raise InputError(f"{path}:{number}: each result line must be an object with an 'id'")
        records.append(record)
    if skipped and not records:
        raise InputError(f"{path} has no readable JSON line: is it a results JSONL (judgesdk score -o)?")
    return records, skipped


def _results_for(records: Sequence[Mapping[str, Any]], criterion: Criterion, path: Path | str, ids: set[str] | None = None) -> list[JudgeResult]:
    """This criterion's results (lines without a criterion count for every criterion), first per id."""
    seen: dict[str, JudgeResult] = {}
    for record in records:
        if record.get("criterion", criterion.name) != criterion.name or str(record["id"]) in seen:
            continue
        if ids is not None and str(record["id"]) not in ids:
            continue
        try:
            seen[str(record["id"])] = result_from_record(record, criterion.scale, criterion.name)
        except (ValidationError, InputError) as exc:
            raise InputError(f"{path}: result {record['id']!r} cannot be read: {exc}") from exc
    return list(seen.values())


def collect(
    config: GateConfig,
    *,
    results: Path | None = None,
    baseline: Path | None = None,
    providers: Sequence[Any] | None = None,
) -> GateRun:
    """Judge ``config.input`` (or read ``results``, which then takes precedence) and load what the gates need.

    ``providers`` replaces the judge config's provider chain (tests, custom backends).
    """
    criteria = {spec.name: spec.criterion() for spec in config.criteria}
    baseline_path = baseline or config.baseline
    if baseline_path is None and any(g.kind == "regression" for g in config.gates):
        raise ConfigError("a regression gate compares against a baseline run: set baseline = \"...jsonl\" or pass --baseline")
    budget_state: BudgetState | None = None
    expected: list[str] | None = None
    notes: list[str] = []
    if results is not None or config.input is None:
        where = results or config.results
        if where is None:
            raise ConfigError("nothing to gate: set input (items to judge) or results (a previous run) in the gate config, or pass --results")
        records, skipped = read_records(where)
        source = f"results read from {where}"
    else:
        records, expected, budget_state, skipped = _judge(config, criteria, providers)
        where = config.results or Path("(in memory)")
        source = f"{config.input} judged into {where}"
    if skipped:
        notes.append(f"{where}: {skipped} unreadable line(s) skipped (cut by an interrupted run?)")
    base_records = None
    if baseline_path is not None:
        base_records, base_skipped = read_records(baseline_path)
        if base_skipped:
            notes.append(f"baseline {baseline_path}: {base_skipped} unreadable line(s) skipped")
    runs: dict[str, CriterionRun] = {}
    for spec in config.criteria:
        crit = criteria[spec.name]
        ids = None if expected is None else set(expected)
        found = _results_for(records, crit, where, ids)
        runs[spec.name] = CriterionRun(
            criterion=crit,
            expected=[r.item_id or "" for r in found] if expected is None else expected,
            results=found,
            baseline=None if base_records is None else _results_for(base_records, crit, baseline_path or ""),
            calibration=Calibration.load(spec.calibration) if spec.calibration else None,
        )
    prices = config.budget.prices if config.budget else None
    usage = summarize_usage([r for run in runs.values() for r in run.results], prices)
    return GateRun(criteria=runs, budget=budget_state, usage=usage, source=source, notes=notes)


def _judge(
    config: GateConfig, criteria: Mapping[str, Criterion], providers: Sequence[Any] | None
) -> tuple[list[dict[str, Any]], list[str], BudgetState | None, int]:
    """Judge the input for every criterion, skipping (id, criterion) pairs already in the results file."""
    from judgesdk.cli import read_items
    from judgesdk.config import load_config
    from judgesdk.cost import budgeted_judge, score_within_budget
    from judgesdk.runlog import append, result_line

    assert config.input is not None
    items = read_items(config.input)
    existing, skipped = read_records(config.results) if config.results is not None and config.results.exists() else ([], 0)
    done = {(str(r.get("criterion")), str(r["id"])) for r in existing}
    jobs = [(crit, [(item, extra) for item, extra in items if (crit.name, item.id) not in done]) for crit in criteria.values()]
    meter = BudgetMeter(config.budget) if config.budget is not None else None
    judge = budgeted_judge(load_config(config.judge), meter, providers)
    fresh: list[dict[str, Any]] = []
    sink = _open_log(config.results) if config.results is not None else None
    todo = {crit.name: pairs for crit, pairs in jobs}

    def on_result(crit: Criterion, index: int, result: JudgeResult) -> None:
        item, extra = todo[crit.name][index]
        record = {**result_line(result, extra), "id": item.id}
        fresh.append(record)
        if sink is not None:
            append(sink, record)

    try:
        for crit, pairs in jobs:
            print(f"judgesdk gate: judging {len(pairs)} items on {crit.name} ({len(items) - len(pairs)} already in the results)", file=sys.stderr)
        score_within_budget(judge, [(crit, [item for item, _ in pairs]) for crit, pairs in jobs], on_result)
    finally:
        if sink is not None:
            sink.close()
    return existing + fresh, [item.id or "" for item, _ in items], None if meter is None else meter.state(), skipped


def _open_log(path: Path) -> TextIO:
    """The results file for appending; a last line cut by a crash is ended first, so the next line stays whole."""
    path.parent.mkdir(parents=True, exist_ok=True)
    cut = path.exists() and path.stat().st_size > 0 and not path.read_bytes().endswith(b"\n")
    sink = path.open("a", encoding="utf-8")
    if cut:
        sink.write("\n")
    return sink


# -- statistics ------------------------------------------------------------------------------------


def bootstrap_mean_ci(values: Sequence[float], confidence: float, n_resamples: int, seed: int) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean, resampling items with replacement (seeded)."""
    v = np.asarray(values, dtype=float)
    rng = np.random.default_rng(seed)
    means = np.concatenate(
        [v[rng.integers(0, len(v), (size, len(v)))].mean(axis=1) for size in _chunks(n_resamples, len(v))]
    )
    alpha = (1 - confidence) / 2
    low, high = np.quantile(means, [alpha, 1 - alpha])
    return float(low), float(high)


def sign_flip_p(shifted: Sequence[float], n_permutations: int, seed: int) -> float:
    """One-sided p of mean(shifted) < 0 against H0 "differences symmetric around 0" (paired sign flips)."""
    d = np.asarray(shifted, dtype=float)
    observed = d.mean()
    rng = np.random.default_rng(seed)
    hits = 0
    for size in _chunks(n_permutations, len(d)):
        signs = rng.choice((-1.0, 1.0), size=(size, len(d)))
        hits += int(((signs * d).mean(axis=1) <= observed + 1e-12).sum())
    return (1 + hits) / (1 + n_permutations)


def _chunks(total: int, width: int, cells: int = 2_000_000) -> list[int]:
    """Row counts summing to ``total`` with at most ``cells`` matrix cells each (bounded memory)."""
    step = max(1, cells // max(width, 1))
    return [min(step, total - start) for start in range(0, total, step)]


# -- the verdict -----------------------------------------------------------------------------------


class GateResult(BaseModel):
    """One gate's outcome: the value observed, the threshold it was held to, and why."""

    name: str
    check: str  # mean, pass_rate, ci_lower, regression, review, coverage, completeness, budget
    kind: GateKind
    criterion: str | None
    outcome: Outcome
    observed: float | None
    threshold: float | None
    op: Literal[">=", "<="]
    message: str
    details: dict[str, Any] = Field(default_factory=dict)


def verdict_status(gates: Sequence[GateResult]) -> Status:
    """pass / fail / inconclusive from the gates (rules in the module docstring)."""
    if any(g.outcome == "undetermined" or (g.outcome == "fail" and g.kind != "quality") for g in gates):
        return "inconclusive"
    if any(g.outcome == "fail" for g in gates):
        return "fail"
    return "pass"


_HEADLINES = {
    "pass": "every gate passed",
    "fail": "a quality gate failed",
    "inconclusive": "the judge was unreliable, the run incomplete, or a gate could not be evaluated",
}


class Verdict(BaseModel):
    """The one object that decides what is printed and the exit code."""

    gates: list[GateResult]
    usage: CostReport | None = None
    budget: BudgetState | None = None
    source: str = ""
    notes: list[str] = Field(default_factory=list)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def status(self) -> Status:
        return verdict_status(self.gates)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.status]

    @property
    def headline(self) -> str:
        return _HEADLINES[self.status]


def _values(results: Sequence[JudgeResult], calibration: Calibration | None) -> dict[str, float]:
    scored = {r.item_id or "": float(r.score) for r in results if r.score is not None}
    if calibration is None or not scored:
        return scored
    return dict(zip(scored, calibration.apply_many(list(scored.values())).tolist()))


def _result(gate: Any, kind: GateKind, outcome: Outcome | bool, observed: float | None, threshold: float | None, message: str, op: str = ">=", **details: Any) -> GateResult:
    if isinstance(outcome, bool):
        outcome = "pass" if outcome else "fail"
    return GateResult(
        name=gate.label, check=gate.kind, kind=kind, criterion=gate.criterion, outcome=outcome,
        observed=observed, threshold=threshold, op=op, message=message, details=details,  # type: ignore[arg-type]
    )  # fmt: skip


def _undetermined(gate: Any, kind: GateKind, why: str) -> GateResult:
    return _result(gate, kind, "undetermined", None, getattr(gate, "min", None), why)


def _scale_note(run: CriterionRun) -> str:
    return " on the human scale" if run.calibration is not None else ""


def _check_mean(gate: MeanGate, run: CriterionRun) -> GateResult:
    values = list(_values(run.results, run.calibration).values())
    if not values:
        return _undetermined(gate, "quality", "no scored items")
    mean = float(np.mean(values))
    return _result(gate, "quality", mean >= gate.min, mean, gate.min, f"mean of {len(values)} scores{_scale_note(run)}", n=len(values))


def _check_pass_rate(gate: PassRateGate, run: CriterionRun) -> GateResult:
    values = list(_values(run.results, run.calibration).values())
    if not values:
        return _undetermined(gate, "quality", "no scored items")
    passing = sum(v >= gate.item_min for v in values)
    share = passing / len(values)
    message = f"{passing} of {len(values)} items scored >= {gate.item_min:g}{_scale_note(run)}"
    return _result(gate, "quality", share >= gate.min, share, gate.min, message, n=len(values), passing=passing)


def _check_ci(gate: CILowerGate, run: CriterionRun) -> GateResult:
    values = list(_values(run.results, run.calibration).values())
    if len(values) < 2:
        return _undetermined(gate, "quality", f"a confidence interval needs at least 2 scored items, got {len(values)}")
    low, high = bootstrap_mean_ci(values, gate.confidence, gate.n_resamples, gate.seed)
    message = (
        f"{gate.confidence:.0%} CI of the mean [{low:.3f}, {high:.3f}] (mean {np.mean(values):.3f}, n={len(values)}, "
        f"{gate.n_resamples} item resamples, seed {gate.seed}){_scale_note(run)}"
    )
    return _result(gate, "quality", low >= gate.min, low, gate.min, message, low=low, high=high, mean=float(np.mean(values)), n=len(values))


def _check_regression(gate: RegressionGate, run: CriterionRun) -> GateResult:
    current = _values(run.results, run.calibration)
    base = _values(run.baseline or [], run.calibration)
    paired = [i for i in current if i in base]
    if len(paired) < 2:
        return _result(gate, "quality", "undetermined", None, gate.alpha, f"only {len(paired)} items scored in both this run and the baseline; need at least 2")
    diffs = np.array([current[i] - base[i] for i in paired])
    change = float(diffs.mean())
    p = sign_flip_p(diffs + gate.max_drop, gate.n_permutations, gate.seed)
    significant = p < gate.alpha
    verdict = "significant" if significant else "not significant"
    message = (
        f"mean change vs baseline {change:+.3f} over {len(paired)} paired items{_scale_note(run)}; a drop beyond "
        f"{gate.max_drop:g} is {verdict} (p = {p:.4f} {'<' if significant else '>='} alpha {gate.alpha:g}, sign-flip test, seed {gate.seed})"
    )
    unmatched = len(current) - len(paired)
    return _result(gate, "quality", not significant, p, gate.alpha, message, mean_change=change, n_pairs=len(paired), n_unmatched=unmatched)


def _check_review(gate: ReviewGate, run: CriterionRun) -> GateResult:
    scored = [r for r in run.results if r.score is not None]
    signals = [ItemSignals.from_result(r.item_id or "", r) for r in scored]
    if not scored or (not gate.policy.flag_without_signals and not any(s.risks() for s in signals)):
        return _result(gate, "reliability", "undetermined", None, gate.max_share, "no reliability signals: the results carry no label distribution", op="<=")
    flags = review_flags(signals, gate.policy)
    flagged = [f for f in flags if f.needs_review]
    reasons: dict[str, int] = {}
    for flag in flagged:
        for reason in flag.reasons:
            reasons[reason] = reasons.get(reason, 0) + 1
    share = len(flagged) / len(flags)
    why = ", ".join(f"{k} {v}" for k, v in sorted(reasons.items())) or "none"
    message = f"{len(flagged)} of {len(flags)} items need human review (risk >= {gate.policy.threshold:g}; reasons: {why})"
    return _result(gate, "reliability", share <= gate.max_share, share, gate.max_share, message, op="<=", reasons=reasons, flagged=[f.item_id for f in flagged])


def _check_coverage(gate: CoverageGate, run: CriterionRun) -> GateResult:
    coverages = [r.distribution.coverage for r in run.results if r.score is not None and r.distribution is not None and r.distribution.coverage is not None]
    if not coverages:
        return _undetermined(gate, "reliability", "no item carries a label-mass coverage (the method gives no distribution)")
    mean = float(np.mean(coverages))
    message = f"mean probability mass on the scale's labels over {len(coverages)} items (min {min(coverages):.3f})"
    return _result(gate, "reliability", mean >= gate.min, mean, gate.min, message, n=len(coverages))


_CHECKS: dict[str, Callable[[Any, CriterionRun], GateResult]] = {
    "mean": _check_mean,
    "pass_rate": _check_pass_rate,
    "ci_lower": _check_ci,
    "regression": _check_regression,
    "review": _check_review,
    "coverage": _check_coverage,
}


def _completeness(name: str, run: CriterionRun, max_unscored_share: float) -> GateResult:
    gate = _Named(label=f"{name} completeness", criterion=name, kind="completeness")
    expected = list(dict.fromkeys(run.expected))
    if not expected:
        return _result(gate, "completeness", "undetermined", None, 1 - max_unscored_share, "no items for this criterion")
    by_id = {r.item_id: r for r in run.results}
    missing = [i for i in expected if i not in by_id]
    unscored = [i for i in expected if i in by_id and by_id[i].score is None]
    share = (len(expected) - len(missing) - len(unscored)) / len(expected)
    statuses: dict[str, int] = {}
    for i in unscored:
        statuses[by_id[i].status] = statuses.get(by_id[i].status, 0) + 1
    message = f"{len(expected) - len(missing) - len(unscored)} of {len(expected)} items have a score"
    if missing:
        message += f"; {len(missing)} not judged"
    if unscored:
        message += "; no score: " + ", ".join(f"{k} {v}" for k, v in sorted(statuses.items()))
    ok = share >= 1 - max_unscored_share - 1e-12
    return _result(gate, "completeness", ok, share, 1 - max_unscored_share, message, missing=missing, unscored=unscored)


def _budget(state: BudgetState) -> GateResult:
    cap = state.budget
    by_tokens = cap.max_tokens is not None
    gate = _Named(label="budget", criterion=None, kind="budget")
    observed, threshold = (float(state.tokens), float(cap.max_tokens)) if by_tokens else (state.usd, cap.max_usd)  # type: ignore[arg-type]
    spent = f"{state.tokens} tokens billed in {state.calls} calls" + (f", ${state.usd:.4f}" if cap.max_usd is not None else "")
    if state.unpriced_calls and cap.max_usd is not None:
        spent += f" ({state.unpriced_calls} calls without a known price not in USD)"
    message = f"stopped: {state.reason}; finished results kept, re-run with a higher cap to resume" if state.stopped else f"within budget: {spent}"
    return _result(gate, "completeness", not state.stopped, observed, threshold, message, op="<=", tokens=state.tokens, usd=state.usd, calls=state.calls)


class _Named(BaseModel):
    """The identity of a built-in gate (completeness, budget), shaped like a configured one."""

    label: str
    criterion: str | None
    kind: str


def decide(config: GateConfig, run: GateRun) -> Verdict:
    """The verdict of ``config``'s gates on ``run``: pure and deterministic (seeded resampling)."""
    gates = [_completeness(name, crun, config.max_unscored_share) for name, crun in run.criteria.items()]
    if run.budget is not None:
        gates.append(_budget(run.budget))
    gates += [_CHECKS[gate.kind](gate, run.criteria[gate.criterion]) for gate in config.gates]
    notes = [*run.notes] + [
        f"{name}: scores mapped to the human scale of {crun.calibration.dimension!r} ({crun.calibration.method} calibration, "
        f"held-out MAE {crun.calibration.fit.mae:.3f})"
        for name, crun in run.criteria.items()
        if crun.calibration is not None
    ]
    return Verdict(gates=gates, usage=run.usage, budget=run.budget, source=run.source, notes=notes)


def evaluate_gates(config: GateConfig, *, results: Path | None = None, baseline: Path | None = None, providers: Sequence[Any] | None = None) -> Verdict:
    """:func:`collect` then :func:`decide`."""
    return decide(config, collect(config, results=results, baseline=baseline, providers=providers))


# -- renderings ------------------------------------------------------------------------------------

_WORDS = {"pass": "PASS", "fail": "FAIL", "inconclusive": "INCONCLUSIVE", "undetermined": "UNDETERMINED"}
_ICONS = {"pass": "✅", "fail": "❌", "inconclusive": "⚠️", "undetermined": "⚠️"}


def _num(value: float | None) -> str:
    if value is None or not math.isfinite(value):
        return "n/a"
    if float(value).is_integer() and abs(value) >= 10:
        return str(int(value))
    return f"{value:.4f}" if abs(value) < 0.01 and value != 0 else f"{value:.3f}"


def _usage_line(verdict: Verdict) -> str | None:
    u = verdict.usage
    if u is None:
        return None
    cost = f"${u.usd:.4f}" if u.usd is not None else "unknown (" + "; ".join(u.notes) + ")"
    return (
        f"usage: {u.n_results} results ({u.n_cached} from cache); billed {u.billed.input_tokens} input + "
        f"{u.billed.output_tokens} output tokens in {u.billed.calls} calls; estimated cost {cost}"
    )


def render_text(verdict: Verdict) -> str:
    """The console report: the verdict line first, one line per gate, then usage."""
    lines = [f"judgesdk gate: {_WORDS[verdict.status]}: {verdict.headline} (exit {verdict.exit_code})"]
    for g in verdict.gates:
        lines.append(
            f"  {_WORDS[g.outcome]:<12} {g.name} [{g.kind}] observed {_num(g.observed)} {g.op} {_num(g.threshold)}: {g.message}"
        )
    lines += [f"  note: {note}" for note in verdict.notes]
    if verdict.source:
        lines.append(f"  source: {verdict.source}")
    usage = _usage_line(verdict)
    if usage:
        lines.append(f"  {usage}")
    return "\n".join(lines)


def render_json(verdict: Verdict) -> str:
    return verdict.model_dump_json(indent=2)


def render_junit(verdict: Verdict) -> str:
    """JUnit XML: one testcase per gate; a failed gate is a <failure>, an undetermined one an <error>."""
    suite = ET.Element(
        "testsuite",
        name="judgesdk gate",
        tests=str(len(verdict.gates)),
        failures=str(sum(g.outcome == "fail" for g in verdict.gates)),
        errors=str(sum(g.outcome == "undetermined" for g in verdict.gates)),
        skipped="0",
    )
    props = ET.SubElement(suite, "properties")
    for key, value in (("status", verdict.status), ("exit_code", str(verdict.exit_code)), ("headline", verdict.headline)):
        ET.SubElement(props, "property", name=key, value=value)
    for g in verdict.gates:
        case = ET.SubElement(suite, "testcase", classname=f"judgesdk.gate.{g.kind}", name=g.name)
        summary = f"observed {_num(g.observed)} {g.op} {_num(g.threshold)}: {g.message}"
        if g.outcome == "fail":
            ET.SubElement(case, "failure", message=g.message, type=g.check).text = summary
        elif g.outcome == "undetermined":
            ET.SubElement(case, "error", message=g.message, type="undetermined").text = summary
        ET.SubElement(case, "system-out").text = summary
    root = ET.Element("testsuites", name="judgesdk gate")
    root.append(suite)
    ET.indent(root)
    return ET.tostring(root, encoding="unicode", xml_declaration=True) + "\n"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render_markdown(verdict: Verdict) -> str:
    """A Markdown summary (for ``$GITHUB_STEP_SUMMARY``): headline, one table row per gate, usage."""
    lines = [
        f"## judgesdk gate: {_ICONS[verdict.status]} {_WORDS[verdict.status]}",
        "",
        f"{verdict.headline[0].upper()}{verdict.headline[1:]} (exit code {verdict.exit_code}).",
        "",
        "| result | gate | kind | criterion | observed | threshold | details |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]
    for g in verdict.gates:
        lines.append(
            f"| {_ICONS[g.outcome]} {_WORDS[g.outcome]} | {_cell(g.name)} | {g.kind} | {_cell(g.criterion or '')} | "
            f"{_num(g.observed)} | {g.op} {_num(g.threshold)} | {_cell(g.message)} |"
        )
    extras = [*(f"- {_cell(note)}" for note in verdict.notes)]
    if verdict.source:
        extras.append(f"- source: {_cell(verdict.source)}")
    usage = _usage_line(verdict)
    if usage:
        extras.append(f"- {_cell(usage)}")
    return "\n".join(lines + ([""] + extras if extras else [])) + "\n"


def write_reports(verdict: Verdict, *, junit: Path | None = None, markdown: Path | None = None, env: Mapping[str, str] | None = None) -> None:
    """Write the requested renderings; the Markdown is also appended to ``$GITHUB_STEP_SUMMARY`` when set."""
    if junit is not None:
        junit.parent.mkdir(parents=True, exist_ok=True)
        junit.write_text(render_junit(verdict), encoding="utf-8")
    if markdown is not None:
        markdown.parent.mkdir(parents=True, exist_ok=True)
        markdown.write_text(render_markdown(verdict), encoding="utf-8")
    summary = (os.environ if env is None else env).get("GITHUB_STEP_SUMMARY")
    if summary:
        with open(summary, "a", encoding="utf-8") as fh:
            fh.write(render_markdown(verdict))
