"""Human-annotated meta-evaluation benchmarks as typed records.

Three sources, one record type (:class:`HumanRecord`, the fields of ``../shared/data/README.md``):

* the normalized JSONL files beside the checkout (``summeval``, ``topicalchat``, ``newsroom``,
  ``hanna``), found by :func:`shared_data_dir`;
* any user JSONL with the same fields (:func:`load_jsonl`), e.g. a new benchmark;
* HANNA's public CSV layout (``hanna_stories_annotations.csv``: one row per story and annotator,
  three rows per story), averaged per story (:func:`load_hanna_csv`).

Criteria definitions and scales live in :mod:`judgesdk.prompting.presets`; here only the scores.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from judgesdk.core import InputError
from judgesdk.meta.items import Key

__all__ = [
    "DATASETS",
    "HumanRecord",
    "dimensions",
    "human_scores",
    "load_dataset",
    "load_hanna_csv",
    "load_jsonl",
    "require_dimension",
    "shared_data_dir",
]

DATASETS = ("summeval", "topicalchat", "newsroom", "hanna")
ENV_VAR = "JUDGESDK_SHARED_DATA"


class HumanRecord(BaseModel):
    """One judged output with its human scores (extra dataset-specific fields are kept)."""

    model_config = ConfigDict(frozen=True, extra="allow")

    dataset: str = ""
    doc_id: str
    system_id: str
    source: str | None = None
    context: str | None = None
    reference: str | None = None
    output: str = ""
    scores: dict[str, float]
    annotator_scores: dict[str, list[float]] | None = None
    item_index: int | None = None

    @property
    def key(self) -> Key:
        return (self.doc_id, self.system_id)


def shared_data_dir(start: Path | None = None) -> Path | None:
    """The benchmark folder: ``$JUDGESDK_SHARED_DATA`` if set, else ``../shared/data`` beside the checkout.

    Looks beside the repository containing this file and beside ``start`` (default: the current
    directory) and their parents. Returns None when absent: tests skip, loaders raise.
    """
    env = os.environ.get(ENV_VAR)
    if env:
        return Path(env) if Path(env).is_dir() else None
    roots = [Path(__file__).resolve().parents[2], (start or Path.cwd()).resolve()]
    for root in roots:
        for base in (root, *root.parents):
            candidate = base / "shared" / "data"
            if candidate.is_dir():
                return candidate
    return None


def _records(lines: Iterable[str], origin: str) -> list[HumanRecord]:
    out = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            out.append(HumanRecord.model_validate(json.loads(line)))
        except json.JSONDecodeError as exc:
            raise InputError(f"{origin}:{number}: not valid JSON ({exc.msg}); each line must be one JSON object") from exc
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"])
            raise InputError(
                f"{origin}:{number}: field {where!r}: {first['msg']}; a human record needs doc_id, system_id "
                "and scores {dimension: number} (see ../shared/data/README.md)"
            ) from exc
    return out


def load_jsonl(path: str | Path) -> list[HumanRecord]:
    """Records from the JSONL file at ``path`` with the normalized fields (one object per line). A missing file,
    one that is not UTF-8, or one without records is an :class:`~judgesdk.core.errors.InputError`."""
    p = Path(path)
    if not p.is_file():
        raise InputError(f"human file {p} does not exist: pass the normalized JSONL (e.g. ../shared/data/summeval.jsonl)")
    try:
        with p.open(encoding="utf-8") as fh:
            records = _records(fh, str(p))
    except UnicodeDecodeError:
        raise InputError(f"human file {p} is not UTF-8 text: save it as UTF-8") from None
    if not records:
        raise InputError(f"human file {p} has no records")
    return records


def load_dataset(name: str, data_dir: str | Path | None = None) -> list[HumanRecord]:
    """The dataset ``name`` (one of :data:`DATASETS`) from ``<name>.jsonl`` in ``data_dir`` or
    :func:`shared_data_dir`, read with :func:`load_jsonl`. An unknown name, or no data folder, is an
    :class:`~judgesdk.core.errors.InputError`."""
    if name not in DATASETS:
        raise InputError(f"unknown dataset {name!r}: use one of {', '.join(DATASETS)}, or load_jsonl(path)")
    base = Path(data_dir) if data_dir is not None else shared_data_dir()
    if base is None:
        raise InputError(f"benchmark data not found: set {ENV_VAR} to the folder holding {name}.jsonl")
    return load_jsonl(base / f"{name}.jsonl")


_HANNA_CRITERIA = ("Relevance", "Coherence", "Empathy", "Surprise", "Engagement", "Complexity")


def load_hanna_csv(path: str | Path) -> list[HumanRecord]:
    """HANNA's ``hanna_stories_annotations.csv``: one row per (story, annotator), three per story.

    Rows are grouped by ``Story ID``; ``scores`` are the annotators' means and ``annotator_scores``
    the raw values, per lower-cased criterion. ``doc_id`` is ``p00``, ``p01``... by order of first
    appearance of the prompt (the numbering of ``hanna.jsonl`` when the file is in Story ID order),
    ``system_id`` the ``Model`` column, ``reference`` the ``Human`` story. A ``path`` that is not a file, or
    a CSV without HANNA's columns, is an :class:`~judgesdk.core.errors.InputError`.
    """
    p = Path(path)
    if not p.is_file():
        raise InputError(f"HANNA CSV {p} does not exist")
    with p.open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    needed = {"Story ID", "Prompt", "Story", "Model", *_HANNA_CRITERIA}
    missing = needed - set(rows[0] if rows else ())
    if missing:
        raise InputError(f"{p}: not HANNA's annotation layout, missing columns {sorted(missing)}")
    stories: dict[str, list[Mapping[str, str]]] = {}
    for row in rows:
        stories.setdefault(row["Story ID"], []).append(row)
    prompts: dict[str, str] = {}
    out = []
    for story_id, group in stories.items():
        first = group[0]
        doc = prompts.setdefault(first["Prompt"], f"p{len(prompts):02d}")
        raw = {c.lower(): [_number(r[c], p, story_id, c) for r in group] for c in _HANNA_CRITERIA}
        record = {
            "dataset": "hanna",
            "doc_id": doc,
            "system_id": first["Model"],
            "source": first["Prompt"],
            "reference": first.get("Human"),
            "output": first["Story"],
            "scores": {c: sum(v) / len(v) for c, v in raw.items()},
            "annotator_scores": raw,
            "story_id": int(story_id) if story_id.isdigit() else story_id,
        }
        out.append(HumanRecord.model_validate(record))
    return out


def _number(text: str, path: Path, story: str, column: str) -> float:
    try:
        return float(text)
    except ValueError as exc:
        raise InputError(f"{path}: story {story}, column {column}: {text!r} is not a number") from exc


def dimensions(records: Sequence[HumanRecord]) -> list[str]:
    """Dimension names present in any of ``records``' scores, in first-seen order."""
    return list(dict.fromkeys(d for r in records for d in r.scores))


def require_dimension(records: Sequence[HumanRecord], dimension: str) -> None:
    """InputError naming the available dimensions when none of ``records`` scores ``dimension``."""
    if not any(dimension in r.scores for r in records):
        raise InputError(f"dimension {dimension!r} is not in the human file: available {', '.join(dimensions(records))}")


def human_scores(records: Sequence[HumanRecord], dimension: str) -> dict[Key, float]:
    """(doc_id, system_id) -> human score on ``dimension`` over ``records``; duplicate keys keep the first
    record. A dimension no record scores is an :class:`~judgesdk.core.errors.InputError` (:func:`require_dimension`)."""
    require_dimension(records, dimension)
    out: dict[Key, float] = {}
    for r in records:
        if dimension in r.scores and r.key not in out:
            out[r.key] = float(r.scores[dimension])
    return out
