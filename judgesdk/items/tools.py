"""Deterministic checks of an agent run: no model call, the same answer every time.

**Tool-call correctness** (:func:`match_tool_calls`). A call the run made matches an expected call when the
tool names are equal and the canonical arguments are equal (the same JSON object, compared as canonical JSON
text: ``1`` and ``1.0`` differ, as do ``true`` and ``1``). Each actual call matches at most one expected call.
The order policy decides which matches count and what the score is:

* ``ordered``: the expected calls in their order, as a subsequence of the calls made (the most matches in order,
  by dynamic programming); score = matched / max(expected, made), so a call made that was not expected counts
  against the run as a missing one does;
* ``unordered``: the same calls, in any order; score = matched / max(expected, made);
* ``subset``: the expected calls among those made, in any order, other calls allowed; score = matched / expected.

With no expected calls the score is 1.0 when no call was made (or under ``subset``), else 0.0. The result names
which expected call matched which actual call, which expected calls are missing (with, where one was made, the
unmatched call of the same tool and the argument keys that differ) and which calls are extra.

**Efficiency** (:func:`efficiency`): counts, not a judgement: calls made, repeated calls (the same tool with the
same canonical arguments as an earlier call), failed calls (results the tool flagged as errors: Anthropic's
``is_error``; OpenAI's formats have no such flag, so their failed count is 0), and calls with no result.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict

from judgesdk.items.kinds import AgentRun, ItemError, OrderPolicy, ToolCall, arguments_json

__all__ = ["CallMatch", "Efficiency", "ToolCallMatch", "efficiency", "match_tool_calls"]

SCORE_RULE = {
    "ordered": "matched in order / max(expected, made)",
    "unordered": "matched in any order / max(expected, made)",
    "subset": "matched in any order / expected (other calls allowed)",
}


class CallMatch(BaseModel):
    """One expected call and what it met: ``expected`` (its index in the expected calls), ``actual`` (the index of
    the matching call among all calls the run made, or None: missing), ``message`` (the index of the message that
    made that call), and for a missing call, ``near`` (an unmatched call of the same tool, its index) and
    ``differing`` (the argument keys whose values differ, or that only one of the two has)."""

    model_config = ConfigDict(frozen=True)

    expected: int
    name: str
    actual: int | None = None
    message: int | None = None
    near: int | None = None
    differing: tuple[str, ...] = ()


class ToolCallMatch(BaseModel):
    """The run's calls held against its expected calls: the ``score`` (by ``rule``, under ``order``), the
    ``matched``, ``expected_count`` and ``made`` counts, the per-expected-call ``parts`` and the ``extra`` calls
    (indices among the calls made that matched nothing)."""

    model_config = ConfigDict(frozen=True)

    order: OrderPolicy
    rule: str
    score: float
    matched: int
    expected_count: int
    made: int
    parts: tuple[CallMatch, ...]
    extra: tuple[int, ...]

    @property
    def missing(self) -> tuple[int, ...]:
        """The indices of the expected calls no call matched."""
        return tuple(part.expected for part in self.parts if part.actual is None)


def _key(name: str, arguments_text: str) -> tuple[str, str]:
    return name, arguments_text


def _ordered_pairs(expected: list[tuple[str, str]], actual: list[tuple[str, str]]) -> dict[int, int]:
    """The longest in-order matching (expected index -> actual index); on ties the earlier expected calls match."""
    n, m = len(expected), len(actual)
    best = [[0] * (m + 1) for _ in range(n + 1)]
    for i in range(n - 1, -1, -1):
        for j in range(m - 1, -1, -1):
            best[i][j] = best[i + 1][j + 1] + 1 if expected[i] == actual[j] else max(best[i + 1][j], best[i][j + 1])
    pairs: dict[int, int] = {}
    i = j = 0
    while i < n and j < m:
        if expected[i] == actual[j] and best[i][j] == best[i + 1][j + 1] + 1:
            pairs[i] = j
            i += 1
            j += 1
        elif best[i][j + 1] >= best[i + 1][j]:
            j += 1
        else:
            i += 1
    return pairs


def _any_order_pairs(expected: list[tuple[str, str]], actual: list[tuple[str, str]]) -> dict[int, int]:
    """Each expected call matched to the first unused equal call (optimal: equality is an equivalence)."""
    used: set[int] = set()
    pairs: dict[int, int] = {}
    for i, want in enumerate(expected):
        for j, have in enumerate(actual):
            if j not in used and have == want:
                pairs[i] = j
                used.add(j)
                break
    return pairs


def _differing(want: dict[str, object], have: dict[str, object]) -> tuple[str, ...]:
    keys = sorted(set(want) | set(have))
    return tuple(
        k
        for k in keys
        if k not in want or k not in have or arguments_json({"v": want[k]}) != arguments_json({"v": have[k]})
    )


def match_tool_calls(run: AgentRun, *, order: OrderPolicy | None = None) -> ToolCallMatch:
    """The calls ``run`` made held against its expected calls (module docstring: the match, the policies and the
    score). ``run``: an agent run with ``expected_calls``; ``order``: the order policy, by default the run's own
    ``order``. Raises :class:`~judgesdk.items.ItemError` for a run without expected calls (its correctness is
    then a judge's question, not this check's)."""
    if run.expected_calls is None:
        raise ItemError(
            "expected_calls", "missing: tool-call correctness without expected calls is judged, not matched"
        )
    policy: OrderPolicy = order or run.order
    made: list[tuple[int, ToolCall]] = list(run.calls)
    expected = [_key(call.name, call.arguments_json) for call in run.expected_calls]
    actual = [_key(call.name, call.arguments_json) for _, call in made]
    pairs = _ordered_pairs(expected, actual) if policy == "ordered" else _any_order_pairs(expected, actual)
    used = set(pairs.values())
    unused = [j for j in range(len(made)) if j not in used]
    parts = []
    for i, want in enumerate(run.expected_calls):
        if i in pairs:
            parts.append(CallMatch(expected=i, name=want.name, actual=pairs[i], message=made[pairs[i]][0]))
            continue
        near = next((j for j in unused if made[j][1].name == want.name), None)
        differing = _differing(want.arguments, made[near][1].arguments) if near is not None else ()
        parts.append(CallMatch(expected=i, name=want.name, near=near, differing=differing))
    matched = len(pairs)
    if policy == "subset":
        denominator = len(expected)
        score = matched / denominator if denominator else 1.0
    else:
        denominator = max(len(expected), len(made))
        score = matched / denominator if denominator else 1.0
    return ToolCallMatch(
        order=policy,
        rule=SCORE_RULE[policy],
        score=score,
        matched=matched,
        expected_count=len(expected),
        made=len(made),
        parts=tuple(parts),
        extra=tuple(unused),
    )


class Efficiency(BaseModel):
    """How a run used its tools, counted: ``calls`` made, ``distinct`` calls, ``repeated`` (calls identical to an
    earlier one: the same tool and canonical arguments) with ``repeats`` (each repeat's index among the calls and
    the index of the call it repeats), ``failed`` results (flagged as errors by the tool; ``failed_calls``: their
    call ids), and ``unanswered`` calls (ids of calls with no result in the run)."""

    model_config = ConfigDict(frozen=True)

    calls: int
    distinct: int
    repeated: int
    repeats: tuple[tuple[int, int], ...]
    failed: int
    failed_calls: tuple[str, ...]
    unanswered: tuple[str, ...]


def efficiency(run: AgentRun) -> Efficiency:
    """The tool-use counts of ``run`` (module docstring): repeated, failed and unanswered calls, counted, not
    judged. ``run``: the agent run to count."""
    seen: dict[tuple[str, str], int] = {}
    repeats = []
    made = [call for _, call in run.calls]
    for index, call in enumerate(made):
        key = _key(call.name, call.arguments_json)
        if key in seen:
            repeats.append((index, seen[key]))
        else:
            seen[key] = index
    results = {m.tool_call_id: m for m in run.messages if m.role == "tool"}
    failed = tuple(call.id for call in made if call.id in results and results[call.id].is_error)
    unanswered = tuple(call.id for call in made if call.id not in results)
    return Efficiency(
        calls=len(made),
        distinct=len(seen),
        repeated=len(repeats),
        repeats=tuple(repeats),
        failed=len(failed),
        failed_calls=failed,
        unanswered=unanswered,
    )
