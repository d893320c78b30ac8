"""The typed provider options that cannot change an answer, each with the reason: the one list.

Every other option of a built-in provider kind (``[providers.options]``, :attr:`ProviderSpec.options`) is part of the
cache key and of each result's provenance: the adapter names it in its ``answer_settings`` when it is set away from
its default (:func:`judgesdk.provider.protocol.settings_of`), or it changes the endpoint, the model or the identity the
key already names. ``tests/provider/test_cache_keys.py`` walks every kind's options and fails on one that is in neither.
An option is listed here only with the reason it cannot move a score (a measurement where one was needed, with its
section in benchmarks/README.md); "probably" is no reason.
"""

from __future__ import annotations

__all__ = ["ANSWER_NEUTRAL", "SETTINGS"]

_REUSE = (
    "reuses computed KV cells only where they are bit-identical to a fresh evaluation (padded decodes, states cut to SIMD "
    "lanes): reuse off and on gave the same scores to 4 decimals (benchmarks/README.md, 'Reproducible local scores')"
)
_ANTHROPIC_CACHE = (
    "marks a prompt block for Anthropic's prompt cache, which serves the exact same prefix computation; the request's "
    "text, model and sampling are unchanged, and Anthropic documents cached and uncached prompts as answered alike"
)

ANSWER_NEUTRAL: dict[str, dict[str, str]] = {
    "local": {
        "prefix_reuse": _REUSE,
        "prefix_states": _REUSE + "; this bounds how many saved states are kept (memory only)",
        "prefix_state_mb": _REUSE + "; this bounds the saved states' memory",
        "n_batch": (
            "how many tokens one decode takes: every decode is padded to a multiple of four rows, so a prompt's logits are "
            "the same in any split; n_batch 64 and 136 against 512 moved none of 24 G-Eval scores (benchmarks/README.md, "
            "'Which local options move a score')"
        ),
        "n_threads": (
            "how many CPU threads generate (and, unless n_threads_batch is set, evaluate prompts): n_threads 1 against every "
            "CPU moved none of 24 G-Eval scores (benchmarks/README.md, 'Which local options move a score')"
        ),
        "track_unique_tokens": "counts distinct prompt tokens in a trie beside the model (benchmarks); the decode is untouched",
        "model_sha256": (
            "names the file's sha256 where it is known, for provenance and fused fits; it is checked against the file (a "
            "wrong one is refused), and the file's own content is what the key names (identity)"
        ),
    },
    "anthropic": {"prompt_cache": _ANTHROPIC_CACHE, "prompt_cache_min_chars": _ANTHROPIC_CACHE + "; this is the shortest block marked"},
    "litellm": {
        "prompt_cache": _ANTHROPIC_CACHE,
        "prompt_cache_min_chars": _ANTHROPIC_CACHE + "; this is the shortest block marked",
        "drop_params": (
            "decides only whether a parameter the backend does not take is dropped or refused: refused, the request fails "
            "(nothing is cached); dropped, the answer is the one the backend gives anyway (a dropped logprobs is noted)"
        ),
    },
}

# ProviderSettings fields beside the options (kind, model, base_url and api are keyed: endpoint, model, answer_settings)
SETTINGS: dict[str, str] = {
    "timeout_s": "how long the client waits for an answer; a request past it fails and nothing is cached",
    "api_key_env": "which variable holds the key; a key authorises a request, it does not change its answer",
    "capabilities": (
        "declares what the backend can do, which decides which requests a method sends; every request's own fields "
        "(logprobs, labels, grammar...) are in the key"
    ),
}
