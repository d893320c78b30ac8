"""The gate run (the impure step): judge the items or read earlier results, load the baseline.

:func:`collect` judges ``config.input`` (results appended to a JSONL as they finish, so a re-run
resumes and a budget stop keeps what finished) or reads a previous run's results, reads the baseline
and the calibrations, and returns a :class:`GateRun`: everything :func:`judgesdk.gate.decide` needs,
so deciding stays pure. Result rows are read with :func:`judgesdk.records.read_results` (typed rows) and turned
back into :class:`~judgesdk.core.types.JudgeResult` by :func:`judgesdk.records.to_result`; the rows the gate judged
itself are the ledger's (:class:`judgesdk.records.Ledger`, the resume reader) and the ones it wrote, as dicts.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from judgesdk.core import ConfigError, Criterion, InputError, JudgeResult
from judgesdk.forecast import Forecast, forecast
from judgesdk.gate.gate_config import BASELINE_KINDS, GateConfig, off_scale
from judgesdk.judging import Task, ask_for, budgeted_judge, load_config, pending, run
from judgesdk.meta import Calibration
from judgesdk.provider import BudgetMeter, BudgetState, CostReport, summarize_usage
from judgesdk.records import Ask, Ledger, Results, asks_in, is_final, latest, read_items, read_results, to_result

# what the gate reads rows from: a results file read as typed rows, or the rows of the ledger it judged into
Rows = Results | Sequence[Mapping[str, Any]]


class CriterionRun(BaseModel):
    """Everything the gates of one criterion look at."""

    criterion: Criterion
    expected: list[str]  # ids that should have a result
    results: list[JudgeResult]  # one per id (the latest row wins), uncalibrated
    baseline: list[JudgeResult] | None = None
    calibration: Calibration | None = None


class GateRun(BaseModel):
    """What :func:`collect` gathered for the gates, per criterion (by name), with the budget's state, the usage
    and cost of the results, what was judged or read and notes for the report: the input of the pure
    :func:`judgesdk.gate.decide`."""

    criteria: dict[str, CriterionRun]
    budget: BudgetState | None = None  # None when nothing was judged under a budget
    usage: CostReport | None = None
    source: str = ""  # what was judged or read, for the report
    notes: list[str] = Field(default_factory=list)


def _results_for(records: Rows, criterion: Criterion, path: Path | str, ids: set[str] | None = None, ask: Ask | None = None) -> list[JudgeResult]:
    """This criterion's results, the latest row per id (a row retried after an error wins): the rows that
    answer ``ask`` when the gate judged them, else those on this criterion (or without a criterion).
    ``records``: the rows (:data:`Rows`); ``path``: where they are, for messages; ``ids``: keep only these items."""
    found: list[JudgeResult] = []
    picked = records.latest(ask, criterion.name) if isinstance(records, Results) else latest(records, ask, criterion.name)
    for item_id, record in picked.items():
        if ids is not None and item_id not in ids:
            continue
        written_id = record["id"] if isinstance(record, Mapping) else record.id
        try:
            found.append(to_result(record, criterion.scale, criterion.name, where=f"{path}: result {written_id!r}"))
        except InputError as exc:
            raise InputError(str(exc)) from None
    return found


def _mixed_runs(records: Rows, criterion: str, where: Path | str) -> list[str]:
    """A note when a file read as is holds this criterion's results from several questions (definitions,
    methods or judge configurations): the latest row per item is used, whichever it answered.
    ``records``: the rows (:data:`Rows`); ``where``: where they are, for the note."""
    asked = records.asks(criterion) if isinstance(records, Results) else asks_in(records, criterion)
    if len(asked) < 2:
        return []
    return [f"{where}: results for {criterion} answer {len(asked)} different questions (definition, method or judge config); the latest row per item is used"]


def collect(
    config: GateConfig,
    *,
    results: Path | None = None,
    baseline: Path | None = None,
    providers: Sequence[Any] | None = None,
) -> GateRun:
    """Judge ``config.input`` (or read ``results``, which then takes precedence) and load what the gates need.

    ``config``: the gate config; ``baseline``: a results file to compare against, replacing the config's
    ``baseline`` (a regression gate without either is a :class:`ConfigError`); ``providers`` replaces the judge
    config's provider chain (tests, custom backends). Judged rows are appended to the config's ``results`` file,
    skipping items already final there. Returns the :class:`GateRun`; a run stopped by Ctrl-C raises
    :class:`judgesdk.judging.runner.Interrupted` (a ``KeyboardInterrupt``), what finished kept in the results file.
    """
    criteria = {spec.name: spec.criterion() for spec in config.criteria}
    calibrations = _calibrations(config)  # before judging: a threshold off the calibrated scale is a config error
    baseline_path = baseline or config.baseline
    if baseline_path is None and any(g.kind in BASELINE_KINDS for g in config.gates):
        raise ConfigError(f"a {' or '.join(sorted({g.kind for g in config.gates if g.kind in BASELINE_KINDS}))} gate compares against a baseline run: set baseline = \"...jsonl\" or pass --baseline")
    budget_state: BudgetState | None = None
    expected: list[str] | None = None
    asks: dict[str, Ask] = {}
    notes: list[str] = []
    records: Rows
    if results is not None or config.input is None:
        where = results or config.results
        if where is None:
            raise ConfigError("nothing to gate: set input (items to judge) or results (a previous run) in the gate config, or pass --results")
        read = read_results(where)
        records, skipped = read, read.skipped
        source = f"results read from {where}"
    else:
        records, expected, budget_state, skipped, asks = _judge(config, criteria, providers)
        where = config.results or Path("(in memory)")
        source = f"{config.input} judged into {where}"
    if skipped:
        notes.append(f"{where}: {skipped} unreadable line(s) skipped (cut by an interrupted run?)")
    base_records: Results | None = None
    if baseline_path is not None:
        base = read_results(baseline_path)
        base_records, base_skipped = base, base.skipped
        if base_skipped:
            notes.append(f"baseline {baseline_path}: {base_skipped} unreadable line(s) skipped")
    runs: dict[str, CriterionRun] = {}
    for spec in config.criteria:
        crit = criteria[spec.name]
        ids = None if expected is None else set(expected)
        ask = asks.get(spec.name)
        if ask is None:
            notes += _mixed_runs(records, crit.name, where)
        found = _results_for(records, crit, where, ids, ask)
        runs[spec.name] = CriterionRun(
            criterion=crit,
            expected=[r.item_id or "" for r in found] if expected is None else expected,
            results=found,
            baseline=None if base_records is None else _results_for(base_records, crit, baseline_path or ""),
            calibration=calibrations.get(spec.name),
        )
    prices = config.budget.prices if config.budget else None
    usage = summarize_usage([r for run in runs.values() for r in run.results], prices)
    return GateRun(criteria=runs, budget=budget_state, usage=usage, source=source, notes=notes)


def _calibrations(config: GateConfig) -> dict[str, Calibration]:
    """Each calibrated criterion's calibration, its gates' score thresholds checked against the human scale the
    calibration maps onto (:func:`judgesdk.gate.gate_config.off_scale`; calibrated scores are clamped to it)."""
    found: dict[str, Calibration] = {}
    for spec in config.criteria:
        if spec.calibration is None:
            continue
        calibration = found[spec.name] = Calibration.load(spec.calibration)
        for gate in (g for g in config.gates if g.criterion == spec.name):
            problem = off_scale(gate, calibration.low, calibration.high, f"the human scale of calibration {spec.calibration}", labels=False)
            if problem:
                raise ConfigError(problem)
    return found


def _judge(
    config: GateConfig, criteria: Mapping[str, Criterion], providers: Sequence[Any] | None
) -> tuple[list[dict[str, Any]], list[str], BudgetState | None, int, dict[str, Ask]]:
    """Judge the input for every criterion, skipping items whose row for that question is final in the
    results file (see :mod:`judgesdk.records`); rows with status ``error`` are judged again."""
    assert config.input is not None
    items = read_items(config.input)
    judge_config = load_config(config.judge)
    asks = {name: ask_for(judge_config, crit) for name, crit in criteria.items()}
    meter = BudgetMeter(config.budget) if config.budget is not None else None
    judge = budgeted_judge(judge_config, meter, providers)  # providers are built on first use: nothing to close yet
    try:
        ledger = Ledger.open(config.results, create_parents=True) if config.results is not None else None
    except BaseException:
        judge.close()
        raise
    existing, skipped = (list(ledger.rows), ledger.skipped) if ledger is not None else ([], 0)
    try:
        tasks = []
        for name, crit in criteria.items():
            task, _ = pending(Task(crit, items, asks[name]), ledger)
            tasks.append(task)
            print(f"judgesdk gate: judging {len(task.items)} items on {crit.name} ({len(items) - len(task.items)} already in the results)", file=sys.stderr)
        outcome = run(judge, tasks, ledger)
    finally:
        try:
            if ledger is not None:
                ledger.close()
        finally:
            judge.close()
    if outcome.interrupted:
        raise outcome.interruption(config.results)
    expected = [item.id or "" for item, _ in items]
    return existing + outcome.rows, expected, None if meter is None else meter.state(), skipped, asks


def estimate(config: GateConfig, *, results: Path | None = None, providers: Sequence[Any] | None = None) -> Forecast:
    """What judging the gate's input would ask of each provider (``judgesdk gate --estimate``), without a model
    call (:mod:`judgesdk.forecast.job`): each criterion as its own job over the items whose row for it is not
    final in the results file, as :func:`collect` judges them; with the budget's cap beside it.

    ``config``: the gate config, which must set ``input``; ``results``: must be None (a gate that reads results
    judges nothing: an :class:`InputError`); ``providers`` replaces the judge config's provider chain. Returns the
    :class:`~judgesdk.forecast.Forecast`, with a note setting it against the budget when the config has one."""
    if results is not None or config.input is None:
        raise InputError(
            "--estimate plans the judging of the gate's input, and this gate judges nothing (it reads results): "
            "set input in the gate config and leave out --results"
        )
    criteria = [spec.criterion() for spec in config.criteria]
    items = read_items(config.input)
    judge_config = load_config(config.judge)
    earlier = read_results(config.results, unreadable="skip") if config.results is not None and config.results.exists() else None  # as the run reads it
    jobs = []
    for crit in criteria:
        done = {key for key, row in earlier.latest(ask_for(judge_config, crit)).items() if is_final(row.model_dump())} if earlier else set()
        jobs.append((crit, [item for item, _ in items if (item.id or "") not in done]))
    found = forecast(judge_config, jobs, adapters=providers, prices=config.budget.prices if config.budget else None)
    if config.budget is not None:
        found.notes.append(_against_budget(found, config))
    return found


def _against_budget(found: Forecast, config: GateConfig) -> str:
    """The estimate set against the budget's cap (billed tokens: prompt + output of the calls)."""
    assert config.budget is not None
    cap = config.budget
    tokens = sum(p.prompt_tokens + p.output_tokens for p in found.providers)
    parts = []
    if cap.max_tokens is not None:
        parts.append(f"{tokens:,} tokens {'within' if tokens <= cap.max_tokens else 'OVER'} the cap of {cap.max_tokens:,}")
    if cap.max_usd is not None:
        usd = found.usd
        verdict = "unknown against" if usd is None else "within" if usd <= cap.max_usd else "OVER"
        parts.append(f"{'an unknown cost' if usd is None else f'${usd:.4f}'} {verdict} the cap of ${cap.max_usd:.4f}")
    return "budget: " + "; ".join(parts) + " (output tokens at most; the run stops cleanly at the cap)"
