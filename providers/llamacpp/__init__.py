"""The local adapter (``kind = "local"``): in-process llama.cpp (llama-cpp-python) over any GGUF file, or the
embedded Gemma 3 270M. The registry finds it as ``judgesdk.providers.llamacpp:PROVIDER``.

One concern per module, from the bottom up:

* ``load_order.py``: on a GPU build, llama.cpp's libraries load before numpy's C++ runtime
  (``judgesdk/__init__.py`` calls :func:`load_llama_first` first thing); the one importer of ``llama_cpp``.
* ``compat.py``: every use of llama-cpp-python's private attributes and of llama.cpp's C API.
* ``rules.py``: the prefix-reuse rules as plain data, read by the estimate's replay too (no llama_cpp, no NumPy).
* ``build.py``: what the llama.cpp build computes with (CPU instruction sets, a GPU backend), as far as it changes
  numbers, from ``llama_print_system_info()``: part of every local answer's cache key and provenance.
* ``load.py``: finding and checking the GGUF file, the embedded model, building ``Llama``, llama.cpp's log.
* ``prefix.py``: the prefix-state cache (the live KV cache of sequence 0, saved states of it, the
  sliding-window rules) and decoding through it, with its counters.
* ``labels.py``: label and continuation log-probabilities from rows of logits.
* ``parallel.py``: label requests that share all but a short suffix, decoded together as parallel sequences.
* ``adapter.py``: :class:`LlamaCppProvider`, the request side: it queues and answers requests, generates text.
* ``spec.py``: its ``[providers.options]`` and the ``PROVIDER`` declaration.

This face loads nothing on import (names load on first use, :func:`judgesdk.core.faces.lazy`): ``import judgesdk``
imports ``load_order.py`` through it, and reading a kind's name must not load llama_cpp or NumPy.

May import: :mod:`judgesdk.core`, :mod:`judgesdk.provider` (llama-cpp-python and NumPy through ``compat.py``).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from judgesdk.core import lazy as _lazy

if TYPE_CHECKING:
    from .adapter import ANSWER_DEFAULTS, DEFAULT_CAPABILITIES, LlamaCppProvider
    from .labels import continuation_logprobs, label_logprobs, log_softmax, token_logprobs
    from .load import EMBEDDED_MODEL, content_sha256, default_gpu_layers, embedded_model_path, embedded_sha256, llama_log, route_llama_log
    from .load_order import cxx_runtime_loaded_first, gpu_build, load_llama_first
    from .prefix import PrefixCache, PrefixCounters, PrefixStates, SavedState, TokenTrie, common_prefix, shared_prefix
    from .spec import PROVIDER, LocalOptions

__all__ = [
    "ANSWER_DEFAULTS",
    "DEFAULT_CAPABILITIES",
    "EMBEDDED_MODEL",
    "PROVIDER",
    "LlamaCppProvider",
    "LocalOptions",
    "PrefixCache",
    "PrefixCounters",
    "PrefixStates",
    "SavedState",
    "TokenTrie",
    "common_prefix",
    "content_sha256",
    "continuation_logprobs",
    "cxx_runtime_loaded_first",
    "default_gpu_layers",
    "embedded_model_path",
    "embedded_sha256",
    "gpu_build",
    "label_logprobs",
    "llama_log",
    "load_llama_first",
    "log_softmax",
    "route_llama_log",
    "shared_prefix",
    "token_logprobs",
]
_HOMES: dict[str, tuple[str, ...]] = {  # module -> the names of __all__ it holds
    "adapter": ("ANSWER_DEFAULTS", "DEFAULT_CAPABILITIES", "LlamaCppProvider"),
    "labels": ("continuation_logprobs", "label_logprobs", "log_softmax", "token_logprobs"),
    "load": ("EMBEDDED_MODEL", "content_sha256", "default_gpu_layers", "embedded_model_path", "embedded_sha256", "llama_log", "route_llama_log"),
    "load_order": ("cxx_runtime_loaded_first", "gpu_build", "load_llama_first"),
    "prefix": ("PrefixCache", "PrefixCounters", "PrefixStates", "SavedState", "TokenTrie", "common_prefix", "shared_prefix"),
    "spec": ("PROVIDER", "LocalOptions"),
}
__getattr__, __dir__ = _lazy(__name__, {name: f"{__name__}.{module}" for module, names in _HOMES.items() for name in names}, globals())
