"""In-process llama.cpp (llama-cpp-python) over any GGUF file, or the embedded Gemma 3 270M.

What a local model gives that an API cannot: exact label scoring (log P(label | prompt) for every label
variant, nothing generated), the log-likelihood of a given continuation, and reuse of the KV cache
across requests, since judging prompts share long prefixes. The adapter here is the request side:
it queues requests, answers them on one worker thread and generates text; the other modules of this folder
(its ``__init__`` lists them) load the model, keep the prefix cache, compute label log-probabilities and group
label requests into parallel sequences (:mod:`.parallel`).

A response's ``usage.cached_input_tokens`` counts the prompt tokens served from the KV cache or a saved
state; ``counters`` reports what the model evaluated, reused and restored. The model runs on one worker
thread (a llama context is not thread-safe); the event loop never blocks.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from judgesdk.core import ConfigError, InputError, PermanentError, UnavailableError
from judgesdk.provider import Capabilities, Choice, GenerateRequest, GenerateResponse, Usage, answer_settings, as_text, runtime

from . import compat, rules
from .build import build_features
from .labels import continuation_logprobs, label_logprobs
from .load import (
    EMBEDDED_MODEL,
    check_gguf,
    content_sha256,
    default_gpu_layers,
    embedded_model_path,
    embedded_sha256,
    load_llama,
    route_llama_log,
    vocab_adds_space_prefix,
)
from .load_order import cxx_runtime_loaded_first
from .parallel import SuffixGroups
from .prefix import PrefixCache, PrefixCounters, PrefixStates
from .rules import MIN_BATCH

# the answer-changing options' defaults (LlamaCppProvider.answer_settings); the threads as given (None: every CPU), so keys
# do not depend on the machine's core count
ANSWER_DEFAULTS: dict[str, object] = {"parallel_suffixes": 1, "n_ctx": 4096, "n_threads_batch": None}

DEFAULT_CAPABILITIES = Capabilities(
    multiple_samples=True, seed=True, exact_labels=True, loglikelihood=True, prefill=True, grammar=True
)


class LlamaCppProvider(SuffixGroups):
    """In-process llama.cpp (see the module docstring; label requests grouped as :class:`~.parallel.SuffixGroups`
    says). Reuse options: ``prefix_reuse=False`` evaluates
    every prompt from scratch (to measure what reuse saves); ``prefix_states`` and ``prefix_state_mb``
    bound the saved-state LRU (0 states: the live KV cache only); ``parallel_suffixes`` is how many label
    requests that differ only in a short suffix (e.g. an output's criteria with a shared-criteria template)
    are decoded together as parallel sequences (1, the default: one request at a time, which keeps scores
    independent of the batching); ``op_offload=False`` keeps a CUDA build's CPU work on the CPU (llama.cpp
    otherwise sends large matmuls to the GPU even with ``n_gpu_layers=0``); ``track_unique_tokens`` makes
    ``counters.unique_tokens`` count distinct token prefixes (benchmarks; it keeps a trie in memory)."""

    kind = "local"

    PARALLEL_MAX_SUFFIX = rules.PARALLEL_MAX_SUFFIX  # batch label requests only when each one's own part is at most this many tokens

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
        op_offload: bool | None = None,
        prefix_reuse: bool = True,
        prefix_states: int = 4,
        prefix_state_mb: float = 512.0,
        parallel_suffixes: int = 1,
        track_unique_tokens: bool = False,
        capabilities: Capabilities | None = None,
        model_sha256: str | None = None,
        identity: str | None = None,
    ) -> None:
        if not compat.available():
            raise PermanentError("the local provider needs the 'local' extra: pip install 'judgesdk[local]'", provider=self.kind)
        route_llama_log()  # before anything of llama.cpp's runs for this provider
        compat.init_backends()  # here, not on the worker thread inside the first load (see init_backends)
        path = Path(model_path).expanduser()
        check_gguf(path, kind=self.kind)  # now, not at the first request: the model itself loads lazily
        if compat.gpu_build() and cxx_runtime_loaded_first():  # a load would crash the process (see .load_order)
            raise PermanentError(
                "llama.cpp's libraries were loaded after another library had brought the C++ runtime into this process"
                " (numpy does); on a GPU build of llama-cpp-python that order crashes the process when the model loads."
                " Import judgesdk (or llama_cpp) before numpy and other compiled packages, e.g. as the script's first"
                " import, or run the judgesdk command",
                provider=self.kind,
            )
        if prefix_states < 0 or prefix_state_mb < 0:
            raise ConfigError(f"prefix_states ({prefix_states}) and prefix_state_mb ({prefix_state_mb}) must be >= 0")
        if parallel_suffixes < 1:
            raise ConfigError(f"parallel_suffixes must be >= 1 (1 decodes one request at a time), got {parallel_suffixes}")
        if n_batch < MIN_BATCH:
            raise ConfigError(f"n_batch must be >= {MIN_BATCH} (a decode holds its tokens and up to 6 padding tokens), got {n_batch}")
        self.model = model_name or path.stem
        self.endpoint = str(path)
        self.capabilities = capabilities or DEFAULT_CAPABILITIES
        threads = n_threads or os.cpu_count() or 1
        gpu_layers = default_gpu_layers() if n_gpu_layers is None else n_gpu_layers
        self._settings = {
            "model_path": str(path),
            "n_ctx": n_ctx,
            "n_batch": n_batch,
            "n_gpu_layers": gpu_layers,
            "n_threads": threads,
            "n_threads_batch": n_threads_batch or threads,
            "logits_all": False,
            "verbose": False,
        }
        if op_offload is not None:  # llama.cpp's default (on) is left to llama.cpp: the kwargs stay those of every release
            self._settings["op_offload"] = op_offload
        self._device = _device_tag(gpu_layers, op_offload)
        self._build = build_features(compat.system_info(), gpu=bool(self._device))
        states = PrefixStates(prefix_states if prefix_reuse else 0, int(prefix_state_mb * 2**20))
        self._cache = PrefixCache(reuse=prefix_reuse, states=states, track_unique_tokens=track_unique_tokens, kind=self.kind)
        self.parallel_suffixes = parallel_suffixes if prefix_reuse else 1  # batching shares a prefix: it is reuse
        self._answering: dict[str, object] = {
            "parallel_suffixes": self.parallel_suffixes, "n_ctx": n_ctx, "n_threads_batch": n_threads_batch,
        }  # fmt: skip
        self._pending: list[tuple[GenerateRequest, asyncio.Future[GenerateResponse]]] = []
        self._pending_lock = threading.Lock()
        self._model: Any = None  # loaded on first use: a run served from the cache never loads it
        self._load_error: UnavailableError | None = None
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="judgesdk-llama")
        self._sha256 = model_sha256.lower() if model_sha256 else None  # as given: checked against the file on first use
        self._sha256_checked = False
        self._identity = identity  # None: the file's sha256, hashed on first use
        self._space_prefix: bool | None = None  # the vocabulary's (vocab_adds_space_prefix), read from the file once
        self._grammars: dict[str, Any] = {}  # GBNF text -> llama_cpp.LlamaGrammar, checked once (see _grammar)

    @property
    def counters(self) -> PrefixCounters:
        """What the model evaluated, reused and restored since creation or :meth:`reset_counters`."""
        return self._cache.counters

    @property
    def prefix_reuse(self) -> bool:
        """Whether the KV cache is kept across requests (False: every prompt evaluated from scratch)."""
        return self._cache.reuse

    @property
    def model_sha256(self) -> str:
        """The GGUF file's sha256 (what a fitted fused judge is valid for, what provenance names), hashed once on
        first use (:func:`content_sha256`). A ``model_sha256`` given is checked against the file then, and a wrong one
        refused: provenance never carries a sha256 that is not the file's. The embedded model's is the one its package
        verified at assembly (``from_options`` gives it with its ``identity``)."""
        if not self._sha256_checked:
            if self._sha256 is None or self._identity is None:
                try:
                    actual = content_sha256(self.endpoint)
                except OSError as exc:  # removed or made unreadable since the provider was built
                    raise PermanentError(f"cannot read the model file {self.endpoint}: {exc.strerror or exc}", provider=self.kind) from None
                if self._sha256 is not None and self._sha256 != actual:
                    raise ConfigError(
                        f"model_sha256 {self._sha256} is not the sha256 of {self.endpoint} ({actual}): fix model_sha256 under "
                        "[providers.options], or leave it out (the file is hashed)"
                    )
                self._sha256 = actual
            self._sha256_checked = True
        assert self._sha256 is not None
        return self._sha256

    @property
    def identity(self) -> str:
        """What cache keys name this model by beyond its name and path (see ``judgesdk.provider.protocol.identity_of``):
        ``sha256:<the whole file's sha256>``, hashed once, on first use, without loading the model (a run served from
        the cache never loads it), so the same file keys the same on every machine; or the ``identity`` given (the
        embedded model's sha256, verified at assembly). A vocabulary with a space prefix adds ``;tokens=in-context``:
        its continuations and labels are tokenized where they stand (:meth:`_following`), which changed their answers
        after 0.1.0 (they were tokenized alone): keys made before must not serve them. On a build that can offload to a GPU, the device follows;
        then always ``;build=`` and :attr:`build` (the llama.cpp build's CPU instruction sets, and its GPU backend where a
        GPU computes): the same file answers otherwise under a llama.cpp built for other instructions, so a cache filled
        by one build never answers another."""
        if self._identity is None:
            sha = self.model_sha256
            try:
                tokens = ";tokens=in-context" if self.space_prefix else ""
            except UnavailableError:  # its metadata is unreadable: llama.cpp cannot load it either, so nothing is cached
                tokens = ""
            self._identity = f"sha256:{sha}{tokens}"
        return self._identity + (f";{self._device}" if self._device else "") + f";build={self._build}"

    @property
    def space_prefix(self) -> bool:
        """Whether the model's vocabulary puts a space before text tokenized on its own (:func:`vocab_adds_space_prefix`),
        read from the file's metadata once, without loading it: cache keys need it before the model loads."""
        if self._space_prefix is None:
            self._space_prefix = vocab_adds_space_prefix(self.endpoint, kind=self.kind)
        return self._space_prefix

    @property
    def answer_settings(self) -> str:
        """The options that move scores, where set away from their defaults (part of cache keys and of each answer's
        provenance): ``parallel_suffixes`` (grouped decodes move a 1-5 expectation by up to 0.16: benchmarks/README.md,
        'Reproducible local scores'); ``n_ctx`` and ``n_threads_batch``, which no run has yet shown not to
        (benchmarks/README.md, 'Which local options move a score'). The device is in :attr:`identity`; the options that
        cannot move a score are listed, with the measurement that says so, in :data:`.spec.ANSWER_NEUTRAL`."""
        return answer_settings(self._answering, ANSWER_DEFAULTS)

    @property
    def build(self) -> str:
        """What the llama.cpp build computes with, as far as it changes numbers (:func:`.build.build_features`), e.g.
        ``cpu:AVX+AVX2+F16C+FMA+...``: the README example's fused scores moved by up to 0.07 between a build for AVX-512
        and one for AVX2 only. Part of cache keys (:attr:`identity`) and of each answer's provenance (``build``)."""
        return self._build

    @property
    def device(self) -> str:
        """Where the model computes when llama.cpp can offload to a GPU: ``gpu:n_gpu_layers=N,op_offload=...``
        (part of cache keys and of each answer's provenance, since a GPU's numbers differ from the CPU's by up
        to 0.003 on a 1-5 scale: benchmarks/README.md); "" on a CPU build, with no device visible, or with
        ``n_gpu_layers=0`` and ``op_offload=False`` (pure CPU: keys stay those of a CPU build)."""
        return self._device

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
            self._cache.detach()

    def reset_counters(self) -> None:
        """Start counting afresh (a benchmark's phases); the KV cache and saved states are kept."""
        self._cache.reset_counters()

    @property
    def _llm(self) -> Any:
        if self._model is None:
            if self._load_error is not None:  # a file that failed to load fails every request the same way, fast
                raise self._load_error
            try:
                llm = load_llama(self._settings, n_seq=self.parallel_suffixes + 1 if self.parallel_suffixes > 1 else 1, kind=self.kind)
            except UnavailableError as exc:
                self._load_error = exc
                raise
            self._cache.attach(llm)  # reads the model's sliding-window length
            self._model = llm
        return self._model

    # -- everything below runs on the worker thread --------------------------------------------

    def _blank(self, **fields: Any) -> GenerateResponse:
        """A response naming what answers: the model file's sha256 (hashed once, here on the worker, not on
        the event loop), the llama-cpp-python that ran it and what its llama.cpp was built for (:attr:`build`)."""
        provenance = {"model_sha256": self.model_sha256, "runtime": runtime("llama-cpp-python"), "build": self._build}
        if self.space_prefix:
            provenance["tokens"] = "in-context"  # see _following
        if self._device:
            provenance["device"] = self._device
        return GenerateResponse(provider=self.kind, model=self.model, provenance=provenance, **fields)

    def _generate(self, request: GenerateRequest, prompt: list[int] | None = None) -> GenerateResponse:
        started = time.perf_counter()
        prompt = self._tokenize(as_text(request.messages), bos=True) if prompt is None else prompt
        reused = self._cache.switch_to(prompt)
        response = self._blank()
        before = as_text(request.messages) if self.space_prefix else None  # what _following tokenizes with what follows
        if request.labels is not None:
            response.label_logprobs = label_logprobs(self._cache, prompt, self._encoded_labels(request.labels, before, prompt))
        elif request.continuation is not None:
            response.continuation_tokens = continuation_logprobs(self._cache, prompt, self._following(before, prompt, request.continuation))
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
        self._cache.count(requests=1, prompt_tokens=len(prompt), tokens_reused=reused)
        response.latency_s = time.perf_counter() - started
        return response

    def _tokenize(self, text: str, *, bos: bool) -> list[int]:
        # special=False: judged text that contains control-token strings stays text.
        return self._llm.tokenize(text.encode("utf-8"), add_bos=bos, special=False)

    def _following(self, before: str | None, prompt: list[int], text: str) -> list[int]:
        """``text``'s tokens where it stands, after the prompt ``before`` (tokenized: ``prompt``): as the whole text
        tokenizes, which is what a server echoing that text scores. Only a vocabulary with a space prefix
        (:attr:`space_prefix`) is tokenized so:
        any other keeps tokenizing ``text`` alone, as it always has, so the embedded model's answers (and every figure
        measured on them) stay as they were. Where a token spans the boundary (the prompt's own tokens change),
        ``text`` is tokenized alone too."""
        if before is None or not self.space_prefix:
            return self._tokenize(text, bos=False)
        whole = self._tokenize(before + text, bos=True)
        return whole[len(prompt) :] if whole[: len(prompt)] == prompt else self._tokenize(text, bos=False)

    def _encoded_labels(self, labels: tuple[str, ...], before: str | None = None, prompt: list[int] | None = None) -> dict[str, list[int]]:
        """Each label's tokens, after the prompt ``before`` where one is given (:meth:`_following`)."""
        encoded = {label: self._following(before, prompt or [], label) for label in labels}
        return {label: tokens for label, tokens in encoded.items() if tokens}

    # -- generation ------------------------------------------------------------------------------

    def _complete(self, prompt: list[int], request: GenerateRequest, index: int) -> Choice:
        """One completion by llama-cpp-python's generation. The prompt but its last token is decoded first
        through the cache (padded: see ``PrefixCache._decode_padded``), and what llama-cpp-python decodes
        itself (the last prompt token, then one token at a time) is rewound afterwards, so a later request
        never reuses cells computed unpadded."""
        cache = self._cache
        cache.check_fits(len(prompt) + request.max_tokens)
        cache.needs(prompt)
        seed = None if request.seed is None else request.seed + request.sample_index + index
        if len(prompt) > 1:
            cache.rows(prompt[:-1], len(prompt) - 1)
        try:
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
        finally:
            cache.forget_logits()  # generation moved the cache past what its decodes knew
            cache.rewind(min(self._llm.n_tokens, len(prompt) - 1))
        generated = int(out.get("usage", {}).get("completion_tokens", 0))
        cache.count(tokens_evaluated=1 + generated)  # llama-cpp-python: the prompt's last token, then each generated one
        choice = out["choices"][0]
        return Choice(text=choice["text"], finish_reason=choice.get("finish_reason"))

    def _grammar(self, text: str) -> Any:
        """``text`` as a llama.cpp grammar, checked once per distinct text. llama-cpp-python only stores the
        string and llama.cpp parses it again for every completion; a grammar it cannot parse gives a null
        sampler, which the completion would add to its chain and crash on, so it is parsed here first and
        refused with a typed error."""
        grammar = self._grammars.get(text)
        if grammar is None:
            grammar = compat.parse_grammar(self._llm, text)
            if grammar is None:
                raise InputError(f"llama.cpp could not parse the request's GBNF grammar (root rule 'root'): {text[:200]!r}")
            self._grammars[text] = grammar
        return grammar


def _device_tag(n_gpu_layers: int, op_offload: bool | None) -> str:
    """:attr:`LlamaCppProvider.device` for these settings in this process."""
    if not compat.supports_gpu_offload() or (n_gpu_layers == 0 and op_offload is False):
        return ""
    return f"gpu:n_gpu_layers={n_gpu_layers},op_offload={'off' if op_offload is False else 'on'}"
