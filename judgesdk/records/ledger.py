"""The one writer of a results file: a locked, append-only ledger (see :mod:`judgesdk.records`)."""

from __future__ import annotations

import contextlib
import errno
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any, TextIO

from judgesdk.core import InputError
from judgesdk.records.rows import Ask, is_final, latest, scan_rows

try:  # POSIX; elsewhere files are not locked (documented)
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


# -- writing: the ledger ------------------------------------------------------------------------------


class Ledger:
    """A results file open for one run: locked against other writers, read once, appended to row by row.

    ``Ledger.open(path)`` creates the file (and its folder when ``create_parents``), takes an exclusive
    lock (a second run on the same file gets an :class:`InputError` at once), reads the rows already
    there, and drops a last line cut by a crash (its item has no row, so the run judges it again), so that
    the resumed file holds whole rows only and the readers that refuse an unreadable line
    (:func:`judgesdk.records.results.read_results`) read it; a whole last row that only lacks its newline is
    kept and ended. Unreadable lines in the middle are skipped and counted (:attr:`skipped`), never removed.
    Every :meth:`write` is flushed, so a crash or Ctrl-C keeps each row written before it.
    """

    def __init__(self, path: Path, handle: IO[bytes], rows: list[dict[str, Any]], skipped: int, what: str = "results file") -> None:
        self.path, self._handle, self.rows, self.skipped, self.what = path, handle, rows, skipped, what
        self.written = 0
        self.dropped_cut_line: int | None = None  # the number of the cut last line removed on opening
        self.unreadable_lines: list[int] = []  # unreadable lines left in place (skipped; their items judged again)

    @property
    def notice(self) -> str | None:
        """One line for the person resuming: what was done with the file's unreadable lines (None: there were none)."""
        said = []
        if self.dropped_cut_line is not None:
            said.append(f"its last line ({self.dropped_cut_line}) was cut by a stopped run and is dropped; its item is judged again")
        if self.unreadable_lines:
            lines = ", ".join(map(str, self.unreadable_lines[:5])) + (", ..." if len(self.unreadable_lines) > 5 else "")
            said.append(
                f"line(s) {lines} are not whole JSON rows and are skipped (their items are judged again); delete them: "
                "diff, gate --results and calibrate refuse the file while they are there"
            )
        return f"{self.what} {self.path}: " + "; ".join(said) if said else None

    @classmethod
    def open(cls, path: str | Path, *, what: str = "results file", create_parents: bool = False) -> Ledger:
        path = Path(path)
        if path.is_dir():
            raise InputError(f"{what} {path} is a directory: give the path of a results file, e.g. {path / 'results.jsonl'}")
        if path.exists() and not path.is_file():  # /dev/full reads zeros without end: never read what is not a file
            raise InputError(f"{what} {path} is not a regular file (a device, a pipe or a socket): give the path of a results file, e.g. results.jsonl")
        if create_parents:
            path.parent.mkdir(parents=True, exist_ok=True)
        try:
            handle = path.open("a+b", buffering=0)  # unbuffered: a write that fails leaves nothing queued to retry at close
        except OSError as exc:
            raise InputError(f"{what} {path}: cannot write it ({exc.strerror or exc})") from None
        try:
            _lock(handle, path, what)
            handle.seek(0)
            data = handle.read()
            scan = scan_rows(data, path)
            rows, skipped = scan.rows, len(scan.unreadable)
            _require_results(rows, path, what)
            start = data.rfind(b"\n") + 1
            dropped = scan.cut_end and data[start:].lstrip().startswith(b"{")  # a crash cut the last row
            if dropped:
                handle.truncate(start)  # keep the whole lines before it
            elif data and not data.endswith(b"\n"):
                _write_all(handle, b"\n")
        except BaseException:
            handle.close()
            raise
        ledger = cls(path, handle, rows, skipped, what)
        ledger.dropped_cut_line = scan.unreadable[-1] if dropped else None
        ledger.unreadable_lines = scan.unreadable[:-1] if dropped else list(scan.unreadable)
        return ledger

    def latest(self, ask: Ask | None = None) -> dict[str, dict[str, Any]]:
        """The latest row per item id answering ``ask`` (every row when None)."""
        return latest(self.rows, ask)

    def final_ids(self, ask: Ask | None = None) -> set[str]:
        """Ids whose latest row for ``ask`` is final: a re-run skips them."""
        return {key for key, row in self.latest(ask).items() if is_final(row)}

    def write(self, row: dict[str, Any]) -> None:
        """Append one row, whole or not at all: a write the file system refuses (a full disk, a file size limit)
        is cut back to the last whole row and becomes an :class:`InputError` saying what was kept and how to resume."""
        end = self._handle.seek(0, 2)
        try:
            _write_all(self._handle, encode_row(row))
        except OSError as exc:
            with contextlib.suppress(OSError):
                self._handle.truncate(end)
            raise InputError(
                f"{self.what} {self.path}: cannot write it ({exc.strerror or exc}); the {len(self.rows)} rows written before are kept: "
                "free space (or fix the file) and run the same command again to resume"
            ) from None
        self.rows.append(row)
        self.written += 1

    def close(self) -> None:
        if not self._handle.closed:
            self._handle.close()  # closing releases the lock

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _require_results(rows: list[dict[str, Any]], path: Path, what: str) -> None:
    """Every row already in the file is a judge result (it has the ``status`` or the ``format`` every row this
    ledger writes has): appending to an items file (``score X -o X``) or to a labels file would mix results
    into it, and its lines, read as results, would pass for items already judged."""
    for number, row in enumerate(rows, start=1):
        if "status" not in row and "format" not in row:
            looks = " (it looks like an items line: it has 'output')" if "output" in row else (
                " (it looks like a human label: it has 'label')" if "label" in row else ""
            )
            raise InputError(
                f"{what} {path} is not a results file: its row {number} is no judge result (no 'status'){looks}; give {what} a "
                "new file, or the results file of an earlier run to resume it"
            )


def _write_all(handle: IO[bytes], data: bytes) -> None:
    """``data`` to an unbuffered file, however many writes the OS takes; its OSError when it refuses more."""
    view = memoryview(data)
    while view:
        count = handle.write(view)
        if not count:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        view = view[count:]


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
    """``row`` as one JSON line of UTF-8 bytes, newline included; a lone surrogate in a text is written as its
    JSON escape, so the file stays UTF-8."""
    return (json.dumps(row, ensure_ascii=False) + "\n").encode("utf-8", errors="backslashreplace")


def append(sink: TextIO, record: dict[str, Any]) -> None:
    """``record`` as one JSON line to an open text ``sink``, flushed (unlocked; :class:`Ledger` is the locked
    writer)."""
    sink.write(json.dumps(record, ensure_ascii=False) + "\n")
    sink.flush()
