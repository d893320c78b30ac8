"""Floor 3, the adapters (installed as :mod:`judgesdk.providers`): one module per backend API.

Each adapter turns :class:`judgesdk.provider.GenerateRequest` into its API's call and the answer back into a
:class:`judgesdk.provider.GenerateResponse`, knows nothing of scoring, declares itself to the registry as a
``PROVIDER`` (:class:`judgesdk.provider.registry.ProviderSpec`) and imports its SDK only when its kind is
used. Sibling modules import each other relatively (``from ._sdk import classify``), so that the imports
resolve to these files on disk as well as after installation.

The adapters: ``openai.py`` (OpenAI-compatible APIs), ``anthropic.py`` (Anthropic Messages), ``litellm.py``
(LiteLLM's ``acompletion``), ``llamacpp/`` (GGUF models in process through llama.cpp), ``systemone.py`` (System One
servers), ``scripted.py`` (answers from a script, for deterministic tests); the decision routes
``openai_decisions.py`` and ``litellm_decisions.py``, with the wire formats they and ``judgesdk serve`` share,
``decisions_wire.py`` and ``systemone_wire.py``; the batch backends ``openai_batch.py`` and ``anthropic_batch.py``.

May import: :mod:`judgesdk.core`, :mod:`judgesdk.provider` (and, for the batch backends, its ``layers.batch``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from judgesdk.core import lazy as _lazy

if TYPE_CHECKING:
    from .anthropic_batch import AnthropicBatchBackend
    from .decisions_wire import DECISIONS_WIRE
    from .llamacpp import EMBEDDED_MODEL, LlamaCppProvider, default_gpu_layers, embedded_model_path, embedded_sha256
    from .llamacpp.load_order import load_llama_first
    from .llamacpp.rules import CELL_ALIGN, PARALLEL_MAX_SUFFIX, RESTORE_MIN_GAIN, ROW_GROUP, SAVE_MIN_DISCARD, common, label_paths, shared
    from .openai import OpenAIProvider
    from .openai_batch import OpenAIBatchBackend
    from .scripted import ScriptedProvider, ScriptedReply
    from .systemone_wire import SYSTEMONE_WIRE, question_body

__all__ = [
    "AnthropicBatchBackend",
    "CELL_ALIGN",
    "common",
    "DECISIONS_WIRE",
    "default_gpu_layers",
    "EMBEDDED_MODEL",
    "embedded_model_path",
    "embedded_sha256",
    "label_paths",
    "LlamaCppProvider",
    "load_llama_first",
    "OpenAIBatchBackend",
    "OpenAIProvider",
    "PARALLEL_MAX_SUFFIX",
    "question_body",
    "RESTORE_MIN_GAIN",
    "ROW_GROUP",
    "SAVE_MIN_DISCARD",
    "ScriptedProvider",
    "ScriptedReply",
    "shared",
    "SYSTEMONE_WIRE",
]

__getattr__, __dir__ = _lazy(
    __name__,
    {
        "AnthropicBatchBackend": "judgesdk.providers.anthropic_batch",
        "DECISIONS_WIRE": "judgesdk.providers.decisions_wire",
        **dict.fromkeys(("EMBEDDED_MODEL", "LlamaCppProvider", "default_gpu_layers", "embedded_model_path", "embedded_sha256",), "judgesdk.providers.llamacpp"),
        "load_llama_first": "judgesdk.providers.llamacpp.load_order",
        **dict.fromkeys(("CELL_ALIGN", "PARALLEL_MAX_SUFFIX", "RESTORE_MIN_GAIN", "ROW_GROUP", "SAVE_MIN_DISCARD", "common", "label_paths", "shared",), "judgesdk.providers.llamacpp.rules"),
        "OpenAIProvider": "judgesdk.providers.openai",
        "OpenAIBatchBackend": "judgesdk.providers.openai_batch",
        **dict.fromkeys(("ScriptedProvider", "ScriptedReply",), "judgesdk.providers.scripted"),
        **dict.fromkeys(("SYSTEMONE_WIRE", "question_body",), "judgesdk.providers.systemone_wire"),
    },
    globals(),
)
