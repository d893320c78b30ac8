"""The hostile catalogue, labels (issue 41, item 6): a human label file or a scale that ``gate`` refuses is refused by
``calibrate`` too.

One class of rows, ``labels``: ``calibrate`` (plain, on a judge's results) and ``calibrate --fused`` read the human
file through the records' strict label reader (:func:`judgesdk.records.dimension_labels`, the value check of
:func:`judgesdk.records.read_labels` that the gate uses): a NaN or text label, an item labelled twice and a label for
an item the results do not hold are one-line errors (exit 3), never lines counted "without a label"; ``--scale`` is
two finite numbers, low below high, and every label lies inside it. ``--fused`` refuses before any model is loaded
(``Judge.from_config`` fails the row if it is reached).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from judgesdk.judging.judge import Judge

from support.hostile import assert_one_line_error, run

GOOD = [float(i % 5 + 1) for i in range(12)]  # twelve labels on 1-5: enough to fit (min 10)


def _results(root: Path) -> Path:
    path = root / "results.jsonl"
    rows = [{"id": f"d{i}", "doc_id": f"d{i}", "system_id": "s", "score": 1.0 + (i % 5) * 0.9, "status": "ok", "criterion": "c"} for i in range(12)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def _human(root: Path, *bad: str) -> Path:
    """Twelve good lines for the results' items (the last left out when ``bad`` replaces it), then ``bad``'s lines."""
    lines = [json.dumps({"doc_id": f"d{i}", "system_id": "s", "c": GOOD[i]}) for i in range(11 if bad else 12)]
    path = root / "human.jsonl"
    path.write_text("\n".join([*lines, *bad]) + "\n")
    return path


def _outputs(root: Path, *bad: str) -> Path:
    """Labelled outputs for ``--fused``: twelve good ones on 1-5, then ``bad``'s lines."""
    lines = [json.dumps({"id": f"o{i}", "doc_id": f"d{i // 3}", "output": f"summary {i}", "source": f"article {i // 3}", "c": GOOD[i]}) for i in range(12)]
    path = root / "outputs.jsonl"
    path.write_text("\n".join([*lines, *bad]) + "\n")
    return path


def plain(root: Path, *bad: str) -> list:
    return ["calibrate", "--judge-results", _results(root), "--human", _human(root, *bad), "--dimension", "c", "-o", root / "cal.json"]


def fused(root: Path, *flags: str, bad: tuple[str, ...] = ()) -> list:
    config = root / "judge.yaml"
    config.write_text(json.dumps({"providers": [{"kind": "local", "options": {"model_path": str(root / "none.gguf")}}]}))
    return ["calibrate", "--fused", "--human", _outputs(root, *bad), "--dimension", "c", "--config", config, "-o", root / "fit.json", *flags]


@dataclass(frozen=True)
class Row:
    """One hostile label file or scale: ``argv(root)`` builds it; the refusal is exit 3, one line holding ``says``."""

    name: str
    cls: str
    argv: Callable[[Path], list]
    says: tuple[str, ...]


NAN = json.dumps({"doc_id": "d11", "system_id": "s", "c": float("nan")})  # json.dumps writes NaN, as json.loads reads it
ROWS = [
    Row("a NaN label", "labels", lambda r: plain(r, NAN), ("human.jsonl:12", "must be a finite number", "got nan")),
    Row("a label that is text", "labels", lambda r: plain(r, '{"doc_id": "d11", "system_id": "s", "c": "good"}'),
        ("human.jsonl:12", "must be a number on the human scale", "'good'")),  # fmt: skip
    Row("an item labelled twice", "labels", lambda r: plain(r, '{"doc_id": "d11", "system_id": "s", "c": 2}', '{"doc_id": "d11", "system_id": "s", "c": 5}'),
        ("human.jsonl:13", "labelled twice", "line 12", "one line per item")),  # fmt: skip
    Row("a label for an item the results do not hold", "labels",
        lambda r: plain(r, '{"doc_id": "d11", "system_id": "s", "c": 2}', '{"doc_id": "d99", "system_id": "s", "c": 4}'),
        ("human.jsonl", "1 labelled item(s) are not in the judge results", "'d99/s' (line 13)")),  # fmt: skip
    Row("--fused: a label of 7 on --scale 1,5", "labels", lambda r: fused(r, "--scale", "1,5", bad=('{"id": "o12", "output": "x", "source": "y", "c": 7}',)),
        ("outputs.jsonl:13", "label 7", "outside the scale 1-5")),  # fmt: skip
    Row("--fused: --scale 5,1", "labels", lambda r: fused(r, "--scale", "5,1"), ("scale", "5,1", "low below high")),
    Row("--fused: --scale nan,5", "labels", lambda r: fused(r, "--scale", "nan,5"), ("scale", "nan,5", "two finite numbers")),
    Row("--fused: a NaN label", "labels", lambda r: fused(r, bad=('{"id": "o12", "output": "x", "source": "y", "c": NaN}',)),
        ("outputs.jsonl:13", "must be a finite number")),  # fmt: skip
]


def test_the_rows_are_distinct_and_name_their_class():
    names = [row.name for row in ROWS]
    assert len(set(names)) == len(names) and {row.cls for row in ROWS} == {"labels"}


@pytest.mark.parametrize("row", ROWS, ids=[row.name for row in ROWS])
def test_calibrate_refuses_a_hostile_label_file_or_scale_as_gate_does(row, tmp_path, monkeypatch, capsys):
    def no_model(cls, *args, **kwargs):
        raise AssertionError("a model was loaded before the labels were checked")

    monkeypatch.setenv("JUDGESDK_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(Judge, "from_config", classmethod(no_model))
    code, out, err = run(row.argv(tmp_path), capsys)
    assert_one_line_error(code, err, *row.says)
    assert out == "" and not (tmp_path / "cal.json").exists() and not (tmp_path / "fit.json").exists()


def test_good_labels_still_calibrate(tmp_path, capsys):
    """The reader is strict, not narrower: the same files without the hostile line fit (a label written as a numeric
    string is read as its number, as the gate's reader does), and results the labels leave out are counted."""
    human = _human(tmp_path, '{"doc_id": "d11", "system_id": "s", "c": " 2 "}')
    code, out, err = run(["calibrate", "--judge-results", _results(tmp_path), "--human", human, "--dimension", "c", "-o", tmp_path / "cal.json"], capsys)
    assert code == 0, err
    assert json.loads(out)["n_items"] == 12 and "0 without a label" in err
