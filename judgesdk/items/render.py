"""The text a judge is shown of an item, with its structure kept, under a token budget whose cuts are recorded.

**Layout.** Each part of an item is an element with its facts as attributes, one per block::

    <message index="2" role="assistant" judged="yes">
    Let me check.
    <tool_call id="call_1" name="get_weather">{"city":"Paris"}</tool_call>
    </message>
    <message index="3" role="tool" call_id="call_1" tool="get_weather" status="error">
    ...
    </message>

A conversation shows role labels, each assistant message's tool calls (name and canonical JSON arguments), each
tool result tied to its call (the call id and the tool's name, and ``status="error"`` where the tool flagged a
failure); the judged turn carries ``judged="yes"``, and the messages after it are not shown (they are not the
context it answered; the count is recorded). A grounded answer shows the ``<question>``, the numbered
``<passage number="1" id=".." title="..">`` elements, the ``<answer>`` and the ``<reference>``; an agent run its
``<task>``, its messages and its ``<expected_outcome>`` (the expected calls are checked by
:mod:`judgesdk.items.tools`, not shown).

**Escaping.** Judged text is escaped with the templates' own rewrite (:func:`judgesdk.prompting.neutralize`,
module :mod:`judgesdk.prompting.fences`) against this layout's element names: a message holding
``</message>`` or ``<passage`` gets its ``<`` written ``&lt;``, so it cannot close its element or forge
another, and a line that reads as an answer (``Score: 5``) is quoted. Attribute values are escaped as in XML.

**Budget** (:data:`POLICY`). With ``budget`` tokens (counted by ``count_tokens``, by default
:func:`approx_tokens`), an item that does not fit is cut in this order, each step only while it is still over:
(1) tool results longer than ``tool_result_tokens`` are shortened in the middle (their head and tail kept, a
``[... N tokens cut ...]`` marker between); (2) messages are dropped, oldest first, keeping the system
messages, the task, the first user message and the judged turn, then as many of the most recent messages as
fit; the dropped ones are replaced by one ``<cut messages="..."/>`` line; (3) what is kept is shortened in the
middle, the longest first (passages of a grounded answer are shortened, never dropped). :class:`Cuts` records
each step: which messages were dropped, which parts shortened, the tokens before and after, the counter used,
and whether the text fits.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict

from judgesdk.core import InputError
from judgesdk.items.kinds import AgentRun, Conversation, GroundedAnswer, Item, Message, arguments_json
from judgesdk.prompting import Fences, fences_of, neutralize

__all__ = ["POLICY", "Cuts", "Rendered", "Shortened", "approx_tokens", "render_item"]

POLICY = (
    "keep-system-task-first-user-judged-then-recent/v1: tool results over the per-result cap shortened in the "
    "middle; then the oldest messages dropped (system messages, task, first user message and judged turn kept); "
    "then the longest kept parts shortened in the middle"
)
"""The truncation policy, named in every :class:`Cuts` (and so in a row's provenance)."""

_ELEMENTS = ("message", "tool_call", "passage", "question", "answer", "reference", "task", "expected_outcome", "cut")
# the layout's skeleton, read by fences_of for its element names (the tags judged text must not open or close)
_SKELETON = "\n".join(f"<{name}></{name}>" for name in _ELEMENTS)


def _fences() -> Fences:
    return fences_of(_SKELETON, "", "")


def approx_tokens(text: str) -> int:
    """A cheap, stated estimate of the tokens in ``text``: the larger of its whitespace-separated words and its
    characters divided by four (rounded up), the common rule of thumb for English under BPE tokenizers."""
    return max(len(text.split()), math.ceil(len(text) / 4))


class Shortened(BaseModel):
    """A part shortened in the middle: ``part`` (``messages[4]``, ``passages[2]``), its tokens ``before`` and
    ``after``."""

    model_config = ConfigDict(frozen=True)

    part: str
    before: int
    after: int


class Cuts(BaseModel):
    """What rendering cut to fit the budget, for a row's notes and provenance: the ``policy``, the ``budget`` (None:
    none), the ``counter`` that counted tokens, ``tokens_before`` and ``tokens_after``, the ``dropped`` message
    indices, the ``shortened`` parts, ``after_judged`` (messages after the judged turn, not shown) and ``fits``."""

    model_config = ConfigDict(frozen=True)

    policy: str = POLICY
    budget: int | None = None
    counter: str = "approx_tokens"
    tokens_before: int = 0
    tokens_after: int = 0
    dropped: tuple[int, ...] = ()
    shortened: tuple[Shortened, ...] = ()
    after_judged: int = 0
    fits: bool = True

    @property
    def cut(self) -> bool:
        """Whether anything was dropped or shortened."""
        return bool(self.dropped or self.shortened)

    def note(self) -> str:
        """One line for a row's notes: what was cut and the tokens before and after; empty where nothing was."""
        if not self.cut:
            return ""
        parts = []
        if self.dropped:
            parts.append(f"{len(self.dropped)} messages dropped ({_ranges(self.dropped)})")
        if self.shortened:
            parts.append(
                f"{len(self.shortened)} parts shortened in the middle ({', '.join(s.part for s in self.shortened)})"
            )
        fit = "" if self.fits else "; still over budget"
        tokens = f"{self.tokens_before} -> {self.tokens_after} tokens"
        return f"cut to fit {self.budget} tokens ({self.counter}): {'; '.join(parts)}; {tokens}{fit}"


def _ranges(indices: tuple[int, ...]) -> str:
    spans: list[list[int]] = []
    for index in indices:
        if spans and index == spans[-1][1] + 1:
            spans[-1][1] = index
        else:
            spans.append([index, index])
    return ", ".join(f"messages[{a}]" if a == b else f"messages[{a}]-[{b}]" for a, b in spans)


class Rendered(BaseModel):
    """An item as a judge is shown it: the ``text``, and the ``cuts`` made to fit the budget."""

    model_config = ConfigDict(frozen=True)

    text: str
    cuts: Cuts


def _attr(value: object) -> str:
    text = " ".join(str(value).split())
    return text.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;")


def _open(element: str, **attributes: object) -> str:
    attrs = "".join(f' {key}="{_attr(value)}"' for key, value in attributes.items() if value is not None)
    return f"<{element}{attrs}>"


@dataclass
class _Block:
    """One part of the layout: its header line, its body (judged text, escaped; what shortening cuts), the lines
    after the body (tool calls, the closing tag), and what the budget may do with it."""

    part: str
    head: str
    body: str
    tail: str
    index: int | None = None  # the message index, for messages
    keep: bool = True  # never dropped
    tool_result: bool = False
    shortened_from: int | None = None
    extra: list[str] = field(default_factory=list)

    def text(self) -> str:
        return "\n".join(line for line in (self.head, self.body, *self.extra, self.tail) if line != "")


def _escaped(text: str) -> str:
    return neutralize(text, _fences()) if text else text


def _message_block(index: int, message: Message, names: dict[str, str], judged: bool, keep: bool) -> _Block:
    if message.role == "tool":
        head = _open(
            "message",
            index=index,
            role="tool",
            call_id=message.tool_call_id,
            tool=names.get(message.tool_call_id or ""),
            status="error" if message.is_error else None,
        )
    else:
        head = _open("message", index=index, role=message.role, judged="yes" if judged else None)
    block = _Block(
        f"messages[{index}]",
        head,
        _escaped(message.content),
        "</message>",
        index=index,
        keep=keep,
        tool_result=message.role == "tool",
    )
    for call in message.tool_calls:
        block.extra.append(
            f"{_open('tool_call', id=call.id, name=call.name)}{_escaped(arguments_json(call.arguments))}</tool_call>"
        )
    return block


def _blocks(item: Item) -> tuple[list[_Block], int]:
    """The item's blocks in order, and how many messages after the judged turn are left out."""
    if isinstance(item, GroundedAnswer):
        blocks = [_Block("question", "<question>", _escaped(item.question), "</question>")]
        for number, passage in enumerate(item.passages, 1):
            head = _open("passage", number=number, id=passage.id, title=passage.title)
            blocks.append(_Block(f"passages[{number - 1}]", head, _escaped(passage.text), "</passage>"))
        blocks.append(_Block("answer", "<answer>", _escaped(item.answer), "</answer>"))
        if item.reference is not None:
            blocks.append(_Block("reference", "<reference>", _escaped(item.reference), "</reference>"))
        return blocks, 0
    messages = item.messages
    judged = item.judged_index if isinstance(item, Conversation) else None
    shown = messages if judged is None else messages[: judged + 1]
    names = {call.id: call.name for message in messages for call in message.tool_calls}
    first_user = next((i for i, m in enumerate(shown) if m.role == "user"), None)
    blocks = []
    if isinstance(item, AgentRun) and item.task is not None:
        blocks.append(_Block("task", "<task>", _escaped(item.task), "</task>"))
    for index, message in enumerate(shown):
        keep = message.role == "system" or index == first_user or index == judged
        blocks.append(_message_block(index, message, names, index == judged, keep))
    if isinstance(item, AgentRun) and item.expected_outcome is not None:
        blocks.append(
            _Block("expected_outcome", "<expected_outcome>", _escaped(item.expected_outcome), "</expected_outcome>")
        )
    return blocks, len(messages) - len(shown)


def _shorten(text: str, target: int, count: Callable[[str], int]) -> str:
    """``text`` cut in the middle to about ``target`` tokens (by ``count``), its head and tail kept, a marker
    saying how many tokens were cut between them."""
    total = count(text)
    if total <= target:
        return text
    keep = len(text) * max(target, 0) / max(total, 1)
    for _ in range(8):
        head = int(keep // 2)
        tail = int(keep - head)
        cut_tokens = count(text[head : len(text) - tail] if tail else text[head:])
        marker = f"[... {cut_tokens} tokens cut ...]"
        short = f"{text[:head]}\n{marker}\n{text[len(text) - tail :] if tail else ''}".rstrip("\n")
        if count(short) <= target or keep <= 0:
            return short
        keep *= 0.8
        if keep < 8:
            keep = 0
    return short


def _join_blocks(blocks: list[_Block | str]) -> str:
    return "\n".join(b if isinstance(b, str) else b.text() for b in blocks)


def render_item(
    item: Item,
    *,
    budget: int | None = None,
    count_tokens: Callable[[str], int] | None = None,
    tool_result_tokens: int | None = None,
) -> Rendered:
    """``item`` as the text a judge is shown (module docstring: layout, escaping, the budget's policy).

    ``item``: a :class:`~judgesdk.items.Conversation`, :class:`~judgesdk.items.GroundedAnswer` or
    :class:`~judgesdk.items.AgentRun`; ``budget``: the most tokens the text may have (None: no limit);
    ``count_tokens``: counts the tokens of a text (default :func:`approx_tokens`; pass the judge's tokenizer
    for exact counts; its ``__name__`` is recorded); ``tool_result_tokens``: the most tokens one tool result
    keeps once the item is over budget (default: an eighth of the budget, at least 64)."""
    if budget is not None and budget <= 0:
        raise InputError(f"budget: a positive number of tokens is needed, got {budget}")
    count = count_tokens or approx_tokens
    counter = getattr(count, "__name__", type(count).__name__)
    blocks, after = _blocks(item)
    text = _join_blocks(list(blocks))
    before = count(text)
    if budget is None or before <= budget:
        return Rendered(
            text=text,
            cuts=Cuts(budget=budget, counter=counter, tokens_before=before, tokens_after=before, after_judged=after),
        )
    shortened: dict[str, Shortened] = {}

    def shorten(block: _Block, target: int) -> None:
        was = count(block.body)
        new = _shorten(block.body, target, count)
        if new != block.body:
            block.body = new
            first = shortened[block.part].before if block.part in shortened else was
            shortened[block.part] = Shortened(part=block.part, before=first, after=count(new))

    # (1) long tool results, shortened in the middle
    cap = tool_result_tokens if tool_result_tokens is not None else max(budget // 8, 64)
    for block in blocks:
        if block.tool_result and count(block.body) > cap:
            shorten(block, cap)
    layout: list[_Block | str] = list(blocks)
    dropped: list[int] = []
    # (2) the oldest droppable messages out: keep the essential blocks, then the most recent that fit
    if count(_join_blocks(layout)) > budget:
        droppable = [b for b in blocks if not b.keep and b.index is not None]
        essential = [b for b in blocks if b not in droppable]
        marker_room = count(_open("cut", messages="messages[0000]-[0000]", count=0000)) + 2
        used = count(_join_blocks(list(essential))) + marker_room
        kept: set[int] = set()
        for block in reversed(droppable):
            cost = count(block.text()) + 1
            if used + cost > budget:
                break
            kept.add(id(block))
            used += cost
        # a kept run does not start with a tool result whose call was dropped
        for block in droppable:
            if id(block) in kept:
                if block.tool_result:
                    kept.discard(id(block))
                    continue
                break
        layout = []
        run: list[int] = []
        for block in blocks:
            if block.keep or block.index is None or id(block) in kept:
                if run:
                    layout.append(_open("cut", messages=_ranges(tuple(run)), count=len(run)).replace(">", "/>", 1))
                    run = []
                layout.append(block)
            else:
                run.append(block.index)
                dropped.append(block.index)
        if run:
            layout.append(_open("cut", messages=_ranges(tuple(run)), count=len(run)).replace(">", "/>", 1))
    # (3) the longest kept parts, shortened in the middle until the text fits
    for _ in range(len(blocks) * 2):
        over = count(_join_blocks(layout)) - budget
        if over <= 0:
            break
        present = [b for b in layout if isinstance(b, _Block) and b.body]
        if not present:
            break
        longest = max(present, key=lambda b: count(b.body))
        size = count(longest.body)
        if size <= 16:
            break
        shorten(longest, max(size - over - 16, 8))
    text = _join_blocks(layout)
    after_tokens = count(text)
    cuts = Cuts(
        budget=budget,
        counter=counter,
        tokens_before=before,
        tokens_after=after_tokens,
        dropped=tuple(dropped),
        # a part shortened in step (1) and then dropped is recorded as dropped only
        shortened=tuple(s for s in shortened.values() if s.part in {b.part for b in layout if isinstance(b, _Block)}),
        after_judged=after,
        fits=after_tokens <= budget,
    )
    return Rendered(text=text, cuts=cuts)
