"""The shared limiter's accounting without Ray (issue 30, item 1): a caller that is no longer heard from loses its
permits and queued requests, so a killed worker cannot keep the account's slots. Time is a fake clock for the
owners' leases; the Ray tests (tests/distributed/test_ray_engine.py) kill a real worker."""

from __future__ import annotations

import asyncio

import pytest

from judgesdk.distributed.limiter import SharedLimiter
from judgesdk.provider.layers.ratelimit import RateLimitConfig
from judgesdk.provider.protocol import GenerateRequest, Message

REQUEST = GenerateRequest(messages=[Message(role="user", content="hi")], max_tokens=1)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize("limits", [{"requests_per_minute": 6000}, {"tokens_per_minute": 10**7}, {}], ids=["rpm", "tpm", "in-flight only"])
def test_a_silent_owners_permits_and_queued_requests_are_dropped(limits):
    async def scenario():
        clock = Clock()
        limiter = SharedLimiter(RateLimitConfig(max_concurrency=2, **limits), owner_timeout_s=5.0, clock=clock)
        held = [await limiter.acquire(REQUEST, False, "dead") for _ in range(2)]
        queued_dead = asyncio.ensure_future(limiter.acquire(REQUEST, False, "dead"))
        queued_live = asyncio.ensure_future(limiter.acquire(REQUEST, False, "live"))
        await asyncio.sleep(0.05)
        assert not queued_dead.done() and not queued_live.done() and limiter.stats()["in_flight"] == 2
        clock.now += 4.0
        limiter.renew("live")
        assert limiter.reap() == 0  # 4 s of silence: not dead yet
        clock.now += 2.0
        limiter.renew("live")  # the live owner's heartbeat
        assert limiter.reap() == 3  # the dead owner's two permits and its queued request
        live_ticket = await asyncio.wait_for(queued_live, 5)  # a slot came back: the live owner's request is granted
        with pytest.raises(Exception, match="owner was not heard from"):
            await queued_dead
        stats = limiter.stats()
        assert stats["in_flight"] == 1 and stats["reaped"] == 3
        limiter.release(live_ticket, {"input_tokens": 3, "output_tokens": 1, "calls": 1})
        limiter.release(held[0], {"input_tokens": 3, "output_tokens": 1, "calls": 1})  # a late report of a dropped permit: ignored
        await asyncio.sleep(0.05)
        assert limiter.stats()["in_flight"] == 0
        # the dead owner's slot is usable again at once: two new permits for the live owner
        again = [await asyncio.wait_for(limiter.acquire(REQUEST, False, "live"), 5) for _ in range(2)]
        assert limiter.stats()["in_flight"] == 2
        for ticket in again:
            limiter.release(ticket, None)

    asyncio.run(scenario())


def test_a_live_owner_keeps_a_long_call():
    """A call longer than the owner timeout keeps its permit while its owner renews."""

    async def scenario():
        clock = Clock()
        limiter = SharedLimiter(RateLimitConfig(max_concurrency=1), owner_timeout_s=5.0, clock=clock)
        ticket = await limiter.acquire(REQUEST, False, "slow")
        for _ in range(10):  # 60 s of a running call, with a heartbeat every 6 s... of fake time, renewed each step
            clock.now += 4.0
            limiter.renew("slow")
            assert limiter.reap() == 0
        assert limiter.stats()["in_flight"] == 1
        limiter.release(ticket, {"input_tokens": 1, "output_tokens": 1, "calls": 1})

    asyncio.run(scenario())


class _Method:
    def __init__(self, answer) -> None:
        self.answer, self.calls = answer, []

    def remote(self, *args):
        self.calls.append(args)
        return self.answer(*args)


def test_a_caller_wrongly_taken_for_dead_asks_again_instead_of_failing():
    """An owner silent for owner_timeout_s (a long pause, a loaded machine) loses its queued requests; the caller
    that gets that answer is alive by definition, so RayPermits asks again rather than failing the item."""
    from judgesdk.distributed.limiter import RayPermits, _Dropped

    answers = iter([_Dropped("permit 0 was dropped: its owner was not heard from for 5 s"), 7])

    async def acquire(*args):
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    class Actor:
        def __init__(self) -> None:
            self.acquire = _Method(acquire)
            self.renew = _Method(lambda owner: None)

    actor = Actor()
    permits = RayPermits(actor, heartbeat_s=60)
    try:
        assert asyncio.run(permits.acquire(REQUEST, False)) == 7
        assert len(actor.acquire.calls) == 2 and {call[2] for call in actor.acquire.calls} == {permits.owner}
    finally:
        permits.close()
