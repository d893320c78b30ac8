"""Commands that compare or decide on results files say so when nothing could be compared, and never drop an
unreadable line without a word (issue 28, item 4): ``diff``, ``gate --results`` (and its baseline, and the
``provenance`` gate), ``calibrate`` and ``meta-eval``."""

from __future__ import annotations

import json
from pathlib import Path

from judgesdk.cli.app import main
from judgesdk.core.provenance import Provenance


def _prov(served_model: str = "m-2024-01") -> dict:
    return Provenance(sdk="0.1.0", provider="openai", model="m", method="geval", options="x", served={"model": served_model}).model_dump(mode="json")


def _row(item: str, score: float = 3.0, criterion: str = "quality", **extra) -> dict:
    return {
        "id": item, "doc_id": item, "system_id": "s", "criterion": criterion, "method": "geval", "score": score, "status": "ok",
        "provenance": _prov(), "format": "judgesdk.results/1", **extra,
    }  # fmt: skip


def _write(path: Path, rows: list[dict], tail: str = "") -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows) + tail)
    return path


def _run(argv: list[str], capsys) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def _one_line(text: str) -> str:
    lines = [line for line in text.splitlines() if line.strip()]
    assert len(lines) == 1, text
    return lines[0]


# -- diff -----------------------------------------------------------------------------------------------


def test_diff_of_two_files_of_different_criteria_says_nothing_was_compared_and_exits_2(tmp_path, capsys):
    old = _write(tmp_path / "old.jsonl", [_row(i) for i in "abc"])
    new = _write(tmp_path / "new.jsonl", [_row(i, criterion="fluency") for i in "abc"])
    code, _, err = _run(["diff", str(old), str(new)], capsys)
    line = _one_line(err)
    assert code == 2 and "nothing to compare" in line and "quality" in line and "fluency" in line
    code, out, err = _run(["diff", str(old), str(new), "--json"], capsys)
    assert code == 2 and json.loads(out)["paired"] == 0 and "nothing to compare" in _one_line(err)


def test_diff_against_an_empty_new_file_exits_2(tmp_path, capsys):
    old = _write(tmp_path / "old.jsonl", [_row(i) for i in "abc"])
    (tmp_path / "new.jsonl").write_text("")
    code, _, err = _run(["diff", str(old), str(tmp_path / "new.jsonl")], capsys)
    line = _one_line(err)
    assert code == 2 and "nothing to compare" in line and "new.jsonl holds no result rows" in line


def test_diff_with_a_criterion_neither_file_holds_exits_2(tmp_path, capsys):
    old = _write(tmp_path / "old.jsonl", [_row(i) for i in "abc"])
    code, _, err = _run(["diff", str(old), str(old), "--criterion", "fluency"], capsys)
    assert code == 2 and "fluency" in _one_line(err)


def test_diff_refuses_a_file_whose_last_line_is_cut(tmp_path, capsys):
    old = _write(tmp_path / "old.jsonl", [_row(i) for i in "abc"])
    new = _write(tmp_path / "new.jsonl", [_row(i) for i in "ab"], tail=json.dumps(_row("c"))[:25])
    code, out, err = _run(["diff", str(old), str(new)], capsys)
    assert code == 3 and "new.jsonl:3" in _one_line(err) and "cut" in err and out == ""


def test_diff_refuses_a_file_with_a_cut_middle_line(tmp_path, capsys):
    old = _write(tmp_path / "old.jsonl", [_row("a")], tail=json.dumps(_row("b"))[:25] + "\n" + json.dumps(_row("c")) + "\n")
    new = _write(tmp_path / "new.jsonl", [_row(i) for i in "abc"])
    code, out, err = _run(["diff", str(old), str(new)], capsys)
    assert code == 3 and "old.jsonl:2" in _one_line(err) and out == ""


def test_diff_still_compares_files_that_share_items(tmp_path, capsys):
    old = _write(tmp_path / "old.jsonl", [_row(i) for i in "abc"])
    new = _write(tmp_path / "new.jsonl", [_row("a"), _row("b", 4.0), _row("d")])
    code, out, err = _run(["diff", str(old), str(new)], capsys)
    assert code == 1 and out.startswith("2 items in both files (1 only in") and err == ""


# -- gate -----------------------------------------------------------------------------------------------


def _gate_config(tmp_path: Path, kind: str, extra: str = "") -> Path:
    path = tmp_path / "gate.toml"
    path.write_text(f'[[criteria]]\nname = "quality"\n\n[[gates]]\nkind = "{kind}"\ncriterion = "quality"\n{extra}')
    return path


def test_gate_results_with_a_cut_middle_line_exits_3_naming_the_line(tmp_path, capsys):
    config = _gate_config(tmp_path, "mean", "min = 1\n")
    results = _write(tmp_path / "r.jsonl", [_row("a")], tail="{\"id\": \"b\", \"sco\n" + json.dumps(_row("c")) + "\n")
    code, _, err = _run(["gate", "--config", str(config), "--results", str(results)], capsys)
    assert code == 3 and "r.jsonl:2" in _one_line(err)


def test_gate_baseline_with_a_cut_last_line_exits_3(tmp_path, capsys):
    config = _gate_config(tmp_path, "regression", "max_drop = 0.25\n")
    results = _write(tmp_path / "r.jsonl", [_row(i) for i in "abc"])
    base = _write(tmp_path / "base.jsonl", [_row(i) for i in "ab"], tail=json.dumps(_row("c"))[:25])
    code, _, err = _run(["gate", "--config", str(config), "--results", str(results), "--baseline", str(base)], capsys)
    assert code == 3 and "base.jsonl:3" in _one_line(err)


def test_the_provenance_gate_does_not_pass_on_runs_with_no_item_in_common(tmp_path, capsys):
    config = _gate_config(tmp_path, "provenance")
    results = _write(tmp_path / "r.jsonl", [_row(i) for i in "abc"])
    base = _write(tmp_path / "base.jsonl", [_row(i) for i in "xyz"])
    code, out, _ = _run(["gate", "--config", str(config), "--results", str(results), "--baseline", str(base), "--json"], capsys)
    verdict = json.loads(out)
    check = next(g for g in verdict["gates"] if g["check"] == "provenance")
    assert code == 2 and check["outcome"] == "undetermined" and "no item in common" in check["message"]
    same = _write(tmp_path / "same.jsonl", [_row(i) for i in "abz"])  # shares a and b: compared, and the judge is the same
    assert _run(["gate", "--config", str(config), "--results", str(results), "--baseline", str(same)], capsys)[0] == 0


# -- calibrate and meta-eval ------------------------------------------------------------------------------


def test_calibrate_refuses_judge_results_with_a_cut_middle_line(tmp_path, capsys):
    rows = [_row(f"d{i}", float(i % 5 + 1), criterion="c") for i in range(12)]  # 11 without the cut one: enough to fit
    human = tmp_path / "human.jsonl"
    human.write_text("".join(json.dumps({"doc_id": f"d{i}", "system_id": "s", "c": float(i % 5 + 1)}) + "\n" for i in range(12)))
    results = _write(tmp_path / "r.jsonl", rows[:4], tail='{"id": "d4", "sco\n' + "".join(json.dumps(r) + "\n" for r in rows[5:]))
    out = tmp_path / "cal.json"
    code, _, err = _run(["calibrate", "--judge-results", str(results), "--human", str(human), "--dimension", "c", "-o", str(out)], capsys)
    assert code == 3 and "r.jsonl:5" in _one_line(err) and not out.exists()


def test_meta_eval_refuses_predictions_with_a_cut_middle_line(tmp_path, capsys):
    rows = [_row(f"d{i}", float(i % 5 + 1), criterion="c") for i in range(6)]
    human = tmp_path / "human.jsonl"
    human.write_text("".join(json.dumps({"doc_id": f"d{i}", "system_id": "s", "scores": {"c": float(i % 5 + 1)}}) + "\n" for i in range(6)))
    preds = _write(tmp_path / "p.jsonl", rows[:2], tail='{"id": "d2", "sco\n' + "".join(json.dumps(r) + "\n" for r in rows[3:]))
    code, _, err = _run(["meta-eval", "--human", str(human), "--predictions", str(preds), "--dimension", "c"], capsys)
    assert code == 3 and "p.jsonl:3" in _one_line(err)


def test_card_refuses_results_with_a_cut_middle_line(tmp_path, capsys):
    cells = [(f"d{i}", f"s{j}", float((i + j) % 5 + 1)) for i in range(4) for j in range(3)]
    rows = [_row(f"{d}:{s}", v, criterion="c", doc_id=d, system_id=s) for d, s, v in cells]
    human = tmp_path / "human.jsonl"
    human.write_text("".join(json.dumps({"doc_id": d, "system_id": s, "source": "src", "output": "out", "scores": {"c": v}}) + "\n" for d, s, v in cells))
    results = _write(tmp_path / "r.jsonl", rows[:5], tail='{"id": "x", "sc\n' + "".join(json.dumps(r) + "\n" for r in rows[6:]))
    argv = ["card", "--human", str(human), "--criteria", "c", "--card", str(tmp_path / "card"), "--bootstrap", "50", "--quiet"]
    code, _, err = _run([*argv, "--results", str(results)], capsys)
    assert code == 3 and "r.jsonl:6" in _one_line(err) and not (tmp_path / "card.md").exists()
    assert _run([*argv, "--results", str(_write(tmp_path / "whole.jsonl", rows))], capsys)[0] == 0
