"""Error classification shared by the adapters over Stainless-style SDKs (openai, anthropic, litellm).

Each SDK raises a status error carrying ``status_code``, ``response.headers`` and ``body``, and a
connection error (timeouts included) without one. Both are turned into judgesdk's typed errors so one
retry policy decides for every backend; a timeout becomes a :class:`~judgesdk.core.errors.ProviderTimeoutError`,
which the overload guard reads by type.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import sys
from typing import Any
from urllib.parse import urlsplit

from judgesdk.core.errors import MalformedAnswerError, ProviderError, ProviderTimeoutError, TransientError, error_from_status
from judgesdk.provider.protocol import TokenLogprob, TopLogprob, Usage

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
    if api_key:
        return api_key
    return os.environ.get(env_var) if is_default_host(base_url, default_host) else None


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
    if isinstance(exc, timeout_types()) or (not isinstance(status, int) and timed_out(exc)):
        return ProviderTimeoutError(f"{provider}: {type(exc).__name__}: {exc}", provider=provider)
    if isinstance(status, int):
        response = getattr(exc, "response", None)
        return error_from_status(
            status,
            getattr(exc, "message", None) or str(exc),
            provider=provider,
            headers=getattr(response, "headers", None),
            body=getattr(exc, "body", None),
        )
    return TransientError(f"{provider}: {type(exc).__name__}: {exc}", provider=provider)


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


def chat_logprob_tokens(logprobs: Any) -> list[TokenLogprob] | None:
    """Tokens of a chat completion choice's ``logprobs.content`` (OpenAI wire format), or None if absent."""
    content = field(logprobs, "content")
    if not content:
        return None
    return [
        TokenLogprob(
            token=field(t, "token", ""),
            logprob=_logprob(field(t, "logprob", 0.0), IMPOSSIBLE),
            top=[
                TopLogprob(token=field(a, "token", ""), logprob=lp)
                for a in field(t, "top_logprobs") or []
                if (lp := _logprob(field(a, "logprob", 0.0), None)) is not None
            ],
        )
        for t in content
    ]


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
