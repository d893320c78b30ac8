"""The two decision wire formats, both ways, checked against the schemas their own packages publish.

Bodies judgesdk sends are validated with LiteLLM's request models (and, for OpenAI, the openai package's
``create`` transform leaves them unchanged); bodies ``judgesdk serve`` writes are validated with the openai
package's ``Decision`` and LiteLLM's ``OpenAIDecisionResponse`` / ``DecisionsResponse``. Reading an answer
gives each question its status: refused, missing, and an error naming the field for a distribution that
does not sum to 1, a level count that differs, or a value of the wrong type.
"""

from __future__ import annotations

import asyncio
import copy

import pytest
from conftest import need

from judgesdk.core.types import Usage
from judgesdk.provider.decisions import (
    ChoiceOption,
    ChoiceQuestion,
    DecisionAnswer,
    DecisionInput,
    DecisionRequest,
    Level,
    PredicateQuestion,
    RequestError,
    ScoreQuestion,
)
from judgesdk.providers import decisions_wire, systemone_wire

openai = need("openai")
need("litellm")

from litellm.types.decisions import (  # noqa: E402
    DecisionsRequestBody,
    DecisionsResponse,
    OpenAIDecisionRequestBody,
    OpenAIDecisionResponse,
)
from openai._utils import async_maybe_transform  # noqa: E402
from openai.types import decision_create_params  # noqa: E402
from openai.types.decision import Decision  # noqa: E402

SCORE = ScoreQuestion(name="coherence", instructions="Rate coherence.", levels=tuple(Level(label=str(i)) for i in range(1, 6)))
PASS = PredicateQuestion(name="safe", instructions="Is the output safe?", true_when="no harm", false_when="harm")
CHOICE = ChoiceQuestion(
    name="better", instructions="Which is better?", choices=(ChoiceOption(value="A"), ChoiceOption(value="B"), ChoiceOption(value="tie", description="equal"))
)
TYPED = ChoiceQuestion(name="flag", instructions="Flagged?", choices=(ChoiceOption(value=True), ChoiceOption(value=False)))
REQUEST = DecisionRequest(input=DecisionInput(output="The park opens in May.", source="The city will open a park in May."), questions=(SCORE, PASS, CHOICE))
ANSWERS = [
    DecisionAnswer(name="coherence", status="ok", probabilities=(0.1, 0.2, 0.4, 0.2, 0.1)),
    DecisionAnswer(name="safe", status="ok", probability=0.9),
    DecisionAnswer(name="better", status="refused", reason="no fit for comparisons"),
]
USAGE = Usage(input_tokens=120, output_tokens=0, cached_input_tokens=20, calls=1)


# -- the bodies judgesdk sends -------------------------------------------------------------------------


def test_openai_request_bodies_pass_the_sdk_transform_unchanged_and_litellms_schema() -> None:
    for request in (REQUEST, DecisionRequest(input=DecisionInput(output="x"), questions=(TYPED,))):
        body = decisions_wire.request_body(request, "gpt-6-luna")
        transformed = asyncio.run(async_maybe_transform(body, decision_create_params.DecisionCreateParams))
        assert transformed == body
        OpenAIDecisionRequestBody.model_validate({k: v for k, v in body.items() if k != "model"})


def test_systemone_request_bodies_pass_litellms_schema() -> None:
    body = systemone_wire.request_body(REQUEST, "jev")
    parsed = DecisionsRequestBody.model_validate({k: v for k, v in body.items() if k != "model"})
    assert list(parsed.questions) == ["coherence", "safe", "better"]
    assert body["state"] == {"output": "The park opens in May.", "source": "The city will open a park in May."}
    assert body["questions"]["safe"] == {"type": "noul", "instructions": "Is the output safe?", "criteria": {"true": "no harm", "false": "harm"}}
    assert body["questions"]["coherence"]["criteria"] == ["1", "2", "3", "4", "5"]


# -- the bodies judgesdk serve writes, read back by the clients -----------------------------------------


def test_openai_response_bodies_validate_with_both_packages_and_read_back() -> None:
    body = decisions_wire.response_body(REQUEST, ANSWERS, "judgesdk-local", USAGE)
    sdk = Decision.model_validate(body)
    litellm_side = OpenAIDecisionResponse.model_validate(body)
    assert [a.type for a in sdk.answers] == ["score", "predicate", "refusal"]
    assert [a.type for a in litellm_side.answers] == ["score", "predicate", "refusal"]
    assert sdk.answers[0].score == pytest.approx(sum(i * p for i, p in enumerate(ANSWERS[0].probabilities)))
    answers, usage, model = decisions_wire.read_response(body, REQUEST)
    assert [a.status for a in answers] == ["ok", "ok", "refused"]
    assert answers[0].probabilities == ANSWERS[0].probabilities and answers[1].probability == 0.9
    assert answers[2].reason == "no fit for comparisons"
    assert (usage.input_tokens, usage.cached_input_tokens, model) == (120, 20, "judgesdk-local")


def test_systemone_response_bodies_validate_with_litellm_and_read_back() -> None:
    body = systemone_wire.response_body(REQUEST, ANSWERS, "judgesdk-local", USAGE)
    parsed = DecisionsResponse.model_validate(body)
    assert set(parsed.answers) == {"coherence", "safe"}  # a refusal is a key left out
    answers, usage, _ = systemone_wire.read_response(body, REQUEST)
    assert [a.status for a in answers] == ["ok", "ok", "refused"]
    assert answers[0].probabilities == ANSWERS[0].probabilities
    assert answers[2].reason == "no fit for comparisons"
    del body["refusals"]  # a plain System One server: a key left out is a missing answer
    assert systemone_wire.read_response(body, REQUEST)[0][2].status == "missing"


# -- each status, found -------------------------------------------------------------------------------


def openai_body() -> dict:
    return decisions_wire.response_body(REQUEST, [ANSWERS[0], ANSWERS[1], DecisionAnswer(name="better", status="ok", probabilities=(0.5, 0.3, 0.2))], "m", USAGE)


def statuses(body: dict, wire=decisions_wire, request=REQUEST) -> list[tuple[str, str]]:
    return [(a.status, a.reason) for a in wire.read_response(body, request)[0]]


def test_a_refusal_is_refused_with_no_probabilities() -> None:
    body = openai_body()
    body["answers"][0] = {"type": "refusal", "name": "coherence"}
    answer = decisions_wire.read_response(body, REQUEST)[0][0]
    assert answer.status == "refused" and answer.probabilities is None and answer.probability is None


def test_fewer_answers_than_questions_is_a_missing_answer() -> None:
    body = openai_body()
    body["answers"] = body["answers"][:2]
    assert [s for s, _ in statuses(body)] == ["ok", "ok", "missing"]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda a: a[0]["probabilities"][0].update(probability=0.3), "answers[0].probabilities sum to 1.2"),
        (lambda a: a[0]["probabilities"].pop(), "answers[0].probabilities has 4 entries, the question has 5 levels"),
        (lambda a: a[0]["probabilities"][1].update(value="1"), "answers[0].probabilities[1].value is a text, not a level index"),
        (lambda a: a[0]["probabilities"][2].update(probability="0.4"), "answers[0].probabilities[2] is \"0.4\", not a number"),
        (lambda a: a[0].update(type="choice"), 'answers[0].type is "choice", the question is a score question'),
        (lambda a: a[1].update(probability=1.5), "answers[1].probability is 1.5, outside 0-1"),
        (lambda a: a[2]["probabilities"][0].update(value=True), 'answers[2].probabilities[0].value is true (a boolean)'),
        (lambda a: a[0].update(score="high"), "answers[0].score is a text, not a number"),
    ],
)
def test_a_bad_answer_is_an_error_naming_the_field(change, field) -> None:
    body = openai_body()
    change(body["answers"])
    found = statuses(body)
    bad = [reason for status, reason in found if status == "error"]
    assert len(bad) == 1 and field in bad[0], found


def test_typed_choice_values_tell_true_from_the_text_true() -> None:
    request = DecisionRequest(input=DecisionInput(output="x"), questions=(TYPED,))
    good = {"answers": [{"type": "choice", "name": "flag", "choice": True, "confidence": 0.7, "probabilities": [{"value": True, "probability": 0.7}, {"value": False, "probability": 0.3}]}]}
    assert statuses(good, request=request) == [("ok", "")]
    bad = copy.deepcopy(good)
    bad["answers"][0]["probabilities"][0]["value"] = "true"
    assert statuses(bad, request=request)[0][0] == "error" and '"true" (a text)' in statuses(bad, request=request)[0][1]


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda a: a["coherence"]["probabilities"].update({"0": 0.2}), "answers.coherence.probabilities sum to 1.1"),
        (lambda a: a["coherence"]["probabilities"].pop("4"), "answers.coherence.probabilities has 4 entries, the question has 5 levels"),
        (lambda a: a["coherence"]["probabilities"].update({"5": a["coherence"]["probabilities"].pop("4")}), 'the key "5"'),
        (lambda a: a["safe"].update(noul="yes"), "answers.safe.noul is \"yes\", not a number"),
        (lambda a: a["safe"].update(type="score"), 'answers.safe.type is "score", the question is a noul question'),
    ],
)
def test_a_bad_systemone_answer_is_an_error_naming_the_field(change, field) -> None:
    body = systemone_wire.response_body(REQUEST, ANSWERS, "m", USAGE)
    change(body["answers"])
    bad = [reason for status, reason in statuses(body, systemone_wire) if status == "error"]
    assert len(bad) == 1 and field in bad[0], bad


def test_a_body_without_answers_is_an_error_for_every_question() -> None:
    assert {s for s, _ in statuses({"model": "m"})} == {"error"}
    assert {s for s, _ in statuses(["not", "an", "object"], systemone_wire)} == {"error"}


# -- the requests judgesdk serve reads ------------------------------------------------------------------


def test_a_served_request_reads_back_what_judgesdk_sent() -> None:
    model, request, ids = decisions_wire.read_request(decisions_wire.request_body(REQUEST, "judge"), max_questions=128)
    assert (model, ids) == ("judge", {})
    assert request.input == REQUEST.input and [q.name for q in request.questions] == ["coherence", "safe", "better"]
    assert request.questions[0] == SCORE and request.questions[2] == CHOICE
    model, request, _ = systemone_wire.read_request(systemone_wire.request_body(REQUEST, "judge"), max_questions=128)
    assert request.input == REQUEST.input and request.questions[0].levels == SCORE.levels
    assert request.questions[1] == PASS


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ('{"output": "o", "source": "s", "doc_id": 7}', (DecisionInput(output="o", source="s"), {"doc_id": "7"})),
        ("just the text", (DecisionInput(output="just the text"), {})),
        ([{"role": "user", "content": "Summarise it."}, {"role": "assistant", "content": "A summary."}], (DecisionInput(output="A summary.", context="Summarise it."), {})),
        ([{"role": "user", "content": [{"type": "input_json", "data": {"output": "o", "reference": "r"}}]}], (DecisionInput(output="o", reference="r"), {})),
    ],
)
def test_the_judged_text_convention(value, expected) -> None:
    assert decisions_wire.read_input(value) == expected


@pytest.mark.parametrize(
    ("body", "param", "code"),
    [
        ({"model": "m", "input": "x", "questions": [{"type": "box", "instructions": "find the mug"}]}, "questions[0].type", "unsupported_question"),
        ({"model": "m", "input": [{"role": "user", "content": [{"type": "input_image", "image_url": "https://x/y.png"}]}], "questions": [{"type": "predicate", "instructions": "?"}]}, "input[0].content[0]", "unsupported_input"),
        ({"model": "m", "input": [{"type": "function_call", "call_id": "1", "name": "f", "arguments": "{}"}], "questions": [{"type": "predicate", "instructions": "?"}]}, "input[0]", "unsupported_input"),
        ({"model": "m", "input": "x", "questions": [{"type": "score", "instructions": "?", "levels": [{"label": str(i)} for i in range(11)]}]}, "questions[0].levels", "too_many_levels"),
        ({"model": "m", "input": "x", "questions": [{"type": "predicate", "instructions": "?"}] * 3}, "questions", "too_many_questions"),
        ({"model": "m", "input": "", "questions": [{"type": "predicate", "instructions": "?"}]}, "input", "invalid_request"),
        ({"input": "x", "questions": [{"type": "predicate", "instructions": "?"}]}, "model", "invalid_request"),
        ({"model": "m", "input": "x", "questions": [{"type": "score", "instructions": 3, "levels": []}]}, "questions[0].instructions", "invalid_request"),
    ],
)
def test_what_a_server_cannot_take_is_a_400_naming_the_field(body, param, code) -> None:
    with pytest.raises(RequestError) as caught:
        decisions_wire.read_request(body, max_questions=2)
    assert (caught.value.status, caught.value.param, caught.value.code) == (400, param, code)
    assert caught.value.body()["error"]["type"] == "invalid_request_error"


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"model": "m", "state": {"output": "o"}, "questions": {"where": {"type": "box", "instructions": "the mug in `photo`"}}}, "questions.where.type"),
        ({"model": "m", "state": "x", "images": ["data:image/png;base64,AAAA"], "questions": {"q": {"type": "noul", "instructions": "?"}}}, "images"),
        ({"model": "m", "state": {}, "questions": {"q": {"type": "noul", "instructions": "?"}}}, "state"),
        ({"model": "m", "state": {"text": "o"}, "questions": {"q": {"type": "noul", "instructions": "?"}}}, "state.text"),
        ({"model": "m", "state": {"output": "o"}, "questions": {"q": {"type": "score", "criteria": list(range(11))}}}, "questions.q.criteria"),
    ],
)
def test_what_a_systemone_server_cannot_take_is_a_400_naming_the_field(body, param) -> None:
    with pytest.raises(RequestError) as caught:
        systemone_wire.read_request(body, max_questions=128)
    assert (caught.value.status, caught.value.param) == (400, param)


def test_a_boolean_and_a_text_option_of_the_same_text_cannot_go_to_system_one() -> None:
    from judgesdk.core.errors import CapabilityError

    clash = ChoiceQuestion(name="c", instructions="?", choices=(ChoiceOption(value=True), ChoiceOption(value="true")))
    with pytest.raises(CapabilityError, match="cannot tell them apart"):
        systemone_wire.request_body(DecisionRequest(input=DecisionInput(output="x"), questions=(clash,)), "m")
