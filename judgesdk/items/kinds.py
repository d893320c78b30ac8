"""The item kinds: a conversation, a grounded answer and an agent run, typed, frozen and versioned.

Each kind carries a ``kind`` tag and a schema ``version`` (``conversation/1``, ``grounded_answer/1``,
``agent_run/1``: :attr:`Conversation.schema_id`), so a file written today is read the same way when a later
version adds fields. Tool-call arguments have one canonical form, a JSON object whose keys are sorted (at every
depth), whichever form they came in (an object, as Anthropic's ``input``, or a JSON string, as OpenAI's
``arguments``); :func:`canonical_json` writes a whole item as one canonical JSON string (sorted keys, no
spaces, UTF-8), the same bytes for the same item.

Invalid input raises :class:`ItemError` (an :class:`~judgesdk.core.InputError`) with one line naming where and
what: ``messages[3].tool_call_id: 'call_9' answers no tool call made before it``; :func:`located` puts the
file and line in front (``items.jsonl:12: messages[3]...``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, ValidationError, field_validator, model_validator
from typing_extensions import Self

from judgesdk.core import InputError

__all__ = [
    "ROLES",
    "AgentRun",
    "Conversation",
    "ExpectedCall",
    "GroundedAnswer",
    "Item",
    "ItemError",
    "Message",
    "OrderPolicy",
    "Passage",
    "ToolCall",
    "Unreadable",
    "canonical_json",
    "located",
]

ROLES = ("system", "user", "assistant", "tool")
"""The roles of the internal form (an OpenAI ``developer`` message is read as ``system``)."""

Role = Literal["system", "user", "assistant", "tool"]
OrderPolicy = Literal["ordered", "unordered", "subset"]
"""How an agent run's tool calls are held against its expected calls (:func:`judgesdk.items.tools.match_tool_calls`)."""


class ItemError(InputError):
    """An item that cannot be read: ``where`` (a path such as ``messages[3].tool_call_id``, empty for the item as a
    whole) and ``reason`` (what is wrong and what to fix), written as one line ``where: reason``."""

    def __init__(self, where: str, reason: str) -> None:
        self.where = where
        self.reason = " ".join(reason.split())  # one line, whatever the reason quoted
        super().__init__(f"{where}: {self.reason}" if where else self.reason)

    def under(self, prefix: str) -> ItemError:
        """The same error one level down: ``prefix`` (``messages[3]``) put before :attr:`where`."""
        return ItemError(_join(prefix, self.where), self.reason)


def located(error: InputError, source: str, line: int) -> InputError:
    """``error`` with the file and line it came from in front: ``items.jsonl:12: messages[3].role: ...``.

    ``error``: the error an item raised (its message one line); ``source``: the file (or any name for where the
    item came from); ``line``: its 1-based line number. An :class:`ItemError` stays one, with ``where`` prefixed."""
    if isinstance(error, ItemError):
        return ItemError(f"{source}:{line}: {error.where}" if error.where else f"{source}:{line}", error.reason)
    return InputError(f"{source}:{line}: {error}")


def _join(prefix: str, where: str) -> str:
    if not where:
        return prefix
    if not prefix:
        return where
    return f"{prefix}{where}" if where.startswith("[") else f"{prefix}.{where}"


def _path(loc: Iterable[Any]) -> str:
    """A pydantic location as a path: ``('messages', 3, 'role')`` -> ``messages[3].role``."""
    out = ""
    for part in loc:
        out = f"{out}[{part}]" if isinstance(part, int) else _join(out, str(part))
    return out


def item_error(exc: ValidationError, prefix: str = "") -> ItemError:
    """A pydantic :class:`ValidationError` as one :class:`ItemError`: its first error, where and what.

    ``exc``: the error; ``prefix``: a path put before the error's own location."""
    first = exc.errors(include_url=False)[0]
    message = str(first.get("msg", "invalid"))
    for lead in ("Value error, ", "Assertion failed, "):
        message = message.removeprefix(lead)
    if first.get("type") in (
        "literal_error",
        "string_type",
        "dict_type",
        "int_type",
        "bool_type",
        "list_type",
        "model_type",
    ):
        message = f"{message} (got {_short(first.get('input'))})"
    if first.get("type") == "extra_forbidden":
        message = "unknown field: remove it or check its spelling"
    return ItemError(_join(prefix, _path(first.get("loc", ()))), message)


def _short(value: object) -> str:
    text = json.dumps(value, ensure_ascii=False, default=repr) if not isinstance(value, str) else repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def canonical_arguments(value: object) -> dict[str, Any]:
    """Tool-call arguments in their canonical form: a JSON object (a dict) with its keys sorted at every depth.

    ``value``: the arguments as a JSON string (OpenAI's ``arguments``) or an object (Anthropic's ``input``).
    Raises ValueError (pydantic names the field) for text that is not JSON, JSON that is not an object, or an
    object that JSON cannot hold (NaN, a set, a non-string key)."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not JSON: {exc.msg} at character {exc.pos}") from None
    if not isinstance(value, dict):
        raise ValueError(f"tool-call arguments must be a JSON object, got {type(value).__name__} {_short(value)}")
    try:
        text = json.dumps(value, sort_keys=True, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"not a JSON object: {exc}") from None
    loaded = json.loads(text, object_pairs_hook=lambda pairs: dict(sorted(pairs)))
    return dict(loaded)


def arguments_json(arguments: dict[str, Any]) -> str:
    """``arguments`` as canonical JSON text (sorted keys, no spaces, UTF-8): what equal calls share."""
    return json.dumps(arguments, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


class _Strict(BaseModel):
    """Frozen, no unknown fields, and any validation failure raised as one :class:`ItemError` line."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise item_error(exc) from None

    @classmethod
    def model_validate(cls, obj: Any, *args: Any, **kwargs: Any) -> Self:
        """``obj`` validated as this kind; ``args`` and ``kwargs`` as pydantic's; failures as :class:`ItemError`."""
        try:
            return super().model_validate(obj, *args, **kwargs)
        except ValidationError as exc:
            raise item_error(exc) from None

    @field_validator("*", mode="after")
    @classmethod
    def _unicode(cls, value: Any) -> Any:
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError as exc:
                raise ValueError(
                    f"a lone surrogate at character {exc.start} is not valid Unicode text: fix the encoding"
                ) from None
        return value


def _nonblank(value: str, what: str) -> str:
    if not value.strip():
        raise ValueError(f"empty {what}")
    return value


def _each(model: type[_Strict], values: Any, field: str) -> list[Any]:
    """A list field's entries validated one by one, so an error names the entry: ``messages[3].role``."""
    if isinstance(values, (str, bytes, dict)) or not isinstance(values, Iterable):
        raise ItemError(field, f"a list is needed, got {type(values).__name__}")
    out = []
    for index, value in enumerate(values):
        if isinstance(value, model):
            out.append(value)
            continue
        if not isinstance(value, dict):
            raise ItemError(f"{field}[{index}]", f"an object is needed, got {type(value).__name__} {_short(value)}")
        try:
            out.append(model.model_validate(value))
        except ItemError as exc:
            raise exc.under(f"{field}[{index}]") from None
    return out


class ToolCall(_Strict):
    """One call an assistant message makes: its ``id`` (what the tool's result names), the tool's ``name`` and its
    ``arguments`` (canonical: a JSON object with sorted keys; a JSON string is parsed into one)."""

    id: str
    name: str
    arguments: dict[str, Any]

    @field_validator("arguments", mode="before")
    @classmethod
    def _arguments(cls, value: Any) -> dict[str, Any]:
        return canonical_arguments(value)

    @field_validator("id", "name")
    @classmethod
    def _named(cls, value: str) -> str:
        return _nonblank(value, "text")

    @property
    def arguments_json(self) -> str:
        """The arguments as canonical JSON text."""
        return arguments_json(self.arguments)


class Message(_Strict):
    """One message: its ``role`` (system, user, assistant, tool), its text ``content``, an assistant message's
    ``tool_calls``, a tool message's ``tool_call_id`` (the call it answers) and ``is_error`` (the tool reported a
    failure: Anthropic's ``is_error``; OpenAI's formats have no such flag), and an optional ``id`` (to name the
    judged turn)."""

    role: Role
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    is_error: bool = False
    id: str | None = None

    @field_validator("tool_calls", mode="before")
    @classmethod
    def _calls(cls, value: Any) -> list[Any]:
        return _each(ToolCall, value, "tool_calls")

    @model_validator(mode="after")
    def _check(self) -> Self:
        if self.tool_calls and self.role != "assistant":
            raise ItemError("tool_calls", f"only an assistant message makes tool calls (this one is {self.role})")
        if self.role == "tool":
            if not self.tool_call_id:
                raise ItemError("tool_call_id", "a tool message needs the id of the call it answers")
        elif self.tool_call_id is not None:
            raise ItemError("tool_call_id", f"only a tool message answers a call (this one is {self.role})")
        elif self.is_error:
            raise ItemError("is_error", f"only a tool result is flagged as an error (this one is {self.role})")
        if self.role == "assistant" and not self.content.strip() and not self.tool_calls:
            raise ItemError("content", "an assistant message needs text or tool calls")
        if self.role in ("system", "user") and not self.content.strip():
            raise ItemError("content", f"empty {self.role} message")
        return self


def _check_thread(messages: tuple[Message, ...]) -> None:
    """What holds across messages: not empty, call ids unique, each tool result answers a call made before it."""
    if not messages:
        raise ItemError("messages", "an empty conversation: there is nothing to judge")
    calls: dict[str, tuple[int, int]] = {}
    answered: set[str] = set()
    for index, message in enumerate(messages):
        for number, call in enumerate(message.tool_calls):
            if call.id in calls:
                first = calls[call.id]
                raise ItemError(
                    f"messages[{index}].tool_calls[{number}].id",
                    f"call id {call.id!r} is used twice (first at messages[{first[0]}].tool_calls[{first[1]}])",
                )
            calls[call.id] = (index, number)
        if message.role == "tool":
            call_id = message.tool_call_id or ""
            if call_id not in calls:
                raise ItemError(f"messages[{index}].tool_call_id", f"{call_id!r} answers no tool call made before it")
            if call_id in answered:
                raise ItemError(f"messages[{index}].tool_call_id", f"call {call_id!r} is answered twice")
            answered.add(call_id)


class _Kind(_Strict):
    """What every kind carries: its tag, its schema version and an optional ``id``."""

    KIND: ClassVar[str] = ""
    VERSION: ClassVar[int] = 1

    version: Literal[1] = 1
    id: str | None = None

    @property
    def schema_id(self) -> str:
        """The kind and its schema version: ``conversation/1``."""
        return f"{self.KIND}/{self.version}"


class Conversation(_Kind):
    """A conversation to judge: its ``messages`` and what is judged. ``scope="turn"`` (the default) judges one
    assistant turn: ``turn`` is its index in ``messages`` (the internal form: a system message first) or a
    message's ``id``, and by default the last assistant message; ``scope="conversation"`` judges the whole of it."""

    KIND: ClassVar[str] = "conversation"

    kind: Literal["conversation"] = "conversation"
    messages: tuple[Message, ...]
    scope: Literal["turn", "conversation"] = "turn"
    turn: int | str | None = None

    @field_validator("messages", mode="before")
    @classmethod
    def _messages(cls, value: Any) -> list[Any]:
        return _each(Message, value, "messages")

    @model_validator(mode="after")
    def _check(self) -> Self:
        _check_thread(self.messages)
        if self.scope == "conversation":
            if self.turn is not None:
                raise ItemError("turn", "a turn is named only with scope 'turn' (this conversation is judged whole)")
            return self
        self.judged_index  # noqa: B018 - raises ItemError where the judged turn does not exist
        return self

    @property
    def judged_index(self) -> int | None:
        """The index of the judged assistant message, or None where the whole conversation is judged."""
        if self.scope == "conversation":
            return None
        count = len(self.messages)
        if self.turn is None:
            for index in range(count - 1, -1, -1):
                if self.messages[index].role == "assistant":
                    return index
            raise ItemError("messages", "no assistant message to judge: add one, or give scope 'conversation'")
        if isinstance(self.turn, bool) or (isinstance(self.turn, int) and not 0 <= self.turn < count):
            raise ItemError(
                "turn",
                f"message index {self.turn} does not exist (the conversation has {count} messages, 0-{count - 1})",
            )
        if isinstance(self.turn, int):
            index = self.turn
        else:
            found = [i for i, m in enumerate(self.messages) if m.id == self.turn]
            if not found:
                raise ItemError("turn", f"no message has id {self.turn!r}")
            index = found[0]
        role = self.messages[index].role
        if role != "assistant":
            raise ItemError("turn", f"messages[{index}] is a {role} message: the judged turn is an assistant message")
        return index


class Passage(_Strict):
    """One retrieved passage: its ``text``, and optionally its ``id`` (as the retriever names it) and ``title``."""

    text: str
    id: str | None = None
    title: str | None = None

    @field_validator("text")
    @classmethod
    def _text(cls, value: str) -> str:
        return _nonblank(value, "passage")


class GroundedAnswer(_Kind):
    """An answer grounded in retrieved passages: the ``question``, the ``passages`` (at least one), the ``answer``
    judged, and optionally a ``reference`` answer."""

    KIND: ClassVar[str] = "grounded_answer"

    kind: Literal["grounded_answer"] = "grounded_answer"
    question: str
    passages: tuple[Passage, ...]
    answer: str
    reference: str | None = None

    @field_validator("passages", mode="before")
    @classmethod
    def _passages(cls, value: Any) -> list[Any]:
        passages = _each(Passage, value, "passages")
        if not passages:
            raise ItemError("passages", "no passages: a grounded answer needs the passages it was given")
        seen: dict[str, int] = {}
        for index, passage in enumerate(passages):
            if passage.id is not None:
                if passage.id in seen:
                    raise ItemError(
                        f"passages[{index}].id",
                        f"passage id {passage.id!r} is used twice (first at passages[{seen[passage.id]}])",
                    )
                seen[passage.id] = index
        return passages

    @field_validator("question", "answer")
    @classmethod
    def _text(cls, value: str) -> str:
        return _nonblank(value, "text")


class ExpectedCall(_Strict):
    """A tool call an agent run is expected to make: the tool's ``name`` and its ``arguments`` (canonical, as a
    :class:`ToolCall`'s)."""

    name: str
    arguments: dict[str, Any] = {}

    @field_validator("arguments", mode="before")
    @classmethod
    def _arguments(cls, value: Any) -> dict[str, Any]:
        return canonical_arguments(value)

    @field_validator("name")
    @classmethod
    def _named(cls, value: str) -> str:
        return _nonblank(value, "tool name")

    @property
    def arguments_json(self) -> str:
        """The arguments as canonical JSON text."""
        return arguments_json(self.arguments)


class AgentRun(_Kind):
    """An agent run: its ``messages`` (with tool calls and their results), and optionally the ``task`` it was
    given, the ``expected_calls`` (held against the calls made under the ``order`` policy: ``ordered``,
    ``unordered`` or ``subset``, :func:`judgesdk.items.tools.match_tool_calls`) and the ``expected_outcome``."""

    KIND: ClassVar[str] = "agent_run"

    kind: Literal["agent_run"] = "agent_run"
    messages: tuple[Message, ...]
    task: str | None = None
    expected_calls: tuple[ExpectedCall, ...] | None = None
    order: OrderPolicy = "ordered"
    expected_outcome: str | None = None

    @field_validator("messages", mode="before")
    @classmethod
    def _messages(cls, value: Any) -> list[Any]:
        return _each(Message, value, "messages")

    @field_validator("expected_calls", mode="before")
    @classmethod
    def _expected(cls, value: Any) -> list[Any] | None:
        return None if value is None else _each(ExpectedCall, value, "expected_calls")

    @model_validator(mode="after")
    def _check(self) -> Self:
        _check_thread(self.messages)
        if self.task is not None and not self.task.strip():
            raise ItemError("task", "empty task: leave it out or say what the agent was asked to do")
        return self

    @property
    def calls(self) -> tuple[tuple[int, ToolCall], ...]:
        """Every tool call the run made, in order, with the index of the message that made it."""
        return tuple((index, call) for index, message in enumerate(self.messages) for call in message.tool_calls)

    @property
    def conversation(self) -> Conversation:
        """The run's messages as a conversation judged whole."""
        return Conversation(messages=self.messages, scope="conversation", id=self.id)


Item = Conversation | GroundedAnswer | AgentRun
"""Any item kind."""


class Unreadable(BaseModel):
    """An input line that is not a readable item, kept in its place so that one bad item never costs the others:
    its ``id`` (for its row) and the one-line ``error`` naming the file, line and field (:func:`located`). A judge
    gives it a result with the status ``error``."""

    model_config = ConfigDict(frozen=True)

    id: str
    error: str


def canonical_json(item: BaseModel) -> str:
    """``item`` as canonical JSON: keys sorted at every depth, no spaces, UTF-8 (not ``\\u`` escapes), every field
    written (defaults too), so equal items give byte-identical text whatever form they were read from.

    ``item``: a kind (:class:`Conversation`, :class:`GroundedAnswer`, :class:`AgentRun`) or any part of one."""
    data = item.model_dump(mode="json")
    return json.dumps(data, sort_keys=True, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
