"""Calibration: pool-adjacent-violators against SciPy, isotonic and linear fits with held-out reports,
refusals, save/load, joining judge results to human labels, the CLI, and a gate that applies a calibration."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import need

from judgesdk.core.errors import ConfigError, InputError
from judgesdk.gate import evaluate_gates, load_gate_config
from judgesdk.meta.calibration import Calibration, default_path, fit_calibration
from judgesdk.records.labels import load_labelled
from judgesdk.stats.isotonic import pava

from support.gates import results_file, run_cli

# Judge scores sit low and compressed (as 001 §4.2.5 finds); humans use the whole 1-5 scale.
JUDGE = [1.4, 1.5, 1.7, 1.8, 2.0, 2.1, 2.2, 2.4, 2.5, 2.7, 2.8, 3.0]
HUMAN = [1.0, 1.0, 1.5, 2.0, 2.5, 2.5, 3.0, 3.5, 4.0, 4.0, 4.5, 5.0]


def test_pava_matches_scipy_isotonic_regression():
    scipy_iso = need("scipy.optimize").isotonic_regression
    rng = np.random.default_rng(1)
    for _ in range(20):
        y = rng.normal(size=25).cumsum() * rng.choice([-1, 1])
        w = rng.uniform(0.5, 2.0, size=25)
        np.testing.assert_allclose(pava(y, w), scipy_iso(y, weights=w).x, atol=1e-12)
    assert pava([3, 1, 2]).tolist() == [2.0, 2.0, 2.0]


def test_isotonic_fit_is_monotone_on_the_human_range_and_reported_on_held_out_items():
    cal = fit_calibration(JUDGE, HUMAN, dimension="consistency", criterion="consistency")
    grid = np.linspace(0, 6, 200)
    mapped = cal.apply_many(grid)
    assert np.all(np.diff(mapped) >= 0) and mapped.min() == 1.0 and mapped.max() == 5.0
    assert cal.apply(1.4) == pytest.approx(1.0) and cal.apply(3.0) == pytest.approx(5.0)
    fit = cal.fit
    assert fit.n_items == 12 and fit.folds == 5 and fit.mae < fit.raw_mae  # calibration moved scores onto the scale
    assert fit.spearman is not None and fit.spearman > 0.95 and fit.raw_spearman > 0.99
    again = fit_calibration(JUDGE, HUMAN, dimension="consistency", criterion="consistency")
    assert again == cal  # seeded folds


def test_linear_fit_recovers_a_line_and_is_clamped_to_the_labels_range():
    x = np.linspace(1, 3, 10)
    cal = fit_calibration(x, 2 * x - 1, dimension="d", method="linear")
    assert cal.slope == pytest.approx(2.0) and cal.intercept == pytest.approx(-1.0)
    assert cal.fit.mae < 0.1 and cal.fit.pearson > 0.99  # held-out ends are clamped to the training labels
    assert cal.apply(10.0) == pytest.approx(5.0) and cal.apply(-10.0) == pytest.approx(1.0)


def test_anti_correlated_judge_gets_a_note():
    cal = fit_calibration(JUDGE, HUMAN[::-1], dimension="d")
    assert any("no monotone map can fix" in note for note in cal.fit.notes)


@pytest.mark.parametrize(
    "scores,labels,kwargs,message",
    [
        (JUDGE[:6], HUMAN[:6], {}, "at least 10 labelled items, got 6"),
        (JUDGE, [3.0] * 12, {}, "every human label is 3"),
        ([2.0] * 12, HUMAN, {}, "every judge score is 2"),
        (JUDGE, HUMAN[:-1], {}, "one human label per judge score"),
        (JUDGE[:-1] + [float("nan")], HUMAN, {}, "finite"),
        (JUDGE, HUMAN, {"method": "spline"}, "isotonic"),
        (JUDGE, HUMAN, {"min_items": 2}, "min_items"),
    ],
)
def test_refusals_say_what_to_fix(scores, labels, kwargs, message):
    with pytest.raises(InputError, match=message):
        fit_calibration(scores, labels, dimension="d", **kwargs)


def test_a_lower_minimum_is_allowed_knowingly():
    assert fit_calibration(JUDGE[:6], HUMAN[:6], dimension="d", min_items=5).fit.n_items == 6


def test_save_load_and_default_path(tmp_path):
    cal = fit_calibration(JUDGE, HUMAN, dimension="consistency")
    path = default_path(tmp_path / "local.toml", "consistency")
    assert path == tmp_path / "local.consistency.calibration.json"
    cal.save(path)
    assert Calibration.load(path) == cal and json.loads(path.read_text())["format"] == "judgesdk.calibration/1"
    with pytest.raises(ConfigError, match="does not exist"):
        Calibration.load(tmp_path / "none.json")
    (tmp_path / "bad.json").write_text('{"method": "isotonic"}')
    with pytest.raises(ConfigError, match="not a judgesdk calibration"):
        Calibration.load(tmp_path / "bad.json")


def write_labelled(tmp_path: Path) -> tuple[Path, Path]:
    judge, human = tmp_path / "judge.jsonl", tmp_path / "human.jsonl"
    judge_rows = [{"id": f"d{i}:s", "doc_id": f"d{i}", "system_id": "s", "score": s, "criterion": "consistency"} for i, s in enumerate(JUDGE)]
    judge_rows += [{"id": "x", "score": None, "criterion": "consistency"}, {"id": "y", "score": 2.0, "criterion": "consistency"}]
    human_rows = [{"doc_id": f"d{i}", "system_id": "s", "scores": {"consistency": h}} for i, h in enumerate(HUMAN[:-1])]
    human_rows.append({"id": "d11:s", "consistency": HUMAN[-1]})  # joined on id when doc/system ids are absent
    judge.write_text("".join(json.dumps(r) + "\n" for r in judge_rows))
    human.write_text("".join(json.dumps(r) + "\n" for r in human_rows))
    return judge, human


def test_load_labelled_joins_on_doc_system_or_id(tmp_path):
    judge, human = write_labelled(tmp_path)
    data = load_labelled(judge, human, "consistency")
    assert data.scores == JUDGE and data.labels == HUMAN and data.n_unscored == 1 and data.n_unmatched == 1
    with pytest.raises(InputError, match="no label for dimension 'fluency'"):
        load_labelled(judge, human, "fluency")
    with open(judge, "a") as fh:
        fh.write(json.dumps({"id": "z", "score": 3, "criterion": "coherence"}) + "\n")
    with pytest.raises(InputError, match="several criteria"):
        load_labelled(judge, human, "consistency")
    assert len(load_labelled(judge, human, "consistency", criterion="consistency").scores) == 12


def test_calibrate_cli_writes_the_calibration(tmp_path, capsys):
    judge, human = write_labelled(tmp_path)
    out = tmp_path / "cal.json"
    argv = ["calibrate", "--judge-results", str(judge), "--human", str(human), "--dimension", "consistency"]
    assert run_cli([*argv, "--method", "linear", "-o", str(out)]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["n_items"] == 12 and Calibration.load(out).method == "linear"
    assert run_cli([*argv, "--config", str(tmp_path / "local.toml")]) == 0
    assert (tmp_path / "local.consistency.calibration.json").is_file()
    assert run_cli(argv) == 3  # nowhere to save
    assert run_cli([*argv, "--min-items", "20", "-o", str(out)]) == 3
    assert "at least 20 labelled items" in capsys.readouterr().err


def test_a_gate_naming_a_calibration_thresholds_on_the_human_scale(tmp_path):
    fit_calibration(JUDGE, HUMAN, dimension="consistency").save(tmp_path / "cal.json")
    results = results_file(tmp_path / "r.jsonl", {"a": 2.7, "b": 2.8, "c": 3.0})
    for calibration, expected in ((None, 1), ("cal.json", 0)):
        path = tmp_path / "gate.toml"
        path.write_text(
            '[[criteria]]\nname = "quality"\n' + (f'calibration = "{calibration}"\n' if calibration else "")
            + '[[gates]]\nkind = "mean"\ncriterion = "quality"\nmin = 4.0\n'
        )
        verdict = evaluate_gates(load_gate_config(path), results=results)
        assert verdict.exit_code == expected
