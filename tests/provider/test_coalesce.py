"""CoalescingProvider: identical concurrent requests become one call, with or without the disk cache."""

from __future__ import annotations

import asyncio

import pytest

from judgesdk.core.errors import TransientError
from judgesdk.judging.judge_config import load_config
from judgesdk.provider.layers.coalesce import CoalescingProvider
from judgesdk.provider.protocol import GenerateRequest, Message
from judgesdk.provider.stack import assemble
from judgesdk.providers.scripted import ScriptedProvider

REQUEST = GenerateRequest(messages=(Message(role="user", content="hello"),))


class Slow(ScriptedProvider):
    """Answers after a pause, so concurrent callers overlap; optionally fails the first call."""

    def __init__(self, fail_first: bool = False) -> None:
        super().__init__(lambda r: "answer")
        self.fail_first = fail_first

    async def generate(self, request):
        await asyncio.sleep(0.02)
        if self.fail_first:
            self.fail_first = False
            self.calls.append(request)
            raise TransientError("HTTP 500", status=500, provider=self.kind)
        return await super().generate(request)


async def test_identical_requests_in_flight_share_one_call():
    inner = Slow()
    provider = CoalescingProvider(inner)
    results = await asyncio.gather(*(provider.generate(REQUEST) for _ in range(5)))
    assert len(inner.calls) == 1 and provider.coalesced == 4
    assert all(r.choices[0].text == "answer" for r in results)


async def test_different_samples_and_sequential_repeats_are_separate_calls():
    inner = Slow()
    provider = CoalescingProvider(inner)
    samples = [REQUEST.model_copy(update={"sample_index": i, "temperature": 1.0}) for i in range(3)]
    await asyncio.gather(*(provider.generate(s) for s in samples))
    assert len(inner.calls) == 3 and provider.coalesced == 0
    await provider.generate(REQUEST)
    await provider.generate(REQUEST)  # not concurrent: the first finished, nothing to share
    assert len(inner.calls) == 5


async def test_a_failure_reaches_every_waiter_and_is_not_remembered():
    inner = Slow(fail_first=True)
    provider = CoalescingProvider(inner)
    outcomes = await asyncio.gather(*(provider.generate(REQUEST) for _ in range(3)), return_exceptions=True)
    assert all(isinstance(o, TransientError) for o in outcomes) and len(inner.calls) == 1
    assert (await provider.generate(REQUEST)).choices[0].text == "answer"


@pytest.mark.parametrize("cache_enabled", [True, False])
async def test_the_config_stack_coalesces_with_and_without_the_cache(tmp_path, cache_enabled):
    inner = Slow()
    provider = assemble(inner, load_config({"cache": {"enabled": cache_enabled, "directory": str(tmp_path)}}).stack_plan())
    await asyncio.gather(*(provider.generate(REQUEST) for _ in range(4)))
    assert len(inner.calls) == 1
    again = await provider.generate(REQUEST)
    assert again.cached is cache_enabled and len(inner.calls) == (1 if cache_enabled else 2)
