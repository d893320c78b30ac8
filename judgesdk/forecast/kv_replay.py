"""The local model's prefix reuse, replayed on token lists: how many prompt tokens it would evaluate.

The estimate's ``tokens evaluated`` is what the llama.cpp provider's ``counters.tokens_evaluated`` records
after prefix reuse. :class:`KVReplay` repeats its KV-cache bookkeeping over the calls in arrival order, so
that the source of a document is counted once when its outputs follow each other, as it is evaluated once.
It follows ``providers/llamacpp/prefix.py`` and the request paths of ``providers/llamacpp/adapter.py`` /
``labels.py``, and reads their rules (thresholds, alignment, padding, label paths) from the one place both
take them, :mod:`judgesdk.providers.llamacpp.rules`, which needs neither llama-cpp-python nor NumPy: an estimate
for a hosted API does without the ``local`` extra. Pure bookkeeping on integers.
"""

from __future__ import annotations

import inspect
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from typing import Any

from judgesdk.providers import CELL_ALIGN as rules_CELL_ALIGN
from judgesdk.providers import PARALLEL_MAX_SUFFIX as rules_PARALLEL_MAX_SUFFIX
from judgesdk.providers import RESTORE_MIN_GAIN as rules_RESTORE_MIN_GAIN
from judgesdk.providers import ROW_GROUP as rules_ROW_GROUP
from judgesdk.providers import SAVE_MIN_DISCARD as rules_SAVE_MIN_DISCARD
from judgesdk.providers import common, label_paths
from judgesdk.providers import shared as shared_prefix

__all__ = ["KVReplay", "label_paths", "local_settings"]


class KVReplay:
    """The local provider's KV-cache bookkeeping replayed on token lists, counting what it would evaluate.

    Mirrors ``providers/llamacpp/prefix.py`` (``PrefixCache``: the live prefix, the saved-state LRU whose
    entries of one family replace each other, the sliding-window rules, the anchor) and the request paths
    of ``providers/llamacpp/adapter.py`` / ``labels.py`` (continuations, label paths, parallel label
    groups, generation). Not modelled: the saved states' byte bound (``prefix_state_mb``; a 270M model's
    states are far below it) and a generation's own stopping (counted at ``max_tokens``).
    """

    RESTORE_MIN_GAIN = rules_RESTORE_MIN_GAIN
    SAVE_MIN_DISCARD = rules_SAVE_MIN_DISCARD
    CELL_ALIGN = rules_CELL_ALIGN
    ROW_GROUP = rules_ROW_GROUP
    PARALLEL_MAX_SUFFIX = rules_PARALLEL_MAX_SUFFIX

    def __init__(self, *, reuse: bool, states: int, n_swa: int, parallel: int, n_batch: int, n_ctx: int) -> None:
        self.reuse, self.max_states, self.n_swa = reuse, states if reuse else 0, n_swa
        self.parallel, self.n_batch, self.n_ctx = parallel if reuse else 1, n_batch, n_ctx
        self.live: list[int] = []
        self.floor = self.anchor = 0
        self.logits = False  # the logits after the live cache's last token are known
        self.states: OrderedDict[int, tuple[int, ...]] = OrderedDict()
        self._next = 0
        self.evaluated = self.reused = self.too_long = 0

    # -- the saved-state LRU
    def _best(self, tokens: Sequence[int]) -> tuple[int | None, int]:
        best_key, best_len = None, 0
        for key, state in reversed(self.states.items()):
            n = common(state, tokens)
            if n > best_len:
                best_key, best_len = key, n
        return best_key, best_len

    def _put(self, state: tuple[int, ...]) -> None:
        for key, entry in list(self.states.items()):
            if common(entry, state) * 2 >= min(len(entry), len(state)):
                del self.states[key]
        self.states[self._next] = state
        self._next += 1
        while len(self.states) > self.max_states:
            self.states.popitem(last=False)

    # -- the live cache
    def cached_prefix(self, tokens: Sequence[int]) -> int:
        shared = common(self.live, tokens)
        return shared if shared >= self.floor else 0

    def rewind(self, n: int) -> None:
        if n < self.floor:
            n = 0
        if n == 0:
            self.floor = self.anchor = 0
        if len(self.live) != n:
            del self.live[n:]
            self.logits = False

    def share(self, n: int) -> None:
        self.anchor = min(self.anchor, n) if self.anchor and n else n

    def _restorable(self, state: tuple[int, ...], reused: int) -> bool:
        return not self.n_swa or len(state) <= self.n_swa or reused >= len(state)

    def _save_live(self, keep: int) -> None:
        if not self.max_states or len(self.live) - keep < self.SAVE_MIN_DISCARD:
            return
        if self.n_swa and len(self.live) > self.n_swa:
            if self.anchor and keep >= self.anchor:
                return
            _, relative = self._best(self.live)
            shared = max(keep, self.anchor or relative)
            if self.SAVE_MIN_DISCARD <= shared < len(self.live) and shared >= self.floor:
                self.rewind(shared)
            aligned = len(self.live) // self.CELL_ALIGN * self.CELL_ALIGN
            if aligned < self.floor:
                return
            self.rewind(aligned)
        self._put(tuple(self.live))

    def switch_to(self, prompt: Sequence[int]) -> int:
        if not self.reuse:
            self.rewind(0)
            return 0
        live = self.cached_prefix(prompt)
        key, saved = self._best(prompt) if self.max_states else (None, 0)
        if key is not None and saved >= live + self.RESTORE_MIN_GAIN and self._restorable(self.states[key], saved):
            state = self.states.pop(key)
            self._save_live(keep=live)
            self.live = list(state)
            self.floor = len(state) if self.n_swa and len(state) > self.n_swa else 0
            self.logits = False
            live = self.anchor = saved
        else:
            self._save_live(keep=live)
            if live <= 1:
                self.rewind(0)
                live = 0
            self.share(live if live >= self.RESTORE_MIN_GAIN else 0)
        return min(live, len(prompt))

    def _decode(self, tokens: Sequence[int], logits_from: int) -> None:
        if not tokens:
            return
        self.evaluated += len(tokens)
        self.live.extend(tokens)
        self.logits = logits_from < len(tokens)

    def _rows(self, tokens: list[int], first: int) -> None:
        common = self.cached_prefix(tokens)
        if first == len(tokens) - 1 == common - 1 == len(self.live) - 1 and self.logits:
            return
        self.rewind(min(common, first))
        start = len(self.live)
        self._decode(tokens[start:], first - start)

    def _fits(self, n: int) -> bool:
        if n > self.n_ctx:
            self.too_long += 1
            return False
        return True

    # -- requests (each returns the prompt tokens reused, as the provider's usage records them)
    def continuation(self, prompt: list[int], tokens: list[int]) -> int:
        reused = self.switch_to(prompt)
        if tokens and self._fits(len(prompt) + len(tokens)):
            if len(prompt) > 1:
                self._rows(prompt[:-1], len(prompt) - 1)
            self._rows(prompt + tokens[:-1], len(prompt) - 1)
            self.share(len(prompt) - 1)
        return reused

    def labels(self, prompt: list[int], paths: list[tuple[int, ...]]) -> int:
        reused = self.switch_to(prompt)
        have: set[tuple[int, ...]] = set()
        for path in paths:
            missing = next((k for k in range(len(path) + 1) if path[:k] not in have), None)
            if missing is None:
                continue
            if not self._fits(len(prompt) + len(path)):
                return reused
            self._rows(prompt + list(path), len(prompt) - 1 + missing)
            have.update(path[:k] for k in range(missing, len(path) + 1))
        self.rewind(len(prompt))
        self.logits = True
        return reused

    def label_group(self, prompts: list[list[int]], paths: list[tuple[int, ...]]) -> list[int]:
        """Label requests that differ only in a short suffix: one parallel decode (``_generate_group``)."""
        shared = shared_prefix(prompts)
        tails = [p[shared:] + list(paths[0]) for p in prompts]
        tail_tokens = sum(map(len, tails))
        step = (self.n_batch - 2 * (self.ROW_GROUP - 1)) // self.ROW_GROUP * self.ROW_GROUP  # PrefixCache.batch_step
        if len(prompts) == 1 or len(paths) > 1 or min(map(len, prompts)) == shared or tail_tokens > step:
            return [self.labels(p, paths) for p in prompts]
        if not self._fits(shared + tail_tokens):
            return [0] * len(prompts)
        prefix = prompts[0][:shared]
        reused = self.switch_to(prefix)
        self.rewind(self.cached_prefix(prefix))
        if shared - len(self.live) + tail_tokens > step:
            self._decode(prefix[len(self.live) :], shared)
        self.evaluated += shared - len(self.live) + tail_tokens
        self.live = list(prefix)
        self.logits = False
        return [reused] + [shared] * (len(prompts) - 1)

    def groups(self, prompts: list[list[int]], labels: list[tuple[str, ...] | None]) -> list[list[int]]:
        """Indices of queued label requests in the groups the provider's ``_suffix_groups`` forms."""
        out: list[list[int]] = []
        for i, prompt in enumerate(prompts):
            group = out[-1] if out else None
            if group is not None and len(group) < self.parallel and labels[group[0]] == labels[i]:
                members = [prompts[j] for j in group] + [prompt]
                if max(map(len, members)) - shared_prefix(members) <= self.PARALLEL_MAX_SUFFIX:
                    group.append(i)
                    continue
            out.append([i])
        return out

    def generate(self, prompt: list[int], n: int, generated: int) -> int:
        reused = self.switch_to(prompt)
        for _ in range(n):
            if not self._fits(len(prompt) + generated):
                break
            if len(prompt) > 1:  # the prompt but its last token first, padded like every decode
                self._rows(prompt[:-1], len(prompt) - 1)
            self.evaluated += 1 + generated  # llama-cpp-python: the prompt's last token, then each generated one
            self.live = list(prompt[:-1])  # the provider rewinds what llama-cpp-python decoded unpadded
            self.logits = False
        return reused


def local_settings(adapter: Any, options: Mapping[str, Any]) -> dict[str, Any]:
    """The local provider's reuse settings, as :class:`KVReplay` takes them (all but ``n_swa``, which its
    vocabulary says): its own public attributes, the configured options, else the defaults of its constructor."""
    params: Mapping[str, inspect.Parameter]
    try:
        params = inspect.signature(type(adapter).__init__).parameters
    except (TypeError, ValueError):  # pragma: no cover - a C-implemented stand-in
        params = {}

    def value(name: str, fallback: Any) -> Any:
        if name in options:
            return options[name]
        default = params[name].default if name in params else inspect.Parameter.empty
        return fallback if default is inspect.Parameter.empty else default

    reuse = bool(getattr(adapter, "prefix_reuse", value("prefix_reuse", True)))
    return {
        "reuse": reuse,
        "states": int(value("prefix_states", 4)),
        "parallel": int(getattr(adapter, "parallel_suffixes", value("parallel_suffixes", 1))),
        "n_batch": int(value("n_batch", 512)),
        "n_ctx": int(value("n_ctx", 4096)),
    }
