"""The files a meta-evaluation reads besides the human one: a judge's predictions and head-to-head verdicts.

Prediction files are JSON Lines, one judged output per line::

    {"doc_id": "...", "system_id": "M8", "score": 3.67}                 # a number, or
    {"doc_id": "...", "system_id": "M8", "response": "... Score: 4"}    # raw judge text, parsed

``score`` wins when it is a number; otherwise ``response`` is read with
:func:`judgesdk.estimation.parsing.parse_score` (``parse="rts"``: numbers on the Likert scale; ``"mcq"``:
letters A.. standing for the scale's values, 001's MCQ). ``score: null`` without a response counts
as unparsed. Optional fields feed the other indicators: ``samples`` (repeated scores -> variance
across repeats and sample spread), ``distribution`` (``coverage``, ``entropy``; as ``judgesdk
score`` writes it), ``latency_s``/``usage``/``cached``/``status`` (time and cost per 1,000).
The file format (which fields a line may hold, their types, the join key ``(doc_id, system_id)``) is
:class:`judgesdk.records.ResultRow`'s, read by :func:`judgesdk.records.read_predictions`; this module
turns each row into a :class:`Prediction`, parsing ``response`` text as a judge's answer. A key written
twice (a results file is a ledger: a retried row follows its error row) is resolved when the lines are
joined to the human scores (:func:`judgesdk.meta.items.join`).

Verdict files hold one head-to-head judgement per line (:func:`read_pairwise`); a verdict that
cannot be read is counted, never guessed.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Literal

from pydantic import BaseModel

from judgesdk.core import InputError, Scale
from judgesdk.estimation import parse_choice, parse_score
from judgesdk.meta.items import Key, PairwiseJudgement
from judgesdk.provider import Usage
from judgesdk.records import ResultRow, RowDistribution, part_row, read_objects, read_predictions

__all__ = ["PARSE_MODES", "ParseMode", "Prediction", "check_parse_mode", "load_pairwise", "load_predictions", "read_pairwise"]

PARSE_MODES = {"rts": "numbers on the Likert scale", "mcq": "letters A.. standing for the scale's values"}

ParseMode = Literal["rts", "mcq"]


class Prediction(BaseModel):
    """One prediction line, parsed."""

    doc_id: str
    system_id: str
    value: float | None
    status: str  # "ok", "unparsed", "out_of_range", or the line's own status
    samples: list[float | None] | None = None
    coverage: float | None = None
    entropy: float | None = None  # normalised to [0, 1] by ln(number of labels)
    latency_s: float | None = None
    usage: Usage | None = None
    cached: bool = False

    @property
    def key(self) -> Key:
        return (self.doc_id, self.system_id)



def check_parse_mode(mode: str, flag: str = "--parse") -> ParseMode:
    """``mode`` as a :data:`ParseMode`, or an InputError naming ``flag`` and what each mode reads."""
    if mode not in PARSE_MODES:
        choices = "; ".join(f"{m}: {what}" for m, what in PARSE_MODES.items())
        raise InputError(f"{flag} must be rts or mcq ({choices}), got {mode!r}")
    return mode  # type: ignore[return-value]


def _distribution_signals(dist: RowDistribution | None) -> tuple[float | None, float | None]:
    """(coverage, normalised entropy) from a row's ``distribution`` (judgesdk score's or a LabelDistribution dump)."""
    if dist is None:
        return None, None
    values = list(dist.probs.values()) if isinstance(dist.probs, dict) else list(dist.probs or [])
    entropy = dist.entropy
    if entropy is None and values:
        entropy = -sum(p * math.log(p) for p in values if p > 0)
    norm = entropy / math.log(len(values)) if entropy is not None and len(values) > 1 else None
    clip = lambda v: None if v is None else min(max(float(v), 0.0), 1.0)  # noqa: E731
    return clip(dist.coverage), clip(norm)


def _the_part(row: ResultRow, dimension: str | None, where: str) -> ResultRow:
    """The part of a several-criteria row (a served multi-question request, a fine-grained judgement) that
    ``dimension`` names (:func:`judgesdk.records.part_row`), so that a dimension is never read as the mean of the
    parts. A row without parts, or one whose own criterion is the dimension, is itself; a row with parts but none
    named ``dimension`` is a prediction with no value (status ``no_part``), counted, never another criterion's
    number. ``where`` names the row in errors."""
    parts = row.passed("parts")
    if dimension is None or not isinstance(parts, dict) or not parts or row.criterion == dimension:
        return row
    part = part_row(row, dimension, f"{where} parts.{dimension}")
    if part is None:
        return row.model_copy(update={"score": None, "status": "no_part", "response": None, "samples": None, "distribution": None})
    return part


def load_predictions(
    path: str | Path, scale: Scale, parse: ParseMode = "rts", flag: str = "--parse", dimension: str | None = None
) -> list[Prediction]:
    """Prediction lines of ``path`` (format in the module docstring), responses parsed on ``scale``.

    ``flag`` names the option that chose ``parse`` in error messages (``--parse-b`` for a second file);
    ``dimension``: the criterion being evaluated: a row with ``parts`` (several criteria judged in one request,
    as ``judgesdk serve --record`` writes a multi-question request) is read as its part of that name
    (:func:`_the_part`).
    """
    check_parse_mode(parse, flag)
    read_scale = scale if parse == "rts" else Scale.letters(scale.values)
    out = []
    for number, whole in read_predictions(path):  # the file format (fields, types, join key) is judgesdk.records'
        row = _the_part(whole, dimension, f"{path}:{number}")
        value, status = row.score, "ok"
        if value is None and row.response is not None:
            parsed = parse_score(row.response, read_scale)
            value, status = parsed.value, parsed.status
        elif value is None:
            status = row.status or "unparsed"
            if status == "ok":
                status = "unparsed"
        coverage, entropy = _distribution_signals(row.distribution)
        doc, system = row.key or ("", "")  # read_predictions refuses a line without one
        out.append(
            Prediction(
                doc_id=doc,
                system_id=system,
                value=value,
                status=status,
                samples=row.samples,
                coverage=coverage,
                entropy=entropy,
                latency_s=row.latency_s,
                usage=row.usage,
                cached=row.cached,
            )
        )
    return out


_WINNERS = {"first": "first", "a": "first", "1": "first", "second": "second", "b": "second", "2": "second", "tie": "tie", "c": "tie"}


def read_pairwise(path: str | Path) -> tuple[list[PairwiseJudgement], int]:
    """Head-to-head verdicts of the JSONL file at ``path`` and how many lines gave no readable verdict.

    A line holds ``doc_id``, ``first``, ``second`` (system ids in shown order) and ``winner``
    ("first"/"second"/"tie") or raw ``response`` (001 H2H: A = first, B = second, C = tie). An
    unclear response counts toward neither position; it is returned as a count so that a report
    can say how many were left out.
    """
    p = Path(path)
    out = []
    unclear = 0
    for number, row in read_objects(p, "pairwise"):
        where = f"{p}:{number}"
        if any(row.get(k) is None for k in ("doc_id", "first", "second")):
            raise InputError(f"{where}: a pairwise line needs doc_id, first and second (system ids in the order shown)")
        winner = row.get("winner")
        if winner is None and isinstance(row.get("response"), str):
            winner = parse_choice(row["response"], ["A", "B", "C", "tie", "first", "second"])
        if winner is None:
            unclear += 1
            continue
        if str(winner).lower() not in _WINNERS:
            raise InputError(f"{where}: winner must be first, second or tie, got {winner!r}")
        out.append(
            PairwiseJudgement(doc_id=str(row["doc_id"]), first=str(row["first"]), second=str(row["second"]), winner=_WINNERS[str(winner).lower()])
        )
    return out, unclear


def load_pairwise(path: str | Path) -> list[PairwiseJudgement]:
    """The readable verdicts of :func:`read_pairwise` on the JSONL file at ``path`` (unclear ones left out)."""
    return read_pairwise(path)[0]

