"""Anthropic's Messages API (and anything serving its wire format, e.g. a LiteLLM proxy's ``/v1/messages``).

The API returns no logprobs and one sample per call, so label distributions over it come from sampling
(and say so); a trailing assistant message is a real prefill.

**Prompt caching.** Judging sends the same instructions and source with many outputs. The adapter marks
the shared leading part of a prompt with ``cache_control: {"type": "ephemeral"}`` so Anthropic bills it
at the cache-read rate (0.1×) after the first write (1.25×). A template renders instructions, source and
output into one user message, so the shared part is found, not declared: it is the longest common prefix
with a recent prompt, cut back to the last line break (so that every output of one source gets the same
boundary, whatever its first words), and only when it is at least ``prompt_cache_min_chars`` long
(default 4096 characters, about the 1024 tokens below which Anthropic does not cache). The message
holding the boundary is split into two text blocks: the shared part, marked, and the rest, which holds
the judged output. The first prompt of a new source finds no partner and is sent unmarked; the second
writes the cache; the rest read it. ``prompt_cache=False`` turns this off.
"""

from __future__ import annotations

import os
import time
from collections import deque
from typing import Any

from judgesdk.providers._sdk import classify

from judgesdk.errors import AuthError, CapabilityError, PermanentError
from judgesdk.provider import Capabilities, Choice, GenerateRequest, GenerateResponse, Message, Usage

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


class PromptCachePlanner:
    """Where the shared leading part of a prompt ends, learned from recent prompts (see the module docstring)."""

    def __init__(self, min_chars: int = 4096, memory: int = 64) -> None:
        self.min_chars = min_chars
        self._recent: deque[str] = deque(maxlen=memory)

    def boundary(self, segments: list[str]) -> tuple[int, int] | None:
        """(segment index, character offset) where the cached prefix ends, or None to mark nothing.

        ``segments`` are the prompt's text blocks in order (system first, when there is one)."""
        flat = "\x00".join(segments)
        shared = max((len(os.path.commonprefix([flat, seen])) for seen in self._recent), default=0)
        self._recent.append(flat)
        cut = flat.rfind("\n", 0, shared) + 1  # after the last complete line both prompts share
        if cut < self.min_chars:
            return None
        start = 0
        for index, segment in enumerate(segments):
            if cut <= start + len(segment) + 1:
                return index, min(cut - start, len(segment))
            start += len(segment) + 1
        return None  # pragma: no cover - cut never passes the end


def _blocks(text: str, cut: int | None) -> list[dict[str, Any]]:
    """One text block, or two with the first ``cut`` characters marked for caching."""
    if cut is None:
        return [{"type": "text", "text": text}]
    marked = {"type": "text", "text": text[:cut], "cache_control": {"type": "ephemeral"}}
    return [marked] + ([{"type": "text", "text": text[cut:]}] if text[cut:] else [])


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
    ) -> None:
        if anthropic is None:
            raise PermanentError("the anthropic provider needs the 'anthropic' extra: pip install 'judgesdk[anthropic]'")
        key = api_key or os.environ.get("ANTHROPIC_API_KEY")
        if not key:
            raise AuthError("the anthropic provider needs ANTHROPIC_API_KEY (or api_key=...)", provider=self.kind)
        self.model = model
        self.endpoint = base_url or "https://api.anthropic.com"
        self.capabilities = capabilities or DEFAULT_CAPABILITIES
        self.cache_planner = PromptCachePlanner(prompt_cache_min_chars) if prompt_cache else None
        self._client = anthropic.AsyncAnthropic(api_key=key, base_url=base_url, timeout=timeout_s, max_retries=0)

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
                raws.append(await self._client.messages.create(**params))
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
        segments = ([system] if system else []) + [m.content for m in turns]
        mark = self.cache_planner.boundary(segments) if self.cache_planner is not None else None
        if mark is None:
            content: dict[str, Any] = {"messages": [{"role": m.role, "content": m.content} for m in turns]}
            return {**content, "system": system} if system else content
        index, cut = mark
        offset = 1 if system else 0
        messages = [
            {"role": m.role, "content": _blocks(m.content, cut if i + offset == index else None) if i + offset <= index else m.content}
            for i, m in enumerate(turns)
        ]
        if not system:
            return {"messages": messages}
        return {"messages": messages, "system": _blocks(system, cut) if index == 0 else system}

    def response_from(self, raws: list[Any], request: GenerateRequest) -> GenerateResponse:
        """One response from the Messages API results of one request's samples (live or from a batch)."""
        choices: list[Choice] = []
        usage = Usage()
        for raw in raws:
            text = "".join(getattr(block, "text", "") for block in raw.content)
            choices.append(Choice(text=text, finish_reason=raw.stop_reason))
            read = getattr(raw.usage, "cache_read_input_tokens", 0) or 0
            written = getattr(raw.usage, "cache_creation_input_tokens", 0) or 0
            usage = usage + Usage(  # the API's input_tokens leave out cached and cache-writing tokens
                input_tokens=raw.usage.input_tokens + read + written,
                output_tokens=raw.usage.output_tokens,
                cached_input_tokens=read,
                cache_write_input_tokens=written,
                calls=1,
            )
        return GenerateResponse(
            choices=choices,
            usage=usage,
            provider=self.kind,
            model=self.model,
            notes=["no logprobs from the Messages API"] if request.top_logprobs else [],
        )

    async def aclose(self) -> None:
        await self._client.close()
