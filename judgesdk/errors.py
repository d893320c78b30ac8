"""Typed errors. Each says what went wrong and what to do about it.

Provider errors are classified once, here, so that one retry policy serves every backend:
``TransientError`` (and its subclasses) may succeed on a later attempt; ``PermanentError`` never will.
"""

from __future__ import annotations


class JudgeSDKError(Exception):
    """Base of every error judgesdk raises on purpose."""


class InputError(JudgeSDKError, ValueError):
    """The caller passed something judgesdk cannot use; the message says what to fix."""


class ConfigError(JudgeSDKError, ValueError):
    """A configuration file, mapping or environment variable is invalid."""


class ProviderError(JudgeSDKError):
    """A model backend failed. ``status`` is the HTTP status where there was one."""

    def __init__(self, message: str, *, status: int | None = None, provider: str = "") -> None:
        super().__init__(message)
        self.status = status
        self.provider = provider


class TransientError(ProviderError):
    """Worth retrying: 408, 409, 429, 5xx, timeouts, dropped connections."""

    def __init__(
        self, message: str, *, status: int | None = None, provider: str = "", retry_after: float | None = None
    ) -> None:
        super().__init__(message, status=status, provider=provider)
        self.retry_after = retry_after


class RateLimitError(TransientError):
    """429 Too Many Requests; ``retry_after`` carries the server's Retry-After in seconds when sent."""


class PermanentError(ProviderError):
    """Never worth retrying: 400, 404, unsupported request, malformed response."""


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


class BudgetExceededError(JudgeSDKError):
    """A configured token or cost budget was reached; finished results are kept."""
