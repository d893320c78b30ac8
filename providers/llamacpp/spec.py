"""How the registry builds the local adapter from a config: its ``[providers.options]`` (:class:`LocalOptions`),
the model a config names (for the question a results row answers) and the ``PROVIDER`` declaration that
``judgesdk.provider.registry`` finds as ``judgesdk.providers.llamacpp:PROVIDER``.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field

from judgesdk.provider import Pricing, ProviderOptions, ProviderSettings, ProviderSpec

from .adapter import DEFAULT_CAPABILITIES, LlamaCppProvider
from .load import EMBEDDED_MODEL, content_sha256


class LocalOptions(ProviderOptions):
    """``[providers.options]`` of ``kind = "local"`` (README, "The local model"); unset keys take the adapter's
    defaults, which these repeat."""

    model_path: str | None = None  # any GGUF file; None: the embedded model
    n_ctx: int = 4096
    n_gpu_layers: int | None = None  # None: every layer where llama.cpp was built with GPU offload, else 0
    n_threads: int | None = None  # None: every CPU
    n_threads_batch: int | None = None  # None: n_threads
    n_batch: int = Field(default=512, ge=16)  # tokens per decode (MIN_BATCH: room for the padding)
    op_offload: bool | None = None  # a CUDA build sends large CPU matmuls to the GPU unless False (None: llama.cpp's default, on)
    prefix_reuse: bool = True  # keep the KV cache across requests
    prefix_states: int = Field(default=4, ge=0)  # saved prefix states (0: the live KV cache only)
    prefix_state_mb: float = Field(default=512.0, ge=0)  # their memory bound
    parallel_suffixes: int = Field(default=1, ge=1)  # label requests decoded together (1: one at a time, reproducible)
    track_unique_tokens: bool = False  # count distinct prompt tokens (benchmarks)
    model_sha256: str | None = None  # the file's sha256 where known (else hashed on first use)
    identity: str | None = None  # what cache keys name the model by (else the file's identity)


_REUSE = (
    "reuses computed KV cells only where they are bit-identical to a fresh evaluation (padded decodes, states cut to SIMD "
    "lanes): reuse off and on gave the same scores to 4 decimals (benchmarks/README.md, 'Reproducible local scores')"
)
# the options that cannot change an answer, each with the measurement that says so (every other one is keyed)
ANSWER_NEUTRAL: dict[str, str] = {
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
}


def _build(settings: ProviderSettings, options: LocalOptions) -> LlamaCppProvider:
    given = options.model_dump(exclude_unset=True, exclude_none=True)  # the adapter's own defaults for the rest
    return LlamaCppProvider.from_options(model_name=settings.model, capabilities=settings.capabilities, **given)


def _model_identity(settings: ProviderSettings, options: LocalOptions) -> str:
    """The sha256 of the GGUF file a config names (``model_path``, or a ``model`` that is a GGUF's path), for the
    question a results row answers; "" for the embedded model (its name is its identity), for an ``identity`` given
    (the user's name for the model), and for a file that cannot be read (building the provider says why)."""
    if options.identity is not None:
        return ""
    path = options.model_path
    if path is None and settings.model != EMBEDDED_MODEL and (settings.model.endswith(".gguf") or Path(settings.model).expanduser().is_file()):
        path = settings.model
    if path is None:
        return ""
    try:
        return f"sha256:{content_sha256(path)}"
    except OSError:
        return ""


PROVIDER = ProviderSpec(
    kind=LlamaCppProvider.kind,
    options=LocalOptions,
    build=_build,
    model_identity=_model_identity,
    capabilities=DEFAULT_CAPABILITIES,
    pricing=Pricing(local=True),
    default_model=EMBEDDED_MODEL,
    pooled=False,  # one model in process, one copy
    default_concurrency=4,  # one model computing in this process: more items in flight only queue (and hold memory)
    answer_neutral=ANSWER_NEUTRAL,
    detect_order=100,  # the detected chain's fallback: always, after the hosted kinds whose keys are set
)
