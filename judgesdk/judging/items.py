"""Typed items judged: a conversation, grounded answer or agent run turned into the four strings of a
:class:`~judgesdk.core.JudgeItem` at this one point, and the checks of an item that need no model call.

**The mapping** (:func:`judge_item`), from the structure-keeping rendering of :func:`judgesdk.items.render_item`:

* a conversation judged by turn: ``output`` = the judged turn rendered (its ``<message ... judged="yes">``
  element), ``source`` = the rendered conversation before it; judged whole (``scope="conversation"``):
  ``output`` = the whole conversation rendered;
* a grounded answer: ``output`` = the answer, ``source`` = the rendered question and numbered passages,
  ``reference`` = the reference answer;
* an agent run: ``output`` = the rendered run (its messages, tool calls and results), ``source`` = the task, and
  the expected outcome after it (``Expected outcome: ...``) where one is given.

What the output answers goes in ``source``, not ``context``: ``source`` is what the templates show beside the
output (``prompts/README.md``: the article, the dialogue history of TopicalChat), while ``context`` is a
grounding fact that only the TopicalChat templates show; a conversation or the passages put there would not be
in the default prompt at all.

The item's ``id`` becomes the JudgeItem's id. The prompt holds the rendering, so the cache key follows from it:
the same conversation read from any of its forms gives the same JudgeItem, the same prompt and the same key.
What the budget cut is recorded (:func:`annotate`): its note in the result's notes and ``details["item"]`` =
``{"kind": "conversation/1", "cuts": {...}}``.

**Deterministic criteria** (:func:`deterministic`): ``tool_correctness`` on an agent run is
:func:`judgesdk.items.match_tool_calls`, no model call: the matched share (0-1) mapped linearly onto the
criterion's scale (``low + share * (high - low)``: the share as-is on the preset's 0-1 scale), method
``deterministic/tool_calls``, one part per expected call (matched, missing) and per extra call in
``details["tool_calls"]``; a run without expected calls gets the status ``refused`` with the reason.
"""

from __future__ import annotations

from typing import Any

from judgesdk.core import Criterion, JudgeItem, JudgeResult
from judgesdk.items import AgentRun, Conversation, Cuts, GroundedAnswer, Item, ItemError, match_tool_calls, render_item

__all__ = ["DETERMINISTIC", "annotate", "deterministic", "is_item", "judge_item"]

DETERMINISTIC = {"tool_correctness": "deterministic/tool_calls"}
"""Criteria answered without a model call on the item kinds they apply to (criterion name -> method)."""


def is_item(value: object) -> bool:
    """Whether ``value`` is a typed item (a :class:`~judgesdk.items.Conversation`,
    :class:`~judgesdk.items.GroundedAnswer` or :class:`~judgesdk.items.AgentRun`)."""
    return isinstance(value, (Conversation, GroundedAnswer, AgentRun))


def _split(text: str, marker: str) -> tuple[str, str]:
    """``text`` cut before the line that starts with ``marker`` (judged text is escaped, so only the layout's own
    element can start a line with it)."""
    at = text.find("\n" + marker)
    if text.startswith(marker):
        at = 0
    if at < 0:  # cannot happen for a rendering of a valid item: the marker is the layout's
        raise ItemError("", f"the rendering has no {marker!r}: report this as a bug")
    return text[:at].rstrip("\n"), text[at:].lstrip("\n")


def judge_item(item: Item, *, budget: int | None = None) -> tuple[JudgeItem, Cuts]:
    """``item`` as the four strings a judge's prompt shows (module docstring), and what rendering cut.

    ``item``: a conversation, grounded answer or agent run; ``budget``: the most tokens its rendering may have
    (None: no limit; for a grounded answer, of the question and passages it is judged against)."""
    if isinstance(item, GroundedAnswer):
        shown = render_item(item.model_copy(update={"reference": None}), budget=budget)
        shown_source, _ = _split(shown.text, "<answer>")
        return JudgeItem(output=item.answer, source=shown_source, reference=item.reference, id=item.id), shown.cuts
    if isinstance(item, AgentRun):
        shown = render_item(item.model_copy(update={"task": None, "expected_outcome": None}), budget=budget)
        source = item.task
        if item.expected_outcome is not None:
            outcome = f"Expected outcome: {item.expected_outcome}"
            source = outcome if source is None else f"{source}\n\n{outcome}"
        return JudgeItem(output=shown.text, source=source, id=item.id), shown.cuts
    shown = render_item(item, budget=budget)
    judged = item.judged_index
    if judged is None:
        return JudgeItem(output=shown.text, id=item.id), shown.cuts
    before, output = _split(shown.text, f'<message index="{judged}" ')
    return JudgeItem(output=output, source=before or None, id=item.id), shown.cuts


def annotate(result: JudgeResult, item: Item, cuts: Cuts) -> JudgeResult:
    """``result`` with the item's provenance: ``details["item"]`` = its kind and the cuts, and the cuts' note (when
    anything was cut) in its notes. ``result``: the judge's result for ``item``; ``cuts``: what rendering cut."""
    note = cuts.note()
    details = {**result.details, "item": {"kind": item.schema_id, "cuts": cuts.model_dump(mode="json")}}
    return result.model_copy(update={"details": details, "notes": [*result.notes, note] if note else result.notes})


def deterministic(item: Item, criterion: Criterion) -> JudgeResult | None:
    """The answer to ``criterion`` on ``item`` that needs no model call (module docstring), or None where the
    criterion is a judge's question for this item. ``item``: the typed item; ``criterion``: one criterion."""
    if criterion.name not in DETERMINISTIC or not isinstance(item, AgentRun):
        return None
    method = DETERMINISTIC[criterion.name]
    common: dict[str, Any] = {"criterion": criterion.name, "method": method, "provider": "none", "item_id": item.id}
    if item.expected_calls is None:
        reason = (
            "tool_correctness refused: the run gives no expected_calls to match its calls against; add them "
            "(name and arguments) for the deterministic check"
        )
        return JudgeResult(score=None, status="refused", method_reason=reason, notes=[reason], **common)
    match = match_tool_calls(item)
    low, high = criterion.scale.low, criterion.scale.high
    made = item.calls
    parts: list[dict[str, Any]] = []
    for part in match.parts:
        entry: dict[str, Any] = {"expected": part.expected, "name": part.name}
        if part.actual is not None:
            entry.update(status="matched", actual=part.actual, message=part.message, call_id=made[part.actual][1].id)
        else:
            entry.update(status="missing", near=part.near, differing=list(part.differing))
        parts.append(entry)
    for index in match.extra:
        message, call = made[index]
        parts.append({"status": "extra", "actual": index, "message": message, "name": call.name, "call_id": call.id})
    reason = (
        f"{match.matched} of {match.expected_count} expected tool calls matched ({match.made} made), "
        f"{match.order}: score = {match.rule}, mapped linearly onto {low:g}-{high:g}; no model call"
    )
    return JudgeResult(
        score=low + match.score * (high - low),
        status="ok",
        method_reason=reason,
        notes=[reason],
        details={"tool_calls": {"order": match.order, "rule": match.rule, "share": match.score, "parts": parts}},
        **common,
    )
