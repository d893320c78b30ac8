"""Human labels: the files people write with their ratings, read strictly, and joined to a run's results.

* :func:`read_labels`: a labels JSONL, one ``{"id": ..., "label": number}`` per line (what ``judgesdk
  label-slice`` writes, with the labels filled in), read by the corrected gates and the jury's weights.
* :func:`load_labelled`: a results file joined to a human file on ``(doc_id, system_id)`` or ``id``, the
  label as ``scores.<dimension>`` (the ``../shared/data`` layout) or a top-level ``<dimension>`` field, read
  by ``judgesdk calibrate`` (:mod:`judgesdk.meta.calibration`).

Every problem is an :class:`~judgesdk.core.errors.InputError` naming the file, the line and what to fix.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from judgesdk.core import InputError
from judgesdk.records.inputs import read_objects
from judgesdk.records.results import latest_rows, read_results
from judgesdk.records.schema import ResultRow, join_key

__all__ = ["HumanLabels", "LabelledSet", "load_labelled", "read_labels"]


class HumanLabels(BaseModel):
    """Human labels of a slice: item id -> label on the human scale, and the file they came from."""

    model_config = ConfigDict(frozen=True)

    path: str
    values: dict[str, float]


def read_labels(path: str | Path) -> HumanLabels:
    """A labels JSONL: one object per line with ``id`` and a numeric ``label``; each id once.

    ``path``: the labels file. Returns its :class:`HumanLabels` (ids as text, labels as floats; a label written
    as a numeric string is read as its number). An InputError names the line and what to fix: a missing id, a
    label that is missing, empty (null, as ``judgesdk label-slice`` leaves it), not a number or not finite, an id
    labelled twice.
    """
    p = Path(path)
    values: dict[str, float] = {}
    for number, row in read_objects(p, "labels"):
        where = f"{p}:{number}"
        if row.get("id") is None:
            raise InputError(f"{where}: a label line needs an id (the item id in the run's results) and a label")
        key = str(row["id"])
        if "label" not in row:
            raise InputError(f"{where}: item {key!r} has no label field; write {{\"id\": ..., \"label\": <number>}}")
        label = row["label"]
        if label is None:
            raise InputError(f"{where}: item {key!r} is not labelled yet (label is null): fill it in or remove the line")
        if isinstance(label, str):
            try:
                label = float(label.strip())
            except ValueError:
                raise InputError(f"{where}: label of {key!r} must be a number on the human scale, got {row['label']!r}") from None
        if isinstance(label, bool) or not isinstance(label, (int, float)) or not math.isfinite(label):
            raise InputError(f"{where}: label of {key!r} must be a finite number on the human scale, got {row['label']!r}")
        if key in values:
            raise InputError(f"{where}: item {key!r} is labelled twice; keep one line per item")
        values[key] = float(label)
    return HumanLabels(path=str(p), values=values)


class LabelledSet(BaseModel):
    """Judge scores joined to human labels, and what did not join."""

    scores: list[float]
    labels: list[float]
    keys: list[str]
    n_results: int
    n_unscored: int  # judge results without a score (unparsed, error)
    n_unmatched: int  # scored results with no human label for the dimension


def _rows(path: Path, what: str) -> list[dict[str, Any]]:
    return [row for _, row in read_objects(path, what)]


def _result_rows(path: Path) -> list[ResultRow]:
    """A results file's (or folder's) typed rows (:func:`judgesdk.records.read_results`: a line that is not a whole JSON row is refused, naming it)."""
    if not path.exists():
        raise InputError(f"judge results file {path} does not exist")
    rows = read_results(path, require_id=False).rows
    if not rows:
        raise InputError(f"judge results file {path} is empty")
    return rows


def _keys(row: dict[str, Any]) -> list[str]:
    """Join keys of a row, most specific first: (doc_id, system_id), then id."""
    keys = []
    key = join_key(row)
    if key is not None:
        keys.append("\t".join(key))
    if row.get("id") is not None:
        keys.append(f"id:{row['id']}")
    return keys


def _result_keys(row: ResultRow) -> list[str]:
    """Join keys of a judge result row, as :func:`_keys` reads a label line's: (doc_id, system_id), then id."""
    keys = [] if row.key is None else ["\t".join(row.key)]
    return keys if row.id is None else [*keys, f"id:{row.id}"]


def _label(row: dict[str, Any], dimension: str) -> float | None:
    scores = row.get("scores")
    value = scores.get(dimension) if isinstance(scores, dict) else row.get(dimension)
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _select_criterion(rows: list[ResultRow], criterion: str | None, path: Path) -> list[ResultRow]:
    """The rows to calibrate on: those on ``criterion`` (else the file's one criterion), of one run, the latest per item."""
    if criterion is not None:
        chosen = [r for r in rows if r.criterion == criterion]
        if not chosen:
            raise InputError(f"{path} has no results for criterion {criterion!r}")
    else:
        found = sorted({r.criterion for r in rows if r.criterion is not None})
        if len(found) > 1:
            raise InputError(f"{path} holds results for several criteria ({', '.join(found)}): pass the criterion to calibrate")
        chosen = rows
    asked = {r.asked for r in chosen} - {None}  # rows without 'asked' predate it: they join any run
    if len(asked) > 1:  # items judged under several questions (definition, method or model): which to fit is unclear
        raise InputError(
            f"{path} holds results of {len(asked)} different runs on this criterion (definition, method or judge config): "
            "calibrate on the results of one run (write each run to its own -o file)"
        )
    return [row for row in chosen if row.row_id is None] + list(latest_rows(chosen).values())  # a retried row wins


def load_labelled(judge_results: str | Path, human: str | Path, dimension: str, criterion: str | None = None) -> LabelledSet:
    """Join a judge results JSONL (``judgesdk score -o``) to human labels on (doc_id, system_id) or ``id``.

    Human lines carry the label as ``scores.<dimension>`` (the ``../shared/data`` layout) or as a
    top-level ``<dimension>`` field.

    ``judge_results``: the results file or folder; ``human``: the human labels JSONL; ``dimension``: the label to
    read from it; ``criterion``: which criterion's results to join (None: the file's only one; several are an
    :class:`InputError`); results of several runs on it are an :class:`InputError` too, and of an item's several
    rows the latest counts. Returns the joined pairs, with counts of the results that had no score or no label.
    """
    results = _select_criterion(_result_rows(Path(judge_results)), criterion, Path(judge_results))
    labels: dict[str, float] = {}
    for row in _rows(Path(human), "human labels"):
        value = _label(row, dimension)
        if value is not None:
            for key in _keys(row):
                labels.setdefault(key, value)
    if not labels:
        raise InputError(f"{human} has no label for dimension {dimension!r} (expected scores.{dimension} or {dimension} on each line)")
    out = LabelledSet(scores=[], labels=[], keys=[], n_results=len(results), n_unscored=0, n_unmatched=0)
    for result in results:
        score = result.score  # a finite number or None (the reader refuses any other)
        if score is None:
            out.n_unscored += 1
            continue
        matched = next((k for k in _result_keys(result) if k in labels), None)
        if matched is None:
            out.n_unmatched += 1
            continue
        out.scores.append(score)
        out.labels.append(labels[matched])
        out.keys.append(matched)
    return out
