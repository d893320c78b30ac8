"""Timeouts are typed at the adapter edge (issue 12, item 11): every SDK's timeout exception becomes a
:class:`ProviderTimeoutError`, which is still retried and which the overload guard reads by type.

Each SDK exception is built the way its constructor requires; the adapters are also run against a loopback
server that accepts a request and never answers, so the exception is the one the SDK really raises.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import httpx
import pytest
from conftest import need

from judgesdk.core.errors import PermanentError, ProviderTimeoutError, RateLimitError, TransientError
from judgesdk.provider.layers.breaker import OverloadConfig, OverloadGuard
from judgesdk.provider.layers.retry import RetryingProvider, RetryPolicy
from judgesdk.provider.protocol import Capabilities, Choice, GenerateRequest, GenerateResponse, Message
from judgesdk.providers._sdk import classify

REQUEST = GenerateRequest(messages=(Message(role="user", content="judge this"),), max_tokens=4)
OK = GenerateResponse(choices=[Choice(text="3")], provider="sim", model="sim")


def assert_timeout(error: Exception) -> None:
    typed = classify(error, "x")
    assert type(typed) is ProviderTimeoutError, typed
    assert isinstance(typed, TransientError) and typed.status is None and typed.provider == "x"


# -- one unit test per SDK class ------------------------------------------------------------------------


def test_openai_api_timeout_error():
    openai = need("openai")
    assert_timeout(openai.APITimeoutError(request=httpx.Request("POST", "https://api.openai.com/v1/chat/completions")))


def test_anthropic_api_timeout_error():
    anthropic = need("anthropic")
    from anthropic import _exceptions  # its own httpx: httpx2 from anthropic 2.x, httpx before

    http = getattr(_exceptions, "httpx2", None) or _exceptions.httpx
    assert_timeout(anthropic.APITimeoutError(request=http.Request("POST", "https://api.anthropic.com/v1/messages")))


def test_httpx2_timeout_exception():
    httpx2 = need("httpx2")
    assert_timeout(httpx2.ReadTimeout("slow"))


def test_litellm_timeout_is_a_timeout_not_its_408():
    litellm = need("litellm")
    error = litellm.Timeout(message="Request timed out", model="gpt-4o-mini", llm_provider="openai")
    assert error.status_code == 408  # set by LiteLLM, not by a server
    assert_timeout(error)


@pytest.mark.parametrize("error", [httpx.ReadTimeout("slow"), httpx.ConnectTimeout("no connect"), httpx.PoolTimeout("pool")])
def test_httpx_timeout_exceptions(error):
    assert_timeout(error)


@pytest.mark.parametrize("error", [asyncio.TimeoutError(), TimeoutError("timed out")])
def test_asyncio_and_builtin_timeouts(error):
    assert_timeout(error)


def test_a_connection_error_raised_from_a_timeout_is_a_timeout():
    openai = need("openai")
    request = httpx.Request("POST", "http://127.0.0.1/v1/completions")
    try:
        try:
            raise httpx.ReadTimeout("slow", request=request)
        except httpx.ReadTimeout as cause:
            raise openai.APIConnectionError(request=request) from cause
    except openai.APIConnectionError as error:
        assert_timeout(error)


def test_other_failures_are_not_timeouts():
    openai = need("openai")
    request = httpx.Request("POST", "http://127.0.0.1/v1/completions")
    reset = classify(openai.APIConnectionError(request=request), "x")
    assert type(reset) is TransientError
    busy = httpx.Response(503, request=request, headers={"retry-after": "2"})
    overloaded = classify(openai.InternalServerError("busy", response=busy, body=None), "x")
    assert type(overloaded) is TransientError and overloaded.status == 503 and overloaded.retry_after == 2.0
    slow_down = httpx.Response(429, request=request)
    assert type(classify(openai.RateLimitError("slow down", response=slow_down, body=None), "x")) is RateLimitError
    bad = httpx.Response(400, request=request)
    assert type(classify(openai.BadRequestError("bad", response=bad, body=None), "x")) is PermanentError


# -- the real adapters against a server that never answers ---------------------------------------------


@pytest.fixture
async def silent_server() -> AsyncIterator[str]:
    """An HTTP server on loopback that reads requests and never answers them."""
    held: list[asyncio.StreamWriter] = []

    async def hold(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)
        while await reader.read(65536):
            pass

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        for writer in held:
            writer.close()
        server.close()
        await server.wait_closed()


async def test_the_openai_adapter_raises_a_typed_timeout(silent_server):
    need("openai")
    from judgesdk.providers.openai import OpenAIProvider

    provider = OpenAIProvider("m", base_url=silent_server + "/v1", api="completions", timeout_s=0.3)
    with pytest.raises(ProviderTimeoutError) as info:
        await provider.generate(REQUEST)
    # the SDK's per-read timeout and the adapter's whole-request bound (issue 29 item 18) both end at timeout_s: either names itself
    assert "APITimeoutError" in str(info.value) or "Timeout: no complete answer within timeout_s = 0.3 s" in str(info.value)


async def test_the_anthropic_adapter_raises_a_typed_timeout(silent_server):
    need("anthropic")
    from judgesdk.providers.anthropic import AnthropicProvider

    provider = AnthropicProvider("m", base_url=silent_server, timeout_s=0.3)
    with pytest.raises(ProviderTimeoutError) as info:
        await provider.generate(REQUEST)
    # the SDK's per-read timeout and the adapter's whole-request bound (issue 29 item 18) both end at timeout_s: either names itself
    assert "APITimeoutError" in str(info.value) or "Timeout: no complete answer within timeout_s = 0.3 s" in str(info.value)


async def test_the_litellm_adapter_raises_a_typed_timeout(silent_server):
    need("litellm")
    from judgesdk.providers.litellm import LiteLLMProvider

    provider = LiteLLMProvider("openai/m", base_url=silent_server + "/v1", api_key="k", timeout_s=0.3)
    with pytest.raises(ProviderTimeoutError) as info:
        await provider.generate(REQUEST)
    assert "Timeout" in str(info.value)


# -- what the typed error does above the adapter ----------------------------------------------------------


class Answers:
    """Raises the given exceptions in turn, then answers."""

    kind, model = "sim", "sim"
    capabilities = Capabilities()

    def __init__(self, *errors: BaseException) -> None:
        self.errors = list(errors)
        self.calls = 0

    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        self.calls += 1
        if self.errors:
            raise self.errors.pop(0)
        return OK


async def test_timeouts_are_still_retried():
    inner = Answers(ProviderTimeoutError("x: APITimeoutError", provider="x"))
    provider = RetryingProvider(inner, RetryPolicy(max_attempts=3, initial_wait_s=0.0, jitter=False))
    response = await provider.generate(REQUEST)
    assert response.choices[0].text == "3" and inner.calls == 2


async def test_the_guard_reacts_to_the_typed_timeout_and_not_to_an_untyped_one():
    config = OverloadConfig(max_concurrency=8, hold_after_timeout=False)
    typed = OverloadGuard(Answers(ProviderTimeoutError("x: timed out", provider="x")), config)
    with pytest.raises(ProviderTimeoutError):
        await typed.generate(REQUEST)
    assert typed.stats.timeouts == 1 and typed.stats.decreases == 1 and typed.limit.limit == 1.0
    assert typed.limit.timeout_s is not None  # what "fast" is measured against from now on

    untyped = TransientError("x: APITimeoutError: Request timed out", provider="x")  # a name, not a type
    untyped.__cause__ = TimeoutError("read timed out")
    other = OverloadGuard(Answers(untyped), config)
    with pytest.raises(TransientError):
        await other.generate(REQUEST)
    assert other.stats.timeouts == 0 and other.stats.failures == 1 and other.limit.limit == 8.0


async def test_a_real_sdk_timeout_reaches_the_guard_typed(silent_server):
    need("openai")
    from judgesdk.providers.openai import OpenAIProvider

    adapter = OpenAIProvider("m", base_url=silent_server + "/v1", api="completions", timeout_s=0.2)
    guard = OverloadGuard(adapter, OverloadConfig(hold_after_timeout=False))
    with pytest.raises(ProviderTimeoutError):
        await guard.generate(REQUEST)
    assert guard.stats.timeouts == 1
