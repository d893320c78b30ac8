"""The item pace: how many items a judge keeps in flight when no concurrency is configured.

Why: the overload guard and the rate limiter below learn a provider's limit, but a fixed number of items in
flight above them (4 by default, before) never let requests reach it: 200 items against a 200 ms server took
12 s at 4 and 3.8 s at 64 (benchmarks/README.md, "Items in flight at the provider's pace"). :class:`Pace` grows
the items in flight while latency holds and shrinks them on 429s, overload answers and timeouts, never above what
the layers below allow; :class:`Judge.score_many <judgesdk.judging.judge.Judge>` admits items through it.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import math
from collections.abc import AsyncIterator, Callable

from judgesdk.core import InputError

PACE_START = 4  # items in flight when a run starts following the provider's pace
PACE_CAP = 64  # the most items in flight the pace allows (a rate limit or an overload guard below may allow fewer)


class Pace:
    """How many items a judge keeps in flight when no concurrency is set: learnt from the provider, as the
    overload and rate layers below learn its limit for requests (AIMD, as TCP learns a path's window).

    Why: a fixed number of items in flight above those layers never lets requests reach what the provider allows
    (4 items at 200 ms is 20 items/s whatever the API takes), and a large fixed number floods a provider that
    answers 429 above a few requests in flight. The pace starts at ``start`` and

    * **grows** on each item answered (admitted since the last decrease) while the limit was what held items back
      and its latency held (at most
      ``tolerance`` × the fastest item seen: past that, the client or the server is saturated and more in flight only
      queues): by one per item until the first congestion (slow start, doubling per round trip), then by one per
      limit's worth of items. Near the level where congestion was last seen (within one), growth slows by half
      for each congestion seen again there, so a hard quota (429 above 8 in flight) is probed ever more rarely;
    * **shrinks** to ``decrease`` × the limit when the layers below count congestion (the overload guard's
      ``stats.congested``: 429s, overload answers, timeouts read as overload), once per wave: congestion counted
      before an item admitted after the last decrease has finished was caused by the old level, and is absorbed;
    * stays within 1 and ``cap``, and within ``bound``: the tightest in-flight limit the layers below have learnt
      (an overload guard's limit, a rate limit's ``max_concurrency`` × its back-off factor).

    Pure logic, no clock: :meth:`admit` when an item starts, :meth:`finish` when it ends, with its latency and the
    layers' congestion count (deterministic unit tests need no event loop).
    """

    def __init__(
        self, start: int = PACE_START, cap: int = PACE_CAP, decrease: float = 0.5, tolerance: float = 2.0
    ) -> None:
        if not 1 <= start <= cap or not 0 < decrease < 1 or tolerance < 1:
            raise InputError(
                "a pace needs 1 <= start <= cap, 0 < decrease < 1 and tolerance >= 1 "
                f"(got start {start}, cap {cap}, decrease {decrease}, tolerance {tolerance})"
            )
        self.limit = float(start)
        self.cap = cap
        self.decrease = decrease
        self.tolerance = tolerance
        self.in_flight = 0
        self.slow_start = True
        self.wave = 0  # incremented on every decrease; an item remembers the wave it was admitted in
        self.armed = True  # whether congestion counted now may shrink the limit (an item of this wave has finished)
        self.seen = 0  # the layers' congestion count at the last finish
        self.fastest_s: float | None = None
        self.ceiling: int | None = None  # the level at which congestion was last seen
        self.strikes = 0  # congestion seen again at that level (each halves the growth near it)
        self.decreases = 0
        self.most = 0  # the most items in flight at once

    def carried(self) -> Pace:
        """A pace that starts where this one is (what it learnt, none of its items): for a run beside this one's."""
        twin = copy.copy(self)
        twin.in_flight = 0
        return twin

    def size(self, bound: int | None = None) -> int:
        """Items allowed in flight now: the limit, within 1, ``cap`` and ``bound`` (a layer's limit, or None)."""
        size = min(math.floor(self.limit), self.cap)
        return max(1, size if bound is None else min(size, bound))

    def allows(self, bound: int | None = None) -> bool:
        """Whether one more item may start (``bound`` as in :meth:`size`)."""
        return self.in_flight < self.size(bound)

    def admit(self) -> int:
        """An item starts; returns its wave (hand it back to :meth:`finish`)."""
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        return self.wave

    def finish(
        self, wave: int, latency_s: float | None, congested: int, bound: int | None = None, waiting: int = 0
    ) -> None:
        """An item admitted in ``wave`` ended: answered in ``latency_s`` seconds (None: it failed, which says nothing
        about the pace), with the layers' congestion count now ``congested``, their limit ``bound``, and ``waiting``
        items waiting to start (whether the limit is what holds items back: items ending together each count)."""
        held_back = self.in_flight + waiting >= self.size(bound)
        self.in_flight -= 1
        if wave == self.wave:
            self.armed = True
        if congested > self.seen:
            self.seen = congested
            if self.armed:
                self._shrink(bound)
            return
        if latency_s is None or wave != self.wave:  # failed, or sent at a level congestion has since shrunk
            return
        self.fastest_s = latency_s if self.fastest_s is None else min(self.fastest_s, latency_s)
        if held_back and latency_s <= self.tolerance * self.fastest_s and self.limit < self.cap:
            self._grow()

    def _grow(self) -> None:
        if self.slow_start:
            self.limit += 1.0
            return
        step = 1.0 / self.limit
        if self.ceiling is not None and self.ceiling - 1 <= self.limit <= self.ceiling + 1:
            step /= 2 ** min(self.strikes, 6)
        self.limit = min(self.limit + step, float(self.cap))

    def _shrink(self, bound: int | None) -> None:
        level = self.size(bound)
        self.strikes = self.strikes + 1 if self.ceiling is not None and abs(level - self.ceiling) <= 1 else 0
        self.ceiling = level
        self.limit = max(1.0, level * self.decrease)
        self.slow_start = False
        self.wave += 1
        self.armed = False
        self.decreases += 1


class _Slot:
    """One item's place in flight; the item sets ``answered`` when it got an answer (a result, not an error)."""

    def __init__(self, wave: int) -> None:
        self.wave = wave
        self.answered = False
        self.started = asyncio.get_running_loop().time()  # the loop's clock: virtual time in tests


class ItemGate:
    """Items in flight for one ``score_many``: a fixed number (``fixed``), or ``pace`` (a :class:`Pace`, carried
    over from the judge's earlier runs so that each run does not start slow again) over what ``signals`` returns
    (the layers' congestion count and in-flight limit)."""

    def __init__(self, fixed: int | None, pace: Pace | None, signals: Callable[[], tuple[int, int | None]]) -> None:
        self.fixed = fixed
        self.pace = pace
        self._signals = signals
        if self.pace is not None:
            self.pace.seen = signals()[0]  # congestion counted by earlier runs on the same providers is theirs
        self._changed = asyncio.Condition()
        self._in_flight = 0
        self._waiting = 0  # items waiting for a slot

    def _allows(self) -> bool:
        if self.pace is None:
            return self._in_flight < (self.fixed or 1)
        return self.pace.allows(self._signals()[1])

    @contextlib.asynccontextmanager
    async def slot(self) -> AsyncIterator[_Slot]:
        async with self._changed:
            self._waiting += 1
            try:
                await self._changed.wait_for(self._allows)
            finally:
                self._waiting -= 1
            self._in_flight += 1
            slot = _Slot(self.pace.admit() if self.pace is not None else 0)
        try:
            yield slot
        finally:
            if self.pace is not None:
                congested, bound = self._signals()
                latency = asyncio.get_running_loop().time() - slot.started if slot.answered else None
                self.pace.finish(slot.wave, latency, congested, bound, self._waiting)
            self._in_flight -= 1
            await self._notify()

    async def _notify(self) -> None:
        """Wake as many waiting items as may start now (more than one when the pace grew), not every one of them."""
        async with self._changed:
            if self.pace is None:
                free = (self.fixed or 1) - self._in_flight
            else:
                free = self.pace.size(self._signals()[1]) - self._in_flight
            self._changed.notify(max(free, 0))
