import pytest

from judgesdk.core.errors import ConfigError
from judgesdk.judging.judge import Judge
from judgesdk.judging.judge_config import JudgeConfig, detect_chain, load_config
from judgesdk.provider.settings import ProviderConfig
from judgesdk.provider.stack import build_adapter


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
    with pytest.raises(ValueError, match="telepathy: unknown capability"):  # refused when the config is read (issue 29 item 15)
        ProviderConfig(kind="openai", model="m", base_url="http://127.0.0.1:1/v1", capabilities={"telepathy": True})


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
    from judgesdk.cli.flags import parse_options
    from judgesdk.core.errors import InputError

    assert parse_options(["rungs=3", "normalization=ratio", "labels=[\"A\",\"B\"]"]) == {
        "rungs": 3, "normalization": "ratio", "labels": ["A", "B"]
    }
    with pytest.raises(InputError):
        parse_options(["nokey"])


def test_rate_limit_in_config_puts_the_adapter_under_a_limiter_and_a_client_pool(monkeypatch, tmp_path):
    from judgesdk.provider.layers.coalesce import CoalescingProvider
    from judgesdk.provider.layers.ratelimit import ProviderPool, RateLimitedProvider
    from judgesdk.provider.layers.retry import RetryingProvider
    from judgesdk.provider.protocol import find_layer

    monkeypatch.delenv("JUDGESDK_PROVIDER", raising=False)
    path = tmp_path / "judge.toml"
    path.write_text(
        '[[providers]]\nkind = "openai"\nmodel = "m"\nbase_url = "http://127.0.0.1:1/v1"\n'
        "[providers.rate_limit]\nmax_concurrency = 48\nrequests_per_minute = 600\ntokens_per_minute = 90000\n"
        "[cache]\nenabled = false\n"
    )
    judge = Judge.from_config(path)
    provider = judge.provider(0)
    assert isinstance(provider, CoalescingProvider) and isinstance(provider.inner, RetryingProvider)
    limiter = find_layer(provider, RateLimitedProvider)
    assert limiter is not None and limiter.config.requests_per_minute == 600 and limiter.concurrency_limit == 48
    pool = limiter.inner
    assert isinstance(pool, ProviderPool) and len(pool.members) == 3  # one SDK client per 16 in flight
    assert find_layer(provider, ProviderPool) is pool
    judge.close()


def test_without_rate_limit_there_is_no_limiter_and_bad_limits_are_config_errors(monkeypatch):
    from judgesdk.provider.layers.ratelimit import RateLimitedProvider
    from judgesdk.provider.protocol import find_layer

    monkeypatch.delenv("JUDGESDK_PROVIDER", raising=False)
    plain = {"providers": [{"kind": "openai", "model": "m", "base_url": "http://127.0.0.1:1/v1"}], "cache": {"enabled": False}}
    judge = Judge.from_config(plain)
    assert find_layer(judge.provider(), RateLimitedProvider) is None
    judge.close()
    with pytest.raises(ConfigError, match="requests_per_minute"):
        load_config({"providers": [{"kind": "openai", "rate_limit": {"requests_per_minute": 0}}]})
    with pytest.raises(ConfigError, match="rate_limit"):
        load_config({"providers": [{"kind": "openai", "rate_limit": {"rpm": 60}}]})


def test_the_local_model_is_limited_but_never_pooled(monkeypatch):
    from judgesdk.provider.layers.ratelimit import RateLimitedProvider
    from judgesdk.provider.stack import bottom

    captured = []
    monkeypatch.setattr("judgesdk.provider.stack.build_adapter", lambda pc: captured.append(pc) or ScriptedLocal())
    provider = bottom(ProviderConfig(kind="local", rate_limit={"max_concurrency": 64, "clients": 4}))
    assert isinstance(provider, RateLimitedProvider) and isinstance(provider.inner, ScriptedLocal) and len(captured) == 1


def test_judge_provider_index_is_checked():
    from judgesdk.core.errors import InputError
    from judgesdk.providers.scripted import ScriptedProvider

    fallback_built = []
    judge = Judge([ScriptedProvider(lambda r: "3"), lambda: fallback_built.append(1) or ScriptedProvider(lambda r: "4")])
    assert judge.providers_in_use == []
    judge.score("x", criterion="quality")
    assert len(judge.providers_in_use) == 1 and not fallback_built  # the unused fallback was never built
    with pytest.raises(InputError, match="outside the chain"):
        judge.provider(2)
    judge.close()


class ScriptedLocal:
    kind, model, endpoint = "local", "gemma", "in-process"


@pytest.mark.parametrize("name", ["local", "openai", "anthropic", "litellm", "llama-server"])
def test_every_example_config_loads(name, monkeypatch):
    from pathlib import Path

    monkeypatch.delenv("JUDGESDK_PROVIDER", raising=False)
    config = load_config(Path(__file__).resolve().parents[2] / "examples" / f"{name}.toml")
    assert config.providers
