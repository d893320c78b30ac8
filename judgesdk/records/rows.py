"""A results file's rows: what a row holds (:func:`result_line`), its key (:class:`Ask`), whether it is final,
and the tolerant reader that takes the latest row per key (see :mod:`judgesdk.records`)."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from judgesdk.core import InputError, JudgeResult

# statuses without a score that a re-run cannot change: an answer that cannot be read, a question a decision server
# declines (a missing answer is asked again)
FINAL_VERDICTS = frozenset({"unparsed", "refused"})
RESULTS_FORMAT = "judgesdk.results/1"  # every row names it (judgesdk.records.results reads it)


# -- rows ---------------------------------------------------------------------------------------------


def result_line(result: JudgeResult, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """One result as a JSON-ready dict: the input's passthrough fields, the result, its distribution summary.
    ``extra``: the input line's other fields (``doc_id``, ``system_id``...), written first, so the result's own
    fields win a clash."""
    record = {**(extra or {}), **result.model_dump(mode="json", exclude={"distribution"}), "distribution": None}
    distribution = result.distribution
    if distribution is not None:  # every line has the same keys: distribution is null when there is none
        record["distribution"] = {
            "method": distribution.method,
            "probs": distribution.as_dict(),
            "expected": distribution.expected,
            "mode": distribution.mode,
            "entropy": distribution.entropy,
            "coverage": distribution.coverage,
            "low_coverage": distribution.low_coverage,
            "n_samples": distribution.n_samples,
            "n_unparsed": distribution.n_unparsed,
            "stderr": distribution.stderr,
        }
    return record


def row_for(result: JudgeResult, item_id: str, ask: Ask | None = None, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The ledger row of ``result`` for item ``item_id``, asked ``ask`` (its key becomes ``asked``; none without
    one), in the current results format. ``extra``: the input line's passthrough fields (:func:`result_line`)."""
    row = {**result_line(result, extra), "id": item_id, "format": RESULTS_FORMAT}
    if ask is not None:
        row["asked"] = ask.key
    return row


def is_final(row: Mapping[str, Any] | None) -> bool:
    """Whether re-running cannot change this row: it has a score, or a final verdict (``unparsed``, ``refused``)."""
    if row is None or row.get("status") == "error":
        return False
    return row.get("score") is not None or row.get("status") in FINAL_VERDICTS


def row_id(row: Mapping[str, Any]) -> str | None:
    """The item a row belongs to: its ``id``, else ``doc_id:system_id`` (as :func:`item_id` derives it)."""
    if row.get("id") is not None:
        return str(row["id"])
    return composite_id(row)


@dataclass(frozen=True)
class Ask:
    """What was asked of the judge: the criterion (``a+b`` for several), the method, and ``config``, a short
    hash of the criteria's definitions and scales and of the judge configuration that changes answers
    (providers' kinds, models, endpoints and options, template, dataset, method options, estimation);
    cache, retry, rate limits, timeouts and concurrency are left out: they do not change an answer."""

    criterion: str
    method: str
    config: str

    @property
    def key(self) -> str:
        return f"{self.criterion}/{self.method}/{self.config}"

    def answers(self, row: Mapping[str, Any]) -> bool:
        """Whether ``row`` answers this question (a row without ``asked`` predates it: its criterion decides)."""
        asked = row.get("asked")
        if asked is not None:
            return asked == self.key
        return row.get("criterion", self.criterion) == self.criterion


# -- reading ------------------------------------------------------------------------------------------


def read_rows(path: str | Path, *, require_id: bool = True) -> tuple[list[dict[str, Any]], int]:
    """The rows of the results file at ``path``, in file order, and how many unreadable lines were skipped.

    The tolerant reading, for resuming: a line that is not UTF-8 JSON (the last one, cut by a crash; or one in
    the middle, edited or left by an earlier judgesdk's resume) is skipped and counted, so its item is judged
    again; readers that compare or decide refuse it (:func:`judgesdk.records.results.read_results`). A line that is JSON but not a result
    (not an object, or without an ``id`` when ``require_id``) is an :class:`InputError` naming it, as is a
    file with several lines and none readable (not a results file).
    """
    path = Path(path)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        raise InputError(f"results file {path} does not exist") from None
    except OSError as exc:
        raise InputError(f"cannot read the results file {path}: {exc.strerror or exc}") from None
    return parse_rows(data, path, require_id=require_id)


def parse_rows(data: bytes, where: str | Path = "results", *, require_id: bool = True) -> tuple[list[dict[str, Any]], int]:
    """:func:`read_rows` on the bytes of a results file: ``data``, its bytes; ``where``, the file's name in errors;
    ``require_id``, whether a row without an ``id`` is an :class:`InputError`."""
    scan = scan_rows(data, where, require_id=require_id)
    return scan.rows, len(scan.unreadable)


@dataclass
class Scan:
    """A results file's bytes as rows, with the line numbers of the lines that are not a whole JSON row;
    ``cut_end``: the last of those is the file's last line and has no newline (a write the run never finished)."""

    rows: list[dict[str, Any]]
    unreadable: list[int]
    cut_end: bool


def scan_rows(data: bytes, where: str | Path = "results", *, require_id: bool = True) -> Scan:
    """The rows of a results file's bytes, in file order, and where its unreadable lines are (:func:`read_rows`
    says what is an error here; what to do with unreadable lines is the caller's: a resume skips them, a
    comparison refuses them, :func:`judgesdk.records.results.read_results`)."""
    rows: list[dict[str, Any]] = []
    unreadable: list[int] = []
    lines = data.split(b"\n")
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            row = json.loads(raw.decode("utf-8-sig" if number == 1 else "utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            unreadable.append(number)
            continue
        if not isinstance(row, dict) or (require_id and row.get("id") is None):
            raise InputError(f"{where}:{number}: each result line must be an object with an 'id' (is this a judgesdk results file?)")
        rows.append(row)
    cut_end = bool(unreadable) and unreadable[-1] == len(lines) and not data.endswith(b"\n")
    cut_only = len(unreadable) == 1 and cut_end  # a crash cut the only line
    if unreadable and not rows and not cut_only:
        raise InputError(f"{where} has no readable JSON line: is it a results JSONL (judgesdk score -o)?")
    return Scan(rows, unreadable, cut_end)


def latest_index(rows: Sequence[Mapping[str, Any]], ask: Ask | None = None, criterion: str | None = None) -> dict[str, int]:
    """The position of the latest row per item id, among the rows answering ``ask`` (or, without one, those on
    ``criterion`` or without a criterion; without either, all rows), in order of first appearance."""
    found: dict[str, int] = {}
    for index, row in enumerate(rows):
        if ask is not None and not ask.answers(row):
            continue
        if ask is None and criterion is not None and row.get("criterion", criterion) != criterion:
            continue
        key = row_id(row)
        if key is not None:
            found[key] = index
    return found


def latest(rows: Iterable[Mapping[str, Any]], ask: Ask | None = None, criterion: str | None = None) -> dict[str, dict[str, Any]]:
    """The latest of ``rows`` per item id, as plain mappings, in order of first appearance: among the rows answering
    ``ask`` (or, without one, those on ``criterion`` or without a criterion; without either, all rows), as
    :func:`latest_index` picks them."""
    listed = list(rows)
    return {key: dict(listed[index]) for key, index in latest_index(listed, ask, criterion).items()}


def asks_in(rows: Iterable[Mapping[str, Any]], criterion: str) -> set[str | None]:
    """The ``asked`` values of the rows on ``criterion`` (None: rows that predate it)."""
    return {row.get("asked") for row in rows if row.get("criterion", criterion) == criterion}


def done_ids(path: Path | None, key: str = "id") -> set[str]:
    """Ids present in any row of a results file (unreadable lines ignored). Kept for older scripts: it
    counts error rows as done; :class:`Ledger` (final rows per question) is what the commands use.

    ``path``: the results file (None, or a file that does not exist: no ids); ``key``: the field read as the id."""
    if path is None or not path.exists():
        return set()
    done = set()
    for line in path.read_bytes().split(b"\n"):
        try:
            done.add(str(json.loads(line)[key]))
        except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError):
            continue
    return done


def composite_id(raw: Mapping[str, Any]) -> str | None:
    """``doc_id:system_id`` of ``raw``, a row or an input line (either part may be missing, and is then left out
    with its colon), or None without both."""
    doc, system = raw.get("doc_id"), raw.get("system_id")
    if doc is None and system is None:
        return None
    return f"{'' if doc is None else doc}:{'' if system is None else system}".strip(":") or None
