"""The retry budget (``retry.max_total_s``) counts attempts and back-off, not time a request spent queued in
the overload guard under the retry wrapper (``judgesdk.provider.stack.assemble``: retry over guard over adapter)."""

from __future__ import annotations

import asyncio

import pytest

from judgesdk.core.errors import RetriesExhaustedError, TransientError
from judgesdk.judging.judge_config import JudgeConfig
from judgesdk.provider.layers.breaker import OverloadConfig, OverloadGuard
from judgesdk.provider.layers.retry import RetryingProvider, RetryPolicy, exclude_from_budget
from judgesdk.provider.protocol import Capabilities, Choice, GenerateRequest, GenerateResponse, Message, find_layer
from judgesdk.provider.stack import assemble

from support.virtual_time import virtual  # the event loop on virtual time


def request(text: str) -> GenerateRequest:
    return GenerateRequest(messages=(Message(role="user", content=text),), max_tokens=4)


class Server:
    """Per request text: how many seconds each attempt takes, and whether it fails (HTTP 500)."""

    kind, model = "sim", "sim"
    capabilities = Capabilities()

    def __init__(self, script: dict[str, list[tuple[float, bool]]]) -> None:
        self.script = script
        self.calls: dict[str, int] = {}

    async def generate(self, req: GenerateRequest) -> GenerateResponse:
        text = req.messages[0].content
        self.calls[text] = self.calls.get(text, 0) + 1
        seconds, fails = self.script[text].pop(0) if self.script[text] else (0.0, False)
        await asyncio.sleep(seconds)
        if fails:
            raise TransientError("HTTP 500", status=500, provider=self.kind)
        return GenerateResponse(choices=[Choice(text=text)], provider="sim", model="sim")


def one_slot(server: Server, policy: RetryPolicy) -> RetryingProvider:
    return RetryingProvider(OverloadGuard(server, OverloadConfig(max_concurrency=1)), policy)


POLICY = dict(max_attempts=3, initial_wait_s=0.0, max_wait_s=0.0, jitter=False)


async def test_time_queued_for_a_slot_does_not_use_the_retry_budget():
    """Real time (this failed before: tenacity's stop_after_delay counted the second behind the slot)."""
    server = Server({"holder": [(1.0, False)], "queued": [(0.0, True), (0.0, False)]})
    provider = one_slot(server, RetryPolicy(max_total_s=0.5, **POLICY))
    holder = asyncio.ensure_future(provider.generate(request("holder")))
    await asyncio.sleep(0.05)  # the holder has the only slot
    response = await provider.generate(request("queued"))  # queued ~1 s, then a 500, then an answer
    assert response.choices[0].text == "queued" and server.calls["queued"] == 2
    await holder


def test_time_in_attempts_counts_and_each_call_counts_its_own_queueing():
    async def scenario() -> None:
        server = Server({"holder": [(30.0, True), (0.0, False)], "queued": [(0.0, True), (0.0, False)]})
        provider = one_slot(server, RetryPolicy(max_total_s=10.0, **POLICY))
        holder = asyncio.ensure_future(provider.generate(request("holder")))
        await asyncio.sleep(0)
        queued = asyncio.ensure_future(provider.generate(request("queued")))
        with pytest.raises(RetriesExhaustedError):
            await holder  # its 30 s attempt is retry time: past the budget, no second attempt
        assert server.calls["holder"] == 1
        assert (await queued).choices[0].text == "queued"  # its 30 s in the queue are not
        assert server.calls["queued"] == 2

    virtual(scenario())


async def test_time_waiting_for_an_open_circuit_does_not_use_the_retry_budget():
    """Real time (this failed before: the half-second wait for the circuit used up the budget)."""
    server = Server({"opener": [(0.0, True)] * 5, "waiter": [(0.0, True), (0.0, False)]})
    config = JudgeConfig(
        retry=RetryPolicy(max_total_s=0.3, **POLICY),
        overload={"failure_threshold": 5, "open_s": 0.5, "max_open_s": 0.5},  # type: ignore[arg-type]
        cache={"enabled": False},  # type: ignore[arg-type]
    )
    guard = OverloadGuard(server, config.overload)
    for _ in range(5):  # open the circuit
        with pytest.raises(TransientError):
            await guard.generate(request("opener"))
    assert guard.breaker.state == "open"
    provider = RetryingProvider(guard, config.retry)
    response = await provider.generate(request("waiter"))  # waits 0.5 s, probes (500), waits 0.5 s, answers
    assert response.choices[0].text == "waiter" and server.calls["waiter"] == 2
    assert guard.stats.waited_s >= 0.9


def test_the_stack_puts_the_guard_under_the_retry_wrapper():
    """What makes the exclusion necessary: every attempt of a retry call passes the guard."""
    provider = assemble(Server({}), JudgeConfig(cache={"enabled": False}).stack_plan())  # type: ignore[arg-type]
    retry = find_layer(provider, RetryingProvider)
    assert retry is not None and isinstance(retry.inner, OverloadGuard)


async def test_exclusion_outside_a_retry_call_does_nothing():
    exclude_from_budget(5.0)  # no retry call open: nothing to count against
