"""Anthropic prompt caching for prompts that share a leading part, whichever client sends them.

Judging sends the same instructions and source with many outputs. Marking the shared leading part with
``cache_control: {"type": "ephemeral"}`` makes Anthropic bill it at the cache-read rate (0.1×) after the
first write (1.25×). A template renders instructions, source and output into one user message, so the
shared part is found, not declared: it is the longest common prefix with a recent prompt, cut back to the
last line break (so that every output of one source gets the same boundary, whatever its first words),
and only when it is at least ``min_chars`` long (default 4096 characters, about the 1024 tokens below which
Anthropic does not cache). The segment holding the boundary is sent as two text blocks: the shared part,
marked, and the rest, which holds the judged output. The first prompt of a new source finds no partner
and is sent unmarked; the second writes the cache; the rest read it.

Both the Anthropic adapter (Messages API) and the LiteLLM adapter (OpenAI-format messages, which LiteLLM
translates for Anthropic backends) send what :func:`cache_marked` returns.
"""

from __future__ import annotations

import os
from collections import deque
from typing import Any

Content = str | list[dict[str, Any]]

_SAME_ANSWER = (
    "marks a prompt block for Anthropic's prompt cache, which serves the exact same prefix computation; the request's "
    "text, model and sampling are unchanged, and Anthropic documents cached and uncached prompts as answered alike"
)
# the options of an adapter that marks prompts (``prompt_cache``, ``prompt_cache_min_chars``) cannot change an answer:
# each adapter's ProviderSpec.answer_neutral includes these, with the reason
ANSWER_NEUTRAL: dict[str, str] = {
    "prompt_cache": _SAME_ANSWER,
    "prompt_cache_min_chars": _SAME_ANSWER + "; this is the shortest block marked",
}


class PromptCachePlanner:
    """Where the shared leading part of a prompt ends, learned from recent prompts (see the module docstring)."""

    def __init__(self, min_chars: int = 4096, memory: int = 64) -> None:
        self.min_chars = min_chars
        self._recent: deque[str] = deque(maxlen=memory)

    def boundary(self, segments: list[str]) -> tuple[int, int] | None:
        """(segment index, character offset) where the cached prefix ends, or None to mark nothing.

        ``segments`` are the prompt's text blocks in order (system first, when there is one)."""
        flat = "\x00".join(segments)
        shared = max((len(os.path.commonprefix([flat, seen])) for seen in self._recent), default=0)
        self._recent.append(flat)
        cut = flat.rfind("\n", 0, shared) + 1  # after the last complete line both prompts share
        if cut < self.min_chars:
            return None
        start = 0
        for index, segment in enumerate(segments):
            if cut <= start + len(segment) + 1:
                return index, min(cut - start, len(segment))
            start += len(segment) + 1
        return None  # pragma: no cover - cut never passes the end


def cache_marked(segments: list[str], planner: PromptCachePlanner | None) -> list[Content]:
    """Each segment as it is sent: the plain string, except the one holding the cache boundary, which
    becomes text blocks with the shared part marked (everything before a marked block is cached with it)."""
    mark = planner.boundary(segments) if planner is not None else None
    if mark is None:
        return list(segments)
    index, cut = mark
    return [_blocks(text, cut) if i == index else text for i, text in enumerate(segments)]


def _blocks(text: str, cut: int) -> list[dict[str, Any]]:
    """The first ``cut`` characters as a marked block, then the rest (if any)."""
    marked = {"type": "text", "text": text[:cut], "cache_control": {"type": "ephemeral"}}
    return [marked] + ([{"type": "text", "text": text[cut:]}] if text[cut:] else [])
