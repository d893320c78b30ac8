"""Floor 1, core: what every other floor shares: the typed errors, the public data types, provenance.

* :mod:`~judgesdk.core.errors`: typed errors, each saying what to fix; provider errors classified once.
* :mod:`~judgesdk.core.types`: what is judged (:class:`JudgeItem`, :class:`Criterion` on a :class:`Scale`)
  and what comes back (:class:`JudgeResult`, :class:`LabelDistribution`, :class:`Usage`).
* :mod:`~judgesdk.core.provenance`: what produced a verdict (:class:`Provenance`) and how two differ.
* :mod:`~judgesdk.core.faces`: package faces that load their names on first use.
* :mod:`~judgesdk.core.exits`: the process exit codes, one table for every command (and the gate's verdict).
* :mod:`~judgesdk.core.plugins`: named plugins found by name and loaded on first use (:class:`Plugins`: the registries).

May import: nothing of judgesdk (pydantic and the standard library only).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from judgesdk.core.faces import lazy as _lazy

if TYPE_CHECKING:
    from judgesdk.core.errors import (
        AuthError,
        BudgetExceededError,
        CapabilityError,
        CircuitOpenError,
        ConfigError,
        InputError,
        JudgeSDKError,
        MalformedAnswerError,
        MissingDependencyError,
        MissingItemField,
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
        stray,
        stray_message,
    )
    from judgesdk.core.exits import ExitCode
    from judgesdk.core.faces import lazy
    from judgesdk.core.plugins import Plugins
    from judgesdk.core.provenance import Provenance, Record, changes, options_hash, record_of, sdk_version
    from judgesdk.core.types import (
        Criterion,
        CriterionSpec,
        JudgeItem,
        JudgeResult,
        LabelDistribution,
        ResultStatus,
        Scale,
        Usage,
        as_criteria,
        as_criterion,
        check_text,
        method_family,
    )

__all__ = [
    "as_criteria",
    "as_criterion",
    "AuthError",
    "BudgetExceededError",
    "CapabilityError",
    "changes",
    "check_text",
    "CircuitOpenError",
    "ConfigError",
    "Criterion",
    "CriterionSpec",
    "error_from_status",
    "ExitCode",
    "InputError",
    "JudgeItem",
    "JudgeResult",
    "JudgeSDKError",
    "LabelDistribution",
    "lazy",
    "MalformedAnswerError",
    "method_family",
    "MissingDependencyError",
    "MissingItemField",
    "options_hash",
    "parse_retry_after",
    "PermanentError",
    "Plugins",
    "Provenance",
    "ProviderError",
    "ProviderTimeoutError",
    "QuotaExhaustedError",
    "RateLimitError",
    "Record",
    "record_of",
    "ResultStatus",
    "RetriesExhaustedError",
    "Scale",
    "sdk_version",
    "stray",
    "stray_message",
    "TransientError",
    "UnavailableError",
    "Usage",
]

__getattr__, __dir__ = _lazy(
    __name__,
    {
        **dict.fromkeys(("AuthError", "BudgetExceededError", "CapabilityError", "CircuitOpenError", "ConfigError", "InputError", "JudgeSDKError", "MalformedAnswerError", "MissingDependencyError", "MissingItemField", "PermanentError", "ProviderError", "ProviderTimeoutError", "QuotaExhaustedError", "RateLimitError", "RetriesExhaustedError", "TransientError", "UnavailableError", "error_from_status", "parse_retry_after", "stray", "stray_message",), "judgesdk.core.errors"),
        "ExitCode": "judgesdk.core.exits",
        "lazy": "judgesdk.core.faces",
        "Plugins": "judgesdk.core.plugins",
        **dict.fromkeys(("Provenance", "Record", "changes", "options_hash", "record_of", "sdk_version",), "judgesdk.core.provenance"),
        **dict.fromkeys(("Criterion", "CriterionSpec", "JudgeItem", "JudgeResult", "LabelDistribution", "ResultStatus", "Scale", "Usage", "as_criteria", "as_criterion", "check_text", "method_family",), "judgesdk.core.types"),
    },
    globals(),
)
