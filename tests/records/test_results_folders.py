"""A results folder (what ``judgesdk score --engine ray -o`` writes: ``RUN_<write>_<task>.jsonl`` files) read by the
strict predictions reader that ``meta-eval`` uses, as the one results reader already reads it (issue 30, item 4).
The commands themselves are run on a folder that Ray wrote in tests/distributed/test_ray_engine.py."""

from __future__ import annotations

import json

import pytest

from judgesdk.core.errors import InputError
from judgesdk.records import read_predictions, read_results


def _row(doc: str, system: str, score: float) -> dict:
    return {"id": f"{doc}:{system}", "doc_id": doc, "system_id": system, "criterion": "quality", "method": "geval", "score": score, "status": "ok"}


def _folder(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "20261126T000000-abcdef_000000_000000.jsonl").write_text(json.dumps(_row("d1", "A", 2.0)) + "\n" + json.dumps(_row("d1", "B", 3.0)) + "\n")
    (folder / "20261126T000000-abcdef_000000_000001.jsonl").write_text(json.dumps(_row("d2", "A", 4.0)) + "\n")
    (folder / "20261126T000000-abcdef_000000_000002.jsonl").write_text("")  # a write task with no rows
    (folder / ".hidden.jsonl").write_text("not json\n")  # left alone, as read_results leaves it
    (folder / "_SUCCESS").write_text("")
    return folder


def test_predictions_are_read_from_every_file_of_a_folder_in_name_order(tmp_path):
    folder = _folder(tmp_path)
    rows = read_predictions(folder)
    assert [(row.doc_id, row.system_id, row.score) for _, row in rows] == [("d1", "A", 2.0), ("d1", "B", 3.0), ("d2", "A", 4.0)]
    assert [row.id for row in read_results(folder).rows] == [row.id for _, row in rows]  # the same rows as the one reader


def test_a_folder_without_rows_and_a_bad_line_in_a_folder_are_typed_errors(tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    with pytest.raises(InputError, match="holds no"):
        read_predictions(empty)
    folder = _folder(tmp_path)
    bad = folder / "20261126T000000-abcdef_000000_000003.jsonl"
    bad.write_text('{"doc_id": "d3", "system_id": "A", "score": 1}\nnot json\n')
    with pytest.raises(InputError, match=f"{bad.name}:2: not valid JSON"):
        read_predictions(folder)
