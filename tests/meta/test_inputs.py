"""Meta-evaluation input (issue 12, item 12): flags, duplicate lines, head-to-head pairs, the challenge set,
and properties of the prediction reader over hostile lines."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from judgesdk.cli.meta_eval import register
from judgesdk.core.errors import InputError
from judgesdk.core.types import Scale
from judgesdk.meta.datasets import shared_data_dir
from judgesdk.meta.items import join
from judgesdk.meta.readers import load_predictions

# 001's challenge set (calc_pairs.py / calc_h2h_pairs.py, Table 22): consecutive by the 4-dimension average
PAIRS_001 = [("M22", "M23"), ("M23", "M17"), ("M17", "M12"), ("M12", "M13"), ("M13", "M15"), ("M15", "M14"),
             ("M14", "M8"), ("M8", "M9"), ("M9", "M10"), ("M10", "M20"), ("M20", "M11")]


def run(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    register(parser.add_subparsers())
    try:
        args = parser.parse_args(["meta-eval", *[str(a) for a in argv]])
    except SystemExit as exc:  # argparse's own usage errors exit 2
        return int(exc.code or 0)
    return args.func(args)


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


# quality: sys0 < sys1 < sys2 < sys3 on "quality" alone; "other" reverses sys1/sys2, so that by the
# average of both dimensions the order is sys0 < sys2 < sys1 < sys3
QUALITY = {"sys0": 1.0, "sys1": 2.0, "sys2": 3.0, "sys3": 4.5}
OTHER = {"sys0": 1.0, "sys1": 4.5, "sys2": 1.5, "sys3": 4.5}


@pytest.fixture()
def human(tmp_path: Path) -> tuple[Path, list[dict]]:
    rows = []
    for d in range(8):
        for s in QUALITY:
            wobble = 0.5 * ((d + int(s[-1])) % 3 - 1)
            rows.append({"dataset": "toy", "doc_id": f"doc{d}", "system_id": s, "output": "word " * (3 + d),
                         "scores": {"quality": QUALITY[s] + wobble, "other": OTHER[s] + wobble}})
    return write_jsonl(tmp_path / "human.jsonl", rows), rows


def scores(rows: list[dict], path: Path, fn=lambda r: r["scores"]["quality"]) -> Path:
    return write_jsonl(path, [{"doc_id": r["doc_id"], "system_id": r["system_id"], "score": fn(r)} for r in rows])


def base(human_path: Path, preds: Path) -> list:
    return ["--human", human_path, "--predictions", preds, "--dimension", "quality", "--level", "summary", "--method", "spearman"]


# -- flags: exit 3 with the fix, never argparse's 2 or silence -------------------------------------------------


def test_pairwise_without_predictions_exits_3_naming_the_flag(human, tmp_path, capsys) -> None:
    path, _ = human
    pw = write_jsonl(tmp_path / "pw.jsonl", [{"doc_id": "doc0", "first": "sys0", "second": "sys1", "winner": "first"}])
    assert run(["--human", path, "--pairwise", pw, "--dimension", "quality"]) == 3
    err = capsys.readouterr().err
    assert "--predictions is required" in err and "--pairwise" in err and "Traceback" not in err


def test_parse_b_without_a_second_file_exits_3(human, tmp_path, capsys) -> None:
    path, rows = human
    assert run([*base(path, scores(rows, tmp_path / "p.jsonl")), "--parse-b", "mcq"]) == 3
    assert "--parse-b says how to read --predictions-b, which is not given" in capsys.readouterr().err


@pytest.mark.parametrize("flag", ["--parse", "--parse-b"])
def test_an_unknown_parse_mode_exits_3_saying_what_each_mode_reads(flag, human, tmp_path, capsys) -> None:
    path, rows = human
    preds = scores(rows, tmp_path / "p.jsonl")
    assert run([*base(path, preds), "--predictions-b", preds, flag, "letters"]) == 3
    err = capsys.readouterr().err
    assert f"{flag} must be rts or mcq" in err and "letters A.." in err


def test_parse_modes_are_case_insensitive(human, tmp_path, capsys) -> None:
    path, rows = human
    mcq = write_jsonl(tmp_path / "mcq.jsonl", [{"doc_id": r["doc_id"], "system_id": r["system_id"],
                                                "response": "ABCDE"[min(4, round(r["scores"]["quality"]) - 1)]} for r in rows])
    assert run([*base(path, scores(rows, tmp_path / "p.jsonl")), "--predictions-b", mcq, "--parse-b", "MCQ", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["counts_b"]["join"]["n_unparsed"] == 0


def test_a_second_file_read_with_the_wrong_mode_names_the_file_and_parse_b(human, tmp_path, capsys) -> None:
    path, rows = human
    mcq = write_jsonl(tmp_path / "letters.jsonl", [{"doc_id": r["doc_id"], "system_id": r["system_id"], "response": "B"} for r in rows])
    assert run([*base(path, scores(rows, tmp_path / "p.jsonl")), "--predictions-b", mcq, "--parse-b", "rts"]) == 3
    err = capsys.readouterr().err
    assert "letters.jsonl" in err and "pass --parse-b mcq" in err


# -- duplicate lines --------------------------------------------------------------------------------------


def test_a_repeated_key_keeps_the_last_line_by_default_and_the_first_on_request(human, tmp_path, capsys) -> None:
    path, rows = human
    wrong = [{"doc_id": r["doc_id"], "system_id": r["system_id"], "score": 6 - r["scores"]["quality"]} for r in rows]
    right = [{"doc_id": r["doc_id"], "system_id": r["system_id"], "score": r["scores"]["quality"]} for r in rows]
    preds = write_jsonl(tmp_path / "p.jsonl", wrong + right)
    assert run([*base(path, preds), "--json"]) == 0
    last = json.loads(capsys.readouterr().out)
    assert last["duplicates"] == "last" and last["levels"][0]["correlation"]["value"] == pytest.approx(1.0)
    assert last["counts"]["join"]["n_duplicate_predictions"] == len(rows)
    assert run([*base(path, preds), "--duplicates", "first", "--json"]) == 0
    first = json.loads(capsys.readouterr().out)
    assert first["duplicates"] == "first" and first["levels"][0]["correlation"]["value"] == pytest.approx(-1.0)


def test_a_row_retried_after_an_error_counts_not_the_error_row(human, tmp_path, capsys) -> None:
    path, rows = human
    errors = [{"doc_id": r["doc_id"], "system_id": r["system_id"], "score": None, "status": "error"} for r in rows[:5]]
    preds = write_jsonl(tmp_path / "ledger.jsonl", errors + [{"doc_id": r["doc_id"], "system_id": r["system_id"],
                                                              "score": r["scores"]["quality"], "status": "ok"} for r in rows])
    assert run([*base(path, preds), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["counts"]["join"]["n_unparsed"] == 0 and out["counts"]["status"] == {"ok": len(rows)}


# -- head-to-head and the challenge set -------------------------------------------------------------------


def verdicts(pairs: list[tuple[str, str]], docs: range = range(8), winner: str = "first") -> list[dict]:
    return [{"doc_id": f"doc{d}", "first": a, "second": b, "winner": winner} for d in docs for a, b in pairs]


def test_the_challenge_set_defaults_to_the_average_over_every_dimension(human, tmp_path, capsys) -> None:
    path, rows = human
    by_average = [("sys3", "sys1"), ("sys1", "sys2"), ("sys2", "sys0")]
    pw = write_jsonl(tmp_path / "pw.jsonl", verdicts(by_average))
    assert run([*base(path, scores(rows, tmp_path / "p.jsonl")), "--pairwise", pw, "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["challenge_order"] == "average"
    for cp in (out["correct_preferences"]["challenge"], out["correct_preferences_h2h"]["challenge"]):
        assert [(p["system_a"], p["system_b"]) for p in cp["pairs"]] == by_average and cp["skipped_pairs"] == []
    assert run([*base(path, scores(rows, tmp_path / "p.jsonl")), "--pairwise", pw, "--challenge-order", "dimension", "--json"]) == 0
    by_dimension = json.loads(capsys.readouterr().out)["correct_preferences"]["challenge"]
    assert [(p["system_a"], p["system_b"]) for p in by_dimension["pairs"]] == [("sys3", "sys2"), ("sys2", "sys1"), ("sys1", "sys0")]


def test_h2h_pairs_are_not_lost_when_pointwise_predictions_are_missing(human, tmp_path, capsys) -> None:
    path, rows = human
    partial = scores([r for r in rows if not (r["system_id"] == "sys1" and r["doc_id"] != "doc0")], tmp_path / "p.jsonl")
    pw = write_jsonl(tmp_path / "pw.jsonl", verdicts([("sys3", "sys1"), ("sys1", "sys3")]))
    assert run([*base(path, partial), "--pairwise", pw, "--json"]) == 0
    pair = json.loads(capsys.readouterr().out)["correct_preferences_h2h"]["challenge"]["pairs"][0]
    assert (pair["system_a"], pair["system_b"], pair["n_docs"]) == ("sys3", "sys1", 8)


def test_h2h_pairs_without_verdicts_and_unclear_verdicts_are_reported(human, tmp_path, capsys) -> None:
    path, rows = human
    lines = verdicts([("sys3", "sys1")]) + [{"doc_id": "doc0", "first": "sys1", "second": "sys2", "response": "I cannot decide."}]
    pw = write_jsonl(tmp_path / "pw.jsonl", lines)
    preds = scores(rows, tmp_path / "p.jsonl")
    assert run([*base(path, preds), "--pairwise", pw]) == 0
    text = capsys.readouterr().out
    assert "H2H #CP challenge pairs: 1/1; 2 pairs left out, no verdict on them: sys1-sys2, sys2-sys0" in text
    assert "1 unclear (left out)" in text
    assert run([*base(path, preds), "--pairwise", pw, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["pairwise_counts"] == {"n_verdicts": 8, "n_unclear": 1, "n_unmatched": 0}


def test_summeval_challenge_set_is_001s_eleven_pairs_for_every_dimension(tmp_path, capsys) -> None:
    data = shared_data_dir()
    if data is None or not (data / "summeval.jsonl").is_file():
        pytest.skip("../shared/data/summeval.jsonl not found (set JUDGESDK_SHARED_DATA to run this test)")
    rows = [json.loads(line) for line in (data / "summeval.jsonl").read_text(encoding="utf-8").splitlines()]
    abstractive = [r for r in rows if r["system_id"] not in {"M0", "M1", "M2", "M5"}]
    for dim in ("coherence", "consistency", "fluency", "relevance"):
        preds = scores(abstractive, tmp_path / f"{dim}.jsonl", lambda r, d=dim: r["scores"][d])
        argv = ["--human", data / "summeval.jsonl", "--predictions", preds, "--dimension", dim, "--level", "summary",
                "--method", "kendall", "--json"]
        assert run(argv) == 0
        cp = json.loads(capsys.readouterr().out)["correct_preferences"]["challenge"]
        assert [(p["system_a"], p["system_b"]) for p in cp["pairs"]] == PAIRS_001, dim
        assert cp["n_correct"] == 11


# -- the prediction reader: properties ---------------------------------------------------------------------

KEYS = st.tuples(st.sampled_from(["d0", "d1", "d2"]), st.sampled_from(["s0", "s1", "x"]))
VALUE = st.one_of(st.none(), st.integers(1, 5).map(float))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(KEYS, VALUE), min_size=1, max_size=25), st.sampled_from(["last", "first"]))
def test_join_keeps_one_line_per_key_and_counts_the_rest(tmp_path, lines, keep) -> None:
    path = write_jsonl(tmp_path / "p.jsonl", [{"doc_id": d, "system_id": s, "score": v} for (d, s), v in lines])
    preds = load_predictions(path, Scale.likert(1, 5))
    human = {(d, s): 3.0 for d in ("d0", "d1", "d2") for s in ("s0", "s1")}
    items, report = join(human, [(p.key, p.value) for p in preds], keep)  # type: ignore[arg-type]
    order = lines if keep == "first" else list(reversed(lines))
    expected = {}
    for key, value in order:
        expected.setdefault(key, value)
    assert {it.key: it.prediction for it in items} == {k: v for k, v in expected.items() if k in human}
    assert report.n_duplicate_predictions == len(lines) - len(expected)
    assert report.n_predictions_unmatched == sum(k not in human for k in expected)
    assert report.n_joined + report.n_human_without_prediction == len(human)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-10, 10) | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
    max_leaves=6,
)
FIELDS = ["score", "response", "samples", "distribution", "latency_s", "usage", "cached", "status"]
NESTED = {  # the keys the reader looks inside, so that hostile values reach it
    "distribution": st.dictionaries(st.sampled_from(["probs", "coverage", "entropy"]), JSON, max_size=3),
    "usage": st.dictionaries(st.sampled_from(["input_tokens", "output_tokens", "calls"]), JSON, max_size=3),
    "samples": st.lists(JSON, max_size=3),
}
LINE = st.dictionaries(st.sampled_from(FIELDS), JSON, max_size=5).flatmap(
    lambda d: st.fixed_dictionaries({k: NESTED[k] if k in NESTED else st.just(v) for k, v in d.items()})
) | st.dictionaries(st.sampled_from(FIELDS), JSON, max_size=5)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(LINE, st.sampled_from(["rts", "mcq"]))
def test_any_prediction_line_is_read_or_refused_with_an_input_error(tmp_path, fields, parse) -> None:
    path = write_jsonl(tmp_path / "p.jsonl", [{"doc_id": "d0", "system_id": "s0", **fields}])
    try:
        preds = load_predictions(path, Scale.likert(1, 5), parse)  # type: ignore[arg-type]
    except InputError as exc:
        assert str(exc).startswith(f"{path}:1:"), exc  # names the line to fix
        return
    (p,) = preds
    score = fields.get("score")
    if isinstance(score, (int, float)) and not isinstance(score, bool):
        assert p.value == score  # a metric's own number (BARTScore, ROUGE) is taken as it is
    else:
        assert p.value is None or 1 <= p.value <= 5  # read from a response: on the scale or nothing
    assert p.coverage is None or 0 <= p.coverage <= 1
