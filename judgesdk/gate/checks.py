"""Deciding (the pure step): each gate kind's check, the built-in completeness and budget gates.

:func:`decide` runs every configured gate's check on a :class:`~judgesdk.gate.run.GateRun`,
adds a completeness gate per criterion and a budget gate when a budget was set, and returns the
:class:`~judgesdk.gate.verdict.Verdict`. Scores are mapped to the human scale first when a criterion
names a calibration, so thresholds, the CI and the baseline comparison all use calibrated scores.
:func:`evaluate_gates` is the one impure entry here: :func:`~judgesdk.gate.run.collect`, reading the
criteria's human-label files (:func:`~judgesdk.gate.slice.read_labels`), then :func:`decide`.

The corrected kinds (``ppi_ci_lower``, ``corrected_pass_rate``) pair a random human-labelled slice of
the run with the judge's scores (:mod:`judgesdk.stats.ppi`); their message and ``details`` give the
judge-only, human-only and corrected intervals side by side.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
from pydantic import BaseModel

from judgesdk.core.errors import InputError
from judgesdk.core.provenance import record_of
from judgesdk.core.types import JudgeResult, method_family
from judgesdk.gate.gate_config import (
    CILowerGate,
    CorrectedPassRateGate,
    CoverageGate,
    GateConfig,
    MeanGate,
    PassRateGate,
    PPICILowerGate,
    PPIRegressionGate,
    ProvenanceGate,
    RegressionGate,
    ReviewGate,
)
from judgesdk.gate.run import CriterionRun, GateRun, collect
from judgesdk.gate.slice import Slice, join_slice
from judgesdk.gate.verdict import GateKind, GateResult, Outcome, Verdict
from judgesdk.meta.calibration import Calibration
from judgesdk.meta.reliability import ItemSignals, review_flags
from judgesdk.provider.layers.budget import BudgetState
from judgesdk.records.labels import HumanLabels, read_labels
from judgesdk.stats.ppi import (
    Interval,
    PassRateRefusal,
    PPIMean,
    PPIMethod,
    ppi_difference,
    ppi_drop_p,
    ppi_mean,
    proportion_interval,
    rogan_gladen,
)  # fmt: skip
from judgesdk.stats.resampling import bootstrap_mean_ci, sign_flip_p


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
        observed=observed, threshold=threshold, op=op, message=message, details=details,
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
    scored = _values(run.results, run.calibration)
    values = list(scored.values())
    if not values:
        return _undetermined(gate, "quality", "no scored items")
    passing = sum(v >= gate.item_min for v in values)
    share = passing / len(values)
    message = f"{passing} of {len(values)} items scored >= {gate.item_min:g}{_scale_note(run)}"
    below = [item for item, v in scored.items() if v < gate.item_min]  # the items that failed it (judgesdk view lists them)
    return _result(gate, "quality", share >= gate.min, share, gate.min, message, n=len(values), passing=passing, item_min=gate.item_min, below=below)


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


def _check_provenance(gate: ProvenanceGate, run: CriterionRun) -> GateResult:
    """Each provenance field's values over this run's judged results against the baseline's (errors, which
    no model produced, left out); a field in ``accept`` (or under an accepted prefix) may differ."""
    judged = [r for r in run.results if r.status != "error"]
    base = [r for r in run.baseline or [] if r.status != "error"]
    if not judged or not base:
        return _undetermined(gate, "reliability", f"nothing to compare: {len(judged)} judged results in this run, {len(base)} in the baseline")
    if not {r.item_id for r in judged} & {r.item_id for r in base}:  # two runs over different items compare nothing
        return _undetermined(
            gate, "reliability", f"nothing to compare: no item in common between this run ({len(judged)} judged) and the baseline ({len(base)}): "
            "is the baseline a run of the same items?"
        )  # fmt: skip
    def record(result: JudgeResult) -> dict[str, str] | None:  # a jury's result: its judges' records
        return record_of(result.provenance, {name: part.provenance for name, part in (result.parts or {}).items()})

    unrecorded = {name: sum(record(r) is None for r in rs) for name, rs in (("this run", judged), ("the baseline", base))}
    if any(unrecorded.values()):
        listed = ", ".join(f"{n} of {len(judged if w == 'this run' else base)} in {w}" for w, n in unrecorded.items() if n)
        return _undetermined(gate, "reliability", f"results without provenance ({listed}): written before judgesdk recorded it; judge the baseline again")

    def values(results: Sequence[JudgeResult]) -> dict[str, set[str]]:
        found: dict[str, set[str]] = {}
        for result in results:
            for field, value in (record(result) or {}).items():
                found.setdefault(field, set()).add(value)
        return found

    now, then = values(judged), values(base)
    accepted = [a.strip() for a in gate.accept if a.strip()]
    differ = {
        field: (sorted(then.get(field, {""})), sorted(now.get(field, {""})))
        for field in sorted(now.keys() | then.keys())
        if now.get(field, {""}) != then.get(field, {""})
    }
    blocking = {f: v for f, v in differ.items() if not any(f == a or f.startswith(a + ".") for a in accepted)}
    listed = "; ".join(f"{f}: {' | '.join(a) or '-'} -> {' | '.join(b) or '-'}" for f, (a, b) in blocking.items())
    if blocking:
        message = f"the judge differs from the baseline's in {', '.join(blocking)} ({listed}); list what is intended in accept = [...]"
    elif differ:
        message = f"the judge differs from the baseline's only in accepted fields ({', '.join(differ)})"
    else:
        message = f"the judge is the baseline's ({len(judged)} results, {len(base)} in the baseline)"
    return _result(gate, "reliability", not blocking, float(len(blocking)), 0.0, message, op="<=", changed={f: list(v) for f, v in differ.items()}, accepted=sorted(set(differ) - set(blocking)))


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


def _span(interval: Interval) -> str:
    return f"[{interval.low:.3f}, {interval.high:.3f}]"


def _sides(**intervals: Interval) -> dict[str, dict[str, Any]]:
    return {name: interval.model_dump() for name, interval in intervals.items()}


class _Labels(NamedTuple):
    """A criterion's human-labelled slices: of this run, and of the baseline run (``ppi_regression``); whether
    its scale is open (labels may lie outside it)."""

    run: HumanLabels | None
    baseline: HumanLabels | None
    open_scale: bool = False


def _on_scale(labels: HumanLabels, run: CriterionRun) -> None:
    """InputError naming the first label outside the criterion's scale (a typo such as 7 on 1-5 would move the
    corrected mean and push its interval past the scale's end)."""
    values = run.criterion.scale.values
    low, high = min(values), max(values)
    outside = [(i, v) for i, v in labels.values.items() if not low <= v <= high]
    if outside:
        item, value = outside[0]
        more = f" (and {len(outside) - 1} more)" if len(outside) > 1 else ""
        raise InputError(
            f"{labels.path}: item {item!r} has label {value:g}, outside the scale {low:g}-{high:g} of criterion {run.criterion.name!r}{more}; "
            "correct the label, or set open_scale = true on the [[criteria]] entry if labels may lie outside the scale"
        )


def _slice(
    gate: PPICILowerGate | CorrectedPassRateGate | PPIRegressionGate, run: CriterionRun, labels: HumanLabels | None, open_scale: bool = False
) -> Slice | GateResult:
    """The labelled slice joined to this run's (calibrated) scores, or the undetermined result saying why not;
    an InputError for a label off the criterion's scale unless the scale is open."""
    if labels is None:
        return _undetermined(gate, "quality", f"no human labels were given for criterion {gate.criterion!r} (labels = ... in its [[criteria]] entry)")
    if not open_scale:
        _on_scale(labels, run)
    scored = _values(run.results, run.calibration)
    joined = join_slice(labels, scored, run.expected, min_labels=gate.min_labels)
    if len(joined.ids) < gate.min_labels:
        return _undetermined(
            gate, "quality",
            f"only {len(joined.ids)} labelled items have a judge score ({len(joined.unscored)} of the {len(labels.values)} in "
            f"{labels.path} were not scored); need at least {gate.min_labels}",
        )  # fmt: skip
    return joined


def _ppi(joined: Slice, run: CriterionRun, method: PPIMethod, confidence: float) -> tuple[PPIMean, str]:
    """PPI++ on a joined slice, bounded by the criterion's scale unless a label lies outside it (an open scale; a
    note says so)."""
    values = run.criterion.scale.values
    bounds = (min(values), max(values))
    outside = [v for v in joined.human if not bounds[0] <= v <= bounds[1]]
    est = ppi_mean(
        joined.human, joined.judge, joined.judge_unlabelled, confidence=confidence, method=method,
        bounds=None if outside else bounds,
    )  # fmt: skip
    note = f"; {len(outside)} label(s) outside the criterion's scale {bounds[0]:g}-{bounds[1]:g}, so the interval is not bounded by it" if outside else ""
    return est, note


def _check_ppi(gate: PPICILowerGate, run: CriterionRun, labels: _Labels) -> GateResult:
    joined = _slice(gate, run, labels.run, labels.open_scale)
    if isinstance(joined, GateResult):
        return joined
    est, unbounded = _ppi(joined, run, gate.method, gate.confidence)
    h, j = est.human_only, est.judge_only
    message = (
        f"corrected {gate.confidence:.0%} CI of the mean human score {_span(est.corrected)} ({_ppi_words(est)}); "
        f"human only {_span(h)} (n={h.n}); judge only {_span(j)} (N={j.n}, uncorrected){_scale_note(run)}{unbounded}"
    )
    return _ppi_result(gate, est, j, joined, message)


def _ppi_words(est: PPIMean) -> str:
    c = est.corrected
    return f"{c.method}, estimate {c.estimate:.3f}, lambda {est.lam:.2f}; {est.n_labelled} labels worth {est.effective_labels:.1f}"


def _ppi_result(gate: PPICILowerGate | CorrectedPassRateGate, est: PPIMean, judge_only: Interval, joined: Slice, message: str) -> GateResult:
    """Passes when the corrected interval's low end reaches ``gate.min``; the details the report reads."""
    c = est.corrected
    return _result(
        gate, "quality", c.low >= gate.min, c.low, gate.min, message,
        estimate=c.estimate, low=c.low, high=c.high, lam=est.lam, effective_labels=est.effective_labels, method=est.method,
        n_labelled=est.n_labelled, n_unlabelled=est.n_unlabelled, unscored_labels=joined.unscored,
        intervals=_sides(judge_only=judge_only, human_only=est.human_only, corrected=c),
    )  # fmt: skip


def _check_corrected_pass_rate(gate: CorrectedPassRateGate, run: CriterionRun, labels: _Labels) -> GateResult:
    joined = _slice(gate, run, labels.run, labels.open_scale)
    if isinstance(joined, GateResult):
        return joined
    judge_min = gate.item_min if gate.judge_item_min is None else gate.judge_item_min
    if gate.method == "ppi":
        return _ppi_pass_rate(gate, run, joined, judge_min)
    est = rogan_gladen(
        np.array(joined.human) >= gate.item_min, np.array(joined.judge) >= judge_min, np.array(joined.judge_unlabelled) >= judge_min,
        confidence=gate.confidence, min_youden=gate.min_youden,
    )  # fmt: skip
    rule = f"human label >= {gate.item_min:g}, judge score >= {judge_min:g}{_scale_note(run)}"
    h, j = est.human_only, est.judge_only
    sides = f"human only {_span(h)} ({h.estimate:.3f}, n={h.n}); judge only {_span(j)} ({j.estimate:.3f}, N={j.n}, uncorrected)"
    if isinstance(est, PassRateRefusal):
        return _result(
            gate, "quality", "undetermined", None, gate.min, f"Rogan-Gladen refused: {est.reason}; {sides}; pass = {rule}",
            refused=est.reason, sensitivity=est.sensitivity, specificity=est.specificity, youden=est.youden,
            n_pos=est.n_pos, n_neg=est.n_neg, intervals=_sides(judge_only=j, human_only=h),
        )  # fmt: skip
    c = est.corrected
    message = (
        f"corrected {gate.confidence:.0%} CI of the human pass rate {_span(c)} (Rogan-Gladen, estimate {c.estimate:.3f}; "
        f"judge sensitivity {est.sensitivity:.3f}, specificity {est.specificity:.3f} on {est.n_pos} passing and {est.n_neg} "
        f"failing labelled items); {sides}; pass = {rule}"
    )
    return _result(
        gate, "quality", c.low >= gate.min, c.low, gate.min, message,
        estimate=c.estimate, low=c.low, high=c.high, apparent=est.apparent, sensitivity=est.sensitivity,
        specificity=est.specificity, youden=est.youden, n_pos=est.n_pos, n_neg=est.n_neg, clipped=est.clipped,
        unscored_labels=joined.unscored, intervals=_sides(judge_only=j, human_only=h, corrected=c),
    )  # fmt: skip


def _check_ppi_regression(gate: PPIRegressionGate, run: CriterionRun, labels: _Labels) -> GateResult:
    """Each run's corrected mean from its own slice; a one-sided test of the difference (config docstring)."""
    if run.baseline is None:
        return _undetermined(gate, "quality", "no baseline run was read")
    if labels.baseline is None:
        return _undetermined(gate, "quality", f"no human labels of the baseline run for criterion {gate.criterion!r} (baseline_labels = ... in its [[criteria]] entry)")
    joined = _slice(gate, run, labels.run, labels.open_scale)
    if isinstance(joined, GateResult):
        return joined
    base_run = run.model_copy(update={"results": run.baseline, "expected": [r.item_id for r in run.baseline], "baseline": None})
    try:
        base_joined = _slice(gate, base_run, labels.baseline, labels.open_scale)
    except InputError as exc:  # its words say "this run": here that run is the baseline
        raise InputError(f"baseline run: {exc}") from None
    if isinstance(base_joined, GateResult):
        return base_joined.model_copy(update={"message": f"baseline run: {base_joined.message}"})
    new, new_note = _ppi(joined, run, gate.method, 1 - gate.alpha)
    old, old_note = _ppi(base_joined, base_run, gate.method, 1 - gate.alpha)
    change = new.corrected.estimate - old.corrected.estimate
    se = math.hypot(new.se, old.se)
    p = ppi_drop_p(new, old, gate.max_drop)  # MOVER: each run's own interval carried into the difference
    significant = p < gate.alpha
    diff = ppi_difference(new, old, 1 - gate.alpha)
    message = (
        f"corrected mean human score {new.corrected.estimate:.3f} vs baseline {old.corrected.estimate:.3f} ({change:+.3f}, "
        f"{1 - gate.alpha:.0%} CI [{diff.low:+.3f}, {diff.high:+.3f}]; each run's own slice of {new.n_labelled} and "
        f"{old.n_labelled} labels, PPI++ {gate.method}); a drop beyond {gate.max_drop:g} is "
        f"{'significant' if significant else 'not significant'} (p = {p:.4f} {'<' if significant else '>='} alpha {gate.alpha:g}, "
        f"one-sided){_scale_note(run)}{new_note}{old_note and ' (baseline)' + old_note}"
    )
    return _result(
        gate, "quality", not significant, p, gate.alpha, message, mean_change=change, se=se, p=p,
        estimate=new.corrected.estimate, baseline_estimate=old.corrected.estimate, n_labelled=new.n_labelled,
        baseline_n_labelled=old.n_labelled, method=new.method,
        intervals=_sides(corrected=new.corrected, baseline_corrected=old.corrected, human_only=new.human_only),
    )  # fmt: skip


def _ppi_pass_rate(gate: CorrectedPassRateGate, run: CriterionRun, joined: Slice, judge_min: float) -> GateResult:
    """PPI++ on pass indicators: the human pass rate is the mean of 1[label >= item_min], the judge's
    1[score >= judge_min] its prediction; the cross-fit interval bounded by [0, 1]."""
    human = (np.array(joined.human) >= gate.item_min).astype(float)
    judge, rest = ((np.array(v) >= judge_min).astype(float) for v in (joined.judge, joined.judge_unlabelled))
    est = ppi_mean(human, judge, rest, confidence=gate.confidence, bounds=(0.0, 1.0))
    h = est.human_only
    j = proportion_interval(int(judge.sum() + rest.sum()), len(judge) + len(rest), gate.confidence)
    message = (
        f"corrected {gate.confidence:.0%} CI of the human pass rate {_span(est.corrected)} (PPI++ on pass/fail, {_ppi_words(est)}); "
        f"human only {_span(h)} ({h.estimate:.3f}, n={h.n}); judge only {_span(j)} ({j.estimate:.3f}, N={j.n}, uncorrected); "
        f"pass = human label >= {gate.item_min:g}, judge score >= {judge_min:g}{_scale_note(run)}"
    )
    return _ppi_result(gate, est, j, joined, message)


_LABELLED_CHECKS: dict[str, Callable[[Any, CriterionRun, _Labels], GateResult]] = {
    "ppi_ci_lower": _check_ppi,
    "corrected_pass_rate": _check_corrected_pass_rate,
    "ppi_regression": _check_ppi_regression,
}

_CHECKS: dict[str, Callable[[Any, CriterionRun], GateResult]] = {
    "mean": _check_mean,
    "pass_rate": _check_pass_rate,
    "ci_lower": _check_ci,
    "regression": _check_regression,
    "review": _check_review,
    "coverage": _check_coverage,
    "provenance": _check_provenance,
}


class _Named(BaseModel):
    """The identity of a built-in gate (completeness, budget), shaped like a configured one."""

    label: str
    criterion: str | None
    kind: str


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


def _one_method(name: str, run: CriterionRun, allowed: bool) -> GateResult:
    """Scores of one criterion must come from one method family: a mean over fused scores (human scale) and
    geval scores (the judge's labels) measures neither; ``allow_mixed_methods = true`` accepts it."""
    gate = _Named(label=f"{name} one method", criterion=name, kind="methods")
    counts: dict[str, int] = {}
    for result in run.results:
        if result.score is not None:
            family = method_family(result.method)
            counts[family] = counts.get(family, 0) + 1
    listed = ", ".join(f"{family} {n}" for family, n in sorted(counts.items())) or "no scores"
    if len(counts) <= 1:
        return _result(gate, "reliability", "pass", float(len(counts)), 1.0, f"scores from one method ({listed})", op="<=")
    if allowed:
        return _result(gate, "reliability", "pass", float(len(counts)), None, f"mixed methods allowed by the config ({listed})", op="<=")
    return _result(
        gate, "reliability", "undetermined", float(len(counts)), 1.0,
        f"scores from several methods ({listed}), e.g. a fallback between providers: their scales differ; "
        "set allow_mixed_methods = true to accept it",
        op="<=",
    )  # fmt: skip


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


def decide(
    config: GateConfig, run: GateRun, labels: Mapping[str, HumanLabels] | None = None,
    baseline_labels: Mapping[str, HumanLabels] | None = None,
) -> Verdict:
    """The verdict of ``config``'s gates on ``run``: pure and deterministic (seeded resampling).

    ``labels`` maps a criterion name to its human-labelled slice, for the corrected gate kinds, and
    ``baseline_labels`` to the baseline run's slice, for ``ppi_regression`` (:func:`evaluate_gates` reads
    both from the criteria's files). Labels for ids the run does not have, or fewer than a gate's
    ``min_labels``, raise an InputError.
    """
    gates = [_completeness(name, crun, config.max_unscored_share) for name, crun in run.criteria.items()]
    gates += [_one_method(name, crun, config.allow_mixed_methods) for name, crun in run.criteria.items()]
    if run.budget is not None:
        gates.append(_budget(run.budget))
    labels, baseline_labels = labels or {}, baseline_labels or {}
    open_scale = {spec.name: spec.open_scale for spec in config.criteria}
    gates += [
        _LABELLED_CHECKS[gate.kind](
            gate, run.criteria[gate.criterion], _Labels(labels.get(gate.criterion), baseline_labels.get(gate.criterion), open_scale[gate.criterion])
        )
        if gate.kind in _LABELLED_CHECKS
        else _CHECKS[gate.kind](gate, run.criteria[gate.criterion])
        for gate in config.gates
    ]
    notes = [*run.notes] + [
        f"{name}: scores mapped to the human scale of {crun.calibration.dimension!r} ({crun.calibration.method} calibration, "
        f"held-out MAE {crun.calibration.fit.mae:.3f})"
        for name, crun in run.criteria.items()
        if crun.calibration is not None
    ]
    return Verdict(gates=gates, usage=run.usage, budget=run.budget, source=run.source, notes=notes)


def evaluate_gates(config: GateConfig, *, results: Path | None = None, baseline: Path | None = None, providers: Sequence[Any] | None = None) -> Verdict:
    """:func:`collect`, the criteria's human-label files, then :func:`decide`."""
    labels = {spec.name: read_labels(spec.labels) for spec in config.criteria if spec.labels is not None}
    base = {spec.name: read_labels(spec.baseline_labels) for spec in config.criteria if spec.baseline_labels is not None}
    return decide(config, collect(config, results=results, baseline=baseline, providers=providers), labels, base)
