"""Typed errors. Each says what went wrong and what to do about it.

Provider errors are classified once, here, so that one retry policy serves every backend:
``TransientError`` (and its subclasses) may succeed on a later attempt; ``PermanentError`` never will.
"""

from __future__ import annotations

import math


class JudgeSDKError(Exception):
    """Base of every error judgesdk raises on purpose."""


class InputError(JudgeSDKError):
    """The caller passed something judgesdk cannot use; the message says what to fix.

    Not a ValueError on purpose: pydantic would wrap a ValueError raised in a validator into a
    ValidationError, and callers should see this type, whichever layer found the problem.
    """


class MissingItemField(InputError):
    """An item lacks a field its method's prompt shows (``source``, ``reference``, ``context``): the fault of that
    item, not of the run, so a judge makes it that item's ``error`` result, naming the item and the field, and
    judges the others (issue 28). ``fields`` are the missing fields."""

    def __init__(self, message: str, *, fields: tuple[str, ...] | list[str] = ("source",)) -> None:
        super().__init__(message)
        self.fields = tuple(fields)


class MissingDependencyError(JudgeSDKError, ImportError):
    """An optional dependency is not installed; the message names the package to install."""


class ConfigError(JudgeSDKError, ValueError):
    """A configuration file, mapping or environment variable is invalid."""


class ProviderError(JudgeSDKError):
    """A model backend failed. ``status`` is the HTTP status where there was one."""

    def __init__(self, message: str, *, status: int | None = None, provider: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.provider = provider


class TransientError(ProviderError):
    """Worth retrying: 408, 409, 429, 5xx, timeouts (:class:`ProviderTimeoutError`), dropped connections."""

    def __init__(
        self, message: str, *, status: int | None = None, provider: str = "", retry_after: float | None = None
    ) -> None:
        super().__init__(message, status=status, provider=provider)
        self.retry_after = retry_after


class ProviderTimeoutError(TransientError):
    """The request got no answer within the client's timeout (the SDK's ``APITimeoutError``, httpx's
    ``TimeoutException``, LiteLLM's ``Timeout``, ``asyncio.TimeoutError``). Retried like any transient
    failure; the overload guard (:mod:`judgesdk.provider.layers.breaker`) also reads it as a server too slow for the load
    and sends fewer requests at once. ``status`` is None: no server answered."""


class MalformedAnswerError(TransientError):
    """The backend answered (HTTP 200) with something that is not an answer: an error object in the body, no
    choices, fields of the wrong shape, log-probabilities that are NaN or above 0. Retried like any transient
    failure (a proxy's hiccup, a server mid-restart) and never cached; if it persists, the item is an
    ``error`` row naming what was wrong (:mod:`judgesdk.provider.layers.answers`), never ``unparsed`` and
    never a score."""


class RateLimitError(TransientError):
    """429 Too Many Requests; ``retry_after`` carries the server's Retry-After in seconds when sent."""


class PermanentError(ProviderError):
    """Never worth retrying: 400, 404, unsupported request, malformed response."""


class UnavailableError(PermanentError):
    """The provider cannot serve any request (e.g. its model file will not load): a fallback chain skips it
    from then on, instead of trying it again for every item."""


class AuthError(PermanentError):
    """401/403 or missing credentials: fix the API key or the configured provider."""


class QuotaExhaustedError(PermanentError):
    """The account's quota or budget is spent; retrying cannot help."""


class CapabilityError(PermanentError):
    """The request needs something this backend does not offer (e.g. exact label scoring over an API)."""


class RetriesExhaustedError(ProviderError):
    """A transient failure persisted past the configured attempts or total time."""

    def __init__(self, message: str, *, attempts: int, last: ProviderError) -> None:
        super().__init__(message, status=last.status, provider=last.provider)
        self.attempts = attempts
        self.last = last


class CircuitOpenError(ProviderError):
    """The provider kept failing (timeouts, 5xx, dropped connections) and did not recover while this call
    waited for it (``overload.max_wait_s``); not retried here: the fallback chain moves on, a re-run retries."""


class BudgetExceededError(JudgeSDKError):
    """A configured token or cost budget was reached; finished results are kept."""


def stray(exc: BaseException) -> bool:
    """Whether ``exc``, raised while one item was judged, is that item's failure rather than a request to stop.

    ``SystemExit``, ``GeneratorExit`` and ``KeyboardInterrupt`` are no :class:`Exception`, so a ``except Exception``
    lets them through; raised inside an event loop's task, the first two end the loop's thread (a judge's run then
    waits forever) or reach the user as a traceback. Raised by code judging an item (a provider, a scorer) they are
    that item's failure: ``SystemExit`` and ``GeneratorExit`` always; ``KeyboardInterrupt`` off the main thread (a
    real Ctrl-C is delivered to the main thread); a ``CancelledError`` when the task it ends is not being cancelled
    (Python 3.11+ can tell; before, every cancellation is taken as real)."""
    if isinstance(exc, (SystemExit, GeneratorExit)):
        return True
    if isinstance(exc, KeyboardInterrupt):
        import threading

        return threading.current_thread() is not threading.main_thread()
    import asyncio

    if isinstance(exc, asyncio.CancelledError):
        try:
            task = asyncio.current_task()
        except RuntimeError:  # no running loop
            return False
        cancelling = getattr(task, "cancelling", None)
        return task is not None and cancelling is not None and cancelling() == 0
    return False


def stray_message(exc: BaseException) -> str:
    """What a :func:`stray` exception is called in the item's error: its type, and its text where it has one.
    ``exc``: the exception that ended the item; returns the sentence the item's ``error`` result carries."""
    text = str(exc)
    return f"{type(exc).__name__}{f' ({text})' if text else ''} was raised while judging this item: it ended this item only"


_QUOTA_MARKERS = ("insufficient_quota", "quota", "billing", "credit balance")


def parse_retry_after(headers: object) -> float | None:
    """Seconds to wait from ``retry-after-ms`` / ``Retry-After`` (seconds or an HTTP date), if sent. A value
    that is no finite number (``inf``, ``nan``) is no wait a client can honour: None, as if not sent (the retry
    policy's own back-off applies, and every wait stays under its ``max_wait_s``).

    ``headers``: the response's headers, anything with a ``get`` (None, or an object without ``get``, gives None);
    returns the wait in seconds, never negative (a date in the past is 0)."""
    if headers is None:
        return None
    get = getattr(headers, "get", None)
    if get is None:
        return None
    millis = _finite(get("retry-after-ms"))
    if millis is not None:
        return max(millis / 1000.0, 0.0)
    value = get("retry-after")
    if not value:
        return None
    seconds = _finite(value)
    if seconds is not None:
        return max(seconds, 0.0)
    from datetime import datetime, timezone
    from email.utils import parsedate_to_datetime

    try:
        when = parsedate_to_datetime(value)
        return max((when - datetime.now(timezone.utc)).total_seconds(), 0.0)
    except (TypeError, ValueError, OverflowError):
        return None


def _finite(value: object) -> float | None:
    """``value`` (a header's text) as a finite number, or None."""
    if not value:
        return None
    try:
        number = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) else None


def error_from_status(
    status: int, message: str, *, provider: str, headers: object = None, body: object = None
) -> ProviderError:
    """Classify an HTTP failure once for every backend: what may be retried and what never will.

    ``status``: the HTTP status; ``message``: the backend's error text; ``provider``: the provider's name, carried
    by the error and its message; ``headers``: the response's headers, read for Retry-After on a 429 or a retryable
    status; ``body``: the response body, read (with ``message``) for the markers of an exhausted quota. Returns the
    error, not raised: a :class:`RateLimitError` (429), :class:`QuotaExhaustedError` (a 429 that says quota or
    billing, or 402), :class:`TransientError` (408, 409, 5xx), :class:`AuthError` (401, 403), else
    :class:`PermanentError`."""
    text = f"{message} {body or ''}".lower()
    detail = f"{provider}: HTTP {status}: {message}"
    if status == 429 and any(marker in text for marker in _QUOTA_MARKERS):
        return QuotaExhaustedError(detail + " (quota exhausted: retrying cannot help)", status=status, provider=provider)
    if status == 429:
        return RateLimitError(detail, status=status, provider=provider, retry_after=parse_retry_after(headers))
    if status in (408, 409) or status >= 500:
        return TransientError(detail, status=status, provider=provider, retry_after=parse_retry_after(headers))
    if status in (401, 403):
        return AuthError(detail + " (check the API key and its permissions)", status=status, provider=provider)
    if status == 402:
        return QuotaExhaustedError(detail, status=status, provider=provider)
    return PermanentError(detail, status=status, provider=provider)
