"""Every use of llama-cpp-python's private attributes and of llama.cpp's C API, behind named functions.

The local provider needs more than llama-cpp-python's public ``Llama`` API offers: decoding a batch of
several sequences with logits only where asked, removing and copying a sequence's KV cells, saving and
restoring one sequence's state, rebuilding the context with parallel sequences over a unified KV buffer,
reading the model's sliding-window length, checking that a GBNF grammar parses, and routing llama.cpp's
log. Those reach into ``Llama._ctx``, ``Llama._batch``, ``Llama._model``, ``Llama._requires_eval``,
``llama_cpp._internals`` and ``llama_cpp.llama_*`` functions, none of which llama-cpp-python promises to
keep. Gathering them here means a new llama-cpp-python release is checked in one place: the names this
module relies on are listed below (``MODULE_ATTRIBUTES`` ... ``BATCH_FIELDS``) and
``tests/providers/test_llamacpp_compat.py`` checks each against the installed package, so a rename fails a test
instead of a user's run. The other modules of this folder import nothing of ``llama_cpp`` themselves.

Checked against llama-cpp-python 0.3.36, installed here: run, and tested by the test above and the local
provider's tests. ``pyproject.toml`` declares ``>=0.3.35,<0.4``: 0.3.35's ``_internals.py`` and
``Llama.generate`` read the same as 0.3.36's (compared in its sdist, not run). Earlier releases lack
``Llama._requires_eval`` (before 0.3.32) or a context that registers itself with its model (before 0.3.35,
which :func:`allow_parallel_sequences` needs so that closing the model frees the rebuilt context first);
0.4 may rename any of this. Besides the private names, the provider relies on ``Llama``'s public token
bookkeeping (``input_ids``, ``n_tokens``, ``n_batch``): rewinding a prompt sets ``n_tokens``, and
``Llama.create_completion`` reuses the KV cache by comparing ``input_ids[:n_tokens]`` with its prompt.
Those are listed in ``LLAMA_ATTRIBUTES`` too.

``llama_cpp`` is imported through :func:`.load_order.import_llama`, which defaults ``OMP_WAIT_POLICY`` to
PASSIVE before llama.cpp's libgomp loads, and before numpy (the load order a GPU build needs).
"""

from __future__ import annotations

import ctypes
import threading
from collections.abc import Callable
from typing import Any

from .load_order import gpu_build, import_llama  # noqa: F401  (gpu_build re-exported: the provider and the cache-key tests patch it here)

# before numpy: on a GPU build, llama.cpp's libraries must load before the C++ runtime numpy brings (.load_order)
llama_cpp: Any = import_llama()

import numpy as np  # noqa: E402

CHECKED_VERSIONS = ("0.3.36",)  # llama-cpp-python versions this module was run and tested against

# What this module uses, for tests/providers/test_llamacpp_compat.py, which checks each against the installed
# llama-cpp-python and that these lists name everything the code below touches.
C_FUNCTIONS = {  # llama.cpp's C API through llama_cpp's ctypes bindings: name -> number of arguments
    "llama_log_set": 2,
    "llama_backend_init": 0,
    "llama_supports_gpu_offload": 0,
    "llama_print_system_info": 0,
    "llama_model_n_swa": 1,
    "llama_state_seq_get_size": 2,
    "llama_state_seq_get_data": 4,
    "llama_state_seq_set_data": 4,
    "llama_sampler_init_grammar": 3,
    "llama_sampler_free": 1,
}
MODULE_ATTRIBUTES = (*C_FUNCTIONS, "llama_log_callback", "Llama", "LlamaGrammar", "_internals", "__version__")  # of llama_cpp
INTERNALS_ATTRIBUTES = ("LlamaContext",)  # of llama_cpp._internals
GRAMMAR_ATTRIBUTES = ("from_string",)  # of llama_cpp.LlamaGrammar
LLAMA_ATTRIBUTES = (  # of a llama_cpp.Llama: private state, and the public token bookkeeping relied on
    "_ctx", "_batch", "_model", "_requires_eval", "context_params", "verbose", "input_ids", "n_tokens", "n_batch", "n_vocab",
)  # fmt: skip
CONTEXT_ATTRIBUTES = ("ctx", "kv_cache_seq_rm", "kv_cache_seq_cp", "decode", "get_logits", "close")  # _internals.LlamaContext
MODEL_ATTRIBUTES = ("model", "vocab")  # _internals.LlamaModel
BATCH_ATTRIBUTES = ("batch",)  # _internals.LlamaBatch
CONTEXT_PARAMS_FIELDS = ("n_seq_max", "kv_unified")  # llama_cpp.llama_context_params
BATCH_FIELDS = ("n_tokens", "token", "pos", "n_seq_id", "seq_id", "logits")  # llama_cpp.llama_batch


def available() -> bool:
    """Whether llama-cpp-python is installed (the 'local' extra)."""
    return llama_cpp is not None


def version() -> str | None:
    return None if llama_cpp is None else str(llama_cpp.__version__)


# -- loading ----------------------------------------------------------------------------------


def supports_gpu_offload() -> bool:
    """Whether llama.cpp was built with GPU offload (False without llama-cpp-python)."""
    return llama_cpp is not None and bool(llama_cpp.llama_supports_gpu_offload())


def system_info() -> str:
    """llama.cpp's ``llama_print_system_info()``: each ggml backend's build features (``CPU : SSE3 = 1 | AVX2 = 1 |
    ...``), "" without llama-cpp-python. :func:`.build.build_features` keeps the part that changes numbers."""
    if llama_cpp is None:
        return ""
    text = llama_cpp.llama_print_system_info()
    return text.decode("utf-8", "replace") if isinstance(text, bytes) else str(text or "")


_backends_lock = threading.Lock()
_backends_thread: str | None = None  # the thread that initialised llama.cpp's backends in this process


def init_backends() -> str | None:
    """Initialise llama.cpp's backends once per process, on the calling thread; returns the name of the thread
    that did (this one, or an earlier caller's).

    ``llama_backend_init`` builds ggml's backend registry, which on a CUDA build enumerates the devices.
    Left to itself, llama-cpp-python does that inside the first ``Llama()``, on the local provider's worker
    thread. Doing it when the provider is built keeps the backends' start out of the first request. (It was
    the first fix tried for the CUDA crash of issue 30 and not the cause: that was the order in which the
    libraries loaded, see :mod:`.load_order`.)"""
    global _backends_thread
    if llama_cpp is None:
        return None
    with _backends_lock:
        if _backends_thread is None:
            llama_cpp.llama_backend_init()
            llama_cpp.llama_supports_gpu_offload()  # the device registry, CUDA's included, is built by now
            _backends_thread = threading.current_thread().name
        return _backends_thread


def new_llama(settings: dict[str, Any]) -> Any:
    """``llama_cpp.Llama(**settings)`` (public API; here so that only this module imports llama_cpp), after
    :func:`init_backends` (a no-op once the provider has called it)."""
    init_backends()
    return llama_cpp.Llama(**settings)


def allow_parallel_sequences(llm: Any, n_seq: int) -> None:
    """Rebuild ``llm``'s context with ``n_seq`` sequences over one unified KV buffer, so sequences can share
    a prefix's cells (llama-cpp-python's constructor does this only for embedding models). The new context
    registers itself with the model, which frees it on close, like the one it replaces."""
    from llama_cpp import _internals

    llm.context_params.n_seq_max = n_seq
    llm.context_params.kv_unified = True
    llm._ctx.close()
    llm._ctx = _internals.LlamaContext(model=llm._model, params=llm.context_params, verbose=llm.verbose)


def sliding_window(llm: Any) -> int:
    """The model's sliding-window length in positions (0: no sliding-window layers)."""
    return int(llama_cpp.llama_model_n_swa(llm._model.model))


def set_log_callback(handler: Callable[[int, bytes | None], None]) -> Any:
    """Send llama.cpp's log to ``handler(ggml_log_level, text)`` for the whole process. Returns the C
    callback, which the caller must keep referenced for as long as llama.cpp may call it (the process)."""

    @llama_cpp.llama_log_callback
    def callback(level: int, text: bytes, user_data: Any) -> None:
        try:
            handler(level, text)
        except Exception:  # an exception cannot cross into C; a lost log line is the lesser harm
            pass

    llama_cpp.llama_log_set(callback, ctypes.c_void_p(0))
    return callback


# -- grammars ---------------------------------------------------------------------------------


def parse_grammar(llm: Any, text: str) -> Any | None:
    """``text`` as a ``llama_cpp.LlamaGrammar`` (root rule ``root``), or None when llama.cpp cannot parse it.
    llama-cpp-python only stores a grammar's string; llama.cpp parses it when a completion builds its
    sampler, and an unparsable one gives a null sampler the completion would crash on. So it is parsed
    here by building (and freeing) that sampler first."""
    sampler = llama_cpp.llama_sampler_init_grammar(llm._model.vocab, text.encode("utf-8"), b"root")
    if not sampler:
        return None
    llama_cpp.llama_sampler_free(sampler)
    return llama_cpp.LlamaGrammar.from_string(text, verbose=False)


# -- the KV cache -----------------------------------------------------------------------------


def remove_cells(llm: Any, seq: int, start: int) -> None:
    """Remove sequence ``seq``'s KV cells from position ``start`` on (``seq`` -1: every sequence's)."""
    llm._ctx.kv_cache_seq_rm(seq, start, -1)


def copy_cells(llm: Any, src: int, dst: int, start: int, end: int) -> None:
    """Tag sequence ``src``'s cells at positions [start, end) as also belonging to ``dst`` (no copy in a unified KV cache)."""
    llm._ctx.kv_cache_seq_cp(src, dst, start, end)


def mark_logits_stale(llm: Any) -> None:
    """Tell llama-cpp-python that the context's logits are not those of its last token, so its next
    ``create_completion`` re-decodes at least one token rather than sample from them."""
    llm._requires_eval = True


def save_sequence(llm: Any) -> tuple[Any, int]:
    """Sequence 0's KV state, serialised by llama.cpp: (a ctypes uint8 buffer, bytes written; 0: failed)."""
    ctx = llm._ctx.ctx
    size = llama_cpp.llama_state_seq_get_size(ctx, 0)
    data = (ctypes.c_uint8 * size)()
    written = llama_cpp.llama_state_seq_get_data(ctx, data, size, 0)
    return data, int(written)


def load_sequence(llm: Any, data: Any, size: int) -> int:
    """Load a state from :func:`save_sequence` into sequence 0, which must be empty; returns the bytes
    llama.cpp read (``size`` on success)."""
    return int(llama_cpp.llama_state_seq_set_data(llm._ctx.ctx, data, size, 0))


# -- decoding ---------------------------------------------------------------------------------


def fill_batch(llm: Any, chunks: list[tuple[tuple[int, ...], list[int], int, int]]) -> int:
    """Write (sequences, tokens, position of the first, index of the first with logits) chunks into
    llama-cpp-python's batch, logits only where asked; returns how many rows of logits it will give.
    A token of several sequences is visible to all of them (one cell, several tags)."""
    batch = llm._batch.batch
    n = n_out = 0
    for seqs, tokens, first_pos, logits_from in chunks:
        for i, token in enumerate(tokens):
            batch.token[n], batch.pos[n], batch.n_seq_id[n] = token, first_pos + i, len(seqs)
            for j, seq in enumerate(seqs):
                batch.seq_id[n][j] = seq
            batch.logits[n] = i >= logits_from
            n_out += i >= logits_from
            n += 1
    batch.n_tokens = n
    return n_out


def decode_batch(llm: Any) -> None:
    """Decode what :func:`fill_batch` wrote (raises when llama.cpp refuses it)."""
    llm._ctx.decode(llm._batch)


def logit_rows(llm: Any, n_out: int) -> np.ndarray:
    """A copy of the last decode's ``n_out`` rows of logits (llama.cpp reuses the buffer)."""
    out = np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(n_out * llm.n_vocab(),))
    return out.reshape(n_out, llm.n_vocab()).copy()
