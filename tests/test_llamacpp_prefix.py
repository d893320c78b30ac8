"""Prefix reuse in the in-process llama.cpp provider: the saved-state LRU keeps interleaved sources from
thrashing the single KV cache (counted in tokens, never timed), reuse can be switched off, and the
LRU's bookkeeping (families, bounds) holds on its own."""

from __future__ import annotations

import numpy as np
import pytest

from judgesdk.provider import GenerateRequest, Message
from judgesdk.providers.llamacpp import PrefixStates, SavedState, common_prefix

LABELS = ("1", " 1", "2", " 2", "3", " 3")


def source(topic: str) -> str:
    return " ".join(f"The {topic} report, section {i}, lists {i * 7} items and {i + 3} open questions." for i in range(8))


SOURCES = {"A": source("harbour"), "B": source("railway")}


def request(doc: str, output: str) -> GenerateRequest:
    text = f"Rate the summary.\n\nSource:\n{SOURCES[doc]}\n\nSummary:\n{output}\n\nScore (1-3):"
    return GenerateRequest(messages=(Message(role="user", content=text),), labels=LABELS, max_tokens=0)


INTERLEAVED = [("A", "It lists items."), ("B", "Trains run late."), ("A", "Questions remain open."),
               ("B", "The railway report."), ("A", "Seven items per section."), ("B", "Sections list items.")]  # fmt: skip


def provider(gguf_path, **options):
    from judgesdk.providers.llamacpp import LlamaCppProvider

    return LlamaCppProvider(gguf_path, n_ctx=1024, track_unique_tokens=True, **options)


async def run(p, work):
    responses = [await p.generate(request(doc, out)) for doc, out in work]
    await p.aclose()
    return responses


@pytest.mark.integration
async def test_interleaved_sources_reevaluate_fewer_tokens_with_the_lru(gguf_path):
    with_lru = provider(gguf_path, prefix_states=4)
    without = provider(gguf_path, prefix_states=0)
    lru_responses = await run(with_lru, INTERLEAVED)
    plain_responses = await run(without, INTERLEAVED)
    lru, plain = with_lru.counters, without.counters
    assert lru.unique_tokens == plain.unique_tokens and lru.prompt_tokens == plain.prompt_tokens
    # without the LRU every switch of source re-evaluates the source; with it, only the first of each does
    assert lru.tokens_evaluated < 0.5 * plain.tokens_evaluated
    assert lru.state_restores >= 3 and lru.tokens_restored > 0 and plain.state_restores == 0
    assert lru.tokens_evaluated <= 1.15 * lru.unique_tokens
    # usage says the same per request: the third request (A again) came mostly from a saved state
    third = lru_responses[2].usage
    assert third.cached_input_tokens > 0.7 * third.input_tokens
    assert plain_responses[2].usage.cached_input_tokens < 0.3 * plain_responses[2].usage.input_tokens
    for a, b in zip(lru_responses, plain_responses):
        assert set(a.label_logprobs) == set(b.label_logprobs) == set(LABELS)
        assert all(np.isfinite(v) and v < 0 for v in a.label_logprobs.values())


@pytest.mark.integration
async def test_reuse_off_evaluates_every_prompt_in_full(gguf_path):
    off = provider(gguf_path, prefix_reuse=False)
    responses = await run(off, INTERLEAVED[:3])
    counters = off.counters
    assert counters.tokens_reused == 0 and all(r.usage.cached_input_tokens == 0 for r in responses)
    # every prompt token, plus the shared space token that " 1", " 2", " 3" continue from, once per request
    assert counters.tokens_evaluated == counters.prompt_tokens + len(responses)
    assert counters.decodes == len(responses)  # one decode per request: the label path rides with the prompt


def state(tokens: list[int], size: int = 10) -> SavedState:
    return SavedState(tokens=np.array(tokens, dtype=np.intc), data=None, size=size)


def test_states_of_one_family_replace_each_other():
    states = PrefixStates(max_entries=4, max_bytes=1000)
    doc_a = list(range(100))
    states.put(state(doc_a + [900, 901]))
    states.put(state(doc_a + [902, 903]))  # another output of the same source: replaces the first
    states.put(state(list(range(500, 600))))  # another source: kept beside it
    assert len(states) == 2
    key, shared = states.best(doc_a + [902, 999])
    assert shared == 101 and list(states.pop(key).tokens[-2:]) == [902, 903]


def test_states_are_bounded_by_count_and_bytes():
    states = PrefixStates(max_entries=2, max_bytes=25)
    for base in (0, 1000, 2000):
        states.put(state(list(range(base, base + 50))))
    assert len(states) == 2 and states.best(list(range(50)))[1] == 0  # the oldest went first
    states.put(state(list(range(3000, 3050)), size=20))
    assert len(states) == 1 and states.bytes == 20


def test_common_prefix():
    assert common_prefix([1, 2, 3], [1, 2, 4]) == 2
    assert common_prefix(np.array([1, 2]), [1, 2, 3]) == 2
    assert common_prefix([], [1]) == 0
