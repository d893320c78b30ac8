"""The typed errors (a face: they live in :mod:`judgesdk.core.errors`). Each says what went wrong and what to do.

``InputError`` and ``ConfigError`` are the caller's to fix (the CLI exits 3 on them); ``ProviderError`` and
its kin are classified once (``TransientError`` may succeed on a later attempt, ``PermanentError`` never
will), so one retry policy serves every backend.
"""

from __future__ import annotations

from judgesdk.core import (
    AuthError,
    BudgetExceededError,
    CapabilityError,
    CircuitOpenError,
    ConfigError,
    InputError,
    JudgeSDKError,
    MalformedAnswerError,
    MissingDependencyError,
    PermanentError,
    ProviderError,
    ProviderTimeoutError,
    QuotaExhaustedError,
    RateLimitError,
    RetriesExhaustedError,
    TransientError,
    UnavailableError,
    error_from_status,
    parse_retry_after,
)

__all__ = [
    "AuthError",
    "BudgetExceededError",
    "CapabilityError",
    "CircuitOpenError",
    "ConfigError",
    "InputError",
    "JudgeSDKError",
    "MalformedAnswerError",
    "MissingDependencyError",
    "PermanentError",
    "ProviderError",
    "ProviderTimeoutError",
    "QuotaExhaustedError",
    "RateLimitError",
    "RetriesExhaustedError",
    "TransientError",
    "UnavailableError",
    "error_from_status",
    "parse_retry_after",
]
