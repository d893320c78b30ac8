"""The results file, owned here: its rows, their key, the id rule, the writer (a locked ledger) and the reader.

A results file (``judgesdk score -o``, the gate's ``results``, ``judgesdk bench`` predictions) is an
append-only ledger of JSON Lines, one row per judgement, written as each result exists:

* **A row** is :func:`result_line` (the result, its distribution summary, the input line's other fields)
  plus ``id`` (the item's) and ``asked`` (what was asked, see :class:`Ask`).
* **Its key** is ``(id, asked)``: the item and what was asked of the judge (criterion, method, and a short
  hash of everything in the judge configuration that changes answers). A run with another criterion,
  definition, method, template or model into the same file judges its items instead of skipping them.
  Rows written before ``asked`` existed count for every question on their ``criterion``.
* **Final rows**: a row is final when it holds a score, or an item-level verdict that re-running cannot
  change (``unparsed`` after repair). A row with status ``error`` (model file missing, key unset,
  provider down) is not: a re-run judges its item again and appends a new row.
* **The reader takes the latest row per key**, so a row retried after an error wins; a line that is not
  JSON (e.g. the last one, cut by a crash) is skipped and counted.
* **Its schema** is :class:`ResultRow`: the fields that commands read from a row, typed (a reader validates a
  row with :func:`parse_row`, and an :class:`InputError` names the line and the field), and the fields the
  writer also writes, which pass through as they are.
* **The join key** to human scores (``meta-eval``, ``bench``, ``calibrate``) is :func:`join_key`: the row's
  ``(doc_id, system_id)``; ``bench`` writes each cell's row under :func:`cell_id`.
* **Ids** come from the item: its ``id`` (a number such as 0 included), else ``doc_id:system_id``, else a
  hash of its texts with an occurrence counter (identical items are judged once each, and keep their ids
  when other lines are edited); never a line number. Two lines with the same explicit id are an input error.
* **One writer at a time**: :class:`Ledger` holds an exclusive lock (``fcntl.flock``) on the file while a
  run appends to it; a second run on the same file fails at once with an :class:`InputError` instead of
  judging everything again into the same file.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, ClassVar, TextIO

from pydantic import BaseModel, ConfigDict, ValidationError, ValidationInfo, field_validator

from judgesdk.errors import InputError
from judgesdk.provider import Usage
from judgesdk.types import Criterion, JudgeItem, JudgeResult, check_text

if TYPE_CHECKING:
    from judgesdk.config import JudgeConfig

try:  # POSIX; elsewhere files are not locked (documented)
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

FINAL_VERDICTS = frozenset({"unparsed"})  # statuses without a score that a re-run cannot change


# -- rows ---------------------------------------------------------------------------------------------


def result_line(result: JudgeResult, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """One result as a JSON-ready dict: the input's passthrough fields, the result, its distribution summary."""
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


def row_for(result: JudgeResult, item_id: str, ask: "Ask | None" = None, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """The ledger row of ``result`` for item ``item_id``, asked ``ask``."""
    row = {**result_line(result, extra), "id": item_id}
    if ask is not None:
        row["asked"] = ask.key
    return row


def is_final(row: Mapping[str, Any] | None) -> bool:
    """Whether re-running cannot change this row: it has a score, or a final verdict (``unparsed``)."""
    if row is None or row.get("status") == "error":
        return False
    return row.get("score") is not None or row.get("status") in FINAL_VERDICTS


def row_id(row: Mapping[str, Any]) -> str | None:
    """The item a row belongs to: its ``id``, else ``doc_id:system_id`` (as :func:`item_id` derives it)."""
    if row.get("id") is not None:
        return str(row["id"])
    return _composite(row)


# -- the row schema -----------------------------------------------------------------------------------


def _where(info: ValidationInfo) -> str:
    return str((info.context or {}).get("where", "result row"))


def finite_or_none(value: Any, where: str, field: str) -> float | None:
    """A row's number field: a finite JSON number (true/false are not numbers), or None for null."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise InputError(f"{where}: {field} must be a finite number or null, got {value!r}; put raw judge text in 'response'")
    return float(value)


def _finite(value: Any, where: str, field: str) -> float:
    number = finite_or_none(value, where, field)
    if number is None:
        raise InputError(f"{where}: {field} must be a finite number, got null")
    return number


def _text(value: Any) -> str | None:
    """A name or id field as text (a number such as 0 included), as :func:`row_id` reads ids."""
    return None if value is None else value if isinstance(value, str) else str(value)


class RowDistribution(BaseModel):
    """A row's ``distribution``: the summary :func:`result_line` writes of the result's label distribution.

    ``probs`` (``{label: probability}``, or a list of probabilities from elsewhere), ``coverage`` and
    ``entropy`` are what readers use; the writer also writes :attr:`PASSED_THROUGH`, kept as they are.
    """

    model_config = ConfigDict(extra="allow")

    PASSED_THROUGH: ClassVar[tuple[str, ...]] = ("method", "expected", "mode", "low_coverage", "n_samples", "n_unparsed", "stderr")

    probs: dict[str, float] | list[float] | None = None
    coverage: float | None = None
    entropy: float | None = None

    @field_validator("probs", mode="before")
    @classmethod
    def _probs(cls, value: Any, info: ValidationInfo) -> Any:
        where = _where(info)
        if value is None:
            return None
        if isinstance(value, dict):
            return {str(label): _finite(p, where, "distribution.probs[]") for label, p in value.items()}
        if isinstance(value, list):
            return [_finite(p, where, "distribution.probs[]") for p in value]
        raise InputError(f"{where}: distribution.probs must be an object {{label: probability}} or a list of probabilities")

    @field_validator("coverage", "entropy", mode="before")
    @classmethod
    def _number(cls, value: Any, info: ValidationInfo) -> float | None:
        return finite_or_none(value, _where(info), f"distribution.{info.field_name}")


class ResultRow(BaseModel):
    """One row of a results file, typed: what :func:`row_for` writes, and what the commands read back.

    Written by the writer: ``id`` (the item's, :func:`item_ids`), ``asked`` (:class:`Ask`), the input line's
    other fields (``doc_id``, ``system_id``: the :func:`join_key`), and the result (:func:`result_line`):
    ``score``, ``status``, ``criterion``, ``method``, ``distribution`` (:class:`RowDistribution`),
    ``latency_s``, ``usage``, ``cached``, and :attr:`PASSED_THROUGH`. A predictions file written elsewhere for
    ``meta-eval`` may hold ``response`` (raw judge text, parsed by the reader) and ``samples`` (repeated
    scores) instead. Other fields pass through as they are (``extra="allow"``): no command reads them from
    the file, so a file from elsewhere is not refused for them.

    Validate with :func:`parse_row`: a field of the wrong type is an :class:`InputError` naming the line
    and the field. Numbers must be finite JSON numbers (never text); names and ids are text (a number is
    read as its text); a ``status`` that is empty or not text counts as none; a ``response`` that is not
    text is ignored; ``cached`` is read as true or false.
    """

    model_config = ConfigDict(extra="allow")

    # written by result_line, never read back from the file by a command (the gate rebuilds a JudgeResult
    # from the whole row, which checks them)
    PASSED_THROUGH: ClassVar[tuple[str, ...]] = (
        "method_reason", "rationale", "raw", "provider", "model", "error", "notes", "details", "parts", "item_id",
    )  # fmt: skip

    id: str | None = None
    doc_id: str | None = None
    system_id: str | None = None
    criterion: str | None = None
    method: str | None = None
    asked: str | None = None
    score: float | None = None
    status: str | None = None
    response: str | None = None
    samples: list[float | None] | None = None
    distribution: RowDistribution | None = None
    latency_s: float | None = None
    usage: Usage | None = None
    cached: bool = False

    @field_validator("id", "doc_id", "system_id", "criterion", "method", "asked", mode="before")
    @classmethod
    def _names(cls, value: Any) -> str | None:
        return _text(value)

    @field_validator("score", "latency_s", mode="before")
    @classmethod
    def _numbers(cls, value: Any, info: ValidationInfo) -> float | None:
        return finite_or_none(value, _where(info), str(info.field_name))

    @field_validator("status", mode="before")
    @classmethod
    def _status(cls, value: Any) -> str | None:
        return _text(value) if value else None

    @field_validator("response", mode="before")
    @classmethod
    def _response(cls, value: Any) -> str | None:
        return value if isinstance(value, str) else None

    @field_validator("samples", mode="before")
    @classmethod
    def _samples(cls, value: Any, info: ValidationInfo) -> list[float | None] | None:
        where = _where(info)
        if value is None:
            return None
        if not isinstance(value, list):
            raise InputError(f"{where}: samples must be a list of numbers (or nulls)")
        return [finite_or_none(s, where, "samples[]") for s in value]

    @field_validator("distribution", mode="before")
    @classmethod
    def _distribution(cls, value: Any, info: ValidationInfo) -> Any:
        if value is not None and not isinstance(value, dict):
            raise InputError(f"{_where(info)}: distribution must be an object with probs, coverage and entropy (as judgesdk score writes it) or null")
        return value

    @field_validator("usage", mode="before")
    @classmethod
    def _usage(cls, value: Any, info: ValidationInfo) -> Usage | None:
        if value is None:
            return None
        try:
            if not isinstance(value, dict):
                raise ValueError("not an object")
            return Usage.model_validate(value)
        except (ValidationError, ValueError):
            raise InputError(
                f"{_where(info)}: usage must be an object of token counts (input_tokens, output_tokens, calls...) or null, got {value!r}"
            ) from None

    @field_validator("cached", mode="before")
    @classmethod
    def _cached(cls, value: Any) -> bool:
        return bool(value)

    @property
    def key(self) -> tuple[str, str] | None:
        """The row's :func:`join_key`."""
        return join_key({"doc_id": self.doc_id, "system_id": self.system_id})


def parse_row(raw: Mapping[str, Any], where: str = "result row") -> ResultRow:
    """``raw`` (one line of a results or predictions file) as a :class:`ResultRow`; a field of the wrong
    type is an :class:`InputError` that starts with ``where`` (``path:line``)."""
    try:
        return ResultRow.model_validate(raw, context={"where": where})
    except ValidationError as exc:  # not one of the fields' own checks (which raise InputError)
        first = exc.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or "row"
        raise InputError(f"{where}: {field}: {first['msg']}") from None


JOIN_FIELDS = ("doc_id", "system_id")


def join_key(row: Mapping[str, Any]) -> tuple[str, str] | None:
    """What a row joins human scores on (``meta-eval``, ``bench``, ``calibrate``): its ``(doc_id, system_id)``
    as text; None when either is missing."""
    doc, system = (row.get(name) for name in JOIN_FIELDS)
    if doc is None or system is None:
        return None
    return str(doc), str(system)


def cell_id(doc_id: str, system_id: str) -> str:
    """The item id ``bench`` gives the row of one (document, system) cell: ``doc_id::system_id``."""
    return f"{doc_id}::{system_id}"


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


def ask_for(config: "JudgeConfig", criteria: Criterion | Sequence[Criterion], method: str | None = None) -> Ask:
    """The :class:`Ask` of judging ``criteria`` with ``method`` (default: the config's) under ``config``."""
    chosen = (criteria,) if isinstance(criteria, Criterion) else tuple(criteria)
    method = method or config.method
    answers_depend_on = {
        "criteria": [c.model_dump(mode="json") for c in chosen],
        "method": method,
        "template": config.template,
        "dataset": config.dataset,
        "method_options": config.method_options,
        "estimation": config.estimation.model_dump(mode="json"),
        "providers": [
            {"kind": p.kind, "model": p.model, "base_url": p.base_url, "api": p.api, "capabilities": p.capabilities, "options": p.options}
            for p in config.providers
        ],
    }
    digest = hashlib.sha256(json.dumps(answers_depend_on, sort_keys=True, default=str).encode()).hexdigest()[:10]
    return Ask(criterion="+".join(c.name for c in chosen), method=method, config=digest)


# -- reading ------------------------------------------------------------------------------------------


def read_rows(path: str | Path, *, require_id: bool = True) -> tuple[list[dict[str, Any]], int]:
    """The rows of a results file, in file order, and how many unreadable lines were skipped.

    A line that is not UTF-8 JSON (the last one, cut by a crash; or one in the middle after a resumed run
    ended it) is skipped and counted, so its item is judged again. A line that is JSON but not a result
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
    """:func:`read_rows` on the bytes of a results file."""
    rows: list[dict[str, Any]] = []
    skipped = 0
    lines = data.split(b"\n")
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            row = json.loads(raw.decode("utf-8-sig" if number == 1 else "utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError):
            skipped += 1
            continue
        if not isinstance(row, dict) or (require_id and row.get("id") is None):
            raise InputError(f"{where}:{number}: each result line must be an object with an 'id' (is this a judgesdk results file?)")
        rows.append(row)
    cut_only = skipped == 1 and not data.endswith(b"\n")  # a crash cut the only line
    if skipped and not rows and not cut_only:
        raise InputError(f"{where} has no readable JSON line: is it a results JSONL (judgesdk score -o)?")
    return rows, skipped


def latest(rows: Iterable[Mapping[str, Any]], ask: Ask | None = None, criterion: str | None = None) -> dict[str, dict[str, Any]]:
    """The latest row per item id, among the rows answering ``ask`` (or, without one, those on
    ``criterion`` or without a criterion; without either, all rows), in order of first appearance."""
    found: dict[str, dict[str, Any]] = {}
    for row in rows:
        if ask is not None and not ask.answers(row):
            continue
        if ask is None and criterion is not None and row.get("criterion", criterion) != criterion:
            continue
        key = row_id(row)
        if key is not None:
            found[key] = dict(row)
    return found


def asks_in(rows: Iterable[Mapping[str, Any]], criterion: str) -> set[str | None]:
    """The ``asked`` values of the rows on ``criterion`` (None: rows that predate it)."""
    return {row.get("asked") for row in rows if row.get("criterion", criterion) == criterion}


def done_ids(path: Path | None, key: str = "id") -> set[str]:
    """Ids present in any row of a results file (unreadable lines ignored). Kept for older scripts: it
    counts error rows as done; :class:`Ledger` (final rows per question) is what the commands use."""
    if path is None or not path.exists():
        return set()
    done = set()
    for line in path.read_bytes().split(b"\n"):
        try:
            done.add(str(json.loads(line)[key]))
        except (UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError):
            continue
    return done


# -- writing: the ledger ------------------------------------------------------------------------------


class Ledger:
    """A results file open for one run: locked against other writers, read once, appended to row by row.

    ``Ledger.open(path)`` creates the file (and its folder when ``create_parents``), takes an exclusive
    lock (a second run on the same file gets an :class:`InputError` at once), reads the rows already
    there, and ends a last line cut by a crash so that the next row starts on its own line. Every
    :meth:`write` is flushed, so a crash or Ctrl-C keeps each row written before it.
    """

    def __init__(self, path: Path, handle: IO[bytes], rows: list[dict[str, Any]], skipped: int) -> None:
        self.path, self._handle, self.rows, self.skipped = path, handle, rows, skipped
        self.written = 0

    @classmethod
    def open(cls, path: str | Path, *, what: str = "results file", create_parents: bool = False) -> "Ledger":
        path = Path(path)
        if path.is_dir():
            raise InputError(f"{what} {path} is a directory: give the path of a results file, e.g. {path / 'results.jsonl'}")
        if create_parents:
            path.parent.mkdir(parents=True, exist_ok=True)
        try:
            handle = path.open("a+b")
        except OSError as exc:
            raise InputError(f"{what} {path}: cannot write it ({exc.strerror or exc})") from None
        try:
            _lock(handle, path, what)
            handle.seek(0)
            data = handle.read()
            rows, skipped = parse_rows(data, path)
            if data and not data.endswith(b"\n"):
                handle.write(b"\n")
                handle.flush()
        except BaseException:
            handle.close()
            raise
        return cls(path, handle, rows, skipped)

    def latest(self, ask: Ask | None = None) -> dict[str, dict[str, Any]]:
        """The latest row per item id answering ``ask`` (every row when None)."""
        return latest(self.rows, ask)

    def final_ids(self, ask: Ask | None = None) -> set[str]:
        """Ids whose latest row for ``ask`` is final: a re-run skips them."""
        return {key for key, row in self.latest(ask).items() if is_final(row)}

    def write(self, row: dict[str, Any]) -> None:
        self._handle.write(encode_row(row))
        self._handle.flush()
        self.rows.append(row)
        self.written += 1

    def close(self) -> None:
        if not self._handle.closed:
            self._handle.close()  # closing releases the lock

    def __enter__(self) -> "Ledger":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _lock(handle: IO[bytes], path: Path, what: str) -> None:
    if fcntl is None:  # pragma: no cover - no advisory locks on this platform
        return
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise InputError(
            f"{what} {path} is being written by another judgesdk run: wait for it to finish, or write to another file"
        ) from None
    except OSError:  # a file system without locks (some network mounts): go on unlocked
        return


def encode_row(row: Mapping[str, Any]) -> bytes:
    """One JSON line; a lone surrogate in a text is written as its JSON escape, so the file stays UTF-8."""
    return (json.dumps(row, ensure_ascii=False) + "\n").encode("utf-8", errors="backslashreplace")


def append(sink: TextIO, record: dict[str, Any]) -> None:
    """One row to an open text sink (unlocked; :class:`Ledger` is the locked writer)."""
    sink.write(json.dumps(record, ensure_ascii=False) + "\n")
    sink.flush()


# -- input items and their ids ------------------------------------------------------------------------


_TEXT_FIELDS = ("output", "source", "context", "reference", "id")
_JSON_KINDS = {bool: "true/false", int: "a number", float: "a number", dict: "an object", list: "an array"}


def read_items(path: Path) -> list[tuple[JudgeItem, dict[str, Any]]]:
    """Items of a JSONL file, each with the line's other fields (``doc_id``, ``system_id``...) to carry
    into its result row, so that results join back to their inputs (e.g. in ``meta-eval``).

    Ids follow :func:`item_ids`; two lines with the same explicit id are an :class:`InputError`.
    """
    lines = read_objects(path, "input")
    for number, raw in lines:
        if "output" not in raw:
            raise InputError(f"{path}:{number}: each line must be an object with an 'output' field")
        for name in _TEXT_FIELDS[:4]:  # the texts: a string ('output' required, the others optional)
            value = raw.get(name)
            if not isinstance(value, str) and (name == "output" or value is not None):
                found = _JSON_KINDS.get(type(value), "null")
                raise InputError(f"{path}:{number}: '{name}' must be a string (the text{' to judge' if name == 'output' else ''}), got {found}")
        for name, value in raw.items():  # before ids are made from the texts, or fields carried into rows
            try:
                check_text(name, "a field name")
                check_text(value, name)
            except InputError as exc:
                raise InputError(f"{path}:{number}: {exc}") from None
    ids = item_ids(lines, path)
    items = []
    for (number, raw), the_id in zip(lines, ids):
        try:
            item = JudgeItem(**{k: raw.get(k) for k in _TEXT_FIELDS[:4]}, id=the_id)
        except InputError as exc:
            raise InputError(f"{path}:{number}: {exc}") from None
        items.append((item, {k: v for k, v in raw.items() if k not in _TEXT_FIELDS and k != "scores"}))
    return items


def item_ids(lines: Sequence[tuple[int, Mapping[str, Any]]], path: str | Path = "input") -> list[str]:
    """One id per input line: ``id`` (any string or number, 0 included), else ``doc_id:system_id``, else
    ``sha:<hash of the texts>`` with ``#2``, ``#3``... on repeats of the same texts. Never a line number,
    so that an edited input file does not attach old results to new items."""
    ids: list[str] = []
    explicit: dict[str, list[int]] = {}
    seen_content: dict[str, int] = {}
    for number, raw in lines:
        given = raw.get("id")
        if isinstance(given, (bool, dict, list)):
            raise InputError(f"{path}:{number}: 'id' must be a string or a number, got {_JSON_KINDS[type(given)]}")
        if given is not None and str(given).strip():
            the_id = str(given)
        else:
            the_id = _composite(raw) or ""
        if the_id:
            explicit.setdefault(the_id, []).append(number)
        else:
            digest = content_hash(raw)
            seen_content[digest] = seen_content.get(digest, 0) + 1
            count = seen_content[digest]
            the_id = f"sha:{digest}" if count == 1 else f"sha:{digest}#{count}"
        ids.append(the_id)
    repeated = {the_id: numbers for the_id, numbers in explicit.items() if len(numbers) > 1}
    if repeated:
        the_id, numbers = next(iter(repeated.items()))
        more = f" (and {len(repeated) - 1} more repeated id(s))" if len(repeated) > 1 else ""
        raise InputError(
            f"{path}: lines {', '.join(map(str, numbers))} have the same id {the_id!r}{more}: "
            "give each line a unique 'id' (or unique doc_id/system_id)"
        )
    return ids


def content_hash(raw: Mapping[str, Any]) -> str:
    """A short hash of an item's texts (output, source, context, reference)."""
    texts = [raw.get(name) for name in _TEXT_FIELDS[:4]]
    return hashlib.sha256(json.dumps(texts, ensure_ascii=False).encode("utf-8", errors="backslashreplace")).hexdigest()[:12]


def _composite(raw: Mapping[str, Any]) -> str | None:
    doc, system = raw.get("doc_id"), raw.get("system_id")
    if doc is None and system is None:
        return None
    return f"{'' if doc is None else doc}:{'' if system is None else system}".strip(":") or None


# -- strict readers of files a person wrote ------------------------------------------------------------


def read_objects(path: str | Path, what: str) -> list[tuple[int, dict[str, Any]]]:
    """Every non-blank line of a JSONL file as (line number, object); a typed error names the bad line.

    Strict on purpose, for inputs a person wrote (items, predictions, labels); results files that a
    crash may have cut are read by :func:`read_rows`.
    """
    path = Path(path)
    if not path.is_file():
        raise InputError(f"{what} file {path} does not exist")
    rows = []
    for number, line in enumerate(read_utf8(path, what).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}:{number}: not valid JSON ({exc.msg}); each line must be one JSON object") from exc
        if not isinstance(row, dict):
            raise InputError(f"{path}:{number}: each line must be a JSON object")
        rows.append((number, row))
    if not rows:
        raise InputError(f"{what} file {path} is empty")
    return rows


def read_predictions(path: str | Path, what: str = "predictions") -> list[tuple[int, ResultRow]]:
    """Every line of a predictions file (a results file of ``judgesdk score``/``bench``, or one written
    elsewhere) as (line number, :class:`ResultRow`), read strictly (:func:`read_objects`) and validated
    (:func:`parse_row`); each line must carry its :func:`join_key`. Errors name the line."""
    path = Path(path)
    out = []
    for number, raw in read_objects(path, what):
        where = f"{path}:{number}"
        missing = [name for name in JOIN_FIELDS if raw.get(name) is None]
        if missing:
            raise InputError(f"{where}: missing {' and '.join(missing)}; every prediction line needs doc_id and system_id")
        out.append((number, parse_row(raw, where)))
    return out


def read_utf8(path: Path, what: str) -> str:
    """The text of ``path``; a typed error naming the first undecodable byte's line when it is not UTF-8."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"cannot read {what} file {path}: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8-sig")  # a leading byte-order mark (Windows editors) is not part of the text
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise InputError(
            f"{path}:{line}: the {what} file is not UTF-8 text (byte 0x{data[exc.start]:02x}); save it as UTF-8"
        ) from None
