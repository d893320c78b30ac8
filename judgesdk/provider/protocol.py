"""The one interface every model backend implements.

A provider turns a typed :class:`GenerateRequest` into a typed :class:`GenerateResponse` and knows
nothing about scoring. Everything a judge needs from a model fits in that single call:

* plain generation (``max_tokens``, ``temperature``, ``n``...),
* per-token log-probabilities with top alternatives (``top_logprobs > 0``),
* exact label scoring (``labels``: the log-probability of each label's token sequence as the
  continuation of the prompt, computed over the full vocabulary without generating), and
* the log-likelihood of a given continuation (``continuation``), and
* typed decision questions about one input, answered with the server's own probabilities (``decision``:
  :mod:`judgesdk.provider.decisions`; OpenAI Decisions, System One, ``judgesdk serve``).

Keeping it one call means the behaviours that wrap providers (cache, retry, rate limits) wrap every
use of a model without knowing which use it is, in the spirit of httpx transports.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from importlib.metadata import PackageNotFoundError, version
from typing import Annotated, Literal, Protocol, TypeVar, runtime_checkable

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from judgesdk.core import Usage
from judgesdk.provider.decisions import DecisionAnswer, DecisionRequest


class Message(BaseModel):
    """One turn. A trailing ``assistant`` message is a prefill the answer continues from."""

    model_config = ConfigDict(frozen=True)

    role: Literal["system", "user", "assistant"]
    content: str


class Capabilities(BaseModel):
    """What a backend can do. Declared by the provider, overridable in config; never a model-name list."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    logprobs: bool = False
    max_top_logprobs: int = 0
    multiple_samples: bool = False  # one request can return n>1 samples
    seed: bool = False
    exact_labels: bool = False  # full-vocabulary label probabilities without generation
    loglikelihood: bool = False  # log-probability of a given continuation
    prefill: bool = False  # a trailing assistant message is continued, not ignored
    grammar: bool = False  # generation follows ``GenerateRequest.grammar`` (GBNF); others must never be sent one
    decisions: bool = False  # answers ``GenerateRequest.decision`` (typed questions) with the server's own probabilities
    max_questions: int = Field(default=0, ge=0)  # most questions one decision call takes (the adapter splits above it)


class GenerateRequest(BaseModel):
    """Everything that can change a model's answer, and nothing else (it is the cache key).

    ``sample_index`` distinguishes repeated sampled calls so a cache never collapses them; ``tags``
    carries provenance that must also enter the key (template id, version and content hash).
    ``grammar`` is a GBNF grammar (llama.cpp's format) the generated text must follow; callers set it
    only for providers whose ``capabilities.grammar`` is True, since a provider without it would return
    unconstrained text that looks constrained. ``decision`` is a decision request (an input and typed
    questions), sent only to providers whose ``capabilities.decisions`` is True; ``messages`` is then empty.
    """

    model_config = ConfigDict(frozen=True)

    messages: tuple[Message, ...]
    max_tokens: int = Field(default=16, ge=0)
    temperature: float = Field(default=0.0, ge=0.0)
    top_p: float | None = None
    top_logprobs: int = Field(default=0, ge=0)
    n: int = Field(default=1, ge=1)
    seed: int | None = None
    stop: tuple[str, ...] = ()
    sample_index: int = 0
    labels: tuple[str, ...] | None = None
    continuation: str | None = None
    tags: tuple[tuple[str, str], ...] = ()
    grammar: str | None = None
    decision: DecisionRequest | None = None

    def fingerprint(self) -> str:
        """A stable hash of the request (sorted JSON). Fields added later with a None default (``grammar``)
        are left out while None, so the keys of requests that do not use them, and the caches holding
        those keys, stay what they were."""
        dumped = self.model_dump(mode="json")
        for late in ("grammar", "decision"):
            if dumped[late] is None:
                del dumped[late]
        payload = json.dumps(dumped, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(payload.encode("utf-8")).hexdigest()


_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


def _unicode_text(value: str) -> str:
    """A model's text with each lone surrogate (which JSON's ``\\udXXX`` escapes can carry from a server,
    and which no UTF-8 file, terminal or cache can hold) replaced by U+FFFD: the answer is kept, judged and
    written like any other instead of failing where it is printed or stored."""
    return _LONE_SURROGATE.sub("\ufffd", value) if _LONE_SURROGATE.search(value) else value


ModelText = Annotated[str, AfterValidator(_unicode_text)]  # text that came from a model


class TopLogprob(BaseModel):
    """One alternative at a token's position: the token a backend could have generated there, and its
    log-probability."""

    token: ModelText
    logprob: float


class TokenLogprob(BaseModel):
    """One generated (or scored) token with its log-probability and the top alternatives at its position."""

    token: ModelText
    logprob: float
    top: list[TopLogprob] = Field(default_factory=list)


class Choice(BaseModel):
    """One generated answer: its text, its tokens with their log-probabilities where the backend returned them,
    and why generation stopped (the backend's ``finish_reason``)."""

    text: ModelText
    tokens: list[TokenLogprob] | None = None  # None: the backend returned no logprobs
    finish_reason: str | None = None


class GenerateResponse(BaseModel):
    """Everything a provider answered to one :class:`GenerateRequest`, whichever way it was asked: generated
    ``choices``, exact ``label_logprobs``, scored ``continuation_tokens`` or ``decisions``; with what it cost, how
    long it took, who answered and whether it came from a cache. It is what the cache stores."""

    choices: list[Choice] = Field(default_factory=list)
    label_logprobs: dict[str, float] | None = None  # log P(label | prompt), exact, per label
    continuation_tokens: list[TokenLogprob] | None = None  # log P(token | prompt, previous tokens)
    usage: Usage = Field(default_factory=Usage)
    latency_s: float = 0.0
    provider: str = ""
    model: str = ""
    cached: bool = False
    notes: list[str] = Field(default_factory=list)  # e.g. "logprobs dropped by the backend"
    decisions: list[DecisionAnswer] | None = None  # one answer per question of ``request.decision``, in its order
    # who answered, as the answer says (judgesdk.core.provenance): "model" (the id the API reports, which can name
    # a snapshot the configured alias resolved to), "system_fingerprint", "model_sha256" (a local file),
    # "runtime" (client library and version). Stored with the response, so a cached answer keeps it.
    provenance: dict[str, str] = Field(default_factory=dict)


@runtime_checkable
class Provider(Protocol):
    """A model backend. ``kind`` names the adapter, ``model`` the model, ``endpoint`` where it lives.

    A backend whose answers can change while those three stay the same (a model file replaced at the same
    path) also has an ``identity`` attribute: a string that changes with what answers. It is optional (a
    protocol member would force it on every adapter, and a hosted API's model name is all a client can
    know), so it is read through :func:`identity_of`; the cache key includes it. Likewise an adapter whose
    typed options change answers (a local model's ``parallel_suffixes``, an OpenAI server's ``api``) names the
    ones set away from their defaults in an ``answer_settings`` string, read through :func:`settings_of`: the
    cache key and each result's provenance include it (each kind's ``ProviderSpec.answer_neutral`` lists the
    options that do not change answers, and why).
    """

    # read-only properties, not plain attributes: the wrappers (cache, retry, witness...) pass their inner
    # provider's values through properties, which a settable protocol member would reject
    @property
    def kind(self) -> str: ...
    @property
    def model(self) -> str: ...
    @property
    def endpoint(self) -> str: ...
    @property
    def capabilities(self) -> Capabilities: ...

    async def generate(self, request: GenerateRequest) -> GenerateResponse: ...

    async def aclose(self) -> None: ...


def identity_of(provider: Provider) -> str:
    """What names the answering model beyond kind, model and endpoint (e.g. a fingerprint of a GGUF file's
    content), or "" when the provider declares no ``identity``. Wrappers pass their inner provider's on."""
    return str(getattr(provider, "identity", "") or "")


async def learn_identity(provider: Provider) -> bool:
    """Let the adapter under any wrappers learn, once, the part of its ``identity`` only its server can tell (which
    model an OpenAI-compatible server serves behind its URL: ``learn_identity`` of the adapter); True when the identity
    is settled (or the adapter has nothing to learn), False when the server could not say just now: a cache must then
    neither serve nor store that request's answer, since it cannot tell which model gave it."""
    learn = getattr(unwrap(provider), "learn_identity", None)
    return True if learn is None else bool(await learn())


def settings_of(provider: Provider) -> str:
    """The adapter's answer-changing options that differ from their defaults, as ``name=value`` joined by ``;``
    (e.g. ``"parallel_suffixes=4"``), or "" when all are at their defaults (keys then stay those of before the
    options were keyed) or the provider declares no ``answer_settings``. Wrappers pass their inner provider's on."""
    return str(getattr(provider, "answer_settings", "") or "")


def answer_settings(values: dict[str, object], defaults: dict[str, object]) -> str:
    """:func:`settings_of`'s text for an adapter: ``values`` that differ from ``defaults``, sorted by name."""
    return ";".join(f"{name}={values[name]}" for name in sorted(values) if values[name] != defaults.get(name))


@functools.cache
def runtime(package: str) -> str:
    """``"<package> <version>"`` of an installed client library: what an adapter puts in its responses'
    ``provenance["runtime"]``, since the same model answers differently under another client or engine."""
    try:
        return f"{package} {version(package)}"
    except PackageNotFoundError:
        return package


def request_text(request: GenerateRequest) -> str:
    """The text a request sends, as token estimates count it: its messages, or its decision request's input
    and questions."""
    return request.decision.as_text() if request.decision is not None else as_text(request.messages)


def as_text(messages: tuple[Message, ...] | list[Message]) -> str:
    """Render messages as plain completion text for base models and completion endpoints.

    Contents are joined by blank lines, without role labels; a trailing assistant prefill is
    appended directly so the model continues it.
    """
    parts = list(messages)
    prefill = ""
    if parts and parts[-1].role == "assistant":
        prefill = parts.pop().content
    body = "\n\n".join(m.content for m in parts)
    return f"{body}\n{prefill}" if prefill else body


class WrapperProvider:
    """A provider that adds behaviour around another one (cache, retry, rate limit) and delegates the rest."""

    def __init__(self, inner: Provider) -> None:
        self.inner = inner

    @property
    def kind(self) -> str:
        return self.inner.kind

    @property
    def model(self) -> str:
        return self.inner.model

    @property
    def endpoint(self) -> str:
        return self.inner.endpoint

    @property
    def capabilities(self) -> Capabilities:
        return self.inner.capabilities

    @property
    def identity(self) -> str:
        return identity_of(self.inner)

    @property
    def answer_settings(self) -> str:
        return settings_of(self.inner)

    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        return await self.inner.generate(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


def unwrap(provider: Provider) -> Provider:
    """The innermost provider under any wrappers."""
    while isinstance(provider, WrapperProvider):
        provider = provider.inner
    return provider


W = TypeVar("W", bound=WrapperProvider)


def find_layer(provider: Provider, layer: type[W]) -> W | None:
    """The outermost wrapper of type ``layer`` in a stack (e.g. its ``RateLimitedProvider``, to read its
    stats after a run), or None when the stack has none. ``provider``: the top of the stack; the search follows
    each wrapper's ``inner`` down to the adapter."""
    while isinstance(provider, WrapperProvider):
        if isinstance(provider, layer):
            return provider
        provider = provider.inner
    return None


def fold_prefill(messages: tuple[Message, ...]) -> tuple[Message, ...]:
    """For chat APIs that cannot continue an assistant turn: append the prefill to the last user turn.

    ``messages``: the rendered prompt; returned unchanged unless it ends with an assistant turn (the prefill),
    which is then joined to the user turn before it after a blank line (dropped when no user turn precedes it)."""
    if not messages or messages[-1].role != "assistant":
        return messages
    *head, prefill = messages
    if head and head[-1].role == "user":
        last = head.pop()
        head.append(Message(role="user", content=f"{last.content}\n\n{prefill.content}"))
    return tuple(head)
