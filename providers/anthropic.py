"""Anthropic's Messages API (and anything serving its wire format, e.g. a LiteLLM proxy's ``/v1/messages``).

The API returns no logprobs and one sample per call, so label distributions over it come from sampling
(and say so); a trailing assistant message is a real prefill.
"""

from __future__ import annotations

import os
import time

from judgesdk.providers._sdk import classify

from judgesdk.errors import AuthError, CapabilityError, PermanentError
from judgesdk.provider import Capabilities, Choice, GenerateRequest, GenerateResponse, Usage

try:
    import anthropic
except ImportError:  # pragma: no cover - exercised only without the extra
    anthropic = None  # type: ignore[assignment]

DEFAULT_CAPABILITIES = Capabilities(prefill=True)


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
    ) -> None:
        if anthropic is None:
            raise PermanentError("the anthropic provider needs the 'anthropic' extra: pip install 'judgesdk[anthropic]'")
        key = api_key or os.environ.get("ANTHROPIC_API_KEY")
        if not key:
            raise AuthError("the anthropic provider needs ANTHROPIC_API_KEY (or api_key=...)", provider=self.kind)
        self.model = model
        self.endpoint = base_url or "https://api.anthropic.com"
        self.capabilities = capabilities or DEFAULT_CAPABILITIES
        self._client = anthropic.AsyncAnthropic(api_key=key, base_url=base_url, timeout=timeout_s, max_retries=0)

    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        if request.labels is not None or request.continuation is not None:
            raise CapabilityError("the Messages API gives no token probabilities; use sampling", provider=self.kind)
        system = "\n\n".join(m.content for m in request.messages if m.role == "system")
        turns = [{"role": m.role, "content": m.content} for m in request.messages if m.role != "system"]
        if turns and turns[-1]["role"] == "assistant":
            turns[-1]["content"] = turns[-1]["content"].rstrip()  # the API rejects a prefill ending in whitespace
        params: dict = {"model": self.model, "max_tokens": max(request.max_tokens, 1), "messages": turns}
        if system:
            params["system"] = system
        sampling = sampling_body(request)
        if sampling:
            params["extra_body"] = sampling
        if request.stop:
            params["stop_sequences"] = list(request.stop)
        started = time.perf_counter()
        choices: list[Choice] = []
        usage = Usage()
        try:
            for _ in range(request.n):  # one sample per call
                raw = await self._client.messages.create(**params)
                text = "".join(getattr(block, "text", "") for block in raw.content)
                choices.append(Choice(text=text, finish_reason=raw.stop_reason))
                usage = usage + Usage(
                    input_tokens=raw.usage.input_tokens,
                    output_tokens=raw.usage.output_tokens,
                    cached_input_tokens=getattr(raw.usage, "cache_read_input_tokens", 0) or 0,
                    calls=1,
                )
        except anthropic.APIError as exc:
            raise classify(exc, self.kind) from exc
        return GenerateResponse(
            choices=choices,
            usage=usage,
            latency_s=time.perf_counter() - started,
            provider=self.kind,
            model=self.model,
            notes=["no logprobs from the Messages API"] if request.top_logprobs else [],
        )

    async def aclose(self) -> None:
        await self._client.close()
