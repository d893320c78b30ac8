"""Deterministic checks of an agent run: tool-call matching under each order policy, and efficiency counts."""

from __future__ import annotations

import pytest

from judgesdk.items import AgentRun, ItemError, efficiency, match_tool_calls


def run_with(calls, expected=None, order="ordered", results=None):
    """A run whose assistant makes ``calls`` ((name, arguments) each, one message per call), each answered."""
    messages = [{"role": "user", "content": "Do it."}]
    for number, (name, arguments) in enumerate(calls):
        call_id = f"c{number}"
        messages.append(
            {"role": "assistant", "content": "", "tool_calls": [{"id": call_id, "name": name, "arguments": arguments}]}
        )
        error = (results or {}).get(number)
        if error != "none":
            messages.append({"role": "tool", "tool_call_id": call_id, "content": "ok", "is_error": error == "error"})
    messages.append({"role": "assistant", "content": "Done."})
    expected_calls = None if expected is None else [{"name": n, "arguments": a} for n, a in expected]
    return AgentRun(messages=messages, expected_calls=expected_calls, order=order)


A, B, C = ("search", {"q": "x"}), ("open", {"id": 1}), ("save", {"path": "/tmp/a", "mode": "w"})


@pytest.mark.parametrize(
    ("order", "made", "score", "missing", "extra"),
    [
        ("ordered", [A, B, C], 1.0, (), ()),
        ("ordered", [B, A, C], 2 / 3, (1,), (0,)),  # A then C in order; B, made first, is missing and extra
        ("ordered", [A, B, C, A], 3 / 4, (), (3,)),  # an extra call counts against the run
        ("unordered", [C, B, A], 1.0, (), ()),
        ("unordered", [C, A], 2 / 3, (1,), ()),
        ("unordered", [A, B, C, ("delete", {})], 3 / 4, (), (3,)),
        ("subset", [("list", {}), C, A, B, ("list", {})], 1.0, (), (0, 4)),  # other calls allowed
        ("subset", [A], 1 / 3, (1, 2), ()),
    ],
)
def test_each_order_policy_matches_and_scores_as_stated(order, made, score, missing, extra):
    result = match_tool_calls(run_with(made, expected=[A, B, C], order=order))
    assert result.order == order and result.score == pytest.approx(score)
    assert result.missing == missing and result.extra == extra
    assert result.matched == 3 - len(missing) and result.expected_count == 3 and result.made == len(made)
    for part in result.parts:
        if part.actual is not None:
            name, arguments = made[part.actual]
            assert (name, arguments) == [A, B, C][part.expected]


def test_arguments_are_compared_canonically_and_differences_named():
    same_args_other_order = ("save", {"mode": "w", "path": "/tmp/a"})
    assert match_tool_calls(run_with([A, B, same_args_other_order], expected=[A, B, C])).score == 1.0
    wrong = ("save", {"path": "/tmp/b", "mode": "w", "force": True})
    result = match_tool_calls(run_with([A, B, wrong], expected=[A, B, C]))
    [missing] = [p for p in result.parts if p.actual is None]
    assert missing.expected == 2 and missing.near == 2 and missing.differing == ("force", "path")
    assert match_tool_calls(run_with([("open", {"id": 1.0})], expected=[B], order="subset")).score == 0.0  # 1 != 1.0


def test_which_actual_call_and_message_each_expected_call_matched():
    result = match_tool_calls(run_with([A, B], expected=[B, A], order="unordered"))
    assert [(p.expected, p.actual, p.message) for p in result.parts] == [(0, 1, 3), (1, 0, 1)]


def test_no_expected_calls_and_no_calls_made():
    assert match_tool_calls(run_with([], expected=[])).score == 1.0
    assert match_tool_calls(run_with([A], expected=[])).score == 0.0
    assert match_tool_calls(run_with([A], expected=[], order="subset")).score == 1.0
    assert match_tool_calls(run_with([A, B], expected=[A, B], order="ordered"), order="subset").order == "subset"
    with pytest.raises(ItemError, match="^expected_calls: missing"):
        match_tool_calls(run_with([A]))


def test_efficiency_counts_repeats_failures_and_unanswered_calls():
    counts = efficiency(run_with([A, A, B, A, C], results={1: "error", 4: "none"}))
    assert counts.calls == 5 and counts.distinct == 3
    assert counts.repeated == 2 and counts.repeats == ((1, 0), (3, 0))
    assert counts.failed == 1 and counts.failed_calls == ("c1",)
    assert counts.unanswered == ("c4",)
    clean = efficiency(run_with([A, B]))
    assert (clean.repeated, clean.failed, clean.unanswered) == (0, 0, ())
