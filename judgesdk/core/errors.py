"""Typed errors. Each says what went wrong and what to do about it.

Provider errors are classified once, here, so that one retry policy serves every backend:
``TransientError`` (and its subclasses) may succeed on a later attempt; ``PermanentError`` never will.
"""

from __future__ import annotations


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


_QUOTA_MARKERS = ("insufficient_quota", "quota", "billing", "credit balance")


def parse_retry_after(headers: object) -> float | None:
    """Seconds to wait from ``retry-after-ms`` / ``Retry-After`` (seconds or an HTTP date), if sent."""
    if headers is None:
        return None
    get = getattr(headers, "get", None)
    if get is None:
        return None
    millis = get("retry-after-ms")
    if millis:
        try:
            return max(float(millis) / 1000.0, 0.0)
        except ValueError:
            pass
    value = get("retry-after")
    if not value:
        return None
    try:
        return max(float(value), 0.0)
    except ValueError:
        from datetime import datetime, timezone
        from email.utils import parsedate_to_datetime

        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        return max((when - datetime.now(timezone.utc)).total_seconds(), 0.0)


def error_from_status(
    status: int, message: str, *, provider: str, headers: object = None, body: object = None
) -> ProviderError:
    """Classify an HTTP failure once for every backend: what may be retried and what never will."""
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
