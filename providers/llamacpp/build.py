"""What the llama.cpp build computes with, as far as it changes numbers: the CPU backend's instruction sets, and the GPU
backend's build options where a GPU computes.

The same GGUF file gives other log-probabilities under a llama.cpp built for other CPU instructions: the README's
first command's fused scores moved by up to 0.07 between a llama-cpp-python built for AVX-512 and one built for AVX2
only (issue 40, item 6), since the kernels accumulate in other orders and the weights are repacked for other
lanes. So the build's features are part of each local answer's cache key and provenance (``LlamaCppProvider.identity``
and ``provenance["build"]``): a cache filled by one build (Ray's merged node caches, a cache copied between
machines) never answers for another, and a row says which build answered it.

:func:`build_features` reads ``llama_print_system_info()``'s text (``compat.system_info``): one section per ggml
backend that reports features, ``CPU : SSE3 = 1 | AVX = 1 | AVX2 = 1 | ... | CUDA : ARCHS = 890 | ...``; a CPU
feature the build lacks is not listed (llama.cpp lists those compiled in, or on ARM detected). It keeps what can
change a number (every feature but those :data:`NEUTRAL` names, with the reason), sorted, so two builds with the
same kernels give the same text whatever order llama.cpp prints them in. Pure text work: no llama_cpp here.
"""

from __future__ import annotations

CPU_BACKENDS = ("CPU", "BLAS")  # backends that compute on the CPU: keyed always (a GPU backend only where a GPU computes)

# features that cannot change a number, each with why (every other feature is keyed, a new one included)
NEUTRAL: dict[str, str] = {
    "OPENMP": "which thread pool runs the graph; each thread's share of every operation is the same (ith of nth)",
    "USE_GRAPHS": "CUDA graphs replay the kernels the graph would launch one by one",
    "PEER_MAX_BATCH_SIZE": "when several GPUs copy between each other directly: data movement only",
    "NO_PEER_COPY": "whether several GPUs copy between each other directly: data movement only",
    "NO_VMM": "how the CUDA memory pool reserves memory",
}

UNKNOWN = "unknown"  # the text of a build that reports no CPU features (keys apart from every build that does)


def sections(system_info: str) -> dict[str, dict[str, str]]:
    """``llama_print_system_info()``'s text as backend name -> feature name -> value, in its order. A backend that
    reports no features has an empty section; text before the first backend name is left out."""
    found: dict[str, dict[str, str]] = {}
    backend: str | None = None
    for piece in system_info.split("|"):
        left, eq, value = piece.partition("=")
        *names, feature = (part.strip() for part in left.split(":"))
        for name in names:  # "CPU : SSE3", or "EMPTY : CPU : SSE3" after a backend without features
            backend = name
            found.setdefault(backend, {})
        if backend is not None and eq and feature:
            found[backend][feature] = value.strip()
    return found


def build_features(system_info: str, *, gpu: bool) -> str:
    """The numerics-relevant part of a llama.cpp build, from ``llama_print_system_info()``'s text (``system_info``):
    ``cpu:AVX+AVX2+...`` (the CPU backend's features, sorted, :data:`NEUTRAL` ones left out, a value other than 1
    written ``NAME=VALUE``), then, with ``gpu`` (a GPU computes part of the model: the adapter's ``device`` is set),
    each other backend's the same way (``cuda:ARCHS=890+FORCE_MMQ``), separated by spaces. :data:`UNKNOWN` when the
    text names no CPU features (a llama.cpp that does not report them)."""
    parts = []
    for backend, features in sections(system_info).items():
        if backend.upper() not in CPU_BACKENDS and not gpu:
            continue  # a GPU build run on the CPU alone: its GPU backend computes nothing
        kept = sorted(name if value == "1" else f"{name}={value}" for name, value in features.items() if name not in NEUTRAL and value != "0")
        if kept:
            parts.append(f"{backend.lower()}:{'+'.join(kept)}")
    if not any(part.startswith("cpu:") for part in parts):
        return UNKNOWN
    return " ".join(sorted(parts, key=lambda part: (not part.startswith("cpu:"), part)))
