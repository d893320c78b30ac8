"""Two results files compared item by item: which verdicts moved, and whether the judge changed under them.

A release gate that compares tonight's run with last week's assumes the judge is the same. When it is not
(a model snapshot rolled over at the provider, a template edited, a calibration refitted) the scores move
for reasons that have nothing to do with the outputs. :func:`diff_rows` pairs the rows of two runs by item
id and criterion, marks the items whose score moved beyond a tolerance (or whose status changed), and for
each names the provenance fields that differ between its two rows (:func:`judgesdk.core.provenance.changes`):
the cause, when the judge's record says what changed; "unexplained" when the record is identical (a
nondeterministic backend, or a change the record does not capture). The shift over all paired scored items
gets a paired test (Wilcoxon signed-rank, scipy), so a small consistent drift is told from noise.

A comparison with no (id, criterion) pair in both runs compared nothing, and says so: :attr:`DiffReport.nothing_compared`
gives why in one line (a file with no rows, criteria that differ, ids that differ, a ``criteria`` filter that keeps
none); ``judgesdk diff`` exits 2 on it (:class:`~judgesdk.core.exits.ExitCode`), never 0 as if nothing moved.

Each file is read with the results reader (:mod:`judgesdk.records`), which refuses a line that is not a whole JSON
row (naming it) rather than count its item as missing; within a file the latest row per (id, criterion) stands, as
everywhere else.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, ValidationError
from scipy import stats

from judgesdk.core import InputError, Provenance, Record, changes, record_of
from judgesdk.records import ResultRow, read_results

Key = tuple[str, str]  # (item id, criterion)
Row = ResultRow | Mapping[str, Any]  # a typed row (rows_by_key), or one as the file holds it (the viewer's lenient read)


class ItemChange(BaseModel):
    """One item whose verdict moved: both scores and statuses, and what changed in the judge's record."""

    id: str
    criterion: str
    old_score: float | None
    new_score: float | None
    old_status: str | None
    new_status: str | None
    shift: float | None  # new - old, when both are scored
    causes: dict[str, tuple[str, str]]  # provenance field -> (old, new); empty: unexplained


class Shift(BaseModel):
    """The paired shift over the items scored in both runs."""

    n: int
    mean: float | None
    median: float | None
    p_value: float | None  # two-sided Wilcoxon signed-rank; None with fewer than 2 non-zero shifts
    test: str = "wilcoxon signed-rank (two-sided, zero shifts dropped)"


class DiffReport(BaseModel):
    old: str
    new: str
    tolerance: float
    paired: int  # (id, criterion) pairs present in both files
    only_old: int
    only_new: int
    changed: list[ItemChange]
    causes: dict[str, int]  # provenance field -> number of changed items it differs on
    unexplained: int  # changed items whose two rows have the same provenance
    provenance_changed: int  # paired items whose provenance differs, moved or not
    shift: Shift
    nothing_compared: str | None = None  # why no pair was in both runs (one line); None when some were


def rows_by_key(path: str | Path) -> dict[Key, ResultRow]:
    """The latest row per (id, criterion) of a results file or folder (:func:`judgesdk.records.read_results`), typed."""
    found: dict[Key, ResultRow] = {}
    for row in read_results(path).rows:
        item = row.row_id
        if item is not None:
            found[(item, row.criterion or "")] = row
    return found


def _field(row: Row, name: str) -> Any:
    """The field ``name`` of ``row`` (None when it has none): typed where the schema types it, else as the file holds it."""
    if isinstance(row, Mapping):
        return row.get(name)
    return getattr(row, name) if name in ResultRow.model_fields else row.passed(name)


def diff_rows(
    old: Mapping[Key, Row],
    new: Mapping[Key, Row],
    *,
    tolerance: float = 0.01,
    criteria: Iterable[str] | None = None,
    old_name: str = "old",
    new_name: str = "new",
) -> DiffReport:
    """Compare two runs' rows (as :func:`rows_by_key` gives them); see the module docstring.

    ``old`` and ``new`` map (item id, criterion) to a row; an item moved when its score shifts by more than
    ``tolerance`` (finite, 0 or more, else :class:`~judgesdk.core.errors.InputError`), its status changes, or
    only one side has a score. ``criteria``, when given, keeps only those criteria; ``old_name`` and
    ``new_name`` are how the report and its messages name the two runs. Returns the :class:`DiffReport`.
    """
    if not math.isfinite(tolerance) or tolerance < 0:
        raise InputError(f"the tolerance must be a finite number >= 0, got {tolerance}")
    wanted = None if criteria is None else set(criteria)
    every_old, every_new = old, new
    old = {k: v for k, v in old.items() if wanted is None or k[1] in wanted}
    new = {k: v for k, v in new.items() if wanted is None or k[1] in wanted}
    paired = [k for k in new if k in old]
    why = None if paired else _why_nothing_paired(every_old, every_new, old, new, wanted, old_name, new_name)
    moved: list[ItemChange] = []
    shifts: list[float] = []
    provenance_changed = 0
    for key in paired:
        a, b = old[key], new[key]
        sa, sb = _score(a), _score(b)
        shift = None if sa is None or sb is None else sb - sa
        if shift is not None:
            shifts.append(shift)
        causes = _causes(a, b, key, old_name, new_name)
        provenance_changed += bool(causes)
        if _field(a, "status") != _field(b, "status") or (shift is not None and abs(shift) > tolerance) or (sa is None) != (sb is None):
            moved.append(ItemChange(
                id=key[0], criterion=key[1], old_score=sa, new_score=sb, old_status=_field(a, "status"),
                new_status=_field(b, "status"), shift=shift, causes=causes,
            ))  # fmt: skip
    counted = Counter(field for change in moved for field in change.causes)
    return DiffReport(
        old=old_name,
        new=new_name,
        tolerance=tolerance,
        paired=len(paired),
        only_old=len(old.keys() - new.keys()),
        only_new=len(new.keys() - old.keys()),
        changed=moved,
        causes=dict(counted.most_common()),
        unexplained=sum(1 for change in moved if not change.causes),
        provenance_changed=provenance_changed,
        shift=_shift(shifts),
        nothing_compared=why,
    )


def diff_files(old: str | Path, new: str | Path, **options: Any) -> DiffReport:
    """:func:`diff_rows` on two results files or folders, ``old`` and ``new``, read with :func:`rows_by_key` and
    named by their paths; ``options`` are :func:`diff_rows`'s keywords (``tolerance``, ``criteria``)."""
    return diff_rows(rows_by_key(old), rows_by_key(new), old_name=str(old), new_name=str(new), **options)


def _why_nothing_paired(
    every_old: Mapping[Key, Any], every_new: Mapping[Key, Any], old: Mapping[Key, Any], new: Mapping[Key, Any],
    wanted: set[str] | None, old_name: str, new_name: str,
) -> str:
    """One line: why two runs share no (id, criterion) pair."""
    def criteria(rows: Mapping[Key, Any]) -> str:
        return ", ".join(sorted({k[1] or "(no criterion)" for k in rows})) or "none"

    empty = [name for name, rows in ((old_name, every_old), (new_name, every_new)) if not rows]
    if empty:
        return " and ".join(empty) + (" hold" if len(empty) == 2 else " holds") + " no result rows"
    if wanted is not None and (not old or not new):
        asked = ", ".join(sorted(wanted))
        return f"no row on criterion {asked} in {' or '.join(n for n, r in ((old_name, old), (new_name, new)) if not r)} ({old_name} holds {criteria(every_old)}; {new_name} holds {criteria(every_new)})"
    if not {k[1] for k in old} & {k[1] for k in new}:
        return f"the files judge different criteria ({old_name}: {criteria(old)}; {new_name}: {criteria(new)})"
    return f"no item id is in both files on the same criterion ({len(old)} rows in {old_name}, {len(new)} in {new_name}; criteria {criteria(new)})"


def _score(row: Row) -> float | None:
    """The row's score: a finite number, else None."""
    value = _field(row, "score")
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def _provenance(raw: Any, key: Key, where: str) -> Provenance | None:
    if raw is None:
        return None
    try:
        return Provenance.model_validate(raw)
    except ValidationError:
        raise InputError(f"{where}: item {key[0]!r} ({key[1]}): its provenance is not what judgesdk writes (was the file edited?)") from None


def _record(row: Row, key: Key, where: str) -> Record | None:
    """The row's provenance record; a jury's row has none of its own, its judges' (in ``parts``) stand for it."""
    parts = _field(row, "parts")
    parts = parts if isinstance(parts, Mapping) else {}
    return record_of(
        _provenance(_field(row, "provenance"), key, where),
        {name: _provenance(part.get("provenance"), key, where) for name, part in parts.items() if isinstance(part, Mapping)},
    )


def _causes(a: Row, b: Row, key: Key, old_name: str, new_name: str) -> dict[str, tuple[str, str]]:
    """The provenance fields that differ; for rows without a record, what was asked (criterion definition,
    method, judge config: the :class:`~judgesdk.records.Ask` key) when that differs."""
    pa, pb = _record(a, key, old_name), _record(b, key, new_name)
    found = changes(pa, pb)
    if (pa is None or pb is None) and _field(a, "asked") != _field(b, "asked"):
        found["asked"] = (str(_field(a, "asked") or ""), str(_field(b, "asked") or ""))
    return found


def _shift(shifts: list[float]) -> Shift:
    if not shifts:
        return Shift(n=0, mean=None, median=None, p_value=None)
    values = np.asarray(shifts, dtype=float)
    nonzero = values[values != 0]
    p = None
    if len(nonzero) >= 2:
        p = float(stats.wilcoxon(nonzero, zero_method="wilcox", alternative="two-sided").pvalue)
    return Shift(n=len(values), mean=float(values.mean()), median=float(np.median(values)), p_value=p)
