"""The one reader of results: a results file, or a folder of them (what ``score --engine ray`` writes), as typed rows.

Every command that reads judge results reads them here (``gate --results``, ``diff``, ``calibrate``,
``label-slice``, ``card --results``, ``meta-eval``'s predictions, the estimate's "what is left to judge", the
viewer): :func:`read_results` gives a :class:`Results` whose rows are :class:`~judgesdk.records.schema.ResultRow`
(each validated: a field of the wrong type is an :class:`~judgesdk.core.errors.InputError` naming the file, the
line and the field), where its unreadable lines are (refused by default, naming the line; skipped and counted
for a reader that resumes: :func:`read_results`), and the latest row per item for a question
(:meth:`Results.latest`). :func:`to_result` turns a row back into the :class:`~judgesdk.core.types.JudgeResult` it
was written from, with its distribution rebuilt on the criterion's scale.

**Format.** Rows carry ``format`` (:data:`RESULTS_FORMAT`), written by :func:`~judgesdk.records.rows.row_for`.
Rows without it were written before the format was named and are read as version 1; a row of a later version
is refused with a message saying to upgrade judgesdk, never half-read.

**Folders.** A folder is read as the concatenation of its ``*.jsonl`` files in name order (hidden files left
out): the Ray engine names them by run start time, so "the latest row per item" means what it means in one file.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import ValidationError

from judgesdk.core import Criterion, InputError, JudgeResult, LabelDistribution, Scale
from judgesdk.records.rows import RESULTS_FORMAT, Ask, asks_in, latest_index, result_line, scan_rows
from judgesdk.records.schema import ResultRow, parse_row

__all__ = ["KNOWN_FORMATS", "RESULTS_FORMAT", "Results", "latest_rows", "part_row", "read_results", "results_files", "to_result"]

KNOWN_FORMATS = frozenset({RESULTS_FORMAT})
SUFFIX = ".jsonl"


@dataclass
class Results:
    """A results file (or folder) as read: its typed rows in file order, and what could not be read."""

    path: Path
    rows: list[ResultRow] = field(default_factory=list)
    skipped: int = 0  # unreadable lines, skipped (only when read with unreadable="skip", or lenient)
    unreadable: list[str] = field(default_factory=list)  # where they are, "file:line"
    files: int = 1
    # the rows as the file holds them, every field: only for a reader that must show the file as it is (the viewer,
    # which reads leniently); every other reader takes the typed rows
    raw: list[dict[str, Any]] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)  # rows that do not validate, kept as they are (lenient reads only)

    def latest(self, ask: Ask | None = None, criterion: str | None = None) -> dict[str, ResultRow]:
        """The latest row per item id answering ``ask`` (or, without one, on ``criterion`` or without a
        criterion; without either, all rows), in order of first appearance."""
        return latest_rows(self.rows, ask, criterion)

    def asks(self, criterion: str) -> set[str | None]:
        """The ``asked`` keys of the rows on ``criterion`` or without a criterion (None: rows that predate
        ``asked``), as :func:`judgesdk.records.rows.asks_in` reads them."""
        return asks_in([_key_fields(row) for row in self.rows], criterion)

    def results(self, criterion: Criterion, ask: Ask | None = None, ids: Iterable[str] | None = None) -> list[JudgeResult]:
        """This criterion's results, the latest row per id (:meth:`latest`), as :class:`JudgeResult`;
        ``ids`` keeps only those items."""
        wanted = None if ids is None else set(ids)
        found = []
        for item_id, row in self.latest(ask, criterion.name).items():
            if wanted is not None and item_id not in wanted:
                continue
            found.append(to_result(row, criterion.scale, criterion.name, where=f"{self.path}: result {item_id!r}"))
        return found


_KEY_FIELDS = ("id", "doc_id", "system_id", "criterion", "asked")


def _key_fields(row: ResultRow) -> dict[str, Any]:
    """The typed fields that say which item ``row`` is of and what it answers, only those the file sets: a row
    that leaves ``criterion`` out counts for every criterion, one with ``criterion`` null for none (as
    :func:`judgesdk.records.rows.latest_index` reads a row)."""
    return {name: getattr(row, name) for name in _KEY_FIELDS if name in row.model_fields_set}


def latest_rows(rows: Sequence[ResultRow], ask: Ask | None = None, criterion: str | None = None) -> dict[str, ResultRow]:
    """The latest of ``rows`` per item id answering ``ask`` (or, without one, on ``criterion`` or without a
    criterion; without either, all rows), in order of first appearance: :func:`judgesdk.records.rows.latest`
    on typed rows. Without ``ask``, a row of several criteria (``parts``: a served multi-question request) that
    has a part named ``criterion`` counts as that part (:func:`part_row`), never as the mean of its parts."""
    if ask is None and criterion is not None:
        rows = [part_row(row, criterion) or row for row in rows]
    return {key: rows[index] for key, index in latest_index([_key_fields(row) for row in rows], ask, criterion).items()}


def part_row(row: ResultRow, name: str, where: str | None = None) -> ResultRow | None:
    """The row of the part named ``name`` of ``row`` (a fine-grained judgement's, as ``judgesdk serve --record``
    writes a multi-question request: the parts' mean as the row's score, each question's result under
    ``parts``), with the row's id, join key and ``asked``; None when ``row`` is itself on ``name`` or has no such
    part. ``where`` names the row in errors (a part that is not a result)."""
    parts = row.passed("parts")
    if row.criterion == name or not isinstance(parts, Mapping) or not isinstance(parts.get(name), Mapping):
        return None
    at = where or f"result {row.id!r} parts.{name}"
    try:
        part = JudgeResult.model_validate({"score": None, "status": "ok", "criterion": name, "method": row.method or "unknown", **parts[name]})
    except ValidationError as exc:
        raise InputError(f"{at}: not a result ({exc.errors()[0].get('msg', 'invalid')})") from None
    keep = {key: value for key, value in row.model_dump(mode="json").items() if key in ("id", "format", "doc_id", "system_id", "asked", "served")}
    return parse_row({**result_line(part), **keep, "criterion": name}, at)


def results_files(path: Path) -> list[Path]:
    """The files a results path stands for: itself, or a folder's ``*.jsonl`` in name order."""
    if path.is_dir():
        return sorted(p for p in path.iterdir() if p.suffix == SUFFIX and not p.name.startswith(".") and p.is_file())
    return [path]


def read_results(
    path: str | Path, *, require_id: bool = True, lenient: bool = False, unreadable: Literal["refuse", "skip"] = "refuse"
) -> Results:
    """Every row of a results file or folder (module docstring), typed. InputError when the path does not exist,
    is not readable, holds a line that is JSON but not a result, a row of an unknown format, or a field of the
    wrong type; an empty folder is an error too (nothing was written there).

    A line that is not a whole JSON row is an InputError naming the file and the line (``unreadable="refuse"``,
    what every reader that compares or decides uses: a row dropped there would silently change its answer):
    the last line cut by a run that stopped mid-write (resuming the run drops it and judges its item again) or a
    line in the middle (an edit, a damaged copy, or a resume by an earlier judgesdk, which ended the cut line
    and wrote on). ``unreadable="skip"`` (readers that resume, and so judge those items again) skips and counts
    them in :attr:`Results.skipped` and :attr:`Results.unreadable`.

    ``lenient`` (the viewer, which shows what it can) keeps a row whose fields do not validate, unvalidated, and
    says why in :attr:`Results.problems` instead of refusing the file; it skips unreadable lines and counts them.
    ``require_id``: whether a row without an ``id`` is an InputError (readers that join on ``doc_id`` and
    ``system_id`` instead pass False)."""
    path = Path(path)
    if not path.exists():
        raise InputError(f"results {path} does not exist")
    if not path.is_dir() and not path.is_file():
        raise InputError(f"results {path} is not a regular file or a folder of results files")
    files = results_files(path)
    if path.is_dir() and not files:
        raise InputError(f"results folder {path} holds no *{SUFFIX} file: is it the folder `judgesdk score --engine ray -o` wrote?")
    out = Results(path=path, files=len(files))
    for file in files:
        try:
            data = file.read_bytes()
        except OSError as exc:
            raise InputError(f"cannot read the results file {file}: {exc.strerror or exc}") from None
        scan = scan_rows(data, file, require_id=require_id)
        if scan.unreadable and unreadable == "refuse" and not lenient:
            raise InputError(_unreadable_message(file, scan.unreadable, scan.cut_end))
        out.skipped += len(scan.unreadable)
        out.unreadable += [f"{file}:{number}" for number in scan.unreadable]
        rows = scan.rows
        for number, raw in enumerate(rows, start=1):
            where = f"{file}: row {number}"
            version = raw.get("format")
            if version is not None and version not in KNOWN_FORMATS:
                raise InputError(f"{where}: written in results format {version!r}, which this judgesdk does not know: upgrade judgesdk to read it")
            try:
                out.rows.append(parse_row(raw, where))
            except InputError as exc:
                if not lenient:
                    raise
                out.problems.append(str(exc))
                out.rows.append(ResultRow.model_construct(**raw))
            out.raw.append(raw)
    return out


def _unreadable_message(file: Path, lines: list[int], cut_end: bool) -> str:
    """One line: where the first unreadable line is, what it likely is, and what to do."""
    more = f" ({len(lines) - 1} more unreadable line(s) after it)" if len(lines) > 1 else ""
    if cut_end and len(lines) == 1:
        return (
            f"{file}:{lines[0]}: the last line is cut (a run stopped while writing it), so its item has no result here: "
            "resume the run that wrote it (the same judgesdk score, gate or card command: it drops the cut line and judges that item), "
            "or delete the line"
        )
    return (
        f"{file}:{lines[0]}: not a whole JSON row{more} (edited or damaged, or a line cut by a stopped run that a resume "
        "wrote on after): reading on without it would drop its item; delete the line, then run the command that wrote "
        "the file again to judge that item"
    )


def to_result(row: ResultRow | Mapping[str, Any], scale: Scale, criterion: str, *, where: str = "result row") -> JudgeResult:
    """A results row back into the :class:`JudgeResult` it was written from.

    The distribution summary is rebuilt on ``scale`` (or on its own numeric labels), so review flags and coverage
    read the same from a fresh run and from a file. Rows with only ``id`` and ``score`` are accepted (status
    ``ok``, or ``unparsed`` when the score is null). ``criterion``: the criterion's name, given to a row that
    names none. A row that is not a result is an :class:`InputError` naming ``where`` and the field."""
    # only the fields the file sets (a typed field left out must stay out, so that status and method get their defaults)
    record = row.model_dump(exclude_unset=True) if isinstance(row, ResultRow) else dict(row)
    data = {k: v for k, v in record.items() if k not in ("distribution", "format", "id", "asked")}
    data.setdefault("status", "ok" if data.get("score") is not None else "unparsed")
    data.setdefault("method", "unknown")
    if data.get("criterion") is None:
        data["criterion"] = criterion
    data["item_id"] = str(record.get("id", data.get("item_id")))
    try:
        data["distribution"] = _distribution(record.get("distribution"), scale)
        return JudgeResult.model_validate(data)
    except (ValidationError, ValueError) as exc:
        first = exc.errors()[0] if isinstance(exc, ValidationError) else None
        what = f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}" if first else str(exc)
        raise InputError(f"{where} cannot be read: {what}") from None


def _distribution(summary: Any, scale: Scale) -> LabelDistribution | None:
    if not isinstance(summary, Mapping) or not isinstance(summary.get("probs"), Mapping) or len(summary["probs"]) < 2:
        return None
    labels = tuple(str(k) for k in summary["probs"])
    if set(labels) == set(scale.labels):
        own = scale
    else:
        try:
            own = Scale(labels=labels, values=tuple(float(label) for label in labels))
        except ValueError:
            own = Scale(labels=labels, values=scale.values if len(scale.values) == len(labels) else tuple(map(float, range(len(labels)))))
    method = summary.get("method") if summary.get("method") in ("exact", "logprobs", "sampling", "parsed") else "parsed"
    return LabelDistribution(
        scale=own, probs=tuple(float(summary["probs"][label]) for label in own.labels), method=method,
        coverage=summary.get("coverage"), low_coverage=bool(summary.get("low_coverage", False)),
        n_samples=summary.get("n_samples"), n_unparsed=summary.get("n_unparsed"), stderr=summary.get("stderr"),
    )  # fmt: skip
