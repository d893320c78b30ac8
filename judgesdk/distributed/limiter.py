"""One rate limiter for a whole Ray job, because hosted limits are per account, not per actor.

Each judging actor holding its own :class:`~judgesdk.provider.layers.ratelimit.RateLimitedProvider` would send N actors
times the configured RPM, TPM and requests in flight. Here one Ray actor, :class:`SharedLimiter`, holds the account's
limiter, and every judging actor asks it for a permit before each call and reports back after it.

The permit is the single-process limiter itself, not a copy of its rules: :class:`SharedLimiter` runs
``RateLimitedProvider.generate`` over a stand-in provider whose "call" starts when a permit is granted (the
in-flight slot is held and the RPM/TPM buckets are charged) and ends when the caller reports its answer's
usage (the TPM estimate is corrected) or its 429 (AIMD back-off and Retry-After apply to every actor). So
``max_concurrency`` is the account's too: at most that many requests in flight over all actors.

**A dead caller's permits come back within seconds.** Every caller (one :class:`RayPermits` per judging
actor's provider) has an owner id and renews a short lease on all its permits from a heartbeat thread every
``heartbeat_s``; an owner not heard from for ``owner_timeout_s`` is taken for dead (a killed worker, a lost
node): every permit it holds is released and every request it had queued is dropped. A live caller's call may
take as long as it takes (its heartbeat keeps its permits); ``lease_s`` bounds one permit all the same, for a
caller that lives on but never reports back.
"""

from __future__ import annotations

import asyncio
import contextvars
import itertools
import sys
import threading
import time
import uuid
from typing import Any

from judgesdk.core import ProviderError, RateLimitError, Usage
from judgesdk.provider import Capabilities, GenerateRequest, GenerateResponse, RateLimitConfig, limited

LEASE_S = 900.0  # longer than any one call: a permit held longer belongs to a caller that never reports back
HEARTBEAT_S = 1.0  # how often a caller renews its owner's lease
OWNER_TIMEOUT_S = 5.0  # an owner not heard from this long is dead: its permits and queued requests are dropped
_TICKET: contextvars.ContextVar[int] = contextvars.ContextVar("judgesdk_permit")


class _Abandoned(ProviderError):
    """The holder of a permit failed without a 429, or never reported back (its lease ran out)."""


class _Dropped(_Abandoned):
    """A queued request dropped because its owner was taken for dead. The caller that receives this is alive after
    all (a long pause): :class:`RayPermits` asks again."""


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
    """The body of the limiter actor (``ray.remote(SharedLimiter)``; see :func:`start_limiter`).

    ``clock`` is injectable so tests can age owners without waiting."""

    def __init__(
        self, config: RateLimitConfig, lease_s: float = LEASE_S, owner_timeout_s: float = OWNER_TIMEOUT_S, clock: Any = time.monotonic
    ) -> None:
        self._permits = _Permits(lease_s)
        self._limiter = limited(self._permits, config)
        self._tickets = itertools.count()
        self._holders: dict[int, asyncio.Task[None]] = {}
        self._owner_of: dict[int, str] = {}
        self._seen: dict[str, float] = {}  # owner -> when it was last heard from
        self._dead: set[str] = set()
        self._owner_timeout_s = owner_timeout_s
        self._clock = clock
        self._reaper: asyncio.Task[None] | None = None
        self.reaped = 0  # permits and queued requests dropped because their owner died

    async def acquire(self, request: GenerateRequest, multiple_samples: bool, owner: str = "") -> int:
        """Wait for a permit for ``request`` (slot and budget taken); returns its ticket for :meth:`release`.
        ``owner``: the caller's id, renewed by :meth:`renew` (see the module docstring)."""
        self._start_reaper()
        self.renew(owner)
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
        self._holders[ticket] = holder
        self._owner_of[ticket] = owner
        holder.add_done_callback(lambda _: self._forget(ticket))
        waiting = asyncio.ensure_future(granted.wait())
        await asyncio.wait({waiting, holder}, return_when=asyncio.FIRST_COMPLETED)
        if not granted.is_set():  # dropped before it was granted (its owner was taken for dead)
            waiting.cancel()
            raise _Dropped(f"permit {ticket} was dropped: its owner was not heard from for {self._owner_timeout_s:g} s")
        return ticket

    def renew(self, owner: str = "") -> None:
        """``owner`` is alive: its permits and queued requests stay."""
        if owner:
            self._seen[owner] = self._clock()
            self._dead.discard(owner)  # an owner wrongly taken for dead (a long pause) counts again

    async def _hold(self, request: GenerateRequest) -> None:
        try:
            await self._limiter.generate(request)
        except ProviderError:  # the caller's outcome, already reported to the limiter's accounting
            pass

    def _forget(self, ticket: int) -> None:
        self._holders.pop(ticket, None)
        self._owner_of.pop(ticket, None)
        self._permits.pending.pop(ticket, None)

    def release(self, ticket: int, usage: dict[str, Any] | None, rate_limited: bool = False, retry_after: float | None = None) -> None:
        """The outcome of the call made under ``ticket``: its usage, a 429, or (usage None) another failure."""
        self.renew(self._owner_of.get(ticket, ""))
        entry = self._permits.pending.get(ticket)
        if entry is None or entry[1].done():
            return
        if rate_limited:
            entry[1].set_exception(RateLimitError("429 from the API", retry_after=retry_after))
        elif usage is None:
            entry[1].set_exception(_Abandoned("the call failed"))
        else:
            entry[1].set_result(GenerateResponse(usage=Usage.model_validate(usage)))

    def reap(self) -> int:
        """Drop the permits and queued requests of every owner not heard from for ``owner_timeout_s``; returns
        how many. Cancelling a holder frees its in-flight slot (the limiter's ``finally``); the RPM/TPM budget a
        granted permit took stays spent, as the request may have reached the API."""
        now = self._clock()
        late = {owner for owner, seen in self._seen.items() if now - seen > self._owner_timeout_s}
        self._dead |= late
        for owner in late:
            del self._seen[owner]
        dropped = [holder for ticket, holder in list(self._holders.items()) if self._owner_of.get(ticket) in self._dead]
        for holder in dropped:
            holder.cancel()
        self.reaped += len(dropped)
        return len(dropped)

    def _start_reaper(self) -> None:
        if self._reaper is None or self._reaper.done():
            self._reaper = asyncio.get_running_loop().create_task(self._reap_forever())

    async def _reap_forever(self) -> None:
        while True:
            await asyncio.sleep(min(HEARTBEAT_S, self._owner_timeout_s / 4))
            self.reap()

    def stats(self) -> dict[str, Any]:
        """The limiter's :class:`~judgesdk.provider.layers.ratelimit.RateLimitStats` (and ``reaped``, ``in_flight``),
        for the run's report and tests."""
        return {**self._limiter.stats.model_dump(), "reaped": self.reaped, "in_flight": self._limiter.in_flight}


def start_limiter(config: RateLimitConfig, lease_s: float = LEASE_S, owner_timeout_s: float = OWNER_TIMEOUT_S) -> Any:
    """A :class:`SharedLimiter` actor (needs ``ray.init`` done). Async: thousands of permits may wait at once."""
    import ray

    return ray.remote(SharedLimiter).options(num_cpus=0, max_concurrency=10_000).remote(config, lease_s, owner_timeout_s)


class RayPermits:
    """A :class:`SharedLimiter` actor as the stack's shared-limit layer asks it
    (:class:`~judgesdk.provider.layers.ratelimit.PermitSource`): Ray's ``.remote`` calls behind plain methods, and a
    heartbeat thread that renews this caller's lease every ``heartbeat_s`` for as long as its process lives."""

    def __init__(self, actor: Any, heartbeat_s: float = HEARTBEAT_S) -> None:
        self.actor = actor
        self.owner = uuid.uuid4().hex
        self._stop = threading.Event()
        self._heartbeat = threading.Thread(target=self._beat, args=(heartbeat_s,), name="judgesdk-permit-heartbeat", daemon=True)
        self._heartbeat.start()

    def _beat(self, every: float) -> None:
        while not self._stop.wait(every):
            try:
                self.actor.renew.remote(self.owner)  # not waited for: a lost beat is made up by the next
            except Exception:  # the limiter is gone (the job ended): nothing left to renew
                return

    def close(self) -> None:
        self._stop.set()

    async def acquire(self, request: GenerateRequest, multiple_samples: bool) -> int:
        while True:
            try:
                return int(await self.actor.acquire.remote(request, multiple_samples, self.owner))
            except Exception as exc:  # Ray's error of the actor's call is the cause's class too, or carries it in .cause
                if not (isinstance(exc, _Dropped) or isinstance(getattr(exc, "cause", None), _Dropped)):
                    raise

    def release(self, ticket: int, usage: dict[str, Any] | None, rate_limited: bool = False, retry_after: float | None = None) -> None:
        self.actor.release.remote(ticket, usage, rate_limited, retry_after)  # never awaited: the answer is not held up
