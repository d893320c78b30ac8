"""Append-only JSON Lines of results: written as each result exists, read back to resume a run.

A run that fails halfway keeps every line already written; re-running skips the ids already there.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TextIO

from judgesdk.errors import InputError
from judgesdk.types import JudgeResult


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


def done_ids(path: Path | None, key: str = "id") -> set[str]:
    """Ids already present in a results file (unreadable lines, e.g. one cut by a crash, are ignored)."""
    if path is None or not path.exists():
        return set()
    done = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            done.add(str(json.loads(line)[key]))
        except (json.JSONDecodeError, KeyError, TypeError):
            continue
    return done


def append(sink: TextIO, record: dict[str, Any]) -> None:
    sink.write(json.dumps(record, ensure_ascii=False) + "\n")
    sink.flush()


def read_objects(path: str | Path, what: str) -> list[tuple[int, dict[str, Any]]]:
    """Every non-blank line of a JSONL file as (line number, object); a typed error names the bad line.

    Strict on purpose, for inputs a person wrote (items, predictions, labels); results files that a
    crash may have cut are read by the tolerant readers beside them (``done_ids``, the gate's).
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
