"""Usage totals, prices from LiteLLM's bundled map (offline), and a budget cap that stops a run cleanly."""

from __future__ import annotations

import asyncio
import json

import pytest
from pydantic import ValidationError

from judgesdk.core.errors import BudgetExceededError, ConfigError
from judgesdk.core.types import Criterion, JudgeResult
from judgesdk.gate import evaluate_gates
from judgesdk.judging.judge_config import load_config
from judgesdk.judging.runners import budgeted_judge, score_within_budget
from judgesdk.provider.layers.budget import Budget, BudgetedProvider, BudgetMeter
from judgesdk.provider.prices import CostModel, price_for, summarize_usage
from judgesdk.provider.protocol import GenerateRequest, GenerateResponse, Message, Usage
from judgesdk.providers.scripted import ScriptedProvider

from support.gates import gate, judged_config, scripted_rule


def res(provider: str, model: str, inp: int, out: int, cached: bool = False) -> JudgeResult:
    return JudgeResult(
        score=3.0, status="ok", criterion="q", method="geval/exact", provider=provider, model=model, cached=cached,
        usage=Usage(input_tokens=inp, output_tokens=out, calls=1),
    )  # fmt: skip


def test_price_from_litellms_bundled_map_offline():
    price, note = price_for("openai", "gpt-4o-mini")
    assert price is not None and price.input > 0 and price.output > price.input and "gpt-4o-mini" in note
    routed, _ = price_for("litellm", "openai/gpt-4o-mini")
    assert routed is not None and routed.input == price.input


def test_unknown_and_local_models_have_no_price_and_say_why():
    price, note = price_for("openai", "gemma-on-my-laptop")
    assert price is None and "not in LiteLLM's bundled price map" in note
    price, note = price_for("local", "gemma3-270m-q4_k_m")
    assert price is None and "no per-token price" in note
    price, note = price_for("local", "x", CostModel(usd_per_million_input=1.0, usd_per_million_output=2.0))
    assert price is not None and price.input == pytest.approx(1e-6) and note == "configured prices"


def test_anthropic_prompt_cache_writes_and_reads_are_priced_as_billed():
    usage = Usage(input_tokens=1000, output_tokens=10, cached_input_tokens=600, cache_write_input_tokens=300, calls=1)
    price, _ = price_for("anthropic", "claude-sonnet-4-5")
    assert price is not None and price.cache_write_input is not None and price.cached_input is not None
    assert price.cache_write_input == pytest.approx(1.25 * price.input) and price.cached_input == pytest.approx(0.1 * price.input)
    expected = 100 * price.input + 600 * price.cached_input + 300 * price.cache_write_input + 10 * price.output
    assert price.cost(usage) == pytest.approx(expected)
    assert price.cost(usage) > price.cost(usage.model_copy(update={"cache_write_input_tokens": 0}))


def test_cache_prices_come_from_the_map_or_anthropics_multipliers(monkeypatch):
    from judgesdk.provider import prices as cost

    table = {
        "claude-x": {"input_cost_per_token": 1e-6, "output_cost_per_token": 5e-6, "litellm_provider": "anthropic",
                     "cache_creation_input_token_cost": 2e-6, "cache_read_input_token_cost": 3e-7},
        "claude-bare": {"input_cost_per_token": 1e-6, "output_cost_per_token": 5e-6, "litellm_provider": "anthropic"},
        "gpt-bare": {"input_cost_per_token": 1e-6, "output_cost_per_token": 5e-6, "litellm_provider": "openai"},
    }  # fmt: skip
    monkeypatch.setattr(cost, "_litellm_price_map", lambda: table)
    mapped, _ = price_for("anthropic", "claude-x")
    assert (mapped.cache_write_input, mapped.cached_input) == (2e-6, 3e-7)  # the map's own prices win
    bare, _ = price_for("anthropic", "claude-bare")
    assert bare.cache_write_input == pytest.approx(1.25e-6) and bare.cached_input == pytest.approx(1e-7)
    routed, _ = price_for("litellm", "anthropic/claude-bare")  # the entry's provider, not the adapter, decides
    assert routed.cache_write_input == pytest.approx(1.25e-6)
    other, _ = price_for("openai", "gpt-bare")
    assert other.cache_write_input is None and other.cached_input is None
    written = Usage(input_tokens=100, cache_write_input_tokens=100)
    assert other.cost(written) == pytest.approx(100e-6) and bare.cost(written) == pytest.approx(125e-6)


def test_configured_prices_charge_anthropic_cache_writes_at_one_and_a_quarter_input():
    prices = CostModel(usd_per_million_input=4.0, usd_per_million_output=20.0, usd_per_million_cached_input=0.4)
    usage = Usage(input_tokens=1000, cached_input_tokens=500, cache_write_input_tokens=400)
    claude, _ = price_for("anthropic", "claude-anything", prices)
    assert claude.cost(usage) == pytest.approx((100 * 4.0 + 500 * 0.4 + 400 * 5.0) / 1e6)
    openai_price, _ = price_for("openai", "gpt-anything", prices)
    assert openai_price.cost(usage) == pytest.approx((500 * 4.0 + 500 * 0.4) / 1e6)
    report = summarize_usage(
        [JudgeResult(score=3.0, status="ok", criterion="q", method="geval/exact", provider="anthropic", model="c", usage=usage)], prices
    )
    assert report.usd == pytest.approx(claude.cost(usage)) and report.billed.cache_write_input_tokens == 400


def test_configured_cache_write_price_wins_for_any_kind():
    prices = CostModel(usd_per_million_input=4.0, usd_per_million_output=20.0, usd_per_million_cache_write=6.0)
    usage = Usage(input_tokens=1000, cache_write_input_tokens=400)
    for kind, model in [("litellm", "anthropic/claude-anything"), ("anthropic", "claude-anything")]:
        price, _ = price_for(kind, model, prices)
        assert price.cost(usage) == pytest.approx((600 * 4.0 + 400 * 6.0) / 1e6)


def test_usage_adds_cache_writes_and_old_records_default_to_none_written():
    total = Usage(input_tokens=10, cache_write_input_tokens=4) + Usage(input_tokens=5, cache_write_input_tokens=1)
    assert total.cache_write_input_tokens == 5
    assert Usage.model_validate_json('{"input_tokens": 3, "cached_input_tokens": 1, "calls": 1}').cache_write_input_tokens == 0


def test_usage_totals_split_billed_from_cached_and_never_invent_a_cost():
    prices = CostModel(usd_per_million_input=1.0, usd_per_million_output=10.0)
    results = [res("openai", "m", 1000, 10), res("openai", "m", 1000, 10, cached=True), res("local", "g", 500, 0)]
    report = summarize_usage(results, prices)
    assert report.usage.input_tokens == 2500 and report.billed.input_tokens == 1500 and report.n_cached == 1
    assert report.usd == pytest.approx((1500 * 1 + 10 * 10) / 1e6)  # configured prices apply to every model
    unpriced = summarize_usage(results)
    assert unpriced.usd is None and any("local/g" in note for note in unpriced.notes)
    local_group = next(g for g in unpriced.groups if g.provider == "local")
    assert local_group.usd is None and local_group.billed.input_tokens == 500
    all_cached = summarize_usage([res("local", "g", 500, 0, cached=True)])
    assert all_cached.usd == 0.0 and all_cached.billed.input_tokens == 0  # nothing billed is a known zero


def test_a_budget_needs_a_cap():
    with pytest.raises(ValidationError, match="max_tokens"):
        Budget()


def request() -> GenerateRequest:
    return GenerateRequest(messages=(Message(role="user", content="Q4"),))


async def test_the_meter_refuses_calls_once_the_cap_is_reached_and_ignores_cache_hits():
    meter = BudgetMeter(Budget(max_tokens=3))
    provider = BudgetedProvider(ScriptedProvider(lambda r: "4"), meter)
    await provider.generate(request())  # 1 input + 1 output token
    assert meter.tokens == 2 and meter.calls == 1
    meter.record("scripted", "scripted", GenerateResponse(usage=Usage(input_tokens=100), cached=True))
    assert meter.tokens == 2
    await provider.generate(request())
    with pytest.raises(BudgetExceededError, match="token budget reached: 4 tokens billed, cap 3"):
        await provider.generate(request())
    assert meter.state().stopped and len(provider.inner.calls) == 2


def test_a_usd_cap_needs_a_priced_provider():
    meter = BudgetMeter(Budget(max_usd=1.0))
    with pytest.raises(ConfigError, match="max_usd cannot be enforced"):
        budgeted_judge(load_config({"providers": [{"kind": "local"}], "cache": {"enabled": False}}), meter)
    BudgetMeter(Budget(max_usd=1.0, prices=CostModel(usd_per_million_input=1.0))).require_prices([("local", "g")])


def test_a_usd_cap_counts_priced_calls():
    meter = BudgetMeter(Budget(max_usd=0.5, prices=CostModel(usd_per_million_input=1e5, usd_per_million_output=0.0)))
    meter.record("x", "y", GenerateResponse(usage=Usage(input_tokens=3)))
    assert meter.usd == pytest.approx(0.3)
    meter.record("x", "y", GenerateResponse(usage=Usage(input_tokens=3)))
    with pytest.raises(BudgetExceededError, match="USD budget reached"):
        meter.check()


def test_budget_stop_does_not_fall_back_to_the_next_provider(tmp_path):
    first, second = ScriptedProvider(scripted_rule), ScriptedProvider(scripted_rule)
    meter = BudgetMeter(Budget(max_tokens=1))
    config = load_config({"cache": {"enabled": False}, "concurrency": 1})
    judge = budgeted_judge(config, meter, providers=[first, second])
    seen: list[JudgeResult] = []
    crit = Criterion(name="q")
    stop = score_within_budget(judge, [(crit, [{"output": f"item {i} Q4", "id": str(i)} for i in range(3)])], lambda c, i, r: seen.append(r))
    assert stop is not None and "token budget reached" in stop
    assert len(first.calls) == 1 and not second.calls and len(seen) == 1 and seen[0].score == 4.0


def test_a_budget_stop_keeps_finished_results_exits_2_and_a_rerun_resumes(tmp_path):
    outputs = {str(i): f"summary number {i} Q4" for i in range(6)}
    gates = [{"kind": "mean", "min": 3.0}]
    config = judged_config(tmp_path, outputs, gates, budget={"max_tokens": 200})
    provider = ScriptedProvider(scripted_rule)
    verdict = evaluate_gates(config, providers=[provider])
    budget = gate(verdict, "budget")
    assert budget.outcome == "fail" and budget.kind == "completeness" and "re-run with a higher cap" in budget.message
    assert gate(verdict, "completeness").outcome == "fail" and verdict.exit_code == 2 and verdict.budget.stopped
    kept = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    n_done = len(kept)
    assert 0 < n_done < 6 and n_done == len(provider.calls) and all(r["score"] == 4.0 for r in kept)
    assert verdict.budget.tokens >= 200 and verdict.budget.calls == n_done

    bigger = judged_config(tmp_path, outputs, gates, budget={"max_tokens": 10_000})
    again = evaluate_gates(bigger, providers=[provider])
    assert again.exit_code == 0 and len(provider.calls) == 6  # only the items the stop left were judged
    assert len((tmp_path / "results.jsonl").read_text().splitlines()) == 6
    assert again.usage.n_results == 6 and again.usage.billed.calls == 6


class SlowProvider(ScriptedProvider):
    """A scripted model whose calls overlap as real ones do: each waits until ``overlap`` calls are in flight (or
    a generous bound has passed), so how many start before the first ends does not depend on the machine's speed."""

    def __init__(self, *args, overlap: int = 3, **kwargs):
        super().__init__(*args, **kwargs)
        self.overlap, self.in_flight = overlap, 0
        self.together = asyncio.Event()

    async def generate(self, request):
        self.in_flight += 1
        if self.in_flight >= self.overlap:
            self.together.set()
        try:
            await asyncio.wait_for(self.together.wait(), timeout=30)
        except asyncio.TimeoutError:
            pass
        try:
            return await super().generate(request)
        finally:
            self.in_flight -= 1


def test_calls_in_flight_at_the_stop_finish_and_are_kept():
    provider = SlowProvider(scripted_rule)
    meter = BudgetMeter(Budget(max_tokens=1))
    judge = budgeted_judge(load_config({"cache": {"enabled": False}, "concurrency": 3}), meter, providers=[provider])
    seen: list[JudgeResult] = []
    items = [{"output": f"item {i} Q4", "id": str(i)} for i in range(8)]
    stop = score_within_budget(judge, [(Criterion(name="q"), items)], lambda c, i, r: seen.append(r))
    assert stop is not None and len(provider.calls) == 3  # three started before the first one finished
    assert len(seen) == 3 and all(r.score == 4.0 for r in seen)  # all three kept, none after the stop
