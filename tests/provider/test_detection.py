"""Vendor facts declared by the adapters (issue 39 item 2): how a kind is detected from the environment, read without
importing the adapter, and which ``api`` values each adapter takes, refused at load otherwise."""

from __future__ import annotations

import pytest

from judgesdk.core.errors import ConfigError
from judgesdk.judging.judge_config import detect_chain, load_config
from judgesdk.provider.detection import declared_detection, detected_kinds
from judgesdk.provider.registry import BUILT_IN, ProviderSpec, provider_spec, register, unregister
from judgesdk.providers.scripted import ScriptedProvider


@pytest.mark.parametrize("kind", sorted(BUILT_IN))
def test_what_detection_reads_from_the_source_is_what_the_spec_says(kind):
    spec = provider_spec(kind)
    assert declared_detection(BUILT_IN[kind]) == (spec.detect_env, spec.detect_order)


def test_the_detected_chain_is_openai_then_anthropic_then_local():
    assert detected_kinds({}) == ["local"]
    assert detected_kinds({"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k"}) == ["openai", "anthropic", "local"]
    assert detected_kinds({"OPENAI_API_KEY": "", "ANTHROPIC_API_KEY": "k"}) == ["anthropic", "local"]  # empty: not set


def test_a_registered_kind_declares_its_own_detection():
    spec = ProviderSpec(kind="mine", build=lambda settings, options: ScriptedProvider(lambda r: "x"), detect_env="MINE_KEY", detect_order=15)
    register("mine", spec)
    try:
        assert [p.kind for p in detect_chain({"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k", "MINE_KEY": "k"})] == [
            "openai", "mine", "anthropic", "local",
        ]  # fmt: skip
        assert [p.kind for p in detect_chain({"OPENAI_API_KEY": "k"})] == ["openai", "local"]
    finally:
        unregister("mine")


def test_detection_written_as_an_expression_is_refused_with_what_to_write(tmp_path, monkeypatch):
    package = tmp_path / "detect_probe"
    package.mkdir()
    (package / "__init__.py").write_text("from .adapter import PROVIDER\n")
    (package / "adapter.py").write_text('import os\nPROVIDER = ProviderSpec(kind="p", detect_env=os.environ["X"], detect_order=1)\n')
    (package / "fine.py").write_text('PROVIDER = ProviderSpec(kind="p", detect_env="P_KEY", detect_order=5)\n')
    monkeypatch.syspath_prepend(str(tmp_path))
    assert declared_detection("detect_probe.fine:PROVIDER") == ("P_KEY", 5)
    with pytest.raises(ConfigError, match="write detect_env as a literal"):
        declared_detection("detect_probe:PROVIDER")  # followed from the package to .adapter
    with pytest.raises(ConfigError, match="declares no OTHER"):
        declared_detection("detect_probe.fine:OTHER")


@pytest.mark.parametrize(
    ("provider", "takes"),
    [
        ({"kind": "anthropic", "api": "decisions"}, "'chat', not 'decisions'"),
        ({"kind": "openai", "api": "systemone"}, "'chat' or 'completions' or 'decisions', not 'systemone'"),
        ({"kind": "litellm", "api": "completions"}, "'chat' or 'decisions' or 'systemone', not 'completions'"),
        ({"kind": "local", "api": "sk-Abc123/=="}, "'chat', not this value"),  # what may be a secret is never echoed
    ],
)
def test_an_api_the_adapter_does_not_take_is_refused_at_load_naming_the_ones_it_takes(provider, takes):
    with pytest.raises(ConfigError, match=f"provider {provider['kind']} takes api {takes}"):
        load_config({"providers": [provider]})


@pytest.mark.parametrize(("kind", "api"), [("openai", "completions"), ("openai", "decisions"), ("litellm", "systemone"), ("anthropic", "chat")])
def test_an_api_the_adapter_takes_loads(kind, api):
    assert load_config({"providers": [{"kind": kind, "api": api}]}).providers[0].api == api


def test_building_checks_the_api_too():
    """A settings object made in code, not loaded, is checked when the adapter is built."""
    from judgesdk.provider.registry import ProviderSettings

    spec = provider_spec("anthropic")
    with pytest.raises(ConfigError, match="takes api 'chat'"):
        spec.create(ProviderSettings(kind="anthropic", model="c", api="decisions"), spec.parse_options({}))
