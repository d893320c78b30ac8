"""Counting a prompt's tokens for the estimate, with the provider's own tokenizer where one is local.

The llama.cpp model's vocabulary is loaded alone (``vocab_only``: no weights, under a second) and tokenizes
as the local provider does, so its counts, and the token ids the KV-cache replay
(:mod:`judgesdk.forecast.kv_replay`) works on, are exact; the scripted test provider counts words. Hosted APIs
get a documented approximation, :data:`CHARS_PER_TOKEN` characters per token, which the estimate says in
its notes. Each tokenizer says how it counts (``how``) and whether that is exact (``exact``); ``ids`` is
None where there are no real token ids.
"""

from __future__ import annotations

import math
from pathlib import Path

from judgesdk.provider import Provider, unwrap
from judgesdk.providers import ScriptedProvider

__all__ = ["CHARS_PER_TOKEN", "Chars", "Vocab", "Words", "tokenizer_for"]

CHARS_PER_TOKEN = 4  # hosted APIs: about 4 characters of English per token (OpenAI's and Anthropic's rule of thumb)


def tokenizer_for(adapter: Provider) -> Words | Chars | Vocab:
    """The tokenizer that counts like ``adapter``: the vocabulary of the model file it runs (an adapter whose endpoint
    is a file on this machine: the local model), the scripted provider's words, else the approximation."""
    bare = unwrap(adapter)
    if Path(str(bare.endpoint)).is_file():
        try:
            return Vocab(str(bare.endpoint))
        except (ImportError, ValueError, OSError, RuntimeError):  # no llama_cpp, or a vocabulary it cannot read
            return Chars()
    if isinstance(bare, ScriptedProvider):
        return Words()
    return Chars()


class Words:
    """The scripted test provider's tokens: its words."""

    exact = True
    how = "whitespace-separated words (what the scripted provider counts as tokens)"

    def count(self, text: str, *, bos: bool) -> int:
        return len(text.split())

    def ids(self, text: str, *, bos: bool) -> list[int] | None:
        return None

    def pieces(self, text: str) -> list[str]:
        return text.split()


class Chars:
    """A hosted API's tokens, approximated from the characters (its tokenizer is not local)."""

    exact = False
    how = f"approximation: 1 token per {CHARS_PER_TOKEN} characters of prompt text, rounded up (no local tokenizer for this provider)"

    def count(self, text: str, *, bos: bool) -> int:
        return math.ceil(len(text) / CHARS_PER_TOKEN)

    def ids(self, text: str, *, bos: bool) -> list[int] | None:
        return None

    def pieces(self, text: str) -> list[str]:
        return text.split() or [text]


class Vocab:
    """A GGUF model's tokenizer, loaded without its weights; tokenizes as the local provider does. ``n_swa``:
    the model's sliding attention window (0: none), which the KV-cache replay needs."""

    exact = True

    def __init__(self, path: str) -> None:
        import llama_cpp  # the 'local' extra; the provider that needs it was just built

        self._llm = llama_cpp.Llama(model_path=path, vocab_only=True, n_ctx=8, verbose=False)
        self.how = f"the model's own tokenizer (the vocabulary of {Path(path).name}, loaded without weights)"
        meta = self._llm.metadata or {}
        self.n_swa = int(meta.get(f"{meta.get('general.architecture', '')}.attention.sliding_window", 0) or 0)

    def ids(self, text: str, *, bos: bool) -> list[int]:
        return list(self._llm.tokenize(text.encode("utf-8"), add_bos=bos, special=False))

    def count(self, text: str, *, bos: bool) -> int:
        return len(self.ids(text, bos=bos))

    def pieces_of(self, ids: list[int]) -> list[str]:
        return [self._llm.detokenize([t]).decode("utf-8", errors="replace") for t in ids]

    def pieces(self, text: str) -> list[str]:
        return self.pieces_of(self.ids(text, bos=False))

    def close(self) -> None:
        self._llm.close()

