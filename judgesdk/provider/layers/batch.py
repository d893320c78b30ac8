"""Bulk mode: judge offline through the providers' batch APIs (OpenAI Batch, Anthropic Message Batches) at
about half the price, with the answers landing in the same disk cache a normal run reads.

Two parts, both beside the providers they batch (their backends, ``judgesdk.providers.openai_batch`` and
``anthropic_batch``, implement :class:`BatchBackend`):

* :class:`BatchRunner` sends many :class:`~judgesdk.provider.protocol.GenerateRequest` through one
  :class:`BatchBackend` (``judgesdk.providers.openai_batch`` / ``anthropic_batch``): requests already in
  the cache are skipped; the rest are submitted (``custom_id`` = the request's cache key, so nothing
  needs a lookup table), batch ids are persisted in a small JSON state file after every submission, the
  batches are polled until they end, and every result is written under the key
  :func:`judgesdk.provider.layers.cache.cache_key` gives it, as the :class:`~judgesdk.provider.protocol.GenerateResponse` the live
  adapter would have returned. Kill the process at any point and run it again with the same requests:
  it submits nothing twice and collects what has finished. A cache that fails while answers are written
  (disk full, folder made read-only) is a :class:`~judgesdk.core.errors.ConfigError` naming the fix; the batch
  stays "not collected" in the state file, so the same command run again fetches its answers from the
  provider once more and writes them (nothing is resubmitted or paid for twice).
* :class:`DeferringProvider` records every request that misses the cache above it and fails it fast, so
  that a judging job run on it lists the requests the job needs.

:func:`judgesdk.judging.runners.run_offline` puts them together above the judge: it runs a job with every cache
miss deferred, submits what was deferred, and runs the job again until its answers all come from the
cache. (``judgesdk.provider.layers.batch.run_offline`` still finds it, with a :class:`DeprecationWarning`.)
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, Protocol

import diskcache
from pydantic import BaseModel, Field

from judgesdk.core import ConfigError, InputError, PermanentError
from judgesdk.provider.layers.answers import answer_problem
from judgesdk.provider.layers.cache import CACHE_IO_ERRORS, cache_failure, cache_key
from judgesdk.provider.protocol import GenerateRequest, GenerateResponse, Provider, WrapperProvider

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
    """What one :meth:`BatchRunner.run` did: how many distinct requests it was given, how many were already in the
    cache, how many it submitted, how many answers it wrote to the cache, which requests failed and why, how many are
    still running, the ids of the batches not yet collected, and results that matched none of its requests."""

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
        try:
            cached = {cid for cid in by_id if cid in self.cache}
        except CACHE_IO_ERRORS as exc:  # before anything is submitted: nothing paid for yet
            raise ConfigError(
                f"{cache_failure('reading', self.cache, exc)}: batch mode needs a working cache (its answers are "
                "written there): free space or fix the folder's permissions, or point cache.directory "
                "(JUDGESDK_CACHE_DIR) at a writable folder"
            ) from None
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
        """Write one ended batch's answers into the cache, as CachedProvider would have.

        A write that fails raises :class:`ConfigError` before the job is marked collected: the state file
        keeps it pending, so a later run fetches the same (already paid) answers again and retries the
        writes, where CachedProvider would go on without the cache (here the cache is the only place the
        answers go)."""
        known = {cid: by_id[cid] for cid in job.custom_ids if cid in by_id}
        completed = unmatched = 0  # counted into the report once the whole batch is stored
        failed: dict[str, str] = {}
        async for result in self.backend.results(job.batch_id, known):
            if result.custom_id not in known:
                unmatched += 1
            elif result.response is not None and (problem := answer_problem(known[result.custom_id], result.response)) is not None:
                failed[result.custom_id] = f"malformed answer: {problem}"  # never cached: a later run asks again
            elif result.response is not None:
                try:
                    self.cache.set(result.custom_id, result.response.model_dump_json(), expire=self.ttl_s, tag=self.namespace)
                except CACHE_IO_ERRORS as exc:
                    raise ConfigError(
                        f"batch {job.batch_id}: {cache_failure('writing to', self.cache, exc)}; its answers are not lost: "
                        f"{self.state_path} still lists the batch as not collected, so running the same command again "
                        "fetches them from the provider and writes them (nothing is resubmitted or paid for twice): "
                        "free space or fix the folder's permissions first"
                    ) from None
                completed += 1
            else:
                failed[result.custom_id] = result.error or "no answer"
        report.completed += completed
        report.failed.update(failed)
        report.unmatched += unmatched

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


@dataclass
class Deferral:
    """One offline round's deferral: requests the batch API failed before (never deferred again: they fail as
    the batch API said), the cache namespace whose keys name requests, and what this round deferred."""

    failed: dict[str, str] = field(default_factory=dict)  # cache key -> why the batch API could not answer it
    namespace: str = "default"
    deferred: dict[str, GenerateRequest] = field(default_factory=dict)  # cache key -> request, filled by the round


class DeferringProvider(WrapperProvider):
    """Records every request that reaches it (i.e. missed the cache above it) and fails it fast."""

    def __init__(self, inner: Provider, deferral: Deferral) -> None:
        super().__init__(inner)
        self.deferral = deferral

    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        key = cache_key(self.inner, request, self.deferral.namespace)
        if key in self.deferral.failed:
            raise PermanentError(f"{self.kind}: the batch API could not answer this request: {self.deferral.failed[key]}", provider=self.kind)
        self.deferral.deferred[key] = request
        raise Deferred(f"{self.kind}: deferred to the batch API", provider=self.kind)
