"""Prefix reuse in the in-process llama.cpp provider: the saved-state LRU keeps interleaved sources from
thrashing the single KV cache (counted in tokens, never timed), reuse can be switched off, and the
LRU's bookkeeping (families, bounds) holds on its own."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from judgesdk.provider.protocol import GenerateRequest, Message
from judgesdk.providers.llamacpp import PrefixStates, SavedState, common_prefix, shared_prefix

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

    return LlamaCppProvider(gguf_path, **{"n_ctx": 1024, "track_unique_tokens": True, **options})


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


# -- parallel suffixes: label requests that differ only in a short tail share one decode --------------

DIGITS = tuple(f" {i}" for i in range(1, 6))
COUNTING = {"Counting up: 1 2 3 4": " 5", "Counting down: 5 4 3 2": " 1", "Counting up: 1 2": " 3"}


def counting(tail: str) -> GenerateRequest:
    text = "Numbers in order. " * 20 + tail
    return GenerateRequest(messages=(Message(role="user", content=text),), labels=DIGITS, max_tokens=0)


async def queued_together(p, requests: list[GenerateRequest]):
    """Send ``requests`` while the worker is held, so they are queued together (deterministic grouping)."""
    import asyncio
    import threading

    held = threading.Event()
    blocker = p._worker.submit(held.wait)
    tasks = [asyncio.ensure_future(p.generate(r)) for r in requests]
    await asyncio.sleep(0.05)  # every task has queued its request
    held.set()
    blocker.result(timeout=10)
    return await asyncio.gather(*tasks)


@pytest.mark.integration
async def test_parallel_suffixes_share_one_decode_and_keep_each_answer(gguf_path):
    batched, single = provider(gguf_path, parallel_suffixes=4), provider(gguf_path, parallel_suffixes=1)
    warm_up = GenerateRequest(messages=(Message(role="user", content="Hello"),), labels=DIGITS, max_tokens=0)
    await batched.generate(warm_up)  # loads the model (so the held worker is the only wait); shares only BOS
    await single.generate(warm_up)
    batched.reset_counters()
    single.reset_counters()
    together = await queued_together(batched, [counting(t) for t in COUNTING])
    apart = await queued_together(single, [counting(t) for t in COUNTING])
    for response, expected in zip(together, COUNTING.values()):  # each sequence got its own rows
        assert max(response.label_logprobs, key=response.label_logprobs.get) == expected
    for a, b in zip(together, apart):  # the same probabilities up to the cells' SIMD lanes (why grouping is opt-in)
        # (a tail decoded beside others sits in other KV cells; log-probabilities near -10 move by ~0.5 nats)
        assert max(abs(np.exp(a.label_logprobs[d]) - np.exp(b.label_logprobs[d])) for d in DIGITS) < 0.01
        assert a.usage == b.usage
    counted, alone = batched.counters, single.counters
    assert counted.batched_requests == 3 and alone.batched_requests == 0
    # the whole shared part (tagged with every sequence) and all three tails in one decode; one at a
    # time, three decodes
    assert counted.decodes == 1 and alone.decodes == 3
    assert counted.tokens_evaluated == alone.tokens_evaluated and counted.unique_tokens == alone.unique_tokens
    # sequence 0 holds exactly the part the three share (what the second and third reused): a later
    # request that shares no more than that reuses all of it
    later = await batched.generate(counting("Counting sideways"))
    assert later.usage.cached_input_tokens == together[1].usage.cached_input_tokens > together[0].usage.cached_input_tokens
    await batched.aclose()
    await single.aclose()


@pytest.mark.integration
async def test_queued_requests_hear_a_model_that_fails_to_load(gguf_path, tmp_path):
    import asyncio

    from judgesdk.core.errors import UnavailableError
    from judgesdk.providers.llamacpp import LlamaCppProvider

    broken = tmp_path / "broken.gguf"
    broken.write_bytes(Path(gguf_path).read_bytes()[:1_000_000])  # a GGUF header, then too little (checked at load)
    p = LlamaCppProvider(broken)
    results = await asyncio.wait_for(asyncio.gather(*(p.generate(counting(t)) for t in COUNTING), return_exceptions=True), 60)
    assert all(isinstance(r, UnavailableError) for r in results), results
    await p.aclose()


def test_a_file_that_is_not_gguf_is_refused_when_the_provider_is_built(tmp_path):
    from judgesdk.core.errors import PermanentError
    from judgesdk.providers.llamacpp import LlamaCppProvider

    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"not a gguf file" * 100)
    with pytest.raises(PermanentError, match="is not a GGUF model file"):
        LlamaCppProvider(broken)


def continuation(prefix: str, output: str) -> GenerateRequest:
    return GenerateRequest(messages=(Message(role="user", content=prefix),), continuation=" " + output, max_tokens=0)


@pytest.mark.integration
@pytest.mark.parametrize("order", [1, -1])
async def test_sources_longer_than_the_sliding_window_reuse_without_changing_log_probabilities(gguf_path, order):
    """Gemma 3 keeps only the last 512 positions of its sliding-window layers in a saved state: restoring a
    longer state and going back before its end once moved token log-probabilities by up to 14 nats (and
    broke every later prompt). Outputs of two long sources, each scored with and without its source (the
    fused judge's pattern), must give what a fresh evaluation gives, in either order, with reuse kept."""
    long = {doc: " ".join([SOURCES[doc]] * 4) for doc in SOURCES}
    work = []
    for doc, out in INTERLEAVED[::order]:
        work += [continuation(f"Rate the summary.\n\nSource:\n{long[doc]}\n\nSummary:", out), continuation("Summary:", out)]
    fresh, reused = provider(gguf_path, n_ctx=2048, prefix_reuse=False), provider(gguf_path, n_ctx=2048)
    for r in work:
        want = np.array([t.logprob for t in (await fresh.generate(r)).continuation_tokens])
        got = np.array([t.logprob for t in (await reused.generate(r)).continuation_tokens])
        # the holes moved them by 3-14 nats; batch-split numerics by up to ~0.07 until every decode was
        # padded and long states were cut at a multiple of 64 positions: now nothing moves
        assert np.array_equal(want, got), (want - got)
    assert len(reused._tokenize(long["A"], bos=True)) > 600  # longer than the window: the case in question
    assert reused.counters.state_restores >= 2 and reused.counters.tokens_evaluated < fresh.counters.tokens_evaluated / 2
    await fresh.aclose()
    await reused.aclose()


def geval_like(doc: str, output: str) -> GenerateRequest:
    text = f"Rate the summary.\n\nSource:\n{' '.join([SOURCES[doc]] * 4)}\n\nSummary:\n{output}\n\nScore (1-3):"
    return GenerateRequest(messages=(Message(role="user", content=text),), labels=LABELS, max_tokens=0)


@pytest.mark.integration
async def test_label_probabilities_do_not_depend_on_what_ran_before(gguf_path):
    """The same label request after different histories (fresh, after other outputs of its source, after the
    other source, in parallel with others) gives the same label log-probabilities, bit for bit. Before every
    decode was padded to whole row groups, llama.cpp's CPU kernels took a batch's last rows one at a time
    and the rest four at a time, so a prompt's numbers depended on where the cache's earlier decode ended:
    a G-Eval 1-5 expectation moved by up to 0.06 between runs of the same file (benchmarks/README.md)."""
    work = [geval_like(doc, out) for doc, out in INTERLEAVED] + [geval_like("A", "It lists items and questions.")]
    fresh = provider(gguf_path, n_ctx=2048, prefix_reuse=False)
    want = {i: (await fresh.generate(r)).label_logprobs for i, r in enumerate(work)}
    for order in (1, -1):
        reused = provider(gguf_path, n_ctx=2048)
        for i in list(range(len(work)))[::order]:
            assert (await reused.generate(work[i])).label_logprobs == want[i], (order, i)
        assert reused.counters.tokens_reused > 0
        await reused.aclose()
    together = provider(gguf_path, n_ctx=2048)  # queued together, decoded one per decode (the default)
    got = await queued_together(together, work)
    assert [r.label_logprobs for r in got] == [want[i] for i in range(len(work))]
    await together.aclose()
    await fresh.aclose()


def test_parallel_suffixes_must_be_positive(gguf_path):
    from judgesdk.core.errors import ConfigError

    with pytest.raises(ConfigError, match="parallel_suffixes"):
        provider(gguf_path, parallel_suffixes=0)


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
    assert shared_prefix([[1, 2, 3, 4], [1, 2, 3], [1, 2, 5]]) == 2 and shared_prefix([[1, 2]]) == 0


def test_a_batch_too_small_for_the_padding_is_refused(gguf_path):
    """Every decode is padded by up to 6 tokens into llama-cpp-python's batch of n_batch slots: a smaller
    n_batch would write past it."""
    from judgesdk.core.errors import ConfigError
    from judgesdk.judging.judge_config import load_config

    with pytest.raises(ConfigError, match="n_batch must be >= 16"):
        provider(gguf_path, n_batch=8)
    with pytest.raises(ConfigError, match="n_batch"):
        load_config({"providers": [{"kind": "local", "options": {"n_batch": 8}}]})
