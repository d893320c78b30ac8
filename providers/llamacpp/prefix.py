"""The prefix-state cache: what the KV cache of sequence 0 holds, and a small LRU of saved states of it.

Judging prompts share long prefixes (instructions, criterion, source) and differ in a short tail (the
output, the label). :class:`PrefixCache` keeps the KV cache of the longest common token prefix with the
previous request, so a later prompt evaluates only its own tokens, and keeps the sequence's state at the
prefixes worth returning to in :class:`PrefixStates`, so interleaved work (criteria x sources, two
sources alternating) restores a prefix instead of evaluating it again. Saved states live in host memory
rather than as extra sequences in the KV cache: stored sequences use up the context and every later
decode attends over their cells too (figures: benchmarks/README.md, "Local prefix reuse").

A model with sliding-window layers (Gemma 3: a 512-position window) needs care: llama.cpp saves only the
last window of those layers' cells, so a restored state is whole only from ``n - n_swa`` on. The rules
that keep reuse exact there are :meth:`PrefixCache._restorable` (use a long state only when the prompt
continues all of it), :meth:`PrefixCache._save_live` (save a family's shared part alone), the floor below
which a restored cache cannot be rewound, and the anchor (the prefix the last prompts shared).

It also decodes: every evaluation goes through this cache, which knows what is already held, and counts
what was evaluated, reused and restored (:class:`PrefixCounters`). Everything here runs on the provider's
one worker thread. llama-cpp-python internals are reached only through ``compat``.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np
from pydantic import BaseModel

from judgesdk.core import CapabilityError

from . import compat, rules
from .rules import CELL_ALIGN, PAD_TOKEN, ROW_GROUP


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


# -- the live cache ----------------------------------------------------------------------------


class PrefixCache:
    """Sequence 0's live KV cache in the attached ``Llama`` and the saved states of it (see the module
    docstring). ``reuse=False`` empties the cache before every prompt (to measure what reuse saves);
    ``states`` bounds the saved-state LRU (0 entries: the live cache only); ``track_unique_tokens`` makes
    ``counters.unique_tokens`` count distinct token prefixes (it keeps a trie in memory)."""

    RESTORE_MIN_GAIN = rules.RESTORE_MIN_GAIN  # the rules the estimate replays too (providers/llamacpp/rules.py)
    SAVE_MIN_DISCARD = rules.SAVE_MIN_DISCARD

    def __init__(self, *, reuse: bool, states: PrefixStates, track_unique_tokens: bool, kind: str) -> None:
        self.reuse = reuse
        self.kind = kind  # the provider kind errors name
        self.counters = PrefixCounters(unique_tokens=0 if track_unique_tokens else None)
        self._trie = TokenTrie() if track_unique_tokens else None
        self._states = states
        self.llm: Any = None  # the llama_cpp.Llama, attached once loaded
        self._n_swa = 0  # the model's sliding-window length (0: none), read at load
        self._floor = 0  # the live cache is whole only from here on (after restoring a long state), else 0
        self._anchor = 0  # the live cache's prefix that the last prompts shared (what a saved state keeps)
        self._last_logits: np.ndarray | None = None  # logits after the last token in the KV cache, when known

    def attach(self, llm: Any) -> None:
        """Work on ``llm`` (just loaded) from now on."""
        self._n_swa = compat.sliding_window(llm)
        self.llm = llm

    def detach(self) -> None:
        self.llm = None

    # -- counting ---------------------------------------------------------------------------------

    def reset_counters(self) -> None:
        """Start counting afresh; the KV cache and saved states are kept."""
        self.counters = PrefixCounters(unique_tokens=0 if self._trie is not None else None)
        if self._trie is not None:
            self._trie = TokenTrie()

    def count(self, **increments: int) -> None:
        for name, value in increments.items():
            setattr(self.counters, name, getattr(self.counters, name) + value)

    def needs(self, tokens: list[int]) -> None:
        """Record a token sequence the request needs evaluated (for ``unique_tokens``)."""
        if self._trie is not None:
            self._trie.add(tokens)
            self.counters.unique_tokens = self._trie.nodes

    # -- what the live cache holds --------------------------------------------------------------

    def cached_prefix(self, tokens: list[int]) -> int:
        """How much of ``tokens`` the live cache holds, counting only what can be kept (see :meth:`rewind`)."""
        shared = common_prefix(self.llm.input_ids[: self.llm.n_tokens], tokens)
        return shared if shared >= self._floor else 0

    def check_fits(self, n: int) -> None:
        if n > self.llm.n_ctx():
            raise CapabilityError(
                f"the prompt needs {n} tokens but the local context holds {self.llm.n_ctx()}; raise n_ctx or shorten the source",
                provider=self.kind,
            )

    def forget_logits(self) -> None:
        """Something else (llama-cpp-python's generation) moved the cache past what :meth:`decode` knew."""
        self._last_logits = None

    # -- prefix reuse across requests ------------------------------------------------------------

    def switch_to(self, prompt: list[int]) -> int:
        """Bring the KV cache as close to ``prompt`` as the live cache or a saved state allows; returns the
        number of prompt tokens that will not be evaluated. Without reuse, the cache is emptied."""
        if not self.reuse:
            self.rewind(0)
            return 0
        live = self.cached_prefix(prompt)
        key, saved = self._states.best(prompt) if self._states.max_entries else (None, 0)
        if key is not None and saved >= live + self.RESTORE_MIN_GAIN and self._restorable(self._states.peek(key), saved):
            state = self._states.pop(key)  # before saving the live state, which may replace its family
            self._save_live(keep=live)
            live = saved if self._restore(state, saved) else 0
            self._anchor = live
        else:
            self._save_live(keep=live)
            if live <= 1:  # only the BOS shared: evaluated again with the prompt, as a fresh cache would (its
                self.rewind(0)  # cells from another prompt's decode moved a short output's log-probabilities
                live = 0  # by ~0.07: batch-split numerics)
            self.share(live if live >= self.RESTORE_MIN_GAIN else 0)
        return min(live, len(prompt))

    def share(self, n: int) -> None:
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
        llm = self.llm
        if not self._states.max_entries or llm.n_tokens - keep < self.SAVE_MIN_DISCARD:
            return
        if self._n_swa and llm.n_tokens > self._n_swa:
            if self._anchor and keep >= self._anchor:
                return  # the next prompt continues all its family shares: only an output's tail would be kept
            tokens = list(llm.input_ids[: llm.n_tokens])
            _, relative = self._states.best(tokens)  # a saved relative: the share when no prompt has shown it yet
            shared = max(keep, self._anchor or relative)
            if self.SAVE_MIN_DISCARD <= shared < llm.n_tokens and shared >= self._floor:
                self.rewind(shared)
            # Restored, the window's cells land at the start of the sliding-window cache: position p in cell
            # p - (n - n_swa). llama.cpp sums attention over cells in SIMD lanes, so a restored prompt matched a
            # fresh one only when n - n_swa kept p's lane (cells mod 32 on AVX2; 64 covers AVX-512); scores
            # moved by up to 0.0025 otherwise, measured. Cutting the state to a multiple of 64 keeps every lane.
            aligned = llm.n_tokens // CELL_ALIGN * CELL_ALIGN
            if aligned < self._floor:
                return  # (a restored state's length is a multiple already: not reached)
            self.rewind(aligned)
        data, written = compat.save_sequence(llm)
        if written:
            self._states.put(SavedState(tokens=llm.input_ids[: llm.n_tokens].copy(), data=data, size=int(written)))
            self.count(state_saves=1)

    def _restore(self, state: SavedState, reused: int) -> bool:
        """Load a saved state into sequence 0; False (and an empty cache) if llama.cpp refused it."""
        llm = self.llm
        compat.remove_cells(llm, 0, 0)
        if compat.load_sequence(llm, state.data, state.size) != state.size:
            llm.n_tokens = -1  # force rewind to clear whatever was half-loaded
            self.rewind(0)
            return False
        n = len(state.tokens)
        llm.input_ids[:n] = state.tokens
        llm.n_tokens = n
        self._floor = n if self._n_swa and n > self._n_swa else 0  # its sliding-window cells start at n - n_swa
        compat.mark_logits_stale(llm)  # no live logits: llama-cpp-python's generate must re-decode one token
        self._last_logits = None
        self.count(state_restores=1, tokens_restored=reused)
        return True

    def rewind(self, n: int) -> None:
        """Keep only the live cache's first ``n`` tokens (none when ``n`` falls below a restored state's floor)."""
        if n < self._floor:  # below a restored state's sliding-window cells: nothing before n is whole
            n = 0
        if n == 0:
            self._floor = self._anchor = 0
        if self.llm.n_tokens != n:
            self.llm.n_tokens = n
            compat.remove_cells(self.llm, -1, n)
            compat.mark_logits_stale(self.llm)
            self._last_logits = None

    # -- decoding --------------------------------------------------------------------------------

    def decode(self, tokens: list[int], *, logits_from: int) -> np.ndarray:
        """Evaluate ``tokens`` after the current position; rows of logits for ``tokens[logits_from:]``."""
        llm = self.llm
        if not tokens:  # the cache already holds what was asked
            return np.empty((0, llm.n_vocab()), dtype=np.float32)
        compat.remove_cells(llm, -1, llm.n_tokens)
        rows: list[np.ndarray] = []
        step = self.batch_step()
        for start in range(0, len(tokens), step):
            chunk = tokens[start : start + step]
            pos = llm.n_tokens
            got = self._decode_padded([((0,), chunk, pos, logits_from - start)], end=pos + len(chunk))
            llm.input_ids[pos : pos + len(chunk)] = chunk
            llm.n_tokens += len(chunk)
            if len(got):
                rows.append(got)
        self.count(tokens_evaluated=len(tokens), decodes=1)
        compat.mark_logits_stale(llm)  # the context's logits are ours, not what llama-cpp-python's sampler expects
        logits = np.concatenate(rows) if rows else np.empty((0, llm.n_vocab()), dtype=np.float32)
        self._last_logits = logits[-1] if len(logits) and logits_from < len(tokens) else None
        return logits

    def batch_step(self) -> int:
        """The most real tokens one decode takes: ``n_batch`` less room for the padding, in whole row groups."""
        return (self.llm.n_batch - 2 * (ROW_GROUP - 1)) // ROW_GROUP * ROW_GROUP  # n_batch >= MIN_BATCH: at least 8

    def _decode_padded(self, entries: list[tuple[tuple[int, ...], list[int], int, int]], *, end: int) -> np.ndarray:
        """Decode ``entries`` (see ``compat.fill_batch``) padded to whole row groups; the real rows of logits.

        Why: llama.cpp's CPU matrix kernels for this model's weights take the batch's rows four at a time
        and the remainder one at a time, and the two paths round differently (one prompt decoded in differently
        split batches: a row's logits moved by up to 1.5, its 1-5 expectation by up to 0.03, measured). So what a position holds depended on where its decode
        ended, i.e. on what the cache held before: the same prompt scored differently with another history.
        Padding every decode to a multiple of four tokens, and its rows of logits to a multiple of four, puts
        every row on the four-row path whatever the batch. The padding is sequence 0's tokens placed after
        ``end`` (its real end in this batch): causal attention hides them from every real row of sequence 0,
        other sequences never see sequence 0's cells past their shared part, and they are removed after."""
        llm = self.llm
        n = sum(len(tokens) for _, tokens, _, _ in entries)
        n_out = sum(max(0, len(tokens) - max(first, 0)) for _, tokens, _, first in entries)
        with_logits = -n_out % ROW_GROUP if n_out else 0
        pad = with_logits + (-(n + with_logits) % ROW_GROUP)
        fill = entries + [((0,), [PAD_TOKEN] * pad, end, pad - with_logits)] if pad else entries
        got = compat.fill_batch(llm, fill)
        try:
            compat.decode_batch(llm)
            logits = compat.logit_rows(llm, got)[:n_out] if got else np.empty((0, llm.n_vocab()), dtype=np.float32)
        finally:
            if pad:
                compat.remove_cells(llm, 0, end)
        return logits

    def decode_parallel(self, prefix: list[int], tails: list[list[int]], rows: int) -> np.ndarray:
        """One decode: the part of ``prefix`` not yet in the cache, in sequence 0 and visible to every tail,
        and each tail as sequence i+1 after it, with logits for each tail's last ``rows`` tokens. The
        tails' sequences share the prefix's cells (a unified KV cache only tags them) and are removed
        afterwards, leaving sequence 0 holding exactly ``prefix``. Padded like every decode
        (:meth:`_decode_padded`), but a tail's cells sit after the other tails', so its rows differ slightly
        from decoding it alone (attention sums over cells in SIMD lanes): why grouping is opt-in."""
        llm = self.llm
        start, sequences = llm.n_tokens, tuple(range(1, len(tails) + 1))
        compat.remove_cells(llm, -1, start)
        for seq in sequences:
            compat.copy_cells(llm, 0, seq, 0, start)
        rest = ((0, *sequences), prefix[start:], start, len(prefix))  # no logits for the shared part
        try:
            logits = self._decode_padded([rest] + [((seq,), tail, len(prefix), len(tail) - rows) for seq, tail in zip(sequences, tails)], end=len(prefix))
        finally:
            for seq in sequences:
                compat.remove_cells(llm, seq, 0)
        llm.input_ids[start : len(prefix)] = prefix[start:]
        llm.n_tokens = len(prefix)
        compat.mark_logits_stale(llm)
        self._last_logits = None
        self.count(tokens_evaluated=len(prefix) - start + sum(map(len, tails)), decodes=1)
        return logits

    def rows(self, tokens: list[int], first: int) -> np.ndarray:
        """Logits after each of ``tokens[first:]`` (row i: the distribution after ``tokens[: first + i + 1]``),
        evaluating only what the KV cache does not already hold.

        Every decode is padded (:meth:`_decode_padded`), so the rows do not depend on what the cache held
        before or where this decode starts: the same tokens give the same logits whatever ran before."""
        self.check_fits(len(tokens))
        self.needs(tokens)
        common = self.cached_prefix(tokens)
        if first == len(tokens) - 1 == common - 1 == self.llm.n_tokens - 1 and self._last_logits is not None:
            return self._last_logits[None, :]
        self.rewind(min(common, first))
        start = self.llm.n_tokens
        return self.decode(tokens[start:], logits_from=first - start)

    def finish_at(self, prompt: list[int], prompt_logits: np.ndarray) -> None:
        """Leave the cache holding exactly ``prompt``, whose next-token logits are known."""
        self.rewind(len(prompt))
        self._last_logits = prompt_logits
