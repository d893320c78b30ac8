"""Which provider kinds the environment selects when a config names none: the detected chain.

Each kind says how it is detected on its own :class:`~judgesdk.provider.registry.ProviderSpec`: ``detect_env``
(the variable whose being set puts the kind in the chain; None: always, the fallback) and ``detect_order`` (its
place in the chain; None: never detected). The built-in adapters declare OpenAI's key, then Anthropic's, then the
embedded local model.

Detecting must not import an adapter (each imports its vendor's SDK, seconds for some), so a spec the registry
knows by ``"module:attribute"`` name is read here from its module's source, with :mod:`ast`, never executed:
``detect_env`` and ``detect_order`` are written as literals in the ``ProviderSpec(...)`` call (a spec reached
through ``from .x import PROVIDER``, as a lazy face re-exports it, is followed to ``x``).
``tests/provider/test_detection.py`` checks that what is read here is what each loaded spec says. A spec
registered as an object is read directly; kinds of installed packages (entry points) are not detected.
"""

from __future__ import annotations

import ast
import importlib.util
from collections.abc import Mapping
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
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in tree.body:
        value = _assigned(node, attribute)
        if isinstance(value, ast.Call):
            return _fields(value, f"{module}:{attribute}")
    for found in ast.walk(tree):  # re-exported, at module level or under ``if TYPE_CHECKING:`` (a lazy face)
        if isinstance(found, ast.ImportFrom) and any(alias.name == attribute and alias.asname in (None, attribute) for alias in found.names):
            base = module if path.name == "__init__.py" else module.rpartition(".")[0]
            for _ in range(max(found.level - 1, 0)):
                base = base.rpartition(".")[0]
            origin = (f"{base}.{found.module}" if found.module else base) if found.level else (found.module or "")
            return _read(origin, attribute, seen)
    raise ConfigError(f"{module} declares no {attribute} = ProviderSpec(...) that can be read without importing it")


def _assigned(node: ast.stmt, attribute: str) -> ast.expr | None:
    if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == attribute for t in node.targets):
        return node.value
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id == attribute:
        return node.value
    return None


def _fields(call: ast.Call, where: str) -> Detection:
    found: dict[str, object] = {}
    for keyword in call.keywords:
        if keyword.arg in _FIELDS:
            try:
                found[keyword.arg] = ast.literal_eval(keyword.value)
            except ValueError:
                raise ConfigError(f"{where}: write {keyword.arg} as a literal, so detecting the kind imports no adapter") from None
    variable, order = found.get("detect_env"), found.get("detect_order")
    if not isinstance(variable, (str, type(None))) or not isinstance(order, (int, type(None))):
        raise ConfigError(f"{where}: detect_env is a variable's name or None, detect_order an integer or None")
    return variable, order


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
