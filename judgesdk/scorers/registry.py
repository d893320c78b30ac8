"""The method registry: which scoring methods exist, and where each one's scorer declares itself.

Each scorer module declares a :class:`~judgesdk.scorers.spec.MethodSpec` per method it implements. The registry
knows methods by name only and names each spec as ``"module:attribute"``; it imports a scorer module the first
time one of its methods' specs is read (its options checked, a judge built, a resume key made), so a method's
dependencies load only when it is used. It mirrors the provider registry (:mod:`judgesdk.provider.registry`).

Where methods come from, first match wins:

1. :func:`register` in this process (``replace=True`` to replace a method);
2. the built-in methods (:data:`BUILT_IN`: names and where their specs live, nothing else);
3. installed distributions, through entry points of the group ``judgesdk.methods``: the entry point's name is
   the method, its value the ``"module:attribute"`` of a :class:`MethodSpec` (or of a function returning one)::

       # a third-party package's pyproject.toml
       [project.entry-points."judgesdk.methods"]
       stars = "judgesdk_stars.scorer:STARS"

   Entry points are listed by name (no import) the first time a method is not found among the others, and
   loaded when their method is used. One cannot replace a built-in method.

An unknown method is an :class:`~judgesdk.core.errors.InputError` naming the valid ones; a method whose spec
cannot be loaded is a :class:`~judgesdk.core.errors.ConfigError` saying where it was declared.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable
from importlib import import_module, metadata
from typing import Any

from judgesdk.core import ConfigError, InputError
from judgesdk.scorers.spec import MethodSpec, ScoreFn

__all__ = [
    "BUILT_IN",
    "ENTRY_POINT_GROUP",
    "is_method",
    "method_names",
    "method_spec",
    "scorer_for",
    "refresh",
    "register",
    "unregister",
]

ENTRY_POINT_GROUP = "judgesdk.methods"

# method -> where its spec is declared; imported only when the method is used. Order: how lists of methods read.
BUILT_IN: dict[str, str] = {
    "auto": "judgesdk.scorers.auto:AUTO",
    "fused": "judgesdk.scorers.fused:FUSED",
    "geval": "judgesdk.scorers.likert:GEVAL",
    "direct": "judgesdk.scorers.likert:DIRECT",
    "sampling": "judgesdk.scorers.likert:SAMPLING",
    "rts": "judgesdk.scorers.rts_mcq:RTS",
    "mcq": "judgesdk.scorers.rts_mcq:MCQ",
    "likelihood": "judgesdk.scorers.likelihood:LIKELIHOOD",
    "synthetic": "judgesdk.scorers.synthetic:SYNTHETIC",
    "fusion": "judgesdk.scorers.fusion:FUSION",
    "decision": "judgesdk.scorers.decision:DECISION",
}

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")  # no "/": a result's method names "<method>/<how>"

Target = MethodSpec | str | Callable[[], MethodSpec]

_lock = threading.RLock()
_registered: dict[str, Target] = {}
_loaded: dict[str, MethodSpec] = {}
_discovered: dict[str, list[metadata.EntryPoint]] | None = None


def _entry_points() -> Iterable[metadata.EntryPoint]:
    """The installed distributions' entry points of :data:`ENTRY_POINT_GROUP` (tests may replace this)."""
    return metadata.entry_points(group=ENTRY_POINT_GROUP)


def _discovered_methods() -> dict[str, list[metadata.EntryPoint]]:
    """Entry points by method, listed once per process (:func:`refresh` lists them again); none imported."""
    global _discovered
    with _lock:
        if _discovered is None:
            found: dict[str, list[metadata.EntryPoint]] = {}
            for point in _entry_points():
                if point.name in BUILT_IN or not _NAME.match(point.name):
                    continue  # a built-in method is never replaced by an installed package; a method is a plain name
                same = found.setdefault(point.name, [])
                if all(p.value != point.value for p in same):
                    same.append(point)
            _discovered = found
        return _discovered


def refresh() -> None:
    """Forget what entry points were found and loaded (after installing a package, or in tests)."""
    global _discovered
    with _lock:
        for name in _discovered or {}:
            if name not in _registered:
                _loaded.pop(name, None)
        _discovered = None


def register(name: str, spec: Target, *, replace: bool = False) -> None:
    """Make ``name`` a scoring method: ``spec`` is a :class:`MethodSpec`, its ``"module:attribute"`` (imported when
    the method is first used), or a function returning one. ``replace=True`` replaces a method of that name
    (a built-in one included, until :func:`unregister`)."""
    if not isinstance(name, str) or not _NAME.match(name):
        raise ConfigError(f"a method name is a short name of letters, digits, '.', '_' or '-', got {name!r}")
    with _lock:
        if not replace and (name in _registered or name in BUILT_IN):
            raise ConfigError(f"method {name!r} is already registered: pass replace=True to replace it")
        _registered[name] = spec
        _loaded.pop(name, None)


def unregister(name: str) -> None:
    """Undo :func:`register` (a built-in method registered over comes back)."""
    with _lock:
        _registered.pop(name, None)
        _loaded.pop(name, None)


def method_names() -> list[str]:
    """Every method: the built-in ones in their order, then those registered, then installed packages' ones."""
    with _lock:
        names = dict.fromkeys([*BUILT_IN, *_registered, *_discovered_methods()])
        return list(names)


def is_method(name: object) -> bool:
    """Whether ``name`` names a method (nothing is imported)."""
    if not isinstance(name, str):
        return False
    with _lock:
        return name in _registered or name in BUILT_IN or name in _discovered_methods()


def method_spec(name: str) -> MethodSpec:
    """The spec of method ``name``, its scorer module imported on first use. An unknown name is an
    :class:`InputError` naming the valid ones."""
    with _lock:
        if name in _loaded:
            return _loaded[name]
        if not is_method(name):
            raise InputError(f"unknown method {name!r}; choose one of {', '.join(method_names())}")
        target: Any
        if name in _registered:
            target, origin = _registered[name], "registered in this process"
        elif name in BUILT_IN:
            target, origin = BUILT_IN[name], "built in"
        else:
            points = _discovered_methods()[name]
            if len(points) > 1:
                raise ConfigError(f"method {name!r} is declared by several installed packages ({', '.join(_origin(p) for p in points)}): uninstall all but one")
            target, origin = points[0], _origin(points[0])
        spec = _load(name, target, origin)
        _loaded[name] = spec
        return spec


def _origin(point: metadata.EntryPoint) -> str:
    dist = getattr(point, "dist", None)
    named = f" of {dist.name}" if dist is not None and getattr(dist, "name", None) else ""
    return f"entry point {point.value}{named}"


def _load(name: str, target: Any, origin: str) -> MethodSpec:
    try:
        if isinstance(target, metadata.EntryPoint):
            found = target.load()
        elif isinstance(target, str):
            module, _, attribute = target.partition(":")
            found = import_module(module)
            for part in attribute.split(".") if attribute else ():
                found = getattr(found, part)
        else:
            found = target
        if not isinstance(found, MethodSpec) and callable(found):
            found = found()
    except ModuleNotFoundError as exc:
        if origin == "built in":  # an optional dependency of the method is not installed
            raise InputError(f"method {name!r} is not available in this build: {exc}") from exc
        raise ConfigError(f"method {name!r} ({origin}) could not be loaded: {type(exc).__name__}: {exc}") from exc
    except (ConfigError, InputError):
        raise
    except Exception as exc:
        raise ConfigError(f"method {name!r} ({origin}) could not be loaded: {type(exc).__name__}: {exc}") from exc
    if not isinstance(found, MethodSpec):
        raise ConfigError(f"method {name!r} ({origin}) gives {type(found).__name__}, not a judgesdk.scorers.spec.MethodSpec")
    if found.name != name:
        raise ConfigError(f"method {name!r} ({origin}) declares method {found.name!r}")
    return found


def scorer_for(method: str) -> ScoreFn:
    """The scorer coroutine of ``method`` (its module imported on first use); an unknown method is an
    :class:`~judgesdk.core.errors.InputError` naming the valid ones."""
    return method_spec(method).score
