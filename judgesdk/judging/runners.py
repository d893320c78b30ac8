"""The runners above the judge: a run within a budget, and a run answered through batch APIs.

**Within a budget.** :func:`budgeted_judge` builds a judge as :meth:`Judge.from_config` does, with a
:class:`~judgesdk.provider.layers.budget.BudgetedProvider` under each provider's cache and retry, and
:func:`score_within_budget` runs (criterion, items) jobs on it: when the cap stops the run
(:class:`~judgesdk.core.errors.BudgetExceededError`), the calls already in flight finish (they are paid for,
their results are kept) and the stop is reported, not raised. Results reach ``on_result`` as they finish.

**Offline, through batch APIs.** :func:`run_offline` finds the requests a judging job needs without knowing
the methods: it runs the job on a judge whose adapter *defers* every cache miss
(the batch deferral layer, :class:`~judgesdk.provider.layers.batch.DeferringProvider`: records it and fails fast), submits what was deferred through
a :class:`~judgesdk.provider.layers.batch.BatchRunner`, and runs the job again; methods whose next request depends on an
answer (a low-coverage logprobs estimate falling back to sampling) take one more round. When a round defers
nothing, the job's real results (the same result objects and JSON lines as a live run) come from the cache.
Use a single-provider config: a deferred request must not fall through to the next provider of a chain.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel

from judgesdk.core import ConfigError, Criterion, JudgeItem, JudgeResult, ProviderError
from judgesdk.judging.judge import Judge, ProviderSource
from judgesdk.judging.judge_config import JudgeConfig, detect_chain, load_config
from judgesdk.judging.runner import Task, judge_tasks
from judgesdk.provider import (
    BatchBackend,
    BatchReport,
    BatchRunner,
    BudgetMeter,
    Deferral,
    Extras,
    GenerateRequest,
    Provider,
    build_adapter,
    model_name,
    open_cache,
)

__all__ = ["Job", "OfflineReport", "ascore_within_budget", "budgeted_judge", "run_offline", "score_within_budget"]

T = TypeVar("T")


# -- within a budget --------------------------------------------------------------------------------


def budgeted_judge(
    config: JudgeConfig, meter: BudgetMeter | None = None, providers: Sequence[ProviderSource] | None = None
) -> Judge:
    """A judge as :meth:`Judge.from_config` builds it, with ``meter`` under each provider's cache and retry.

    ``providers`` replaces the config's chain (e.g. a scripted provider in tests); they are stacked the
    same way (cache and retry from ``config``). With no meter, nothing is capped.
    """
    if providers is None and meter is not None:
        chain = config.providers or detect_chain(os.environ)
        meter.require_prices([(pc.kind, model_name(pc)) for pc in chain])
    return Judge.from_config(config, adapters=providers, extras=Extras(budget=meter))


Job = tuple[Criterion, Sequence[JudgeItem]]


async def ascore_within_budget(
    judge: Judge, jobs: Sequence[Job], on_result: Callable[[Criterion, int, JudgeResult], None]
) -> str | None:
    """Judge each (criterion, items) job in turn; on a budget stop, let calls in flight finish
    (:func:`judgesdk.judging.runner.judge_tasks`, which every command's run goes through).

    Returns None when every job ran, else the reason the budget stopped the run. Results reach
    ``on_result`` as they finish, including those of calls in flight when the cap was reached.
    """
    tasks = [Task(criterion, [(JudgeItem.model_validate(item) if not isinstance(item, JudgeItem) else item, {}) for item in items]) for criterion, items in jobs]
    return await judge_tasks(judge, tasks, lambda n, i, r: on_result(jobs[n][0], i, r))


def score_within_budget(
    judge: Judge, jobs: Sequence[Job], on_result: Callable[[Criterion, int, JudgeResult], None]
) -> str | None:
    """Sync :func:`ascore_within_budget` on a fresh event loop, which also closes the judge's providers.

    Use a judge built for this run (e.g. by :func:`budgeted_judge`): its providers are created on, and
    closed with, this loop.
    """

    async def run() -> str | None:
        try:
            return await ascore_within_budget(judge, jobs, on_result)
        finally:
            await judge.aclose()

    return asyncio.run(run())


# -- offline, through batch APIs --------------------------------------------------------------------


class OfflineReport(BaseModel):
    rounds: int
    batches: list[BatchReport]


def run_offline(
    config: Any,
    job: Callable[[Any], T],
    backend_for: Callable[[Provider], BatchBackend],
    state_path: str | Path,
    *,
    max_rounds: int = 4,
    poll_interval_s: float = 30.0,
    max_wait_s: float | None = None,
) -> tuple[T, OfflineReport]:
    """Run ``job(judge)`` with every model call answered through a batch API (see the module docstring).

    ``config`` is anything :meth:`Judge.from_config` takes, with exactly one provider and the cache on;
    ``backend_for(adapter)`` builds the batch backend for the configured adapter. ``state_path`` is the JSON
    file where submitted batch ids are kept, so the same call run again collects them instead of paying twice;
    each round polls every ``poll_interval_s`` seconds for at most ``max_wait_s`` (None: until done), and at most
    ``max_rounds`` rounds are run. Returns the job's value from the final round (every answer from the cache)
    and what each round submitted. Raises :class:`~judgesdk.core.errors.ProviderError` when batches are still
    running after ``max_wait_s`` or the job still needs new requests after ``max_rounds``.
    """
    settings = load_config(config)
    if len(settings.providers) != 1 or not settings.cache.enabled:
        raise ConfigError("run_offline needs a config with exactly one provider and the cache enabled")
    failed: dict[str, str] = {}
    reports: list[BatchReport] = []
    for round_number in range(1, max_rounds + 1):
        value, failure, deferred = _deferring_round(settings, job, failed)
        if not deferred:
            if failure is not None:
                raise failure
            return value, OfflineReport(rounds=round_number, batches=reports)  # type: ignore[return-value]
        report = asyncio.run(_submit_round(settings, backend_for, list(deferred.values()), state_path, poll_interval_s, max_wait_s))
        reports.append(report)
        failed.update(report.failed)
        if report.pending:
            raise ProviderError(
                f"{report.pending} requests still running in batches {report.batches} after {max_wait_s} s; "
                f"run again later with the same state file ({state_path}) to collect them"
            )
    raise ProviderError(f"the job still needed new requests after {max_rounds} batch rounds; raise max_rounds")


def _deferring_round(settings: Any, job: Callable[[Any], T], failed: dict[str, str]) -> tuple[T | None, Exception | None, dict[str, GenerateRequest]]:
    """Run the job once with every cache miss deferred: its value (or failure) and the deferred requests."""
    deferral = Deferral(failed=failed, namespace=settings.cache.namespace)
    value: T | None = None
    failure: Exception | None = None
    with Judge.from_config(settings, extras=Extras(defer=deferral)) as judge:
        try:
            value = job(judge)
        except Exception as exc:  # noqa: BLE001 - a job may give up on deferred answers; it runs again next round
            failure = exc
    return value, failure, deferral.deferred


async def _submit_round(
    settings: Any, backend_for: Callable[[Provider], BatchBackend], requests: list[GenerateRequest],
    state_path: str | Path, poll_interval_s: float, max_wait_s: float | None,
) -> BatchReport:  # fmt: skip
    """One round's batches, on a fresh adapter: the judge's own SDK client belonged to the judge's loop."""
    adapter = build_adapter(settings.providers[0])
    try:
        runner = BatchRunner(
            backend_for(adapter), open_cache(settings.cache.directory), state_path, namespace=settings.cache.namespace,
            ttl_s=settings.cache.ttl_s, poll_interval_s=poll_interval_s, max_wait_s=max_wait_s,
        )  # fmt: skip
        return await runner.run(requests)
    finally:
        await adapter.aclose()
