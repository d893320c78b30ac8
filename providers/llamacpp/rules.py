"""The local provider's prefix-reuse rules as plain data and pure functions, shared by the provider and the estimate.

``judgesdk score --estimate`` counts the prompt tokens the local model would evaluate without loading it: it replays
the provider's KV-cache bookkeeping on token lists (:mod:`judgesdk.forecast.kv_replay`). Both read the rules from
here, so a change to prefix reuse changes the estimate with it: when to restore a saved state, when to save the
live one, how a long state is aligned, how decodes are padded, which label requests are decoded together, and which
label-token paths are evaluated. This module imports neither llama-cpp-python nor NumPy, so the estimate of a
hosted run needs neither.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

__all__ = [
    "CELL_ALIGN", "MIN_BATCH", "PAD_TOKEN", "PARALLEL_MAX_SUFFIX", "RESTORE_MIN_GAIN", "ROW_GROUP", "SAVE_MIN_DISCARD",
    "common", "label_paths", "maximal_paths", "shared",
]  # fmt: skip

ROW_GROUP = 4  # llama.cpp's CPU kernels take a batch's rows four at a time (see PrefixCache._decode_padded)
PAD_TOKEN = 0  # what padding positions hold; never seen by a real row
MIN_BATCH = 16  # the least n_batch that holds a whole row group and its padding (see PrefixCache.batch_step)
CELL_ALIGN = 64  # a long state is saved at a multiple of this (see PrefixCache._save_live)
RESTORE_MIN_GAIN = 16  # restore a saved state only when it reuses at least this many more tokens than the live one
SAVE_MIN_DISCARD = 32  # save the live state only when a switch would discard at least this many tokens
PARALLEL_MAX_SUFFIX = 48  # decode label requests together only when each one's own part is at most this many tokens


def common(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common prefix of two token sequences ``a`` and ``b`` (0 when their first tokens
    differ), the count of leading tokens a KV cache holding one can reuse for the other."""
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def shared(prompts: Sequence[Sequence[int]]) -> int:
    """Length of the longest prefix every one of ``prompts`` starts with (a lone prompt shares nothing)."""
    return min(common(prompts[0], p) for p in prompts[1:]) if len(prompts) > 1 else 0


def maximal_paths(paths: Sequence[tuple[int, ...]]) -> list[tuple[int, ...]]:
    """The label-token paths that are not a prefix of another, sorted so shared prefixes are adjacent; the empty
    path (single-token labels only) when there is nothing longer."""
    unique = sorted(set(paths))
    maximal = [p for p in unique if not any(len(q) > len(p) and q[: len(p)] == p for q in unique)]
    return maximal or [()]


def label_paths(encoded: Mapping[str, Sequence[int]]) -> list[tuple[int, ...]]:
    """The token paths to evaluate after the prompt: each label's tokens but its last (whose probability is read
    from the row after them), reduced to the maximal ones.

    ``encoded``: each label's token ids (labels that encode to nothing are left out). Returns the paths that are
    not a prefix of another, sorted (:func:`maximal_paths`); ``[()]`` when every label is a single token."""
    return maximal_paths([tuple(t[:-1]) for t in encoded.values() if t])
