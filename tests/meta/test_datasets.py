"""Benchmark loaders: user JSONL, HANNA's CSV layout, and the shared normalized files (skipped when absent)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from judgesdk.core.errors import InputError
from judgesdk.meta import dimensions, human_scores, load_dataset, load_hanna_csv, load_jsonl, shared_data_dir


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def test_user_jsonl_with_the_normalized_fields(tmp_path: Path) -> None:
    rows = [
        {"dataset": "mine", "doc_id": "1", "system_id": "x", "output": "o", "scores": {"fluency": 2.5}, "extra": 7},
        {"dataset": "mine", "doc_id": "1", "system_id": "y", "output": "p", "scores": {"fluency": 4, "coherence": 1}},
    ]
    records = load_jsonl(write_jsonl(tmp_path / "h.jsonl", rows))
    assert [r.key for r in records] == [("1", "x"), ("1", "y")]
    assert records[0].model_extra == {"extra": 7}
    assert dimensions(records) == ["fluency", "coherence"]
    assert human_scores(records, "coherence") == {("1", "y"): 1.0}
    with pytest.raises(InputError, match="available fluency, coherence"):
        human_scores(records, "relevance")


@pytest.mark.parametrize(
    "line,match",
    [("{not json", "not valid JSON"), ('{"doc_id": "1", "system_id": "x"}', "scores"), ('{"doc_id": "1", "system_id": "x", "scores": {"a": "high"}}', "scores")],
)
def test_bad_human_lines_say_where_and_what(tmp_path: Path, line: str, match: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(line + "\n", encoding="utf-8")
    with pytest.raises(InputError, match=match) as info:
        load_jsonl(path)
    assert "bad.jsonl:1" in str(info.value)


def test_missing_file_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="does not exist"):
        load_jsonl(tmp_path / "nope.jsonl")


HANNA_COLUMNS = ["Story ID", "Prompt", "Human", "Story", "Model", "Relevance", "Coherence", "Empathy",
                 "Surprise", "Engagement", "Complexity", "Worker ID"]


def test_hanna_csv_three_annotator_rows_per_story(tmp_path: Path) -> None:
    path = tmp_path / "hanna_stories_annotations.csv"
    rows = []
    for story_id, prompt, model in [(0, "P one", "Human"), (1, "P two", "Human"), (96, "P one", "GPT-2")]:
        for k, base in enumerate((1, 2, 4)):
            rows.append([story_id, prompt, "ref " + prompt, f"story {story_id}", model, base, base + 1, 3, 3, 3, 3, f"w{k}"])
    with path.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(HANNA_COLUMNS)
        writer.writerows(rows)
    records = load_hanna_csv(path)
    assert [(r.doc_id, r.system_id) for r in records] == [("p00", "Human"), ("p01", "Human"), ("p00", "GPT-2")]
    assert records[0].scores["relevance"] == pytest.approx(7 / 3)
    assert records[0].annotator_scores["coherence"] == [2.0, 3.0, 5.0]
    assert records[2].model_extra["story_id"] == 96 and records[2].reference == "ref P one"


def test_hanna_csv_with_another_layout_is_rejected(tmp_path: Path) -> None:
    path = tmp_path / "other.csv"
    path.write_text("a,b\n1,2\n", encoding="utf-8")
    with pytest.raises(InputError, match="missing columns"):
        load_hanna_csv(path)


def test_shared_data_dir_honours_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUDGESDK_SHARED_DATA", str(tmp_path))
    assert shared_data_dir() == tmp_path
    monkeypatch.setenv("JUDGESDK_SHARED_DATA", str(tmp_path / "missing"))
    assert shared_data_dir() is None
    with pytest.raises(InputError, match="JUDGESDK_SHARED_DATA"):
        load_dataset("summeval")
    with pytest.raises(InputError, match="unknown dataset"):
        load_dataset("imagenet")


EXPECTED = {"summeval": (1600, 100, 16), "topicalchat": (360, 60, 6), "newsroom": (420, 60, 7), "hanna": (1056, 96, 11)}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_shared_benchmarks_load_with_their_published_shape(name: str) -> None:
    base = shared_data_dir()
    if base is None or not (base / f"{name}.jsonl").is_file():
        pytest.skip(f"../shared/data/{name}.jsonl not found (set JUDGESDK_SHARED_DATA to run this test)")
    records = load_dataset(name, base)
    n, docs, systems = EXPECTED[name]
    assert len(records) == n
    assert len({r.doc_id for r in records}) == docs
    assert len({r.system_id for r in records}) == systems
    assert len({r.key for r in records}) == n
