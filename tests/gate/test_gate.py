"""Release gates: each gate kind, each exit code, the four renderings parsed back, and the one rule that
ties the printed verdict to the exit code (checked over every combination of gate outcomes)."""

from __future__ import annotations

import itertools
import json
import re
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from judgesdk.core.errors import ConfigError, InputError
from judgesdk.core.types import Criterion, JudgeResult, LabelDistribution, Scale
from judgesdk.gate import (
    CriterionRun,
    GateResult,
    GateRun,
    Verdict,
    bootstrap_mean_ci,
    decide,
    evaluate_gates,
    load_gate_config,
    render_json,
    render_junit,
    render_markdown,
    render_text,
    sign_flip_p,
    write_reports,
)
from judgesdk.meta.calibration import fit_calibration
from judgesdk.providers.scripted import ScriptedProvider

from support.gates import gate, judged_config, results_file, run_cli, scripted_rule, write_items

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
CRIT = Criterion(name="quality", description="quality", scale=Scale.likert(1, 5))


# -- helpers ---------------------------------------------------------------------------------------


def result(item_id: str, score: float | None, coverage: float = 1.0, probs: tuple[float, ...] | None = None) -> JudgeResult:
    dist = None
    if score is not None:
        if probs is None:
            probs = tuple(1.0 if v == round(score) else 0.0 for v in range(1, 6))
        dist = LabelDistribution(scale=CRIT.scale, probs=probs, method="exact", coverage=coverage, low_coverage=coverage < 0.5)
    status = "error" if score is None else ("low_coverage" if coverage < 0.5 else "ok")
    return JudgeResult(score=score, status=status, criterion="quality", method="geval/exact", distribution=dist, item_id=item_id)


def gate_config(gates: list[dict], **extra) -> object:
    return load_gate_config({"criteria": [{"name": "quality"}], "gates": [{"criterion": "quality", **g} for g in gates], **extra})


def run_of(results: list[JudgeResult], baseline: list[JudgeResult] | None = None, expected: list[str] | None = None, calibration=None) -> GateRun:
    crun = CriterionRun(
        criterion=CRIT, expected=expected if expected is not None else [r.item_id for r in results],
        results=results, baseline=baseline, calibration=calibration,
    )  # fmt: skip
    return GateRun(criteria={"quality": crun})


# -- config ----------------------------------------------------------------------------------------


def test_config_from_toml_resolves_paths_relative_to_the_file(tmp_path):
    (tmp_path / "sub").mkdir()
    path = tmp_path / "sub" / "gate.toml"
    path.write_text(
        'judge = "judge.toml"\ninput = "items.jsonl"\n[[criteria]]\nname = "quality"\ncalibration = "cal.json"\n'
        '[[gates]]\nkind = "review"\ncriterion = "quality"\nmax_share = 0.2\n[gates.policy]\nthreshold = 0.6\n'
    )
    config = load_gate_config(path)
    base = path.resolve().parent
    assert config.judge == base / "judge.toml" and config.input == base / "items.jsonl"
    assert config.results == base / "gate-results.jsonl"  # a judged run always writes its results somewhere
    assert config.criteria[0].calibration == base / "cal.json"
    assert config.gates[0].policy.threshold == 0.6 and config.gates[0].label == "quality review"


@pytest.mark.parametrize(
    "data,message",
    [
        ({"criteria": [{"name": "q"}], "gates": [{"kind": "meen", "criterion": "q", "min": 1}]}, "meen"),
        ({"criteria": [{"name": "q"}], "gates": [{"kind": "mean", "criterion": "x", "min": 1}]}, "not among [[criteria]]"),
        ({"criteria": [{"name": "q"}], "gates": [{"kind": "mean", "criterion": "q", "min": 1}] * 2}, "unique"),
        ({"criteria": [{"name": "q"}], "gates": []}, "gates"),
        ({"criteria": [{"name": "q"}], "gates": [{"kind": "pass_rate", "criterion": "q", "item_min": 3, "min": 1.5}]}, "min"),
        ({"criteria": [{"name": "q"}], "gates": [{"kind": "mean", "criterion": "q", "min": 1}], "budget": {}}, "max_tokens"),
        ({"criteria": [{"name": "q"}], "gates": [{"kind": "mean", "criterion": "q", "min": 1, "typo": 1}]}, "typo"),
    ],
)
def test_bad_gate_configs_are_config_errors_naming_the_problem(data, message):
    with pytest.raises(ConfigError, match=re.escape(message)):
        load_gate_config(data)


def test_missing_or_invalid_gate_files(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_gate_config(tmp_path / "none.toml")
    (tmp_path / "bad.toml").write_text("criteria = [")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_gate_config(tmp_path / "bad.toml")


def test_nothing_to_gate_and_regression_without_baseline_are_config_errors():
    with pytest.raises(ConfigError, match="nothing to gate"):
        evaluate_gates(gate_config([{"kind": "mean", "min": 1}]))
    with pytest.raises(ConfigError, match="baseline"):
        evaluate_gates(gate_config([{"kind": "regression"}], results="r.jsonl"))


def test_the_example_gate_config_loads():
    config = load_gate_config(EXAMPLES / "gate.toml")
    assert config.input is not None and config.input.is_file() and {g.kind for g in config.gates} >= {"mean", "ci_lower", "review"}


# -- each gate kind (decide is pure: runs are built here) ------------------------------------------


def test_mean_and_pass_rate_gates():
    run = run_of([result("a", 4), result("b", 3), result("c", 2)])
    verdict = decide(gate_config([{"kind": "mean", "min": 3.0}, {"kind": "pass_rate", "item_min": 3, "min": 0.6}]), run)
    assert gate(verdict, "mean").outcome == "pass" and gate(verdict, "mean").observed == pytest.approx(3.0)
    assert gate(verdict, "pass_rate").observed == pytest.approx(2 / 3) and verdict.exit_code == 0
    verdict = decide(gate_config([{"kind": "mean", "min": 3.1}, {"kind": "pass_rate", "item_min": 4, "min": 0.5}]), run)
    assert gate(verdict, "mean").outcome == gate(verdict, "pass_rate").outcome == "fail"
    assert verdict.status == "fail" and verdict.exit_code == 1


def test_ci_lower_gate_is_a_seeded_bootstrap_of_the_mean():
    scores = [1, 2, 3, 4, 5] * 4
    low, high = bootstrap_mean_ci(scores, 0.95, 2000, seed=0)
    assert low < 3.0 < high and (low, high) == bootstrap_mean_ci(scores, 0.95, 2000, seed=0)
    assert bootstrap_mean_ci(scores, 0.5, 2000, seed=0)[0] > low  # a narrower interval at lower confidence
    run = run_of([result(str(i), s) for i, s in enumerate(scores)])
    assert gate(decide(gate_config([{"kind": "ci_lower", "min": low - 0.01}]), run), "ci_lower").outcome == "pass"
    failed = decide(gate_config([{"kind": "ci_lower", "min": 2.9}]), run)  # the mean (3.0) passes, its CI does not
    assert gate(failed, "ci_lower").outcome == "fail" and gate(failed, "ci_lower").observed == pytest.approx(low)
    one = decide(gate_config([{"kind": "ci_lower", "min": 1}]), run_of([result("a", 4)]))
    assert gate(one, "ci_lower").outcome == "undetermined" and one.exit_code == 2


def test_regression_gate_pairs_by_id_and_tests_the_drop_beyond_delta():
    base = [result(str(i), 4) for i in range(12)]
    same = decide(gate_config([{"kind": "regression"}]), run_of([result(str(i), 4) for i in range(12)], base))
    assert gate(same, "regression").outcome == "pass" and gate(same, "regression").observed == pytest.approx(1.0)
    worse = run_of([result(str(i), 3) for i in range(12)] + [result("new", 5)], base)
    failed = gate(decide(gate_config([{"kind": "regression", "max_drop": 0.5}]), worse), "regression")
    assert failed.outcome == "fail" and failed.details["n_pairs"] == 12 and failed.details["n_unmatched"] == 1
    assert failed.details["mean_change"] == pytest.approx(-1.0) and failed.observed < 0.05
    within = gate(decide(gate_config([{"kind": "regression", "max_drop": 1.0}]), worse), "regression")
    assert within.outcome == "pass"  # a drop of exactly delta is allowed
    few = gate(decide(gate_config([{"kind": "regression"}]), run_of([result("x", 1)], base)), "regression")
    assert few.outcome == "undetermined"


def test_sign_flip_p_is_one_sided_and_seeded():
    assert sign_flip_p([0.0] * 5, 1000, 0) == 1.0
    assert sign_flip_p([-1.0] * 10, 2000, 0) < 0.01  # 2^-10 of sign patterns are as extreme
    assert sign_flip_p([1.0] * 10, 2000, 0) > 0.99
    assert sign_flip_p([-1, 0.5, -2, 0.1], 500, 3) == sign_flip_p([-1, 0.5, -2, 0.1], 500, 3)


def test_review_gate_reuses_the_meta_review_flags():
    results = [result("a", 4, coverage=0.2), result("b", 4), result("c", 4), result("d", 4, coverage=0.3)]
    verdict = decide(gate_config([{"kind": "review", "max_share": 0.25}]), run_of(results))
    review = gate(verdict, "review")
    assert review.outcome == "fail" and review.kind == "reliability" and review.observed == pytest.approx(0.5)
    assert review.details["flagged"] == ["a", "d"] and review.details["reasons"] == {"low_coverage": 2}
    assert verdict.status == "inconclusive" and verdict.exit_code == 2
    loose = decide(gate_config([{"kind": "review", "max_share": 0.5}]), run_of(results))
    assert loose.exit_code == 0
    strict_policy = decide(gate_config([{"kind": "review", "max_share": 0.5, "policy": {"threshold": 0.1}}]), run_of(results))
    assert gate(strict_policy, "review").observed == pytest.approx(0.5)
    no_dist = [r.model_copy(update={"distribution": None}) for r in results]
    assert gate(decide(gate_config([{"kind": "review", "max_share": 1}]), run_of(no_dist)), "review").outcome == "undetermined"


def test_coverage_gate():
    results = [result("a", 4, coverage=0.4), result("b", 2, coverage=0.8)]
    assert gate(decide(gate_config([{"kind": "coverage", "min": 0.6}]), run_of(results)), "coverage").outcome == "pass"
    verdict = decide(gate_config([{"kind": "coverage", "min": 0.7}]), run_of(results))
    assert gate(verdict, "coverage").outcome == "fail" and verdict.exit_code == 2
    no_dist = [r.model_copy(update={"distribution": None}) for r in results]
    assert gate(decide(gate_config([{"kind": "coverage", "min": 0.1}]), run_of(no_dist)), "coverage").outcome == "undetermined"


def test_completeness_items_without_a_score_make_the_run_inconclusive():
    results = [result("a", 5), result("b", None)]
    verdict = decide(gate_config([{"kind": "mean", "min": 1}]), run_of(results, expected=["a", "b", "c"]))
    complete = gate(verdict, "completeness")
    assert complete.outcome == "fail" and complete.kind == "completeness" and complete.observed == pytest.approx(1 / 3)
    assert complete.details == {"missing": ["c"], "unscored": ["b"]} and "error 1" in complete.message
    assert gate(verdict, "mean").outcome == "pass" and verdict.exit_code == 2
    tolerant = gate_config([{"kind": "mean", "min": 1}], max_unscored_share=0.7)
    assert decide(tolerant, run_of(results, expected=["a", "b", "c"])).exit_code == 0
    empty = decide(gate_config([{"kind": "mean", "min": 1}]), run_of([], expected=[]))
    assert gate(empty, "completeness").outcome == gate(empty, "mean").outcome == "undetermined" and empty.exit_code == 2


def test_reliability_failure_wins_over_a_quality_failure():
    results = [result("a", 1, coverage=0.1), result("b", 1, coverage=0.1)]
    verdict = decide(gate_config([{"kind": "mean", "min": 3}, {"kind": "coverage", "min": 0.5}]), run_of(results))
    assert gate(verdict, "mean").outcome == "fail" and verdict.status == "inconclusive" and verdict.exit_code == 2


def test_calibration_puts_scores_and_thresholds_on_the_human_scale():
    judge = [1.5, 1.6, 1.8, 2.0, 2.1, 2.3, 2.4, 2.6, 2.7, 3.0]
    human = [1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5, 4.8, 5]
    calibration = fit_calibration(judge, human, dimension="quality", method="linear")
    results = [result(str(i), s) for i, s in enumerate([2.6, 2.7, 3.0])]
    raw = decide(gate_config([{"kind": "mean", "min": 4.0}]), run_of(results))
    calibrated = decide(gate_config([{"kind": "mean", "min": 4.0}]), run_of(results, calibration=calibration))
    assert raw.exit_code == 1 and calibrated.exit_code == 0
    assert gate(calibrated, "mean").observed == pytest.approx(float(calibration.apply_many([2.6, 2.7, 3.0]).mean()))
    assert "human scale" in gate(calibrated, "mean").message and "calibration" in calibrated.notes[0]


# -- verdict / exit code consistency over every combination -----------------------------------------

KINDS = ("quality", "reliability", "completeness")
OUTCOMES = ("pass", "fail", "undetermined")


def expected_exit(gates: list[tuple[str, str]]) -> int:
    if any(o == "undetermined" or (o == "fail" and k != "quality") for k, o in gates):
        return 2
    return 1 if any(o == "fail" for _, o in gates) else 0


def synthetic_verdict(combo: tuple[tuple[str, str], ...]) -> Verdict:
    gates = [
        GateResult(name=f"g{i} <&\"|>", check="mean", kind=k, criterion="quality", outcome=o, observed=0.5, threshold=0.6, op=">=", message=f"m{i} | x")
        for i, (k, o) in enumerate(combo)
    ]
    return Verdict(gates=gates)


def test_exit_code_and_every_rendering_agree_for_every_outcome_combination():
    states = list(itertools.product(KINDS, OUTCOMES))
    combos = [c for n in (1, 2, 3) for c in itertools.product(states, repeat=n)]
    assert len(combos) == 9 + 81 + 729
    words = {0: "PASS", 1: "FAIL", 2: "INCONCLUSIVE"}
    for combo in combos:
        verdict = synthetic_verdict(combo)
        code = expected_exit(list(combo))
        assert verdict.exit_code == code, combo
        assert (verdict.status == "pass") == (code == 0) and (verdict.status == "fail") == (code == 1)
        data = json.loads(render_json(verdict))
        assert data["exit_code"] == code and data["status"] == verdict.status
        assert Verdict.model_validate(data).exit_code == code  # the JSON alone re-derives the same code
        assert render_text(verdict).splitlines()[0].startswith(f"judgesdk gate: {words[code]}:")
        assert f"(exit {code})" in render_text(verdict).splitlines()[0]
        assert render_markdown(verdict).splitlines()[0].endswith(words[code])
        suite = ET.fromstring(render_junit(verdict)).find("testsuite")
        props = {p.get("name"): p.get("value") for p in suite.iter("property")}
        assert props["exit_code"] == str(code) and props["status"] == verdict.status
        n_fail = sum(o == "fail" for _, o in combo)
        n_undetermined = sum(o == "undetermined" for _, o in combo)
        assert (int(suite.get("failures")), int(suite.get("errors"))) == (n_fail, n_undetermined)
        assert (code == 0) == (n_fail + n_undetermined == 0)  # a pass verdict has no failing testcase, and vice versa


# -- renderings parsed back --------------------------------------------------------------------------


def mixed_verdict() -> Verdict:
    results = [result("a", 4, coverage=0.9), result("b", 2, coverage=0.2), result("c", 5)]
    gates = [{"kind": "mean", "min": 3.8}, {"kind": "coverage", "min": 0.8}, {"kind": "pass_rate", "item_min": 3, "min": 0.5, "name": "most pass"}]
    return decide(gate_config(gates), run_of(results))


def test_junit_has_one_testcase_per_gate_with_failures_as_failure_elements():
    verdict = mixed_verdict()
    root = ET.fromstring(render_junit(verdict))
    cases = root.find("testsuite").findall("testcase")
    assert [c.get("name") for c in cases] == [g.name for g in verdict.gates]
    by_name = {c.get("name"): c for c in cases}
    assert by_name["quality mean"].find("failure") is not None and by_name["quality mean"].get("classname") == "judgesdk.gate.quality"
    assert by_name["most pass"].find("failure") is None and by_name["most pass"].find("error") is None
    assert "observed" in by_name["quality mean"].find("failure").text


def test_markdown_table_has_a_row_per_gate_and_the_usage(tmp_path):
    verdict = mixed_verdict()
    text = render_markdown(verdict)
    rows = [line for line in text.splitlines() if line.startswith("| ") and not line.startswith("| result") and "---" not in line]
    assert len(rows) == len(verdict.gates)
    assert all(len(re.split(r"(?<!\\)\|", row)) == 9 for row in rows)  # 7 cells: escaped pipes do not split them
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n")
    write_reports(verdict, junit=tmp_path / "out" / "j.xml", markdown=tmp_path / "m.md", env={"GITHUB_STEP_SUMMARY": str(summary)})
    assert summary.read_text().startswith("earlier step\n## judgesdk gate")  # appended, as GitHub expects
    assert (tmp_path / "m.md").read_text() == text and ET.parse(tmp_path / "out" / "j.xml").getroot().tag == "testsuites"


def test_json_round_trips():
    verdict = mixed_verdict()
    again = Verdict.model_validate_json(render_json(verdict))
    assert again.gates == verdict.gates and again.status == verdict.status == "inconclusive"


# -- collect: judging with a scripted provider, resuming, reading results ---------------------------


def test_judging_writes_results_as_they_finish_and_resumes(tmp_path):
    outputs = {"a": "answer Q4", "b": "answer Q5", "c": "answer Q3"}
    config = judged_config(tmp_path, outputs, [{"kind": "mean", "min": 3.5}])
    provider = ScriptedProvider(scripted_rule)
    verdict = evaluate_gates(config, providers=[provider])
    assert verdict.exit_code == 0 and gate(verdict, "mean").observed == pytest.approx(4.0) and len(provider.calls) == 3
    lines = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert sorted(r["id"] for r in lines) == ["a", "b", "c"] and all(r["criterion"] == "quality" for r in lines)
    write_items(tmp_path / "items.jsonl", {**outputs, "d": "answer Q1"})
    again = evaluate_gates(config, providers=[provider])
    assert len(provider.calls) == 4  # only the new item was judged
    assert gate(again, "mean").observed == pytest.approx(13 / 4) and again.exit_code == 1
    assert len((tmp_path / "results.jsonl").read_text().splitlines()) == 4


def test_a_failed_item_makes_the_run_incomplete(tmp_path):
    config = judged_config(tmp_path, {"a": "answer Q4", "b": "ERR"}, [{"kind": "mean", "min": 1}])
    verdict = evaluate_gates(config, providers=[ScriptedProvider(scripted_rule)])
    assert gate(verdict, "completeness").outcome == "fail" and verdict.exit_code == 2


def test_read_mode_gates_a_results_file_and_rebuilds_distributions(tmp_path):
    config = judged_config(tmp_path, {"a": "answer Q4 C30", "b": "answer Q5"}, [{"kind": "coverage", "min": 0.5}, {"kind": "review", "max_share": 0.4}])
    fresh = evaluate_gates(config, providers=[ScriptedProvider(scripted_rule)])
    copy = tmp_path / "copy.jsonl"
    copy.write_text((tmp_path / "results.jsonl").read_text() + '{"id": "cut", "sc')  # a line cut by a crash
    with pytest.raises(InputError, match=r"copy\.jsonl:3: the last line is cut"):  # refused, never dropped unsaid (issue 28)
        evaluate_gates(config, results=copy)
    copy.write_text((tmp_path / "results.jsonl").read_text())
    read = evaluate_gates(config, results=copy)
    assert [g.model_dump() for g in read.gates] == [g.model_dump() for g in fresh.gates]
    assert gate(read, "coverage").observed == pytest.approx(0.65) and gate(read, "review").observed == pytest.approx(0.5)
    minimal = tmp_path / "minimal.jsonl"
    minimal.write_text('{"id": "x", "score": 4}\n{"id": "y", "score": null}\n')
    verdict = evaluate_gates(gate_config([{"kind": "mean", "min": 3}]), results=minimal)
    assert gate(verdict, "mean").observed == 4 and gate(verdict, "completeness").observed == 0.5


# -- the command line ------------------------------------------------------------------------------


def cli_config(tmp_path: Path, gates: str) -> Path:
    path = tmp_path / "gate.toml"
    path.write_text('[[criteria]]\nname = "quality"\n' + gates)
    return path


@pytest.mark.parametrize(
    "scores,expected,word",
    [({"a": 4, "b": 5}, 0, "PASS"), ({"a": 2, "b": 3}, 1, "FAIL"), ({"a": 4, "b": None}, 2, "INCONCLUSIVE")],
)
def test_cli_exit_codes_match_the_printed_verdict(tmp_path, capsys, scores, expected, word):
    config = cli_config(tmp_path, '[[gates]]\nkind = "mean"\ncriterion = "quality"\nmin = 3.5\n')
    results = results_file(tmp_path / "r.jsonl", scores)
    junit, markdown = tmp_path / "gate.xml", tmp_path / "gate.md"
    code = run_cli(["gate", "--config", str(config), "--results", str(results), "--junit", str(junit), "--markdown", str(markdown)])
    out = capsys.readouterr().out
    assert code == expected and out.startswith(f"judgesdk gate: {word}")
    props = {p.get("name"): p.get("value") for p in ET.parse(junit).iter("property")}
    assert props["exit_code"] == str(expected) and word in markdown.read_text().splitlines()[0]
    assert run_cli(["gate", "--config", str(config), "--results", str(results), "--json"]) == expected
    assert json.loads(capsys.readouterr().out)["exit_code"] == expected


def test_cli_usage_and_config_errors_exit_3(tmp_path, capsys):
    assert run_cli(["gate", "--config", str(tmp_path / "none.toml")]) == 3
    config = cli_config(tmp_path, '[[gates]]\nkind = "mean"\ncriterion = "other"\nmin = 1\n')
    assert run_cli(["gate", "--config", str(config), "--results", str(tmp_path / "r.jsonl")]) == 3
    assert "not among [[criteria]]" in capsys.readouterr().err
    config = cli_config(tmp_path, '[[gates]]\nkind = "mean"\ncriterion = "quality"\nmin = 1\n')
    assert run_cli(["gate", "--config", str(config), "--results", str(tmp_path / "missing.jsonl")]) == 3
    (tmp_path / "bad.jsonl").write_text("not json\nnor this\n")
    assert run_cli(["gate", "--config", str(config), "--results", str(tmp_path / "bad.jsonl")]) == 3
    assert "no readable JSON line" in capsys.readouterr().err
    (tmp_path / "bad.jsonl").write_text('{"id": 1, "score": 4}\n[1, 2]\n')
    assert run_cli(["gate", "--config", str(config), "--results", str(tmp_path / "bad.jsonl")]) == 3
    assert "bad.jsonl:2: each result line must be an object" in capsys.readouterr().err


def test_cli_regression_gate_with_a_baseline(tmp_path, capsys):
    config = cli_config(tmp_path, '[[gates]]\nkind = "regression"\ncriterion = "quality"\nmax_drop = 0.25\n')
    base = results_file(tmp_path / "base.jsonl", {str(i): 4 for i in range(10)})
    worse = results_file(tmp_path / "worse.jsonl", {str(i): 3 for i in range(10)})
    assert run_cli(["gate", "--config", str(config), "--results", str(worse), "--baseline", str(base)]) == 1
    assert run_cli(["gate", "--config", str(config), "--results", str(base), "--baseline", str(base)]) == 0
    assert "regression" in capsys.readouterr().out


# -- end to end on the embedded model ---------------------------------------------------------------


@pytest.mark.integration
def test_gate_end_to_end_on_the_embedded_model(gguf_path, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("JUDGESDK_CACHE_DIR", str(tmp_path / "cache"))
    for var in ("JUDGESDK_PROVIDER", "JUDGESDK_NO_CACHE", "JUDGESDK_METHOD", "GITHUB_STEP_SUMMARY"):
        monkeypatch.delenv(var, raising=False)
    lines = (EXAMPLES / "summaries.jsonl").read_text().splitlines()
    (tmp_path / "items.jsonl").write_text("\n".join(lines[:3]) + "\n")
    config = tmp_path / "gate.toml"
    config.write_text(
        f'judge = "{EXAMPLES / "local.toml"}"\ninput = "items.jsonl"\nresults = "results.jsonl"\n'
        '[budget]\nmax_tokens = 100000\n'
        '[[criteria]]\nname = "consistency"\ndefinition = "The summary states only facts supported by the source."\n'
        '[[gates]]\nkind = "mean"\ncriterion = "consistency"\nmin = 1.0\n'
        '[[gates]]\nkind = "ci_lower"\ncriterion = "consistency"\nmin = 1.0\nn_resamples = 500\n'
        '[[gates]]\nkind = "review"\ncriterion = "consistency"\nmax_share = 0.5\n'
    )  # local.toml's default method (auto) gives fused scores: no label distribution, a review flag instead
    junit = tmp_path / "gate.xml"
    code = run_cli(["gate", "--config", str(config), "--junit", str(junit)])
    out = capsys.readouterr().out
    assert code == 0 and out.startswith("judgesdk gate: PASS"), out
    results = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert len(results) == 3 and all(r["method"] == "fused/source" and r["provider"] == "local" for r in results)
    assert len(ET.parse(junit).getroot().find("testsuite").findall("testcase")) == 6  # completeness, one method, budget, 3 gates
    (tmp_path / "results.jsonl").unlink()  # judge again: every answer comes from the cache
    assert run_cli(["gate", "--config", str(config), "--json"]) == 0
    verdict = json.loads(capsys.readouterr().out)
    assert verdict["usage"]["n_cached"] == 3 and verdict["budget"]["calls"] == 0 and verdict["status"] == "pass"


def test_a_results_file_cut_by_a_crash_is_resumed_cleanly(tmp_path):
    config = judged_config(tmp_path, {"a": "answer Q4", "b": "answer Q2"}, [{"kind": "mean", "min": 1}])
    evaluate_gates(config, providers=[ScriptedProvider(scripted_rule)])
    lines = (tmp_path / "results.jsonl").read_text().splitlines()
    (tmp_path / "results.jsonl").write_text(lines[0] + "\n" + lines[1][:20])  # the crash cut the second line
    verdict = evaluate_gates(config, providers=[ScriptedProvider(scripted_rule)])
    assert verdict.exit_code == 0 and gate(verdict, "mean").observed == pytest.approx(3.0)
    resumed = (tmp_path / "results.jsonl").read_text()
    assert resumed.startswith(lines[0] + "\n") and all(json.loads(line) for line in resumed.splitlines())  # whole rows only
    read = evaluate_gates(config, results=tmp_path / "results.jsonl")  # the resume dropped the cut line: the file reads whole
    assert read.exit_code == 0 and not any("unreadable" in note for note in read.notes)


# -- one method per criterion (issue 11: a fallback can mix the fused human scale with geval labels) --------


def test_scores_from_two_method_families_make_the_verdict_inconclusive_unless_allowed():
    fused = [r.model_copy(update={"method": "fused/source"}) for r in (result("a", 4.0), result("b", 3.5))]
    mixed = run_of([*fused, result("c", 2.0)])
    verdict = decide(gate_config([{"kind": "mean", "min": 1.0}]), mixed)
    assert verdict.status == "inconclusive" and verdict.exit_code == 2
    assert "several methods (fused 2, geval 1)" in gate(verdict, "methods").message
    allowed = decide(gate_config([{"kind": "mean", "min": 1.0}], allow_mixed_methods=True), mixed)
    assert allowed.status == "pass"
    one = decide(gate_config([{"kind": "mean", "min": 1.0}]), run_of(fused))
    assert gate(one, "methods").outcome == "pass" and one.status == "pass"
