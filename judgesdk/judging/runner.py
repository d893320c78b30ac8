"""Judge items into a results file: the one runner behind ``score``, ``gate``, ``bench``, ``card`` and the Ray engine.

A run is a list of :class:`Task` (a criterion, or several judged fine-grained, over items, asking one question).
:func:`pending` drops the items whose row for that question is already final in the results file (a re-run judges
only what is left: errored rows are judged again, see :mod:`judgesdk.records`); :func:`run` judges the rest,
writing each result's row to the sink (a :class:`~judgesdk.records.Ledger`, stdout, a list) the moment it exists,
so nothing computed is lost when the run stops. The same stops end every command the same way:

* **a budget cap** (a :class:`~judgesdk.provider.layers.budget.BudgetMeter` in the stack): the calls already in
  flight finish (they are paid for), their rows are written, and the stop is the outcome's ``stopped`` reason;
* **Ctrl-C**: the judge cancels its calls and waits for them, every finished result is written, and the outcome
  is ``interrupted``; :meth:`Outcome.interruption` is the one line each command prints before it exits 130.

The judge is the caller's: :func:`run` neither builds nor closes it (a command reads the local model's counters
before closing it).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from judgesdk.core import BudgetExceededError, Criterion, JudgeItem, JudgeResult
from judgesdk.records import Ask, Ledger, is_final, row_for

__all__ = ["Interrupted", "Outcome", "RowSink", "Task", "judge_tasks", "pending", "print_rows", "run"]

CriterionArg = Criterion | Sequence[Criterion]


class RowSink(Protocol):
    """Where rows go as they exist: a :class:`~judgesdk.records.Ledger`, :func:`print_rows`, a list's ``append``."""

    def write(self, row: dict[str, Any]) -> None: ...


@dataclass
class Task:
    """One criterion (or several, judged fine-grained) over items, asking one question.

    ``items`` pairs each item with its input line's other fields, which its row carries through. ``ask`` is the
    question its rows answer (:func:`judgesdk.judging.judge_config.ask_for`); None writes rows without one (a
    benchmark's predictions). ``method`` overrides the judge's method for this task."""

    criterion: CriterionArg
    items: list[tuple[JudgeItem, dict[str, Any]]]
    ask: Ask | None = None
    method: str | None = None


@dataclass
class Outcome:
    """What a run did: its results (per task, in input order; in finishing order once stopped), the rows written,
    and how it ended."""

    results: list[JudgeResult] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)
    interrupted: bool = False  # Ctrl-C
    stopped: str | None = None  # the budget's reason, when its cap stopped the run

    def interruption(self, where: Path | str | None) -> Interrupted:
        """The one way a command reports Ctrl-C: how many results were kept and how to resume."""
        kept = f"written to {where}; run the same command again to resume" if where else "printed; use -o FILE to keep results and resume"
        return Interrupted(f"interrupted: {len(self.results)} finished result(s) {kept}")


class Interrupted(KeyboardInterrupt):
    """Ctrl-C stopped a run after its finished results were written; the message says what was kept (the CLI prints
    it and exits 130)."""


def pending(task: Task, ledger: Ledger | None) -> tuple[Task, list[dict[str, Any]]]:
    """``task`` without the items whose latest row for its question is final in ``ledger``, and those rows."""
    if ledger is None:
        return task, []
    earlier = ledger.latest(task.ask)
    done = [earlier[item.id or ""] for item, _ in task.items if is_final(earlier.get(item.id or ""))]
    todo = [(item, extra) for item, extra in task.items if not is_final(earlier.get(item.id or ""))]
    return Task(task.criterion, todo, task.ask, task.method), done


async def judge_tasks(judge: Any, tasks: Sequence[Task], on_result: Callable[[int, int, JudgeResult], None]) -> str | None:
    """Judge each task in turn (``on_result(task number, item index, result)`` as each result exists); on a budget
    stop, let the calls in flight finish and return the budget's reason (None when every task ran)."""
    for number, task in enumerate(tasks):
        criteria = [task.criterion] if isinstance(task.criterion, Criterion) else list(task.criterion)
        spec: Any = criteria[0] if len(criteria) == 1 else criteria
        before = asyncio.all_tasks()
        extra = {} if task.method is None else {"method": task.method}
        try:
            await judge.ascore_many(
                [item for item, _ in task.items], criterion=spec, on_result=lambda i, r, n=number: on_result(n, i, r), **extra
            )
        except BudgetExceededError as exc:
            # the first stop raised out of ascore_many; its other items are still running: wait for them
            await asyncio.gather(*(asyncio.all_tasks() - before - {asyncio.current_task()}), return_exceptions=True)
            return str(exc)
    return None


def run(judge: Any, tasks: Sequence[Task], sink: RowSink | None, *, progress: Callable[[], None] | None = None) -> Outcome:
    """Judge each task in turn on ``judge`` (a :class:`~judgesdk.judging.judge.Judge` or a
    :class:`~judgesdk.jury.Jury`) on its own event loop, each result's row written to ``sink`` as it exists (module
    docstring). ``tasks`` are the :class:`Task` jobs (criteria over items, one question each); ``progress``,
    when given, is called once per finished result. Returns the :class:`Outcome`: the results and rows, and
    whether Ctrl-C or the budget stopped it (neither is raised)."""
    outcome = Outcome()
    finished: list[dict[int, JudgeResult]] = [{} for _ in tasks]

    def on_result(number: int, index: int, result: JudgeResult) -> None:
        task = tasks[number]
        item, extra = task.items[index]
        row = row_for(result, item.id or "", task.ask, extra)
        if sink is not None:
            sink.write(row)
        finished[number][index] = result
        outcome.rows.append(row)
        if progress is not None:
            progress()

    try:
        outcome.stopped = judge.run(judge_tasks(judge, tasks, on_result))
    except KeyboardInterrupt:  # the judge has stopped its calls: every finished result is written
        outcome.interrupted = True
    stopped_early = outcome.interrupted or outcome.stopped is not None
    for number, done in enumerate(finished):
        ordered = list(done.values()) if stopped_early else [done[i] for i in range(len(tasks[number].items)) if i in done]
        outcome.results.extend(ordered)
    return outcome


class _Printed:
    """A sink that prints each row as one JSON line on stdout (``judgesdk score`` without ``-o``)."""

    def write(self, row: dict[str, Any]) -> None:
        print(json.dumps(row, ensure_ascii=False), flush=True)


def print_rows() -> RowSink:
    """The sink that prints rows to stdout, one JSON line each, flushed as they come."""
    return _Printed()
