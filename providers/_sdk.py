"""Error classification shared by the adapters over Stainless-style SDKs (openai, anthropic, litellm).

Each SDK raises a status error carrying ``status_code``, ``response.headers`` and ``body``, and a
connection error (timeouts included) without one. Both are turned into judgesdk's typed errors so one
retry policy decides for every backend; a timeout becomes a :class:`~judgesdk.core.errors.ProviderTimeoutError`,
which the overload guard reads by type. Error texts never carry the credentials of a URL
(:func:`judgesdk.provider.urls.scrub_credentials`).

What every HTTP adapter holds a server to, here once:

* **``timeout_s`` bounds a whole request** (:func:`within`): the SDKs' own timeout bounds each network read, so
  a body trickled a few bytes at a time would never time out; the whole call (connect, send, every read) gets
  ``timeout_s``, and a call past it is a :class:`~judgesdk.core.errors.ProviderTimeoutError`.
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
import logging
import math
import os
import sys
from collections.abc import Awaitable, Iterable
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


def timed_out(exc: BaseException) -> bool:
    """Whether ``exc``, or an exception it was raised from, is a client timeout."""
    kinds = timeout_types()
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            return False
        if isinstance(seen, kinds):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def classify(exc: Exception, provider: str) -> ProviderError:
    """The typed error for an SDK's exception: a timeout class first (LiteLLM gives its Timeout a 408), then
    the HTTP status where a server answered, then a timeout among the exceptions it was raised from."""
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


async def within(timeout_s: float, call: Awaitable[T], provider: str) -> T:
    """``call``, bounded as a whole by ``timeout_s`` (module docstring): past it, a ProviderTimeoutError."""
    try:
        return await asyncio.wait_for(call, timeout_s)
    except asyncio.TimeoutError:
        raise ProviderTimeoutError(
            f"{provider}: Timeout: no complete answer within timeout_s = {timeout_s:g} s (it bounds the whole request, the body's last byte included)",
            provider=provider,
        ) from None


def no_redirects(client_class: Any, timeout_s: float) -> Any:
    """An SDK's default async HTTP client (``openai.DefaultAsyncHttpxClient``...) that does not follow redirects."""
    return client_class(follow_redirects=False, timeout=timeout_s)


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
