"""A scoring method added from outside the package works everywhere a built-in one does, with no edit to judgesdk.

The plugin is a temporary installed distribution: a module and a ``*.dist-info`` folder (METADATA and
``entry_points.txt``) on ``sys.path``, found by :mod:`importlib.metadata` as pip would leave it. It declares a
method ``stars`` (group ``judgesdk.methods``: the score is the number of stars the model answers), an off-scale
method ``stars-raw``, and a provider kind ``stars-model`` (group ``judgesdk.providers``), a scripted judge so the
answers are known. The method then runs through :meth:`Judge.score`, a ``[jury]``, ``judgesdk score -o`` twice
(the second run resumes every row) and ``judgesdk score --estimate`` (the forecast).
"""

from __future__ import annotations

import json
import sys
import textwrap

import pytest

from judgesdk.cli.app import main
from judgesdk.core.errors import ConfigError, InputError
from judgesdk.judging.judge import Judge
from judgesdk.judging.judge_config import load_config
from judgesdk.provider import registry as provider_registry
from judgesdk.scorers import registry

PLUGIN = '''
from judgesdk.core.types import JudgeResult
from judgesdk.provider.protocol import Capabilities, GenerateRequest, Message, as_text
from judgesdk.provider.registry import Pricing, ProviderSpec
from judgesdk.providers.scripted import ScriptedProvider
from judgesdk.scorers.spec import MethodSpec

CALLS = []


async def score(provider, item, criterion, options, method):
    """One greedy answer of stars; the score is their number (plus ``bonus``), clipped to the scale."""
    prompt = f"Rate this text on {criterion.name} with stars.\\nText: {item.output}\\nStars:"
    response = await provider.generate(GenerateRequest(messages=(Message(role="user", content=prompt),), max_tokens=8))
    text = response.choices[0].text
    stars = text.count("*") + float(options.extra.get("bonus", 0))
    low, high = min(criterion.scale.values), max(criterion.scale.values)
    value = stars if method == "stars-raw" else min(max(stars, low), high)
    return JudgeResult(
        score=value, status="ok", criterion=criterion.name, method=method, raw=[text], item_id=item.id,
        provider=provider.kind, model=provider.model, usage=response.usage,
    )


STARS = MethodSpec(
    name="stars", score=score, options={"bonus": "non_negative_number"},
    forecast_approximation="stars are counted at max_tokens each",
)
RAW = MethodSpec(name="stars-raw", score=score, off_scale="a count of stars")


def answer(request):
    CALLS.append(request)
    text = as_text(request.messages)
    return "*" * (2 + text.count("!")) if "Stars:" in text else "3"


class StarsModel(ScriptedProvider):
    kind = "stars-model"


PROVIDER = ProviderSpec(
    kind="stars-model", pricing=Pricing(local=True), default_model="stars-1",
    build=lambda settings, options: StarsModel(answer, model=settings.model, capabilities=Capabilities()),
)
'''

ENTRY_POINTS = """
[judgesdk.methods]
stars = judgesdk_stars_plugin:STARS
stars-raw = judgesdk_stars_plugin:RAW

[judgesdk.providers]
stars-model = judgesdk_stars_plugin:PROVIDER
"""

JURY = """
[[providers]]
kind = "stars-model"

[jury]
aggregate = "mean"

[[jury.judges]]
name = "stars"
method = "stars"

[[jury.judges]]
name = "stars-bonus"
method = "stars"
method_options = {{ bonus = 1 }}

[[jury.judges]]
name = "direct"
method = "{third}"
"""


@pytest.fixture
def plugin(tmp_path, monkeypatch):
    """The plugin installed: its module and its dist-info on sys.path, the registries told to list again."""
    site = tmp_path / "site"
    (site / "judgesdk_stars_plugin-0.1.dist-info").mkdir(parents=True)
    (site / "judgesdk_stars_plugin.py").write_text(PLUGIN)
    (site / "judgesdk_stars_plugin-0.1.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: judgesdk-stars-plugin\nVersion: 0.1\n")
    (site / "judgesdk_stars_plugin-0.1.dist-info" / "entry_points.txt").write_text(textwrap.dedent(ENTRY_POINTS))
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.delitem(sys.modules, "judgesdk_stars_plugin", raising=False)
    monkeypatch.setenv("JUDGESDK_CACHE_DIR", str(tmp_path / "cache"))
    registry.refresh()
    provider_registry.refresh()
    yield
    sys.modules.pop("judgesdk_stars_plugin", None)
    registry.refresh()
    provider_registry.refresh()


def write_items(tmp_path):
    path = tmp_path / "items.jsonl"
    path.write_text("".join(json.dumps({"id": f"i{n}", "output": "good" + "!" * n}) + "\n" for n in range(3)))
    return path


def run(argv, capsys):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_plugin_method_is_listed_by_name_and_loaded_only_when_used(plugin):
    assert "stars" in registry.method_names() and "judgesdk_stars_plugin" not in sys.modules
    assert registry.method_spec("stars").options == {"bonus": "non_negative_number"}
    assert "judgesdk_stars_plugin" in sys.modules


def test_a_plugin_method_scores_through_the_judge(plugin):
    config = load_config({"providers": [{"kind": "stars-model"}], "method": "stars", "cache": {"enabled": False}})
    with Judge.from_config(config) as judge:
        result = judge.score("good!!", criterion="coherence")
    assert result.status == "ok" and result.score == 4.0 and result.method == "stars" and result.model == "stars-1"
    with pytest.raises(ConfigError, match="bonus must be a number >= 0"):
        load_config({"providers": [{"kind": "stars-model"}], "method": "stars", "method_options": {"bonus": -1}})
    with pytest.raises(ConfigError, match="unknown option 'bonsu' \\(did you mean 'bonus'\\?\\)"):
        load_config({"method": "stars", "method_options": {"bonsu": 1}})


def test_a_plugin_method_sits_in_a_jury_and_its_facts_reach_the_jury_check(plugin, tmp_path, capsys):
    items = write_items(tmp_path)
    config = tmp_path / "jury.toml"
    config.write_text(JURY.format(third="direct"))
    out = tmp_path / "results.jsonl"
    code, _, err = run(["score", items, "-o", out, "--config", config, "--criterion", "coherence"], capsys)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert code == 0 and len(rows) == 3, err
    for n, row in enumerate(rows):
        assert row["method"] == "jury" and row["details"]["scores"] == {"stars": 2.0 + n, "stars-bonus": 3.0 + n, "direct": 3.0}
        assert row["score"] == pytest.approx((2 + n + 3 + n + 3) / 3)

    config.write_text(JURY.format(third="stars-raw"))  # an off-scale plugin method: refused, the list derived from specs
    with pytest.raises(ConfigError, match="whose score is a count of stars, not a value on the criterion's scale") as refused:
        load_config(config)
    assert "stars, " in str(refused.value) and "stars-raw" not in str(refused.value).split("answers on it")[1]


def test_a_plugin_method_resumes_and_is_forecast_through_the_cli(plugin, tmp_path, capsys):
    items = write_items(tmp_path)
    out = tmp_path / "results.jsonl"
    argv = ["score", items, "-o", out, "--provider", "stars-model", "--method", "stars", "--criterion", "coherence", "--no-cache", "--quiet"]
    code, _, err = run(argv, capsys)
    plugin_module = sys.modules["judgesdk_stars_plugin"]
    assert code == 0, err
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["score"] for r in rows] == [2.0, 3.0, 4.0] and all(r["method"] == "stars" for r in rows)
    asked = len(plugin_module.CALLS)
    assert asked == 3

    code, _, err = run(argv, capsys)  # the same question: every row is reused, the model is not asked again
    assert code == 0 and len(plugin_module.CALLS) == asked and len(out.read_text().splitlines()) == 3, err
    code, _, err = run([*argv[:-2], "--option", "bonus=1", "--no-cache", "--quiet"], capsys)  # another question: asked again
    assert code == 0 and len(plugin_module.CALLS) == asked + 3 and len(out.read_text().splitlines()) == 6, err

    code, stdout, err = run(["score", items, "--provider", "stars-model", "--method", "stars", "--criterion", "coherence", "--estimate"], capsys)
    assert code == 0, err
    found = json.loads(stdout)
    assert len(plugin_module.CALLS) == asked + 3  # the forecast calls no model
    assert found["method"] == "stars" and found["judgements"] == 3
    assert [(p["provider"], p["calls"], p["by_kind"], p["output_tokens"]) for p in found["providers"]] == [("stars-model", 3, {"generation": 3}, 24)]
    assert "stars: stars are counted at max_tokens each" in found["notes"]  # the spec's forecast_approximation
    assert not any("assumed usable" in note for note in found["notes"])


def test_an_unknown_or_broken_plugin_method_is_a_typed_error(plugin, monkeypatch):
    with pytest.raises(InputError, match="unknown method 'starz'; choose one of auto, fused, geval"):
        registry.method_spec("starz")
    registry.register("wrong", "judgesdk_stars_plugin:STARS")
    try:
        with pytest.raises(ConfigError, match="method 'wrong' \\(registered in this process\\) declares method 'stars'"):
            registry.method_spec("wrong")
    finally:
        registry.unregister("wrong")
    with pytest.raises(ConfigError, match="already registered"):
        registry.register("geval", "judgesdk_stars_plugin:STARS")
