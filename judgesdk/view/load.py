"""What the viewer reads: a run's rows (:func:`read_run`, the one place rows are read), and the files beside it:
the items the run judged (for their texts), a judge card, a gate report.

A run is a results file (``judgesdk score -o``, the gate's results), a folder of them (the Ray engine's
output, :mod:`judgesdk.distributed.output`: ``RUN_<write>_<task>.jsonl`` files in run order, or any folder
of results files, read in name order), or the per-criterion files ``judgesdk card`` writes for several
criteria (``RESULTS.<criterion>.jsonl``, found from ``RESULTS``). Every file or folder is read with the one
records reader (:func:`judgesdk.records.read_results`), and the latest row per ``(id, criterion)`` stands, as
``judgesdk diff`` reads a run (:func:`judgesdk.meta.diff.rows_by_key`), so the page's two-run deltas are the diff's.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from judgesdk.core import InputError
from judgesdk.distributed import read_folder
from judgesdk.gate import Verdict
from judgesdk.meta import Card
from judgesdk.records import distribution_problem, read_items, read_results, row_id

Key = tuple[str, str]  # (item id, criterion or "")
TEXT_FIELDS = ("output", "source", "reference", "context")


@dataclass
class Run:
    """One run as the viewer reads it: the latest row per ``(id, criterion)`` in order of first appearance."""

    name: str  # as given on the command line
    files: list[str]
    rows: dict[Key, dict[str, Any]]
    n_lines: int  # rows read, superseded ones included
    skipped: int  # lines that were not JSON (a line cut by a crash)
    dropped: list[str] = field(default_factory=list)  # rows left out, one line each saying why (a distribution that is none)
    asked: dict[str, int] = field(default_factory=dict)  # question key -> rows answering it (latest rows only)


def run_files(path: str | Path) -> list[Path]:
    """The results files a run consists of (see the module docstring); an :class:`InputError` saying what to
    give when there are none."""
    path = Path(path)
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.is_file() and p.suffix == ".jsonl" and not p.name.startswith("."))
        if not files:
            raise InputError(f"{path} is a folder without results files (*.jsonl): give a results file, or the folder a Ray run wrote")
        return files
    if path.exists():
        return [path]
    siblings = sorted(path.parent.glob(f"{path.stem}.*{path.suffix or '.jsonl'}")) if path.parent.is_dir() else []
    if siblings:  # judgesdk card with several criteria: RESULTS.<criterion>.jsonl
        return siblings
    raise InputError(f"results file {path} does not exist (nor {path.stem}.<criterion>{path.suffix or '.jsonl'} files beside it)")


def read_run(path: str | Path, name: str | None = None) -> Run:
    """The run at ``path`` (a results file, a results folder, or the stem of ``judgesdk card``'s files).

    ``path`` may also be a URL (``s3://...``) of a folder a Ray run wrote; ``name``: what the page calls the run,
    by default ``path`` as given. Rows are read leniently: a row that does not validate is kept as the file holds
    it, and lines that are not JSON are counted in ``skipped``; but a row whose distribution is no label
    distribution (a negative or infinite probability: :func:`judgesdk.records.distribution_problem`) is left out,
    its one line in :attr:`Run.dropped`, since nothing the page draws from it would mean anything. Returns the :class:`Run`; an :class:`InputError`
    when there are no results files."""
    if "://" in str(path):  # a Ray run written to s3://... or another filesystem pyarrow reaches
        parts = [(f.path, f.rows, f.unreadable) for f in read_folder(str(path))]
        if not parts:
            raise InputError(f"{path} holds no results files (*.jsonl)")
    else:
        files = [path] if Path(path).is_dir() else run_files(path)  # a folder is read whole by the records reader
        parts = []
        for file in files:
            read = read_results(file, lenient=True)  # a row that does not validate is shown, with why
            # the untyped rows, on purpose: the page shows every field a row holds, as the file holds it (a row that
            # does not validate included), and a remote run (read_folder) gives its rows as dicts too
            parts.append((str(file), read.raw, read.skipped))
    rows: dict[Key, dict[str, Any]] = {}
    n_lines = skipped = 0
    dropped: list[str] = []
    for file, found, lost in parts:
        n_lines += len(found)
        skipped += lost
        for number, row in enumerate(found, start=1):
            problem = distribution_problem(row, f"{file}: row {number}")
            if problem is not None:
                dropped.append(problem)
                continue
            item = row_id(row)
            if item is not None:
                rows[(item, str(row.get("criterion") or ""))] = row
    asked: dict[str, int] = {}
    for row in rows.values():
        key = str(row.get("asked") or "")
        asked[key] = asked.get(key, 0) + 1
    return Run(name=str(name if name is not None else path), files=[p[0] for p in parts], rows=rows, n_lines=n_lines, skipped=skipped, asked=asked, dropped=dropped)


def stamp(path: str | Path) -> tuple[tuple[str, int, int], ...]:
    """What changes when a run's files change (name, size, modification time): ``--serve`` rebuilds on a change
    (a run on a remote filesystem has no stamp: it is read once).

    ``path``: the run as :func:`read_run` takes it. Returns one (file, size in bytes, mtime in ns) per results
    file, or ``()`` for a remote run or one whose files cannot be found (never raises)."""
    if "://" in str(path):
        return ()
    try:
        files = run_files(path)
    except InputError:
        return ()
    found = []
    for f in files:
        try:
            st = f.stat()
        except OSError:
            continue
        found.append((str(f), st.st_size, st.st_mtime_ns))
    return tuple(found)


def _same_file(a: Path, b: Path) -> bool:
    try:
        if a.resolve() == b.resolve():
            return True
        return a.exists() and b.exists() and os.path.samefile(a, b)  # a hard link, or another name the OS resolves
    except (OSError, RuntimeError):  # a symlink loop or an unreadable path: not known to be the same
        return False


def refuse_an_input_as_output(output: str | Path, named: Sequence[tuple[str, str | Path | None]], flag: str = "-o") -> None:
    """An :class:`InputError` when ``output`` is a file the page is read from (writing the page there would
    overwrite it), before anything is written; None otherwise.

    ``output``: where the page would be written; ``named``: (what the command line calls it, the path given) for
    each input: a run is checked file by file (:func:`run_files`: a folder's results files, ``judgesdk card``'s
    per-criterion files), a remote run or a None path is passed over; ``flag``: the option that named ``output``."""
    target = Path(output)
    for what, given in named:
        if given is None or "://" in str(given):
            continue
        path = Path(given)
        try:
            files = [path, *run_files(path)] if what.startswith("RESULTS") else [path]
        except InputError:  # a run that is not there: reading it says so
            files = [path]
        for file in files:
            if _same_file(target, file):
                raise InputError(f"{flag} {output} is the {what} file {file}: writing the page there would overwrite it; choose another path, e.g. {flag} {target.with_name(target.stem + '-view.html')}")


def read_inputs(path: str | Path) -> dict[str, dict[str, str]]:
    """The texts of the items a run judged (the JSONL given to ``judgesdk score``), by item id (ids as the run
    gave them, :func:`judgesdk.records.item_ids`): ``output``, ``source``, ``reference``, ``context``.

    ``path``: the items file. Returns id -> {field: text}, holding only the fields an item sets as text."""
    texts: dict[str, dict[str, str]] = {}
    for item, _ in read_items(Path(path)):
        texts[item.id or ""] = {name: value for name in TEXT_FIELDS if isinstance(value := getattr(item, name), str)}
    return texts


def _json_file(path: str | Path, flag: str, what: str) -> Any:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{flag} {path} does not exist") from None
    except IsADirectoryError:
        raise InputError(f"{flag} {path} is a folder: give the {what} file") from None
    except UnicodeDecodeError:
        raise InputError(f"{flag} {path} is not UTF-8 text: give the {what} file") from None
    except OSError as exc:
        raise InputError(f"cannot read {flag} {path}: {exc.strerror or exc}") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{flag} {path} is not JSON (line {exc.lineno}): give the {what} file") from None


def read_card(path: str | Path) -> Card:
    """A judge card (``STEM.json``, :class:`judgesdk.meta.card.Card`).

    ``path``: the card's JSON file (given as ``--card``). Returns the :class:`Card`; an :class:`InputError`
    saying what to give for the card's Markdown, a missing or unreadable file, or JSON that is not a card."""
    hint = " (judgesdk card writes STEM.md and STEM.json: give the .json)" if str(path).endswith(".md") else ""
    if hint:
        raise InputError(f"--card {path} is the card's Markdown{hint}")
    data = _json_file(path, "--card", "judge card JSON (STEM.json from judgesdk card)")
    try:
        return Card.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "card"
        raise InputError(f"--card {path} is not a judge card JSON ({where}: {first['msg']}): give the STEM.json judgesdk card wrote") from None


def read_verdict(path: str | Path) -> Verdict:
    """A gate report (``judgesdk gate --json-report FILE``, or ``--json``'s output saved): the
    :class:`judgesdk.gate.verdict.Verdict`.

    ``path``: the report file (given as ``--gate``). Returns the :class:`Verdict`; an :class:`InputError` saying
    how to write one for a missing or unreadable file, or JSON that is not a gate report."""
    data = _json_file(path, "--gate", "gate report JSON (judgesdk gate --json-report FILE)")
    if not isinstance(data, Mapping) or "gates" not in data:
        raise InputError(f"--gate {path} is not a gate report: write one with judgesdk gate --json-report FILE")
    try:
        return Verdict.model_validate(data)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "report"
        raise InputError(f"--gate {path} is not a gate report ({where}: {first['msg']}): write one with judgesdk gate --json-report FILE") from None
