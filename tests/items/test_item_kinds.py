"""The item kinds: what they hold, their canonical JSON, and the malformed inputs each refuses with one line
naming the message (or passage, or expected call) index and the field."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from judgesdk.core import InputError
from judgesdk.items import AgentRun, Conversation, GroundedAnswer, ItemError, canonical_json, located, read_item

CALL = {"id": "c1", "name": "lookup", "arguments": {"q": "x"}}
GOOD_MESSAGES = [
    {"role": "user", "content": "Find x."},
    {"role": "assistant", "content": "", "tool_calls": [CALL]},
    {"role": "tool", "tool_call_id": "c1", "content": "x is 3"},
    {"role": "assistant", "content": "x is 3."},
]


def conversation(**changes):
    return {"kind": "conversation", "form": "judgesdk", "messages": GOOD_MESSAGES, **changes}


def message_at(index, **changes):
    messages = [dict(m) for m in GOOD_MESSAGES]
    messages[index] = {**messages[index], **changes}
    return messages


PASSAGES = [{"id": "p1", "text": "Alpha."}, {"id": "p2", "text": "Beta."}]


def grounded(**changes):
    return {"kind": "grounded_answer", "question": "What?", "passages": PASSAGES, "answer": "Alpha.", **changes}


def run(**changes):
    return {
        "kind": "agent_run",
        "form": "judgesdk",
        "messages": GOOD_MESSAGES,
        "expected_calls": [{"name": "lookup", "arguments": {"q": "x"}}],
        **changes,
    }


MALFORMED = [
    # conversations
    ("unknown role", conversation(messages=message_at(0, role="robot")), "messages[0].role", "'robot'"),
    (
        "tool result answering no call",
        conversation(messages=message_at(2, tool_call_id="c9")),
        "messages[2].tool_call_id",
        "'c9' answers no tool call",
    ),
    (
        "arguments not JSON",
        conversation(messages=message_at(1, tool_calls=[{**CALL, "arguments": "{q: x"}])),
        "messages[1].tool_calls[0].arguments",
        "not JSON",
    ),
    (
        "arguments not an object",
        conversation(messages=message_at(1, tool_calls=[{**CALL, "arguments": "[1, 2]"}])),
        "messages[1].tool_calls[0].arguments",
        "JSON object",
    ),
    ("empty conversation", conversation(messages=[]), "messages", "empty conversation"),
    ("turn index that does not exist", conversation(turn=9), "turn", "index 9 does not exist"),
    ("judged turn not an assistant message", conversation(turn=0), "turn", "messages[0] is a user message"),
    ("turn id that no message has", conversation(turn="m7"), "turn", "no message has id 'm7'"),
    (
        "tool calls on a user message",
        conversation(messages=message_at(0, tool_calls=[CALL])),
        "messages[0].tool_calls",
        "only an assistant",
    ),
    (
        "tool message without a call id",
        conversation(messages=message_at(2, tool_call_id=None)),
        "messages[2].tool_call_id",
        "needs the id",
    ),
    (
        "a call id used twice",
        conversation(messages=[*GOOD_MESSAGES[:3], {"role": "assistant", "content": "", "tool_calls": [CALL]}]),
        "messages[3].tool_calls[0].id",
        "used twice",
    ),
    (
        "unknown field on a message",
        conversation(messages=message_at(3, colour="red")),
        "messages[3].colour",
        "unknown field",
    ),
    (
        "content that is not text",
        conversation(messages=message_at(0, content=42)),
        "messages[0].content",
        "valid string",
    ),
    # grounded answers
    ("empty passages", grounded(passages=[]), "passages", "no passages"),
    (
        "an empty passage",
        grounded(passages=[PASSAGES[0], {"id": "p2", "text": "  "}]),
        "passages[1].text",
        "empty passage",
    ),
    (
        "passage id used twice",
        grounded(passages=[PASSAGES[0], {"id": "p1", "text": "Again."}]),
        "passages[1].id",
        "used twice",
    ),
    ("passage not an object", grounded(passages=[PASSAGES[0], "Beta."]), "passages[1]", "an object is needed"),
    ("empty answer", grounded(answer=""), "answer", "empty"),
    ("question missing", {k: v for k, v in grounded().items() if k != "question"}, "question", "required"),
    ("passage text missing", grounded(passages=[{"id": "p1"}]), "passages[0].text", "required"),
    # agent runs
    ("expected call without a name", run(expected_calls=[{"arguments": {}}]), "expected_calls[0].name", "required"),
    (
        "expected arguments not an object",
        run(expected_calls=[{"name": "lookup", "arguments": "3"}]),
        "expected_calls[0].arguments",
        "JSON object",
    ),
    ("unknown order policy", run(order="sometimes"), "order", "'sometimes'"),
    ("empty run", run(messages=[]), "messages", "empty conversation"),
    (
        "run tool result answering no call",
        run(messages=message_at(2, tool_call_id="zz")),
        "messages[2].tool_call_id",
        "'zz' answers no tool call",
    ),
    (
        "run arguments not JSON",
        run(messages=message_at(1, tool_calls=[{**CALL, "arguments": '{"q": }'}])),
        "messages[1].tool_calls[0].arguments",
        "not JSON",
    ),
    ("empty task", run(task="  "), "task", "empty task"),
    # the item itself
    ("unknown kind", {"kind": "essay", "text": "x"}, "kind", "unknown kind"),
    ("unknown version", conversation(kind="conversation/2"), "kind", "version 2"),
]


@pytest.mark.parametrize(("case", "obj", "where", "says"), MALFORMED, ids=[case for case, *_ in MALFORMED])
def test_a_malformed_item_is_one_line_naming_where_and_what(case, obj, where, says):
    with pytest.raises(InputError) as caught:
        read_item(obj)
    error = caught.value
    assert isinstance(error, ItemError)
    assert "\n" not in str(error)
    assert error.where == where, str(error)
    assert says in str(error), str(error)


def test_at_least_five_malformed_inputs_of_each_kind():
    kinds = [obj["kind"] for _, obj, *_ in MALFORMED]
    assert all(kinds.count(kind) >= 5 for kind in ("conversation", "grounded_answer", "agent_run")), kinds


def test_located_puts_file_and_line_in_front():
    with pytest.raises(ItemError) as caught:
        read_item(conversation(turn=9))
    where = located(caught.value, "items.jsonl", 12)
    assert str(where).startswith("items.jsonl:12: turn: message index 9 does not exist")
    assert isinstance(where, ItemError) and where.reason == caught.value.reason
    plain = located(InputError("bad thing"), "a.jsonl", 3)
    assert str(plain) == "a.jsonl:3: bad thing"


def test_kinds_are_tagged_versioned_and_frozen():
    item = read_item(conversation())
    assert isinstance(item, Conversation) and item.schema_id == "conversation/1"
    assert item.judged_index == 3
    with pytest.raises(ValidationError, match="frozen"):
        item.turn = 1  # type: ignore[misc]
    assert read_item(grounded()).schema_id == "grounded_answer/1"
    assert read_item(run()).schema_id == "agent_run/1"


def test_tool_arguments_are_canonical_whichever_form_they_came_in():
    nested = '{"z": {"b": 2, "a": 1}, "a": [3, {"y": 0, "x": 1}]}'
    as_text = Conversation(messages=message_at(1, tool_calls=[{**CALL, "arguments": nested}]))
    as_object = Conversation(messages=message_at(1, tool_calls=[{**CALL, "arguments": json.loads(nested)}]))
    call = as_text.messages[1].tool_calls[0]
    assert call.arguments_json == '{"a":[3,{"x":1,"y":0}],"z":{"a":1,"b":2}}'
    assert list(call.arguments) == ["a", "z"]
    assert canonical_json(as_text) == canonical_json(as_object)


def test_the_whole_conversation_may_be_judged_and_a_turn_named_by_id():
    messages = message_at(3, id="final")
    assert Conversation(messages=messages, turn="final").judged_index == 3
    whole = Conversation(messages=messages, scope="conversation")
    assert whole.judged_index is None
    with pytest.raises(ItemError, match="^turn: a turn is named only with scope 'turn'"):
        Conversation(messages=messages, scope="conversation", turn=3)


def test_an_agent_run_keeps_its_calls_in_order():
    item = read_item(run(task="Find x.", order="subset"))
    assert isinstance(item, AgentRun)
    assert [(index, call.name) for index, call in item.calls] == [(1, "lookup")]
    assert item.conversation.scope == "conversation"
    assert isinstance(read_item(grounded(reference="Alpha.")), GroundedAnswer)


def test_a_lone_surrogate_is_refused_with_its_field():
    with pytest.raises(ItemError) as caught:
        read_item(grounded(answer="bad \udcff text"))
    assert caught.value.where == "answer" and "lone surrogate" in str(caught.value)
