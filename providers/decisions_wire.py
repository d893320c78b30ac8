"""The OpenAI Decisions wire format (``POST /v1/decisions``), both ways: the one mapping of this schema.

The openai adapter (``api = "decisions"``), the litellm adapter (``litellm.adecisions``) and ``judgesdk serve``
all go through these functions, so a request judgesdk sends is one judgesdk serve reads, and the reverse.
The schema is the openai package's (``openai.types.decision``, ``decision_create_params``); the field
mapping, as judgesdk uses it:

==========================  ==========================================================================
judgesdk                    OpenAI Decisions
==========================  ==========================================================================
the judged input            ``input``: the :class:`~judgesdk.provider.decisions.DecisionInput` object's JSON
                            text (a text is what every server takes, LiteLLM's proxy included); a server
                            also reads messages (the last assistant message is the output, the rest the
                            context) and ``input_json`` parts
score question              ``{"type": "score", "name", "instructions", "levels": [{"label", "description"}]}``
                            (lowest level first)
score answer                ``probabilities``: ``[{"value": level index (int), "label", "probability"}]``,
                            ``score`` (the expected level index), ``confidence``
predicate question/answer   ``{"type": "predicate", "name", "instructions"}`` / ``probability`` only
choice question/answer      ``choices: [{"value": str | bool, "description"}]`` / ``probabilities:
                            [{"value", "probability"}]``, ``choice``: values are typed, ``"true"`` is not ``true``
refusal                     ``{"type": "refusal", "name"}`` (judgesdk serve adds ``reason``)
missing answer              fewer ``answers`` than questions
usage                       ``input_tokens`` (of which ``input_tokens_details.cached_tokens``), ``output_tokens``
==========================  ==========================================================================

An answer that does not fit its question (another type, a level count that differs, probabilities that do not
sum to 1, a value of the wrong type) is an ``error`` answer naming the field (:mod:`judgesdk.provider.decisions`).
"""

from __future__ import annotations

import json
from typing import Any

from judgesdk.core import Usage
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

__all__ = ["DECISIONS_WIRE", "MAX_QUESTIONS", "PATH", "read_request", "read_response", "request_body", "response_body"]

PATH = "/decisions"  # under the API's base URL (``.../v1``)
MAX_QUESTIONS = 400  # OpenAI takes 1-400 questions per request
TOOL_ITEMS = ("function_call", "function_call_output", "custom_tool_call", "custom_tool_call_output")


# -- client side: the request judgesdk sends, the response it reads -----------------------------------


def request_body(request: DecisionRequest, model: str) -> dict[str, Any]:
    """The ``/v1/decisions`` body for ``request`` (the arguments of ``client.decisions.create``)."""
    return {"model": model, "input": request.input.as_text(), "questions": [question_body(q) for q in request.questions]}


def question_body(question: Question) -> dict[str, Any]:
    named = {"name": question.name} if question.name is not None else {}
    if isinstance(question, ScoreQuestion):
        levels = [{"label": level.label, **({"description": level.description} if level.description else {})} for level in question.levels]
        return {"type": "score", **named, "instructions": question.instructions, "levels": levels}
    if isinstance(question, ChoiceQuestion):
        choices = [{"value": option.value, **({"description": option.description} if option.description else {})} for option in question.choices]
        return {"type": "choice", **named, "instructions": question.instructions, "choices": choices}
    return {"type": "predicate", **named, "instructions": predicate_instructions(question)}


def predicate_instructions(question: PredicateQuestion) -> str:
    """OpenAI's predicate has instructions only: System One's true/false criteria are appended as LiteLLM does."""
    rules = [f"Answer {answer} when: {rule}" for answer, rule in (("true", question.true_when), ("false", question.false_when)) if rule]
    return "\n\n".join([question.instructions, *rules])


def read_response(payload: Any, request: DecisionRequest) -> tuple[list[DecisionAnswer], Usage, str | None]:
    """The answers (one per question of ``request``, each with its status), the usage and the model the server
    names, from a ``/v1/decisions`` response body (JSON)."""
    if not isinstance(payload, dict) or not isinstance(payload.get("answers"), list):
        found = "no 'answers' list" if isinstance(payload, dict) else f"{json_kind(payload)}, not an object"
        answers = [error_answer(q, f"the response has {found}") for q in request.questions]
        return answers, Usage(calls=1), None
    given = payload["answers"]
    answers = [
        read_answer(q, given[i], f"answers[{i}]") if i < len(given) else _missing(q, i, len(given))
        for i, q in enumerate(request.questions)
    ]
    model = payload.get("model")
    return answers, read_usage(payload.get("usage")), model if isinstance(model, str) and model else None


def _missing(question: Question, index: int, given: int) -> DecisionAnswer:
    return DecisionAnswer(name=question.name, status="missing", reason=f"the response has {given} answers: none for question {index}")


def read_answer(question: Question, answer: Any, field: str) -> DecisionAnswer:
    if not isinstance(answer, dict):
        return error_answer(question, f"{field} is {json_kind(answer)}, not an object")
    kind = answer.get("type")
    name = answer.get("name")
    if name is not None and question.name is not None and name != question.name:
        return error_answer(question, f"{field}.name is {json.dumps(name)}, the question is named {json.dumps(question.name)}")
    if kind == "refusal":
        reason = answer.get("reason")
        return DecisionAnswer(name=question.name, status="refused", reason=reason if isinstance(reason, str) and reason else "the server declined this question")
    if kind != question.type:
        return error_answer(question, f"{field}.type is {json.dumps(kind)}, the question is a {question.type} question")
    unfitted = answer.get("unfitted") is True
    for number in ("score", "confidence"):
        if number in answer and answer[number] is not None and not is_number(answer[number]):
            return error_answer(question, f"{field}.{number} is {json_kind(answer[number])}, not a number")
    if isinstance(question, PredicateQuestion):
        problem = checked_probability(answer.get("probability"), f"{field}.probability")
        if problem is not None:
            return error_answer(question, problem)
        return DecisionAnswer(name=question.name, status="ok", probability=float(answer["probability"]), unfitted=unfitted)
    items = answer.get("probabilities")
    if not isinstance(items, list):
        return error_answer(question, f"{field}.probabilities is {json_kind(items)}, not an array")
    if isinstance(question, ScoreQuestion):
        ordered, problem = _by_level(items, question, f"{field}.probabilities")
    else:
        ordered, problem = _by_option(items, question, f"{field}.probabilities")
    if ordered is None:
        return error_answer(question, problem)
    what = "levels" if isinstance(question, ScoreQuestion) else "options"
    probabilities, problem = checked_distribution(ordered, len(ordered), f"{field}.probabilities", what)
    if probabilities is None:
        return error_answer(question, problem)
    return DecisionAnswer(
        name=question.name, status="ok", probabilities=probabilities, unfitted=unfitted,
        score=answer.get("score"), confidence=answer.get("confidence"),
    )  # fmt: skip


def _by_level(items: list[Any], question: ScoreQuestion, field: str) -> tuple[list[object] | None, str]:
    """The probabilities in level order, from ``[{"value": index, "label", "probability"}]``."""
    if len(items) != len(question.levels):
        return None, f"{field} has {len(items)} entries, the question has {len(question.levels)} levels"
    found: dict[int, object] = {}
    for j, item in enumerate(items):
        if not isinstance(item, dict):
            return None, f"{field}[{j}] is {json_kind(item)}, not an object"
        value = item.get("value")
        if isinstance(value, bool) or not isinstance(value, int):
            return None, f"{field}[{j}].value is {json_kind(value)}, not a level index (an integer)"
        if not 0 <= value < len(question.levels) or value in found:
            return None, f"{field}[{j}].value is {value}: each level index 0-{len(question.levels) - 1} must appear once"
        label = item.get("label")
        if label is not None and not isinstance(label, str):
            return None, f"{field}[{j}].label is {json_kind(label)}, not a text"
        found[value] = item.get("probability")
    return [found[i] for i in range(len(question.levels))], ""


def _by_option(items: list[Any], question: ChoiceQuestion, field: str) -> tuple[list[object] | None, str]:
    """The probabilities in the question's option order, from ``[{"value", "probability"}]`` (typed values)."""
    if len(items) != len(question.choices):
        return None, f"{field} has {len(items)} entries, the question has {len(question.choices)} options"
    keys = [(type(option.value), option.value) for option in question.choices]
    found: dict[tuple[type, object], object] = {}
    for j, item in enumerate(items):
        if not isinstance(item, dict):
            return None, f"{field}[{j}] is {json_kind(item)}, not an object"
        value = item.get("value")
        key = (type(value), value)
        if key not in keys or key in found:
            return None, f"{field}[{j}].value is {json.dumps(value)} ({json_kind(value)}): not an option of the question, or given twice"
        found[key] = item.get("probability")
    return [found[key] for key in keys], ""


def read_usage(usage: Any) -> Usage:
    if not isinstance(usage, dict):
        return Usage(calls=1)
    details = listed if isinstance(listed := usage.get("input_tokens_details"), dict) else {}

    def count(value: Any) -> int:
        return int(value) if is_number(value) and value >= 0 else 0

    return Usage(
        input_tokens=count(usage.get("input_tokens")), output_tokens=count(usage.get("output_tokens")),
        cached_input_tokens=count(details.get("cached_tokens")), cache_write_input_tokens=count(details.get("cache_write_tokens")), calls=1,
    )  # fmt: skip


# -- server side: the request judgesdk serve reads, the response it writes -----------------------------


def read_request(body: Any, *, max_questions: int) -> tuple[str, DecisionRequest, dict[str, str]]:
    """The model asked for, the decision request and the ids its input names (for the record), from a
    ``/v1/decisions`` request body; what this server cannot take is a :class:`RequestError` naming the field."""
    if not isinstance(body, dict):
        raise RequestError(f"the request body must be a JSON object, got {json_kind(body)}")
    model = body.get("model")
    if not isinstance(model, str) or not model:
        raise RequestError("model is required (a text naming a judge of GET /v1/models)", param="model")
    decision_input, ids = read_input(body.get("input"))
    questions = body.get("questions")
    if not isinstance(questions, list) or not questions:
        raise RequestError("questions must be a non-empty array", param="questions")
    if len(questions) > max_questions:
        raise RequestError(
            f"{len(questions)} questions: this server takes at most {max_questions} per request", param="questions", code="too_many_questions"
        )
    parsed = tuple(read_question(q, f"questions[{i}]") for i, q in enumerate(questions))
    seen: dict[str, int] = {}
    for index, question in enumerate(parsed):  # answers and records are keyed by name: two questions, one name is ambiguous
        if question.name is not None and question.name in seen:
            raise RequestError(
                f"questions[{index}].name {json.dumps(question.name)} is also the name of questions[{seen[question.name]}]: "
                "give each question its own name", param=f"questions[{index}].name", code="duplicate_question_name",
            )  # fmt: skip
        if question.name is not None:
            seen[question.name] = index
    return model, DecisionRequest(input=decision_input, questions=parsed), ids


def read_input(value: Any) -> tuple[DecisionInput, dict[str, str]]:
    """``input``: a text (a JSON object's text, or the output itself) or messages (module docstring)."""
    if value is None:
        raise RequestError("input is required", param="input")
    if isinstance(value, str):
        return read_state(value, "input")
    if not isinstance(value, list) or not value:
        raise RequestError(f"input must be a text or a non-empty array of messages, got {json_kind(value)}", param="input")
    turns: list[tuple[str, str]] = []
    objects: list[dict[str, Any]] = []
    for i, item in enumerate(value):
        where = f"input[{i}]"
        if not isinstance(item, dict):
            raise RequestError(f"{where} must be a message object, got {json_kind(item)}", param=where)
        kind = item.get("type", "message")
        if kind in TOOL_ITEMS:
            raise RequestError(f"{where} is a {kind} item: tool calls and their outputs are not judged by this server", param=where, code="unsupported_input")
        if kind != "message":
            raise RequestError(f"{where}.type is {json.dumps(kind)}: this server reads messages only", param=f"{where}.type")
        role = item.get("role")
        if role not in ("user", "developer", "system", "assistant"):
            raise RequestError(f"{where}.role must be user, developer, system or assistant", param=f"{where}.role")
        text, found = _content(item.get("content"), f"{where}.content")
        objects.extend(found)
        turns.append((role, text))
    assistant = [i for i, (role, _) in enumerate(turns) if role == "assistant"]
    if assistant:
        last = assistant[-1]
        output = turns[last][1]
        context = "\n\n".join(text for i, (_, text) in enumerate(turns) if i != last and text)
        if not output.strip():
            raise RequestError(f"input[{last}] (the last assistant message, the judged output) is empty", param=f"input[{last}].content")
        return DecisionInput(output=output, context=context or None), {}
    if len(objects) == 1 and len(turns) == 1:
        return read_state(objects[0], "input[0].content")
    return read_state("\n\n".join(text for _, text in turns if text), "input")


def _content(content: Any, where: str) -> tuple[str, list[dict[str, Any]]]:
    """A message's text, and the ``input_json`` objects it holds; images are refused."""
    if isinstance(content, str):
        return content, []
    if not isinstance(content, list):
        raise RequestError(f"{where} must be a text or an array of parts, got {json_kind(content)}", param=where)
    texts: list[str] = []
    objects: list[dict[str, Any]] = []
    for j, part in enumerate(content):
        at = f"{where}[{j}]"
        kind = part.get("type") if isinstance(part, dict) else None
        if kind in ("input_text", "output_text") and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif kind == "refusal" and isinstance(part.get("refusal"), str):
            texts.append(part["refusal"])
        elif kind == "input_json" and isinstance(part.get("data"), dict):
            objects.append(part["data"])
            texts.append(json.dumps(part["data"], ensure_ascii=False))
        elif kind in ("input_image", "input_file", "input_audio"):
            raise RequestError(f"{at} is an {kind.removeprefix('input_')}: this server judges text only", param=at, code="unsupported_input")
        else:
            raise RequestError(f"{at} must be an input_text, output_text or input_json part", param=at)
    return "\n\n".join(texts), objects


def read_question(question: Any, where: str) -> Question:
    if not isinstance(question, dict):
        raise RequestError(f"{where} must be an object, got {json_kind(question)}", param=where)
    kind = question.get("type")
    if kind == "box":
        raise RequestError(f"{where} is a box question: this server judges text and answers predicate, choice and score questions", param=f"{where}.type", code="unsupported_question")
    if kind not in ("predicate", "choice", "score"):
        raise RequestError(f"{where}.type must be predicate, choice or score, got {json.dumps(kind)}", param=f"{where}.type")
    name = question.get("name")
    if name is not None and (not isinstance(name, str) or not name):
        raise RequestError(f"{where}.name must be a non-empty text", param=f"{where}.name")
    instructions = _instructions(question.get("instructions"), f"{where}.instructions")
    if kind == "predicate":
        return PredicateQuestion(name=name, instructions=instructions)
    if kind == "choice":
        choices = question.get("choices")
        if not isinstance(choices, list) or not 2 <= len(choices) <= 255:
            raise RequestError(f"{where}.choices must be an array of 2-255 options", param=f"{where}.choices")
        options = []
        for j, option in enumerate(choices):
            at = f"{where}.choices[{j}]"
            if not isinstance(option, dict) or not isinstance(option.get("value"), (str, bool)):
                raise RequestError(f"{at}.value must be a text or a boolean", param=f"{at}.value")
            options.append({"value": option["value"], "description": _optional_text(option.get("description"), f"{at}.description")})
        try:
            return ChoiceQuestion(name=name, instructions=instructions, choices=options)
        except ValueError:
            raise RequestError(f"{where}.choices: each value must be unique", param=f"{where}.choices") from None
    levels = question.get("levels")
    if not isinstance(levels, list):
        raise RequestError(f"{where}.levels must be an array", param=f"{where}.levels")
    if not MIN_LEVELS <= len(levels) <= MAX_LEVELS:
        raise RequestError(
            f"{where}.levels has {len(levels)} levels: this server takes {MIN_LEVELS}-{MAX_LEVELS}", param=f"{where}.levels", code="too_many_levels" if len(levels) > MAX_LEVELS else "too_few_levels"
        )
    parsed = []
    for j, level in enumerate(levels):
        at = f"{where}.levels[{j}]"
        if not isinstance(level, dict) or not isinstance(level.get("label"), str):
            raise RequestError(f"{at}.label must be a text", param=f"{at}.label")
        parsed.append(Level(label=level["label"], description=_optional_text(level.get("description"), f"{at}.description")))
    return ScoreQuestion(name=name, instructions=instructions, levels=tuple(parsed))


def _instructions(value: Any, where: str) -> str:
    """A question's instructions: a text, or an array of text (and JSON) parts; images are refused."""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        text, _ = _content(value, where)
        return text
    raise RequestError(f"{where} is required: a text or an array of input_text parts", param=where)


def _optional_text(value: Any, where: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise RequestError(f"{where} must be a text, got {json_kind(value)}", param=where)
    return value


def response_body(request: DecisionRequest, answers: list[DecisionAnswer], model: str, usage: Usage) -> dict[str, Any]:
    """The ``/v1/decisions`` response for ``answers`` (one per question of ``request``): a refusal for every
    answer that is not ``ok``, with its reason."""
    return {
        "model": model,
        "answers": [answer_body(q, a) for q, a in zip(request.questions, answers)],
        "usage": {
            "input_tokens": usage.input_tokens,
            "input_tokens_details": {"cached_tokens": usage.cached_input_tokens, "cache_write_tokens": usage.cache_write_input_tokens},
            "output_tokens": usage.output_tokens,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": usage.input_tokens + usage.output_tokens,
        },
    }


def answer_body(question: Question, answer: DecisionAnswer) -> dict[str, Any]:
    flag = {"unfitted": True} if answer.unfitted else {}
    if answer.status != "ok":
        return {"type": "refusal", "name": question.name, "reason": answer.reason or "not answered"}
    if isinstance(question, PredicateQuestion):
        return {"type": "predicate", "name": question.name, "probability": answer.probability, **flag}
    probs = answer.probabilities or ()
    confidence = max(probs)
    if isinstance(question, ScoreQuestion):
        return {
            "type": "score", "name": question.name, "score": sum(i * p for i, p in enumerate(probs)), "confidence": confidence,
            "probabilities": [{"value": i, "label": level.label, "probability": p} for i, (level, p) in enumerate(zip(question.levels, probs))],
            **flag,
        }  # fmt: skip
    best = max(range(len(probs)), key=probs.__getitem__)
    return {
        "type": "choice", "name": question.name, "choice": question.choices[best].value, "confidence": confidence,
        "probabilities": [{"value": option.value, "probability": p} for option, p in zip(question.choices, probs)], **flag,
    }  # fmt: skip


DECISIONS_WIRE = ServedWire(read_request=read_request, response_body=response_body)  # what `judgesdk serve` answers in this format
