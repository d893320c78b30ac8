"""Floor 3, items: what apps produce, judged as typed items: conversations, grounded answers and agent runs.

* :mod:`~judgesdk.items.kinds`: the item kinds (:class:`Conversation`, :class:`GroundedAnswer`, :class:`AgentRun`,
  made of :class:`Message`, :class:`ToolCall`, :class:`Passage`, :class:`ExpectedCall`), frozen and versioned
  (``conversation/1``), with tool-call arguments in one canonical form (a JSON object, keys sorted) and every
  invalid input a one-line :class:`ItemError` naming the message index and field (:func:`located` adds the file
  and line); :class:`Unreadable` keeps a line that could not be read in its place, so it costs no other item.
* :mod:`~judgesdk.items.readers`: the forms people have, validated against the ``openai`` and ``anthropic``
  packages' own parameter types (OpenAI Chat Completions messages, OpenAI Responses input items and
  ``instructions``, Anthropic Messages content blocks and ``system``) and converted into the one internal form:
  :func:`read_conversation`, :func:`read_item` (a JSONL object with a ``kind``).
* :mod:`~judgesdk.items.render`: the text a judge is shown, with the structure kept (role labels, tool calls and
  their results, numbered passages, the judged turn marked), judged text fenced and escaped as the templates
  escape it, and a token budget with a stated truncation policy whose cuts are recorded (:class:`Rendered`,
  :class:`Cuts`).
* :mod:`~judgesdk.items.tools`: deterministic checks of an agent run, no model call: tool-call correctness
  against the expected calls under an order policy (:func:`match_tool_calls`) and efficiency counts
  (:func:`efficiency`).

The readers import ``openai`` and ``anthropic`` inside the functions that need them (the ``openai`` and
``anthropic`` extras); the kinds, rendering and checks need neither.

May import: :mod:`judgesdk.core`, :mod:`judgesdk.prompting` (its fences), and optional third-party packages
(``openai``, ``anthropic``) inside functions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from judgesdk.core import lazy as _lazy

if TYPE_CHECKING:
    from judgesdk.items.kinds import (
        ROLES,
        AgentRun,
        Conversation,
        ExpectedCall,
        GroundedAnswer,
        Item,
        ItemError,
        Message,
        OrderPolicy,
        Passage,
        ToolCall,
        Unreadable,
        canonical_json,
        located,
    )
    from judgesdk.items.readers import FORMS, Form, detect_form, read_conversation, read_item
    from judgesdk.items.render import POLICY, Cuts, Rendered, Shortened, approx_tokens, render_item
    from judgesdk.items.tools import CallMatch, Efficiency, ToolCallMatch, efficiency, match_tool_calls

__all__ = [
    "AgentRun",
    "approx_tokens",
    "CallMatch",
    "canonical_json",
    "Conversation",
    "Cuts",
    "detect_form",
    "efficiency",
    "Efficiency",
    "ExpectedCall",
    "Form",
    "FORMS",
    "GroundedAnswer",
    "Item",
    "ItemError",
    "located",
    "match_tool_calls",
    "Message",
    "OrderPolicy",
    "Passage",
    "POLICY",
    "read_conversation",
    "read_item",
    "render_item",
    "Rendered",
    "ROLES",
    "Shortened",
    "ToolCall",
    "ToolCallMatch",
    "Unreadable",
]

__getattr__, __dir__ = _lazy(
    __name__,
    {
        **dict.fromkeys(
            ("ROLES", "AgentRun", "Conversation", "ExpectedCall", "GroundedAnswer", "Item", "ItemError", "Message",
             "OrderPolicy", "Passage", "ToolCall", "Unreadable", "canonical_json", "located"),
            "judgesdk.items.kinds",
        ),
        **dict.fromkeys(("FORMS", "Form", "detect_form", "read_conversation", "read_item"), "judgesdk.items.readers"),
        **dict.fromkeys(
            ("POLICY", "Cuts", "Rendered", "Shortened", "approx_tokens", "render_item"), "judgesdk.items.render"
        ),
        **dict.fromkeys(
            ("CallMatch", "Efficiency", "ToolCallMatch", "efficiency", "match_tool_calls"), "judgesdk.items.tools"
        ),
    },
    globals(),
)
