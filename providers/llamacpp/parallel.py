"""The local adapter's label requests that share all but a short suffix, answered in one decode of parallel sequences.

**Parallel sequences.** Label requests that arrive while the worker is busy wait in a queue; the worker
drains it whole and decodes each group that differs only in its last ``PARALLEL_MAX_SUFFIX`` tokens (up
to ``parallel_suffixes``) in one decode: the shared prefix's uncached part in sequence 0, tagged with
every request's sequence too, and each request's own tokens and label path as its own sequence. Sequence
0 is left holding exactly the shared prefix (the context has ``parallel_suffixes + 1`` sequences over one
unified KV buffer). A decode's fixed cost is most of a short decode's cost, so short suffixes (an output's
criteria after a shared-criteria prompt) gain; long ones do not, and everything else runs one request
at a time (figures: benchmarks/README.md, "Local prefix reuse"). It is off by default
(``parallel_suffixes=1``): a request's tail then sits in other KV cells than when decoded alone, and
llama.cpp's attention sums over cells in SIMD lanes, so a 1-5 expectation moved by up to 0.16 with the
grouping (benchmarks/README.md, "Reproducible local scores"). One request per decode gives the same
numbers whatever ran before; grouping trades that for ~1.2x on shared-criteria prompts.

:class:`SuffixGroups` holds that queue-draining and grouping for :class:`~.adapter.LlamaCppProvider`, which inherits
it; its methods read the provider through :class:`_Grouping`, the part of it they use.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any, Protocol

import numpy as np

from judgesdk.provider import GenerateRequest, GenerateResponse, as_text

from .labels import path_scores
from .prefix import PrefixCache, shared_prefix
from .rules import label_paths


class _Grouping(Protocol):
    """What :class:`SuffixGroups` needs of the provider it is mixed into (:class:`~.adapter.LlamaCppProvider`)."""

    PARALLEL_MAX_SUFFIX: int
    parallel_suffixes: int
    _cache: PrefixCache
    _pending: list[tuple[GenerateRequest, asyncio.Future[GenerateResponse]]]
    _pending_lock: threading.Lock

    @property
    def space_prefix(self) -> bool: ...
    @property
    def _llm(self) -> Any: ...
    def _tokenize(self, text: str, *, bos: bool) -> list[int]: ...
    def _encoded_labels(self, labels: tuple[str, ...], before: str | None = None, prompt: list[int] | None = None) -> dict[str, list[int]]: ...
    def _blank(self, **fields: Any) -> GenerateResponse: ...
    def _generate(self, request: GenerateRequest, prompt: list[int] | None = None) -> GenerateResponse: ...
    def _answered(self, response: GenerateResponse, prompt: list[int], reused: int, started: float) -> GenerateResponse: ...
    def _outcome(self, request: GenerateRequest, prompt: list[int]) -> tuple[GenerateResponse | None, BaseException | None]: ...
    def _suffix_groups(self, queued: list[tuple]) -> list[list[tuple]]: ...
    def _generate_group(self, group: list[tuple[GenerateRequest, list[int]]]) -> list[GenerateResponse]: ...


class SuffixGroups:
    """Draining the queue of label requests on the worker thread: groups that share all but a short suffix in one
    decode each, the rest one at a time (see the module docstring). Mixed into the provider, which queues them."""

    _pending: list[tuple[GenerateRequest, asyncio.Future[GenerateResponse]]]  # the queue (set by the provider's __init__)

    def _drain(self: _Grouping) -> None:
        """Answer every queued label request: groups that share all but a short suffix in one decode each,
        the rest one at a time. Each request gets its own response or its own error, on its own loop."""
        with self._pending_lock:
            pending, self._pending = self._pending, []
        queued = []
        for request, answer in pending:
            try:
                queued.append((request, answer, self._tokenize(as_text(request.messages), bos=True)))
            except Exception as exc:  # e.g. the model failed to load: the caller must hear it, not wait forever
                answer.get_loop().call_soon_threadsafe(settle, answer, None, exc)
        for group in self._suffix_groups(queued):
            outcomes: list[tuple[GenerateResponse | None, BaseException | None]]
            try:
                outcomes = [(response, None) for response in self._generate_group([(r, p) for r, _, p in group])]
            except Exception:  # a failed batch is retried request by request, so each gets its own answer
                outcomes = [self._outcome(r, p) for r, _, p in group]
            for (_, answer, _), outcome in zip(group, outcomes):
                answer.get_loop().call_soon_threadsafe(settle, answer, *outcome)

    def _outcome(self: _Grouping, request: GenerateRequest, prompt: list[int]) -> tuple[GenerateResponse | None, BaseException | None]:
        try:
            return self._generate(request, prompt), None
        except Exception as exc:
            return None, exc

    def _suffix_groups(self: _Grouping, queued: list[tuple]) -> list[list[tuple]]:
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

    def _generate_group(self: _Grouping, group: list[tuple[GenerateRequest, list[int]]]) -> list[GenerateResponse]:
        """Responses for requests whose prompts share a prefix: the prefix in sequence 0 and every
        request's own tokens and label path as a parallel sequence over it, in one decode (two when the
        prefix's uncached part and the tails do not fit one batch)."""
        labels = group[0][0].labels
        assert labels is not None  # only label requests are queued (generate routes the rest elsewhere)
        if self.space_prefix:  # each prompt has its own label tokens (_following): one request at a time
            return [self._generate(r, p) for r, p in group]
        encoded = self._encoded_labels(labels)
        paths = label_paths(encoded)
        prompts = [p for _, p in group]
        shared = shared_prefix(prompts)
        tails = [p[shared:] + list(paths[0]) for p in prompts]
        tail_tokens = sum(map(len, tails))
        cache_step = self._cache.batch_step()
        if len(group) == 1 or len(paths) > 1 or min(len(p) for p in prompts) == shared or tail_tokens > cache_step:
            return [self._generate(r, p) for r, p in group]
        started = time.perf_counter()
        cache = self._cache
        cache.check_fits(shared + tail_tokens)
        prefix = prompts[0][:shared]
        reused = cache.switch_to(prefix)
        cache.rewind(cache.cached_prefix(prefix))
        if shared - self._llm.n_tokens + tail_tokens > cache_step:  # too long for one decode
            cache.decode(prefix[self._llm.n_tokens :], logits_from=shared)  # no rows: each tail's first is its own
        logits = cache.decode_parallel(prefix, tails, rows=len(paths[0]) + 1)
        responses = []
        for i, (prompt, rows) in enumerate(zip(prompts, np.split(logits, len(group)))):
            cache.needs(prompt + list(paths[0]))
            response = self._blank(label_logprobs=path_scores(encoded, paths[0], rows))
            responses.append(self._answered(response, prompt, reused if i == 0 else shared, started))
        cache.count(batched_requests=len(group))
        return responses


def settle(answer: asyncio.Future, response: GenerateResponse | None, error: BaseException | None) -> None:
    """Deliver one queued request's outcome (on the event loop; a request cancelled meanwhile is skipped)."""
    if answer.done():
        return
    if error is not None:
        answer.set_exception(error)
    else:
        answer.set_result(response)

