"""Juries (issue 14, item 3; :mod:`judgesdk.jury`): several judges per item, one verdict, alpha and review flags.

Unit tests judge with scripted providers: an output holding ``Q<n>`` is scored n by judge ``a``, n + 1 by ``b``
(at most 5) and 6 - n by ``c``, so every aggregate, spread and alpha is known in advance. Integration tests run
a jury of three methods on the embedded model, and one across the llama.cpp server and the embedded model,
through ``judgesdk score``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import krippendorff
import numpy as np
import pytest

from judgesdk.cli.app import main
from judgesdk.core.errors import ConfigError, InputError, PermanentError
from judgesdk.core.types import Criterion, JudgeResult, LabelDistribution, Scale
from judgesdk.judging.judge import Judge
from judgesdk.judging.judge_config import JudgeConfig, load_config
from judgesdk.jury import Jury, agreement, fit_weights, interval_alpha, jury_ask, verdict
from judgesdk.provider.protocol import as_text
from judgesdk.providers.scripted import ScriptedProvider, ScriptedReply

REPO = Path(__file__).resolve().parents[2]
COHERENCE = Criterion(name="coherence", description="coherence", scale=Scale.likert(1, 5))
RULES = {"a": lambda n: n, "b": lambda n: min(5, n + 1), "c": lambda n: 6 - n}


class Rule:
    """Score ``Q<n>`` as ``RULES[name](n)``; fail like a provider that is down on outputs holding ``DOWN``;
    answer without a label (unparsed) on outputs holding ``MUTE``."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __call__(self, request):
        text = as_text(request.messages)
        if "DOWN" in text and self.name == "c":
            raise PermanentError("the model file is missing", provider="scripted")
        if "MUTE" in text:
            return "I cannot tell."
        n = int(re.search(r"Q(\d)", text).group(1))
        return ScriptedReply(label_probs={str(RULES[self.name](n)): 1.0})


def jury_config(aggregate: str = "mean", **jury) -> dict:
    judges = [{"name": "a", "method": "geval"}, {"name": "b", "method": "direct"}, {"name": "c", "method": "sampling"}]
    return {"cache": {"enabled": False}, "concurrency": 2, "jury": {"judges": judges, "aggregate": aggregate, **jury}}


def scripted_jury(config: dict, **kwargs) -> Jury:
    return Jury.from_config(config, adapters={name: ScriptedProvider(Rule(name)) for name in RULES}, **kwargs)


def make_items(*outputs: str) -> list[dict]:
    return [{"id": str(i), "output": text} for i, text in enumerate(outputs)]


@pytest.fixture(autouse=True)
def _no_env_overrides(monkeypatch):
    for name in ("JUDGESDK_PROVIDER", "JUDGESDK_METHOD", "JUDGESDK_NO_CACHE", "JUDGESDK_CONCURRENCY"):
        monkeypatch.delenv(name, raising=False)


# -- aggregation -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "aggregate,expected",
    [("mean", [(1 + 2 + 5) / 3, (4 + 5 + 2) / 3]), ("median", [2.0, 4.0]), ("majority", [2.0, 4.0])],
)
def test_each_aggregate_on_known_scores(aggregate, expected):
    # Q1: a 1, b 2, c 5 -> no majority, the tied label nearest the median (2) wins; Q4: a 4, b 5, c 2 -> likewise 4
    with scripted_jury(jury_config(aggregate)) as jury:
        results = jury.score_many(make_items("text Q1", "text Q4"), criterion=COHERENCE)
    assert [r.score for r in results] == pytest.approx(expected)
    for r in results:
        assert r.method == "jury" and r.status == "ok" and set(r.parts) == {"a", "b", "c"}
        assert r.details["scores"] == {name: part.score for name, part in r.parts.items()}
        assert r.parts["a"].method.startswith("geval") and r.parts["b"].method.startswith("direct")
        assert r.details["judges_ok"] == 3 and r.details["aggregate"] == aggregate
    if aggregate == "majority":
        assert results[0].details["majority"] == {"labels": {"a": "1", "b": "2", "c": "5"}, "label": "2", "votes": 1, "tie": True}


def parts(*scores, dist: LabelDistribution | None = None) -> dict[str, JudgeResult]:
    return {
        name: JudgeResult(score=s, status="ok" if s is not None else "error", criterion="coherence", method="geval", distribution=dist if i == 0 else None)
        for i, (name, s) in enumerate(zip("abcd", scores))
    }


def test_majority_votes_on_modes_and_breaks_ties_toward_the_median_then_down():
    settings = load_config(jury_config("majority")).jury
    assert verdict(parts(2.0, 4.0, 4.2), [COHERENCE], settings).score == 4.0  # 4.2 is nearest label 4: two votes
    assert verdict(parts(2.0, 4.0, None), [COHERENCE], settings.model_copy(update={"min_judges": 2})).score == 2.0  # 2 vs 4, median 3: lower
    # a judge's label is its distribution's mode, not its expected score (here 3.0, whose nearest label is 3)
    skewed = LabelDistribution(scale=COHERENCE.scale, probs=(0.0, 0.6, 0.0, 0.2, 0.2), method="exact")
    found = verdict(parts(skewed.expected, 2.0, 3.0, dist=skewed), [COHERENCE], settings)
    assert found.details["majority"]["labels"] == {"a": "2", "b": "2", "c": "3"} and found.score == 2.0
    with pytest.raises(InputError, match="one criterion"):
        verdict(parts(1.0, 2.0, 3.0), [COHERENCE, Criterion(name="fluency")], settings)


# -- min_judges, errors, unparsed -----------------------------------------------------------------------------


def test_too_few_judges_is_an_error_saying_how_many_answered_never_a_number():
    with scripted_jury(jury_config()) as jury:
        down, ok = jury.score_many(make_items("DOWN Q3", "fine Q3"), criterion=COHERENCE)
    assert down.score is None and down.status == "error" and down.details["judges_ok"] == 2
    assert "2 of 3 judges gave a score and the jury needs 3 (min_judges)" in down.error and "c: error" in down.error
    assert down.parts["c"].status == "error" and down.parts["a"].score == 3.0
    assert ok.score == pytest.approx((3 + 4 + 3) / 3)
    with scripted_jury(jury_config(min_judges=2)) as jury:
        (down,) = jury.score_many(make_items("DOWN Q3"), criterion=COHERENCE)
    assert down.status == "ok" and down.score == pytest.approx(3.5) and down.details["judges_ok"] == 2


def test_an_item_no_judge_could_read_is_a_final_unparsed_verdict():
    with scripted_jury(jury_config(min_judges=1)) as jury:
        (mute,) = jury.score_many(make_items("MUTE Q3"), criterion=COHERENCE)
    assert mute.score is None and mute.status == "unparsed" and "0 of 3 judges gave a score" in mute.error


# -- disagreement flags -------------------------------------------------------------------------------------


def test_items_whose_judges_spread_beyond_the_threshold_are_flagged():
    # Q3: 3, 4, 3 (spread 1); Q2: 2, 3, 4 (spread 2); Q1: 1, 2, 5 (spread 4)
    with scripted_jury(jury_config(disagreement=1.5)) as jury:
        results = jury.score_many(make_items("x Q3", "x Q2", "x Q1"), criterion=COHERENCE)
    assert [r.details["spread"] for r in results] == [1.0, 2.0, 4.0]
    assert [r.details["flagged"] for r in results] == [False, True, True]
    assert any("flagged for review" in note for note in results[1].notes)
    with scripted_jury(jury_config()) as jury:  # default: a quarter of the scale's range (1.0 on 1-5), strictly above
        results = jury.score_many(make_items("x Q3", "x Q2"), criterion=COHERENCE)
    assert [r.details["threshold"] for r in results] == [1.0, 1.0] and [r.details["flagged"] for r in results] == [False, True]
    wide = Criterion(name="coherence", description="coherence", scale=Scale.likert(1, 9))
    assert verdict(parts(1.0, 3.0), [wide], load_config(jury_config()).jury.model_copy(update={"min_judges": 2})).details["threshold"] == 2.0


# -- agreement ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", range(6))
def test_interval_alpha_equals_the_krippendorff_package(seed):
    rng = np.random.default_rng(seed)
    judges, n = int(rng.integers(2, 6)), int(rng.integers(3, 30))
    truth = rng.uniform(1, 5, n)
    data = truth + rng.normal(0, rng.uniform(0.1, 2.0), (judges, n))
    if seed % 2:
        data = np.round(data)  # labels as well as continuous scores
    data[rng.random((judges, n)) < 0.25] = np.nan  # judges that gave no score
    data[:, 0] = np.nan
    data[0, 0] = 3.0  # an item with a single score is not pairable
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement="interval")
    assert interval_alpha(data) == pytest.approx(expected, abs=1e-12)


def test_alpha_is_none_with_a_reason_when_undefined():
    assert interval_alpha(np.array([[1.0, np.nan], [np.nan, 2.0]])) is None
    same = agreement([JudgeResult(score=3, status="ok", criterion="c", method="jury", details={"scores": {"a": 3.0, "b": 3.0}})] * 3)
    assert same.alpha is None and same.reason == "every judge gave every item the same score"
    assert agreement([]).alpha is None and agreement([]).reason == "no item was scored by two judges"


def test_a_jurys_agreement_is_alpha_over_its_judges_scores():
    outputs = [f"x Q{n}" for n in (1, 2, 3, 4, 5, 3)] + ["DOWN Q2"]
    with scripted_jury(jury_config(min_judges=2)) as jury:
        jury.score_many(make_items(*outputs), criterion=COHERENCE)
        found = jury.agreement()
    n = [1, 2, 3, 4, 5, 3, 2]
    data = np.array([[RULES[j](k) for k in n] for j in "abc"], dtype=float)
    data[2, -1] = np.nan  # c was down on the last item
    assert found.judges == ["a", "b", "c"] and found.items == 7
    assert found.alpha == pytest.approx(krippendorff.alpha(reliability_data=data, level_of_measurement="interval"), abs=1e-12)


# -- weights ------------------------------------------------------------------------------------------------


def test_fit_weights_recovers_a_convex_combination_and_beats_every_grid_point():
    rng = np.random.default_rng(0)
    scores = rng.uniform(1, 5, (40, 3))
    exact = fit_weights(scores, scores @ np.array([0.7, 0.3, 0.0]), ["a", "b", "c"])
    assert [exact.values[n] for n in "abc"] == pytest.approx([0.7, 0.3, 0.0], abs=1e-6) and exact.rmse < 1e-6
    human = scores @ np.array([0.5, 0.2, 0.3]) + rng.normal(0, 0.8, 40)
    fitted = fit_weights(scores, human, ["a", "b", "c"])
    w = np.array([fitted.values[n] for n in "abc"])
    assert w.min() >= 0 and w.sum() == pytest.approx(1.0)
    grid = [np.array([i, j, 100 - i - j]) / 100 for i in range(101) for j in range(101 - i)]
    best = min(float(np.mean((scores @ g - human) ** 2)) for g in grid)
    assert fitted.rmse**2 <= best + 1e-9
    with pytest.raises(InputError, match="at least 10"):
        fit_weights(scores[:9], human[:9], ["a", "b", "c"])


def test_judges_that_answered_with_no_weight_give_an_error_not_a_final_verdict():
    from judgesdk.jury import Weights

    settings = load_config(jury_config("mean", min_judges=2)).jury.model_copy(update={"aggregate": "weights"})
    found = parts(2.0, 3.0, None)
    found["c"] = found["c"].model_copy(update={"status": "unparsed"})
    result = verdict(found, [COHERENCE], settings, Weights(values={"a": 0.0, "b": 0.0, "c": 1.0}, labels=10, rmse=0.1, rmse_mean=0.2))
    assert result.score is None and result.status == "error" and "have weight 0" in result.error


def test_weights_fitted_on_labels_follow_the_judge_that_agrees_with_people(tmp_path):
    outputs = [f"x Q{1 + i % 5}" for i in range(12)]
    labels = tmp_path / "labels.jsonl"
    labels.write_text("".join(json.dumps({"id": str(i), "label": 1 + i % 5}) + "\n" for i in range(12)))  # people agree with a
    calls = {}
    for aggregate, extra in (("mean", {}), ("weights", {"weights_from": str(labels)})):
        providers = {name: ScriptedProvider(Rule(name)) for name in RULES}
        with Jury.from_config(jury_config(aggregate, **extra), adapters=providers) as jury:
            results = jury.score_many(make_items(*outputs), criterion=COHERENCE)
            rows = dict(jury.summary_rows())
        calls[aggregate] = sum(len(p.calls) for p in providers.values())
    assert calls["weights"] == calls["mean"]  # the labelled items are judged once, for the fit and the verdict
    assert jury.weights.values["a"] == pytest.approx(1.0, abs=1e-6) and jury.weights.labels == 12
    assert [r.score for r in results] == pytest.approx([r.parts["a"].score for r in results], abs=1e-5)
    assert results[0].details["weights"]["a"] == pytest.approx(1.0, abs=1e-6)
    assert "fitted on 12 labels" in rows["jury weights"]
    labels.write_text(json.dumps({"id": "elsewhere", "label": 3}) + "\n")
    with scripted_jury(jury_config("weights", weights_from=str(labels))) as jury, pytest.raises(InputError, match="not items of this run"):
        jury.score_many(make_items(*outputs), criterion=COHERENCE)


# -- config ------------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "change,message",
    [
        ({"judges": [{"name": "a", "method": "geval"}]}, "at least two judges"),
        ({"judges": [{"name": "a", "method": "geval"}, {"name": "a", "method": "direct"}]}, "distinct names"),
        ({"judges": [{"name": "a", "method": "geval"}, {"name": "b", "method": "geval"}]}, "are the same judge"),
        ({"judges": [{"name": "a", "method": "likelihood"}, {"name": "b"}]}, "log-probability"),
        ({"judges": [{"name": "a", "method": "gevl"}, {"name": "b"}]}, "did you mean 'geval'"),
        ({"judges": [{"name": "a", "method": "geval", "method_options": {"k": 4}}, {"name": "b"}]}, "no option is read for method 'geval'"),
        ({"judges": [{"name": "a", "method": "geval", "provider": {"kind": "openai", "modle": "m"}}, {"name": "b"}]}, "did you mean 'model'"),
        ({"judges": [{"name": "a", "method": "geval", "provider": []}, {"name": "b"}]}, "names no provider"),
        ({"judges": [{"name": " ", "method": "geval"}, {"name": "b"}]}, "non-empty name"),
        ({"min_judges": 4}, "more than the jury's 3 judges"),
        ({"min_judges": 0}, "min_judges"),
        ({"disagreement": -1}, "disagreement"),
        ({"aggregate": "vote"}, "'mean', 'median', 'majority' or 'weights'"),
        ({"aggregate": "weights"}, "set weights_from"),
        ({"weights_from": "labels.jsonl"}, "only with aggregate"),
        ({"aggregate": "weights", "weights_from": "/nonexistent/labels.jsonl"}, "does not exist"),
        ({"quorum": 2}, "unknown field"),
        ({"judges": [{"name": "a", "method": "geval"}, {"name": "b"}], "top": {"method": "gevl"}}, "inherits method 'gevl', which is unknown"),
    ],
)
def test_a_bad_jury_is_a_config_error_saying_what_to_fix(change, message):
    config = jury_config()
    config.update(change.get("top", {}))  # a top-level setting the judges inherit
    config["jury"] = {**config["jury"], **{key: value for key, value in change.items() if key != "top"}}
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_config(config)


def test_judges_inherit_the_top_level_settings_and_the_question_covers_each_judge(tmp_path):
    config = load_config({**jury_config(), "providers": [{"kind": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1"}], "template": None})
    ask = jury_ask(config, COHERENCE)
    assert ask.method == "jury" and ask.criterion == "coherence"

    def changed(**jury) -> str:
        data = config.model_dump()
        data["jury"].update(jury)
        return jury_ask(JudgeConfig.model_validate(data), COHERENCE).key

    judges = config.model_dump()["jury"]["judges"]
    other_model = [dict(judges[0], provider=[{"kind": "openai", "model": "other", "base_url": "http://127.0.0.1:9/v1"}]), *judges[1:]]
    assert changed(judges=other_model) != ask.key  # a judge's provider is part of the question
    assert changed(judges=[dict(judges[0], template="direct.likert.shared_criteria"), *judges[1:]]) != ask.key
    assert changed(disagreement=2.0) != ask.key and changed(min_judges=2) != ask.key
    assert changed() == ask.key
    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"id": "1", "label": 3}\n')
    fitted = changed(aggregate="weights", weights_from=labels)
    labels.write_text('{"id": "1", "label": 4}\n')
    assert changed(aggregate="weights", weights_from=labels) != fitted  # other labels, other weights
    assert jury_ask(config.model_copy(update={"concurrency": 9}), COHERENCE).key == ask.key  # not an answer-changing setting
    assert jury_ask(config.model_copy(update={"providers": []}), COHERENCE).key != ask.key  # inherited by all three


def test_judges_with_one_provider_config_share_one_adapter_closed_once(monkeypatch):
    built, closed = [], []

    class Counted(ScriptedProvider):
        async def aclose(self):
            closed.append(self.model)

    monkeypatch.setattr("judgesdk.provider.stack.build_adapter", lambda pc: built.append(pc.model) or Counted(Rule("a"), model=pc.model))
    config = jury_config()
    config["providers"] = [{"kind": "openai", "model": "shared", "base_url": "http://127.0.0.1:9/v1"}]
    config["jury"]["judges"][2]["provider"] = {"kind": "openai", "model": "own", "base_url": "http://127.0.0.1:9/v1"}
    jury = Jury.from_config(config)
    jury.score_many(make_items("x Q2", "x Q4"), criterion=COHERENCE)
    jury.close()
    assert sorted(built) == ["own", "shared"] and sorted(closed) == ["own", "shared"]


def test_judgesdk_method_in_the_environment_may_not_silently_replace_a_judges_method(monkeypatch):
    monkeypatch.setenv("JUDGESDK_METHOD", "mcq")
    with pytest.raises(ConfigError, match="JUDGESDK_METHOD=mcq"):
        scripted_jury(jury_config())


# -- through judgesdk score -----------------------------------------------------------------------------------


JURY_TOML = """concurrency = 2
[cache]
enabled = false

[jury]
min_judges = {min_judges}

[[jury.judges]]
name = "a"
method = "geval"
provider = {{ kind = "openai", model = "a", base_url = "http://127.0.0.1:9/v1" }}

[[jury.judges]]
name = "b"
method = "direct"
provider = {{ kind = "openai", model = "b", base_url = "http://127.0.0.1:9/v1" }}

[[jury.judges]]
name = "c"
method = "sampling"
provider = {{ kind = "openai", model = "{c_model}", base_url = "http://127.0.0.1:9/v1" }}
"""


@pytest.fixture
def scripted_models(monkeypatch):
    """Every configured adapter is a scripted judge named by its model (``c2`` answers as ``c``); the summary
    table is printed wide enough that no value wraps."""
    monkeypatch.setenv("COLUMNS", "200")
    calls = []

    def build(pc):
        if pc.model == "dead":
            raise PermanentError("no model file for dead", provider="scripted")
        provider = ScriptedProvider(Rule(pc.model[0]), model=pc.model)
        provider.calls = calls
        return provider

    monkeypatch.setattr("judgesdk.provider.stack.build_adapter", build)
    return calls


def run(argv, capsys):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def cli_rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def alpha_of(rows: list[dict]) -> float:
    data = np.array([[r["details"]["scores"][j] if r["details"]["scores"][j] is not None else np.nan for r in rows] for j in "abc"], dtype=float)
    return krippendorff.alpha(reliability_data=data, level_of_measurement="interval")


def test_a_jury_of_three_runs_through_score_with_alpha_flags_and_resume(tmp_path, capsys, scripted_models):
    inputs = tmp_path / "items.jsonl"
    inputs.write_text("".join(json.dumps({"id": f"i{n}", "output": f"text Q{n}"}) + "\n" for n in (1, 2, 3, 4, 5)) + '{"id": "down", "output": "DOWN Q3"}\n')
    config = tmp_path / "jury.toml"
    config.write_text(JURY_TOML.format(min_judges=3, c_model="c"))
    out = tmp_path / "results.jsonl"
    argv = ["score", inputs, "-o", out, "--config", config, "--criterion", "coherence"]
    code, _, err = run(argv, capsys)
    rows = cli_rows(out)
    assert code == 2 and len(rows) == 6  # one item lacks a judge: no score, so the run is incomplete
    by_id = {r["id"]: r for r in rows}
    assert by_id["down"]["status"] == "error" and "2 of 3 judges gave a score" in by_id["down"]["error"]
    for n in (1, 2, 3, 4, 5):
        row = by_id[f"i{n}"]
        assert row["method"] == "jury" and row["asked"].startswith("coherence/jury/") and set(row["parts"]) == {"a", "b", "c"}
        assert row["details"]["scores"] == {j: float(RULES[j](n)) for j in "abc"}
        assert row["score"] == pytest.approx(sum(RULES[j](n) for j in "abc") / 3)
        spread = max(RULES[j](n) for j in "abc") - min(RULES[j](n) for j in "abc")
        assert row["details"]["flagged"] == (spread > 1.0)
    assert re.search(rf"Krippendorff's alpha \(interval\)\s+│ {alpha_of(rows):.3f} over 6 items", err)
    assert re.search(r"flagged for review\s+│ 4 of 6 items", err)  # Q3 (3, 4, 3) and down (3, 4) are within 1 point
    assert re.search(r"judge c\s+│ sampling on scripted/c: a score for 5 of 6 items", err)  # what answered

    calls = len(scripted_models)
    config.write_text(JURY_TOML.format(min_judges=2, c_model="c"))  # another question: every item judged again
    code, _, err = run(argv, capsys)
    assert code == 0 and len(scripted_models) > calls and cli_rows(out)[-1]["status"] == "ok"
    calls = len(scripted_models)
    code, _, err = run(argv, capsys)  # the same question: nothing left to judge, alpha over the resumed rows
    assert code == 0 and len(scripted_models) == calls and re.search(r"already done \(skipped\)\s+│ 6", err)
    assert re.search(rf"Krippendorff's alpha \(interval\)\s+│ {alpha_of(cli_rows(out)[6:]):.3f} over 6 items", err)
    config.write_text(JURY_TOML.format(min_judges=2, c_model="c2"))  # one judge changed: judged again
    code, _, err = run(argv, capsys)
    assert code == 0 and len(scripted_models) > calls and len(cli_rows(out)) == 18


@pytest.mark.parametrize(
    "flags,message",
    [
        (["--provider", "local"], "--provider reaches no judge"),
        (["--method", "mcq"], "--method reaches no judge"),
        (["--estimate"], "--estimate does not cover a [jury]"),
    ],
)
def test_flags_a_jury_cannot_honour_exit_3(tmp_path, capsys, scripted_models, items, flags, message):
    config = tmp_path / "jury.toml"
    config.write_text(JURY_TOML.format(min_judges=3, c_model="c"))
    code, _, err = run(["score", items, "--config", config, *flags], capsys)
    assert code == 3 and message in err and "Traceback" not in err and not scripted_models


def test_a_judge_that_cannot_be_built_is_skipped_unless_the_jury_then_lacks_judges(tmp_path, capsys, scripted_models):
    items = tmp_path / "items.jsonl"
    items.write_text('{"id": "1", "output": "text Q2"}\n')
    config = tmp_path / "jury.toml"
    config.write_text(JURY_TOML.format(min_judges=3, c_model="dead"))
    code, _, err = run(["score", items, "--config", config], capsys)
    assert code == 3 and "2 of the jury's 3 judges can be used and it needs 3 (min_judges)" in err and "no model file for dead" in err
    assert not scripted_models  # refused before any item was judged
    config.write_text(JURY_TOML.format(min_judges=2, c_model="dead"))
    code, out, err = run(["score", items, "--config", config, "--quiet"], capsys)
    row = json.loads(out)
    assert code == 0 and "skipping jury judge c: no provider of the chain can be used" in err
    assert row["details"]["judges_ok"] == 2 and row["parts"]["c"]["status"] == "error" and row["score"] == 2.5


def test_a_bad_jury_config_exits_3_naming_the_field(tmp_path, capsys, items):
    config = tmp_path / "jury.toml"
    config.write_text(JURY_TOML.format(min_judges=5, c_model="c"))
    code, _, err = run(["score", items, "--config", config], capsys)
    assert code == 3 and "min_judges = 5 is more than the jury's 3 judges" in err


def test_commands_that_judge_with_one_judge_refuse_a_jury_config(tmp_path, capsys, items):
    """``compare``, ``rank``, ``bench``, ``card`` and the gate build one Judge: a [jury] there must not quietly
    judge with the top-level chain."""
    from judgesdk.core.errors import ConfigError
    from judgesdk.judging.judge import Judge

    with pytest.raises(ConfigError, match=r"\[jury\] section, which one Judge cannot answer"):
        Judge.from_config(jury_config())
    config = tmp_path / "jury.toml"
    config.write_text(JURY_TOML.format(min_judges=3, c_model="c"))
    code, _, err = run(["compare", "--a", "one", "--b", "two", "--source", "src", "--config", config], capsys)
    assert code == 3 and "[jury]" in err


# -- integration ------------------------------------------------------------------------------------------------


SOURCE = (
    "The city council of Marlow voted on Tuesday to turn the disused rail yard into a public park with a "
    "playground, a community garden and a cycle path. Construction starts next spring."
)
SHORT_ITEMS = [  # short texts: a CPU model (and the server's one thread) reads them in seconds
    {"id": "park", "source": SOURCE, "output": "Marlow will turn its old rail yard into a park."},
    {"id": "mall", "source": SOURCE, "output": "Marlow's council rejected a shopping centre."},
    {"id": "cycle", "source": SOURCE, "output": "A cycle path and a garden are planned; building starts next spring."},
]


def local_judges(*methods: str) -> str:
    return "".join(f'\n[[jury.judges]]\nname = "{m}"\nmethod = "{m}"\nprovider = {{ kind = "local" }}\n' for m in methods)


def first_items(tmp_path: Path, n: int) -> Path:
    path = tmp_path / "items.jsonl"
    path.write_text("".join(json.dumps(item) + "\n" for item in SHORT_ITEMS[:n]))
    return path


def check_jury_rows(rows: list[dict], names: list[str], err: str) -> None:
    """Each row's verdict is the mean of its judges' scores, its spread and flag follow from them, and the
    summary's alpha is the krippendorff package's over the rows."""
    for row in rows:
        scores = [row["parts"][n]["score"] for n in names]
        assert row["method"] == "jury" and all(s is not None for s in scores), row["details"]
        assert row["details"]["scores"] == dict(zip(names, scores))
        assert row["score"] == pytest.approx(sum(scores) / len(scores))
        assert row["details"]["spread"] == pytest.approx(max(scores) - min(scores))
        assert row["details"]["flagged"] == (max(scores) - min(scores) > row["details"]["threshold"])
    data = np.array([[row["details"]["scores"][n] for row in rows] for n in names], dtype=float)
    expected = krippendorff.alpha(reliability_data=data, level_of_measurement="interval")
    assert re.search(rf"Krippendorff's alpha \(interval\)\s+│ {expected:.3f} over {len(rows)} items", err)


@pytest.mark.integration
def test_a_jury_of_three_methods_on_the_embedded_model(tmp_path, capsys, monkeypatch, local):
    monkeypatch.setenv("JUDGESDK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("COLUMNS", "200")
    config = tmp_path / "jury.toml"
    config.write_text("[estimation]\non_low_coverage = \"flag\"\n[jury]\n" + local_judges("geval", "mcq", "fused"))
    out = tmp_path / "results.jsonl"
    argv = ["score", first_items(tmp_path, 3), "-o", out, "--config", config, "--preset", "summeval", "--criterion", "consistency"]
    code, _, err = run(argv, capsys)
    rows = cli_rows(out)
    assert code == 0 and len(rows) == 3
    check_jury_rows(rows, ["geval", "mcq", "fused"], err)
    assert {rows[0]["parts"][n]["method"] for n in ("geval", "mcq", "fused")} == {"geval/exact", "mcq/exact", "fused/source"}
    assert err.count("model tokens evaluated") == 1  # one model, shared by the three judges, reports its work once
    # the jury's judge is the judge on its own: the same score from a Judge with that judge's config alone
    item = SHORT_ITEMS[0]
    from judgesdk.estimation.estimator import EstimationSettings
    from judgesdk.prompting.presets import criterion as preset_criterion

    # the session's provider passed as an instance, which a Judge does not close (from_config would stack it and close it)
    alone = Judge(local, method="mcq", settings=EstimationSettings(on_low_coverage="flag"))
    result = alone.score(item["output"], source=item["source"], criterion=preset_criterion("summeval", "consistency"))
    alone.close()
    assert rows[0]["parts"]["mcq"]["score"] == pytest.approx(result.score, abs=1e-4)


@pytest.mark.integration
def test_a_jury_across_the_llama_server_and_the_embedded_model(tmp_path, capsys, monkeypatch, llama_server):
    monkeypatch.setenv("JUDGESDK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("COLUMNS", "200")
    server = f'{{ kind = "openai", model = "{llama_server.model}", base_url = "{llama_server.base_url}", api = "completions", capabilities = {{ multiple_samples = false }} }}'
    config = tmp_path / "jury.toml"
    config.write_text(
        '[estimation]\non_low_coverage = "flag"\n[jury]\naggregate = "mean"\n'
        f'\n[[jury.judges]]\nname = "server-geval"\nmethod = "geval"\nprovider = {server}\n'
        + local_judges("geval", "mcq")
    )
    out = tmp_path / "results.jsonl"
    argv = ["score", first_items(tmp_path, 2), "-o", out, "--config", config, "--preset", "summeval", "--criterion", "consistency"]
    code, _, err = run(argv, capsys)
    rows = cli_rows(out)
    assert code == 0 and len(rows) == 2
    check_jury_rows(rows, ["server-geval", "geval", "mcq"], err)
    for row in rows:
        assert row["parts"]["server-geval"]["provider"] == "openai" and row["parts"]["geval"]["provider"] == "local"
    assert re.search(r"judge server-geval\s+│ geval on openai/gemma: a score for 2 of 2 items", err)


def test_a_jury_judges_every_item_when_one_lacks_the_source_a_judges_template_needs(tmp_path, capsys, scripted_models):
    """Issue 28, item 3: judge b asks 001's RTS prompt, which shows the source; the item without one is b's error
    (naming the item and the field) and the jury still answers it from the other two (min_judges = 2)."""
    inputs = tmp_path / "items.jsonl"
    lines = [{"id": f"i{n}", "output": f"text Q{n}", **({} if n == 3 else {"source": "an article"})} for n in (1, 2, 3, 4, 5)]
    inputs.write_text("".join(json.dumps(line) + "\n" for line in lines))
    config = tmp_path / "jury.toml"
    config.write_text(JURY_TOML.format(min_judges=2, c_model="c").replace('method = "direct"', 'method = "rts"'))
    out = tmp_path / "results.jsonl"
    code, _, err = run(["score", inputs, "-o", out, "--config", config, "--criterion", "consistency", "--quiet"], capsys)
    rows = {r["id"]: r for r in cli_rows(out)}
    assert code == 0 and "Traceback" not in err and sorted(rows) == [f"i{n}" for n in (1, 2, 3, 4, 5)]
    lacking = rows["i3"]
    assert lacking["status"] == "ok" and lacking["details"]["judges_ok"] == 2 and lacking["parts"]["b"]["status"] == "error"
    assert "item 'i3'" in lacking["parts"]["b"]["error"] and "'source'" in lacking["parts"]["b"]["error"]
    assert all(rows[f"i{n}"]["details"]["judges_ok"] == 3 for n in (1, 2, 4, 5))
    config.write_text(JURY_TOML.format(min_judges=3, c_model="c").replace('method = "direct"', 'method = "rts"'))
    code, _, err = run(["score", inputs, "-o", out, "--config", config, "--criterion", "consistency", "--quiet"], capsys)
    rows = {r["id"]: r for r in cli_rows(out)[5:]}
    assert code == 2 and len(rows) == 5 and rows["i3"]["status"] == "error" and "item 'i3'" in rows["i3"]["error"]
