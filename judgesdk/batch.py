"""Bulk mode: judge offline through the providers' batch APIs (OpenAI Batch, Anthropic Message Batches) at
about half the price, with the answers landing in the same disk cache a normal run reads.

Two layers:

* :class:`BatchRunner` sends many :class:`~judgesdk.provider.GenerateRequest` through one
  :class:`BatchBackend` (``judgesdk.providers.openai_batch`` / ``anthropic_batch``): requests already in
  the cache are skipped; the rest are submitted (``custom_id`` = the request's cache key, so nothing
  needs a lookup table), batch ids are persisted in a small JSON state file after every submission, the
  batches are polled until they end, and every result is written under the key
  :func:`judgesdk.cache.cache_key` gives it, as the :class:`~judgesdk.provider.GenerateResponse` the live
  adapter would have returned. Kill the process at any point and run it again with the same requests:
  it submits nothing twice and collects what has finished.
* :func:`run_offline` finds the requests a judging job needs without knowing the methods: it runs the
  job on a judge whose adapter *defers* every cache miss (records it and fails fast), submits what was
  deferred, and runs the job again; methods whose next request depends on an answer (a low-coverage
  logprobs estimate falling back to sampling) take one more round. When a round defers nothing, the job's
  real results (the same result objects and JSON lines as a live run) come from the cache.

Use a single-provider config: a deferred request must not fall through to the next provider of a chain.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path
from typing import Any, Literal, Protocol, TypeVar

import diskcache
from pydantic import BaseModel, Field

from judgesdk.cache import cache_key, open_cache
from judgesdk.errors import ConfigError, InputError, PermanentError, ProviderError
from judgesdk.provider import GenerateRequest, GenerateResponse, Provider, WrapperProvider

T = TypeVar("T")
BatchStatus = Literal["pending", "ended"]


class BatchResult(BaseModel):
    """One request's outcome in a finished batch: a response, or why there is none."""

    custom_id: str
    response: GenerateResponse | None = None
    error: str | None = None


class BatchBackend(Protocol):
    """One provider's batch API. ``provider`` is the live adapter whose requests and cache keys it serves."""

    provider: Provider
    max_requests: int  # per batch

    async def submit(self, items: Sequence[tuple[str, GenerateRequest]]) -> str:
        """Create one batch of (custom_id, request); returns its id."""
        ...

    async def status(self, batch_id: str) -> BatchStatus: ...

    def results(self, batch_id: str, requests: dict[str, GenerateRequest]) -> AsyncIterator[BatchResult]:
        """Every result of an ended batch, as responses to ``requests`` (keyed by custom_id)."""
        ...

    async def cancel(self, batch_id: str) -> None: ...


class BatchJob(BaseModel):
    batch_id: str
    custom_ids: list[str]
    submitted_at: float
    collected: bool = False


class BatchState(BaseModel):
    """What must survive a restart: which batches exist and which requests each holds."""

    version: int = 1
    provider: str
    model: str
    namespace: str
    jobs: list[BatchJob] = Field(default_factory=list)

    def pending_ids(self) -> set[str]:
        return {cid for job in self.jobs if not job.collected for cid in job.custom_ids}


class BatchReport(BaseModel):
    requests: int
    already_cached: int
    submitted: int
    completed: int = 0
    failed: dict[str, str] = Field(default_factory=dict)  # custom_id -> error
    pending: int = 0  # still running when the runner stopped waiting
    batches: list[str] = Field(default_factory=list)
    unmatched: int = 0  # results for requests this run was not given (a state file from other work)


class BatchRunner:
    """Submit, poll, resume and collect (see the module docstring)."""

    def __init__(
        self,
        backend: BatchBackend,
        cache: diskcache.Cache,
        state_path: str | Path,
        *,
        namespace: str = "default",
        ttl_s: float | None = None,
        poll_interval_s: float = 30.0,
        max_wait_s: float | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if poll_interval_s <= 0:
            raise ConfigError(f"poll_interval_s must be positive, got {poll_interval_s}")
        self.backend = backend
        self.cache = cache
        self.state_path = Path(state_path)
        self.namespace = namespace
        self.ttl_s = ttl_s
        self.poll_interval_s = poll_interval_s
        self.max_wait_s = max_wait_s
        self._clock = clock

    def key(self, request: GenerateRequest) -> str:
        return cache_key(self.backend.provider, request, self.namespace)

    async def run(self, requests: Sequence[GenerateRequest], *, wait: bool = True) -> BatchReport:
        """Make sure every request has an answer in the cache (or a reported failure); ``wait=False``
        submits and returns, leaving the batches to a later run."""
        by_id = {self.key(r): r for r in requests}
        state = self._load_state()
        cached = {cid for cid in by_id if cid in self.cache}
        todo = [cid for cid in by_id if cid not in cached and cid not in state.pending_ids()]
        report = BatchReport(requests=len(by_id), already_cached=len(cached), submitted=len(todo))
        for start in range(0, len(todo), self.backend.max_requests):
            chunk = todo[start : start + self.backend.max_requests]
            batch_id = await self.backend.submit([(cid, by_id[cid]) for cid in chunk])
            state.jobs.append(BatchJob(batch_id=batch_id, custom_ids=chunk, submitted_at=time.time()))
            self._save_state(state)  # persisted before anything else can fail: a restart never resubmits
        report.batches = [job.batch_id for job in state.jobs if not job.collected]
        await self._collect(state, by_id, report, wait=wait)
        return report

    async def cancel_all(self) -> list[str]:
        """Cancel every batch of the state file not yet collected; returns their ids."""
        state = self._load_state()
        pending = [job.batch_id for job in state.jobs if not job.collected]
        for batch_id in pending:
            await self.backend.cancel(batch_id)
        return pending

    async def _collect(self, state: BatchState, by_id: dict[str, GenerateRequest], report: BatchReport, *, wait: bool) -> None:
        started = self._clock()
        while True:
            for job in [j for j in state.jobs if not j.collected]:
                if await self.backend.status(job.batch_id) == "ended":
                    await self._store(job, by_id, report)
                    job.collected = True
                    self._save_state(state)
            open_jobs = [j for j in state.jobs if not j.collected]
            report.pending = sum(len(j.custom_ids) for j in open_jobs)
            timed_out = self.max_wait_s is not None and self._clock() - started >= self.max_wait_s
            if not open_jobs or not wait or timed_out:
                return
            await asyncio.sleep(self.poll_interval_s)

    async def _store(self, job: BatchJob, by_id: dict[str, GenerateRequest], report: BatchReport) -> None:
        """Write one ended batch's answers into the cache, as CachedProvider would have."""
        known = {cid: by_id[cid] for cid in job.custom_ids if cid in by_id}
        async for result in self.backend.results(job.batch_id, known):
            if result.custom_id not in known:
                report.unmatched += 1
            elif result.response is not None:
                self.cache.set(result.custom_id, result.response.model_dump_json(), expire=self.ttl_s, tag=self.namespace)
                report.completed += 1
            else:
                report.failed[result.custom_id] = result.error or "no answer"

    def _load_state(self) -> BatchState:
        provider = self.backend.provider
        if not self.state_path.exists():
            return BatchState(provider=provider.kind, model=provider.model, namespace=self.namespace)
        try:
            state = BatchState.model_validate_json(self.state_path.read_text(encoding="utf-8"))
        except ValueError as exc:
            raise InputError(f"batch state file {self.state_path} is not valid ({exc}); move it away to start afresh") from exc
        if (state.provider, state.model, state.namespace) != (provider.kind, provider.model, self.namespace):
            raise InputError(
                f"batch state file {self.state_path} belongs to {state.provider}/{state.model} (namespace "
                f"{state.namespace!r}), not {provider.kind}/{provider.model} ({self.namespace!r}): use another state_path"
            )
        return state

    def _save_state(self, state: BatchState) -> None:
        self.state_path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.state_path.with_name(self.state_path.name + ".tmp")
        tmp.write_text(state.model_dump_json(indent=1), encoding="utf-8")
        os.replace(tmp, self.state_path)  # atomic: a crash leaves the old state or the new one


# -- finding the requests a job needs ---------------------------------------------------------------


class Deferred(PermanentError):
    """A cache miss recorded for the batch API instead of being sent (never retried, never a score)."""


class DeferringProvider(WrapperProvider):
    """Records every request that reaches it (i.e. missed the cache above it) and fails it fast."""

    def __init__(self, inner: Provider, failed: dict[str, str] | None = None, namespace: str = "default") -> None:
        super().__init__(inner)
        self.deferred: dict[str, GenerateRequest] = {}
        self._failed = failed or {}
        self._namespace = namespace

    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        key = cache_key(self.inner, request, self._namespace)
        if key in self._failed:
            raise PermanentError(f"{self.kind}: the batch API could not answer this request: {self._failed[key]}", provider=self.kind)
        self.deferred[key] = request
        raise Deferred(f"{self.kind}: deferred to the batch API", provider=self.kind)


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
    ``backend_for(adapter)`` builds the batch backend for the configured adapter. Returns the job's value
    from the final round (every answer from the cache) and what each round submitted.
    """
    from judgesdk.config import load_config

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
    from judgesdk.judge import Judge

    deferring: list[DeferringProvider] = []

    def wrap(adapter: Provider) -> Provider:
        deferring.append(DeferringProvider(adapter, failed, settings.cache.namespace))
        return deferring[-1]

    value: T | None = None
    failure: Exception | None = None
    with Judge.from_config(settings, wrap=wrap) as judge:
        try:
            value = job(judge)
        except Exception as exc:  # noqa: BLE001 - a job may give up on deferred answers; it runs again next round
            failure = exc
    return value, failure, {k: r for d in deferring for k, r in d.deferred.items()}


async def _submit_round(
    settings: Any, backend_for: Callable[[Provider], BatchBackend], requests: list[GenerateRequest],
    state_path: str | Path, poll_interval_s: float, max_wait_s: float | None,
) -> BatchReport:  # fmt: skip
    """One round's batches, on a fresh adapter: the judge's own SDK client belonged to the judge's loop."""
    from judgesdk.config import build_adapter

    adapter = build_adapter(settings.providers[0])
    try:
        runner = BatchRunner(
            backend_for(adapter), open_cache(settings.cache.directory), state_path, namespace=settings.cache.namespace,
            ttl_s=settings.cache.ttl_s, poll_interval_s=poll_interval_s, max_wait_s=max_wait_s,
        )  # fmt: skip
        return await runner.run(requests)
    finally:
        await adapter.aclose()
