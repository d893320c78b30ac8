"""What ``judgesdk serve`` checks of a request body before anything reads it further: its JSON nests at most
:data:`MAX_DEPTH` levels and holds no lone surrogate.

JSON nested about 1,000 levels deep (the body, a question, or the ``input`` text that is itself parsed as JSON)
overflows Python's recursion limit wherever it is read, and a text holding a lone surrogate (``"\\ud800"``, valid
JSON, not valid Unicode) cannot be encoded into an answer or a record: both were 500s, the surrogate one after
the request had been recorded and counted as served (issue 41). Each is a 400 here, naming where it is, before
any judging, recording or counting.
"""

from __future__ import annotations

import itertools
import json
import re
from typing import Any

from judgesdk.provider import RequestError

__all__ = ["MAX_DEPTH", "check_texts", "json_depth", "parse_body"]

MAX_DEPTH = 64  # far deeper than any decision request (a question's levels are 4 deep), far from the recursion limit
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_STRING = re.compile(rb'"(?:[^"\\]+|\\.)*"?', re.DOTALL)  # a JSON string (an unterminated one: to the end, once)
_NOT_BRACKET = bytes(b for b in range(256) if b not in b"[]{}")
_STEP = bytes.maketrans(b"[{]}", b"\x02\x02\x00\x00")  # an opening bracket 2, a closing one 0: minus 1, a step


def json_depth(raw: bytes) -> int:
    """How deep the brackets of JSON text ``raw`` nest, strings left out, in linear time and without recursion: the
    check that runs before a parser that recurses (Python's ``json``, whose RecursionError past about 1,000 levels
    can leave the interpreter's recursion bookkeeping askew) ever sees the text."""
    brackets = _STRING.sub(b"", raw).translate(None, _NOT_BRACKET).translate(_STEP)
    return max(itertools.accumulate(step - 1 for step in brackets), default=0)


def parse_body(raw: bytes) -> Any:
    """The request's JSON, checked (module docstring); a :class:`RequestError` (400) naming what is wrong.

    ``raw``: the body as received."""
    if json_depth(raw) > MAX_DEPTH:
        raise _too_deep("the body")
    try:
        body = json.loads(raw)
    except RecursionError:  # not reached past the check above; kept as the last line of defence
        raise _too_deep("the body") from None
    except (UnicodeDecodeError, ValueError):
        raise RequestError("the body is not JSON", code="invalid_json") from None
    check_texts(body, "")
    return body


def check_texts(value: Any, where: str) -> None:
    """A :class:`RequestError` when ``value`` (parsed JSON, or what a request was read into) nests deeper than
    :data:`MAX_DEPTH` or holds a lone surrogate in a key or a text; ``where``: its path in the request ("" for
    the body). Iterative, so that it cannot itself overflow the stack."""
    stack: list[tuple[Any, str, int]] = [(value, where, 1)]
    while stack:
        item, path, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise _too_deep(path or "the body")
        if isinstance(item, str):
            _check_text(item, path)
            if item.lstrip()[:1] in ("{", "[") and json_depth(item.encode("utf-8", "surrogatepass")) > MAX_DEPTH:
                raise _too_deep(path)  # a text a reader parses as JSON (the ``input``): checked before it is parsed
        elif isinstance(item, dict):
            for key, inner in item.items():
                _check_text(str(key), f"{path}.{key}" if path else str(key))
                stack.append((inner, f"{path}.{key}" if path else str(key), depth + 1))
        elif isinstance(item, (list, tuple)):
            stack.extend((inner, f"{path}[{index}]", depth + 1) for index, inner in enumerate(item))


def _check_text(text: str, path: str) -> None:
    found = _LONE_SURROGATE.search(text)
    if found is not None:
        name = path or "the body"
        raise RequestError(
            f"{_printable(name)} holds a lone surrogate (\\u{ord(found.group()):04x}), which is not Unicode text: send valid UTF-8",
            param=_printable(path) or None, code="invalid_text",
        )  # fmt: skip


def _printable(path: str) -> str:
    return _LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}", path)


def _too_deep(where: str) -> RequestError:
    return RequestError(f"{where} nests deeper than {MAX_DEPTH} levels: this server reads decision requests, not arbitrary JSON", code="too_deep")
