"""Deciding (the pure step): each gate kind's check, the built-in completeness and budget gates.

:func:`decide` runs every configured gate's check on a :class:`~judgesdk.gate.run.GateRun`,
adds a completeness gate per criterion and a budget gate when a budget was set, and returns the
:class:`~judgesdk.gate.verdict.Verdict`. Scores are mapped to the human scale first when a criterion
names a calibration, so thresholds, the CI and the baseline comparison all use calibrated scores.
:func:`evaluate_gates` is the one impure entry here: :func:`~judgesdk.gate.run.collect`, reading the
criteria's human-label files (:func:`~judgesdk.gate.slice.read_labels`), then :func:`decide`.

The corrected kinds (``ppi_ci_lower``, ``corrected_pass_rate``, ``ppi_regression``), which pair a random
human-labelled slice of the run with the judge's scores, are checked in :mod:`judgesdk.gate.corrected`; every
check builds its result through :mod:`judgesdk.gate.outcome`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel

from judgesdk.core import JudgeResult, method_family, record_of
from judgesdk.gate.corrected import LABELLED_CHECKS, Labels, few_labels_notes
from judgesdk.gate.gate_config import CILowerGate, CoverageGate, GateConfig, MeanGate, PassRateGate, ProvenanceGate, RegressionGate, ReviewGate
from judgesdk.gate.outcome import calibrated_scores, gate_result, scale_note, undetermined
from judgesdk.gate.run import CriterionRun, GateRun, collect
from judgesdk.gate.verdict import GateResult, Verdict
from judgesdk.meta import ItemSignals, review_flags
from judgesdk.provider import BudgetState
from judgesdk.records import HumanLabels, read_labels
from judgesdk.stats import bootstrap_mean_ci, sign_flip_p


def _check_mean(gate: MeanGate, run: CriterionRun) -> GateResult:
    values = list(calibrated_scores(run.results, run.calibration).values())
    if not values:
        return undetermined(gate, "quality", "no scored items")
    mean = float(np.mean(values))
    return gate_result(gate, "quality", mean >= gate.min, mean, gate.min, f"mean of {len(values)} scores{scale_note(run)}", n=len(values))


def _check_pass_rate(gate: PassRateGate, run: CriterionRun) -> GateResult:
    scored = calibrated_scores(run.results, run.calibration)
    values = list(scored.values())
    if not values:
        return undetermined(gate, "quality", "no scored items")
    passing = sum(v >= gate.item_min for v in values)
    share = passing / len(values)
    message = f"{passing} of {len(values)} items scored >= {gate.item_min:g}{scale_note(run)}"
    below = [item for item, v in scored.items() if v < gate.item_min]  # the items that failed it (judgesdk view lists them)
    return gate_result(gate, "quality", share >= gate.min, share, gate.min, message, n=len(values), passing=passing, item_min=gate.item_min, below=below)


def _check_ci(gate: CILowerGate, run: CriterionRun) -> GateResult:
    values = list(calibrated_scores(run.results, run.calibration).values())
    if len(values) < 2:
        return undetermined(gate, "quality", f"a confidence interval needs at least 2 scored items, got {len(values)}")
    low, high = bootstrap_mean_ci(values, gate.confidence, gate.n_resamples, gate.seed)
    message = (
        f"{gate.confidence:.0%} CI of the mean [{low:.3f}, {high:.3f}] (mean {np.mean(values):.3f}, n={len(values)}, "
        f"{gate.n_resamples} item resamples, seed {gate.seed}){scale_note(run)}"
    )
    return gate_result(gate, "quality", low >= gate.min, low, gate.min, message, low=low, high=high, mean=float(np.mean(values)), n=len(values))


def _check_regression(gate: RegressionGate, run: CriterionRun) -> GateResult:
    current = calibrated_scores(run.results, run.calibration)
    base = calibrated_scores(run.baseline or [], run.calibration)
    paired = [i for i in current if i in base]
    if len(paired) < 2:
        return gate_result(gate, "quality", "undetermined", None, gate.alpha, f"only {len(paired)} items scored in both this run and the baseline; need at least 2")
    diffs = np.array([current[i] - base[i] for i in paired])
    change = float(diffs.mean())
    p = sign_flip_p(diffs + gate.max_drop, gate.n_permutations, gate.seed)
    significant = p < gate.alpha
    verdict = "significant" if significant else "not significant"
    message = (
        f"mean change vs baseline {change:+.3f} over {len(paired)} paired items{scale_note(run)}; a drop beyond "
        f"{gate.max_drop:g} is {verdict} (p = {p:.4f} {'<' if significant else '>='} alpha {gate.alpha:g}, sign-flip test, seed {gate.seed})"
    )
    unmatched = len(current) - len(paired)
    return gate_result(gate, "quality", not significant, p, gate.alpha, message, mean_change=change, n_pairs=len(paired), n_unmatched=unmatched)


def _check_provenance(gate: ProvenanceGate, run: CriterionRun) -> GateResult:
    """Each provenance field's values over this run's judged results against the baseline's (errors, which
    no model produced, left out); a field in ``accept`` (or under an accepted prefix) may differ."""
    judged = [r for r in run.results if r.status != "error"]
    base = [r for r in run.baseline or [] if r.status != "error"]
    if not judged or not base:
        return undetermined(gate, "reliability", f"nothing to compare: {len(judged)} judged results in this run, {len(base)} in the baseline")
    if not {r.item_id for r in judged} & {r.item_id for r in base}:  # two runs over different items compare nothing
        return undetermined(
            gate, "reliability", f"nothing to compare: no item in common between this run ({len(judged)} judged) and the baseline ({len(base)}): "
            "is the baseline a run of the same items?"
        )  # fmt: skip
    def record(result: JudgeResult) -> dict[str, str] | None:  # a jury's result: its judges' records
        return record_of(result.provenance, {name: part.provenance for name, part in (result.parts or {}).items()})

    unrecorded = {name: sum(record(r) is None for r in rs) for name, rs in (("this run", judged), ("the baseline", base))}
    if any(unrecorded.values()):
        listed = ", ".join(f"{n} of {len(judged if w == 'this run' else base)} in {w}" for w, n in unrecorded.items() if n)
        return undetermined(gate, "reliability", f"results without provenance ({listed}): written before judgesdk recorded it; judge the baseline again")

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
    return gate_result(gate, "reliability", not blocking, float(len(blocking)), 0.0, message, op="<=", changed={f: list(v) for f, v in differ.items()}, accepted=sorted(set(differ) - set(blocking)))


def _check_review(gate: ReviewGate, run: CriterionRun) -> GateResult:
    scored = [r for r in run.results if r.score is not None]
    signals = [ItemSignals.from_result(r.item_id or "", r) for r in scored]
    if not scored or (not gate.policy.flag_without_signals and not any(s.risks() for s in signals)):
        return gate_result(gate, "reliability", "undetermined", None, gate.max_share, "no reliability signals: the results carry no label distribution", op="<=")
    flags = review_flags(signals, gate.policy)
    flagged = [f for f in flags if f.needs_review]
    reasons: dict[str, int] = {}
    for flag in flagged:
        for reason in flag.reasons:
            reasons[reason] = reasons.get(reason, 0) + 1
    share = len(flagged) / len(flags)
    why = ", ".join(f"{k} {v}" for k, v in sorted(reasons.items())) or "none"
    message = f"{len(flagged)} of {len(flags)} items need human review (risk >= {gate.policy.threshold:g}; reasons: {why})"
    return gate_result(gate, "reliability", share <= gate.max_share, share, gate.max_share, message, op="<=", reasons=reasons, flagged=[f.item_id for f in flagged])


def _check_coverage(gate: CoverageGate, run: CriterionRun) -> GateResult:
    coverages = [r.distribution.coverage for r in run.results if r.score is not None and r.distribution is not None and r.distribution.coverage is not None]
    if not coverages:
        return undetermined(gate, "reliability", "no item carries a label-mass coverage (the method gives no distribution)")
    mean = float(np.mean(coverages))
    message = f"mean probability mass on the scale's labels over {len(coverages)} items (min {min(coverages):.3f})"
    return gate_result(gate, "reliability", mean >= gate.min, mean, gate.min, message, n=len(coverages))


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
        return gate_result(gate, "completeness", "undetermined", None, 1 - max_unscored_share, "no items for this criterion")
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
    return gate_result(gate, "completeness", ok, share, 1 - max_unscored_share, message, missing=missing, unscored=unscored)


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
        return gate_result(gate, "reliability", "pass", float(len(counts)), 1.0, f"scores from one method ({listed})", op="<=")
    if allowed:
        return gate_result(gate, "reliability", "pass", float(len(counts)), None, f"mixed methods allowed by the config ({listed})", op="<=")
    return gate_result(
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
    return gate_result(gate, "completeness", not state.stopped, observed, threshold, message, op="<=", tokens=state.tokens, usd=state.usd, calls=state.calls)


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
        LABELLED_CHECKS[gate.kind](
            gate, run.criteria[gate.criterion], Labels(labels.get(gate.criterion), baseline_labels.get(gate.criterion), open_scale[gate.criterion])
        )
        if gate.kind in LABELLED_CHECKS
        else _CHECKS[gate.kind](gate, run.criteria[gate.criterion])
        for gate in config.gates
    ]
    notes = [*run.notes] + [
        f"{name}: scores mapped to the human scale of {crun.calibration.dimension!r} ({crun.calibration.method} calibration, "
        f"held-out MAE {crun.calibration.fit.mae:.3f})"
        for name, crun in run.criteria.items()
        if crun.calibration is not None
    ] + few_labels_notes(config.gates)
    return Verdict(gates=gates, usage=run.usage, budget=run.budget, source=run.source, notes=notes)


def evaluate_gates(config: GateConfig, *, results: Path | None = None, baseline: Path | None = None, providers: Sequence[Any] | None = None) -> Verdict:
    """:func:`collect`, the criteria's human-label files, then :func:`decide`: what ``judgesdk gate`` runs.

    ``config``: the gate config; ``results``, ``baseline``, ``providers``: as :func:`collect` takes them (a results
    file to read instead of judging, a baseline results file replacing the config's, providers replacing the
    judge's chain). Returns the :class:`Verdict`, whose ``exit_code`` is the command's."""
    labels = {spec.name: read_labels(spec.labels) for spec in config.criteria if spec.labels is not None}
    base = {spec.name: read_labels(spec.baseline_labels) for spec in config.criteria if spec.baseline_labels is not None}
    return decide(config, collect(config, results=results, baseline=baseline, providers=providers), labels, base)
