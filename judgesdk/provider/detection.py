"""Which provider kinds the environment selects when a config names none: the detected chain.

Each kind says how it is detected on its own :class:`~judgesdk.provider.registry.ProviderSpec`: ``detect_env``
(the variable whose being set puts the kind in the chain; None: always, the fallback) and ``detect_order`` (its
place in the chain; None: never detected). The built-in adapters declare OpenAI's key, then Anthropic's, then the
embedded local model.

Detecting must not import an adapter (each imports its vendor's SDK, seconds for some), so a spec the registry
knows by ``"module:attribute"`` name is read here from its module's source, with :mod:`tokenize`, never executed
(not with :mod:`ast`: CPython 3.11 before 3.11.8 can fail an ``ast.parse`` that runs while another thread builds
a syntax tree, as ``traceback`` does, with "AST constructor recursion depth mismatch"; tokenizing is pure Python):
``detect_env`` and ``detect_order`` are written as literals in the ``ProviderSpec(...)`` call (a spec reached
through ``from .x import PROVIDER``, as a lazy face re-exports it, is followed to ``x``).
``tests/provider/test_detection.py`` checks that what is read here is what each loaded spec says. A spec
registered as an object is read directly; kinds of installed packages (entry points) are not detected.
"""

from __future__ import annotations

import importlib.util
import tokenize
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path

from judgesdk.core import ConfigError
from judgesdk.provider.registry import BUILT_IN, ProviderSpec, registered_targets

__all__ = ["Detection", "declared_detection", "detected_kinds"]

Detection = tuple[str | None, int | None]  # (detect_env, detect_order), as ProviderSpec declares them
_FIELDS = ("detect_env", "detect_order")


def detected_kinds(env: Mapping[str, str]) -> list[str]:
    """The kinds the detected chain tries, in order: each whose ``detect_env`` is set (non-empty) in ``env``, and
    each detected always (``detect_env`` None), by ``detect_order`` (then by name)."""
    chosen: list[tuple[int, str]] = []
    targets: dict[str, object] = {**BUILT_IN, **registered_targets()}
    for kind, target in targets.items():
        variable, order = declared_detection(target)
        if order is not None and (variable is None or env.get(variable)):
            chosen.append((order, kind))
    return [kind for _, kind in sorted(chosen)]


def declared_detection(target: object) -> Detection:
    """What ``target`` (a :class:`ProviderSpec`, or its ``"module:attribute"``) declares about its detection;
    (None, None) for a target known only by a function that returns a spec."""
    if isinstance(target, ProviderSpec):
        return target.detect_env, target.detect_order
    if not isinstance(target, str):
        return None, None
    module, _, attribute = target.partition(":")
    return _read(module, attribute or "PROVIDER", seen=set())


def _read(module: str, attribute: str, seen: set[str]) -> Detection:
    """``attribute``'s detection fields, read from ``module``'s source (following one ``from .x import`` at a time)."""
    if module in seen:
        raise ConfigError(f"{module}:{attribute} imports itself in a loop")
    seen.add(module)
    path = _source(module)
    tokens = _tokens(str(path))
    where = f"{module}:{attribute}"
    for start in range(len(tokens) - 3):
        name, equals, _callee, paren = tokens[start : start + 4]
        if (name.type, name.string, name.start[1], equals.string, paren.string) == (tokenize.NAME, attribute, 0, "=", "("):
            return _fields(tokens, start + 4, where)
    origin = _reexported_from(tokens, attribute, module if path.name == "__init__.py" else module.rpartition(".")[0])
    if origin is not None:  # re-exported, at module level or under ``if TYPE_CHECKING:`` (a lazy face)
        return _read(origin, attribute, seen)
    raise ConfigError(f"{module} declares no {attribute} = ProviderSpec(...) that can be read without importing it")


@cache
def _tokens(path: str) -> tuple[tokenize.TokenInfo, ...]:
    """The significant tokens of the file at ``path`` (comments and line breaks inside brackets dropped), read once."""
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING}
    with open(path, "rb") as handle:
        return tuple(t for t in tokenize.tokenize(handle.readline) if t.type not in skip)


def _fields(tokens: Sequence[tokenize.TokenInfo], first: int, where: str) -> Detection:
    """The literal ``detect_env`` and ``detect_order`` keywords of the call whose arguments start at ``first``."""
    found: dict[str, object] = {}
    depth, index = 1, first
    while index < len(tokens) and depth:
        token = tokens[index]
        if token.string in ("(", "[", "{"):
            depth += 1
        elif token.string in (")", "]", "}"):
            depth -= 1
        elif depth == 1 and token.type == tokenize.NAME and token.string in _FIELDS and tokens[index + 1].string == "=":
            value, after = tokens[index + 2], tokens[index + 3]
            if after.string not in (",", ")"):
                raise ConfigError(f"{where}: write {token.string} as a literal, so detecting the kind imports no adapter")
            found[token.string] = _literal(value, token.string, where)
            index += 2
        index += 1
    variable, order = found.get("detect_env"), found.get("detect_order")
    if not isinstance(variable, (str, type(None))) or not isinstance(order, (int, type(None))):
        raise ConfigError(f"{where}: detect_env is a variable's name or None, detect_order an integer or None")
    return variable, order


def _literal(token: tokenize.TokenInfo, field: str, where: str) -> object:
    """A plain string, integer or ``None`` written as one token; anything else is refused, naming ``field``."""
    text = token.string
    if token.type == tokenize.NAME and text == "None":
        return None
    if token.type == tokenize.NUMBER and text.isdigit():
        return int(text)
    if token.type == tokenize.STRING and len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'" and "\\" not in text:
        return text[1:-1]
    raise ConfigError(f"{where}: write {field} as a literal, so detecting the kind imports no adapter")


def _reexported_from(tokens: Sequence[tokenize.TokenInfo], attribute: str, package: str) -> str | None:
    """The module a ``from X import ... attribute ...`` in ``tokens`` names, resolved against ``package`` (the
    package of the module read), or None."""
    for index, token in enumerate(tokens):
        if token.type != tokenize.NAME or token.string != "from":
            continue
        cursor, dots, parts = index + 1, 0, []
        while tokens[cursor].string in (".", "..."):
            dots += len(tokens[cursor].string)
            cursor += 1
        while tokens[cursor].type == tokenize.NAME and tokens[cursor].string != "import":
            parts.append(tokens[cursor].string)
            cursor += 1 + (tokens[cursor + 1].string == ".")
        if tokens[cursor].string != "import":
            continue
        names, cursor = [], cursor + 1
        while tokens[cursor].type not in (tokenize.NEWLINE, tokenize.ENDMARKER):
            if tokens[cursor].type == tokenize.NAME:
                renamed = tokens[cursor + 1].string == "as"
                names.append((tokens[cursor].string, tokens[cursor + 2].string if renamed else tokens[cursor].string))
                cursor += 3 if renamed else 1
            else:
                cursor += 1
        if (attribute, attribute) not in names:
            continue
        if not dots:
            return ".".join(parts)
        base = package
        for _ in range(dots - 1):
            base = base.rpartition(".")[0]
        return ".".join([base, *parts]) if parts else base
    return None


def _source(module: str) -> Path:
    """The file of ``module``, found without executing it (only the packages above it are imported)."""
    parent, _, name = module.rpartition(".")
    if parent:
        above = importlib.util.find_spec(parent)
        locations = list(above.submodule_search_locations or []) if above is not None else []
        for folder in locations:
            for candidate in (Path(folder) / f"{name}.py", Path(folder) / name / "__init__.py"):
                if candidate.is_file():
                    return candidate
    else:
        spec = importlib.util.find_spec(module)
        if spec is not None and spec.origin and spec.origin.endswith(".py"):
            return Path(spec.origin)
    raise ConfigError(f"the source of {module} cannot be found, so its kind's detection cannot be read")
