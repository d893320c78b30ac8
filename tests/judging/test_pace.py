"""The judge's item pace (issue 46, item 1): with no concurrency set, the items in flight follow the provider.

Unit tests of :class:`Pace`'s logic (no clock), then the judge over a real stack (coalescing, retry, overload
guard) on virtual time (tests/support/virtual_time.py), so that what the layers learn and what the pace does with it
take the same course on every machine; the loopback-server runs are in test_pace_loopback.py.
"""

from __future__ import annotations

import asyncio

import pytest

from judgesdk.core import InputError, RateLimitError
from judgesdk.judging import Judge, JudgeConfig, load_config
from judgesdk.judging.pace import PACE_CAP, Pace
from judgesdk.provider import (
    GenerateRequest,
    GenerateResponse,
    OverloadConfig,
    OverloadGuard,
    RetryPolicy,
    StackPlan,
    WrapperProvider,
    assemble,
    provider_spec,
)
from judgesdk.providers.scripted import ScriptedProvider, ScriptedReply

from support.virtual_time import virtual

# -- the logic -------------------------------------------------------------------------------------


def a_round(pace: Pace, latency: float = 1.0, congested: int = 0, bound: int | None = None) -> int:
    """Admit as many items as the pace allows, then finish them all together (more items waiting); returns how
    many went."""
    waves = []
    while pace.allows(bound):
        waves.append(pace.admit())
    for wave in waves:
        pace.finish(wave, latency, congested, bound, waiting=1000)
    return len(waves)


def test_the_pace_doubles_each_round_until_its_cap():
    pace = Pace(start=4, cap=64)
    assert [a_round(pace) for _ in range(6)] == [4, 8, 16, 32, 64, 64]
    assert pace.limit == PACE_CAP == 64


def test_the_pace_does_not_grow_when_latency_does_not_hold():
    pace = Pace(start=4, tolerance=2.0)
    a_round(pace, latency=1.0)
    assert pace.size() == 8
    a_round(pace, latency=2.5)  # more in flight made every item slower: the client or the server is saturated
    assert pace.size() == 8
    a_round(pace, latency=1.9)
    assert pace.size() == 16


def test_the_pace_grows_only_while_it_holds_items_back():
    pace = Pace(start=8)
    for _ in range(20):  # one item at a time: the limit of 8 never kept anything waiting
        pace.finish(pace.admit(), 1.0, 0, waiting=0)
    assert pace.size() == 8
    waves = [pace.admit() for _ in range(8)]
    for wave in waves:  # 8 in flight, none waiting: the first to end was held back by the limit, the others not
        pace.finish(wave, 1.0, 0, waiting=0)
    assert pace.limit == 9


def test_a_failed_item_says_nothing_about_the_pace():
    pace = Pace(start=4)
    waves = [pace.admit() for _ in range(4)]
    for wave in waves:
        pace.finish(wave, None, 0)
    assert pace.size() == 4 and pace.in_flight == 0


def test_congestion_halves_the_pace_once_per_wave():
    pace = Pace(start=16)
    waves = [pace.admit() for _ in range(16)]
    pace.finish(waves[0], 1.0, congested=1)
    assert pace.size() == 8 and not pace.slow_start
    for count, wave in enumerate(waves[1:], start=2):  # the rest of the old wave: their 429s were the old level's
        pace.finish(wave, 1.0, congested=count)
    assert pace.size() == 8 and pace.decreases == 1
    new = [pace.admit() for _ in range(8)]
    pace.finish(new[0], 1.0, congested=17)  # an item sent at the new level finished: the wave has turned over
    pace.finish(new[1], 1.0, congested=18)
    assert pace.size() == 4 and pace.decreases == 2


def test_after_congestion_the_pace_grows_by_one_per_window():
    pace = Pace(start=16)
    a_round(pace, congested=1)  # 16 -> 8
    assert pace.size() == 8
    a_round(pace, congested=1)  # 8 answered: +1/limit each, about one more
    assert 8.9 < pace.limit < 9.0


def test_a_level_congested_again_is_probed_ever_more_rarely():
    pace = Pace(start=9)
    seen = 0
    rounds_to_reach_9 = []
    for _ in range(3):
        seen += 1
        a_round(pace, congested=seen)  # congested at 9: down to 4.5
        rounds = 0
        while pace.size() < 9:
            a_round(pace, congested=seen)
            rounds += 1
        rounds_to_reach_9.append(rounds)
    assert pace.strikes == 2
    assert rounds_to_reach_9[0] < rounds_to_reach_9[1] < rounds_to_reach_9[2]


def test_the_layers_bound_caps_the_pace():
    pace = Pace(start=4)
    for _ in range(4):
        a_round(pace, bound=6)
    assert pace.size(bound=6) == 6
    assert pace.size() > 6  # the pace itself grew; a guard's or rate limit's learnt limit holds it


def test_a_pace_refuses_nonsense():
    with pytest.raises(InputError):
        Pace(start=0)
    with pytest.raises(InputError):
        Pace(start=8, cap=4)
    with pytest.raises(InputError):
        Pace(decrease=1.0)


# -- who gets a pace -------------------------------------------------------------------------------


def test_an_explicit_concurrency_is_a_fixed_limit_and_unset_is_none(monkeypatch):
    monkeypatch.delenv("JUDGESDK_CONCURRENCY", raising=False)
    assert JudgeConfig().fixed_concurrency() is None
    assert JudgeConfig(concurrency=4).fixed_concurrency() == 4
    assert load_config({"concurrency": 12}).fixed_concurrency() == 12
    assert load_config(JudgeConfig()).fixed_concurrency() is None  # a config object passed on stays unset
    assert load_config(JudgeConfig(concurrency=4)).fixed_concurrency() == 4
    monkeypatch.setenv("JUDGESDK_CONCURRENCY", "7")
    assert load_config({}).fixed_concurrency() == 7


def test_in_process_kinds_declare_their_concurrency_and_hosted_ones_follow_the_pace():
    assert provider_spec("scripted").default_concurrency == 4
    assert provider_spec("local").default_concurrency == 4
    assert provider_spec("openai").default_concurrency is None


# -- the judge over a real stack, on virtual time -------------------------------------------------


class QuotaProvider(WrapperProvider):
    """A hosted API as the stack sees it: answers after ``latency`` seconds, or at once with a 429 when ``quota``
    requests are already being answered (0: no quota). Counts every request and the most answered at once."""

    def __init__(self, latency: float = 0.2, quota: int = 0) -> None:
        super().__init__(ScriptedProvider(lambda r: ScriptedReply(label_probs={"3": 0.2, "4": 0.3, "5": 0.5})))
        self.latency, self.quota = latency, quota
        self.requests = self.rejected = self.in_flight = self.most = 0

    @property
    def kind(self) -> str:
        return "quota-test"  # a kind the registry does not know: a hosted API of one's own

    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        self.requests += 1
        if self.quota and self.in_flight >= self.quota:
            self.rejected += 1
            raise RateLimitError("429 too many requests in flight", status=429, provider=self.kind)
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        try:
            await asyncio.sleep(self.latency)
            return await self.inner.generate(request)
        finally:
            self.in_flight -= 1


def judged(
    api: QuotaProvider, n: int, concurrency: int | None = None, judge: Judge | None = None, tag: str = ""
) -> Judge:
    """``n`` items judged by geval through a stack over ``api`` (a new judge, or ``judge`` again), on virtual time."""
    if judge is None:
        stack = assemble(api, StackPlan(retry=RetryPolicy(jitter=False), overload=OverloadConfig()))
        judge = Judge(stack, method="geval", concurrency=concurrency)
    items = [{"output": f"Summary {tag}{i}: the council approved the park.", "source": "The council met."}
             for i in range(n)]
    results = virtual(judge.ascore_many(items, criterion="coherence"))
    assert [r.status for r in results] == ["ok"] * n
    return judge


def test_unset_concurrency_grows_to_the_cap_against_a_fast_api():
    api = QuotaProvider(latency=0.2)
    judged(api, 400)
    assert api.most == PACE_CAP
    assert api.requests == 400


def test_an_explicit_concurrency_stays_fixed():
    api = QuotaProvider(latency=0.2)
    judged(api, 100, concurrency=6)
    assert api.most == 6


def test_a_kind_that_declares_its_concurrency_keeps_it():
    scripted = ScriptedProvider(lambda r: ScriptedReply(label_probs={"4": 0.5, "5": 0.5}))
    in_flight = most = 0
    original = scripted.generate

    async def slow(request: GenerateRequest) -> GenerateResponse:
        nonlocal in_flight, most
        in_flight += 1
        most = max(most, in_flight)
        await asyncio.sleep(0.2)
        in_flight -= 1
        return await original(request)

    scripted.generate = slow  # type: ignore[method-assign]
    judge = Judge(scripted, method="geval")
    items = [{"output": f"Summary {i}.", "source": "The council met."} for i in range(50)]
    virtual(judge.ascore_many(items, criterion="coherence"))
    assert most == 4


def test_a_quota_of_8_in_flight_costs_at_most_a_tenth_more_requests():
    api = QuotaProvider(latency=0.2, quota=8)
    judge = judged(api, 200)
    assert api.requests <= 1.1 * 200, (api.requests, api.rejected)
    assert api.rejected > 0  # the pace did look for more than 8 (else this test would prove nothing)
    guard = judge.provider(0)
    while not isinstance(guard, OverloadGuard):
        guard = guard.inner  # type: ignore[attr-defined]
    assert guard.stats.congested == api.rejected


def test_a_second_run_on_the_same_judge_starts_at_the_pace_the_first_learnt():
    api = QuotaProvider(latency=0.2)
    judge = judged(api, 400)
    api.most = 0
    judged(api, 64, judge=judge, tag="again ")
    assert api.most == 64  # a fresh pace would have sent 4, 8, 16, then 32 at most
