"""The provider registry (issue 13, item 1): kinds, typed options, laziness, third-party entry points.

Every unknown kind or option is a :class:`ConfigError` naming the valid ones, from a mapping, a TOML file,
``JUDGESDK_PROVIDER`` and the command line (exit 3, one line, no traceback); ``import judgesdk`` imports no
SDK; an installed package adds a kind through the ``judgesdk.providers`` entry point group.
"""

from __future__ import annotations

import inspect
import json
import re
import subprocess
import sys
import textwrap
from importlib.metadata import EntryPoint
from pathlib import Path

import pytest
from conftest import need

from judgesdk.cli.app import main
from judgesdk.core.errors import ConfigError
from judgesdk.judging.judge_config import load_config
from judgesdk.provider import registry
from judgesdk.provider.prices import price_for
from judgesdk.provider.protocol import Capabilities
from judgesdk.provider.registry import Pricing, ProviderOptions, ProviderSpec
from judgesdk.provider.settings import ProviderConfig, model_name
from judgesdk.provider.stack import bottom, build_adapter

from support.hostile import SECRET, assert_one_line_error, run

REPO = Path(__file__).resolve().parents[2]
BUILT_IN = ["anthropic", "litellm", "local", "openai", "scripted"]
VALID_KINDS = "valid: " + ", ".join(BUILT_IN)


@pytest.fixture(autouse=True)
def clean(monkeypatch, tmp_path):
    for name in ("JUDGESDK_PROVIDER", "JUDGESDK_MODEL", "JUDGESDK_BASE_URL", "JUDGESDK_METHOD", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("JUDGESDK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(registry, "_entry_points", lambda: [])  # the installed packages' kinds are not this test's
    registry.refresh()
    yield
    registry.refresh()


# -- unknown kinds and options: config, TOML, environment, CLI ----------------------------------------


def test_an_unknown_kind_names_the_valid_ones(tmp_path):
    with pytest.raises(ConfigError, match=f"providers.0.kind: unknown provider kind 'opneai' \\(did you mean 'openai'\\?\\); {VALID_KINDS}"):
        load_config({"providers": [{"kind": "opneai"}]})
    path = tmp_path / "judge.toml"
    path.write_text('[[providers]]\nkind = "nope"\n')
    with pytest.raises(ConfigError, match=f"unknown provider kind 'nope'; {VALID_KINDS}"):
        load_config(path)


def test_an_unknown_kind_from_the_environment_is_a_config_error(monkeypatch):
    monkeypatch.setenv("JUDGESDK_PROVIDER", "gemini")
    with pytest.raises(ConfigError, match=VALID_KINDS):
        load_config({})


def test_a_kind_that_could_be_a_secret_is_not_echoed():
    with pytest.raises(ConfigError) as raised:
        load_config({"providers": [{"kind": SECRET + "/" + SECRET}]})
    assert SECRET not in str(raised.value) and VALID_KINDS in str(raised.value)


def test_an_unknown_option_names_the_valid_ones(tmp_path):
    path = tmp_path / "judge.toml"
    path.write_text('[[providers]]\nkind = "local"\n[providers.options]\nn_gpu_layer = 0\n')
    with pytest.raises(ConfigError) as raised:
        load_config(path)
    message = str(raised.value)
    assert "providers.0.options: unknown option n_gpu_layer for provider local (did you mean n_gpu_layers?); valid: " in message
    assert "n_gpu_layers, n_threads" in message and "model_path" in message and "prefix_reuse" in message
    with pytest.raises(ConfigError, match="unknown option foo for provider openai; valid: model_sha256"):
        load_config({"providers": [{"kind": "openai", "options": {"foo": 1}}]})
    with pytest.raises(ConfigError, match="unknown options bogus, promt_cache for provider anthropic \\(did you mean prompt_cache for promt_cache\\?\\); valid: prompt_cache, prompt_cache_min_chars"):
        load_config({"providers": [{"kind": "anthropic", "options": {"promt_cache": False, "bogus": 1}}]})


def test_an_ill_typed_option_is_named_without_its_value():
    with pytest.raises(ConfigError, match="option n_ctx of provider local: Input should be a valid integer") as raised:
        load_config({"providers": [{"kind": "local", "options": {"n_ctx": SECRET}}]})
    assert SECRET not in str(raised.value)
    with pytest.raises(ConfigError, match="option parallel_suffixes of provider local: Input should be greater than or equal to 1"):
        load_config({"providers": [{"kind": "local", "options": {"parallel_suffixes": 0}}]})


def test_the_cli_exits_3_on_an_unknown_kind_or_option(tmp_path, items, capsys):
    code, _, err = run(["score", items, "--provider", "nope", "--quiet"], capsys)
    assert_one_line_error(code, err, "unknown provider kind 'nope'", VALID_KINDS)
    config = tmp_path / "kind.toml"
    config.write_text('[[providers]]\nkind = "llama"\n')
    code, _, err = run(["score", items, "--config", config, "--quiet"], capsys)
    assert_one_line_error(code, err, "providers.0.kind", "unknown provider kind 'llama'", VALID_KINDS)
    config = tmp_path / "option.toml"
    config.write_text('[[providers]]\nkind = "local"\n[providers.options]\nn_gpu_layer = 0\n')
    code, _, err = run(["score", items, "--config", config, "--quiet"], capsys)
    assert_one_line_error(code, err, "unknown option n_gpu_layer for provider local", "did you mean n_gpu_layers?", "valid: identity, model_path")


def test_the_cli_names_the_registered_kinds_in_its_help(capsys):
    with pytest.raises(SystemExit):
        main(["score", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "--provider KIND" in help_text and ", ".join(BUILT_IN) in help_text


def test_the_scripted_kind_is_known_but_built_in_code():
    config = load_config({"providers": [{"kind": "scripted"}]})
    with pytest.raises(ConfigError, match=re.escape("built in code: ScriptedProvider(script)")):
        build_adapter(config.providers[0])


# -- aliases, defaults, capabilities ---------------------------------------------------------------------


def test_llamacpp_is_an_alias_of_local():
    provider = load_config({"providers": [{"kind": "llamacpp", "options": {"n_gpu_layers": 0}}]}).providers[0]
    assert provider.kind == "local" and provider.options == {"n_gpu_layers": 0}
    assert registry.provider_spec("llamacpp") is registry.provider_spec("local")


def test_default_models_come_from_the_adapters():
    assert [model_name(ProviderConfig(kind=k)) for k in ("openai", "anthropic", "local", "litellm")] == [
        "gpt-4o-mini", "claude-3-5-haiku-latest", "gemma3-270m-q4_k_m", "",
    ]  # fmt: skip
    assert model_name(ProviderConfig(kind="openai", model="m")) == "m"


def test_a_capability_override_keeps_the_adapters_other_capabilities():
    need("anthropic")
    adapter = build_adapter(ProviderConfig(kind="anthropic", model="c", base_url="http://127.0.0.1:9", capabilities={"multiple_samples": True}))
    assert adapter.capabilities.multiple_samples and adapter.capabilities.prefill  # prefill: the adapter's own


@pytest.mark.parametrize("kind", BUILT_IN)
def test_each_built_in_spec_matches_its_adapter(kind):
    spec = registry.provider_spec(kind)
    adapter_class = {
        "openai": "OpenAIProvider", "anthropic": "AnthropicProvider", "litellm": "LiteLLMProvider",
        "local": "LlamaCppProvider", "scripted": "ScriptedProvider",
    }[kind]  # fmt: skip
    module = sys.modules[registry.BUILT_IN[kind].split(":")[0]]
    cls = getattr(module, adapter_class)
    assert spec.kind == cls.kind == kind
    assert spec.options.model_config.get("extra") == "forbid"
    assert (spec.build is None) == (kind == "scripted")
    assert spec.pricing.local == (kind in ("local", "scripted")) and spec.pooled == (kind != "local")
    # the options model's defaults are the adapter's (unset options are left to the adapter)
    parameters = inspect.signature(cls.__init__).parameters
    for name, field in spec.options.model_fields.items():
        assert name in parameters, (kind, name)
        if not (kind == "local" and name == "model_path"):  # positional in the adapter; None: the embedded model
            assert field.default == parameters[name].default, (kind, name)


def test_each_options_model_accepts_what_the_readme_documents(tmp_path):
    readme = (REPO / "docs" / "providers.md").read_text()  # the README's Providers section, moved to the docs site
    local = readme[readme.index("**The local model**") : readme.index("The provider's `counters`")]
    documented = set(re.findall(r"`(\w+)`", local)) - {"local", "true", "false", "direct"}
    documented |= {"model_path", "n_gpu_layers"}  # "examples/local.toml: the embedded model, or `model_path`..."
    local_options = registry.provider_spec("local").options
    assert documented <= set(local_options.model_fields), sorted(documented - set(local_options.model_fields))
    assert {"prefix_reuse", "prefix_states", "prefix_state_mb", "parallel_suffixes", "track_unique_tokens", "n_ctx"} <= documented
    for kind in ("litellm", "anthropic"):  # `options = { prompt_cache = false }` (docs/providers.md)
        assert "options = { prompt_cache = false }" in readme
        load_config({"providers": [{"kind": kind, "options": {"prompt_cache": False}}]})
    shipped = REPO / "examples" / "local.toml"
    assert load_config(shipped).providers[0].options  # as shipped
    uncommented = tmp_path / "local.toml"  # and with every documented line uncommented
    uncommented.write_text(re.sub(r"(?m)^# ?(\w+ = )", r"\1", shipped.read_text()))
    assert set(load_config(uncommented).providers[0].options) >= {"model_path", "n_gpu_layers", "track_unique_tokens"}


def test_options_are_kept_as_given_and_rechecked_when_built(monkeypatch):
    provider = load_config({"providers": [{"kind": "local", "options": {"n_ctx": 512, "prefix_reuse": False}}]}).providers[0]
    assert provider.options == {"n_ctx": 512, "prefix_reuse": False}
    built = {}
    monkeypatch.setattr(
        "judgesdk.providers.llamacpp.LlamaCppProvider.from_options", classmethod(lambda cls, **kw: built.update(kw) or "adapter")
    )
    assert build_adapter(provider) == "adapter"
    assert built == {"model_name": "gemma3-270m-q4_k_m", "capabilities": None, "n_ctx": 512, "prefix_reuse": False}
    unchecked = ProviderConfig.model_construct(kind="local", options={"n_ctx_": 1}, capabilities={}, model=None)
    with pytest.raises(ConfigError, match="unknown option n_ctx_"):
        build_adapter(unchecked)


# -- laziness --------------------------------------------------------------------------------------------

SDKS = ["openai", "anthropic", "litellm", "llama_cpp"]
ADAPTERS = [f"judgesdk.providers.{name}" for name in ("openai", "anthropic", "litellm", "llamacpp.adapter", "scripted")]  # llamacpp: its lazy face loads on `import judgesdk` (load_order)


def _imported_after(code: str) -> list[str]:
    probe = textwrap.dedent(code) + f"\nimport json, sys\nprint(json.dumps(sorted(m for m in {SDKS + ADAPTERS!r} if m in sys.modules)))\n"
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300, cwd=REPO)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_importing_judgesdk_and_reading_kinds_imports_no_adapter_or_sdk():
    imported = _imported_after(
        """
        import os
        os.environ.pop("JUDGESDK_PROVIDER", None)
        import judgesdk, judgesdk.provider.registry, judgesdk.judging.judge_config, judgesdk.provider.prices, judgesdk.cli.app
        judgesdk.cli.app.build_parser()                                   # --provider's help lists the kinds
        judgesdk.provider.registry.provider_kinds()
        judgesdk.judging.judge_config.load_config({"providers": [{"kind": "openai"}, {"kind": "anthropic"}, {"kind": "litellm"}, {"kind": "local"}]})
        judgesdk.judging.judge_config.detect_chain({"OPENAI_API_KEY": "k", "ANTHROPIC_API_KEY": "k"})
        """
    )
    assert imported == []


def test_a_kind_in_use_imports_its_adapter_only():
    imported = _imported_after(
        """
        from judgesdk.judging.judge_config import load_config
        from judgesdk.provider.prices import price_for
        load_config({"providers": [{"kind": "anthropic", "options": {"prompt_cache": False}}]})
        price_for("scripted", "m")
        """
    )
    assert imported == ["anthropic", "judgesdk.providers.anthropic", "judgesdk.providers.scripted"]


# -- third-party adapters: register() and entry points ----------------------------------------------------

PLUGIN = '''
from judgesdk.provider.protocol import Capabilities
from judgesdk.providers.scripted import ScriptedProvider
from judgesdk.provider.registry import Pricing, ProviderOptions, ProviderSpec


class EchoOptions(ProviderOptions):
    answer: str = "4"
    loud: bool = False


class EchoProvider(ScriptedProvider):
    kind = "echo"


def build(settings, options):
    provider = EchoProvider(lambda request: options.answer, model=settings.model, capabilities=settings.capabilities or Capabilities())
    provider.options = options
    return provider


PROVIDER = ProviderSpec(kind="echo", options=EchoOptions, build=build, pricing=Pricing(local=True), default_model="echo-1")


def lazy():
    return PROVIDER


WRONG = ProviderSpec(kind="not-echo")
'''


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    """A fake installed distribution: a module on sys.path and the entry points it would declare."""
    (tmp_path / "judgesdk_echo_plugin.py").write_text(PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "judgesdk_echo_plugin", raising=False)
    points: list[EntryPoint] = []

    def declare(*pairs: tuple[str, str]) -> None:
        points.extend(EntryPoint(name=name, value=value, group=registry.ENTRY_POINT_GROUP) for name, value in pairs)
        registry.refresh()

    monkeypatch.setattr(registry, "_entry_points", lambda: list(points))
    yield declare
    sys.modules.pop("judgesdk_echo_plugin", None)


def test_an_entry_point_adds_a_kind_loaded_only_when_used(plugin, tmp_path, capsys):
    plugin(("echo", "judgesdk_echo_plugin:PROVIDER"))
    assert "echo" in registry.provider_kinds() and "judgesdk_echo_plugin" not in sys.modules
    with pytest.raises(SystemExit):
        main(["score", "--help"])
    assert "echo" in capsys.readouterr().out and "judgesdk_echo_plugin" not in sys.modules

    config = load_config({"providers": [{"kind": "echo", "options": {"answer": "5"}}], "method": "direct", "cache": {"enabled": False}})
    assert "judgesdk_echo_plugin" in sys.modules
    adapter = build_adapter(config.providers[0])
    assert adapter.kind == "echo" and adapter.model == "echo-1" and adapter.options.answer == "5"
    with pytest.raises(ConfigError, match="unknown option anwser for provider echo \\(did you mean answer\\?\\); valid: answer, loud"):
        load_config({"providers": [{"kind": "echo", "options": {"anwser": "5"}}]})
    assert price_for("echo", "echo-1") == (None, "echo/echo-1: runs locally, so there is no per-token price")

    from judgesdk.judging.judge import Judge

    with Judge.from_config(config) as judge:
        result = judge.score("The council approved a park.", source="The council approved a park.", criterion="coherence")
    assert result.status == "ok" and result.score == 5.0 and result.provider == "echo" and result.model == "echo-1"

    items = tmp_path / "items.jsonl"
    items.write_text('{"id": "1", "output": "x", "source": "y"}\n')
    code, out, err = run(["score", items, "--provider", "echo", "--method", "direct", "--no-cache", "--quiet"], capsys)
    assert code == 0 and json.loads(out.splitlines()[0])["score"] == 4.0, err


def test_an_entry_point_may_name_a_function_returning_the_spec(plugin):
    plugin(("echo", "judgesdk_echo_plugin:lazy"))
    assert registry.provider_spec("echo").default_model == "echo-1"


@pytest.mark.parametrize(
    "pairs,message",
    [
        ([("echo", "judgesdk_echo_plugin:MISSING")], "provider kind 'echo' \\(entry point judgesdk_echo_plugin:MISSING\\) could not be loaded: AttributeError"),
        ([("echo", "no_such_module_here:PROVIDER")], "could not be loaded: ModuleNotFoundError"),
        ([("echo", "judgesdk_echo_plugin:EchoOptions")], "gives EchoOptions, not a judgesdk.provider.registry.ProviderSpec"),
        ([("echo", "judgesdk_echo_plugin:WRONG")], "declares kind 'not-echo'"),
        ([("echo", "judgesdk_echo_plugin:PROVIDER"), ("echo", "judgesdk_echo_plugin:lazy")], "declared by several installed packages"),
    ],
)
def test_a_broken_entry_point_is_a_config_error_when_its_kind_is_used(plugin, pairs, message, tmp_path, capsys):
    plugin(*pairs)
    load_config({"providers": [{"kind": "echo"}]})  # known by name: nothing loaded yet
    with pytest.raises(ConfigError, match=message):
        load_config({"providers": [{"kind": "echo", "options": {"answer": "1"}}]})
    items = tmp_path / "items.jsonl"
    items.write_text('{"id": "1", "output": "x"}\n')
    code, _, err = run(["score", items, "--provider", "echo", "--no-cache", "--quiet"], capsys)
    assert_one_line_error(code, err, "provider kind 'echo'")  # found when the judge's providers are checked


def test_an_entry_point_cannot_replace_a_built_in_kind(plugin):
    plugin(("openai", "judgesdk_echo_plugin:PROVIDER"), ("llamacpp", "judgesdk_echo_plugin:PROVIDER"))
    assert registry.provider_spec("openai").kind == "openai" and registry.canonical_kind("llamacpp") == "local"
    assert "judgesdk_echo_plugin" not in sys.modules


def test_register_in_process_and_unregister():
    spec = ProviderSpec(kind="mine", options=ProviderOptions, capabilities=Capabilities(logprobs=True), pricing=Pricing(map_prefix="openai"))
    registry.register("mine", spec, aliases=["my"])
    try:
        assert "mine" in registry.provider_kinds()
        assert load_config({"providers": [{"kind": "my"}]}).providers[0].kind == "mine"
        assert registry.pricing("mine").map_prefix == "openai"
        with pytest.raises(ConfigError, match="already registered"):
            registry.register("mine", spec)
        with pytest.raises(ConfigError, match="already registered"):
            registry.register("local", spec)
        with pytest.raises(ConfigError, match="cannot be built from a config"):
            build_adapter(ProviderConfig(kind="mine"))
        registry.register("mine", "judgesdk.providers.scripted:PROVIDER", replace=True)
        with pytest.raises(ConfigError, match="declares kind 'scripted'"):
            registry.provider_spec("mine")
    finally:
        registry.unregister("mine")
    with pytest.raises(ConfigError, match="unknown provider kind 'my'"):
        load_config({"providers": [{"kind": "my"}]})
    with pytest.raises(ConfigError, match="short name"):
        registry.register("has space", spec)


def test_an_unknown_kind_is_priced_like_a_hosted_api(monkeypatch):
    from judgesdk.provider import prices as cost

    monkeypatch.setattr(cost, "_litellm_price_map", lambda: {"gpt-x": {"input_cost_per_token": 1e-6, "output_cost_per_token": 2e-6}})
    price, note = price_for("built-in-code", "gpt-x")
    assert price is not None and price.input == 1e-6 and note == "LiteLLM price map: gpt-x"


def test_the_local_kind_is_rate_limited_but_never_pooled(monkeypatch):
    from judgesdk.provider.layers.ratelimit import RateLimitedProvider

    monkeypatch.setattr("judgesdk.provider.stack.build_adapter", lambda pc: "adapter")
    local = bottom(ProviderConfig(kind="llamacpp", rate_limit={"max_concurrency": 64, "clients": 4}))
    assert isinstance(local, RateLimitedProvider) and local.inner == "adapter"
