"""Typed items through the judge (issue 42 step 2): a conversation, grounded answer or agent run becomes the four
strings at one point (judgesdk.judging.items.judge_item); the same conversation in its three forms gives one
prompt and one cache key; ``tool_correctness`` on an agent run is answered without a model call; a bad line of a
JSONL costs no other line of ``judgesdk score``."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from conftest import need

from judgesdk.cli.app import main
from judgesdk.core import Criterion, ExitCode, InputError, JudgeItem, Scale
from judgesdk.items import AgentRun, read_conversation, read_item
from judgesdk.judging import Judge
from judgesdk.judging.items import judge_item
from judgesdk.prompting import criteria_for
from judgesdk.provider import cache_key
from judgesdk.providers.scripted import ScriptedProvider, ScriptedReply

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
AGENTS = {c.name: c for c in criteria_for("agents")}


def _examples(name: str) -> list[dict]:
    return [json.loads(line) for line in (EXAMPLES / name).read_text().splitlines() if line.strip()]


def _three_forms() -> dict[str, dict]:
    """One conversation (a question, a tool call and its result, the answer) in OpenAI chat, OpenAI Responses and
    Anthropic Messages form."""
    ask, final = "What's the weather in Paris?", "Paris is 18 C and cloudy."
    return {
        "openai_chat": {
            "messages": [
                {"role": "system", "content": "You are a travel assistant."},
                {"role": "user", "content": ask},
                {"role": "assistant", "content": "Let me check.", "tool_calls": [
                    {"id": "call_1", "type": "function",
                     "function": {"name": "get_weather", "arguments": '{"unit": "c", "city": "Paris"}'}}]},
                {"role": "tool", "tool_call_id": "call_1", "content": "18 C, cloudy"},
                {"role": "assistant", "content": final},
            ]
        },
        "openai_responses": {
            "instructions": "You are a travel assistant.",
            "input": [
                {"role": "user", "content": ask},
                {"type": "message", "role": "assistant", "content": "Let me check."},
                {"type": "function_call", "call_id": "call_1", "name": "get_weather",
                 "arguments": '{"city":"Paris","unit":"c"}'},
                {"type": "function_call_output", "call_id": "call_1", "output": "18 C, cloudy"},
                {"role": "assistant", "content": final},
            ],
        },
        "anthropic_messages": {
            "system": "You are a travel assistant.",
            "messages": [
                {"role": "user", "content": ask},
                {"role": "assistant", "content": [
                    {"type": "text", "text": "Let me check."},
                    {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Paris", "unit": "c"}}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "call_1", "content": "18 C, cloudy"}]},
                {"role": "assistant", "content": [{"type": "text", "text": final}]},
            ],
        },
    }  # fmt: skip


def test_the_same_conversation_in_three_forms_gives_one_prompt_one_cache_key_and_one_result():
    need("openai")
    need("anthropic")
    provider = ScriptedProvider(lambda r: ScriptedReply(label_probs={"4": 0.6, "5": 0.4}))
    results = []
    with Judge(provider, method="geval") as judge:
        for obj in _three_forms().values():
            results.append(judge.score(read_conversation({**obj, "id": "paris"}), criterion="helpfulness"))
    assert len(provider.calls) == 3
    keys = {cache_key(provider, request) for request in provider.calls}
    assert len(keys) == 1, "the three forms must give one prompt and so one cache key"
    prompt = json.dumps([m.content for m in provider.calls[0].messages])
    assert "get_weather" in prompt and "You are a travel assistant." in prompt  # the history is shown as the source
    assert 'judged=\\"yes\\"' in prompt
    assert {r.score for r in results} == {results[0].score} and results[0].status == "ok"
    assert {r.item_id for r in results} == {"paris"}
    assert results[0].details["item"]["kind"] == "conversation/1"
    assert results[0].details["item"]["cuts"]["dropped"] == []


def test_a_mapping_with_a_kind_is_read_as_a_typed_item_in_score_many():
    provider = ScriptedProvider(lambda r: ScriptedReply(label_probs={"5": 1.0}))
    line = _examples("conversations.jsonl")[0]
    with Judge(provider, method="geval") as judge:
        typed, plain = judge.score_many([line, {"output": "fine", "id": "plain"}], criterion="helpfulness")
    assert typed.details["item"]["kind"] == "conversation/1" and typed.item_id == line["id"]
    assert "item" not in plain.details and plain.item_id == "plain"


def test_each_kind_maps_onto_the_four_strings_as_documented():
    conversation, whole = (read_item(o) for o in _examples("conversations.jsonl")[::2])
    judged, _ = judge_item(conversation)
    index = conversation.judged_index
    assert judged.output.startswith(f'<message index="{index}" role="assistant" judged="yes">')
    assert judged.source is not None and f'<message index="{index}"' not in judged.source
    assert judged.source.startswith('<message index="0" role="system">')
    assert judged.context is None and judged.reference is None and judged.id == conversation.id
    judged_whole, _ = judge_item(whole)
    assert whole.scope == "conversation" and judged_whole.source is None
    assert judged_whole.output.startswith('<message index="0"')

    grounded = read_item(_examples("grounded_answers.jsonl")[0])
    judged, _ = judge_item(grounded)
    assert judged.output == grounded.answer and judged.reference == grounded.reference
    assert judged.source is not None and judged.source.startswith("<question>") and judged.context is None
    assert judged.source.count("<passage number=") == len(grounded.passages) and "<answer>" not in judged.source

    run = read_item(_examples("agent_runs.jsonl")[0])
    assert isinstance(run, AgentRun)
    judged, _ = judge_item(run)
    assert judged.source == f"{run.task}\n\nExpected outcome: {run.expected_outcome}"
    assert "<task>" not in judged.output and "<tool_call" in judged.output and judged.context is None


def test_a_budget_cut_is_in_the_notes_and_the_provenance():
    obj = copy.deepcopy(_examples("conversations.jsonl")[0])
    for message in obj["messages"]:
        if message["role"] == "user":
            message["content"] = message["content"] + " " + "word " * 300
    provider = ScriptedProvider(lambda r: ScriptedReply(label_probs={"3": 1.0}))
    with Judge(provider, method="geval", item_budget=200) as judge:
        result = judge.score(read_item(obj), criterion="helpfulness")
    cuts = result.details["item"]["cuts"]
    assert cuts["budget"] == 200 and (cuts["dropped"] or cuts["shortened"])
    assert any(note.startswith("cut to fit 200 tokens") for note in result.notes), result.notes
    with pytest.raises(InputError, match="item_budget"):
        Judge(provider, item_budget=0)


def test_tool_correctness_on_a_run_with_expected_calls_makes_no_model_call():
    provider = ScriptedProvider(lambda r: pytest.fail("tool_correctness must not ask the model"))
    run = read_item(_examples("agent_runs.jsonl")[0])
    with Judge(provider, method="geval") as judge:
        result = judge.score(run, criterion=AGENTS["tool_correctness"])
    assert provider.calls == []
    assert (result.status, result.score, result.method) == ("ok", 1.0, "deterministic/tool_calls")
    parts = result.details["tool_calls"]["parts"]
    assert [p["status"] for p in parts] == ["matched"] * 3
    assert result.details["item"]["kind"] == "agent_run/1"


def test_tool_correctness_names_matched_missing_and_extra_calls_and_maps_the_share_onto_the_scale():
    obj = copy.deepcopy(_examples("agent_runs.jsonl")[0])
    obj["expected_calls"][2]["arguments"] = {"event_id": "evt_000"}  # the run sent evt_829: missing, and extra
    run = read_item(obj)
    on_five = Criterion(name="tool_correctness", description="calls", scale=Scale.likert(1, 5))
    with Judge(ScriptedProvider(lambda r: pytest.fail("no model call")), method="geval") as judge:
        share = judge.score(run, criterion=AGENTS["tool_correctness"])
        five = judge.score(run, criterion=on_five)
    assert share.score == pytest.approx(2 / 3)
    assert five.score == pytest.approx(1 + 4 * 2 / 3)
    parts = share.details["tool_calls"]["parts"]
    assert [p["status"] for p in parts] == ["matched", "matched", "missing", "extra"]
    assert parts[2]["differing"] == ["event_id"] and parts[3]["name"] == "send_invite"


def test_tool_correctness_without_expected_calls_is_refused_with_the_reason():
    run = read_item(_examples("agent_runs.jsonl")[1])
    assert isinstance(run, AgentRun) and run.expected_calls is None
    with Judge(ScriptedProvider(lambda r: pytest.fail("no model call")), method="geval") as judge:
        result = judge.score(run, criterion=AGENTS["tool_correctness"])
    assert result.status == "refused" and result.score is None
    assert "expected_calls" in result.method_reason


def test_a_model_criterion_beside_tool_correctness_is_asked_alone_and_both_are_parts():
    provider = ScriptedProvider(lambda r: ScriptedReply(label_probs={"0": 0.25, "1": 0.75}))
    run = read_item(_examples("agent_runs.jsonl")[0])
    with Judge(provider, method="geval") as judge:
        both = judge.score(run, criterion=[AGENTS["task_completion"], AGENTS["tool_correctness"]])
        asked = len(provider.calls)
        judge.score(run, criterion=AGENTS["task_completion"])
    assert asked == len(provider.calls) - asked > 0  # the same requests as task_completion alone
    assert set(both.parts or {}) == {"task_completion", "tool_correctness"}
    assert both.parts["tool_correctness"].method == "deterministic/tool_calls"
    assert both.parts["task_completion"].score == pytest.approx(0.75)
    assert both.score == pytest.approx((0.75 + 1.0) / 2)
    assert both.provenance is not None and both.details["item"]["kind"] == "agent_run/1"


def test_a_typed_item_refuses_strings_beside_it_and_criteria_on_different_scales():
    run = read_item(_examples("agent_runs.jsonl")[0])
    with Judge(ScriptedProvider(lambda r: "5"), method="geval") as judge:
        with pytest.raises(InputError, match="carries its own"):
            judge.score(run, source="a task")
        with pytest.raises(InputError, match="different scales"):
            judge.score(run, criterion=[AGENTS["tool_correctness"], "helpfulness"])
    assert isinstance(judge_item(run)[0], JudgeItem)


def test_a_bad_line_among_good_ones_costs_no_other_line_of_judgesdk_score(tmp_path, monkeypatch, capsys):
    provider = ScriptedProvider(lambda r: ScriptedReply(label_probs={"0": 0.2, "1": 0.8}))
    from_config = Judge.from_config.__func__  # type: ignore[attr-defined]
    monkeypatch.setattr(Judge, "from_config", classmethod(lambda cls, source=None, **kw: from_config(cls, source, adapters=[provider])))
    for name in ("JUDGESDK_PROVIDER", "JUDGESDK_METHOD", "JUDGESDK_NO_CACHE"):
        monkeypatch.delenv(name, raising=False)
    good, other = _examples("agent_runs.jsonl")
    bad = copy.deepcopy(good)
    bad["id"] = "broken"
    bad["messages"][2]["tool_call_id"] = "call_zz"  # answers no call
    items = tmp_path / "runs.jsonl"
    items.write_text("".join(json.dumps(o) + "\n" for o in (good, bad, other)))
    config = tmp_path / "judge.toml"
    config.write_text('method = "geval"\nconcurrency = 1\n[cache]\nenabled = false\n')
    out = tmp_path / "results.jsonl"
    code = main(["score", str(items), "-o", str(out), "--config", str(config), "--quiet",
                 "--criterion", "task_completion,tool_correctness"])  # fmt: skip
    assert code == ExitCode.INCOMPLETE  # rows without a score, every line judged or reported
    rows = {row["id"]: row for row in map(json.loads, out.read_text().splitlines())}
    assert set(rows) == {"book-meeting", "broken", "refund-lookup"}
    assert rows["broken"]["status"] == "error"
    error = rows["broken"]["error"]
    assert error.startswith(f"{items}:2: messages[2].tool_call_id:") and "call_zz" in error and "\n" not in error
    err = capsys.readouterr().err
    assert f"judgesdk: skipping {error}\n" in err and "Traceback" not in err  # one line on stderr too
    assert rows["book-meeting"]["status"] == "ok"
    assert rows["book-meeting"]["parts"]["tool_correctness"]["score"] == 1.0
    assert rows["refund-lookup"]["parts"]["tool_correctness"]["status"] == "refused"
    assert rows["refund-lookup"]["parts"]["task_completion"]["status"] == "ok"
