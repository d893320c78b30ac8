"""Bounded concurrency, token-bucket RPM/TPM limits and adaptive back-off, as a provider wrapper.

Hosted APIs limit requests in flight, requests per minute (RPM) and tokens per minute (TPM), and answer
429 when a client goes past them. :class:`RateLimitedProvider` keeps a provider under all three:

* **in flight**: at most ``max_concurrency`` requests at once (scaled by the back-off factor below);
* **RPM / TPM**: token buckets that refill continuously at limit/60 per second and hold ``burst_s``
  seconds' worth (at least one request). A request's tokens are estimated before the call from its
  text (``chars_per_token``) plus ``max_tokens × n`` (hosted APIs count the requested completion
  tokens against TPM up front), and corrected by the usage the response reports: an overestimate is
  refunded, an underestimate charged. A request larger than the bucket waits for a full bucket and
  leaves it in debt, so the average rate stays right;
* **adaptive back-off (AIMD)**: a factor in [``min_factor``, 1] scales the concurrency and both rates.
  A 429 (:class:`~judgesdk.core.errors.RateLimitError`) multiplies it by ``decrease`` (default 0.5), once
  per wave: 429s of requests that started before the last decrease do not shrink it again, so eight
  requests rejected together halve the rate once, not eight times. Every success adds ``increase``
  (default 0.05: twenty successes from half speed back to full). A Retry-After on the 429 also pauses
  every new request of this provider until it has passed, for at most what the retry policy above allows a
  wait (:func:`judgesdk.provider.layers.retry.wait_allowance`: its ``max_wait_s``, and never past its
  ``max_total_s``), so a server's ``Retry-After: 100000`` cannot hold a run past its configured limits.

**Client pool.** One SDK client holds one httpx connection pool, and httpcore's pool scans every
connection for every queued request on each event (a profile of 64 requests in flight spends most of
its time in ``_assign_requests_to_connections``), so one client slows down as concurrency grows. :class:`ProviderPool` spreads requests over several
adapter instances (least busy first); ``clients`` (default: one per 16 requests in flight) sets how many
:func:`judgesdk.provider.stack.bottom` creates. Figures: benchmarks/README.md, "Hosted latency".

Where it sits (see ``judgesdk.provider.stack.assemble``): cache over retry over the overload guard
(:mod:`judgesdk.provider.layers.breaker`: timeouts and 503s shrink concurrency there, 429s here) over rate limit over the
adapter. Every attempt, retries included, then counts against the limits as the API counts it; the limiter
sees each 429 when it happens; and a request sleeping between retries holds no in-flight slot.

``clock`` and ``sleep`` are injectable so tests run on virtual time.
"""

from __future__ import annotations

import asyncio
import math
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from judgesdk.core import InputError, RateLimitError
from judgesdk.provider.layers.retry import wait_allowance
from judgesdk.provider.protocol import GenerateRequest, GenerateResponse, Provider, WrapperProvider, request_text

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]


class RateLimitConfig(BaseModel):
    """Limits of one provider. ``None`` for a limit means the API imposes none worth modelling."""

    model_config = ConfigDict(extra="forbid")

    max_concurrency: int = Field(default=8, ge=1)
    requests_per_minute: float | None = Field(default=None, gt=0)
    tokens_per_minute: float | None = Field(default=None, gt=0)
    burst_s: float = Field(default=6.0, gt=0)  # bucket size in seconds of the limit (OpenAI enforces sub-minute)
    chars_per_token: float = Field(default=4.0, gt=0)  # TPM estimate before the call
    decrease: float = Field(default=0.5, gt=0, lt=1)  # multiplicative decrease on a 429
    increase: float = Field(default=0.05, gt=0, le=1)  # additive recovery per success
    min_factor: float = Field(default=0.05, gt=0, le=1)
    clients: int | None = Field(default=None, ge=1)  # adapter instances; None: one per 16 requests in flight

    def client_count(self) -> int:
        return self.clients or max(1, math.ceil(self.max_concurrency / 16))


class RateLimitStats(BaseModel):
    """What the limiter did, for run reports and tests."""

    requests: int = 0
    rate_limited: int = 0  # 429s seen
    decreases: int = 0  # times the factor shrank (once per wave of 429s)
    waited_s: float = 0.0  # total time requests spent waiting for a slot, a bucket or a Retry-After
    max_in_flight: int = 0
    factor: float = 1.0
    estimated_tokens: int = 0
    actual_tokens: int = 0


class TokenBucket:
    """A continuously refilled bucket; ``take`` waits until ``cost`` fits (or the bucket is full)."""

    def __init__(self, per_minute: float, burst_s: float, clock: Clock, sleep: Sleep) -> None:
        self.rate = per_minute / 60.0
        self.capacity = max(self.rate * burst_s, 1.0)
        self.level = self.capacity
        self._clock = clock
        self._sleep = sleep
        self._updated = clock()
        self._lock = asyncio.Lock()  # one waiter computes its wait at a time: first come, first served

    def _refill(self, factor: float) -> None:
        now = self._clock()
        self.level = min(self.capacity, self.level + (now - self._updated) * self.rate * factor)
        self._updated = now

    async def take(self, cost: float, factor: Callable[[], float]) -> float:
        """Remove ``cost`` (possibly into debt when it exceeds the capacity); returns seconds waited."""
        waited = 0.0
        async with self._lock:
            needed = min(cost, self.capacity)
            while True:
                self._refill(factor())
                if self.level >= needed:
                    self.level -= cost
                    return waited
                pause = (needed - self.level) / (self.rate * factor())
                await self._sleep(pause)
                waited += pause

    def adjust(self, delta: float) -> None:
        """Refund (positive) or charge (negative) after the real cost is known."""
        self.level = min(self.capacity, self.level + delta)


class RateLimitedProvider(WrapperProvider):
    """Keeps the inner provider within a :class:`RateLimitConfig` (see the module docstring)."""

    def __init__(
        self,
        inner: Provider,
        config: RateLimitConfig | None = None,
        *,
        clock: Clock = time.monotonic,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        super().__init__(inner)
        self.config = config or RateLimitConfig()
        self.stats = RateLimitStats()
        self._clock = clock
        self._sleep = sleep
        self._factor = 1.0
        self._wave = 0  # incremented on every decrease; a 429 from an older wave does not shrink again
        self._pause_until = 0.0
        self._in_flight = 0
        self._slots = asyncio.Condition()
        rpm, tpm = self.config.requests_per_minute, self.config.tokens_per_minute
        self._rpm = TokenBucket(rpm, self.config.burst_s, clock, sleep) if rpm else None
        self._tpm = TokenBucket(tpm, self.config.burst_s, clock, sleep) if tpm else None

    @property
    def factor(self) -> float:
        """The current back-off factor applied to concurrency and rates (1 = configured limits)."""
        return self._factor

    @property
    def in_flight(self) -> int:
        """Requests holding a slot now."""
        return self._in_flight

    @property
    def concurrency_limit(self) -> int:
        return max(1, math.floor(self.config.max_concurrency * self._factor))

    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        estimate = self.estimate_tokens(request)
        await self._acquire_slot()
        try:
            await self._wait_for_budget(estimate, calls=1 if self.capabilities.multiple_samples else request.n)
            self.stats.requests += 1
            wave = self._wave  # the wave this request is sent in
            try:
                response = await self.inner.generate(request)
            except RateLimitError as exc:
                self._on_rate_limited(exc, wave)
                raise
            self._on_success(response, estimate)
            return response
        finally:
            await self._release_slot()

    def estimate_tokens(self, request: GenerateRequest) -> int:
        """Tokens the API will count before answering: the prompt's (from its length) plus the completion budget."""
        prompt = math.ceil(len(request_text(request)) / self.config.chars_per_token)
        return prompt + max(request.max_tokens, 1) * request.n

    # -- the three limits ------------------------------------------------------------------------

    async def _acquire_slot(self) -> None:
        started = self._clock()
        async with self._slots:
            await self._slots.wait_for(lambda: self._in_flight < self.concurrency_limit)
            self._in_flight += 1
            self.stats.max_in_flight = max(self.stats.max_in_flight, self._in_flight)
        self.stats.waited_s += self._clock() - started

    async def _release_slot(self) -> None:
        """Free a slot and wake as many waiters as may now enter (more than one when the factor has grown)."""
        async with self._slots:
            self._in_flight -= 1
            self._slots.notify(max(self.concurrency_limit - self._in_flight, 0))

    async def _wait_for_budget(self, estimate: int, calls: int) -> None:
        pause = min(self._pause_until - self._clock(), wait_allowance())
        if pause > 0:
            await self._sleep(pause)
            self.stats.waited_s += pause
        if self._rpm is not None:
            self.stats.waited_s += await self._rpm.take(calls, lambda: self._factor)  # n > 1 is n calls where unsupported
        if self._tpm is not None:
            self.stats.waited_s += await self._tpm.take(estimate, lambda: self._factor)

    # -- adaptation ------------------------------------------------------------------------------

    def _on_rate_limited(self, exc: RateLimitError, wave: int) -> None:
        self.stats.rate_limited += 1
        if exc.retry_after:
            self._pause_until = max(self._pause_until, self._clock() + min(exc.retry_after, wait_allowance()))
        if wave == self._wave:
            self._factor = max(self.config.min_factor, self._factor * self.config.decrease)
            self._wave += 1
            self.stats.decreases += 1
        self.stats.factor = self._factor

    def _on_success(self, response: GenerateResponse, estimate: int) -> None:
        self._factor = min(1.0, self._factor + self.config.increase)
        self.stats.factor = self._factor
        actual = response.usage.input_tokens + response.usage.output_tokens
        self.stats.estimated_tokens += estimate
        if actual and not response.cached:
            self.stats.actual_tokens += actual
            if self._tpm is not None:
                self._tpm.adjust(estimate - actual)


class ProviderPool(WrapperProvider):
    """Several instances of one adapter (same kind, model and endpoint, so the same cache keys), each with
    its own connection pool; a request goes to the member with the fewest requests in flight."""

    def __init__(self, members: Sequence[Provider]) -> None:
        if not members:
            raise InputError("a ProviderPool needs at least one provider")
        identities = {(m.kind, m.model, m.endpoint) for m in members}
        if len(identities) > 1:
            raise InputError(f"a ProviderPool's members must share kind, model and endpoint (cache keys), got {sorted(identities)}")
        super().__init__(members[0])
        self.members = list(members)
        self._busy = [0] * len(self.members)

    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        index = min(range(len(self.members)), key=self._busy.__getitem__)
        self._busy[index] += 1
        try:
            return await self.members[index].generate(request)
        finally:
            self._busy[index] -= 1

    async def aclose(self) -> None:
        for member in self.members:
            await member.aclose()


class PermitSource(Protocol):
    """A limiter that lives elsewhere (the Ray engine's account-wide limiter actor): a permit is asked for before
    each attempt and the attempt's outcome reported after it, so every worker's calls count against one bucket."""

    async def acquire(self, request: GenerateRequest, multiple_samples: bool) -> int: ...

    def release(self, ticket: int, usage: dict[str, Any] | None, rate_limited: bool = False, retry_after: float | None = None) -> None: ...


class SharedLimitProvider(WrapperProvider):
    """``inner`` under a :class:`PermitSource`: every attempt waits for a permit and reports back."""

    def __init__(self, inner: Provider, limiter: PermitSource) -> None:
        super().__init__(inner)
        self.limiter = limiter

    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        ticket = await self.limiter.acquire(request, self.inner.capabilities.multiple_samples)
        usage: dict[str, Any] | None = None
        rate_limited, retry_after = False, None
        try:
            response = await self.inner.generate(request)
            usage = response.usage.model_dump()
            return response
        except RateLimitError as exc:
            rate_limited, retry_after = True, exc.retry_after
            raise
        finally:  # the report is sent, never awaited: the answer is not held up by it
            self.limiter.release(ticket, usage, rate_limited, retry_after)
