"""Files a person wrote: input items and their ids, predictions files, labels (strict readers; see
:mod:`judgesdk.records`)."""

from __future__ import annotations

import hashlib
import json
import logging
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from judgesdk.core import InputError, JudgeItem, check_text
from judgesdk.items import Item, Unreadable, located, read_item
from judgesdk.records.results import SUFFIX, results_files
from judgesdk.records.rows import composite_id
from judgesdk.records.schema import JOIN_FIELDS, ResultRow, parse_row

log = logging.getLogger("judgesdk.records")

# -- input items and their ids ------------------------------------------------------------------------


_TEXT_FIELDS = ("output", "source", "context", "reference", "id")
_JSON_KINDS = {bool: "true/false", int: "a number", float: "a number", dict: "an object", list: "an array"}


def read_items(path: Path) -> list[tuple[JudgeItem, dict[str, Any]]]:
    """Items of a JSONL file, each with the line's other fields (``doc_id``, ``system_id``...) to carry
    into its result row, so that results join back to their inputs (e.g. in ``meta-eval``).

    ``path``: the JSONL input file, read strictly (:func:`read_objects`). Ids follow :func:`item_ids`; two lines
    with the same explicit id are an :class:`InputError`, as is a line without a text ``output``, a text field that
    is not a string, or a value that is not valid Unicode or holds NaN or Infinity (each naming the line). A typed
    item (a line with a ``kind``) is an :class:`InputError` here: the commands that judge them read the file with
    :func:`read_entries`.
    """
    items = []
    for entry, extra in read_entries(path):
        if not isinstance(entry, JudgeItem):
            raise InputError(
                f"{path}: item {entry.id!r} is a typed item (a line with a 'kind'): this command reads only items with "
                "an 'output'; judge typed items with `judgesdk score`"
            )
        items.append((entry, extra))
    return items


def read_entries(path: Path) -> list[tuple[JudgeItem | Item | Unreadable, dict[str, Any]]]:
    """What :func:`read_items` reads, and typed items too: a line with a ``kind`` (``conversation``,
    ``grounded_answer``, ``agent_run``) is read by :func:`judgesdk.items.read_item` (its ``doc_id`` and
    ``system_id`` carried into its row, every other field the item's); one that cannot be read is kept in its
    place as an :class:`~judgesdk.items.Unreadable` whose one-line error names the file, line and field
    (``items.jsonl:3: messages[2].tool_call_id: ...``), so that it costs no other item.

    ``path``: the JSONL input file, read strictly (:func:`read_objects`); ids follow :func:`item_ids` (a typed line
    without an ``id`` gets one from the hash of the whole line). The other lines are read as :func:`read_items`
    says, with the same errors."""
    lines = read_objects(path, "input")
    for number, raw in lines:
        if "kind" in raw:  # a typed item: checked when it is read below, its errors its own
            continue
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
            if not finite(value):  # carried into the row, it would make the results file non-standard JSON
                raise InputError(f"{path}:{number}: '{name}' holds NaN or Infinity, which standard JSON has no word for: write null or a number")
    ids = item_ids(lines, path)
    items: list[tuple[JudgeItem | Item | Unreadable, dict[str, Any]]] = []
    for (number, raw), the_id in zip(lines, ids):
        if "kind" in raw:
            items.append(_typed(path, number, raw, the_id))
            continue
        try:
            item = JudgeItem(**{k: raw.get(k) for k in _TEXT_FIELDS[:4]}, id=the_id)
        except InputError as exc:
            raise InputError(f"{path}:{number}: {exc}") from None
        items.append((item, {k: v for k, v in raw.items() if k not in _TEXT_FIELDS and k != "scores"}))
    return items


def _typed(path: Path, number: int, raw: Mapping[str, Any], the_id: str) -> tuple[Item | Unreadable, dict[str, Any]]:
    """The typed item on line ``number`` of ``path`` (``raw``, its object) with the id ``the_id``, and the fields
    its row carries; an :class:`~judgesdk.items.Unreadable` naming the line and field where it cannot be read."""
    carried = {k: raw[k] for k in JOIN_FIELDS if k in raw}
    try:
        for name, value in carried.items():
            check_text(value, name)
            if not finite(value):
                raise InputError(f"'{name}' holds NaN or Infinity, which standard JSON has no word for")
        item = read_item({k: v for k, v in raw.items() if k not in JOIN_FIELDS})
    except InputError as exc:
        return Unreadable(id=the_id, error=str(located(exc, str(path), number))), carried
    return item.model_copy(update={"id": the_id}), carried


def item_ids(lines: Sequence[tuple[int, Mapping[str, Any]]], path: str | Path = "input") -> list[str]:
    """One id per input line: ``id`` (any string or number, 0 included), else ``doc_id:system_id``, else
    ``sha:<hash of the texts>`` with ``#2``, ``#3``... on repeats of the same texts. Never a line number,
    so that an edited input file does not attach old results to new items.

    ``lines``: (line number, object) pairs, as :func:`read_objects` gives them; ``path``: the file they came from,
    named in errors. An :class:`InputError` when an id repeats, is not a string or a number, or collides with
    the id another line gets from its texts."""
    ids: list[str] = []
    explicit: dict[str, list[int]] = {}
    derived: dict[str, int] = {}  # sha: ids made here, and their line
    seen_content: dict[str, int] = {}
    joined: dict[str, set[tuple[str, str]]] = {}  # doc_id:system_id ids -> the (doc_id, system_id) pairs that made them
    for number, raw in lines:
        given = raw.get("id")
        if isinstance(given, (bool, dict, list)):
            raise InputError(f"{path}:{number}: 'id' must be a string or a number, got {_JSON_KINDS[type(given)]}")
        if given is not None and str(given).strip():
            the_id = str(given)
        else:
            the_id = composite_id(raw) or ""
            if the_id:
                joined.setdefault(the_id, set()).add((str(raw.get("doc_id")), str(raw.get("system_id"))))
        if the_id:
            explicit.setdefault(the_id, []).append(number)
        else:
            digest = content_hash(raw)
            seen_content[digest] = seen_content.get(digest, 0) + 1
            count = seen_content[digest]
            the_id = f"sha:{digest}" if count == 1 else f"sha:{digest}#{count}"
            derived[the_id] = number
        ids.append(the_id)
    for the_id, number in derived.items():  # an id written as another line's derived one: two items, one id
        if the_id in explicit:
            raise InputError(
                f"{path}: line {explicit[the_id][0]} has the id {the_id!r}, which is the id line {number} gets from its texts "
                f"(it has no id of its own): give line {number} an 'id' too, or line {explicit[the_id][0]} another one"
            )
    repeated = {the_id: numbers for the_id, numbers in explicit.items() if len(numbers) > 1}
    if repeated:
        the_id, numbers = next(iter(repeated.items()))
        more = f" (and {len(repeated) - 1} more repeated id(s))" if len(repeated) > 1 else ""
        pairs = sorted(joined.get(the_id, ()))
        if len(pairs) > 1:  # not the same item twice: different pairs whose ':' joins collide
            shown = " and ".join(f"doc_id {doc!r} with system_id {system!r}" for doc, system in pairs[:2])
            raise InputError(
                f"{path}: lines {', '.join(map(str, numbers))} are different items ({shown}) whose ids join to the same "
                f"{the_id!r}{more}: give each line an explicit 'id', or doc_id/system_id values without ':'"
            )
        raise InputError(
            f"{path}: lines {', '.join(map(str, numbers))} have the same id {the_id!r}{more}: "
            "give each line a unique 'id' (or unique doc_id/system_id)"
        )
    return ids


def content_hash(raw: Mapping[str, Any]) -> str:
    """A short hash (12 hex digits) of an item's texts (output, source, context, reference), read from ``raw``,
    its input line; other fields do not enter it. A typed item (a line with a ``kind``) is hashed whole, its keys
    sorted."""
    if "kind" in raw:
        whole = json.dumps(raw, ensure_ascii=False, sort_keys=True, default=repr)
        return hashlib.sha256(whole.encode("utf-8", errors="backslashreplace")).hexdigest()[:12]
    texts = [raw.get(name) for name in _TEXT_FIELDS[:4]]
    return hashlib.sha256(json.dumps(texts, ensure_ascii=False).encode("utf-8", errors="backslashreplace")).hexdigest()[:12]


# -- strict readers of files a person wrote ------------------------------------------------------------


def read_objects(path: str | Path, what: str) -> list[tuple[int, dict[str, Any]]]:
    """Every non-blank line of a JSONL file as (line number, object); a typed error names the bad line.

    Strict on purpose, for inputs a person wrote (items, predictions, labels); results files that a
    crash may have cut are read by :func:`read_rows`. ``path``: the JSONL file (not standard input, a pipe or a
    folder); ``what``: what the file holds (``"input"``, ``"labels"``...), named in the errors.
    """
    path = Path(path)
    if str(path) == "-" or (path.exists() and not path.is_dir() and not path.is_file()):  # "-", /dev/stdin, a pipe, a device
        raise InputError(
            f"{what} file {path}: reading standard input, a pipe or a device is not supported (a run resumes by reading its "
            "input again): save the lines to a file and give its path"
        )
    if path.is_dir():
        raise InputError(f"{what} file {path} is a folder: give the path of a JSONL file, one JSON object per line")
    if not path.is_file():
        raise InputError(f"{what} file {path} does not exist")
    rows = []
    for number, line in enumerate(read_utf8(path, what).split("\n"), start=1):  # not splitlines(): JSON strings may hold U+2028
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}:{number}: not valid JSON ({exc.msg}); each line must be one JSON object") from exc
        except RecursionError:
            row = None  # nested past what the reader can follow: refused below with the same words
        if row is None or nesting(row) > MAX_NESTING:
            raise InputError(f"{path}:{number}: a value is nested more than {MAX_NESTING} levels deep; flatten it (or drop the field)")
        if not isinstance(row, dict):
            raise InputError(f"{path}:{number}: each line must be a JSON object")
        rows.append((number, row))
    if not rows:
        raise InputError(f"{what} file {path} is empty")
    return rows


MAX_NESTING = 64  # levels of arrays and objects in one input line; deeper ones could not be written back into a row


def nesting(value: Any) -> int:
    """How many levels of arrays and objects ``value`` has (0 for a scalar), counted without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        current, depth = stack.pop()
        children = current.values() if isinstance(current, dict) else current if isinstance(current, list) else None
        if children is None:
            continue
        deepest = max(deepest, depth)
        if depth <= MAX_NESTING:
            stack.extend((child, depth + 1) for child in children)
    return deepest


def finite(value: Any) -> bool:
    """Whether no number in ``value`` (at any depth) is NaN or infinite."""
    stack = [value]
    while stack:
        current = stack.pop()
        if isinstance(current, float) and not math.isfinite(current):
            return False
        if isinstance(current, dict):
            stack.extend(current.values())
        elif isinstance(current, list):
            stack.extend(current)
    return True


def read_predictions(path: str | Path, what: str = "predictions") -> list[tuple[int, ResultRow]]:
    """Every line of a predictions file (a results file of ``judgesdk score``/``bench``, or one written
    elsewhere) as (line number, :class:`ResultRow`), read strictly (:func:`read_objects`) and validated
    (:func:`parse_row`). A line without its :func:`join_key` (``doc_id`` and ``system_id``: a served request
    that named none) cannot be joined to human scores: such lines are counted and skipped with one warning
    naming the first; a file with no line that has one is an :class:`InputError`. Errors name the line.

    ``path``: the file, or a results folder (``score --engine ray -o``), whose non-empty files are read in name
    order; ``what``: what the file is called in the errors."""
    out = []
    unkeyed: list[str] = []
    for file in _prediction_files(Path(path), what):
        for number, raw in read_objects(file, what):
            where = f"{file}:{number}"
            missing = [name for name in JOIN_FIELDS if raw.get(name) is None]
            if missing:
                unkeyed.append(f"{where}: missing {' and '.join(missing)}")
                continue
            out.append((number, parse_row(raw, where)))
    if unkeyed and not out:
        raise InputError(f"{unkeyed[0]}; every prediction line needs doc_id and system_id")
    if unkeyed:
        log.warning(
            "%s: %d line(s) without doc_id and system_id skipped (they cannot be joined to human scores; first: %s)", path, len(unkeyed), unkeyed[0]
        )
    return out


def _prediction_files(path: Path, what: str) -> list[Path]:
    """``path``, or for a results folder (``score --engine ray -o``) its files as the one results reader takes them
    (:func:`judgesdk.records.results.results_files`), less those with no line (a write task that had no rows)."""
    if not path.is_dir():
        return [path]
    files = [file for file in results_files(path) if file.read_bytes().strip()]
    if not files:
        raise InputError(f"{what} folder {path} holds no non-empty *{SUFFIX} file: is it the folder `judgesdk score --engine ray -o` wrote?")
    return files


def read_utf8(path: Path, what: str) -> str:
    """The text of ``path`` (a leading byte-order mark dropped); a typed error naming the first undecodable byte's
    line when it is not UTF-8. ``what``: what the file holds, named in the errors."""
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
