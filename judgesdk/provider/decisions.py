"""Decision requests: one judged input and typed questions, answered in one call with one answer per question.

Decision APIs (OpenAI Decisions' ``POST /v1/decisions``, System One's ``POST /v1/systemone``, LiteLLM's
``adecisions`` / ``asystemone``, ``judgesdk serve``) return what judgesdk otherwise reads out of a model: a
probability for each level of a scale, for each option of a choice, or that a statement is true. This module
holds their shared, schema-neutral form, carried by :class:`judgesdk.provider.protocol.GenerateRequest`
(``decision``) and :class:`~judgesdk.provider.protocol.GenerateResponse` (``decisions``), so the cache, the
coalescing, retries, rate limits, the budget and provenance treat a decision call like any other call.

* :class:`DecisionInput`: the judged text as a JSON object (``output`` with optional ``source``, ``context``,
  ``reference``; or ``outputs`` ``{"A": ..., "B": ...}`` for a comparison). The wire modules send it as
  they must (a System One ``state`` object; OpenAI's ``input`` as that object's JSON text, which LiteLLM's
  proxy also takes) and ``judgesdk serve`` reads it back from either.
* Questions: :class:`ScoreQuestion` (ordered levels, lowest first, 2-10), :class:`PredicateQuestion`
  (probability that a statement is true), :class:`ChoiceQuestion` (typed options: ``"true"`` and ``True``
  are different values).
* :class:`DecisionAnswer`: one per question, with a status. ``refused`` (the server declined the question)
  and ``missing`` (the response has no answer for it) carry no probabilities, never a 0; ``error`` names the
  field that made the answer unusable: probabilities that do not sum to 1 within :data:`SUM_TOLERANCE`, a
  count that differs from the question's levels or options, a value of the wrong type.

The wire mappings live in one module per schema (``judgesdk.providers.decisions_wire`` for OpenAI Decisions,
``judgesdk.providers.systemone_wire`` for System One), used by the adapters and by ``judgesdk serve`` alike.
"""

from __future__ import annotations

import json
import math
from collections.abc import Awaitable, Callable, Sequence
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictStr, model_validator

from judgesdk.core import Usage

__all__ = [
    "ServedWire",
    "MAX_LEVELS",
    "MIN_LEVELS",
    "SUM_TOLERANCE",
    "AnswerStatus",
    "ChoiceOption",
    "ChoiceQuestion",
    "DecisionAnswer",
    "DecisionInput",
    "DecisionRequest",
    "Level",
    "PredicateQuestion",
    "Question",
    "RequestError",
    "ScoreQuestion",
    "checked_distribution",
    "checked_probability",
    "chunks",
    "error_answer",
    "is_number",
    "json_kind",
    "read_state",
]

MIN_LEVELS, MAX_LEVELS = 2, 10  # score questions: System One takes 1-10 levels, OpenAI at least 2; judgesdk asks 2-10
MAX_CHOICES = 255
SUM_TOLERANCE = 1e-6  # probabilities of one answer must sum to 1 within this


class DecisionInput(BaseModel):
    """What is judged, as the JSON object a decision request carries: ``output`` (or ``outputs``, the two
    sides of a comparison by label) with the optional ``source``, ``context`` and ``reference``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    output: str | None = None
    outputs: dict[str, str] | None = None  # a comparison: {"A": ..., "B": ...}
    source: str | None = None
    context: str | None = None
    reference: str | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> DecisionInput:
        if (self.output is None) == (self.outputs is None):
            raise ValueError("a decision input has either 'output' (one judged text) or 'outputs' (a comparison)")
        return self

    def state(self) -> dict[str, Any]:
        """The JSON object sent (System One ``state``; OpenAI ``input`` as its JSON text): the fields set, in a fixed order."""
        return self.model_dump(mode="json", exclude_none=True)

    def as_text(self) -> str:
        return json.dumps(self.state(), ensure_ascii=False)


class Level(BaseModel):
    """One level of a :class:`ScoreQuestion`: its ``label`` and, optionally, a ``description`` of what earns it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    label: str
    description: str = ""


class ScoreQuestion(BaseModel):
    """Rate the input on ordered ``levels`` (lowest first): the answer is a probability per level."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: Literal["score"] = "score"
    name: str | None = None
    instructions: str
    levels: tuple[Level, ...] = Field(min_length=MIN_LEVELS, max_length=MAX_LEVELS)


class PredicateQuestion(BaseModel):
    """How likely a statement about the input is true (System One's ``noul``): the answer is one probability."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: Literal["predicate"] = "predicate"
    name: str | None = None
    instructions: str
    true_when: str = ""  # System One's criteria.true / .false: what makes the answer true, or false
    false_when: str = ""


class ChoiceOption(BaseModel):
    """One option of a :class:`ChoiceQuestion`: its typed ``value`` (a text or a boolean) and, optionally, a
    ``description`` of when it applies."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    value: StrictStr | StrictBool  # typed: the string "true" and the boolean true are different options
    description: str = ""


class ChoiceQuestion(BaseModel):
    """Pick one of ``choices``: the answer is a probability per option, in the question's order."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    type: Literal["choice"] = "choice"
    name: str | None = None
    instructions: str
    choices: tuple[ChoiceOption, ...] = Field(min_length=2, max_length=MAX_CHOICES)

    @model_validator(mode="after")
    def _distinct(self) -> ChoiceQuestion:
        typed = [(type(c.value).__name__, c.value) for c in self.choices]
        if len(set(typed)) != len(typed):
            raise ValueError("choice values must be distinct")
        return self


Question = Annotated[ScoreQuestion | PredicateQuestion | ChoiceQuestion, Field(discriminator="type")]


class DecisionRequest(BaseModel):
    """One input and the questions asked about it, answered in one call (in this order)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    input: DecisionInput
    questions: tuple[Question, ...] = Field(min_length=1)

    def as_text(self) -> str:
        """The request's text (the input and every question's instructions, levels and options): what rate
        limits and estimates count tokens of, as they count a prompt's."""
        parts = [self.input.as_text()]
        for q in self.questions:
            parts.append(q.instructions)
            if isinstance(q, ScoreQuestion):
                parts.extend(f"{level.label} {level.description}".strip() for level in q.levels)
            elif isinstance(q, ChoiceQuestion):
                parts.extend(f"{option.value} {option.description}".strip() for option in q.choices)
            else:
                parts.extend(text for text in (q.true_when, q.false_when) if text)
        return "\n".join(parts)


AnswerStatus = Literal["ok", "refused", "missing", "error"]


class DecisionAnswer(BaseModel):
    """The answer to one question. Only an ``ok`` answer carries probabilities: ``probabilities`` per level
    (score) or per option in the question's order (choice), ``probability`` that the statement is true
    (predicate). ``score`` and ``confidence`` are what the server stated, kept for the record; ``reason``
    says why an answer is not ``ok`` (the field at fault for ``error``). ``unfitted``: the server says its
    answer comes from no fitted model (``judgesdk serve --allow-unfitted``)."""

    name: str | None = None
    status: AnswerStatus
    probabilities: tuple[float, ...] | None = None
    probability: float | None = None
    score: float | None = None
    confidence: float | None = None
    reason: str = ""
    unfitted: bool = False


def chunks(request: DecisionRequest, size: int) -> list[DecisionRequest]:
    """``request`` split into requests of at most ``size`` questions (a path that takes fewer than a request
    holds: LiteLLM's 128); their answers, concatenated, answer ``request``."""
    if size < 1 or len(request.questions) <= size:
        return [request]
    return [
        request.model_copy(update={"questions": request.questions[start : start + size]})
        for start in range(0, len(request.questions), size)
    ]


async def ask_in_parts(
    request: DecisionRequest, size: int, ask: Callable[[DecisionRequest], Awaitable[tuple[list[DecisionAnswer], Usage, str | None]]]
) -> tuple[list[DecisionAnswer], Usage, str | None]:
    """``request`` asked in :func:`chunks` of at most ``size`` questions, one ``ask`` (a call: its answers, usage and
    the model the server names) after another: the answers in order, the usage summed, the first model named. The
    one loop of every decision adapter."""
    answers: list[DecisionAnswer] = []
    usage = Usage()
    served: str | None = None
    for part in chunks(request, size):
        found, spent, model = await ask(part)
        answers += found
        usage = usage + spent
        served = served or model
    return answers, usage, served


class ServedWire(BaseModel):
    """One decision wire format as a server reads and answers it (``judgesdk serve``): the adapters that speak a
    format as clients own its mapping (``providers/decisions_wire.py``, ``providers/systemone_wire.py``) and declare
    this for the server, so that a route is a format, not a module.

    ``read_request(body, max_questions=n)`` turns a request body into ``(model, request, ids)`` (the ids a client
    gave each question) or raises :class:`RequestError`; ``response_body(request, answers, model, usage)`` writes
    the answer the client's SDK reads."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    read_request: Callable[..., tuple[str, DecisionRequest, dict[str, str]]]
    response_body: Callable[[DecisionRequest, list[DecisionAnswer], str, Usage], dict[str, Any]]


class RequestError(ValueError):
    """A decision request a server cannot take, as the wire modules find it while reading one (``judgesdk
    serve``): the HTTP ``status`` and the error body's ``message``, ``param`` (the field at fault) and ``code``."""

    def __init__(self, message: str, *, param: str | None = None, code: str = "invalid_request", status: int = 400) -> None:
        super().__init__(message)
        self.message, self.param, self.code, self.status = message, param, code, status

    def body(self) -> dict[str, Any]:
        """The error body both schemas answer with (OpenAI's, which LiteLLM's proxy also gives on /v1/systemone)."""
        kind = "invalid_request_error" if self.status < 500 else "server_error"
        return {"error": {"message": self.message, "type": kind, "param": self.param, "code": self.code}}


# -- checking an answer's numbers (both wire formats) -------------------------------------------------


def is_number(value: object) -> bool:
    """Whether ``value`` is a finite JSON number (true/false are not numbers, nor are NaN and infinities)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def error_answer(question: Question, reason: str) -> DecisionAnswer:
    """The ``error`` answer to ``question`` (carrying its name), with ``reason`` saying what made the server's
    answer unusable (the field at fault); no probabilities."""
    return DecisionAnswer(name=question.name, status="error", reason=reason)


def checked_probability(value: object, field: str) -> str | None:
    """Why ``value`` is not a probability (None when it is one), naming ``field``."""
    if not is_number(value):
        return f"{field} is {json.dumps(value) if _jsonable(value) else type(value).__name__}, not a number"
    if not 0.0 <= float(value) <= 1.0:  # type: ignore[arg-type]
        return f"{field} is {value}, outside 0-1"
    return None


def checked_distribution(values: Sequence[object], expected: int, field: str, what: str) -> tuple[tuple[float, ...] | None, str]:
    """``values`` as probabilities when there are ``expected`` of them (the question's ``what``: levels or
    options), each a probability, summing to 1 within :data:`SUM_TOLERANCE`; else None and why, naming ``field``."""
    if len(values) != expected:
        return None, f"{field} has {len(values)} entries, the question has {expected} {what}"
    for index, value in enumerate(values):
        problem = checked_probability(value, f"{field}[{index}]")
        if problem is not None:
            return None, problem
    total = math.fsum(float(v) for v in values)  # type: ignore[arg-type]
    if abs(total - 1.0) > SUM_TOLERANCE:
        return None, f"{field} sum to {total:.9g}, not 1 (tolerance {SUM_TOLERANCE:g})"
    return tuple(float(v) for v in values), ""  # type: ignore[arg-type]


def _jsonable(value: object) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


# -- reading the judged input a request carries (both wire formats, server side) ---------------------

TEXT_FIELDS = ("output", "source", "context", "reference")
ID_FIELDS = ("id", "doc_id", "system_id")  # passed through to a server's record (``judgesdk serve --record``)


def read_state(value: object, field: str) -> tuple[DecisionInput, dict[str, str]]:
    """The judged input of a System One ``state`` or an OpenAI ``input`` text, and the ids it names.

    A JSON object (or a text holding one) with ``output`` (or ``outputs``: ``{"A": ..., "B": ...}``) and
    optional ``source``, ``context``, ``reference`` and ``id``/``doc_id``/``system_id``; any other text is the
    output itself. Anything else is a :class:`RequestError` naming ``field``.

    ``value``: the request's ``state`` object or ``input`` text; ``field``: its name in the request, used in errors.
    """
    if isinstance(value, str):
        if not value.strip():
            raise RequestError(f"{field} is empty: there is nothing to judge", param=field)
        try:
            parsed = json.loads(value)
        except ValueError:
            return DecisionInput(output=value), {}
        if not isinstance(parsed, dict) or not ({"output", "outputs"} & set(parsed)):
            return DecisionInput(output=value), {}
        value = parsed
    if not isinstance(value, dict):
        raise RequestError(f"{field} must be a text or an object with 'output', got {json_kind(value)}", param=field)
    if not value:
        raise RequestError(f"{field} is empty: give 'output' (and optionally source, context, reference)", param=field)
    known = (*TEXT_FIELDS, "outputs", *ID_FIELDS)
    unknown = sorted(str(key) for key in value if key not in known)
    if unknown:
        raise RequestError(f"{field}.{unknown[0]} is not a field this server reads; it reads {', '.join(known)}", param=f"{field}.{unknown[0]}")
    texts: dict[str, Any] = {}
    for name in TEXT_FIELDS:
        item = value.get(name)
        if item is not None and not isinstance(item, str):
            raise RequestError(f"{field}.{name} must be a text, got {json_kind(item)}", param=f"{field}.{name}")
        texts[name] = item
    outputs = value.get("outputs")
    if outputs is not None:
        if not isinstance(outputs, dict) or len(outputs) < 2 or not all(isinstance(v, str) and v.strip() for v in outputs.values()):
            raise RequestError(f"{field}.outputs must map two or more labels to non-empty texts", param=f"{field}.outputs")
        texts["outputs"] = {str(k): v for k, v in outputs.items()}
    if (texts["output"] is None or not texts["output"].strip()) and outputs is None:
        raise RequestError(f"{field}.output is missing or empty: there is nothing to judge", param=f"{field}.output")
    ids = {}
    for name in ID_FIELDS:
        item = value.get(name)
        if item is not None:
            if isinstance(item, bool) or not isinstance(item, (str, int)):
                raise RequestError(f"{field}.{name} must be a text or an integer", param=f"{field}.{name}")
            ids[name] = str(item)
    try:
        return DecisionInput(**texts), ids
    except ValueError as exc:
        raise RequestError(f"{field}: {exc}", param=field) from None


def json_kind(value: object) -> str:
    """How a JSON value reads in an error message: its JSON type."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a text"
    if isinstance(value, list):
        return "an array"
    return "an object" if isinstance(value, dict) else type(value).__name__
