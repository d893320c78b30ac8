"""OpenAI-compatible APIs: OpenAI itself, and any ``base_url`` speaking its wire format (vLLM, llama.cpp
server, Ollama, LiteLLM proxy).

``api="chat"`` uses ``/chat/completions`` (``logprobs`` + ``top_logprobs`` up to 20); ``api="completions"``
uses ``/completions`` with plain text (``logprobs=k``), which base models need and which also gives the
log-likelihood of a continuation through ``echo``. The SDK's own retries are off: judgesdk's retry
wrapper decides.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import time
from typing import Any, Literal

from pydantic import Field

from judgesdk.core import CapabilityError, PermanentError, ProviderError, TransientError
from judgesdk.provider import (
    Capabilities,
    Choice,
    GenerateRequest,
    GenerateResponse,
    ProviderOptions,
    ProviderSettings,
    ProviderSpec,
    TokenLogprob,
    TopLogprob,
    answer_settings,
    as_text,
    fold_prefill,
    redact_url,
    runtime,
)

from ._sdk import (
    answer_choices,
    chat_logprob_tokens,
    chat_usage,
    check_length,
    classify,
    field,
    is_default_host,
    no_redirects,
    own_endpoint,
    vendor_key,
    within,
)
from .openai_decisions import OpenAIDecisionsProvider

try:
    import httpx
    import openai
except ImportError:  # pragma: no cover - exercised only without the extra
    openai = None  # type: ignore[assignment]

CHAT_PATH = "/chat/completions"


_STABLE = ("id", "root", "parent", "owned_by", "meta")  # a listing entry's fields that name a model (not "created")


def served_model(entries: list[dict[str, Any]], model: str) -> str:
    """A short hash of what a model listing says about ``model``: its entry, or the only entry (see
    :meth:`OpenAIProvider.learn_identity`); "" when the listing names neither."""
    chosen = [entry for entry in entries if isinstance(entry, dict) and entry.get("id") == model]
    if not chosen and len(entries) == 1 and isinstance(entries[0], dict):
        chosen = entries
    if not chosen:
        return ""
    stable = {key: chosen[0][key] for key in _STABLE if chosen[0].get(key) is not None}
    return hashlib.sha256(json.dumps(stable, sort_keys=True, default=str).encode()).hexdigest()[:16]


def default_capabilities(api: str) -> Capabilities:
    if api == "decisions":
        return Capabilities(decisions=True, max_questions=400)  # OpenAI Decisions: 1-400 questions a call
    return Capabilities(
        logprobs=True,
        max_top_logprobs=20 if api == "chat" else 5,
        multiple_samples=True,
        seed=True,
        loglikelihood=api == "completions",
    )


class OpenAIProvider:
    """The adapter for OpenAI's API and any server speaking its wire format (``kind = "openai"``).

    ``model``: the model name sent with each request; ``base_url``: the server, or None for api.openai.com
    (``OPENAI_BASE_URL`` is never read); ``api_key``: the key to send, or None to read ``OPENAI_API_KEY``, which
    goes to api.openai.com only (another server gets a placeholder); ``api``: ``"chat"`` for
    ``/chat/completions``, ``"completions"`` for plain-text ``/completions`` (base models, continuation
    log-likelihoods); ``timeout_s``: each call's timeout in seconds; ``capabilities``: what the model supports,
    or None for the API's defaults (:func:`default_capabilities`); ``model_sha256``: the sha256 of the model file
    a self-hosted server serves, which names the model in cache keys and provenance (:attr:`identity`).
    Building one raises :class:`~judgesdk.core.errors.PermanentError` without the ``openai`` extra, and
    :class:`~judgesdk.core.errors.AuthError` when api.openai.com is the target and no key is given or set.
    ``api="decisions"`` in a config builds :class:`OpenAIDecisionsProvider` instead."""

    kind = "openai"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        api: Literal["chat", "completions"] = "chat",
        timeout_s: float = 60.0,
        capabilities: Capabilities | None = None,
        model_sha256: str | None = None,
        max_answer_bytes: int | None = None,
    ) -> None:
        if openai is None:
            raise PermanentError("the openai provider needs the 'openai' extra: pip install 'judgesdk[openai]'")
        # OPENAI_API_KEY goes to api.openai.com only: another base_url gets the key it was given, or a placeholder
        key = vendor_key(api_key, base_url, "api.openai.com", "OPENAI_API_KEY", self.kind)
        self.model = model
        self.api = api
        target = own_endpoint(base_url, "https://api.openai.com/v1", "openai")  # never OPENAI_BASE_URL
        self.endpoint = redact_url(target)  # shown, keyed: no credentials
        self.timeout_s = timeout_s
        self.max_answer_bytes = max_answer_bytes  # None: providers._sdk.DEFAULT_MAX_ANSWER_BYTES
        self.capabilities = capabilities or default_capabilities(api)
        self.model_sha256 = model_sha256.lower() if model_sha256 else None  # the served file, as the config names it
        # which model the server says it serves (learn_identity); None: not asked yet; the vendor's own API is not asked
        self._served: str | None = "" if is_default_host(target, "api.openai.com") else None
        self._learning: asyncio.Lock | None = None
        self._client = openai.AsyncOpenAI(
            api_key=key, base_url=target, timeout=timeout_s, max_retries=0,
            http_client=no_redirects(openai.DefaultAsyncHttpxClient, timeout_s),
        )  # fmt: skip

    @property
    def identity(self) -> str:
        """What cache keys name the answering model by beyond its name and URL: the served model file's sha256 where the
        config names it; else, for a server other than api.openai.com, a hash of what its model listing says about the
        model (:meth:`learn_identity`); else ""."""
        if self.model_sha256:
            return f"sha256:{self.model_sha256}"
        return f"served:{self._served}" if self._served else ""

    async def learn_identity(self) -> bool:
        """Ask the server, once, which model it serves (``GET {base_url}/models``), so that a server restarted with
        another model behind the same URL and model name is another cache (issue 29 item 3). The listing's entry for
        this model (or its only entry: a single-model server such as llama.cpp's answers whatever name is asked) is
        named by its stable fields (id, root, parent, owned_by, meta: llama.cpp's parameter count and size, vLLM's
        root path), never by a time or a permission id. A server without a listing (a 4xx, or a 200 that is no listing)
        names nothing: the key is its URL and model name, as before. A busy or failing server (408, 409, 429, 5xx, no
        connection, a timeout) settles nothing: False, and the cache passes that request by; the next one asks again. What a listing cannot see (a
        file replaced under the same name and size) only ``model_sha256`` can name."""
        if self._served is not None or self.model_sha256:
            return True
        if self._learning is None:
            self._learning = asyncio.Lock()
        async with self._learning:
            if self._served is not None:
                return True
            try:
                answer = await within(self.timeout_s, self._client.get("/models", cast_to=httpx.Response), self.kind, self.max_answer_bytes)
                body = answer.json()
            except openai.APIStatusError as exc:
                if exc.status_code in (408, 409, 429) or exc.status_code >= 500:  # busy or loading: ask again next time
                    return False
                body = None  # no listing here (404, 405...): the server names nothing
            except (openai.APIError, ProviderError):  # no connection, a timeout
                return False
            except ValueError:  # a 200 that is not JSON: no listing
                body = None
            data = body.get("data") if isinstance(body, dict) else None
            self._served = served_model([e for e in data if isinstance(e, dict)], self.model) if isinstance(data, list) else ""
            return True

    @property
    def answer_settings(self) -> str:
        """The API when not chat (part of cache keys and provenance: the same messages sent as plain text to
        ``/completions`` are another question than through the chat template), else ""."""
        return answer_settings({"api": self.api}, {"api": "chat"})

    @property
    def client(self) -> Any:
        """The ``openai.AsyncOpenAI`` client this provider calls (SDK retries off), for other endpoints of the
        same account and server, e.g. the Batch API in :mod:`judgesdk.providers.openai_batch`."""
        return self._client

    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        if request.labels is not None:
            raise CapabilityError("exact label scoring needs a local model; use logprobs over this API", provider=self.kind)
        started = time.perf_counter()
        try:
            if request.continuation is not None:
                response = await within(self.timeout_s, self._loglikelihood(request), self.kind, self.max_answer_bytes)
            elif self.api == "chat":
                response = await within(self.timeout_s, self._chat(request), self.kind, self.max_answer_bytes)
            else:
                response = await within(self.timeout_s, self._completion(request), self.kind, self.max_answer_bytes)
        except openai.APIError as exc:
            raise classify(exc, self.kind) from exc
        response.latency_s = time.perf_counter() - started
        if len(response.choices) < request.n and request.continuation is None:
            response.notes.append(f"backend returned {len(response.choices)} of n={request.n} choices")
        return response

    def _sampling(self, request: GenerateRequest) -> dict[str, Any]:
        # at least 1: some servers (llama.cpp's) read max_tokens=0 as "unlimited"
        params: dict[str, Any] = {"model": self.model, "max_tokens": max(request.max_tokens, 1), "temperature": request.temperature}
        if request.top_p is not None:
            params["top_p"] = request.top_p
        if request.n > 1:
            params["n"] = request.n
        if request.seed is not None:
            params["seed"] = request.seed
        if request.stop:
            params["stop"] = list(request.stop)
        return params

    def chat_body(self, request: GenerateRequest) -> dict[str, Any]:
        """The ``/chat/completions`` request body this provider sends for ``request`` (``api="chat"``).

        The live call passes it to ``chat.completions.create`` as is; the Batch API adapter puts the same
        body in its JSONL, so a batch answer is the answer the live call would have given. A chat
        completion carries no exact label scores or continuation log-likelihoods: such requests are refused.
        """
        if request.labels is not None or request.continuation is not None:
            raise CapabilityError("a chat completion gives no exact labels or log-likelihoods", provider=self.kind)
        params = self._sampling(request)
        if request.top_logprobs:
            params["logprobs"] = True
            params["top_logprobs"] = min(request.top_logprobs, self.capabilities.max_top_logprobs)
        messages = request.messages if self.capabilities.prefill else fold_prefill(request.messages)
        return {"messages": [m.model_dump() for m in messages], **params}

    def chat_response(self, completion: Any, request: GenerateRequest) -> GenerateResponse:
        """The :class:`GenerateResponse` for a chat completion answering ``request``: the SDK's object from a
        live call, or the same completion as decoded JSON (e.g. a Batch API result line's body)."""
        choices = [
            Choice(
                text=field(field(c, "message"), "content") or "",
                tokens=chat_logprob_tokens(field(c, "logprobs"), self.kind, self.endpoint) if request.top_logprobs else None,
                finish_reason=field(c, "finish_reason"),
            )
            for c in answer_choices(completion, self.kind)
        ]
        check_length((c.text for c in choices), request, self.kind, self.endpoint)
        return self._response(choices, field(completion, "usage"), answered_by=completion)

    async def _chat(self, request: GenerateRequest) -> GenerateResponse:
        """One live chat completion, sent with the SDK's documented direct ``post`` (its auth, headers,
        timeouts and typed errors) rather than ``chat.completions.create``: the body is plain JSON already,
        which ``create``'s per-call TypedDict transform leaves as it is while costing more CPU than the rest
        of a hosted judgement (``benchmarks/README.md``, "Hosted latency"); the answer is read as JSON, as a
        Batch API line is, instead of being built into pydantic models. ``tests/providers/test_openai_wire.py``
        holds the transform to the identity on every body this adapter makes."""
        answer = await self._client.post(CHAT_PATH, body=self.chat_body(request), cast_to=httpx.Response)
        try:
            completion = answer.json()
        except ValueError:  # a proxy's page, a cut body: worth asking again, and named if it persists
            raise TransientError(
                f"{self.kind}: {self.endpoint} answered {answer.status_code} with a body that is not JSON: {answer.text[:200]!r}",
                provider=self.kind,
            ) from None
        return self.chat_response(completion, request)

    async def _completion(self, request: GenerateRequest) -> GenerateResponse:
        params = self._sampling(request)
        if request.top_logprobs:
            params["logprobs"] = min(request.top_logprobs, self.capabilities.max_top_logprobs)
        raw = await self._client.completions.create(prompt=as_text(request.messages), **params)
        choices = [
            Choice(
                text=c.text or "",
                tokens=_completion_tokens(c.logprobs) if request.top_logprobs else None,
                finish_reason=c.finish_reason,
            )
            for c in answer_choices(raw, self.kind, part=None)
        ]
        check_length((c.text for c in choices), request, self.kind, self.endpoint)
        return self._response(choices, raw.usage, answered_by=raw)

    async def _loglikelihood(self, request: GenerateRequest) -> GenerateResponse:
        """Prompt-token logprobs through ``echo``: the continuation's tokens are those past the prompt's end."""
        if not self.capabilities.loglikelihood:
            raise CapabilityError("log-likelihood needs api='completions' on a server that supports echo", provider=self.kind)
        assert request.continuation is not None  # generate() sends only continuation requests here
        prompt = as_text(request.messages)
        raw = await self._client.completions.create(
            model=self.model, prompt=prompt + request.continuation, max_tokens=1, temperature=0.0, echo=True, logprobs=1
        )
        logprobs = raw.choices[0].logprobs if raw.choices else None
        if logprobs is None or not logprobs.token_logprobs or logprobs.tokens is None:
            raise CapabilityError("the server returned no prompt logprobs for echo=True", provider=self.kind)
        end = len(prompt) + len(request.continuation or "")
        offsets = _echo_offsets(logprobs.tokens, logprobs.text_offset, field(raw.usage, "completion_tokens"), end)
        tokens = [
            TokenLogprob(token=tok, logprob=lp)
            for tok, lp, offset in zip(logprobs.tokens, logprobs.token_logprobs, offsets)
            if len(prompt) <= offset < end and lp is not None
        ]
        return self._response([], raw.usage, answered_by=raw, continuation_tokens=tokens)

    def _response(self, choices: list[Choice], usage: Any, answered_by: Any = None, **extra: Any) -> GenerateResponse:
        """``answered_by``: the completion object (or its JSON), whose ``model`` and ``system_fingerprint``
        name what answered (a dated snapshot behind an alias, a server's build)."""
        provenance = {"runtime": runtime("openai")}
        if self.model_sha256:
            provenance["model_sha256"] = self.model_sha256
        for key in ("model", "system_fingerprint"):
            value = field(answered_by, key) if answered_by is not None else None
            if isinstance(value, str) and value:
                provenance[key] = value
        return GenerateResponse(choices=choices, usage=chat_usage(usage), provider=self.kind, model=self.model, provenance=provenance, **extra)

    async def aclose(self) -> None:
        await self._client.close()


def _completion_tokens(logprobs: Any) -> list[TokenLogprob] | None:
    if logprobs is None or not logprobs.tokens:
        return None
    tops = logprobs.top_logprobs or [None] * len(logprobs.tokens)
    return [
        TokenLogprob(
            token=tok,
            logprob=lp if lp is not None else 0.0,
            top=[TopLogprob(token=k, logprob=v) for k, v in (top or {}).items()],
        )
        for tok, lp, top in zip(logprobs.tokens, logprobs.token_logprobs, tops)
    ]


def _echo_offsets(tokens: list[str], text_offset: list[int] | None, generated: Any, end: int) -> list[int]:
    """Each echoed token's character offset in the text sent (prompt + continuation, ``end`` long).

    llama.cpp's server gives offsets into that text. vLLM (0.33) adds up the tokens' texts from its
    first token, the BOS text where the model has one (``<bos>``), so its offsets run past the text by
    that length; SGLang (0.5.23) sends -1 for every token. Offsets that are missing or negative are
    rebuilt from the tokens' lengths, then all are shifted so that the first generated token (the last
    ``generated`` = ``usage.completion_tokens`` of the list) starts at ``end``. Without that count, rebuilt
    offsets have no anchor and locate nothing (-1), rather than tokens of the prompt.
    """
    offsets = list(text_offset or [])
    given = len(offsets) == len(tokens) and all(isinstance(o, int) and o >= 0 for o in offsets)
    if not given:
        offsets, at = [], 0
        for tok in tokens:
            offsets.append(at)
            at += len(tok)
    if not isinstance(generated, int) or not 0 <= generated < len(tokens):
        return offsets if given else [-1] * len(tokens)
    scored = len(tokens) - generated
    scored_end = offsets[scored] if generated else offsets[-1] + len(tokens[-1])
    return [o - (scored_end - end) for o in offsets]


class OpenAIOptions(ProviderOptions):
    """``model``, ``base_url``, ``api``, ``api_key_env``, ``timeout_s`` and ``capabilities`` are set directly under
    ``[[providers]]``. ``model_sha256``: the sha256 of the model file a self-hosted server (llama.cpp, vLLM) serves.
    A name and a URL say nothing about which weights answer, so a fit made for a file (the fused judge's) applies
    through a server only when the config names that file; it is also in cache keys and each answer's provenance."""

    model_sha256: str | None = Field(default=None, pattern=r"^[0-9a-fA-F]{64}$")


def _build(settings: ProviderSettings, options: OpenAIOptions) -> OpenAIProvider:
    if settings.api == "decisions":  # POST /v1/decisions (providers/openai_decisions.py)
        return OpenAIDecisionsProvider(  # type: ignore[return-value]
            settings.model, base_url=settings.base_url, api_key=settings.api_key(), timeout_s=settings.timeout_s, capabilities=settings.capabilities,
            max_answer_bytes=settings.max_answer_bytes,
        )
    return OpenAIProvider(  # "chat" or "completions": the spec refused any api it does not list
        settings.model, base_url=settings.base_url, api_key=settings.api_key(), api="completions" if settings.api == "completions" else "chat",
        timeout_s=settings.timeout_s, capabilities=settings.capabilities, model_sha256=options.model_sha256,
        max_answer_bytes=settings.max_answer_bytes,
    )  # fmt: skip


PROVIDER = ProviderSpec(
    kind=OpenAIProvider.kind,
    options=OpenAIOptions,
    build=_build,
    capabilities=lambda settings: default_capabilities(settings.api),
    default_model="gpt-4o-mini",
    apis=("chat", "completions", "decisions"),  # /chat/completions, /completions (echo), /v1/decisions
    detect_env="OPENAI_API_KEY",  # the detected chain: first, where its key is set
    detect_order=10,
)
