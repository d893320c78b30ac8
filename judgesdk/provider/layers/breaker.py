"""Adaptive concurrency and a circuit breaker, as one provider wrapper, so that timeouts shrink the load.

Why: a server slower than its clients' timeout turns retries into a storm. The llama.cpp server computes one
request at a time; requests sent together queue behind each other, most time out on the client, and the one
being computed is finished anyway (behind a proxy that does not pass the client's disconnect on, every
abandoned request is). Retried at once, each timeout puts another request in the queue, and a run ends with
several requests per item and almost no results (benchmarks/README.md, "Load and faults").
:class:`OverloadGuard` answers with two mechanisms.

**Adaptive concurrency (AIMD).** Nothing is limited until a timeout or an overload answer (408, 503, 504,
529). Then the requests in flight are limited to ``decrease`` × what is in flight as the request fails, once
per wave (failures of requests sent before the last decrease do not shrink it again). The limit grows back by
one per limit's worth of successes, only while it is what holds requests back, and only while the latency
projected with one more request in flight (the moving average of latencies × (limit + 1) / limit: a server
that computes one request at a time makes each wait for the others) stays under ``grow_below`` × the longest
timeout seen. A timed-out call keeps its slot a while longer (``hold_after_timeout``, about one request's
latency): the server is still computing it, and a request sent at once would queue behind it and time out
in turn. A timeout while requests sent after it come back within half the timeout is one lost request (a
stalled connection), not a full server: it does not shrink the limit.

**Circuit breaker.** ``failure_threshold`` consecutive timeouts, 5xx or dropped connections open it and drop
the limit to ``min_concurrency``. While it is open, calls *wait*, they do not fail: after ``open_s`` one call
goes as a probe (half-open); a success closes the circuit and the waiting calls go, under the limit, which
then grows by one per success up to ``decrease`` × the level at which the circuit opened (same latency test),
by one per window after that. A failed probe opens it again for twice as long (up to ``max_open_s``), time in
which the server finishes what it was left with. A call fails, with
:class:`~judgesdk.core.errors.CircuitOpenError`, only after waiting ``max_wait_s`` (a provider that is down, not
slow): the fallback chain then moves on.

A 429 is a quota, not overload: the server answered at once, the retry layer honours its Retry-After and
:class:`~judgesdk.provider.layers.ratelimit.RateLimitedProvider` (where configured) shrinks its rates; here it counts as an
answer. A 500, 502 or dropped connection does not shrink the limit either (the server is failing, not busy)
but counts towards opening the circuit. 429s, overload answers and timeouts read as overload are counted
(``stats.congested``): the judge's item pace reads the count, so that the items in flight above this layer shrink
when the provider's pace is passed.

Timeouts are known by type: the adapters raise :class:`~judgesdk.core.errors.ProviderTimeoutError` for their SDK's
timeouts (``judgesdk.providers._sdk.classify``); a provider of your own raises it for its own.

Where it sits (``judgesdk.provider.stack.assemble``): under the retry wrapper, so every attempt passes it and a request
sleeping between retries holds no slot. Time a call waits here for the circuit or a slot does not count
against the retry's ``max_total_s`` (see :mod:`judgesdk.provider.layers.retry`). Time is the event loop's (``clock`` and
``sleep`` are injectable), so tests run it on virtual time.
"""

from __future__ import annotations

import asyncio
import math
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from judgesdk.core import CircuitOpenError, ProviderError, ProviderTimeoutError, TransientError
from judgesdk.provider.layers.retry import exclude_from_budget
from judgesdk.provider.protocol import GenerateRequest, GenerateResponse, Provider, WrapperProvider

Clock = Callable[[], float]
Sleep = Callable[[float], Awaitable[None]]
Failure = Literal["timeout", "overloaded", "rate_limited", "failed"]
OVERLOAD_STATUSES = frozenset({408, 503, 504, 529})


class OverloadConfig(BaseModel):
    """The overload guard of each provider (on by default; ``enabled = false`` removes the layer)."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    failure_threshold: int = Field(default=5, ge=1)  # consecutive timeouts/5xx/resets that open the circuit
    open_s: float = Field(default=1.0, gt=0)  # first open period; doubles after each failed probe
    max_open_s: float = Field(default=30.0, gt=0)
    max_wait_s: float = Field(default=120.0, gt=0)  # longest a call waits for an open circuit before failing
    min_concurrency: int = Field(default=1, ge=1)
    max_concurrency: int | None = Field(default=None, ge=1)  # None: unlimited until the first failure
    decrease: float = Field(default=0.5, gt=0, lt=1)
    grow_below: float = Field(default=0.8, gt=0, le=1)  # grow while projected latency < this × the timeout
    hold_after_timeout: bool = True  # a timed-out call keeps its slot for about one request's latency


class OverloadStats(BaseModel):
    """What the guard did, for run reports and tests."""

    requests: int = 0
    timeouts: int = 0
    failures: int = 0  # every transient failure, timeouts included
    decreases: int = 0
    held_s: float = 0.0  # total time timed-out calls kept their slots
    opened: int = 0  # times the circuit opened (failed probes included)
    probes: int = 0
    max_in_flight: int = 0
    limit: float | None = None
    waited_s: float = 0.0  # total time calls waited for an open circuit
    # 429s, overload answers and timeouts read as overload: each says the provider's pace was passed. The judge's item
    # pace (``judgesdk.judging.pace.Pace``) reads this count to shrink the items it keeps in flight
    congested: int = 0


def loop_time() -> float:
    """The running event loop's clock: the one its sleeps and timeouts are measured on."""
    return asyncio.get_running_loop().time()


def is_timeout(exc: BaseException) -> bool:
    """Whether ``exc`` is a client timeout: a :class:`~judgesdk.core.errors.ProviderTimeoutError`, which the adapters
    raise for their SDK's timeouts (``openai.APITimeoutError``, ``httpx.ReadTimeout``, LiteLLM's ``Timeout``,
    ``asyncio.TimeoutError``; see ``judgesdk.providers._sdk.classify``). A provider of your own raises it too."""
    return isinstance(exc, ProviderTimeoutError)


def failure_kind(exc: TransientError) -> Failure:
    if is_timeout(exc):
        return "timeout"
    if exc.status == 429:
        return "rate_limited"
    return "overloaded" if exc.status in OVERLOAD_STATUSES else "failed"


class AdaptiveLimit:
    """AIMD bound on requests in flight (see the module docstring); ``None`` while nothing has failed."""

    def __init__(self, config: OverloadConfig) -> None:
        self.config = config
        self.limit: float | None = None if config.max_concurrency is None else float(config.max_concurrency)
        self.wave = 0
        self.timeout_s: float | None = None  # the longest timeout seen: what "fast" is measured against
        self.latency_s: float | None = None  # moving average of successful calls' latency
        self.restart_to = 0.0  # after the circuit opened, the limit grows by one per success up to here
        self.sent = 0  # requests sent so far: a request's number orders it against later answers
        self._answers: deque[tuple[int, float]] = deque(maxlen=64)  # (number, latency) of recent successes

    def allows(self, in_flight: int) -> bool:
        return self.limit is None or in_flight < max(self.config.min_concurrency, math.floor(self.limit))

    def shrink(self, wave: int, in_flight: int) -> bool:
        """Halve (``decrease``) what is in flight as a request fails, once per ``wave`` (when it was sent)."""
        if wave != self.wave:
            return False
        base = in_flight if self.limit is None else min(self.limit, in_flight)
        self.limit = max(float(self.config.min_concurrency), base * self.config.decrease)
        self.restart_to = 0.0  # from here on, one more per window
        self.wave += 1
        return True

    def drop(self, in_flight: int) -> None:
        """The circuit opened: restart from the minimum once it closes, quickly back to half the old level."""
        self.restart_to = max(float(self.config.min_concurrency), in_flight * self.config.decrease)
        self.limit = float(self.config.min_concurrency)
        self.wave += 1

    def answered_since(self, number: int, within_s: float) -> bool:
        """Whether a request sent after request ``number`` has succeeded within ``within_s`` seconds."""
        return any(later > number and latency < within_s for later, latency in self._answers)

    def hold_s(self) -> float:
        """How long a timed-out call keeps its slot: about one request's latency, at most the timeout."""
        if not self.config.hold_after_timeout or self.timeout_s is None:
            return 0.0
        return self.timeout_s if self.latency_s is None else min(self.latency_s, self.timeout_s)

    def grow(self, number: int, latency_s: float, in_flight_at_send: int) -> None:
        """Request ``number`` succeeded in ``latency_s``: maybe one more in flight (see the module docstring)."""
        self._answers.append((number, latency_s))
        self.latency_s = latency_s if self.latency_s is None else 0.8 * self.latency_s + 0.2 * latency_s
        if self.limit is None or in_flight_at_send < math.floor(self.limit):
            return  # not limited by the limit: a success says nothing about a larger one
        projected = self.latency_s * (self.limit + 1.0) / self.limit
        if self.timeout_s is not None and projected >= self.config.grow_below * self.timeout_s:
            return
        self.limit += 1.0 if self.limit < self.restart_to else 1.0 / self.limit
        if self.config.max_concurrency is not None:
            self.limit = min(self.limit, float(self.config.max_concurrency))


class CircuitBreaker:
    """Closed, open or half-open (one probe in flight); calls wait while it is not closed."""

    def __init__(self, config: OverloadConfig, clock: Clock, sleep: Sleep) -> None:
        self.config = config
        self.state: Literal["closed", "open", "half_open"] = "closed"
        self.failures = 0  # consecutive, while closed
        self.open_s = config.open_s
        self.open_until = 0.0
        self.last_error = ""
        self._clock = clock
        self._sleep = sleep
        self._changed = asyncio.Event()

    async def enter(self) -> bool:
        """Return when a call may go (True: it is the half-open probe); raise after ``max_wait_s`` waiting."""
        deadline = self._clock() + self.config.max_wait_s
        while True:
            now = self._clock()
            if self.state == "closed":
                return False
            if self.state == "open" and now >= self.open_until:
                self.state = "half_open"
                return True
            if now >= deadline:
                raise CircuitOpenError(
                    f"circuit open: the provider failed {self.config.failure_threshold} times in a row and did not "
                    f"recover in {self.config.max_wait_s:g}s (last: {self.last_error})"
                )
            until = self.open_until if self.state == "open" else deadline
            await self._wait(min(until, deadline) - now)

    async def _wait(self, seconds: float) -> None:
        """Sleep ``seconds`` or until the state changes, whichever comes first."""
        changed = asyncio.ensure_future(self._changed.wait())
        timer = asyncio.ensure_future(self._sleep(seconds))
        try:
            await asyncio.wait({changed, timer}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            changed.cancel()
            timer.cancel()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = asyncio.Event()

    def answered(self) -> None:
        """The server answered (a success, a 429, a permanent error): it is up; close."""
        self.failures = 0
        if self.state != "closed":
            self.state, self.open_s = "closed", self.config.open_s
            self._notify()

    def failed(self, error: str, probe: bool) -> bool:
        """A timeout, 5xx or dropped connection; returns whether the circuit opened now."""
        self.last_error = error
        if probe and self.state == "half_open":
            self.open_s = min(self.open_s * 2, self.config.max_open_s)
            return self._open()
        if self.state != "closed":
            return False
        self.failures += 1
        return self._open() if self.failures >= self.config.failure_threshold else False

    def abandoned(self, probe: bool) -> None:
        """The probe ended without an answer either way (cancelled): the next waiting call probes instead."""
        if probe and self.state == "half_open":
            self.state = "open"
            self._notify()

    def _open(self) -> bool:
        self.state, self.open_until = "open", self._clock() + self.open_s
        self._notify()
        return True


class OverloadGuard(WrapperProvider):
    """Adaptive concurrency and a circuit breaker around the inner provider (see the module docstring)."""

    def __init__(
        self,
        inner: Provider,
        config: OverloadConfig | None = None,
        *,
        clock: Clock | None = None,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        super().__init__(inner)
        self.config = config or OverloadConfig()
        self.limit = AdaptiveLimit(self.config)
        self.stats = OverloadStats(limit=self.limit.limit)
        self._clock = clock or loop_time
        self.breaker = CircuitBreaker(self.config, self._clock, sleep)
        self._sleep = sleep
        self._in_flight = 0
        self._slots = asyncio.Condition()

    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        queued = self._clock()
        probe = await self._admit()
        exclude_from_budget(self._clock() - queued)  # queueing here is not retry time (judgesdk.provider.layers.retry)
        self.limit.sent += 1
        number, in_flight, wave, started = self.limit.sent, self._in_flight, self.limit.wave, self._clock()
        self.stats.requests += 1
        try:
            response = await self.inner.generate(request)
        except TransientError as exc:
            if self._on_failure(exc, probe, number, wave, self._clock() - started) == "timeout":
                await self._hold()
            raise
        except ProviderError:
            self.breaker.answered()
            raise
        except BaseException:
            self.breaker.abandoned(probe)
            raise
        finally:
            await self._release()
        self.breaker.answered()
        self.limit.grow(number, self._clock() - started, in_flight)
        self.stats.limit = self.limit.limit
        return response

    async def _admit(self) -> bool:
        """Wait for the circuit, then for a slot under the limit (again if the circuit opened meanwhile)."""
        while True:
            started = self._clock()
            probe = await self.breaker.enter()
            self.stats.waited_s += self._clock() - started
            try:
                async with self._slots:
                    await self._slots.wait_for(lambda: self.limit.allows(self._in_flight))
                    if probe or self.breaker.state == "closed":
                        self._in_flight += 1
                        self.stats.max_in_flight = max(self.stats.max_in_flight, self._in_flight)
                        self.stats.probes += int(probe)
                        return probe
            except BaseException:  # cancelled while waiting for a slot: a probe hands its turn on
                self.breaker.abandoned(probe)
                raise

    async def _hold(self) -> None:
        """Keep the slot of a timed-out call while the server is likely still computing it."""
        seconds = self.limit.hold_s()
        self.stats.held_s += seconds
        await self._sleep(seconds)

    async def _release(self) -> None:
        async with self._slots:
            self._in_flight -= 1
            self._slots.notify_all()

    def _on_failure(self, exc: TransientError, probe: bool, number: int, wave: int, elapsed_s: float) -> Failure:
        kind = failure_kind(exc)
        self.stats.failures += 1
        overload = kind == "overloaded"
        if kind == "timeout":
            self.stats.timeouts += 1
            self.limit.timeout_s = max(self.limit.timeout_s or 0.0, elapsed_s)
            overload = not self.limit.answered_since(number, 0.5 * elapsed_s)
        if overload and self.limit.shrink(wave, self._in_flight):
            self.stats.decreases += 1
        if overload or kind == "rate_limited":
            self.stats.congested += 1
        if kind == "rate_limited":
            self.breaker.answered()
        elif self.breaker.failed(str(exc), probe):
            self.stats.opened += 1
            self.limit.drop(self._in_flight)
        self.stats.limit = self.limit.limit
        return kind
