"""The System One wire format (``POST /v1/systemone``, TypeSafe's Jev format), both ways: the one mapping of
this schema, used by the systemone adapter, the litellm adapter (``litellm.asystemone``) and ``judgesdk serve``.

The schema is LiteLLM's (``litellm.types.decisions``: ``DecisionsRequestBody``, ``DecisionsResponse``); the
field mapping, as judgesdk uses it:

==========================  ==========================================================================
judgesdk                    System One
==========================  ==========================================================================
the judged input            ``state``: the :class:`~judgesdk.provider.decisions.DecisionInput` object (a
                            server also reads a text: a JSON object's text, or the output itself)
questions                   ``questions``: an object keyed by question name (the criterion's name)
score question              ``{"type": "score", "instructions", "criteria": [level, ...]}``, lowest level
                            first, 1-10 levels (judgesdk asks 2-10); a level with a description is sent as
                            ``"label: description"``, as LiteLLM translates OpenAI levels
score answer                ``probabilities``: ``{"0": p, ...}`` keyed by level index, ``legend``: index ->
                            level, ``score`` (the expected level index), ``confidence``
predicate question/answer   ``{"type": "noul", "instructions", "criteria": {"true", "false"}}`` / ``noul``: P(true)
choice question/answer      ``criteria``: ``{value: description}`` / ``probabilities``: ``{value: p}``, ``choice``;
                            keys are texts, so a boolean option is sent as ``"true"``/``"false"`` (LiteLLM's
                            rule), and a question holding both ``true`` and ``"true"`` cannot be sent
refusal                     the question's key left out of ``answers`` (how LiteLLM writes an OpenAI refusal);
                            judgesdk serve also lists it in ``refusals: {name: reason}``
missing answer              a key left out and not listed in ``refusals``
usage                       ``input_tokens``, ``output_tokens`` (``cached_tokens`` where a server sends it)
==========================  ==========================================================================
"""

from __future__ import annotations

import json
from typing import Any

from judgesdk.core import CapabilityError, Usage
from judgesdk.provider import (
    MAX_LEVELS,
    MIN_LEVELS,
    ChoiceQuestion,
    DecisionAnswer,
    DecisionInput,
    DecisionRequest,
    Level,
    PredicateQuestion,
    Question,
    RequestError,
    ScoreQuestion,
    ServedWire,
    checked_distribution,
    checked_probability,
    error_answer,
    is_number,
    json_kind,
    read_state,
)

__all__ = ["SYSTEMONE_WIRE", "MEDIA_FIELDS", "PATH", "keys", "read_request", "read_response", "request_body", "response_body"]

PATH = "/v1/systemone"  # under the server's origin
MEDIA_FIELDS = ("images", "assets", "audio", "videos")  # what a text judge refuses


def keys(request: DecisionRequest) -> list[str]:
    """Each question's key in ``questions`` and ``answers``: its name, or its index where names are missing or
    repeated (LiteLLM's ``systemone_keys``)."""
    names = [q.name for q in request.questions]
    if all(names) and len(set(names)) == len(names):
        return [str(n) for n in names]
    return [str(i) for i in range(len(names))]


def choice_key(value: str | bool) -> str:
    """A choice option as a System One key: booleans as ``"true"``/``"false"`` (LiteLLM's ``systemone_choice_key``)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    return value


def level_text(level: Level) -> str:
    return f"{level.label}: {level.description}" if level.description else level.label


# -- client side ----------------------------------------------------------------------------------------


def request_body(request: DecisionRequest, model: str) -> dict[str, Any]:
    """The ``/v1/systemone`` body for ``request`` (the arguments of ``litellm.asystemone``)."""
    return {"model": model, "state": request.input.state(), "questions": dict(zip(keys(request), map(question_body, request.questions)))}


def question_body(question: Question) -> dict[str, Any]:
    """One question as System One sends it, the value under its key in ``questions`` (see the module's table).

    ``question``: a score, choice or predicate question. Returns ``{"type", "instructions", "criteria"}``: a score
    question's levels lowest first (``"label: description"`` where a level has one); a choice question's options
    keyed by :func:`choice_key`; a predicate's ``true_when``/``false_when`` rules as ``"true"``/``"false"`` (type
    ``"noul"``, ``criteria`` left out when it has neither). Raises :class:`~judgesdk.core.errors.CapabilityError`
    when a choice question holds a boolean option and a text option with the same key."""
    if isinstance(question, ScoreQuestion):
        return {"type": "score", "instructions": question.instructions, "criteria": [level_text(level) for level in question.levels]}
    if isinstance(question, ChoiceQuestion):
        criteria = {choice_key(option.value): option.description or None for option in question.choices}
        if len(criteria) != len(question.choices):
            raise CapabilityError(f"question {question.name!r} has a boolean option and a text option with the same text: System One keys cannot tell them apart")
        return {"type": "choice", "instructions": question.instructions, "criteria": criteria}
    rules = {answer: rule for answer, rule in (("true", question.true_when), ("false", question.false_when)) if rule}
    return {"type": "noul", "instructions": question.instructions, **({"criteria": rules} if rules else {})}


def read_response(payload: Any, request: DecisionRequest) -> tuple[list[DecisionAnswer], Usage, str | None]:
    """The answers (one per question of ``request``, each with its status), the usage and the model the
    server names, from a ``/v1/systemone`` response body (JSON)."""
    if not isinstance(payload, dict) or not isinstance(payload.get("answers"), dict):
        found = "no 'answers' object" if isinstance(payload, dict) else f"{json_kind(payload)}, not an object"
        return [error_answer(q, f"the response has {found}") for q in request.questions], Usage(calls=1), None
    given = payload["answers"]
    refusals = listed if isinstance(listed := payload.get("refusals"), dict) else {}
    answers = []
    for key, question in zip(keys(request), request.questions):
        if key in given:
            answers.append(read_answer(question, given[key], f"answers.{key}"))
        elif key in refusals:
            reason = refusals[key]
            answers.append(DecisionAnswer(name=question.name, status="refused", reason=reason if isinstance(reason, str) and reason else "the server declined this question"))
        else:
            answers.append(DecisionAnswer(name=question.name, status="missing", reason=f"the response has no answer for {json.dumps(key)}"))
    model = payload.get("model")
    return answers, read_usage(payload.get("usage")), model if isinstance(model, str) and model else None


_ANSWER_TYPE = {"score": "score", "predicate": "noul", "choice": "choice"}


def read_answer(question: Question, answer: Any, field: str) -> DecisionAnswer:
    if not isinstance(answer, dict):
        return error_answer(question, f"{field} is {json_kind(answer)}, not an object")
    wanted = _ANSWER_TYPE[question.type]
    if answer.get("type") != wanted:
        return error_answer(question, f"{field}.type is {json.dumps(answer.get('type'))}, the question is a {wanted} question")
    unfitted = answer.get("unfitted") is True
    for number in ("score", "confidence"):
        if answer.get(number) is not None and not is_number(answer[number]):
            return error_answer(question, f"{field}.{number} is {json_kind(answer[number])}, not a number")
    if isinstance(question, PredicateQuestion):
        problem = checked_probability(answer.get("noul"), f"{field}.noul")
        if problem is not None:
            return error_answer(question, problem)
        return DecisionAnswer(name=question.name, status="ok", probability=float(answer["noul"]), unfitted=unfitted)
    given = answer.get("probabilities")
    if not isinstance(given, dict):
        return error_answer(question, f"{field}.probabilities is {json_kind(given)}, not an object")
    if isinstance(question, ScoreQuestion):
        wanted_keys, what = [str(i) for i in range(len(question.levels))], "levels"
    else:
        wanted_keys, what = [choice_key(option.value) for option in question.choices], "options"
    if len(given) != len(wanted_keys):
        return error_answer(question, f"{field}.probabilities has {len(given)} entries, the question has {len(wanted_keys)} {what}")
    stray = [key for key in given if key not in wanted_keys]
    if stray:
        return error_answer(question, f"{field}.probabilities has the key {json.dumps(stray[0])}, which is not one of the question's {what}")
    probabilities, problem = checked_distribution([given[key] for key in wanted_keys], len(wanted_keys), f"{field}.probabilities", what)
    if probabilities is None:
        return error_answer(question, problem)
    return DecisionAnswer(
        name=question.name, status="ok", probabilities=probabilities, unfitted=unfitted, score=answer.get("score"), confidence=answer.get("confidence")
    )


def read_usage(usage: Any) -> Usage:
    if not isinstance(usage, dict):
        return Usage(calls=1)

    def count(value: Any) -> int:
        return int(value) if is_number(value) and value >= 0 else 0

    return Usage(
        input_tokens=count(usage.get("input_tokens")), output_tokens=count(usage.get("output_tokens")),
        cached_input_tokens=count(usage.get("cached_tokens")), cache_write_input_tokens=count(usage.get("cache_write_tokens")), calls=1,
    )  # fmt: skip


# -- server side ----------------------------------------------------------------------------------------


def read_request(body: Any, *, max_questions: int) -> tuple[str, DecisionRequest, dict[str, str]]:
    """The model asked for, the decision request and the ids its state names, from a ``/v1/systemone``
    request body; what this server cannot take is a :class:`RequestError` naming the field."""
    if not isinstance(body, dict):
        raise RequestError(f"the request body must be a JSON object, got {json_kind(body)}")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise RequestError("model is required (a text naming a judge of GET /v1/models)", param="model")
    for field in MEDIA_FIELDS:
        if body.get(field):
            raise RequestError(f"{field}: this server judges text only (no images, assets, audio or video)", param=field, code="unsupported_input")
    if "input" in body:
        raise RequestError("input belongs to the OpenAI format (POST /v1/decisions); System One takes state", param="input")
    decision_input, ids = read_state(body.get("state"), "state") if body.get("state") is not None else _no_state()
    questions = body.get("questions")
    if not isinstance(questions, dict) or not questions:
        raise RequestError("questions must be a non-empty object of named questions", param="questions")
    if len(questions) > max_questions:
        raise RequestError(
            f"{len(questions)} questions: this server takes at most {max_questions} per request", param="questions", code="too_many_questions"
        )
    parsed = tuple(read_question(str(name), q, f"questions.{name}") for name, q in questions.items())
    return model, DecisionRequest(input=decision_input, questions=parsed), ids


def _no_state() -> tuple[DecisionInput, dict[str, str]]:
    raise RequestError("state is required: the text or object to judge", param="state")


def read_question(name: str, question: Any, where: str) -> Question:
    if not name:
        raise RequestError("a question name (its key in questions) must be a non-empty text", param="questions")
    if not isinstance(question, dict):
        raise RequestError(f"{where} must be an object, got {json_kind(question)}", param=where)
    kind = question.get("type")
    if kind == "box":
        raise RequestError(f"{where} is a box question: this server judges text and answers noul, choice and score questions", param=f"{where}.type", code="unsupported_question")
    if kind not in ("noul", "choice", "score"):
        raise RequestError(f"{where}.type must be noul, choice or score, got {json.dumps(kind)}", param=f"{where}.type")
    instructions = question.get("instructions")
    if instructions is not None and not isinstance(instructions, str):
        instructions = json.dumps(instructions, ensure_ascii=False)
    criteria = question.get("criteria")
    if kind == "noul":
        rules = criteria if isinstance(criteria, dict) else {}
        if criteria is not None and not isinstance(criteria, dict):
            raise RequestError(f"{where}.criteria must be an object with 'true' and/or 'false'", param=f"{where}.criteria")
        if instructions is None and not rules:
            raise RequestError(f"{where} needs instructions or criteria", param=where)
        return PredicateQuestion(name=name, instructions=instructions or "", true_when=_text(rules.get("true")), false_when=_text(rules.get("false")))
    if kind == "choice":
        if not isinstance(criteria, dict) or not 2 <= len(criteria) <= 255:
            raise RequestError(f"{where}.criteria must be an object of 2-255 options", param=f"{where}.criteria")
        options = [{"value": str(value), "description": _text(description)} for value, description in criteria.items()]
        return ChoiceQuestion(name=name, instructions=instructions or "", choices=options)
    if not isinstance(criteria, list):
        raise RequestError(f"{where}.criteria must be an array of levels, lowest first", param=f"{where}.criteria")
    if not MIN_LEVELS <= len(criteria) <= MAX_LEVELS:
        raise RequestError(
            f"{where}.criteria has {len(criteria)} levels: this server takes {MIN_LEVELS}-{MAX_LEVELS}", param=f"{where}.criteria",
            code="too_many_levels" if len(criteria) > MAX_LEVELS else "too_few_levels",
        )  # fmt: skip
    levels = tuple(Level(label=_text(level) or f"level {i}") for i, level in enumerate(criteria))
    return ScoreQuestion(name=name, instructions=instructions or "", levels=levels)


def _text(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def response_body(request: DecisionRequest, answers: list[DecisionAnswer], model: str, usage: Usage) -> dict[str, Any]:
    """The ``/v1/systemone`` response for ``answers`` (one per question of ``request``): an answer that is not
    ``ok`` is left out of ``answers`` and listed in ``refusals`` with its reason."""
    body_answers: dict[str, Any] = {}
    refusals: dict[str, str] = {}
    for key, question, answer in zip(keys(request), request.questions, answers):
        if answer.status != "ok":
            refusals[key] = answer.reason or "not answered"
        else:
            body_answers[key] = answer_body(question, answer)
    return {
        "model": model,
        "answers": body_answers,
        "usage": {"input_tokens": usage.input_tokens, "output_tokens": usage.output_tokens},
        **({"refusals": refusals} if refusals else {}),
    }


def answer_body(question: Question, answer: DecisionAnswer) -> dict[str, Any]:
    flag = {"unfitted": True} if answer.unfitted else {}
    if isinstance(question, PredicateQuestion):
        return {"type": "noul", "noul": answer.probability, **flag}
    probs = answer.probabilities or ()
    if isinstance(question, ScoreQuestion):
        return {
            "type": "score", "score": sum(i * p for i, p in enumerate(probs)), "confidence": max(probs),
            "legend": {str(i): level.label for i, level in enumerate(question.levels)},
            "probabilities": {str(i): p for i, p in enumerate(probs)}, **flag,
        }  # fmt: skip
    best = max(range(len(probs)), key=probs.__getitem__)
    return {
        "type": "choice", "choice": choice_key(question.choices[best].value), "confidence": max(probs),
        "probabilities": {choice_key(option.value): p for option, p in zip(question.choices, probs)}, **flag,
    }  # fmt: skip


SYSTEMONE_WIRE = ServedWire(read_request=read_request, response_body=response_body)  # what `judgesdk serve` answers in this format
