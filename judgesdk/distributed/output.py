"""The Ray engine's output: a folder of judgesdk results files, and how each id ends up in it exactly once.

Each run writes new ``RUN_<write>_<task>.jsonl`` files through Ray's file datasink (any filesystem Ray
writes to: a local or network folder, ``s3://``...). Every line is a row of the one records schema
(:mod:`judgesdk.records`), so the files read like ``judgesdk score -o`` files. ``RUN`` sorts by start time,
so "the latest row per key" has the same meaning as in one ledger.

Exactly once, from three facts:

* **Within a run**, Ray re-runs a batch whose actor died (its output is dropped with the actor) and a write
  task whose worker died; a write task writes one file whose name is fixed by its task index, so a retried
  write replaces its file instead of adding a second one.
* **Across runs** (resume), a run judges only the ids without a final row for the same question
  (:func:`final_ids`, read with the records reader); an id whose row is an ``error`` is judged again.
* **After each run**, :func:`compact` keeps the latest row per ``(id, asked)`` and rewrites (write, then
  rename) the files holding superseded rows or lines cut by a crash, so the retried error row and the
  cut line are gone.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from judgesdk.core import InputError
from judgesdk.records import Ask, encode_row, is_final, latest, parse_rows, row_id

SUFFIX = ".jsonl"


@dataclass
class ResultFile:
    """One results file of the folder: its rows and each row's line, and the lines that did not parse."""

    path: str
    rows: list[dict[str, Any]] = field(default_factory=list)
    unreadable: int = 0


def filesystem(folder: str) -> tuple[Any, str]:
    """(pyarrow filesystem, path in it) for a local folder or a URI such as ``s3://bucket/results``."""
    import pyarrow.fs

    if "://" in folder:
        return pyarrow.fs.FileSystem.from_uri(folder)
    import os

    return pyarrow.fs.LocalFileSystem(), os.path.abspath(folder)


def read_folder(folder: str) -> list[ResultFile]:
    """Every results file of ``folder`` in run order (none when the folder does not exist yet)."""
    import pyarrow.fs

    fs, root = filesystem(folder)
    info = fs.get_file_info(root)
    if info.type == pyarrow.fs.FileType.NotFound:
        return []
    if info.type != pyarrow.fs.FileType.Directory:
        raise InputError(f"output {folder} is a file: the Ray engine writes a folder of results files; give a folder path")
    names = sorted(
        f.path for f in fs.get_file_info(pyarrow.fs.FileSelector(root)) if f.is_file and f.path.endswith(SUFFIX) and not f.base_name.startswith(".")
    )
    found = []
    for name in names:
        with fs.open_input_stream(name) as stream:
            rows, skipped = parse_rows(stream.read(), name)
        found.append(ResultFile(name, rows, skipped))
    return found


def final_ids(files: Iterable[ResultFile], ask: Ask) -> set[str]:
    """Ids whose latest row for ``ask`` is final: a resumed run skips them."""
    return {key for key, row in latest((row for f in files for row in f.rows), ask).items() if is_final(row)}


def latest_rows(files: Iterable[ResultFile], ask: Ask) -> dict[str, dict[str, Any]]:
    """The latest row per id answering ``ask``, in the order ids first appear."""
    return latest((row for f in files for row in f.rows), ask)


def compact(folder: str, ask: Ask) -> int:
    """Keep only the latest row per id for ``ask`` (other questions' rows stay) and drop unreadable lines;
    returns how many rows were dropped. Each changed file is written beside itself, then renamed over it."""
    files = read_folder(folder)
    last: dict[str, tuple[int, int]] = {}
    for f_index, f in enumerate(files):
        for r_index, row in enumerate(f.rows):
            key = row_id(row)
            if key is not None and ask.answers(row):
                last[key] = (f_index, r_index)
    keep_of = {position for position in last.values()}
    fs, _ = filesystem(folder)
    dropped = 0
    for f_index, f in enumerate(files):
        kept = [
            row for r_index, row in enumerate(f.rows)
            if not (ask.answers(row) and row_id(row) is not None) or (f_index, r_index) in keep_of
        ]  # fmt: skip
        if len(kept) == len(f.rows) and not f.unreadable:
            continue
        dropped += len(f.rows) - len(kept)
        if not kept:
            fs.delete_file(f.path)
            continue
        temporary = posixpath.join(posixpath.dirname(f.path), "." + posixpath.basename(f.path) + ".tmp")
        with fs.open_output_stream(temporary) as stream:
            stream.write(b"".join(encode_row(row) for row in kept))
        fs.move(temporary, f.path)
    return dropped


def rows_datasink(folder: str, run: str) -> Any:
    """Ray's block-based file datasink writing each block's ``row`` column, one JSON line per row, to
    ``<run>_<write>_<task>.jsonl``: the file name is fixed by the write task, so a retry replaces it."""
    from ray.data.datasource import BlockBasedFileDatasink, FilenameProvider

    class _RowsDatasink(BlockBasedFileDatasink):
        def write_block_to_file(self, block: Any, file: Any) -> None:
            rows = block.to_arrow().column("row").to_pylist()
            file.write("".join(row + "\n" for row in rows).encode("utf-8"))

    return _RowsDatasink(folder, filename_provider=FilenameProvider(dataset_uuid=run, file_format=SUFFIX[1:]))
