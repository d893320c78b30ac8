"""Floor 2, the provider layer: one interface every model backend implements, and the behaviour stacked on it.

* :mod:`~judgesdk.provider.protocol`: the interface. A :class:`Provider` turns a typed
  :class:`GenerateRequest` (generation, top-k logprobs, exact label scoring, continuation log-likelihood)
  into a typed :class:`GenerateResponse`, and declares its :class:`Capabilities`.
* :mod:`~judgesdk.provider.decisions`: decision requests (an input and typed questions, answered with the
  server's own probabilities) as the protocol carries them; their wire mappings live with the adapters.
* :mod:`~judgesdk.provider.registry`: provider kinds by name and each adapter's :class:`ProviderSpec`: its typed
  options, default model, capabilities, pricing, the ``api`` values it takes, the options that cannot change an
  answer (with the reason) and how it is detected; third-party kinds through entry points.
* :mod:`~judgesdk.provider.detection`: the detected chain (no providers configured), read from the specs without
  importing an adapter.
* :mod:`~judgesdk.provider.prices`: what tokens cost (LiteLLM's price map offline, or configured prices).
* :mod:`~judgesdk.provider.settings`: one provider's config (``[[providers]]``) and the cache's (``[cache]``).
* :mod:`~judgesdk.provider.layers`: the wrappers, one behaviour each (witness, coalescing, cache, retry,
  overload guard, budget, batch deferral, rate limit).
* :mod:`~judgesdk.provider.stack`: the one function that puts them in order over an adapter.

The adapters themselves (one module per API) live in the repository's top-level ``providers/`` folder,
installed as :mod:`judgesdk.providers`, one floor up: they import this floor, never the other way (the
registry names them as ``"module:attribute"`` strings and imports one when its kind is used).

* :mod:`~judgesdk.provider.urls`: what a ``base_url`` must look like, and how one is shown without its credentials.

May import: :mod:`judgesdk.core`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from judgesdk.core import lazy as _lazy

if TYPE_CHECKING:
    from judgesdk.provider.decisions import (
        MAX_LEVELS,
        MIN_LEVELS,
        ChoiceOption,
        ChoiceQuestion,
        DecisionAnswer,
        DecisionInput,
        DecisionRequest,
        Level,
        PredicateQuestion,
        Question,
        RequestError,
        ScoreQuestion,
        ServedWire,
        ask_in_parts,
        checked_distribution,
        checked_probability,
        error_answer,
        is_number,
        json_kind,
        read_state,
    )
    from judgesdk.provider.detection import detected_kinds
    from judgesdk.provider.layers.batch import BatchBackend, BatchReport, BatchResult, BatchRunner, BatchStatus, Deferral
    from judgesdk.provider.layers.breaker import OverloadConfig, OverloadGuard
    from judgesdk.provider.layers.budget import Budget, BudgetMeter, BudgetState, UsageMeter
    from judgesdk.provider.layers.cache import CACHE_IO_ERRORS, CachedProvider, cache_key, cache_stats, check_directory, clear_cache, damaged, open_cache
    from judgesdk.provider.layers.ratelimit import RateLimitConfig
    from judgesdk.provider.layers.retry import RetryPolicy
    from judgesdk.provider.layers.witness import collecting, served_by
    from judgesdk.provider.prices import CostModel, CostReport, price_for, summarize_usage
    from judgesdk.provider.protocol import (
        Capabilities,
        Choice,
        GenerateRequest,
        GenerateResponse,
        Message,
        Provider,
        TokenLogprob,
        TopLogprob,
        Usage,
        WrapperProvider,
        answer_settings,
        as_text,
        find_layer,
        fold_prefill,
        identity_of,
        request_text,
        runtime,
        settings_of,
        unwrap,
    )
    from judgesdk.provider.registry import (
        BUILT_IN,
        Pricing,
        ProviderOptions,
        ProviderSettings,
        ProviderSpec,
        pricing,
        provider_kinds,
        provider_spec,
        register,
        unregister,
    )
    from judgesdk.provider.settings import NO_KEY_IN_CONFIG, CacheConfig, ProviderConfig, model_name
    from judgesdk.provider.stack import Extras, ProviderSource, StackPlan, assemble, borrowed, bottom, build_adapter, limited, model_identity, witnessed
    from judgesdk.provider.urls import redact_url, remember_secret, scrub_credentials, scrub_exception, scrub_json

__all__ = [
    "answer_settings",
    "as_text",
    "ask_in_parts",
    "assemble",
    "BatchBackend",
    "BatchReport",
    "BatchResult",
    "BatchRunner",
    "BatchStatus",
    "borrowed",
    "bottom",
    "Budget",
    "BudgetMeter",
    "BudgetState",
    "build_adapter",
    "BUILT_IN",
    "CACHE_IO_ERRORS",
    "cache_key",
    "cache_stats",
    "CacheConfig",
    "CachedProvider",
    "Capabilities",
    "check_directory",
    "checked_distribution",
    "checked_probability",
    "Choice",
    "ChoiceOption",
    "ChoiceQuestion",
    "clear_cache",
    "collecting",
    "CostModel",
    "CostReport",
    "damaged",
    "DecisionAnswer",
    "DecisionInput",
    "DecisionRequest",
    "Deferral",
    "detected_kinds",
    "error_answer",
    "Extras",
    "find_layer",
    "fold_prefill",
    "GenerateRequest",
    "GenerateResponse",
    "identity_of",
    "is_number",
    "json_kind",
    "Level",
    "limited",
    "MAX_LEVELS",
    "Message",
    "MIN_LEVELS",
    "model_identity",
    "model_name",
    "NO_KEY_IN_CONFIG",
    "open_cache",
    "OverloadConfig",
    "OverloadGuard",
    "PredicateQuestion",
    "price_for",
    "Pricing",
    "pricing",
    "Provider",
    "provider_kinds",
    "provider_spec",
    "ProviderConfig",
    "ProviderOptions",
    "ProviderSettings",
    "ProviderSource",
    "ProviderSpec",
    "Question",
    "RateLimitConfig",
    "read_state",
    "redact_url",
    "register",
    "remember_secret",
    "request_text",
    "RequestError",
    "RetryPolicy",
    "runtime",
    "ScoreQuestion",
    "scrub_credentials",
    "scrub_exception",
    "scrub_json",
    "served_by",
    "ServedWire",
    "settings_of",
    "StackPlan",
    "summarize_usage",
    "TokenLogprob",
    "TopLogprob",
    "unregister",
    "unwrap",
    "Usage",
    "UsageMeter",
    "witnessed",
    "WrapperProvider",
]

__getattr__, __dir__ = _lazy(
    __name__,
    {
        **dict.fromkeys(("ChoiceOption", "ChoiceQuestion", "DecisionAnswer", "DecisionInput", "DecisionRequest", "Level", "MAX_LEVELS", "MIN_LEVELS", "PredicateQuestion", "Question", "RequestError", "ScoreQuestion", "ServedWire", "ask_in_parts", "checked_distribution", "checked_probability", "error_answer", "is_number", "json_kind", "read_state",), "judgesdk.provider.decisions"),
        "detected_kinds": "judgesdk.provider.detection",
        **dict.fromkeys(("BatchBackend", "BatchReport", "BatchResult", "BatchRunner", "BatchStatus", "Deferral",), "judgesdk.provider.layers.batch"),
        **dict.fromkeys(("OverloadConfig", "OverloadGuard",), "judgesdk.provider.layers.breaker"),
        **dict.fromkeys(("Budget", "BudgetMeter", "BudgetState", "UsageMeter",), "judgesdk.provider.layers.budget"),
        **dict.fromkeys(("CACHE_IO_ERRORS", "CachedProvider", "cache_key", "cache_stats", "check_directory", "clear_cache", "damaged", "open_cache",), "judgesdk.provider.layers.cache"),
        "RateLimitConfig": "judgesdk.provider.layers.ratelimit",
        "RetryPolicy": "judgesdk.provider.layers.retry",
        **dict.fromkeys(("collecting", "served_by",), "judgesdk.provider.layers.witness"),
        **dict.fromkeys(("CostModel", "CostReport", "price_for", "summarize_usage",), "judgesdk.provider.prices"),
        **dict.fromkeys(("Capabilities", "Choice", "GenerateRequest", "GenerateResponse", "Message", "Provider", "TokenLogprob", "TopLogprob", "Usage", "WrapperProvider", "answer_settings", "as_text", "find_layer", "fold_prefill", "identity_of", "request_text", "runtime", "settings_of", "unwrap",), "judgesdk.provider.protocol"),
        **dict.fromkeys(("BUILT_IN", "Pricing", "ProviderOptions", "ProviderSettings", "ProviderSpec", "pricing", "provider_kinds", "provider_spec", "register", "unregister",), "judgesdk.provider.registry"),
        **dict.fromkeys(("CacheConfig", "NO_KEY_IN_CONFIG", "ProviderConfig", "model_name",), "judgesdk.provider.settings"),
        **dict.fromkeys(("Extras", "ProviderSource", "StackPlan", "assemble", "borrowed", "bottom", "build_adapter", "limited", "model_identity", "witnessed",), "judgesdk.provider.stack"),
        **dict.fromkeys(("redact_url", "remember_secret", "scrub_credentials", "scrub_exception", "scrub_json",), "judgesdk.provider.urls"),
    },
    globals(),
)
