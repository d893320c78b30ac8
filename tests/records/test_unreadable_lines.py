"""Unreadable lines in a results file (issue 28, item 4): what each reader does with them.

A reader that decides something (``diff``, ``gate --results`` and its baseline, ``calibrate``, ``card``, ``meta-eval``)
refuses a file with a line that is not a whole JSON row, naming the file and the line: a cut MIDDLE line (an edit, a
damaged copy, or a resume by an older judgesdk that ended the cut line and wrote on) and a cut LAST line (a run that
stopped mid-write) alike, each with what to do. A reader that resumes (the ledger ``score``, ``gate`` and ``card``
write through; the estimate of what is left) tolerates them: a cut last line is dropped from the file when the run
resumes, so the resumed file is whole again. The viewer shows what it can and counts the lines it skipped."""

from __future__ import annotations

import json

import pytest

from judgesdk.core.errors import InputError
from judgesdk.records import Ledger, read_results


def _row(item: str, score: float = 3.0) -> dict:
    return {"id": item, "criterion": "quality", "method": "geval", "score": score, "status": "ok", "format": "judgesdk.results/1"}


def _lines(*items: str) -> str:
    return "".join(json.dumps(_row(i)) + "\n" for i in items)


def test_a_cut_middle_line_is_an_error_naming_the_file_and_the_line(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(_lines("a") + json.dumps(_row("b"))[:17] + "\n" + _lines("c"))
    with pytest.raises(InputError, match=r"r\.jsonl:2: .*not a whole JSON row") as caught:
        read_results(path)
    assert "\n" not in str(caught.value)


def test_a_cut_last_line_is_an_error_that_says_to_resume_the_run(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(_lines("a", "b") + json.dumps(_row("c"))[:17])
    with pytest.raises(InputError, match=r"r\.jsonl:3: the last line is cut .*resume the run that wrote it") as caught:
        read_results(path)
    assert "\n" not in str(caught.value)


def test_a_whole_last_row_without_its_newline_is_read(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(_lines("a") + json.dumps(_row("b")))
    assert [r.id for r in read_results(path).rows] == ["a", "b"]


def test_readers_that_resume_skip_and_count_unreadable_lines(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(_lines("a") + "{cut\n" + _lines("c") + json.dumps(_row("d"))[:9])
    read = read_results(path, unreadable="skip")
    assert [r.id for r in read.rows] == ["a", "c"] and read.skipped == 2 and read.unreadable == [f"{path}:2", f"{path}:4"]
    lenient = read_results(path, lenient=True)  # the viewer: shows the rest, counts what it skipped
    assert [r.id for r in lenient.rows] == ["a", "c"] and lenient.skipped == 2


def test_a_folder_names_the_file_that_holds_the_unreadable_line(tmp_path):
    folder = tmp_path / "out"
    folder.mkdir()
    (folder / "1.jsonl").write_text(_lines("a"))
    (folder / "2.jsonl").write_text(_lines("b") + "{cut")
    with pytest.raises(InputError, match=r"2\.jsonl:2: the last line is cut"):
        read_results(folder)
    assert read_results(folder, unreadable="skip").skipped == 1


def test_resuming_drops_a_cut_last_line_so_the_file_reads_whole(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(_lines("a", "b") + json.dumps(_row("c"))[:17])
    with Ledger.open(path) as ledger:  # what `judgesdk score -o r.jsonl` does on resume
        assert [r["id"] for r in ledger.rows] == ["a", "b"] and ledger.skipped == 1
        ledger.write(_row("c", 4.0))
    assert path.read_text() == _lines("a", "b") + json.dumps(_row("c", 4.0)) + "\n"
    assert [(r.id, r.score) for r in read_results(path).rows] == [("a", 3.0), ("b", 3.0), ("c", 4.0)]


def test_resuming_keeps_a_whole_last_row_that_lacks_its_newline(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(_lines("a") + json.dumps(_row("b")))
    with Ledger.open(path) as ledger:
        assert [r["id"] for r in ledger.rows] == ["a", "b"] and ledger.skipped == 0
        ledger.write(_row("c"))
    assert path.read_text() == _lines("a", "b", "c")


def test_the_ledger_says_what_it_did_with_unreadable_lines(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text(_lines("a") + "{cut\n" + _lines("c") + json.dumps(_row("d"))[:9])
    with Ledger.open(path, what="-o") as ledger:
        assert ledger.dropped_cut_line == 4 and ledger.unreadable_lines == [2]
        notice = ledger.notice
    assert notice.startswith(f"-o {path}: its last line (4) was cut") and "line(s) 2 are not whole JSON rows" in notice and "\n" not in notice
    with Ledger.open(tmp_path / "new.jsonl") as ledger:
        assert ledger.notice is None
