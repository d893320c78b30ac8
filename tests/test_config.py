import pytest

from judgesdk.config import JudgeConfig, ProviderConfig, build_adapter, detect_chain, load_config
from judgesdk.errors import ConfigError
from judgesdk.judge import Judge


def test_detected_chain_prefers_hosted_then_local():
    assert [p.kind for p in detect_chain({})] == ["local"]
    assert [p.kind for p in detect_chain({"OPENAI_API_KEY": "k"})] == ["openai", "local"]
    assert [p.kind for p in detect_chain({"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k"})] == ["openai", "anthropic", "local"]
    assert [p.kind for p in detect_chain({"ANTHROPIC_API_KEY": "k"})] == ["anthropic", "local"]


def test_toml_and_yaml_load_the_same_config(tmp_path, monkeypatch):
    monkeypatch.delenv("JUDGESDK_PROVIDER", raising=False)
    toml = tmp_path / "judge.toml"
    toml.write_text('method = "direct"\nconcurrency = 2\n[[providers]]\nkind = "openai"\nmodel = "m"\nbase_url = "http://127.0.0.1:1/v1"\napi = "completions"\n[cache]\nenabled = false\n')
    yaml = tmp_path / "judge.yaml"
    yaml.write_text("method: direct\nconcurrency: 2\nproviders:\n  - kind: openai\n    model: m\n    base_url: http://127.0.0.1:1/v1\n    api: completions\ncache:\n  enabled: false\n")
    assert load_config(toml) == load_config(yaml)
    assert load_config(toml).providers[0].api == "completions"


def test_env_overrides(monkeypatch, tmp_path):
    monkeypatch.setenv("JUDGESDK_PROVIDER", "openai")
    monkeypatch.setenv("JUDGESDK_MODEL", "gemma")
    monkeypatch.setenv("JUDGESDK_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("JUDGESDK_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("JUDGESDK_METHOD", "sampling")
    config = load_config({"providers": [{"kind": "anthropic"}]})
    assert config.providers == [ProviderConfig(kind="openai", model="gemma", base_url="http://127.0.0.1:9/v1")]
    assert config.cache.directory == tmp_path and config.method == "sampling"


@pytest.mark.parametrize(
    "bad",
    [{"providers": [{"kind": "nope"}]}, {"concurrency": 0}, {"unknown_key": 1}, {"providers": [{"kind": "openai", "modle": "x"}]}],
)
def test_invalid_config_is_a_config_error(bad, monkeypatch):
    monkeypatch.delenv("JUDGESDK_PROVIDER", raising=False)
    with pytest.raises(ConfigError):
        load_config(bad)


def test_missing_file_and_wrong_suffix(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "none.toml")
    ini = tmp_path / "judge.ini"
    ini.write_text("x")
    with pytest.raises(ConfigError, match="must be"):
        load_config(ini)


def test_capability_overrides_are_validated():
    adapter = build_adapter(ProviderConfig(kind="openai", model="m", base_url="http://127.0.0.1:1/v1", capabilities={"multiple_samples": False}))
    assert adapter.capabilities.multiple_samples is False and adapter.capabilities.logprobs is True
    with pytest.raises(ConfigError):
        build_adapter(ProviderConfig(kind="openai", model="m", base_url="http://127.0.0.1:1/v1", capabilities={"telepathy": True}))


def test_switching_provider_is_config_only(monkeypatch, tmp_path):
    monkeypatch.delenv("JUDGESDK_PROVIDER", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    judge = Judge.from_config({"providers": [{"kind": "anthropic", "model": "claude"}], "cache": {"directory": str(tmp_path)}})
    result = judge.score("x", source="y")  # no key: the chain has nothing else, so an error result that says why
    judge.close()
    assert result.status == "error" and "ANTHROPIC_API_KEY" in result.error


def test_config_object_round_trip():
    config = JudgeConfig(providers=[ProviderConfig(kind="local")])
    assert load_config(config).providers[0].kind == "local"


def test_method_options_reach_the_scorers(monkeypatch, tmp_path):
    monkeypatch.delenv("JUDGESDK_PROVIDER", raising=False)
    judge = Judge.from_config({"providers": [{"kind": "local"}], "method_options": {"rungs": 3}, "cache": {"directory": str(tmp_path)}})
    assert judge.options.extra == {"rungs": 3}
    judge.close()


def test_cli_options_parse_json_or_text():
    from judgesdk.cli import parse_options
    from judgesdk.errors import InputError

    assert parse_options(["rungs=3", "normalization=ratio", "labels=[\"A\",\"B\"]"]) == {
        "rungs": 3, "normalization": "ratio", "labels": ["A", "B"]
    }
    with pytest.raises(InputError):
        parse_options(["nokey"])
