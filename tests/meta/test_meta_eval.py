"""``meta-eval`` end to end on small files written here (and on SummEval when ../shared/data is present)."""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

import pytest

from judgesdk.cli.meta_eval import register
from judgesdk.meta.datasets import shared_data_dir


def run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    args = parser.parse_args(["meta-eval", *argv])
    return args.func(args)


def run_json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict:
    assert run([*argv, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def human_rows(n_docs: int, n_systems: int, seed: int = 0) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    for d in range(n_docs):
        for s in range(n_systems):
            ann = [min(5, max(1, round(1 + s * 0.4 + rng.gauss(0, 1.2)))) for _ in range(3)]
            rows.append(
                {"dataset": "toy", "doc_id": f"doc{d}", "system_id": f"sys{s}", "output": "word " * rng.randint(5, 40),
                 "scores": {"quality": sum(ann) / 3}, "annotator_scores": {"quality": ann}}
            )
    return rows


@pytest.fixture()
def human(tmp_path: Path) -> tuple[Path, list[dict]]:
    rows = human_rows(40, 8)
    return write_jsonl(tmp_path / "human.jsonl", rows), rows


def test_predictions_equal_to_human_scores_give_one_at_every_level(human, tmp_path, capsys) -> None:
    path, rows = human
    preds = write_jsonl(tmp_path / "p.jsonl", [{"doc_id": r["doc_id"], "system_id": r["system_id"], "score": r["scores"]["quality"]} for r in rows])
    out = run_json(["--human", str(path), "--predictions", str(preds), "--dimension", "quality", "--level", "all"], capsys)
    values = {(lv["correlation"]["level"], lv["correlation"]["method"]): lv["correlation"]["value"] for lv in out["levels"]}
    assert set(values) == {(lv, m) for lv in ("sample", "summary", "system", "turn") for m in ("spearman", "pearson", "kendall")}
    assert all(v == pytest.approx(1.0) for v in values.values()), values
    assert out["counts"]["join"]["n_joined"] == 320
    assert all(g["value"] == pytest.approx(1.0) for g in out["per_system"][0]["systems"])
    assert out["correct_preferences"]["all"]["n_correct"] == out["correct_preferences"]["all"]["n_pairs"] == 28
    assert out["scale"] == [1, 2, 3, 4, 5] and "inferred" in out["scale_source"]


def test_shuffled_predictions_give_about_zero_with_a_ci_containing_zero(human, tmp_path, capsys) -> None:
    path, rows = human
    scores = [r["scores"]["quality"] for r in rows]
    random.Random(1).shuffle(scores)
    preds = write_jsonl(tmp_path / "p.jsonl", [{"doc_id": r["doc_id"], "system_id": r["system_id"], "score": s} for r, s in zip(rows, scores)])
    out = run_json(["--human", str(path), "--predictions", str(preds), "--dimension", "quality", "--level", "sample,summary",
                    "--bootstrap", "200"], capsys)
    for lv in out["levels"]:
        c, ci = lv["correlation"], lv["ci"]
        assert abs(c["value"]) < 0.15, c
        assert ci["low"] < 0 < ci["high"], ci
        assert ci["n_resamples"] == 200


def test_counts_joined_unmatched_unparsed_and_duplicates(human, tmp_path, capsys) -> None:
    path, rows = human
    lines = [{"doc_id": r["doc_id"], "system_id": r["system_id"], "response": f"Reasoning... Score: {round(r['scores']['quality'])}"} for r in rows[:100]]
    lines[3] = {**lines[3], "response": "I cannot judge this."}
    lines[4] = {**lines[4], "response": "Score: 9"}
    lines.append({**lines[0], "response": "Score: 1"})  # duplicate: counted, and the last line is kept
    lines.append({"doc_id": "elsewhere", "system_id": "sys0", "score": 3})
    preds = write_jsonl(tmp_path / "p.jsonl", lines)
    out = run_json(["--human", str(path), "--predictions", str(preds), "--dimension", "quality", "--level", "summary"], capsys)
    join = out["counts"]["join"]
    assert join == {"n_joined": 100, "n_unparsed": 2, "n_predictions_unmatched": 1, "n_human_without_prediction": 220,
                    "n_duplicate_predictions": 1}
    assert out["counts"]["out_of_range"] == 1 and out["counts"]["status"]["unparsed"] == 1
    assert out["levels"][0]["correlation"]["n_items"] == 98 and out["levels"][0]["correlation"]["n_unparsed"] == 2
    assert out["levels"][0]["correlation"]["value"] > 0.9


def test_mcq_letters_and_r_i_with_a_second_file(human, tmp_path, capsys) -> None:
    path, rows = human
    rts = write_jsonl(tmp_path / "rts.jsonl", [{"doc_id": r["doc_id"], "system_id": r["system_id"], "response": f"Final score: {round(r['scores']['quality'])}"} for r in rows])
    mcq = write_jsonl(tmp_path / "mcq.jsonl", [{"doc_id": r["doc_id"], "system_id": r["system_id"], "response": "Answer: " + "ABCDE"[round(r["scores"]["quality"]) - 1]} for r in rows])
    out = run_json(["--human", str(path), "--predictions", str(mcq), "--parse", "mcq", "--dimension", "quality",
                    "--predictions-b", str(rts), "--parse-b", "rts", "--method", "spearman", "--tolerance", "0.5"], capsys)
    assert out["counts"]["join"]["n_unparsed"] == 0
    agreement = out["agreement"][0]
    assert all(g["value"] == pytest.approx(1.0) for g in agreement["agreement"])  # same rounded scores
    assert agreement["needs_human"] == []


def test_pairwise_verdicts_give_positional_bias(human, tmp_path, capsys) -> None:
    path, rows = human
    preds = write_jsonl(tmp_path / "p.jsonl", [{"doc_id": r["doc_id"], "system_id": r["system_id"], "score": r["scores"]["quality"]} for r in rows])
    verdicts = [{"doc_id": f"doc{d}", "first": a, "second": b, "response": "A"} for d in range(5) for a, b in (("sys0", "sys1"), ("sys1", "sys0"))]
    pw = write_jsonl(tmp_path / "h2h.jsonl", verdicts)
    out = run_json(["--human", str(path), "--predictions", str(preds), "--dimension", "quality", "--pairwise", str(pw), "--level", "summary"], capsys)
    assert out["positional"]["first_win_rate"] == 1.0 and out["positional"]["flip_rate"] == 1.0


def test_table_output_names_the_definitions(human, tmp_path, capsys) -> None:
    path, rows = human
    preds = write_jsonl(tmp_path / "p.jsonl", [{"doc_id": r["doc_id"], "system_id": r["system_id"], "score": r["scores"]["quality"]} for r in rows])
    assert run(["--human", str(path), "--predictions", str(preds), "--dimension", "quality", "--convention", "004"]) == 0
    text = capsys.readouterr().out
    assert "averaged over documents" in text and "pooled" in text and "per-system mean" in text
    assert "convention 004" in text and "meta-correlation M" in text and "#CP all pairs: 28/28" in text


@pytest.mark.parametrize(
    "lines,extra,message",
    [
        ([{"doc_id": "doc0", "score": 3}], [], "system_id"),
        (["not json"], [], "not valid JSON"),
        ([{"doc_id": "doc0", "system_id": "sys0", "score": "four"}], [], "score must be a finite number"),
        ([{"doc_id": "nowhere", "system_id": "sys0", "score": 3}], [], "no prediction matches"),
        ([{"doc_id": "doc0", "system_id": "sys0", "score": 3}], ["--dimension", "fluency"], "available quality"),
        ([{"doc_id": "doc0", "system_id": "sys0", "score": 3}], ["--level", "paragraph"], "unknown correlation level"),
        ([{"doc_id": "doc0", "system_id": "sys0", "score": 3}], ["--method", "cosine"], "unknown correlation method"),
        ([{"doc_id": "doc0", "system_id": "sys0", "score": 3}], ["--scale", "five"], "--scale"),
    ],
)
def test_bad_input_exits_3_with_a_message(human, tmp_path, capsys, lines, extra, message) -> None:
    path, _ = human
    preds = tmp_path / "p.jsonl"
    preds.write_text("".join((json.dumps(x) if isinstance(x, dict) else x) + "\n" for x in lines), encoding="utf-8")
    argv = ["--human", str(path), "--predictions", str(preds), "--dimension", "quality", *extra]
    if "--dimension" in extra:
        argv = ["--human", str(path), "--predictions", str(preds), *extra]
    assert run(argv) == 3
    assert message in capsys.readouterr().err


def test_missing_files_exit_3(tmp_path, capsys) -> None:
    assert run(["--human", str(tmp_path / "h.jsonl"), "--predictions", str(tmp_path / "p.jsonl"), "--dimension", "q"]) == 3
    assert "does not exist" in capsys.readouterr().err


def test_summeval_subset_of_1200_abstractive_summaries(tmp_path, capsys) -> None:
    base = shared_data_dir()
    if base is None or not (base / "summeval.jsonl").is_file():
        pytest.skip("../shared/data/summeval.jsonl not found (set JUDGESDK_SHARED_DATA to run this test)")
    human = base / "summeval.jsonl"
    rows = [json.loads(line) for line in human.read_text(encoding="utf-8").splitlines()]
    abstractive = [r for r in rows if r["system_id"] not in {"M0", "M1", "M2", "M5"}]
    preds = write_jsonl(tmp_path / "p.jsonl", [{"doc_id": r["doc_id"], "system_id": r["system_id"], "score": r["scores"]["consistency"]} for r in abstractive])
    out = run_json(["--human", str(human), "--predictions", str(preds), "--dimension", "consistency", "--method", "kendall"], capsys)
    assert out["counts"]["join"]["n_joined"] == 1200 and out["counts"]["join"]["n_human_without_prediction"] == 400
    assert out["scale_source"].startswith("preset") or "inferred" in out["scale_source"]
    assert [lv["correlation"]["value"] for lv in out["levels"]] == pytest.approx([1.0, 1.0, 1.0])
    sample = out["levels"][0]["correlation"]
    assert sample["skipped"].get("constant_human", 0) > 0  # consistency is often all 5s within a document
    assert out["correct_preferences"]["all"]["n_pairs"] == 66 and out["correct_preferences"]["challenge"]["n_pairs"] == 11
