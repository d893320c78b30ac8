"""OverloadGuard: adaptive concurrency on timeouts and overload answers, a circuit breaker whose calls wait for
a probe instead of failing, the slot a timed-out call keeps, and what they do together against a simulated
one-slot server (the llama.cpp server's shape) under the whole stack, retry included.

Every test runs on :class:`VirtualLoop`, whose clock jumps to the next timer: sleeps, timeouts and back-off
cost no real time and every run takes the same course, so no assertion depends on this machine's speed.
"""

from __future__ import annotations

import asyncio
from typing import Any

import httpx
import pytest
from pydantic import ValidationError

from judgesdk.core.errors import AuthError, CircuitOpenError, ProviderError, ProviderTimeoutError, RateLimitError, TransientError
from judgesdk.judging.judge_config import JudgeConfig
from judgesdk.provider.layers.answers import AnswerCheck
from judgesdk.provider.layers.breaker import AdaptiveLimit, OverloadConfig, OverloadGuard, is_timeout
from judgesdk.provider.protocol import Capabilities, Choice, GenerateRequest, GenerateResponse, Message, find_layer
from judgesdk.provider.stack import assemble

from support.virtual_time import virtual


def request(text: str = "judge this") -> GenerateRequest:
    return GenerateRequest(messages=(Message(role="user", content=text),), max_tokens=4)


def timeout_error() -> TransientError:
    """What an adapter raises for its SDK's timeout (``judgesdk.providers._sdk.classify``)."""
    return ProviderTimeoutError("sim: APITimeoutError: Request timed out", provider="sim")


OK = GenerateResponse(choices=[Choice(text="3")], provider="sim", model="sim")


Outcome = BaseException | float | tuple[float, BaseException]


def timed_out(after_s: float = 2.0) -> tuple[float, BaseException]:
    """A client timeout: nothing for ``after_s`` seconds, then the adapter's error."""
    return (after_s, timeout_error())


class Scripted:
    """Answers from a list of outcomes (seconds to take before answering, an exception to raise at once, or
    both: raise after that long); the last one repeats. Records when each call arrived and how many ran at once."""

    kind, model, endpoint = "sim", "sim", "loop"
    capabilities = Capabilities()

    def __init__(self, *outcomes: Outcome) -> None:
        self.outcomes = list(outcomes) or [0.0]
        self.arrivals: list[float] = []
        self.running = 0
        self.peak = 0

    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        self.arrivals.append(asyncio.get_running_loop().time())
        outcome = self.outcomes[min(len(self.arrivals) - 1, len(self.outcomes) - 1)]
        self.running += 1
        self.peak = max(self.peak, self.running)
        if isinstance(outcome, tuple):
            seconds, error = outcome
        else:
            seconds, error = (outcome, None) if isinstance(outcome, float) else (0.0, outcome)
        try:
            await asyncio.sleep(seconds)
            if error is not None:
                raise error
            return OK
        finally:
            self.running -= 1

    async def aclose(self) -> None:
        return None


class OneSlotServer:
    """Computes one request at a time, ``service_s`` each, in arrival order, like the llama.cpp server; its
    client gives up after ``timeout_s``. ``finishes_abandoned``: a request whose client gave up is computed
    anyway (behind a proxy that does not pass the disconnect on; directly, the llama.cpp server skips those
    still queued and finishes the one it is computing)."""

    kind, model, endpoint = "one-slot", "sim", "loop"
    capabilities = Capabilities()

    def __init__(self, service_s: float = 0.8, timeout_s: float = 2.0, *, finishes_abandoned: bool = True) -> None:
        self.service_s, self.timeout_s, self.finishes_abandoned = service_s, timeout_s, finishes_abandoned
        self.calls = 0
        self._slot = asyncio.Lock()
        self._work: set[asyncio.Task[None]] = set()

    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        self.calls += 1
        abandoned = asyncio.Event()
        job = asyncio.ensure_future(self._compute(abandoned))
        self._work.add(job)
        job.add_done_callback(self._work.discard)
        try:
            await asyncio.wait_for(asyncio.shield(job), self.timeout_s)
        except TimeoutError as exc:
            abandoned.set()
            raise ProviderTimeoutError("one-slot: APITimeoutError: Request timed out", provider=self.kind) from exc
        return OK

    async def _compute(self, abandoned: asyncio.Event) -> None:
        async with self._slot:
            if abandoned.is_set() and not self.finishes_abandoned:
                return
            await asyncio.sleep(self.service_s)

    async def aclose(self) -> None:
        for job in list(self._work):
            job.cancel()


async def settle() -> None:
    for _ in range(20):
        await asyncio.sleep(0)


# -- adaptive concurrency ------------------------------------------------------------------------------


def test_nothing_is_limited_before_the_first_failure_and_a_timeout_wave_halves_once():
    async def scenario() -> None:
        inner = Scripted(*([1.0] * 16), *([timed_out()] * 8))
        guard = OverloadGuard(inner, OverloadConfig(failure_threshold=100))  # the circuit stays closed
        await asyncio.gather(*(guard.generate(request(f"i{i}")) for i in range(16)))
        assert inner.peak == 16 and guard.limit.limit is None
        outcomes = await asyncio.gather(*(guard.generate(request(f"t{i}")) for i in range(8)), return_exceptions=True)
        assert all(isinstance(o, TransientError) for o in outcomes)
        assert guard.stats.timeouts == 8 and guard.stats.decreases == 1 and guard.limit.limit == 4.0

    virtual(scenario())


def test_after_a_decrease_requests_in_flight_stay_under_the_limit():
    async def scenario() -> None:
        inner = Scripted(*([timed_out()] * 4), 1.5)  # too slow for the limit to grow back within the 2 s timeout
        guard = OverloadGuard(inner, OverloadConfig(failure_threshold=100))
        await asyncio.gather(*(guard.generate(request(f"t{i}")) for i in range(4)), return_exceptions=True)
        assert guard.limit.limit == 2.0
        inner.peak = 0
        await asyncio.gather(*(guard.generate(request(f"i{i}")) for i in range(10)))
        assert inner.peak == 2

    virtual(scenario())


def test_the_limit_grows_by_one_per_window_while_the_projected_latency_fits_the_timeout():
    fast = AdaptiveLimit(OverloadConfig(grow_below=0.8))
    fast.limit, fast.timeout_s = 1.0, 2.0
    fast.grow(0, latency_s=0.5, in_flight_at_send=1)  # projected at 2 in flight: 1.0 s, under 0.8 × 2 s
    assert fast.limit == 2.0
    fast.grow(0, latency_s=0.5, in_flight_at_send=1)  # the limit (2) held nothing back: no evidence for 3
    assert fast.limit == 2.0
    fast.grow(0, latency_s=0.5, in_flight_at_send=2)
    assert fast.limit == 2.5  # additive: one per limit's worth of successes

    slow = AdaptiveLimit(OverloadConfig(grow_below=0.8))
    slow.limit, slow.timeout_s = 1.0, 2.0
    for _ in range(20):
        slow.grow(0, latency_s=1.0, in_flight_at_send=1)  # two in flight would take 2.0 s each: past 1.6 s
    assert slow.limit == 1.0


def test_once_the_circuit_closes_the_limit_regains_half_its_old_level_one_per_success():
    limit = AdaptiveLimit(OverloadConfig(decrease=0.5))
    limit.timeout_s = 2.0
    limit.drop(in_flight=8)
    assert limit.limit == 1.0
    for number in range(3):
        limit.grow(number, latency_s=0.1, in_flight_at_send=int(limit.limit))
    assert limit.limit == 4.0  # half of the 8 in flight when it opened, one per success
    limit.grow(3, latency_s=0.1, in_flight_at_send=4)
    assert limit.limit == 4.25  # then one per window


def test_a_timeout_while_later_requests_are_answered_fast_is_a_lost_request_not_overload():
    async def scenario() -> None:
        inner = Scripted(timed_out(2.0), 0.1, 0.1, 0.1, timed_out(2.0), 1.8, 1.8)
        guard = OverloadGuard(inner, OverloadConfig(failure_threshold=100))
        lost = asyncio.ensure_future(guard.generate(request("lost")))
        await asyncio.sleep(0.5)
        await asyncio.gather(*(guard.generate(request(f"fast{i}")) for i in range(3)))
        with pytest.raises(TransientError):
            await lost
        assert guard.stats.timeouts == 1 and guard.limit.limit is None  # the others came back in 0.1 s
        slow = asyncio.ensure_future(guard.generate(request("slow")))
        await asyncio.sleep(0.5)
        others = asyncio.gather(*(guard.generate(request(f"slow{i}")) for i in range(2)))
        with pytest.raises(TransientError):
            await slow
        assert guard.stats.timeouts == 2 and guard.limit.limit == 1.5  # nothing came back fast: overload, 3 → 1.5
        await others

    virtual(scenario())


def test_429_500_and_permanent_errors_never_shrink_the_limit():
    async def scenario() -> None:
        errors = [
            RateLimitError("429", status=429, retry_after=1.0), TransientError("500", status=500), AuthError("401", status=401)
        ]
        guard = OverloadGuard(Scripted(*errors, *errors, *errors), OverloadConfig(failure_threshold=5))
        for _ in range(3):
            for _ in errors:
                with pytest.raises((TransientError, AuthError)):
                    await guard.generate(request())
        assert guard.limit.limit is None and guard.stats.decreases == 0 and guard.breaker.state == "closed"

    virtual(scenario())


def test_429s_overload_answers_and_overload_timeouts_count_as_congestion_for_the_item_pace():
    """The judge's item pace (judgesdk.judging.pace.Pace) shrinks on ``stats.congested``: a 429 and a 503 count,
    a 500 and a permanent error do not (the server is failing or the request is wrong, not too many in flight)."""

    async def scenario() -> None:
        errors = [
            RateLimitError("429", status=429), TransientError("503", status=503), TransientError("500", status=500),
            AuthError("401", status=401),
        ]  # fmt: skip
        guard = OverloadGuard(Scripted(*errors), OverloadConfig(failure_threshold=100))
        for _ in errors:
            with pytest.raises((TransientError, AuthError)):
                await guard.generate(request())
        assert guard.stats.congested == 2

    virtual(scenario())


def test_a_timed_out_call_keeps_its_slot_for_about_one_request():
    async def scenario() -> None:
        inner = Scripted(0.6, 0.6, timed_out(), 0.6)
        guard = OverloadGuard(inner, OverloadConfig(min_concurrency=1, max_concurrency=1))
        for text in ("a", "b"):
            await guard.generate(request(text))
        first = asyncio.ensure_future(guard.generate(request("c")))
        await settle()
        second = asyncio.ensure_future(guard.generate(request("d")))
        with pytest.raises(TransientError):
            await first
        await second
        # the server keeps computing the timed-out call: the next goes one latency (0.6 s) after the timeout
        assert inner.arrivals[3] - inner.arrivals[2] == pytest.approx(2.0 + 0.6)
        assert guard.stats.held_s == pytest.approx(0.6)

    virtual(scenario())


def test_timeouts_are_known_by_their_type_not_by_names():
    assert is_timeout(timeout_error())
    # the adapters type their SDK's timeouts (tests/provider/test_timeout_errors.py); the guard reads no names or causes
    try:
        raise httpx.ReadTimeout("slow")
    except httpx.ReadTimeout as exc:
        untyped = TransientError("openai: APITimeoutError")
        untyped.__cause__ = exc
        assert not is_timeout(untyped)
    reset = TransientError("openai: APIConnectionError")
    reset.__cause__ = ConnectionResetError("reset by peer")
    assert not is_timeout(reset) and not is_timeout(TransientError("503", status=503))


# -- circuit breaker -------------------------------------------------------------------------------------


def test_an_open_circuit_makes_calls_wait_for_one_probe_then_lets_them_go():
    async def scenario() -> None:
        inner = Scripted(*([TransientError("500", status=500)] * 5), 0.1)
        guard = OverloadGuard(inner, OverloadConfig(failure_threshold=5, open_s=1.0))
        for _ in range(5):
            with pytest.raises(TransientError):
                await guard.generate(request())
        assert guard.breaker.state == "open" and guard.stats.opened == 1
        opened_at = asyncio.get_running_loop().time()
        waiting = [asyncio.ensure_future(guard.generate(request(f"w{i}"))) for i in range(6)]
        await settle()
        assert len(inner.arrivals) == 5  # nobody went while the circuit was open
        results = await asyncio.gather(*waiting)  # none failed: they waited
        assert all(r is OK for r in results) and guard.stats.probes == 1
        assert inner.arrivals[5] == pytest.approx(opened_at + 1.0)  # the probe, alone, after open_s
        assert min(inner.arrivals[6:]) >= inner.arrivals[5] + 0.1  # the rest after the probe's answer
        assert guard.breaker.state == "closed"

    virtual(scenario())


def test_a_failed_probe_reopens_the_circuit_for_twice_as_long():
    async def scenario() -> None:
        inner = Scripted(*([timed_out(2.0)] * 7), 0.0)
        guard = OverloadGuard(inner, OverloadConfig(failure_threshold=5, open_s=1.0, hold_after_timeout=False))
        for _ in range(5):
            with pytest.raises(TransientError):
                await guard.generate(request())
        opened_at = asyncio.get_running_loop().time()
        for _ in range(2):
            with pytest.raises(TransientError):  # the caller's own attempt was the probe, and it failed
                await guard.generate(request())
        assert await guard.generate(request()) is OK
        probes = [t - opened_at for t in inner.arrivals[5:]]
        assert probes == pytest.approx([1.0, 5.0, 11.0])  # open 1 s; each probe times out (2 s), then 2 s, then 4 s
        assert guard.stats.probes == 3 and guard.stats.opened == 3 and guard.breaker.open_s == 1.0

    virtual(scenario())


def test_a_call_fails_only_after_waiting_max_wait_s():
    async def scenario() -> None:
        inner = Scripted(TransientError("502", status=502))
        guard = OverloadGuard(inner, OverloadConfig(failure_threshold=2, open_s=30.0, max_open_s=30.0, max_wait_s=10.0))
        for _ in range(2):
            with pytest.raises(TransientError):
                await guard.generate(request())
        started = asyncio.get_running_loop().time()
        with pytest.raises(CircuitOpenError, match="did not recover in 10s"):
            await guard.generate(request())
        assert asyncio.get_running_loop().time() - started == pytest.approx(10.0) and len(inner.arrivals) == 2

    virtual(scenario())


def test_a_cancelled_probe_hands_its_turn_to_a_waiting_call():
    async def scenario() -> None:
        inner = Scripted(TransientError("503", status=503), 60.0, 0.0)
        guard = OverloadGuard(inner, OverloadConfig(failure_threshold=1, open_s=1.0))
        with pytest.raises(TransientError):
            await guard.generate(request())
        probe = asyncio.ensure_future(guard.generate(request("probe")))
        waiter = asyncio.ensure_future(guard.generate(request("waiter")))
        await asyncio.sleep(1.5)
        assert guard.breaker.state == "half_open" and len(inner.arrivals) == 2
        probe.cancel()
        assert await waiter is OK and guard.breaker.state == "closed" and guard.stats.probes == 2

    virtual(scenario())


# -- together, under the whole stack -------------------------------------------------------------------


def run_overloaded(server: OneSlotServer, overload: dict[str, Any], items: int = 50, concurrency: int = 16) -> tuple[int, int]:
    """``items`` different requests, ``concurrency`` at a time, through ``assemble()`` (retry with its default
    attempts, no jitter): (completed, calls the server received)."""

    async def scenario() -> tuple[int, int]:
        settings = {"cache": {"enabled": False}, "retry": {"jitter": False}, "overload": overload}
        config = JudgeConfig.model_validate(settings)
        provider = assemble(server, config.stack_plan())
        gate = asyncio.Semaphore(concurrency)

        async def one(i: int) -> bool:
            async with gate:
                try:
                    await provider.generate(request(f"item {i}"))
                    return True
                except ProviderError:  # retries exhausted, or the circuit stayed open
                    return False

        done = await asyncio.gather(*(one(i) for i in range(items)))
        await server.aclose()
        return sum(done), server.calls

    return virtual(scenario())


@pytest.mark.parametrize("finishes_abandoned", [True, False], ids=["abandoned-computed", "abandoned-skipped"])
def test_an_overloaded_one_slot_server_completes_its_items_with_at_most_two_calls_each(finishes_abandoned):
    completed, calls = run_overloaded(OneSlotServer(0.8, 2.0, finishes_abandoned=finishes_abandoned), {})
    assert completed >= 48 and calls <= 100


@pytest.mark.parametrize("finishes_abandoned", [True, False], ids=["abandoned-computed", "abandoned-skipped"])
def test_without_the_guard_the_same_server_is_stormed(finishes_abandoned):
    server = OneSlotServer(0.8, 2.0, finishes_abandoned=finishes_abandoned)
    completed, calls = run_overloaded(server, {"enabled": False})
    assert calls > 100 and completed < 48


def test_the_guard_is_in_the_default_stack_and_configurable():
    sim = Scripted()
    guard = find_layer(assemble(sim, JudgeConfig(cache={"enabled": False}).stack_plan()), OverloadGuard)
    # above the answer check, which sits directly on the adapter (a malformed 200 counts as a failure)
    assert guard is not None and isinstance(guard.inner, AnswerCheck) and guard.inner.inner is sim and guard.config.enabled
    off = JudgeConfig(cache={"enabled": False}, overload={"enabled": False})
    assert find_layer(assemble(sim, off.stack_plan()), OverloadGuard) is None
    for bad in ({"decrease": 1.0}, {"failure_threshold": 0}, {"max_wait_s": 0}, {"unknown": 1}):
        with pytest.raises(ValidationError):
            OverloadConfig.model_validate(bad)
