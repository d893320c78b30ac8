"""What decision calls cost: LiteLLM's price map's ``_decisions`` fields and tier, in prices, budgets, reports and
``--estimate`` (one call per item, no output tokens)."""

from __future__ import annotations

import pytest
from conftest import need

need("litellm")

from judgesdk.core.types import (  # noqa: E402
    JudgeItem,  # noqa: E402
    JudgeResult,
    Usage,
)
from judgesdk.forecast.job import forecast  # noqa: E402
from judgesdk.judging.judge_config import load_config  # noqa: E402
from judgesdk.prompting.presets import criteria_for  # noqa: E402
from judgesdk.provider.layers.budget import Budget, BudgetMeter  # noqa: E402
from judgesdk.provider.prices import price_for, summarize_usage  # noqa: E402
from judgesdk.provider.protocol import GenerateResponse  # noqa: E402


def test_gpt_6_luna_decisions_are_priced_from_their_own_fields() -> None:
    chat, _ = price_for("openai", "gpt-6-luna")
    decisions, note = price_for("openai", "gpt-6-luna", route="decisions")
    assert (chat.output, decisions.output) == (5e-07, 0.0)  # output tokens are free on the decisions route
    assert (chat.cached_input, decisions.cached_input) == (1e-08, 1e-07)  # cached reads are not discounted there
    assert "decision prices" in note and "272k" in note
    one = Usage(input_tokens=1000, output_tokens=50, cached_input_tokens=400, calls=1)
    assert decisions.cost(one) == pytest.approx(1000 * 1e-07)
    assert decisions.cost(Usage(input_tokens=300_000, calls=1)) == pytest.approx(300_000 * 2e-07)  # above 272k: the tier
    assert decisions.cost(Usage(input_tokens=300_000, calls=2)) == pytest.approx(300_000 * 1e-07)  # two requests of 150k


def test_a_model_without_decision_fields_is_priced_from_its_plain_ones_and_says_so() -> None:
    plain, _ = price_for("openai", "gpt-4o-mini")
    decisions, note = price_for("openai", "gpt-4o-mini", route="decisions")
    assert (decisions.input, decisions.output) == (plain.input, plain.output) and "no decision prices of its own" in note


def test_the_budget_and_the_cost_report_price_decision_calls_on_their_route() -> None:
    meter = BudgetMeter(Budget(max_usd=1.0))
    response = GenerateResponse(usage=Usage(input_tokens=1000, output_tokens=100, calls=1))
    meter.record("openai", "gpt-6-luna", response, "decisions")
    assert meter.usd == pytest.approx(1000 * 1e-07)
    meter.record("openai", "gpt-6-luna", response)
    assert meter.usd == pytest.approx(1000 * 1e-07 + 1000 * 1e-07 + 100 * 5e-07)
    usage = Usage(input_tokens=1000, output_tokens=100, calls=1)
    results = [
        JudgeResult(score=3.0, status="ok", criterion="c", method="decision/score", provider="openai", model="gpt-6-luna", usage=usage),
        JudgeResult(score=3.0, status="ok", criterion="c", method="geval/logprobs", provider="openai", model="gpt-6-luna", usage=usage),
    ]
    report = summarize_usage(results)
    assert {(g.route, round(g.usd, 9)) for g in report.groups} == {("decisions", 1e-04), ("chat", 1.5e-04)}


def test_the_estimate_counts_one_decision_call_per_item_and_no_output() -> None:
    config = load_config({"providers": [{"kind": "openai", "api": "decisions", "model": "gpt-6-luna", "base_url": "http://127.0.0.1:9/v1"}], "cache": {"enabled": False}})
    items = [JudgeItem(output=f"Summary {i}.", source="The article.", id=str(i)) for i in range(5)]
    found = forecast(config, [(criteria_for("summeval"), items)])
    (count,) = found.providers
    assert (count.calls, count.by_kind, count.output_tokens) == (5, {"decision": 5}, 0)
    assert count.usd == pytest.approx(count.prompt_tokens * 1e-07) and "decision prices" in count.price_note
