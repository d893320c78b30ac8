"""On a GPU build of llama-cpp-python, llama.cpp's libraries load before any other library brings the C++
runtime (issue 30, item 8).

Why: on one H200 with llama-cpp-python 0.3.36 built for CUDA, loading a model died with SIGSEGV in every fresh
process where numpy (whose core links the system's ``libstdc++``) had been imported before ``llama_cpp``, and
in none where ``llama_cpp`` came first: 22 of 22 processes split that way (the config path, the direct provider,
a bare ``Llama()`` on a thread or on the main thread, the GPU hidden or not, and ``judgesdk score``; table and
script in benchmarks/README.md, "The local provider on a CUDA build"). The native stack of the crash:
``llama_model_load_from_file`` -> ``llama_model::print_info`` -> an ``std::ostream`` inserter bound to the copy of
libstdc++'s stream templates inside ``libggml-cuda.so`` rather than to ``libstdc++``'s own, failing in its locale
code. Which copy the dynamic linker binds depends on whether ``libstdc++`` was already in the process when
llama.cpp's libraries arrived. judgesdk imports numpy itself, so before this module every start of the local
provider on a CUDA build crashed unless something had imported ``llama_cpp`` first (gpu-check's workers did;
``judgesdk score`` did not).

So ``import judgesdk`` loads ``llama_cpp`` first on a GPU build (``judgesdk/__init__.py`` calls
:func:`load_llama_first` before anything that imports numpy); CPU builds never crashed and are left to load
lazily. Where the order is already wrong (a script that imported numpy before judgesdk), the local provider
refuses to start with a :class:`~judgesdk.core.errors.PermanentError` that says what to change, instead of
crashing the process (:func:`cxx_runtime_loaded_first`). Nothing here imports numpy: that is the point.
"""

from __future__ import annotations

import ctypes
import importlib.util
import os
import sys
from pathlib import Path
from typing import Any

GPU_BACKEND_LIBRARIES = ("libggml-cuda", "libggml-hip", "libggml-vulkan", "libggml-metal", "libggml-sycl", "libggml-musa")


def gpu_build() -> bool:
    """Whether the installed llama_cpp carries a GPU backend library (``lib/libggml-cuda.so`` and the like),
    found by name without importing it: true on a CUDA build even where no device is visible
    (``CUDA_VISIBLE_DEVICES=""``), when ``llama_supports_gpu_offload()`` says False."""
    module = sys.modules.get("llama_cpp")
    if module is not None:
        folders = list(getattr(module, "__path__", []))
    else:
        try:
            spec = importlib.util.find_spec("llama_cpp")
        except (ImportError, ValueError):
            return False
        folders = list(spec.submodule_search_locations or []) if spec is not None else []
    return any(path.name.startswith(GPU_BACKEND_LIBRARIES) for folder in folders for path in Path(folder, "lib").glob("lib*"))


def import_llama() -> Any:
    """``llama_cpp``, imported the one way judgesdk imports it, or None without the ``local`` extra.

    ``OMP_WAIT_POLICY`` is defaulted to PASSIVE first, unless the environment names a policy: libgomp reads it
    once, when llama.cpp loads it, and by default llama.cpp's CPU threads spin at the barrier after every graph
    node, which starves other work on the same cores (benchmarks/README.md, "Local prefix reuse"). Both
    importers, :func:`load_llama_first` and :mod:`judgesdk.providers.llamacpp.compat`, come through here."""
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        import llama_cpp
    except ImportError:
        return None
    return llama_cpp


def load_llama_first() -> None:
    """Import ``llama_cpp`` now if it is a GPU build that no one has imported yet; otherwise nothing.

    Called by ``judgesdk/__init__.py`` before any module that imports numpy."""
    if "llama_cpp" in sys.modules or not gpu_build():
        return
    try:
        import_llama()
    except (OSError, RuntimeError):  # a broken build fails later, where the local provider says why
        return


def loaded_libraries() -> list[str] | None:
    """The file names of the shared objects in this process, in the order they were loaded (glibc's
    ``dl_iterate_phdr``), or None where that cannot be read (not Linux/glibc)."""
    if not sys.platform.startswith("linux"):
        return None

    class Info(ctypes.Structure):
        _fields_ = [("addr", ctypes.c_void_p), ("name", ctypes.c_char_p)]  # the head of struct dl_phdr_info

    names: list[str] = []

    @ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(Info), ctypes.c_size_t, ctypes.c_void_p)
    def each(info: Any, size: int, data: Any) -> int:
        names.append(os.path.basename((info.contents.name or b"").decode(errors="replace")))
        return 0

    try:
        iterate = ctypes.CDLL(None).dl_iterate_phdr
    except (OSError, AttributeError):
        return None
    iterate(each, None)
    return names


def cxx_runtime_loaded_first() -> bool:
    """Whether ``libstdc++`` was loaded into this process before llama.cpp's ``libllama``: the order that
    crashed every model load on a CUDA build (module docstring). False when llama.cpp is not loaded or the
    order cannot be read."""
    names = loaded_libraries()
    if not names:
        return False
    runtime = next((i for i, name in enumerate(names) if name.startswith("libstdc++.so")), None)
    llama = next((i for i, name in enumerate(names) if name.startswith("libllama.")), None)
    return runtime is not None and llama is not None and runtime < llama
