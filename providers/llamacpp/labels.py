"""Label decoding and log-probability reading over the prefix-state cache.

A local model gives what an API cannot: the exact log-probability of each label after a prompt, and of
each token of a given continuation. Nothing is generated.

* **Labels**: the next-token logits after the prompt, log-softmaxed over the full vocabulary, give
  log P(label | prompt) for every label variant; multi-token labels are chained (evaluate the label's
  first tokens, read the next distribution, rewind). Variants that share leading tokens (`` 1`` ... `` 5``
  all start with the space token) share one evaluation of them, and that evaluation rides in the same
  decode as the prompt's uncached tail.
* **Continuations**: log P(token_i | prompt, tokens_<i) for each token of a text, from one decode with
  logits kept only for those positions. The prompt's last token is always decoded with the continuation
  (the rows are the same either way since every decode is padded, see ``PrefixCache._decode_padded``; the
  token-count forecast mirrors this path).

The cache (:class:`~.prefix.PrefixCache`) decides what must be evaluated; this module decides
which rows of logits are needed and turns them into log-probabilities.
"""

from __future__ import annotations

import numpy as np

from judgesdk.provider import TokenLogprob

from .prefix import PrefixCache
from .rules import label_paths


def log_softmax(logits: np.ndarray) -> np.ndarray:
    shifted = logits.astype(np.float64) - float(np.max(logits))
    return shifted - np.log(np.exp(shifted).sum())


def token_logprobs(rows: np.ndarray, tokens: list[int]) -> np.ndarray:
    """log P(tokens[i]) under row i's distribution: the token's logit minus the row's log-sum-exp, without
    materialising whole log-softmax rows (a 262k-token vocabulary makes that most of a continuation's cost)."""
    top = rows.max(axis=1, keepdims=True)
    lse = np.log(np.exp(rows - top, dtype=np.float32).sum(axis=1, dtype=np.float64)) + top[:, 0]
    return rows[np.arange(len(tokens)), tokens].astype(np.float64) - lse


class LabelRow:
    """One row of logits with its log-normaliser computed once (a full log-softmax per label is waste)."""

    def __init__(self, logits: np.ndarray) -> None:
        self.logits = logits
        shifted = logits.astype(np.float64)
        peak = float(shifted.max())
        self._lse = peak + float(np.log(np.exp(shifted - peak).sum()))

    def logprob(self, token: int) -> float:
        return float(self.logits[token]) - self._lse


def label_scores(encoded: dict[str, list[int]], rows: dict[tuple[int, ...], LabelRow]) -> dict[str, float]:
    """log P(label) from the rows after each prefix of the labels' token paths."""
    return {label: sum(rows[tuple(tokens[:k])].logprob(tok) for k, tok in enumerate(tokens)) for label, tokens in encoded.items()}


def path_scores(encoded: dict[str, list[int]], path: tuple[int, ...], rows: np.ndarray) -> dict[str, float]:
    """log P(label) for labels whose token paths all lie on ``path``, from ``rows``: the logits after the
    prompt and after each of ``path``'s tokens (one sequence of a parallel decode)."""
    return label_scores(encoded, {path[:k]: LabelRow(row) for k, row in enumerate(rows)})


def label_logprobs(cache: PrefixCache, prompt: list[int], encoded: dict[str, list[int]]) -> dict[str, float]:
    """log P(label | prompt) for each encoded label; labels sharing leading tokens share their evaluation.
    Leaves the cache holding exactly ``prompt``."""
    rows: dict[tuple[int, ...], LabelRow] = {}
    for path in label_paths(encoded):
        missing = next((k for k in range(len(path) + 1) if path[:k] not in rows), None)
        if missing is None:
            continue
        for k, logits in enumerate(cache.rows(prompt + list(path), len(prompt) - 1 + missing), start=missing):
            rows[path[:k]] = LabelRow(logits)
    cache.finish_at(prompt, rows[()].logits)
    return label_scores(encoded, rows)


def continuation_logprobs(cache: PrefixCache, prompt: list[int], tokens: list[int]) -> list[TokenLogprob]:
    """log P(token_i | prompt, tokens_<i) for each of ``tokens`` (a continuation's, without BOS)."""
    if not tokens:
        return []
    cache.check_fits(len(prompt) + len(tokens))
    if len(prompt) > 1:  # the prompt first, on its own: the continuation is then always one decode of
        cache.rows(prompt[:-1], len(prompt) - 1)  # [last prompt token, continuation] after the same prefix
    rows = cache.rows(prompt + tokens[:-1], len(prompt) - 1)
    cache.share(len(prompt) - 1)  # its family shares the prompt, whose last token is decoded with each continuation
    # The cache keeps the continuation's tokens: a next prompt that continues them (a yes/no question
    # about this output) evaluates only its own tokens; the next output of the same source rewinds.
    pieces = [cache.llm.detokenize([tok]).decode("utf-8", errors="replace") for tok in tokens]
    return [TokenLogprob(token=piece, logprob=float(lp)) for piece, lp in zip(pieces, token_logprobs(rows, tokens))]
