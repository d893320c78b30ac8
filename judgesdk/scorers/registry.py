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
from collections.abc import Callable

from judgesdk.core import ConfigError, InputError, Plugins
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


_plugins: Plugins[MethodSpec] = Plugins(
    what="method", declares="method", a_name="a method name",  # the words of its messages
    group=ENTRY_POINT_GROUP, built_in=BUILT_IN, pattern=_NAME, expected=MethodSpec, name_of=lambda spec: spec.name,
    missing=InputError, passes=(ConfigError, InputError)  # a built-in method's optional dependency not installed: not in this build
)


def refresh() -> None:
    """Forget what entry points were found and loaded (after installing a package, or in tests)."""
    _plugins.refresh()


def register(name: str, spec: Target, *, replace: bool = False) -> None:
    """Make ``name`` a scoring method: ``spec`` is a :class:`MethodSpec`, its ``"module:attribute"`` (imported when
    the method is first used), or a function returning one. ``replace=True`` replaces a method of that name
    (a built-in one included, until :func:`unregister`)."""
    _plugins.register(name, spec, replace=replace)


def unregister(name: str) -> None:
    """Undo :func:`register` of method ``name`` (a built-in method registered over comes back)."""
    _plugins.unregister(name)


def method_names() -> list[str]:
    """Every method: the built-in ones in their order, then those registered, then installed packages' ones."""
    return _plugins.names()


def is_method(name: object) -> bool:
    """Whether ``name`` names a method (nothing is imported)."""
    return isinstance(name, str) and _plugins.canonical(name) is not None


def method_spec(name: str) -> MethodSpec:
    """The spec of method ``name``, its scorer module imported on first use. An unknown name is an
    :class:`InputError` naming the valid ones."""
    return _plugins.get(name)


def scorer_for(method: str) -> ScoreFn:
    """The scorer coroutine of ``method`` (its module imported on first use); an unknown method is an
    :class:`~judgesdk.core.errors.InputError` naming the valid ones."""
    return method_spec(method).score
