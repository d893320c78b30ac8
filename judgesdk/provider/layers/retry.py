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
"""

from __future__ import annotations

import asyncio
import random
from contextvars import ContextVar

from pydantic import BaseModel, ConfigDict, Field
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type

from judgesdk.core.errors import RetriesExhaustedError, TransientError
from judgesdk.provider.protocol import GenerateRequest, GenerateResponse, Provider, WrapperProvider

_EXCLUDED: ContextVar[list[float] | None] = ContextVar("judgesdk_retry_excluded_s", default=None)


def exclude_from_budget(seconds: float) -> None:
    """Leave ``seconds`` out of the enclosing retry call's ``max_total_s``: time a layer under the retry
    wrapper spent queued rather than attempting (the overload guard's waits). Nothing outside a retry call."""
    excluded = _EXCLUDED.get()
    if excluded is not None and seconds > 0:
        excluded[0] += seconds


class RetryPolicy(BaseModel):
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


    def _wait(self, state: RetryCallState) -> float:
        exc = state.outcome.exception() if state.outcome else None
        retry_after = getattr(exc, "retry_after", None)
        return self.policy.wait_s(state.attempt_number, retry_after)

    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        clock = asyncio.get_running_loop().time
        started, excluded = clock(), [0.0]

        def stop(state: RetryCallState) -> bool:
            spent = clock() - started - excluded[0]  # attempts and back-off, not time queued below
            return state.attempt_number >= self.policy.max_attempts or spent >= self.policy.max_total_s

        retrying = AsyncRetrying(retry=retry_if_exception_type(TransientError), stop=stop, wait=self._wait, reraise=True)
        attempt_number = 0
        token = _EXCLUDED.set(excluded)
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
            _EXCLUDED.reset(token)
        if attempt_number > 1:
            response = response.model_copy(update={"notes": [*response.notes, f"succeeded on attempt {attempt_number}"]})
        return response
