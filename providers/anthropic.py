"""Anthropic's Messages API (and anything serving its wire format, e.g. a LiteLLM proxy's ``/v1/messages``).

The API returns no logprobs and one sample per call, so label distributions over it come from sampling
(and say so); a trailing assistant message is a real prefill.

**Prompt caching.** The shared leading part of judging prompts (instructions, source) is marked for
Anthropic's prompt cache (``providers/_prompt_cache.py`` says how it is found); ``prompt_cache=False`` turns
this off.
"""

from __future__ import annotations

import time
from typing import Any

from judgesdk.core import CapabilityError, PermanentError
from judgesdk.provider import (
    Capabilities,
    Choice,
    GenerateRequest,
    GenerateResponse,
    Message,
    Pricing,
    ProviderOptions,
    ProviderSettings,
    ProviderSpec,
    Usage,
    redact_url,
    runtime,
)

from ._prompt_cache import ANSWER_NEUTRAL, PromptCachePlanner, cache_marked
from ._sdk import check_length, classify, json_kind, malformed, no_redirects, own_endpoint, vendor_key, within

try:
    import anthropic
except ImportError:  # pragma: no cover - exercised only without the extra
    anthropic = None  # type: ignore[assignment]

DEFAULT_CAPABILITIES = Capabilities(prefill=True)
# Anthropic's prompt-cache prices as multiples of the input price (5-minute TTL), for a price source that gives none;
# a Claude model priced through another kind gets them too (judgesdk.provider.prices: its map entry names "anthropic")
CACHE_WRITE, CACHE_READ = 1.25, 0.1


def sampling_body(request: GenerateRequest) -> dict[str, float]:
    """Sampling parameters that differ from the API's defaults (temperature 1.0, no top_p).

    Recent SDKs no longer list ``temperature``/``top_p`` as arguments, so they travel in the body, and only
    when they change something: sampling at the default T = 1.0 (002's Approximation) sends neither.
    """
    body: dict[str, float] = {}
    if request.temperature != 1.0:
        body["temperature"] = min(request.temperature, 1.0)
    if request.top_p is not None:
        body["top_p"] = request.top_p
    return body


class AnthropicProvider:
    kind = "anthropic"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        capabilities: Capabilities | None = None,
        prompt_cache: bool = True,
        prompt_cache_min_chars: int = 4096,
        max_answer_bytes: int | None = None,
    ) -> None:
        if anthropic is None:
            raise PermanentError("the anthropic provider needs the 'anthropic' extra: pip install 'judgesdk[anthropic]'")
        # ANTHROPIC_API_KEY goes to api.anthropic.com only: another base_url gets the key it was given, or a placeholder
        key = vendor_key(api_key, base_url, "api.anthropic.com", "ANTHROPIC_API_KEY", self.kind)
        self.model = model
        target = own_endpoint(base_url, "https://api.anthropic.com", "anthropic")  # never ANTHROPIC_BASE_URL
        self.endpoint = redact_url(target)  # shown, keyed: no credentials
        self.timeout_s = timeout_s
        self.max_answer_bytes = max_answer_bytes  # None: providers._sdk.DEFAULT_MAX_ANSWER_BYTES
        self.capabilities = capabilities or DEFAULT_CAPABILITIES
        self.cache_planner = PromptCachePlanner(prompt_cache_min_chars) if prompt_cache else None
        self._client = anthropic.AsyncAnthropic(
            api_key=key, base_url=target, timeout=timeout_s, max_retries=0, http_client=no_redirects(anthropic.DefaultAsyncHttpxClient, timeout_s)
        )

    @property
    def client(self) -> Any:
        """The ``anthropic.AsyncAnthropic`` client this provider calls (SDK retries off), for other endpoints of
        the same account, e.g. Message Batches in :mod:`judgesdk.providers.anthropic_batch`."""
        return self._client

    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        params = self.message_params(request)
        started = time.perf_counter()
        raws = []
        try:
            for _ in range(request.n):  # one sample per call
                raws.append(await within(self.timeout_s, self._client.messages.create(**params), self.kind, self.max_answer_bytes))
        except anthropic.APIError as exc:
            raise classify(exc, self.kind) from exc
        response = self.response_from(raws, request)
        response.latency_s = time.perf_counter() - started
        return response

    def message_params(self, request: GenerateRequest) -> dict[str, Any]:
        """The Messages API arguments for one sample of ``request`` (also the body of a Message Batches request)."""
        if request.labels is not None or request.continuation is not None:
            raise CapabilityError("the Messages API gives no token probabilities; use sampling", provider=self.kind)
        system = "\n\n".join(m.content for m in request.messages if m.role == "system")
        turns = [m for m in request.messages if m.role != "system"]
        if turns and turns[-1].role == "assistant":  # the API rejects a prefill ending in whitespace
            turns[-1] = Message(role="assistant", content=turns[-1].content.rstrip())
        params: dict[str, Any] = {"model": self.model, "max_tokens": max(request.max_tokens, 1)}
        params.update(self._content(system, turns))
        sampling = sampling_body(request)
        if sampling:
            params["extra_body"] = sampling
        if request.stop:
            params["stop_sequences"] = list(request.stop)
        return params

    def _content(self, system: str, turns: list[Message]) -> dict[str, Any]:
        """``system`` and ``messages``, plain strings unless a shared prefix is marked for caching."""
        head = [system] if system else []
        sent = cache_marked(head + [m.content for m in turns], self.cache_planner)
        content: dict[str, Any] = {"messages": [{"role": m.role, "content": c} for m, c in zip(turns, sent[len(head) :])]}
        return {**content, "system": sent[0]} if system else content

    def response_from(self, raws: list[Any], request: GenerateRequest) -> GenerateResponse:
        """One response from the Messages API results of one request's samples (live or from a batch)."""
        choices: list[Choice] = []
        usage = Usage()
        for raw in raws:
            choices.append(Choice(text=self._text(raw), finish_reason=getattr(raw, "stop_reason", None)))
            usage = usage + self._usage(getattr(raw, "usage", None))
        check_length((c.text for c in choices), request, self.kind, self.endpoint)
        served = sorted({raw.model for raw in raws if isinstance(getattr(raw, "model", None), str) and raw.model})
        return GenerateResponse(
            choices=choices,
            usage=usage,
            provider=self.kind,
            model=self.model,
            notes=["no logprobs from the Messages API"] if request.top_logprobs else [],
            provenance={"runtime": runtime("anthropic"), **({"model": " | ".join(served)} if served else {})},
        )

    def _text(self, raw: Any) -> str:
        """The text of a Messages reply; a reply whose ``content`` is not a list of blocks, or whose text block's
        text is not text, is a malformed answer naming the field."""
        content = getattr(raw, "content", None)
        if not isinstance(content, list):
            raise malformed(self.kind, self.endpoint, f"content is {json_kind(content)}, not a list of blocks")
        texts = []
        for index, block in enumerate(content):
            text = getattr(block, "text", "") if not isinstance(block, dict) else block.get("text", "")
            if not isinstance(text, str):
                raise malformed(self.kind, self.endpoint, f"content[{index}].text is {json_kind(text)}, not text")
            texts.append(text)
        return "".join(texts)

    def _usage(self, usage: Any) -> Usage:
        """A reply's token counts; missing or non-numeric counts are a malformed answer naming the field."""
        if usage is None:
            raise malformed(self.kind, self.endpoint, "usage is missing (null)")
        counts = {}
        for name in ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"):
            value = getattr(usage, name, None) if not isinstance(usage, dict) else usage.get(name)
            if value is None and name.startswith("cache_"):
                value = 0
            if isinstance(value, bool) or not isinstance(value, int):
                raise malformed(self.kind, self.endpoint, f"usage.{name} is {json_kind(value)}, not a count")
            counts[name] = value
        read, written = counts["cache_read_input_tokens"], counts["cache_creation_input_tokens"]
        return Usage(  # the API's input_tokens leave out cached and cache-writing tokens
            input_tokens=counts["input_tokens"] + read + written,
            output_tokens=counts["output_tokens"],
            cached_input_tokens=read,
            cache_write_input_tokens=written,
            calls=1,
        )

    async def aclose(self) -> None:
        await self._client.close()


class AnthropicOptions(ProviderOptions):
    """``[providers.options]`` of ``kind = "anthropic"`` (``model``, ``base_url``... are set directly under
    ``[[providers]]``)."""

    prompt_cache: bool = True  # mark the shared instructions-and-source block for Anthropic's prompt cache
    prompt_cache_min_chars: int = 4096  # shortest shared block worth marking


def _build(settings: ProviderSettings, options: AnthropicOptions) -> AnthropicProvider:
    return AnthropicProvider(
        settings.model, base_url=settings.base_url, api_key=settings.api_key(), timeout_s=settings.timeout_s,
        capabilities=settings.capabilities, max_answer_bytes=settings.max_answer_bytes, **options.model_dump(exclude_unset=True),
    )  # fmt: skip


PROVIDER = ProviderSpec(
    kind=AnthropicProvider.kind,
    options=AnthropicOptions,
    build=_build,
    capabilities=DEFAULT_CAPABILITIES,
    pricing=Pricing(cache_write=CACHE_WRITE, cache_read=CACHE_READ),
    default_model="claude-3-5-haiku-latest",
    answer_neutral=ANSWER_NEUTRAL,
    detect_env="ANTHROPIC_API_KEY",  # the detected chain: after OpenAI's key, before the local model
    detect_order=20,
)
