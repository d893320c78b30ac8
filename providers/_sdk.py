"""Error classification shared by the adapters over Stainless-style SDKs (openai, anthropic, litellm).

Each SDK raises a status error carrying ``status_code``, ``response.headers`` and ``body``, and a
connection error (timeouts included) without one. Both are turned into judgesdk's typed errors so one
retry policy decides for every backend; a timeout becomes a :class:`~judgesdk.core.errors.ProviderTimeoutError`,
which the overload guard reads by type. Error texts never carry the credentials of a URL
(:func:`judgesdk.provider.urls.scrub_credentials`).

What every HTTP adapter holds a server to, here once:

* **``timeout_s`` bounds a whole request** (:func:`within`): the SDKs' own timeout bounds each network read, so
  a body trickled a few bytes at a time would never time out; the whole call (connect, send, every read) gets
  ``timeout_s``, and a call past it is a :class:`~judgesdk.core.errors.ProviderTimeoutError`. Every answer call of
  every HTTP route (chat, completions, Messages, the decision routes, LiteLLM's) goes through it.
* **An answer's decoded size is capped** (``max_answer_bytes``, :data:`DEFAULT_MAX_ANSWER_BYTES` unless set): a gzip
  body of 1 MB can inflate to 1 GB, which the HTTP client would hold whole (and the JSON parser twice over) before
  any check of the answer. Each HTTP client the adapters use gets a transport (:func:`capped_client`; LiteLLM's,
  :func:`cap_litellm`) that decodes the body itself, a bounded piece at a time, and stops at the cap of the call
  :func:`within` is running: an :class:`OversizedAnswerError` (permanent: never retried, never cached) naming
  the cap. Outside :func:`within` (a batch's result file, which may be large) nothing is capped.
* **Redirects are not followed** (:func:`no_redirects`): an API endpoint that answers 3xx is misconfigured (a
  POST redirected becomes a GET; a loop would be retried as a "connection error"), so a 3xx is a permanent
  error naming where it points: set ``base_url`` to that address.
* **A malformed answer is a typed error naming the field** (:func:`malformed`): a logprob token that is not
  text, a Messages reply without content, are a :class:`~judgesdk.core.errors.MalformedAnswerError` (retried
  like any malformed answer, then the item's row is an ``error``, never cached), not a validation dump or an
  "unexpected TypeError".
* **An answer far longer than asked for is refused** (:func:`check_length`): more than
  :func:`max_answer_chars` characters (100 per requested token, at least 64 KiB) cannot be an answer to a judge's
  prompt; kept, it would become a row and a cache entry as large (a 40 MB body, a 41 MB row).
"""

from __future__ import annotations

import asyncio
import importlib
import logging
import math
import os
import sys
import zlib
from collections.abc import AsyncIterator, Awaitable, Iterable
from contextvars import ContextVar
from typing import Any, TypeVar
from urllib.parse import urlsplit

from judgesdk.core import AuthError, MalformedAnswerError, PermanentError, ProviderError, ProviderTimeoutError, TransientError, error_from_status
from judgesdk.provider import GenerateRequest, TokenLogprob, TopLogprob, Usage, redact_url, remember_secret, scrub_credentials

T = TypeVar("T")

log = logging.getLogger("judgesdk.providers")

PLACEHOLDER_KEY = "not-needed"  # sent where no key was configured for the host (the SDKs require one)


def is_default_host(base_url: str | None, default_host: str) -> bool:
    """Whether ``base_url`` is the vendor's own API (``None``, or https on ``default_host``)."""
    if base_url is None:
        return True
    parts = urlsplit(base_url)
    return parts.scheme == "https" and (parts.hostname or "").lower() == default_host


def key_for_host(api_key: str | None, base_url: str | None, default_host: str, env_var: str) -> str | None:
    """The API key to send: ``api_key`` where one was given; else the vendor's variable (``env_var``) only
    when ``base_url`` is the vendor's own host. A key is only ever sent to the host it was configured for:
    a custom ``base_url`` gets nothing from the environment unless its key is named (``api_key_env``)."""
    key = api_key or (os.environ.get(env_var) if is_default_host(base_url, default_host) else None)
    remember_secret(key)  # a key sent is never shown (judgesdk.provider.urls.scrub_credentials)
    return key


def vendor_key(api_key: str | None, base_url: str | None, default_host: str, env_var: str, provider: str) -> str:
    """The key an adapter hands its SDK (:func:`key_for_host`), or :data:`PLACEHOLDER_KEY` for a host that needs
    none; an :class:`~judgesdk.core.errors.AuthError` naming ``env_var`` when the vendor's own host has no key."""
    key = key_for_host(api_key, base_url, default_host, env_var)
    if not key and is_default_host(base_url, default_host):
        raise AuthError(f"the {provider} provider needs {env_var} (or api_key=...) for {default_host}", provider=provider)
    return key or PLACEHOLDER_KEY


# The variables the SDKs (and LiteLLM's routes) read for a base URL when given none: judgesdk never lets them
# choose the host, which would pair the vendor's key with a host no config named.
BASE_URL_VARIABLES = {"openai": ("OPENAI_BASE_URL", "OPENAI_API_BASE"), "anthropic": ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_BASE")}
_warned: set[str] = set()


def own_endpoint(base_url: str | None, default: str, vendor: str) -> str:
    """Where an adapter sends its requests: the configured ``base_url``, else the vendor's own ``default``, passed
    to the SDK explicitly so that ``OPENAI_BASE_URL`` / ``ANTHROPIC_BASE_URL`` in the environment (which the SDKs
    read when given no base URL) can never send the vendor's key, and file its answers, somewhere else. A
    variable set and so ignored is said once per process."""
    if base_url:
        return base_url
    for name in BASE_URL_VARIABLES.get(vendor, ()):
        if os.environ.get(name) and name not in _warned:
            _warned.add(name)
            log.warning(
                "judgesdk: %s is set and ignored: the %s provider calls %s; to call another host set base_url under "
                "[[providers]] (or --base-url, JUDGESDK_BASE_URL), which sends that host only the key api_key_env names",
                name, vendor, default,
            )  # fmt: skip
    return default


# The SDKs' timeout classes, looked up in the modules already imported (an exception of a module that was
# never imported cannot be raised): litellm's Timeout (status_code 408, set by LiteLLM, not a server) is an
# openai.APITimeoutError; anthropic >= 2.x is built on the httpx2 fork.
_TIMEOUT_CLASSES = (
    ("openai", "APITimeoutError"),
    ("anthropic", "APITimeoutError"),
    ("litellm", "Timeout"),
    ("httpx", "TimeoutException"),
    ("httpx2", "TimeoutException"),
    ("httpcore", "TimeoutException"),
)


def timeout_types() -> tuple[type[BaseException], ...]:
    """The exception classes that mean "no answer within the client's timeout"."""
    found: list[type[BaseException]] = [TimeoutError, asyncio.TimeoutError]  # the same class from Python 3.11
    for module, name in _TIMEOUT_CLASSES:
        cls = getattr(sys.modules.get(module), name, None)
        if isinstance(cls, type) and issubclass(cls, BaseException):
            found.append(cls)
    return tuple(found)


def in_chain(exc: BaseException, kinds: type[BaseException] | tuple[type[BaseException], ...]) -> BaseException | None:
    """``exc`` or the first exception it was raised from (``__cause__``, else ``__context__``; 8 deep at most: an
    SDK wraps what its transport raised) that is one of ``kinds``; None if none is."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return None
        if isinstance(seen, kinds):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def timed_out(exc: BaseException) -> bool:
    """Whether ``exc``, or an exception it was raised from, is a client timeout."""
    return in_chain(exc, timeout_types()) is not None


def classify(exc: Exception, provider: str) -> ProviderError:
    """The typed error for an SDK's exception: a timeout class first (LiteLLM gives its Timeout a 408), then
    the HTTP status where a server answered, then a timeout among the exceptions it was raised from."""
    if (refused := oversized(exc)) is not None:  # the transport's refusal, wrapped by the SDK: as raised
        return refused
    status = getattr(exc, "status_code", None)
    text = scrub_credentials(str(exc))
    if isinstance(exc, timeout_types()) or (not isinstance(status, int) and timed_out(exc)):
        return ProviderTimeoutError(f"{provider}: {type(exc).__name__}: {text}", provider=provider)
    if isinstance(status, int):
        response = getattr(exc, "response", None)
        headers = getattr(response, "headers", None)
        if 300 <= status < 400:  # redirects are not followed (module docstring)
            location = headers.get("location") if headers is not None else None
            where = f" to {redact_url(str(location))}" if location else ""
            return PermanentError(
                f"{provider}: HTTP {status}: the server redirects{where}; redirects are not followed: set base_url to the address it "
                "should be (the one it redirects to, if you trust it)",
                status=status, provider=provider,
            )  # fmt: skip
        return error_from_status(
            status,
            scrub_credentials(getattr(exc, "message", None) or str(exc)),
            provider=provider,
            headers=headers,
            body=getattr(exc, "body", None),
        )
    return TransientError(f"{provider}: {type(exc).__name__}: {text}", provider=provider)


async def within(timeout_s: float, call: Awaitable[T], provider: str, max_bytes: int | None = None) -> T:
    """``call``, bounded as a whole by ``timeout_s`` (module docstring): past it, a ProviderTimeoutError. ``max_bytes``
    caps the decoded size of each answer the call reads through a :func:`capped_client` (None:
    :data:`DEFAULT_MAX_ANSWER_BYTES`); past it, an :class:`OversizedAnswerError`. ``provider`` names the kind in
    the errors."""
    token = _answer_cap.set((max_bytes or DEFAULT_MAX_ANSWER_BYTES, provider))  # read by the capped transports
    try:
        return await asyncio.wait_for(call, timeout_s)  # the call's task copies the context set above
    except asyncio.TimeoutError:
        raise ProviderTimeoutError(
            f"{provider}: Timeout: no complete answer within timeout_s = {timeout_s:g} s (it bounds the whole request, the body's last byte included)",
            provider=provider,
        ) from None
    finally:
        _answer_cap.reset(token)


def no_redirects(client_class: Any, timeout_s: float) -> Any:
    """An SDK's default async HTTP client (``openai.DefaultAsyncHttpxClient``...) that does not follow redirects,
    its answers' decoded size capped inside :func:`within` (:func:`capped_client`)."""
    return capped_client(client_class(follow_redirects=False, timeout=timeout_s))


# -- the cap on an answer's decoded size (module docstring) ----------------------------------------------------

DEFAULT_MAX_ANSWER_BYTES = 64 * 2**20  # 64 MiB: a judge's answer (n samples, 20 logprobs a token) is far smaller
_PIECE = 64 * 1024  # most bytes one inflation step may produce
# (the cap, the provider) of the answer call running in this context; None: outside within(), nothing capped
_answer_cap: ContextVar[tuple[int, str] | None] = ContextVar("judgesdk_answer_cap", default=None)


class OversizedAnswerError(PermanentError):
    """An answer whose decoded body is larger than ``max_answer_bytes``: refused while it is read (no more of it is
    decoded), never retried, never cached. Raise the cap under ``[[providers]]`` if such answers are expected."""


def oversized(exc: BaseException) -> OversizedAnswerError | None:
    """The :class:`OversizedAnswerError` ``exc`` is, or was raised from (an SDK wraps what its transport raised)."""
    found = in_chain(exc, OversizedAnswerError)
    return found if isinstance(found, OversizedAnswerError) else None


def capped_client(client: Any) -> Any:
    """``client`` (an ``httpx`` or ``httpx2`` ``AsyncClient``, the SDK's defaults kept) with each of its transports
    wrapped by :func:`capped_transport`. Returns ``client``."""
    client._transport = capped_transport(client._transport)
    mounts = getattr(client, "_mounts", None)
    if isinstance(mounts, dict):
        for pattern, transport in list(mounts.items()):
            mounts[pattern] = None if transport is None else capped_transport(transport)
    return client


def capped_transport(inner: Any) -> Any:
    """``inner`` (an async transport of httpx or of its httpx2 fork) wrapped so that, inside :func:`within`, each
    response's body is decoded here and refused past the call's cap (module docstring); wrapped once."""
    if getattr(inner, "_judgesdk_capped", False):
        return inner
    package = "httpx2" if _is_from(inner, "httpx2") else "httpx"
    return _classes(importlib.import_module(package))[0](inner)


def cap_litellm() -> None:
    """Cap the answers LiteLLM reads (module docstring) as :func:`capped_client` caps the adapters' own clients: every
    async transport LiteLLM makes (its HTTP handler's, its OpenAI routes' clients) is made wrapped by
    :func:`capped_transport`. Patched once per process, when a LiteLLM adapter is first built; the clients LiteLLM
    cached before then are dropped, to be made again, capped. Outside :func:`within` the wrapper changes nothing."""
    try:
        from litellm.llms.custom_httpx.http_handler import AsyncHTTPHandler as handler
    except ImportError:  # pragma: no cover - another layout: LiteLLM's own clients stay uncapped (the deadline holds)
        return
    create = getattr(handler, "create_async_transport", None)
    if create is None or getattr(create, "_judgesdk_capped", False):
        return

    def capped_create(*args: Any, **kwargs: Any) -> Any:
        transport = create(*args, **kwargs)
        return None if transport is None else capped_transport(transport)

    capped_create._judgesdk_capped = True  # type: ignore[attr-defined]
    handler.create_async_transport = staticmethod(capped_create)  # type: ignore[method-assign]
    handler._create_async_transport = staticmethod(capped_create)
    cached: Any = getattr(sys.modules.get("litellm"), "in_memory_llm_clients_cache", None)
    if hasattr(cached, "flush_cache"):
        cached.flush_cache()


def _is_from(transport: Any, package: str) -> bool:
    return any(cls.__module__.split(".")[0] == package for cls in type(transport).__mro__)


_CLASSES: dict[str, tuple[type, type]] = {}


def _classes(http: Any) -> tuple[type, type]:
    """The capping transport and byte stream classes for the HTTP package ``http`` (httpx or httpx2: each checks
    that a stream is its own ``AsyncByteStream``), made once per package."""
    if http.__name__ in _CLASSES:
        return _CLASSES[http.__name__]

    class CappedStream(http.AsyncByteStream):
        def __init__(self, response: Any, request: Any, limit: int, provider: str) -> None:
            self._response, self._request, self._limit, self._provider = response, request, limit, provider

        async def __aiter__(self) -> AsyncIterator[bytes]:
            decoded = 0
            async for raw, piece in _decoded(http, self._response, self._request):
                decoded += len(piece)
                if decoded > self._limit or raw > self._limit:  # raw: bytes after a gzip member's end count too
                    await self.aclose()
                    raise OversizedAnswerError(
                        f"{self._provider}: the answer from {scrub_credentials(redact_url(str(self._request.url)))} is larger than max_answer_bytes = "
                        f"{self._limit:,} bytes decoded: not read further, not used (raise max_answer_bytes under [[providers]] "
                        "if such answers are expected)",
                        provider=self._provider,
                    )
                if piece:
                    yield piece

        async def aclose(self) -> None:
            await self._response.aclose()

    class CappedTransport(http.AsyncBaseTransport):
        _judgesdk_capped = True

        def __init__(self, inner: Any) -> None:
            self._inner = inner

        async def handle_async_request(self, request: Any) -> Any:
            response = await self._inner.handle_async_request(request)
            cap = _answer_cap.get()
            if cap is None:  # not an answer call (a batch's result file): as the server sent it
                return response
            raw = http.Response(response.status_code, headers=response.headers, stream=response.stream, request=request)
            # the body is decoded here: the client gets it plain (its own decoder would inflate it unbounded)
            headers = [(k, v) for k, v in response.headers.raw if k.lower() not in (b"content-encoding", b"content-length")]
            stream = CappedStream(raw, request, *cap)
            return http.Response(response.status_code, headers=headers, stream=stream, extensions=response.extensions, request=request)

        async def aclose(self) -> None:
            await self._inner.aclose()

        async def __aenter__(self) -> Any:
            await self._inner.__aenter__()
            return self

        async def __aexit__(self, *args: Any) -> None:
            await self._inner.__aexit__(*args)

    _CLASSES[http.__name__] = (CappedTransport, CappedStream)
    return _CLASSES[http.__name__]


async def _decoded(http: Any, response: Any, request: Any) -> AsyncIterator[tuple[int, bytes]]:
    """``response``'s body decoded, as (raw bytes read so far, the next decoded piece). A gzip or deflate body is
    inflated here, at most :data:`_PIECE` bytes a step (a bomb's first megabytes, never its gigabyte); another
    encoding (br, zstd, a chain) through the HTTP package's own decoders, which inflate one network chunk at a
    time."""
    encoding = response.headers.get("content-encoding", "").strip().lower()
    raw = 0
    if encoding not in ("gzip", "x-gzip", "deflate"):
        plain = encoding in ("", "identity")
        async for chunk in response.aiter_raw() if plain else response.aiter_bytes():
            raw += len(chunk) if plain else 0
            yield raw, chunk
        return
    inflater = _Inflater(encoding)
    async for chunk in response.aiter_raw():
        raw += len(chunk)
        yield raw, b""
        pieces = iter(inflater.pieces(chunk))
        while True:  # one piece at a time: the caller stops at the cap before the next step is inflated
            try:
                piece = next(pieces, None)
            except zlib.error as exc:
                raise http.DecodingError(f"the {encoding} body does not decode: {exc}", request=request) from None
            if piece is None:
                break
            yield raw, piece


class _Inflater:
    """zlib over a gzip or deflate body, each step's output bounded. Deflate is sent zlib-wrapped (RFC 9110) or, by
    some servers, raw: as httpx does, a body that fails as the first is read as the second."""

    def __init__(self, encoding: str) -> None:
        self._fallback = encoding == "deflate"
        self._zlib = zlib.decompressobj(zlib.MAX_WBITS if self._fallback else zlib.MAX_WBITS | 16)
        self._head = b""  # a deflate body's input until it gives output, to read again as raw deflate

    def pieces(self, data: bytes) -> Iterable[bytes]:
        while data and not self._zlib.eof:
            try:
                piece = self._zlib.decompress(data, _PIECE)
            except zlib.error:
                if not self._fallback:
                    raise
                self._fallback, self._zlib = False, zlib.decompressobj(-zlib.MAX_WBITS)
                data, self._head = self._head + data, b""
                continue
            if self._fallback:
                self._head += data[: len(data) - len(self._zlib.unconsumed_tail)]
                self._fallback = not piece and len(self._head) < 1024  # output, or a long header: zlib-wrapped it is
            data = self._zlib.unconsumed_tail
            if piece:
                yield piece


def malformed(provider: str, endpoint: str, what: str) -> MalformedAnswerError:
    """The error for an answer whose JSON is not the API's shape: ``what`` names the field (module docstring)."""
    return MalformedAnswerError(f"{provider}: malformed answer from {redact_url(endpoint)}: {what}", provider=provider)


def max_answer_chars(request: GenerateRequest) -> int:
    """The longest answer text accepted for ``request``: 100 characters per requested token, at least 64 KiB."""
    return max(65_536, 100 * max(request.max_tokens, 1))


def check_length(texts: Iterable[str], request: GenerateRequest, provider: str, endpoint: str) -> None:
    """A :func:`malformed` error when an answer text is longer than :func:`max_answer_chars` (module docstring)."""
    limit = max_answer_chars(request)
    longest = max((len(text) for text in texts), default=0)
    if longest > limit:
        raise malformed(
            provider, endpoint, f"an answer of {longest:,} characters, for at most {request.max_tokens} tokens (the limit is {limit:,}): not used"
        )


def answer_choices(answer: Any, provider: str, *, part: str | None = "message") -> list[Any]:
    """The ``choices`` of a completion (an SDK object or its JSON), or a
    :class:`~judgesdk.core.errors.MalformedAnswerError` when the body is no completion: an error object sent
    with HTTP 200, a JSON array, ``choices`` missing, empty or not a list, a choice that is not an object (or
    lacks its ``part``: a chat choice's ``message``). Read as an answer, such a body would be an empty text,
    ``unparsed``: a final verdict, cached (:mod:`judgesdk.provider.layers.answers`)."""
    error = field(answer, "error") if isinstance(answer, dict) or hasattr(answer, "error") else None
    if error:
        message = field(error, "message") if isinstance(error, dict) or hasattr(error, "message") else error
        raise MalformedAnswerError(f"{provider}: the server answered 200 with an error: {str(message)[:200]!r}", provider=provider)
    if isinstance(answer, (list, str, int, float)) or answer is None:
        raise MalformedAnswerError(f"{provider}: the server answered 200 with a JSON {_json_kind(answer)}, not a completion", provider=provider)
    choices = field(answer, "choices")
    if not isinstance(choices, list) or not choices:
        what = "no 'choices'" if choices is None else "an empty 'choices' list" if isinstance(choices, list) else f"'choices' as a JSON {_json_kind(choices)}"
        raise MalformedAnswerError(f"{provider}: the server answered 200 with {what}, not a completion", provider=provider)
    for index, choice in enumerate(choices):
        shaped = isinstance(choice, dict) or hasattr(choice, "__dict__")
        inner = field(choice, part) if shaped and part else choice
        if not shaped or (part and not (isinstance(inner, dict) or hasattr(inner, "__dict__"))):
            raise MalformedAnswerError(
                f"{provider}: choice {index} of the answer is no completion choice{f' (no {part!r} object)' if shaped else ''}", provider=provider
            )
    return choices


def _json_kind(value: Any) -> str:
    return {list: "array", str: "string", dict: "object", bool: "boolean", type(None): "null"}.get(type(value), "number")


def field(obj: Any, name: str, default: Any = None) -> Any:
    """Attribute or key: litellm hands back SDK objects or plain dicts depending on the backend."""
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def chat_logprob_tokens(logprobs: Any, provider: str = "", endpoint: str = "") -> list[TokenLogprob] | None:
    """Tokens of a chat completion choice's ``logprobs.content`` (OpenAI wire format), or None if absent. A token
    that is not text, or alternatives that are not a list, are a :func:`malformed` answer naming the field."""
    content = field(logprobs, "content")
    if not content:
        return None
    if not isinstance(content, list):
        raise malformed(provider, endpoint, f"logprobs.content is {json_kind(content)}, not a list of tokens")
    tokens = []
    for i, t in enumerate(content):
        top = field(t, "top_logprobs") or []
        if not isinstance(top, list):
            raise malformed(provider, endpoint, f"logprobs.content[{i}].top_logprobs is {json_kind(top)}, not a list")
        alternatives = []
        for j, a in enumerate(top):
            lp = _logprob(field(a, "logprob", 0.0), None)
            if lp is not None:
                alternatives.append(TopLogprob(token=_token(field(a, "token", ""), provider, endpoint, f"logprobs.content[{i}].top_logprobs[{j}].token"), logprob=lp))
        token = _token(field(t, "token", ""), provider, endpoint, f"logprobs.content[{i}].token")
        tokens.append(TokenLogprob(token=token, logprob=_logprob(field(t, "logprob", 0.0), IMPOSSIBLE), top=alternatives))
    return tokens


def _token(value: Any, provider: str, endpoint: str, where: str) -> str:
    if not isinstance(value, str):
        raise malformed(provider, endpoint, f"{where} is {json_kind(value)}, not text")
    return value


def json_kind(value: Any) -> str:
    """How a JSON value is named in a message (never the value: an answer may be huge)."""
    return {type(None): "null", bool: "true/false", int: "a number", float: "a number", str: "text", dict: "an object", list: "an array"}.get(
        type(value), type(value).__name__
    )


IMPOSSIBLE = -9999.0  # a token the server gave probability 0 (vLLM's own stand-in for -inf)


def _logprob(value: Any, impossible: float | None) -> float | None:
    """A logprob as sent, or ``impossible`` for the ``null`` (SGLang) or -inf a server writes for a token of
    no probability: an alternative with no probability is dropped (it holds no mass), a chosen token gets a
    finite floor, so the response can be cached and read back as JSON. NaN and +inf are kept as sent: no
    log-probability, they make the answer malformed (:mod:`judgesdk.provider.layers.answers`)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value != -math.inf:
        return float(value)
    return impossible


def chat_usage(usage: Any) -> Usage:
    details = field(usage, "prompt_tokens_details")
    return Usage(
        input_tokens=field(usage, "prompt_tokens", 0) or 0,
        output_tokens=field(usage, "completion_tokens", 0) or 0,
        cached_input_tokens=field(details, "cached_tokens", 0) or 0,
        # LiteLLM reports Anthropic cache writes here (prompt_tokens already counts them); OpenAI reports none
        cache_write_input_tokens=field(details, "cache_write_tokens", 0) or field(usage, "cache_creation_input_tokens", 0) or 0,
        calls=1,
    )
