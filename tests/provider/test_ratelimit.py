"""RateLimitedProvider: in-flight bound, RPM/TPM token buckets with usage correction, AIMD back-off on 429s,
Retry-After pauses, and its place under the retry wrapper. Time is virtual (an injected clock and sleep):
no assertion depends on how fast this machine is."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterator

import pytest
from pydantic import ValidationError

from judgesdk.core.errors import RateLimitError, RetriesExhaustedError
from judgesdk.provider.layers.ratelimit import RateLimitConfig, RateLimitedProvider
from judgesdk.provider.layers.retry import RetryingProvider, RetryPolicy
from judgesdk.provider.protocol import GenerateRequest, GenerateResponse, Message, Usage
from judgesdk.provider.registry import ProviderSpec, register, unregister
from judgesdk.provider.settings import ProviderConfig
from judgesdk.provider.stack import bottom
from judgesdk.providers.scripted import FULL, ScriptedProvider


@contextlib.contextmanager
def gate_kind() -> Iterator[None]:
    """A provider kind ``gate`` whose adapter is a :class:`Gate`, registered for the block."""
    register("gate", ProviderSpec(kind="gate", build=lambda settings, options: Gate()))
    try:
        yield
    finally:
        unregister("gate")


class VirtualTime:
    """A clock that only moves when someone sleeps on it."""

    def __init__(self) -> None:
        self.now = 0.0

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.now += max(seconds, 0.0)
        await asyncio.sleep(0)


def request(text: str = "judge this", max_tokens: int = 8, n: int = 1) -> GenerateRequest:
    return GenerateRequest(messages=(Message(role="user", content=text),), max_tokens=max_tokens, n=n)


class Gate:
    """An inner provider whose calls wait until released, counting how many run at once."""

    kind, model, endpoint = "gate", "gate", "in-process"
    capabilities = FULL

    def __init__(self, usage: Usage | None = None) -> None:
        self.open = asyncio.Event()
        self.running = 0
        self.peak = 0
        self.usage = usage or Usage()

    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        self.running += 1
        self.peak = max(self.peak, self.running)
        await self.open.wait()
        self.running -= 1
        return GenerateResponse(usage=self.usage, provider=self.kind, model=self.model)

    async def aclose(self) -> None:
        return None


class RateLimited:
    """Answers 429 (optionally with Retry-After) for the first ``failures`` calls, then succeeds."""

    kind, model, endpoint = "limited", "limited", "in-process"
    capabilities = FULL

    def __init__(self, failures: int, retry_after: float | None = None) -> None:
        self.failures = failures
        self.retry_after = retry_after
        self.calls = 0

    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        self.calls += 1
        await asyncio.sleep(0)  # let concurrent callers start before anyone fails
        if self.calls <= self.failures:
            raise RateLimitError("HTTP 429", status=429, provider=self.kind, retry_after=self.retry_after)
        return GenerateResponse(usage=Usage(input_tokens=5, output_tokens=1, calls=1))

    async def aclose(self) -> None:
        return None


async def test_in_flight_requests_never_exceed_the_bound():
    inner = Gate()
    limited = RateLimitedProvider(inner, RateLimitConfig(max_concurrency=3))
    tasks = [asyncio.create_task(limited.generate(request(f"item {i}"))) for i in range(10)]
    for _ in range(5):
        await asyncio.sleep(0)
    assert inner.running == 3
    inner.open.set()
    await asyncio.gather(*tasks)
    assert inner.peak == 3 and limited.stats.max_in_flight == 3 and limited.stats.requests == 10


async def test_rpm_bucket_spaces_requests_at_the_configured_rate():
    time = VirtualTime()
    limited = RateLimitedProvider(
        ScriptedProvider(lambda r: "3"), RateLimitConfig(requests_per_minute=60, burst_s=1), clock=time.clock, sleep=time.sleep
    )
    for i in range(10):
        await limited.generate(request(f"item {i}"))
    # a bucket of one request, refilled at one per second: the first goes at once, nine more take 9 s
    assert time.now == pytest.approx(9.0)
    assert limited.stats.waited_s == pytest.approx(9.0)


async def test_tpm_estimate_is_corrected_by_actual_usage():
    time = VirtualTime()
    inner = Gate(usage=Usage(input_tokens=15, output_tokens=5))
    inner.open.set()
    config = RateLimitConfig(tokens_per_minute=600, burst_s=6, chars_per_token=4)  # 10 tokens/s, bucket of 60
    limited = RateLimitedProvider(inner, config, clock=time.clock, sleep=time.sleep)
    req = request("x" * 200, max_tokens=10)  # estimate: 200 / 4 + 10 = 60 tokens, the whole bucket
    assert limited.estimate_tokens(req) == 60
    await limited.generate(req)
    assert time.now == 0.0
    # 20 tokens were really used: 40 are refunded, so the next 60-token request waits 2 s, not 6 s
    await limited.generate(req)
    assert time.now == pytest.approx(2.0)
    assert (limited.stats.estimated_tokens, limited.stats.actual_tokens) == (120, 40)


async def test_a_request_larger_than_the_bucket_still_goes_and_leaves_debt():
    time = VirtualTime()
    inner = Gate()  # reports no usage: the estimate stands
    inner.open.set()
    limited = RateLimitedProvider(
        inner, RateLimitConfig(tokens_per_minute=60, burst_s=10), clock=time.clock, sleep=time.sleep
    )  # 1 token/s, bucket of 10
    big = request("y" * 400, max_tokens=1)  # 101 tokens: more than the bucket holds
    await limited.generate(big)
    assert time.now == 0.0  # a full bucket lets it through, 91 tokens in debt
    await limited.generate(request("z", max_tokens=1))  # 2 tokens: waits for the debt to be repaid and 2 more
    assert time.now == pytest.approx(93.0)


async def test_a_wave_of_429s_halves_once_and_successes_recover_additively():
    inner = RateLimited(failures=4)
    limited = RateLimitedProvider(inner, RateLimitConfig(max_concurrency=8, decrease=0.5, increase=0.1))
    outcomes = await asyncio.gather(*(limited.generate(request(f"i{i}")) for i in range(4)), return_exceptions=True)
    assert all(isinstance(o, RateLimitError) for o in outcomes)
    assert limited.stats.rate_limited == 4 and limited.stats.decreases == 1
    assert limited.factor == pytest.approx(0.5) and limited.concurrency_limit == 4
    for i in range(3):
        await limited.generate(request(f"ok{i}"))
    assert limited.factor == pytest.approx(0.8) and limited.concurrency_limit == 6
    inner.failures = inner.calls + 1  # the next call fails again, in a new wave: it shrinks again
    with pytest.raises(RateLimitError):
        await limited.generate(request("again"))
    assert limited.stats.decreases == 2 and limited.factor == pytest.approx(0.4)


async def test_the_factor_never_drops_below_min_factor():
    limited = RateLimitedProvider(RateLimited(failures=100), RateLimitConfig(max_concurrency=4, min_factor=0.25))
    for i in range(6):
        with pytest.raises(RateLimitError):
            await limited.generate(request(f"i{i}"))
    assert limited.factor == pytest.approx(0.25) and limited.concurrency_limit == 1


async def test_retry_after_pauses_every_new_request():
    time = VirtualTime()
    limited = RateLimitedProvider(RateLimited(failures=1, retry_after=2.5), clock=time.clock, sleep=time.sleep)
    with pytest.raises(RateLimitError):
        await limited.generate(request("first"))
    await limited.generate(request("second"))
    assert time.now == pytest.approx(2.5)


async def test_under_retry_each_attempt_passes_the_limiter():
    inner = RateLimited(failures=2)
    limited = RateLimitedProvider(inner, RateLimitConfig(max_concurrency=2))
    stack = RetryingProvider(limited, RetryPolicy(max_attempts=4, initial_wait_s=0.001, max_wait_s=0.01))
    response = await stack.generate(request())
    assert "succeeded on attempt 3" in response.notes
    assert limited.stats.requests == 3 and limited.stats.rate_limited == 2 and stack.attempts == 3

    always = RetryingProvider(RateLimitedProvider(RateLimited(failures=10)), RetryPolicy(max_attempts=2, initial_wait_s=0.001))
    with pytest.raises(RetriesExhaustedError):
        await always.generate(request())


def test_config_rejects_impossible_limits_and_none_means_no_wrapper():
    with pytest.raises(ValidationError):
        RateLimitConfig(max_concurrency=0)
    with pytest.raises(ValidationError):
        RateLimitConfig(requests_per_minute=-1)
    with pytest.raises(ValidationError):
        RateLimitConfig(decrease=1.5)
    with gate_kind():
        assert isinstance(bottom(ProviderConfig(kind="gate")), Gate)  # no limits: the bare adapter
        wrapped = bottom(ProviderConfig(kind="gate", rate_limit={}))
    assert isinstance(wrapped, RateLimitedProvider) and wrapped.kind == "gate"


async def test_n_counts_as_n_calls_only_where_the_backend_cannot_sample_n():
    from judgesdk.provider.protocol import Capabilities

    time = VirtualTime()
    single = ScriptedProvider(lambda r: "3", capabilities=Capabilities(multiple_samples=False))
    limited = RateLimitedProvider(single, RateLimitConfig(requests_per_minute=60, burst_s=1), clock=time.clock, sleep=time.sleep)
    await limited.generate(request(n=1))
    await limited.generate(request(n=3))  # three calls' worth of RPM: waits for one, leaves two in debt
    await limited.generate(request(n=1))
    assert time.now == pytest.approx(1.0 + 3.0)


async def test_a_pool_spreads_requests_over_its_members_and_keeps_one_identity():
    from judgesdk.core.errors import InputError
    from judgesdk.provider.layers.ratelimit import ProviderPool

    members = [Gate() for _ in range(3)]
    pool = ProviderPool(members)
    tasks = [asyncio.create_task(pool.generate(request(f"i{i}"))) for i in range(6)]
    for _ in range(3):
        await asyncio.sleep(0)
    assert [m.running for m in members] == [2, 2, 2]  # least busy first
    for m in members:
        m.open.set()
    await asyncio.gather(*tasks)
    assert (pool.kind, pool.model) == ("gate", "gate")
    with pytest.raises(InputError, match="share kind, model and endpoint"):
        ProviderPool([Gate(), ScriptedProvider(lambda r: "3")])
    with gate_kind():
        built = bottom(ProviderConfig(kind="gate", rate_limit={"max_concurrency": 40}))
        assert isinstance(built, RateLimitedProvider) and len(built.inner.members) == 3  # one per 16 in flight
        assert isinstance(bottom(ProviderConfig(kind="gate", rate_limit={"max_concurrency": 8})).inner, Gate)
        assert isinstance(bottom(ProviderConfig(kind="gate")), Gate)
