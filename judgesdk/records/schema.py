"""The row schema of a results file: the fields commands read from a row, typed, and the join key to human
scores (see :mod:`judgesdk.records`)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, ValidationError, ValidationInfo, field_validator

from judgesdk.core import InputError
from judgesdk.provider import Usage
from judgesdk.records.rows import composite_id

# -- the row schema -----------------------------------------------------------------------------------


def _where(info: ValidationInfo) -> str:
    return str((info.context or {}).get("where", "result row"))


def finite_or_none(value: Any, where: str, field: str) -> float | None:
    """A row's number field: a finite JSON number (true/false are not numbers), or None for null.

    ``value``: the field's value as read; ``where``: the file and line, and ``field``: the field's name, both named
    in the :class:`InputError` raised for anything else (NaN, infinity, a text)."""
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


def _probability(value: Any, where: str, field: str) -> float:
    """One probability of a row's distribution: a finite number from 0 to 1 (a negative, infinite or larger one is
    no probability, and would make every measure read from the distribution, its entropy first, meaningless)."""
    number = _finite(value, where, field)
    if not 0.0 <= number <= 1.0:
        raise InputError(f"{where}: {field} must be a probability from 0 to 1, got {number!r}; the row's distribution is no label distribution")
    return number


def distribution_problem(row: Mapping[str, Any], where: str = "result row") -> str | None:
    """Why ``row``'s ``distribution`` is no label distribution, as every reader of results reads it
    (:class:`RowDistribution`: probabilities finite numbers from 0 to 1, coverage and entropy finite numbers), or
    None when it is one or the row has none. For readers that keep rows as the file holds them (the viewer), so that
    they can skip such a row with this one line instead of failing on it later.

    ``row``: the row as read from the file; ``where``: the file and row, which the returned line starts with."""
    value = row.get("distribution")
    if value is None:
        return None
    if not isinstance(value, Mapping):
        return f"{where}: distribution must be an object with probs, coverage and entropy (as judgesdk score writes it) or null"
    try:
        RowDistribution.model_validate(dict(value), context={"where": where})
    except InputError as exc:
        return str(exc)
    except ValidationError as exc:
        first = exc.errors()[0]
        return f"{where}: distribution.{'.'.join(str(p) for p in first['loc'])}: {first['msg']}"
    return None


def _text(value: Any) -> str | None:
    """A name or id field as text (a number such as 0 included), as :func:`row_id` reads ids."""
    return None if value is None else value if isinstance(value, str) else str(value)


class _PassesThrough(BaseModel):
    """A model that keeps the fields it does not type (``extra="allow"``) and reads them by name."""

    model_config = ConfigDict(extra="allow")

    def passed(self, name: str) -> Any:
        """The field ``name`` that this model passes through untyped, as the file holds it; None when the file
        has no such field. ``name`` is any field the model does not type (the writer's :attr:`PASSED_THROUGH`
        fields, or one a file from elsewhere adds)."""
        return (self.model_extra or {}).get(name)


class RowDistribution(_PassesThrough):
    """A row's ``distribution``: the summary :func:`result_line` writes of the result's label distribution.

    ``probs`` (``{label: probability}``, or a list of probabilities from elsewhere), ``coverage`` and
    ``entropy`` are what readers use; the writer also writes :attr:`PASSED_THROUGH`, kept as they are (read
    them with :meth:`passed`).
    """

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
            return {str(label): _probability(p, where, "distribution.probs[]") for label, p in value.items()}
        if isinstance(value, list):
            return [_probability(p, where, "distribution.probs[]") for p in value]
        raise InputError(f"{where}: distribution.probs must be an object {{label: probability}} or a list of probabilities")

    @field_validator("coverage", "entropy", mode="before")
    @classmethod
    def _number(cls, value: Any, info: ValidationInfo) -> float | None:
        return finite_or_none(value, _where(info), f"distribution.{info.field_name}")


class ResultRow(_PassesThrough):
    """One row of a results file, typed: what :func:`row_for` writes, and what the commands read back.

    Written by the writer: ``id`` (the item's, :func:`item_ids`), ``asked`` (:class:`Ask`), the input line's
    other fields (``doc_id``, ``system_id``: the :func:`join_key`), and the result (:func:`result_line`):
    ``score``, ``status``, ``criterion``, ``method``, ``distribution`` (:class:`RowDistribution`),
    ``latency_s``, ``usage``, ``cached``, and :attr:`PASSED_THROUGH`. A predictions file written elsewhere for
    ``meta-eval`` may hold ``response`` (raw judge text, parsed by the reader) and ``samples`` (repeated
    scores) instead. Other fields pass through as they are (``extra="allow"``): a reader takes them with
    :meth:`passed` and checks them itself, so a file from elsewhere is not refused for them.

    Validate with :func:`parse_row`: a field of the wrong type is an :class:`InputError` naming the line
    and the field. Numbers must be finite JSON numbers (never text); names and ids are text (a number is
    read as its text); a ``status`` that is empty or not text counts as none; a ``response`` that is not
    text is ignored; ``cached`` is read as true or false.
    """

    # written by result_line, not typed here: a reader that needs one checks it (the gate rebuilds a JudgeResult
    # from the whole row, which checks them)
    PASSED_THROUGH: ClassVar[tuple[str, ...]] = (
        "method_reason", "rationale", "raw", "provider", "model", "error", "notes", "details", "parts", "item_id",
        "provenance",  # what produced the result (judgesdk.core.provenance); read by `judgesdk diff` and the provenance gate
    )  # fmt: skip

    id: str | None = None
    format: str | None = None  # judgesdk.records.results.RESULTS_FORMAT; None: written before formats were named
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

    @field_validator("id", "format", "doc_id", "system_id", "criterion", "method", "asked", mode="before")
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

    @property
    def row_id(self) -> str | None:
        """The item the row belongs to, as :func:`judgesdk.records.rows.row_id` reads it from the file: its
        ``id``, else ``doc_id:system_id``; None without either."""
        return self.id if self.id is not None else composite_id({"doc_id": self.doc_id, "system_id": self.system_id})


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
