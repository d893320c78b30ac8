"""The forms people have (OpenAI chat messages, OpenAI Responses items, Anthropic blocks) read into one internal
form: the same conversation gives the same object, the same canonical JSON and the same rendered text; an error
names the place in the form the user wrote."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from conftest import need

from judgesdk.items import AgentRun, ItemError, canonical_json, detect_form, read_conversation, read_item, render_item

need("openai")
need("anthropic")

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"

SYSTEM = "You are a travel assistant."
ASK = "What's the weather in Paris and Rome?"
FINAL = "Paris is 18 C and cloudy; Rome is 24 C and sunny."

CHAT = {
    "messages": [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": ASK},
        {
            "role": "assistant",
            "content": "Let me check.",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"unit": "c", "city": "Paris"}'},
                },
                {
                    "id": "call_2",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Rome", "unit": "c"}'},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "18 C, cloudy"},
        {"role": "tool", "tool_call_id": "call_2", "content": [{"type": "text", "text": "24 C, sunny"}]},
        {"role": "user", "content": "Thanks! Summarise?"},
        {"role": "assistant", "content": FINAL},
    ]
}
RESPONSES = {
    "instructions": SYSTEM,
    "input": [
        {"role": "user", "content": ASK},
        {"type": "message", "role": "assistant", "content": "Let me check."},
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "get_weather",
            "arguments": '{"city":"Paris","unit":"c"}',
        },
        {
            "type": "function_call",
            "call_id": "call_2",
            "name": "get_weather",
            "arguments": '{"unit":"c","city":"Rome"}',
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "18 C, cloudy"},
        {
            "type": "function_call_output",
            "call_id": "call_2",
            "output": [{"type": "input_text", "text": "24 C, sunny"}],
        },
        {"role": "user", "content": [{"type": "input_text", "text": "Thanks! Summarise?"}]},
        {"role": "assistant", "content": FINAL},
    ],
}
ANTHROPIC = {
    "system": [{"type": "text", "text": SYSTEM}],
    "messages": [
        {"role": "user", "content": ASK},
        {
            "role": "assistant",
            "content": [
                {"type": "text", "text": "Let me check."},
                {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Paris", "unit": "c"}},
                {"type": "tool_use", "id": "call_2", "name": "get_weather", "input": {"unit": "c", "city": "Rome"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "call_1", "content": "18 C, cloudy"},
                {"type": "tool_result", "tool_use_id": "call_2", "content": [{"type": "text", "text": "24 C, sunny"}]},
                {"type": "text", "text": "Thanks! Summarise?"},
            ],
        },
        {"role": "assistant", "content": [{"type": "text", "text": FINAL}]},
    ],
}
FORMS = {"openai_chat": CHAT, "openai_responses": RESPONSES, "anthropic_messages": ANTHROPIC}


def test_the_three_forms_give_one_object_byte_identical_json_and_one_prompt():
    read = {form: read_conversation(obj) for form, obj in FORMS.items()}
    assert {detect_form(obj) for obj in FORMS.values()} == set(FORMS)
    texts = {canonical_json(c).encode("utf-8") for c in read.values()}
    assert len(texts) == 1
    assert read["openai_chat"] == read["openai_responses"] == read["anthropic_messages"]
    assert len({render_item(c).text for c in read.values()}) == 1
    conv = read["anthropic_messages"]
    assert [m.role for m in conv.messages] == ["system", "user", "assistant", "tool", "tool", "user", "assistant"]
    assert conv.messages[2].tool_calls[0].arguments_json == '{"city":"Paris","unit":"c"}'
    assert conv.judged_index == 6


def test_each_form_named_explicitly_reads_the_same():
    for form, obj in FORMS.items():
        assert read_conversation(obj, form=form) == read_conversation(CHAT)  # type: ignore[arg-type]


def test_the_internal_form_round_trips_through_its_canonical_json():
    conv = read_conversation(CHAT)
    again = read_item(json.loads(canonical_json(conv)))
    assert canonical_json(again) == canonical_json(conv)


def test_the_example_conversations_are_one_in_each_form_and_all_read():
    lines = (EXAMPLES / "conversations.jsonl").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 3
    objs = [json.loads(line) for line in lines]
    assert sorted(detect_form(o) for o in objs) == ["anthropic_messages", "openai_chat", "openai_responses"]
    for obj in objs:
        assert read_item(obj).kind == "conversation"


def test_the_example_agent_runs_and_grounded_answers_read():
    runs = [
        read_item(json.loads(line)) for line in (EXAMPLES / "agent_runs.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    assert len(runs) == 2 and all(isinstance(r, AgentRun) for r in runs)
    assert any(len(r.calls) == 3 and r.expected_calls for r in runs)  # type: ignore[union-attr]
    answers = [
        read_item(json.loads(line))
        for line in (EXAMPLES / "grounded_answers.jsonl").read_text(encoding="utf-8").splitlines()
    ]
    assert sorted(len(a.passages) for a in answers) == [2, 5]  # type: ignore[union-attr]


def _with(obj, path, value):
    changed = copy.deepcopy(obj)
    target = changed
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return changed


FORM_ERRORS = [
    # the check runs on the converted messages; the error names the place in the form given
    (
        "anthropic tool_result for no call",
        _with(ANTHROPIC, ["messages", 2, "content", 1, "tool_use_id"], "call_9"),
        "messages[2].content[1].tool_use_id",
    ),
    ("responses output for no call", _with(RESPONSES, ["input", 5, "call_id"], "call_9"), "input[5].call_id"),
    (
        "chat tool message for no call",
        _with(CHAT, ["messages", 4, "tool_call_id"], "call_9"),
        "messages[4].tool_call_id",
    ),
    (
        "chat arguments not JSON",
        _with(CHAT, ["messages", 2, "tool_calls", 1, "function", "arguments"], "{city"),
        "messages[2].tool_calls[1].function.arguments",
    ),
    ("responses arguments not JSON", _with(RESPONSES, ["input", 3, "arguments"], "city=Rome"), "input[3].arguments"),
    (
        "anthropic duplicate call id",
        _with(ANTHROPIC, ["messages", 1, "content", 2, "id"], "call_1"),
        "messages[1].content[2].id",
    ),
    # the packages' own types
    ("chat unknown role", _with(CHAT, ["messages", 1, "role"], "customer"), "messages[1].role"),
    (
        "chat tool call without function name",
        _with(CHAT, ["messages", 2, "tool_calls", 0, "function"], {"arguments": "{}"}),
        "messages[2].tool_calls[0].function.name",
    ),
    (
        "anthropic tool_use input not an object",
        _with(ANTHROPIC, ["messages", 1, "content", 1, "input"], "city"),
        "messages[1].content[1].input",
    ),
    (
        "anthropic unknown block",
        _with(ANTHROPIC, ["messages", 0, "content"], [{"type": "image", "source": {}}]),
        "messages[0].content[0].type",
    ),
    ("responses reasoning item", _with(RESPONSES, ["input", 1], {"type": "reasoning", "summary": []}), "input[1].type"),
    (
        "responses call without call_id",
        _with(RESPONSES, ["input", 2], {"type": "function_call", "name": "f", "arguments": "{}"}),
        "input[2].call_id",
    ),
    (
        "chat image part",
        _with(CHAT, ["messages", 1, "content"], [{"type": "image_url", "image_url": {"url": "http://x"}}]),
        "messages[1].content[0].type",
    ),
]


@pytest.mark.parametrize(("case", "obj", "where"), FORM_ERRORS, ids=[c for c, *_ in FORM_ERRORS])
def test_an_error_names_the_place_in_the_form_given(case, obj, where):
    with pytest.raises(ItemError) as caught:
        read_conversation(obj)
    assert caught.value.where == where, str(caught.value)
    assert "\n" not in str(caught.value)


def test_a_form_that_does_not_fit_its_fields_is_named():
    with pytest.raises(ItemError, match="^system: a top-level 'system' belongs to the anthropic_messages form"):
        read_conversation({**CHAT, "system": "x"}, form="openai_chat")
    with pytest.raises(ItemError, match="^form: unknown form"):
        read_conversation(CHAT, form="gemini")  # type: ignore[arg-type]


def test_anthropic_is_error_is_kept_and_openai_has_none():
    flagged = _with(ANTHROPIC, ["messages", 2, "content", 0, "is_error"], True)
    conv = read_conversation(flagged)
    assert [m.is_error for m in conv.messages if m.role == "tool"] == [True, False]
    assert not any(m.is_error for m in read_conversation(CHAT).messages)
    assert 'status="error"' in render_item(conv).text


def test_an_unknown_form_named_in_the_item_is_refused():
    with pytest.raises(ItemError, match="^form: unknown form 'gemini'"):
        read_item({"kind": "conversation", "form": "gemini", **CHAT})
