"""The corrected gate kinds: a random human-labelled slice of the run paired with the judge's scores.

``ppi_ci_lower`` (PPI++ on the mean human score), ``corrected_pass_rate`` (Rogan–Gladen, or PPI++ on pass
indicators) and ``ppi_regression`` (each run's corrected mean from its own slice, a one-sided test of the drop);
the formulas are in :mod:`judgesdk.stats.ppi` and :mod:`judgesdk.stats.pass_rate`. A result's message and
``details`` give the judge-only, human-only and corrected intervals side by side. :func:`~judgesdk.gate.checks.decide`
runs them through :data:`LABELLED_CHECKS` with the criterion's :class:`Labels`, and adds :func:`few_labels_notes`
to the verdict's notes: a ``min_labels`` set below the default 30 is allowed, but the verdict says what the
interval's coverage was measured to be there.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from judgesdk.core import InputError
from judgesdk.gate.gate_config import CorrectedPassRateGate, PPICILowerGate, PPIRegressionGate
from judgesdk.gate.outcome import calibrated_scores, gate_result, scale_note, undetermined
from judgesdk.gate.run import CriterionRun
from judgesdk.gate.slice import Slice, join_slice
from judgesdk.gate.verdict import GateResult
from judgesdk.records import HumanLabels
from judgesdk.stats import Interval, PassRateRefusal, PPIMean, PPIMethod, ppi_difference, ppi_drop_p, ppi_mean, proportion_interval, rogan_gladen

__all__ = ["DEFAULT_MIN_LABELS", "FEW_LABELS_COVERAGE", "LABELLED_CHECKS", "Labels", "few_labels_notes"]

DEFAULT_MIN_LABELS = int(PPICILowerGate.model_fields["min_labels"].default)
# The lowest and highest coverage of the default 95 % interval measured with 10 and 20 labels, over the grid's
# continuous judges and the integer-valued and lenient ones (benchmarks/ppi_coverage_grid.py --sizes 10,20,30
# --agreeing; benchmarks/README.md): what a slice below the default is worth.
FEW_LABELS_COVERAGE = {10: (0.89, 1.0), 20: (0.92, 1.0)}


def _span(interval: Interval) -> str:
    return f"[{interval.low:.3f}, {interval.high:.3f}]"


def _sides(**intervals: Interval) -> dict[str, dict[str, Any]]:
    return {name: interval.model_dump() for name, interval in intervals.items()}


class Labels(NamedTuple):
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


def few_labels_notes(gates: Sequence[object]) -> list[str]:
    """A note for each corrected gate in ``gates`` (configured gates of any kind; the others are skipped) whose
    ``min_labels`` is below :data:`DEFAULT_MIN_LABELS`: such a gate runs, but its interval covers less often than
    its stated confidence, and the note says by how much it was measured to (:data:`FEW_LABELS_COVERAGE`)."""
    notes = []
    for gate in gates:
        if not isinstance(gate, (PPICILowerGate, CorrectedPassRateGate, PPIRegressionGate)) or gate.min_labels >= DEFAULT_MIN_LABELS:
            continue
        measured = "; ".join(f"{n} labels: {low:.0%}-{high:.0%}" for n, (low, high) in FEW_LABELS_COVERAGE.items())
        notes.append(
            f"warning: gate {gate.label!r} ({gate.kind}) has min_labels = {gate.min_labels}, below the default {DEFAULT_MIN_LABELS}: "
            f"with fewer labels a 95 % interval was measured to cover the true value as rarely as "
            f"{min(low for low, _ in FEW_LABELS_COVERAGE.values()):.0%} of the time (coverage {measured}, over the judges of "
            f"benchmarks/ppi_coverage_grid.py), so its verdict is weaker than stated; label at least {DEFAULT_MIN_LABELS} items"
        )
    return notes


def _slice(
    gate: PPICILowerGate | CorrectedPassRateGate | PPIRegressionGate, run: CriterionRun, labels: HumanLabels | None, open_scale: bool = False
) -> Slice | GateResult:
    """The labelled slice joined to this run's (calibrated) scores, or the undetermined result saying why not;
    an InputError for a label off the criterion's scale unless the scale is open."""
    if labels is None:
        return undetermined(gate, "quality", f"no human labels were given for criterion {gate.criterion!r} (labels = ... in its [[criteria]] entry)")
    if not open_scale:
        _on_scale(labels, run)
    scored = calibrated_scores(run.results, run.calibration)
    joined = join_slice(labels, scored, run.expected, min_labels=gate.min_labels)
    if len(joined.ids) < gate.min_labels:
        return undetermined(
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


def _check_ppi(gate: PPICILowerGate, run: CriterionRun, labels: Labels) -> GateResult:
    joined = _slice(gate, run, labels.run, labels.open_scale)
    if isinstance(joined, GateResult):
        return joined
    est, unbounded = _ppi(joined, run, gate.method, gate.confidence)
    h, j = est.human_only, est.judge_only
    message = (
        f"corrected {gate.confidence:.0%} CI of the mean human score {_span(est.corrected)} ({_ppi_words(est)}); "
        f"human only {_span(h)} (n={h.n}); judge only {_span(j)} (N={j.n}, uncorrected){scale_note(run)}{unbounded}"
    )
    return _ppi_result(gate, est, j, joined, message)


def _ppi_words(est: PPIMean) -> str:
    c = est.corrected
    return f"{c.method}, estimate {c.estimate:.3f}, lambda {est.lam:.2f}; {est.n_labelled} labels worth {est.effective_labels:.1f}"


def _ppi_result(gate: PPICILowerGate | CorrectedPassRateGate, est: PPIMean, judge_only: Interval, joined: Slice, message: str) -> GateResult:
    """Passes when the corrected interval's low end reaches ``gate.min``; the details the report reads."""
    c = est.corrected
    return gate_result(
        gate, "quality", c.low >= gate.min, c.low, gate.min, message,
        estimate=c.estimate, low=c.low, high=c.high, lam=est.lam, effective_labels=est.effective_labels, method=est.method,
        n_labelled=est.n_labelled, n_unlabelled=est.n_unlabelled, unscored_labels=joined.unscored,
        intervals=_sides(judge_only=judge_only, human_only=est.human_only, corrected=c),
    )  # fmt: skip


def _check_corrected_pass_rate(gate: CorrectedPassRateGate, run: CriterionRun, labels: Labels) -> GateResult:
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
    rule = f"human label >= {gate.item_min:g}, judge score >= {judge_min:g}{scale_note(run)}"
    h, j = est.human_only, est.judge_only
    sides = f"human only {_span(h)} ({h.estimate:.3f}, n={h.n}); judge only {_span(j)} ({j.estimate:.3f}, N={j.n}, uncorrected)"
    if isinstance(est, PassRateRefusal):
        return gate_result(
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
    return gate_result(
        gate, "quality", c.low >= gate.min, c.low, gate.min, message,
        estimate=c.estimate, low=c.low, high=c.high, apparent=est.apparent, sensitivity=est.sensitivity,
        specificity=est.specificity, youden=est.youden, n_pos=est.n_pos, n_neg=est.n_neg, clipped=est.clipped,
        unscored_labels=joined.unscored, intervals=_sides(judge_only=j, human_only=h, corrected=c),
    )  # fmt: skip


def _check_ppi_regression(gate: PPIRegressionGate, run: CriterionRun, labels: Labels) -> GateResult:
    """Each run's corrected mean from its own slice; a one-sided test of the difference (config docstring)."""
    if run.baseline is None:
        return undetermined(gate, "quality", "no baseline run was read")
    if labels.baseline is None:
        return undetermined(gate, "quality", f"no human labels of the baseline run for criterion {gate.criterion!r} (baseline_labels = ... in its [[criteria]] entry)")
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
        f"one-sided){scale_note(run)}{new_note}{old_note and ' (baseline)' + old_note}"
    )
    return gate_result(
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
        f"pass = human label >= {gate.item_min:g}, judge score >= {judge_min:g}{scale_note(run)}"
    )
    return _ppi_result(gate, est, j, joined, message)


LABELLED_CHECKS: dict[str, Callable[[Any, CriterionRun, Labels], GateResult]] = {
    "ppi_ci_lower": _check_ppi,
    "corrected_pass_rate": _check_corrected_pass_rate,
    "ppi_regression": _check_ppi_regression,
}
