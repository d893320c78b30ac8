"""The decision adapters hold a server to what the chat adapters do, through the same helpers (providers/_sdk.py):
a vendor key only for the vendor's host, the endpoint judgesdk decides (never ``OPENAI_BASE_URL``), no credentials in
``endpoint``; and one loop asks a decision request in parts (judgesdk.provider.decisions.ask_in_parts)."""

from __future__ import annotations

import pytest
from conftest import need

from judgesdk.core.errors import AuthError
from judgesdk.core.types import Usage
from judgesdk.provider.decisions import DecisionAnswer, DecisionInput, DecisionRequest, PredicateQuestion, ask_in_parts

SECRET = "sk-test-Secret0123456789abcdef"


def _decisions_provider(**kwargs):
    need("openai")
    from judgesdk.core.errors import ConfigError
    from judgesdk.providers.openai_decisions import OpenAIDecisionsProvider

    try:
        return OpenAIDecisionsProvider("m", **kwargs)
    except ConfigError as exc:  # an openai package without client.decisions
        pytest.skip(str(exc))


def test_openai_decisions_never_takes_its_host_from_the_environment(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    provider = _decisions_provider()
    assert str(provider.client.base_url).startswith("https://api.openai.com/v1") and provider.endpoint == "https://api.openai.com/v1"


def test_openai_decisions_needs_a_key_for_the_vendor_and_sends_none_elsewhere(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(AuthError, match="OPENAI_API_KEY"):
        _decisions_provider()
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    provider = _decisions_provider(base_url="http://user:PASS@127.0.0.1:9/v1")
    assert provider.client.api_key != SECRET  # the vendor's key never goes to another host
    assert "PASS" not in provider.endpoint and "127.0.0.1:9/v1" in provider.endpoint


def test_systemone_endpoint_has_no_credentials():
    need("httpx")
    from judgesdk.providers.systemone import SystemOneProvider

    provider = SystemOneProvider("m", base_url="http://user:PASS@127.0.0.1:9")
    assert "PASS" not in provider.endpoint


async def test_a_request_is_asked_in_parts_and_answered_as_one():
    questions = tuple(PredicateQuestion(instructions=f"q{i}?") for i in range(5))
    request = DecisionRequest(input=DecisionInput(output="x"), questions=questions)
    sizes = []

    async def ask(part: DecisionRequest):
        sizes.append(len(part.questions))
        found = [DecisionAnswer(status="ok", probability=0.5) for _ in part.questions]
        return found, Usage(input_tokens=1, calls=1), ("served-model" if len(sizes) == 2 else None)

    answers, usage, served = await ask_in_parts(request, 2, ask)
    assert sizes == [2, 2, 1] and len(answers) == 5 and usage.input_tokens == 3 and usage.calls == 3 and served == "served-model"
