"""One retry policy for every provider, as a wrapper (the SDKs' own retries are switched off).

Transient failures (408, 409, 429, 5xx, timeouts, dropped connections) are retried with exponential
back-off and full jitter, honouring a server's Retry-After; permanent ones (400, 401, 403, 404, quota
exhausted, unsupported requests) fail on the first attempt. Attempts and total time are both bounded.
"""

from __future__ import annotations

import random

from pydantic import BaseModel, Field
from tenacity import AsyncRetrying, RetryCallState, retry_if_exception_type, stop_after_attempt, stop_after_delay

from judgesdk.errors import RetriesExhaustedError, TransientError
from judgesdk.provider import GenerateRequest, GenerateResponse, Provider, WrapperProvider


class RetryPolicy(BaseModel):
    max_attempts: int = Field(default=5, ge=1)
    max_total_s: float = Field(default=120.0, gt=0)
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
        retrying = AsyncRetrying(
            retry=retry_if_exception_type(TransientError),
            stop=stop_after_attempt(self.policy.max_attempts) | stop_after_delay(self.policy.max_total_s),
            wait=self._wait,
            reraise=True,
        )
        attempt_number = 0
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
        if attempt_number > 1:
            response = response.model_copy(update={"notes": [*response.notes, f"succeeded on attempt {attempt_number}"]})
        return response
