"""One retry policy for every provider, as a wrapper (the SDKs' own retries are switched off).

Transient failures (408, 409, 429, 5xx, timeouts, dropped connections) are retried with exponential
back-off and full jitter, honouring a server's Retry-After; permanent ones (400, 401, 403, 404, quota
exhausted, unsupported requests) fail on the first attempt. Attempts and total time are both bounded.

What ``max_total_s`` counts: the time spent in attempts and in back-off between them, not the time a request
spent queued in the overload guard under this wrapper (``judgesdk.provider.stack.assemble``: retry over the guard over
the adapter), waiting for an open circuit to close or for a slot under the adaptive concurrency limit. Every
attempt passes the guard, so without this a request queued behind an overloaded server, or behind the
circuit's ``max_wait_s`` (120 s by default, as long as ``max_total_s``), would have used its whole retry
budget before its first request was sent, and its first transient failure would end it. Being below, the
guard cannot be timed from here: it reports each wait with :func:`exclude_from_budget`, into a counter that
this wrapper opens per call in a context variable (so concurrent calls are counted apart). Time waiting in
a rate limiter (``judgesdk.provider.layers.ratelimit``, under the guard) and the guard's ``hold_after_timeout`` (the slot a
timed-out call keeps, part of that attempt) still count. Time is the event loop's clock, as the guard's.

**Every wait is bounded.** A wait between attempts is at most ``max_wait_s`` (a server's Retry-After included: a
``Retry-After: 100000`` waits ``max_wait_s``) and never runs past ``max_total_s``: no attempt starts after the
budget is spent, and one started before it is bounded by the provider's ``timeout_s``. A layer below that
pauses for a server's Retry-After (the rate limiter) asks :func:`wait_allowance` how long this call may still
wait, so its pause obeys the same two bounds.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from contextvars import ContextVar

from pydantic import BaseModel, ConfigDict, Field
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type

from judgesdk.core import RetriesExhaustedError, TransientError
from judgesdk.provider.protocol import GenerateRequest, GenerateResponse, Provider, WrapperProvider

_EXCLUDED: ContextVar[list[float] | None] = ContextVar("judgesdk_retry_excluded_s", default=None)
_ALLOWANCE: ContextVar[Callable[[], float] | None] = ContextVar("judgesdk_retry_allowance_s", default=None)
UNBOUNDED_PAUSE_S = 30.0  # the longest a server's Retry-After pauses a call made outside any retry policy (its default max_wait_s)


def wait_allowance() -> float:
    """Seconds the enclosing retry call may still spend waiting: ``max_wait_s``, less when its ``max_total_s``
    has less left (module docstring); :data:`UNBOUNDED_PAUSE_S` outside a retry call."""
    allowance = _ALLOWANCE.get()
    return UNBOUNDED_PAUSE_S if allowance is None else allowance()


def exclude_from_budget(seconds: float) -> None:
    """Leave ``seconds`` out of the enclosing retry call's ``max_total_s``: time a layer under the retry
    wrapper spent queued rather than attempting (the overload guard's waits). Nothing outside a retry call."""
    excluded = _EXCLUDED.get()
    if excluded is not None and seconds > 0:
        excluded[0] += seconds


class RetryPolicy(BaseModel):
    """How transient failures are retried (module docstring): at most ``max_attempts`` attempts within
    ``max_total_s`` seconds of attempts and back-off; back-off doubles from ``initial_wait_s`` up to ``max_wait_s``
    (full jitter unless ``jitter`` is false), and a server's Retry-After, when sent, replaces it, capped the same."""

    model_config = ConfigDict(extra="forbid")  # a typo (max_attemps) is refused, not a default silently kept

    max_attempts: int = Field(default=5, ge=1)
    max_total_s: float = Field(default=120.0, gt=0)  # attempts and back-off; not time queued in the overload guard
    initial_wait_s: float = Field(default=0.5, ge=0)
    max_wait_s: float = Field(default=30.0, ge=0)
    jitter: bool = True

    def wait_s(self, attempt: int, retry_after: float | None) -> float:
        """Seconds before the next attempt (``attempt`` counts from 1): Retry-After if sent, else jittered back-off."""
        if retry_after is not None:
            return min(retry_after, self.max_wait_s)
        ceiling = min(self.initial_wait_s * 2 ** (attempt - 1), self.max_wait_s)
        return random.uniform(0, ceiling) if self.jitter else ceiling


class RetryingProvider(WrapperProvider):
    """Retries transient failures of the inner provider under a :class:`RetryPolicy`.

    ``attempts`` counts every call made to the inner provider, for tests and run reports.
    """

    def __init__(self, inner: Provider, policy: RetryPolicy | None = None) -> None:
        super().__init__(inner)
        self.policy = policy or RetryPolicy()
        self.attempts = 0


    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        clock = asyncio.get_running_loop().time
        started, excluded = clock(), [0.0]

        def left() -> float:
            """Of ``max_total_s``, what attempts and back-off have not used (time queued below excluded)."""
            return self.policy.max_total_s - (clock() - started - excluded[0])

        past_budget = [False]  # the next wait would end past max_total_s: stop instead (tenacity >= 9 asks wait first)

        def wait(state: RetryCallState) -> float:
            exc = state.outcome.exception() if state.outcome else None
            seconds, remaining = self.policy.wait_s(state.attempt_number, getattr(exc, "retry_after", None)), left()
            past_budget[0] = seconds >= remaining
            return max(min(seconds, remaining), 0.0)

        def stop(state: RetryCallState) -> bool:
            return state.attempt_number >= self.policy.max_attempts or left() <= 0 or past_budget[0]

        retrying = AsyncRetrying(retry=retry_if_exception_type(TransientError), stop=stop, wait=wait, reraise=True)
        attempt_number = 0
        tokens = _EXCLUDED.set(excluded), _ALLOWANCE.set(lambda: max(min(self.policy.max_wait_s, left()), 0.0))
        try:
            async for attempt in retrying:
                with attempt:
                    attempt_number = attempt.retry_state.attempt_number
                    self.attempts += 1
                    response = await self.inner.generate(request)
        except TransientError as exc:
            raise RetriesExhaustedError(
                f"{self.inner.kind}: gave up after {attempt_number} attempts: {exc}", attempts=attempt_number, last=exc
            ) from exc
        finally:
            _ALLOWANCE.reset(tokens[1])
            _EXCLUDED.reset(tokens[0])
        if attempt_number > 1:
            response = response.model_copy(update={"notes": [*response.notes, f"succeeded on attempt {attempt_number}"]})
        return response
