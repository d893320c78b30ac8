"""The forms people have, read into the one internal form (:mod:`judgesdk.items.kinds`).

Each form is validated against its package's own parameter types, never a copy of them: OpenAI Chat
Completions messages (``openai.types.chat``: the system, developer, user, assistant and tool message params),
OpenAI Responses input items (``openai.types.responses``: ``EasyInputMessageParam`` or
``ResponseOutputMessageParam`` for a message, ``ResponseFunctionToolCallParam``, the input item
``FunctionCallOutput``) with the top-level ``instructions``, and Anthropic Messages (``anthropic.types``:
``TextBlockParam``, ``ToolUseBlockParam``, ``ToolResultBlockParam``) with the top-level ``system``. The
packages are imported inside the functions that read their form (the ``openai`` and ``anthropic`` extras).

Conversion, the same for every form, so one conversation gives one internal object and one canonical JSON:

* a system (or developer) message, ``instructions`` or Anthropic's ``system`` becomes a ``system`` message, first;
* the text parts of one message are joined with a line break; other parts (images, files, audio, refusals,
  reasoning items) are refused with the reason, not dropped;
* an assistant message's tool calls stay on it (Responses ``function_call`` items join the assistant message
  just before them, or make one with no text); arguments become a canonical JSON object;
* each tool result becomes a ``tool`` message tied to its call id (Anthropic's ``tool_result`` blocks of a user
  message come out in block order, its text blocks as a user message), with Anthropic's ``is_error`` kept.

An error names the place in the form given (``messages[2].content[1].tool_use_id``, ``input[4].call_id``),
even where the check runs on the converted messages.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any, Literal, get_args

from pydantic import TypeAdapter, ValidationError

from judgesdk.core import MissingDependencyError
from judgesdk.items.kinds import AgentRun, Conversation, GroundedAnswer, Item, ItemError, _join, _path, _short

__all__ = ["FORMS", "Form", "detect_form", "read_conversation", "read_item"]

Form = Literal["openai_chat", "openai_responses", "anthropic_messages", "judgesdk"]
"""A conversation's form: OpenAI Chat Completions messages, OpenAI Responses input items, Anthropic Messages
(``anthropic_messages``), or judgesdk's own (the internal form, as :func:`~judgesdk.items.canonical_json` writes it)."""

FORMS: tuple[str, ...] = get_args(Form)
"""Every form :func:`read_conversation` reads."""

_KINDS: dict[str, type[Conversation] | type[GroundedAnswer] | type[AgentRun]] = {
    "conversation": Conversation,
    "grounded_answer": GroundedAnswer,
    "agent_run": AgentRun,
}
_THREAD_KEYS = ("form", "messages", "input", "instructions", "system")
_RESPONSES_TYPES = {"message", "function_call", "function_call_output"}

_Messages = list[dict[str, Any]]


@dataclass
class _Origins:
    """Where each internal message (and each tool call) came from in the form given, and what that form calls
    the fields: so an error found on the converted messages names the place the user wrote."""

    form: str
    messages: list[str] = field(default_factory=list)
    calls: dict[tuple[int, int], str] = field(default_factory=dict)

    def add(self, where: str) -> None:
        self.messages.append(where)

    def where(self, path: str) -> str | None:
        """``path`` of the internal form (``messages[3].tool_calls[0].arguments``) as the form's own, or None."""
        found = re.fullmatch(r"messages\[(\d+)\](?:\.tool_calls\[(\d+)\])?(?:\.(.+))?", path)
        if found is None or int(found.group(1)) >= len(self.messages):
            return None
        index, call, rest = int(found.group(1)), found.group(2), found.group(3) or ""
        if call is not None:
            if (index, int(call)) not in self.calls:
                return None
            head = rest.split(".", 1)[0]
            return _join(self.calls[index, int(call)], _CALL_FIELDS[self.form].get(head, head) if rest else "")
        head = rest.split(".", 1)[0]
        return _join(self.messages[index], _MESSAGE_FIELDS[self.form].get(head, rest) if rest else "")


# what each form calls the internal form's fields (of a tool call; of a message)
_CALL_FIELDS = {
    "openai_chat": {"id": "id", "name": "function.name", "arguments": "function.arguments"},
    "openai_responses": {"id": "call_id", "name": "name", "arguments": "arguments"},
    "anthropic_messages": {"id": "id", "name": "name", "arguments": "input"},
    "judgesdk": {},
}
_MESSAGE_FIELDS = {
    "openai_chat": {},
    "openai_responses": {"tool_call_id": "call_id", "content": "content"},
    "anthropic_messages": {"tool_call_id": "tool_use_id", "is_error": "is_error"},
    "judgesdk": {},
}


_CHAT = "openai.types.chat"
_RESPONSES = "openai.types.responses"
_ANTHROPIC = "anthropic.types"

# -- the packages' own types ------------------------------------------------------------------------------------------


@cache
def _adapter(path: str) -> TypeAdapter[Any]:
    """A TypeAdapter over a package's own type at ``path`` (``openai.types.chat:ChatCompletionToolMessageParam``); the
    package imported here, on first use (its extra named where it is missing)."""
    module_name, _, attribute = path.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        package = module_name.split(".")[0]
        raise MissingDependencyError(
            f"reading this conversation form needs the {package} package: pip install 'judgesdk[{package}]'"
        ) from None
    return TypeAdapter(getattr(module, attribute))


def _validated(path: str, value: Any, where: str) -> Any:
    """``value`` validated as the package's type at ``path``, iterables made lists (the packages type lists as
    ``Iterable``, which pydantic checks lazily); the first error as an :class:`ItemError` under ``where``."""
    try:
        return _materialize(_adapter(path).validate_python(value), where)
    except ValidationError as exc:
        raise _union_error(exc, where) from None


def _materialize(value: Any, where: str) -> Any:
    if isinstance(value, dict):
        return {key: _materialize(item, _join(where, str(key))) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_materialize(item, f"{where}[{i}]") for i, item in enumerate(value)]
    if isinstance(value, (str, bytes, int, float, bool)) or value is None:
        return value
    if isinstance(value, Iterator) or type(value).__name__ == "ValidatorIterator":
        out = []
        try:
            for i, item in enumerate(value):
                out.append(_materialize(item, f"{where}[{i}]"))
        except ValidationError as exc:
            raise _union_error(exc, where) from None
        return out
    return value


def _union_error(exc: ValidationError, where: str) -> ItemError:
    """The most telling of a union's errors, with the union members' names left out of its path: the error of
    the member whose ``type``/``role`` matched (not a ``literal_error`` on the tag), else the first."""
    errors = exc.errors(include_url=False)

    def tag_mismatch(error: Any) -> bool:
        loc = error.get("loc", ())
        return error.get("type") == "literal_error" and bool(loc) and loc[-1] in ("type", "role")

    chosen = next((e for e in errors if not tag_mismatch(e)), errors[0])
    loc = [part for part in chosen.get("loc", ()) if not (isinstance(part, str) and part[:1].isupper())]
    message = str(chosen.get("msg", "invalid")).removeprefix("Value error, ")
    if chosen.get("type") in ("literal_error", "string_type", "dict_type", "bool_type", "list_type", "missing"):
        message = f"{message}" if chosen.get("type") == "missing" else f"{message} (got {_short(chosen.get('input'))})"
    return ItemError(_join(where, _path(loc)), message)


def _text_parts(content: Any, where: str, text_types: tuple[str, ...], key: str = "text") -> str:
    """A validated content (a string, or a list of parts) as text: the text parts joined with a line break; any
    other part refused (judgesdk judges text)."""
    if isinstance(content, str):
        return content
    texts = []
    for index, part in enumerate(content or ()):
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind not in text_types:
            raise ItemError(
                f"{where}[{index}].type",
                f"a content part of type {kind!r} is not read: judgesdk judges text ({', '.join(text_types)} parts)",
            )
        texts.append(str(part.get(key, "")))
    return "\n".join(texts)


def _sequence(value: Any, where: str) -> list[Any]:
    if not isinstance(value, (list, tuple)):
        raise ItemError(where, f"a list is needed, got {type(value).__name__} {_short(value)}")
    return list(value)


def _object(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise ItemError(where, f"an object is needed, got {type(value).__name__} {_short(value)}")
    return value


# -- OpenAI Chat Completions ------------------------------------------------------------------------------------------

_CHAT_TYPES = {
    "system": f"{_CHAT}:ChatCompletionSystemMessageParam",
    "developer": f"{_CHAT}:ChatCompletionDeveloperMessageParam",
    "user": f"{_CHAT}:ChatCompletionUserMessageParam",
    "assistant": f"{_CHAT}:ChatCompletionAssistantMessageParam",
    "tool": f"{_CHAT}:ChatCompletionToolMessageParam",
}


def _from_openai_chat(messages: list[Any], where: str) -> tuple[_Messages, _Origins]:
    out: _Messages = []
    origins = _Origins("openai_chat")
    for index, raw in enumerate(messages):
        here = f"{where}[{index}]"
        role = _object(raw, here).get("role")
        if role not in _CHAT_TYPES:
            raise ItemError(f"{here}.role", f"unknown role {_short(role)} (system, developer, user, assistant or tool)")
        message = _validated(_CHAT_TYPES[str(role)], raw, here)
        content = message.get("content")
        if role == "assistant":
            text = _text_parts(content, f"{here}.content", ("text",)) if content is not None else ""
            if message.get("refusal") and not text:
                text = str(message["refusal"])
            calls = []
            for number, call in enumerate(message.get("tool_calls") or ()):
                if call.get("type") != "function":
                    raise ItemError(
                        f"{here}.tool_calls[{number}].type",
                        f"a {call.get('type')!r} tool call is not read (function calls only)",
                    )
                calls.append(
                    {"id": call["id"], "name": call["function"]["name"], "arguments": call["function"]["arguments"]}
                )
                origins.calls[len(out), number] = f"{here}.tool_calls[{number}]"
            out.append({"role": "assistant", "content": text, **({"tool_calls": calls} if calls else {})})
        elif role == "tool":
            text = _text_parts(content, f"{here}.content", ("text",))
            out.append({"role": "tool", "content": text, "tool_call_id": message["tool_call_id"]})
        else:
            text = _text_parts(content, f"{here}.content", ("text",))
            out.append({"role": "system" if role in ("system", "developer") else "user", "content": text})
        origins.add(here)
    return out, origins


# -- OpenAI Responses ------------------------------------------------------------------------------------------------


def _from_openai_responses(items: list[Any], instructions: Any, where: str) -> tuple[_Messages, _Origins]:
    out: _Messages = []
    origins = _Origins("openai_responses")
    if instructions is not None:
        if not isinstance(instructions, str):
            raise ItemError(
                "instructions", f"text is needed (input items as instructions are not read), got {_short(instructions)}"
            )
        out.append({"role": "system", "content": instructions})
        origins.add("instructions")
    for index, raw in enumerate(items):
        here = f"{where}[{index}]"
        kind = _object(raw, here).get("type", "message")
        if kind == "message":
            role = raw.get("role")
            if role not in ("system", "developer", "user", "assistant"):
                raise ItemError(f"{here}.role", f"unknown role {_short(role)} (system, developer, user or assistant)")
            if role == "assistant" and not isinstance(raw.get("content"), str):
                message = _validated(f"{_RESPONSES}:ResponseOutputMessageParam", raw, here)
                text = _text_parts(message["content"], f"{here}.content", ("output_text",))
            else:
                message = _validated(f"{_RESPONSES}:EasyInputMessageParam", raw, here)
                text = _text_parts(message["content"], f"{here}.content", ("input_text", "output_text"))
            out.append({"role": "system" if role in ("system", "developer") else str(role), "content": text})
        elif kind == "function_call":
            call = _validated(f"{_RESPONSES}:ResponseFunctionToolCallParam", raw, here)
            entry = {"id": call["call_id"], "name": call["name"], "arguments": call["arguments"]}
            if out and out[-1]["role"] == "assistant":
                origins.calls[len(out) - 1, len(out[-1].setdefault("tool_calls", []))] = here
                out[-1]["tool_calls"].append(entry)
                continue
            origins.calls[len(out), 0] = here
            out.append({"role": "assistant", "content": "", "tool_calls": [entry]})
        elif kind == "function_call_output":
            result = _validated(f"{_RESPONSES}.response_input_item_param:FunctionCallOutput", raw, here)
            text = _text_parts(result["output"], f"{here}.output", ("input_text",))
            out.append({"role": "tool", "content": text, "tool_call_id": result.get("call_id")})
        else:
            raise ItemError(
                f"{here}.type", f"an input item of type {kind!r} is not read ({', '.join(sorted(_RESPONSES_TYPES))})"
            )
        origins.add(here)
    return out, origins


# -- Anthropic Messages ----------------------------------------------------------------------------------------------

_ANTHROPIC_BLOCKS = {"text": "TextBlockParam", "tool_use": "ToolUseBlockParam", "tool_result": "ToolResultBlockParam"}


def _from_anthropic(messages: list[Any], system: Any, where: str) -> tuple[_Messages, _Origins]:
    out: _Messages = []
    origins = _Origins("anthropic_messages")
    if system is not None:
        if isinstance(system, str):
            out.append({"role": "system", "content": system})
        else:
            blocks = [
                _validated(f"{_ANTHROPIC}:TextBlockParam", b, f"system[{i}]")
                for i, b in enumerate(_sequence(system, "system"))
            ]
            out.append({"role": "system", "content": _text_parts(blocks, "system", ("text",))})
        origins.add("system")
    for index, raw in enumerate(messages):
        here = f"{where}[{index}]"
        role = _object(raw, here).get("role")
        if role not in ("user", "assistant"):
            raise ItemError(
                f"{here}.role",
                f"unknown role {_short(role)} (user or assistant; the system prompt is the top-level 'system')",
            )
        content = raw.get("content")
        if isinstance(content, str):
            out.append({"role": role, "content": content})
            origins.add(here)
            continue
        blocks = []
        for number, block in enumerate(_sequence(content, f"{here}.content")):
            at = f"{here}.content[{number}]"
            kind = _object(block, at).get("type")
            if kind not in _ANTHROPIC_BLOCKS:
                raise ItemError(
                    f"{at}.type", f"a content block of type {_short(kind)} is not read (text, tool_use, tool_result)"
                )
            blocks.append((at, _validated(f"{_ANTHROPIC}:{_ANTHROPIC_BLOCKS[str(kind)]}", block, at)))
        if role == "assistant":
            texts: list[str] = []
            calls: list[dict[str, Any]] = []
            for at, block in blocks:
                if block["type"] == "text":
                    texts.append(block["text"])
                elif block["type"] == "tool_use":
                    origins.calls[len(out), len(calls)] = at
                    calls.append({"id": block["id"], "name": block["name"], "arguments": block["input"]})
                else:
                    raise ItemError(f"{at}.type", "a tool_result block belongs to a user message")
            out.append({"role": "assistant", "content": "\n".join(texts), **({"tool_calls": calls} if calls else {})})
            origins.add(here)
            continue
        pending: list[str] = []
        pending_at = ""
        for at, block in blocks:
            if block["type"] == "text":
                pending_at = pending_at or at
                pending.append(block["text"])
            elif block["type"] == "tool_result":
                if pending:
                    out.append({"role": "user", "content": "\n".join(pending)})
                    origins.add(pending_at)
                    pending, pending_at = [], ""
                result = block.get("content", "")
                text = _text_parts(result, f"{at}.content", ("text",))
                out.append(
                    {
                        "role": "tool",
                        "content": text,
                        "tool_call_id": block["tool_use_id"],
                        "is_error": bool(block.get("is_error", False)),
                    }
                )
                origins.add(at)
            else:
                raise ItemError(f"{at}.type", "a tool_use block belongs to an assistant message")
        if pending or not blocks:
            out.append({"role": "user", "content": "\n".join(pending)})
            origins.add(pending_at or here)
    return out, origins


def _from_judgesdk(messages: list[Any], where: str) -> tuple[_Messages, _Origins]:
    return list(messages), _Origins("judgesdk", [f"{where}[{i}]" for i in range(len(messages))])


# -- detection and the entry points ----------------------------------------------------------------------------------


def detect_form(obj: Any) -> Form:
    """The form of a conversation ``obj`` (a list of messages or items, or an object holding them), told by what
    only that form has: Responses items (a ``type`` of message, function_call or function_call_output, or a
    top-level ``input`` or ``instructions``), Anthropic blocks (``tool_use``/``tool_result`` blocks, or a top-level
    ``system``), judgesdk's own (tool calls without a ``function`` object, or a ``version``), else OpenAI chat
    messages (plain role and text messages read the same in every form)."""
    if isinstance(obj, Mapping):
        if obj.get("form") in FORMS:
            return obj["form"]
        if "input" in obj or "instructions" in obj:
            return "openai_responses"
        if "system" in obj:
            return "anthropic_messages"
        if "version" in obj:
            return "judgesdk"
        obj = obj.get("messages")
    if not isinstance(obj, (list, tuple)):
        return "openai_chat"
    entries = [m for m in obj if isinstance(m, Mapping)]
    if any(m.get("type") in _RESPONSES_TYPES for m in entries):
        return "openai_responses"
    for message in entries:
        content = message.get("content")
        if isinstance(content, (list, tuple)) and any(
            isinstance(b, Mapping) and b.get("type") in ("tool_use", "tool_result") for b in content
        ):
            return "anthropic_messages"
        calls = message.get("tool_calls")
        if isinstance(calls, (list, tuple)) and calls and isinstance(calls[0], Mapping) and "function" not in calls[0]:
            return "judgesdk"
        if "is_error" in message:
            return "judgesdk"
    return "openai_chat"


def _thread(obj: Any, form: Form | None) -> tuple[_Messages, _Origins, dict[str, Any]]:
    """The internal messages of ``obj``, where each came from, and the rest of ``obj`` (its other fields)."""
    named = obj.get("form") if isinstance(obj, Mapping) else None
    chosen = form or named or detect_form(obj)
    if chosen not in FORMS:
        raise ItemError("form", f"unknown form {_short(chosen)} ({', '.join(FORMS)})")
    rest: dict[str, Any] = {}
    if isinstance(obj, Mapping):
        rest = {k: v for k, v in obj.items() if k not in _THREAD_KEYS}
        if chosen == "openai_responses":
            raw = obj.get("input")
            if raw is None and "messages" in obj:
                raw, key = obj["messages"], "messages"
            else:
                key = "input"
            if isinstance(raw, str):  # Responses' `input` as one text: a user message
                raw = [{"role": "user", "content": raw}]
            return (*_from_openai_responses(_sequence(raw, key), obj.get("instructions"), key), rest)
        for stray in ("input", "instructions") if chosen != "openai_responses" else ():
            if stray in obj:
                raise ItemError(stray, f"{stray!r} belongs to the openai_responses form, not {chosen}")
        if "system" in obj and chosen != "anthropic_messages":
            reason = f"a top-level 'system' belongs to the anthropic_messages form, not {chosen}: make it a message"
            raise ItemError("system", reason)
        messages = _sequence(obj.get("messages"), "messages") if "messages" in obj else None
        if messages is None:
            raise ItemError("messages", "missing: a conversation needs its messages")
    else:
        messages = _sequence(obj, "messages")
    where = "messages"
    if chosen == "openai_chat":
        return (*_from_openai_chat(messages, where), rest)
    if chosen == "anthropic_messages":
        system = obj.get("system") if isinstance(obj, Mapping) else None
        return (*_from_anthropic(messages, system, where), rest)
    if chosen == "openai_responses":
        return (*_from_openai_responses(messages, None, where), rest)
    return (*_from_judgesdk(messages, where), rest)


def _build(make: Callable[[], Item], origins: _Origins) -> Item:
    """``make()``, with an error about ``messages[i]`` of the internal form moved to where message i came from."""
    try:
        return make()
    except ItemError as exc:
        where = origins.where(exc.where)
        if where is None or where == exc.where:
            raise
        raise ItemError(where, exc.reason) from None


def read_conversation(obj: Any, *, form: Form | None = None) -> Conversation:
    """A :class:`~judgesdk.items.Conversation` from ``obj``: a list of messages (or Responses input items), or an
    object with them (``messages``; ``input`` and ``instructions`` for Responses; ``system`` for Anthropic) and
    the conversation's own fields (``turn``, ``scope``, ``id``, ``kind``, ``version``).

    ``form``: the form (one of :data:`FORMS`), or None to tell it from ``obj`` (:func:`detect_form`; an object's
    ``form`` field names it too). Raises :class:`~judgesdk.items.ItemError`, one line naming where in ``obj``."""
    messages, origins, rest = _thread(obj, form)
    if rest.get("kind") == "conversation/1":  # the tag with its version, as read_item accepts it
        rest["kind"] = "conversation"
    return _build(lambda: Conversation.model_validate({**rest, "messages": messages}), origins)  # type: ignore[return-value]


def read_item(obj: Any) -> Item:
    """An item from a JSONL object ``obj`` with a ``kind`` field: ``conversation``, ``grounded_answer`` or
    ``agent_run`` (``conversation/1`` names the version too). A conversation's or an agent run's messages are read
    in any form :func:`read_conversation` reads. Raises :class:`~judgesdk.items.ItemError`, one line naming the
    field (:func:`~judgesdk.items.located` adds the file and line)."""
    if not isinstance(obj, Mapping):
        raise ItemError("", f"an item is a JSON object with a 'kind', got {type(obj).__name__} {_short(obj)}")
    tag = obj.get("kind")
    if tag is None:
        raise ItemError("kind", f"missing: say what the item is ({', '.join(_KINDS)})")
    name, _, version = str(tag).partition("/")
    if name not in _KINDS:
        raise ItemError("kind", f"unknown kind {_short(tag)} ({', '.join(_KINDS)})")
    if version and version != "1" or obj.get("version", 1) != 1:
        raise ItemError(
            "kind", f"{name} version {version or obj.get('version')} is not known: this judgesdk reads {name}/1"
        )
    data = {k: v for k, v in obj.items() if k != "kind"}
    if name == "conversation":
        return read_conversation(data)
    if name == "grounded_answer":
        return GroundedAnswer.model_validate(data)
    messages, origins, rest = _thread(data, None)
    return _build(lambda: AgentRun.model_validate({**rest, "messages": messages}), origins)
