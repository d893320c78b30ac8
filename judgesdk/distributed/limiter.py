"""One rate limiter for a whole Ray job, because hosted limits are per account, not per actor.

Each judging actor holding its own :class:`~judgesdk.provider.layers.ratelimit.RateLimitedProvider` would send N actors
times the configured RPM and TPM. Here one Ray actor, :class:`SharedLimiter`, holds the account's limiter,
and every judging actor asks it for a permit before each call and reports back after it.

The permit is the single-process limiter itself, not a copy of its rules: :class:`SharedLimiter` runs
``RateLimitedProvider.generate`` over a stand-in provider whose "call" starts when a permit is granted (the
in-flight slot is held and the RPM/TPM buckets are charged) and ends when the caller reports its answer's
usage (the TPM estimate is corrected) or its 429 (AIMD back-off and Retry-After apply to every actor). A
caller that dies holding a permit (a killed worker) gives it back after ``lease_s``.
"""

from __future__ import annotations

import asyncio
import contextvars
import itertools
import sys
from typing import Any

from judgesdk.core.errors import ProviderError, RateLimitError
from judgesdk.core.types import Usage
from judgesdk.provider.layers.ratelimit import RateLimitConfig
from judgesdk.provider.protocol import Capabilities, GenerateRequest, GenerateResponse
from judgesdk.provider.stack import limited

LEASE_S = 900.0  # longer than any one call: a permit held longer belongs to a caller that died
_TICKET: contextvars.ContextVar[int] = contextvars.ContextVar("judgesdk_permit")


class _Abandoned(ProviderError):
    """The holder of a permit failed without a 429, or never reported back (its lease ran out)."""


class _Permits:
    """The stand-in provider under the account's limiter: each call waits for its caller's report."""

    kind, model, endpoint = "permit", "permit", "ray"

    def __init__(self, lease_s: float) -> None:
        self.capabilities = Capabilities()
        self.lease_s = lease_s
        self.pending: dict[int, tuple[asyncio.Event, asyncio.Future[GenerateResponse]]] = {}

    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        ticket = _TICKET.get()
        granted, reported = self.pending[ticket]
        granted.set()
        try:
            return await asyncio.wait_for(asyncio.shield(reported), self.lease_s)
        except asyncio.TimeoutError:
            raise _Abandoned(f"permit {ticket} was not returned within {self.lease_s:.0f} s") from None
        finally:
            self.pending.pop(ticket, None)

    async def aclose(self) -> None:
        return None


class SharedLimiter:
    """The body of the limiter actor (``ray.remote(SharedLimiter)``; see :func:`start_limiter`)."""

    def __init__(self, config: RateLimitConfig, lease_s: float = LEASE_S) -> None:
        self._permits = _Permits(lease_s)
        self._limiter = limited(self._permits, config)
        self._tickets = itertools.count()
        self._holders: set[asyncio.Task[None]] = set()

    async def acquire(self, request: GenerateRequest, multiple_samples: bool) -> int:
        """Wait for a permit for ``request`` (slot and budget taken); returns its ticket for :meth:`release`."""
        self._permits.capabilities = Capabilities(multiple_samples=multiple_samples)  # n > 1 counts as n calls where unsupported
        ticket = next(self._tickets)
        granted = asyncio.Event()
        self._permits.pending[ticket] = (granted, asyncio.get_running_loop().create_future())
        context = contextvars.copy_context()
        context.run(_TICKET.set, ticket)
        if sys.version_info >= (3, 11):
            holder = asyncio.get_running_loop().create_task(self._hold(request), context=context)
        else:  # no context= before 3.11: a task copies the current context, so the ticket is set around its creation
            token = _TICKET.set(ticket)
            try:
                holder = asyncio.get_running_loop().create_task(self._hold(request))
            finally:
                _TICKET.reset(token)
        self._holders.add(holder)
        holder.add_done_callback(self._holders.discard)
        await granted.wait()
        return ticket

    async def _hold(self, request: GenerateRequest) -> None:
        try:
            await self._limiter.generate(request)
        except ProviderError:  # the caller's outcome, already reported to the limiter's accounting
            pass

    def release(self, ticket: int, usage: dict[str, Any] | None, rate_limited: bool = False, retry_after: float | None = None) -> None:
        """The outcome of the call made under ``ticket``: its usage, a 429, or (usage None) another failure."""
        entry = self._permits.pending.get(ticket)
        if entry is None or entry[1].done():
            return
        if rate_limited:
            entry[1].set_exception(RateLimitError("429 from the API", retry_after=retry_after))
        elif usage is None:
            entry[1].set_exception(_Abandoned("the call failed"))
        else:
            entry[1].set_result(GenerateResponse(usage=Usage.model_validate(usage)))

    def stats(self) -> dict[str, Any]:
        """The limiter's :class:`~judgesdk.provider.layers.ratelimit.RateLimitStats`, for the run's report and tests."""
        return self._limiter.stats.model_dump()


def start_limiter(config: RateLimitConfig, lease_s: float = LEASE_S) -> Any:
    """A :class:`SharedLimiter` actor (needs ``ray.init`` done). Async: thousands of permits may wait at once."""
    import ray

    return ray.remote(SharedLimiter).options(num_cpus=0, max_concurrency=10_000).remote(config, lease_s)


class RayPermits:
    """A :class:`SharedLimiter` actor as the stack's shared-limit layer asks it
    (:class:`~judgesdk.provider.layers.ratelimit.PermitSource`): Ray's ``.remote`` calls behind plain methods."""

    def __init__(self, actor: Any) -> None:
        self.actor = actor

    async def acquire(self, request: GenerateRequest, multiple_samples: bool) -> int:
        return int(await self.actor.acquire.remote(request, multiple_samples))

    def release(self, ticket: int, usage: dict[str, Any] | None, rate_limited: bool = False, retry_after: float | None = None) -> None:
        self.actor.release.remote(ticket, usage, rate_limited, retry_after)  # never awaited: the answer is not held up
