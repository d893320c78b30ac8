"""Human labels: the files people write with their ratings, read strictly, and joined to a run's results.

* :func:`read_labels`: a labels JSONL, one ``{"id": ..., "label": number}`` per line (what ``judgesdk
  label-slice`` writes, with the labels filled in), read by the corrected gates and the jury's weights.
* :func:`dimension_labels`: a human file with the label as ``scores.<dimension>`` (the ``../shared/data``
  layout) or a top-level ``<dimension>`` field, each label checked as :func:`read_labels` checks it, each item
  once, optionally inside a scale: what ``judgesdk calibrate`` (plain and ``--fused``) reads.
* :func:`load_labelled`: a results file joined to such a human file on ``(doc_id, system_id)`` or ``id``, read
  by ``judgesdk calibrate`` (:mod:`judgesdk.meta.calibration`); a label for an item the results lack is refused.

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

__all__ = ["HumanLabels", "LabelledSet", "dimension_labels", "load_labelled", "read_labels"]


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
        if row["label"] is None:
            raise InputError(f"{where}: item {key!r} is not labelled yet (label is null): fill it in or remove the line")
        label = _number(row["label"], where, key)
        if key in values:
            raise InputError(f"{where}: item {key!r} is labelled twice; keep one line per item")
        values[key] = label
    return HumanLabels(path=str(p), values=values)


def _number(value: Any, where: str, key: str) -> float:
    """A label as a finite float (a numeric string read as its number), else an InputError naming ``where``: the
    one value check of every human label file (:func:`read_labels`, :func:`dimension_labels`)."""
    label = value
    if isinstance(label, str):
        try:
            label = float(label.strip())
        except ValueError:
            raise InputError(f"{where}: label of {key!r} must be a number on the human scale, got {value!r}") from None
    if isinstance(label, bool) or not isinstance(label, (int, float)) or not math.isfinite(label):
        raise InputError(f"{where}: label of {key!r} must be a finite number on the human scale, got {value!r}")
    return float(label)


def _shown(row: dict[str, Any], number: int) -> str:
    """How a message names a label line's item: its id, else doc_id/system_id, else its line."""
    if row.get("id") is not None:
        return str(row["id"])
    key = join_key(row)
    return "/".join(key) if key is not None else f"line {number}"


def dimension_labels(
    path: str | Path, dimension: str, *, scale: tuple[float, float] | None = None, what: str = "human labels"
) -> list[tuple[int, dict[str, Any], float]]:
    """The labels for ``dimension`` in a human file, read as strictly as :func:`read_labels` reads a slice's.

    ``path``: a JSONL file, the label as ``scores.<dimension>`` or a top-level ``<dimension>`` field (a line without
    it, or with it null, labels nothing for ``dimension`` and is passed over); ``scale``: the human scale (low,
    high), two finite numbers, low below high, that every label must lie inside (None: unchecked); ``what``: how
    messages name the file. Returns ``(line number, line, label)`` per labelled line, in file order. An InputError
    names the line and what to fix: a label that is not a number or not finite, an item (its ``(doc_id,
    system_id)`` or its ``id``) labelled twice, a label outside ``scale``; a bad ``scale``, or no label at all.
    """
    if scale is not None:
        low, high = scale
        if not (math.isfinite(low) and math.isfinite(high) and low < high):
            raise InputError(f"the human scale must be two finite numbers LOW,HIGH with low below high (e.g. --scale 1,5), got {low:g},{high:g}")
    p = Path(path)
    found: list[tuple[int, dict[str, Any], float]] = []
    seen: dict[str, int] = {}
    for number, row in read_objects(p, what):
        scores = row.get("scores")
        value = scores.get(dimension) if isinstance(scores, dict) else row.get(dimension)
        if value is None:
            continue
        where, item = f"{p}:{number}", _shown(row, number)
        label = _number(value, where, item)
        for key in _keys(row):
            if key in seen:
                raise InputError(f"{where}: item {item!r} is labelled twice (also on line {seen[key]}); keep one line per item")
            seen[key] = number
        if scale is not None and not scale[0] <= label <= scale[1]:
            raise InputError(
                f"{where}: item {item!r} has label {label:g}, outside the scale {scale[0]:g}-{scale[1]:g}; correct the label, "
                "or give the scale the labels are on (--scale LOW,HIGH)"
            )
        found.append((number, row, label))
    if not found:
        raise InputError(f"{p} has no label for dimension {dimension!r} (expected scores.{dimension} or {dimension} on each line)")
    return found


class LabelledSet(BaseModel):
    """Judge scores joined to human labels, and what did not join."""

    scores: list[float]
    labels: list[float]
    keys: list[str]
    n_results: int
    n_unscored: int  # judge results without a score (unparsed, error)
    n_unmatched: int  # scored results with no human label for the dimension


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
    top-level ``<dimension>`` field, read by :func:`dimension_labels` (a label that is no finite number, or an item
    labelled twice, is refused); every labelled line needs a join key, and a label for an item the results do not
    hold is refused (as the gate refuses a slice's).

    ``judge_results``: the results file or folder; ``human``: the human labels JSONL; ``dimension``: the label to
    read from it; ``criterion``: which criterion's results to join (None: the file's only one; several are an
    :class:`InputError`); results of several runs on it are an :class:`InputError` too, and of an item's several
    rows the latest counts. Returns the joined pairs, with counts of the results that had no score or no label.
    """
    results = _select_criterion(_result_rows(Path(judge_results)), criterion, Path(judge_results))
    labels: dict[str, float] = {}
    lines: list[tuple[str, list[str]]] = []
    for number, row, value in dimension_labels(human, dimension):
        keys = _keys(row)
        if not keys:
            raise InputError(f"{human}:{number}: a label line needs an id, or doc_id and system_id, to join it to the judge results")
        labels.update(dict.fromkeys(keys, value))
        lines.append((f"{_shown(row, number)!r} (line {number})", keys))
    known = {key for result in results for key in _result_keys(result)}
    foreign = [item for item, keys in lines if not known.intersection(keys)]
    if foreign:
        shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        raise InputError(
            f"{human}: {len(foreign)} labelled item(s) are not in the judge results {judge_results}: {shown}; label items "
            "of these results, with their doc_id and system_id or id as the results hold them"
        )
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
