"""Named plugins found by name and loaded on first use: the mechanism the provider and method registries share.

A :class:`Plugins` knows things (provider specs, method specs) by name only. Each name points at where its thing
is declared: the thing itself, its ``"module:attribute"`` (imported when the name is first used), a function
returning it, or an installed distribution's entry point. Where names come from, first match wins:

1. :meth:`Plugins.register` in this process (``replace=True`` to replace a name);
2. the built-in table (``"module:attribute"`` per name), with its aliases;
3. installed distributions, through entry points of the group: the entry point's name is the name, its value
   the ``"module:attribute"`` of a thing (or of a function returning one). Entry points are listed by name (no
   import) the first time a name is not found among the others, and loaded when their name is used. One
   cannot replace a built-in name.

What is loaded is checked: of the expected type, and naming itself by the name it was found under. Every
failure is a :class:`~judgesdk.core.errors.ConfigError` saying where the thing was declared.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterable, Mapping
from importlib import import_module, metadata
from typing import Any, Generic, TypeVar

from judgesdk.core.errors import ConfigError, InputError

__all__ = ["Plugins"]

T = TypeVar("T")

_BUILT_IN = "built in"
_REGISTERED = "registered in this process"


class Plugins(Generic[T]):
    """A registry of named things of type ``expected`` (see the module docstring), safe to use from several threads.

    ``what`` is what a thing is called in messages ("provider kind", "method"); ``declares`` the word for the
    name a loaded thing gives itself (``name_of``); ``a_name`` what a valid name is called ("a method name").
    ``unknown`` builds the error for a name nobody declares (default: an :class:`InputError` naming the valid
    ones); ``missing``, where given, is the error type raised when a built-in thing's module imports one that is
    not installed (an optional dependency); ``passes`` the errors a loading thing raises that go up unchanged.
    """

    def __init__(
        self,
        *,
        what: str,
        declares: str,
        a_name: str,
        group: str,
        built_in: Mapping[str, str],
        expected: type[T],
        name_of: Callable[[T], str],
        pattern: re.Pattern[str],
        aliases: Mapping[str, str] | None = None,
        entry_points: Callable[[], Iterable[metadata.EntryPoint]] | None = None,
        unknown: Callable[[object], Exception] | None = None,
        missing: Callable[[str], Exception] | None = None,
        passes: tuple[type[Exception], ...] = (ConfigError,),
    ) -> None:
        self.what, self.declares, self.a_name, self.group = what, declares, a_name, group
        self.built_in, self.built_in_aliases = built_in, dict(aliases or {})
        self.expected, self.name_of, self.pattern = expected, name_of, pattern
        self.entry_points = entry_points or (lambda: metadata.entry_points(group=group))
        self.unknown, self.missing, self.passes = unknown, missing, passes
        self.lock = threading.RLock()
        self._registered: dict[str, object] = {}
        self._aliases: dict[str, str] = dict(self.built_in_aliases)
        self._loaded: dict[str, T] = {}
        self._discovered: dict[str, list[metadata.EntryPoint]] | None = None

    def discovered(self) -> dict[str, list[metadata.EntryPoint]]:
        """Entry points by name, listed once (:meth:`refresh` lists them again); none imported."""
        with self.lock:
            if self._discovered is None:
                found: dict[str, list[metadata.EntryPoint]] = {}
                for point in self.entry_points():
                    if point.name in self.built_in or point.name in self.built_in_aliases or not self.pattern.match(point.name):
                        continue  # a built-in name is never replaced by an installed package; a name is a plain name
                    same = found.setdefault(point.name, [])
                    if all(p.value != point.value for p in same):
                        same.append(point)
                self._discovered = found
            return self._discovered

    def refresh(self) -> None:
        """Forget what entry points were found and loaded (after installing a package, or in tests)."""
        with self.lock:
            for name in self._discovered or {}:
                if name not in self._registered:
                    self._loaded.pop(name, None)
            self._discovered = None

    def register(self, name: str, target: object, *, aliases: Iterable[str] = (), replace: bool = False) -> None:
        """Make ``name`` a name: ``target`` is the thing, its ``"module:attribute"`` or a function returning it;
        ``aliases`` are other names for it. ``replace=True`` replaces a name (a built-in one until :meth:`unregister`)."""
        if not isinstance(name, str) or not self.pattern.match(name):
            raise ConfigError(f"{self.a_name} is a short name of letters, digits, '.', '_' or '-', got {name!r}")
        aliases = tuple(aliases)
        with self.lock:
            if not replace and (name in self._registered or name in self.built_in or name in self._aliases):
                raise ConfigError(f"{self.what} {name!r} is already registered: pass replace=True to replace it")
            self._registered[name] = target
            self._loaded.pop(name, None)
            for alias in aliases:
                if not replace and alias in self._aliases and self._aliases[alias] != name:
                    raise ConfigError(f"{alias!r} already names {self.what} {self._aliases[alias]!r}")
                self._aliases[alias] = name

    def unregister(self, name: str) -> None:
        """Undo :meth:`register` (a built-in name registered over comes back, with its built-in aliases)."""
        with self.lock:
            self._registered.pop(name, None)
            self._loaded.pop(name, None)
            for alias, target in list(self._aliases.items()):
                if target == name and self.built_in_aliases.get(alias) != name:
                    del self._aliases[alias]

    def registered(self) -> dict[str, object]:
        """The names :meth:`register` added, with what each was registered as (nothing imported)."""
        with self.lock:
            return dict(self._registered)

    def aliases(self) -> dict[str, str]:
        """Every alias, with the name it stands for."""
        with self.lock:
            return dict(self._aliases)

    def names(self) -> list[str]:
        """Every name: the built-in ones in their order, then those registered, then installed packages' ones."""
        with self.lock:
            return list(dict.fromkeys([*self.built_in, *self._registered, *self.discovered()]))

    def canonical(self, name: str) -> str | None:
        """``name``, or the name an alias stands for; None where nobody declares it (nothing is imported)."""
        with self.lock:
            if name in self._registered or name in self.built_in:
                return name
            if name in self._aliases:
                return self._aliases[name]
            if name in self.discovered():
                return name
            return None

    def get(self, name: str) -> T:
        """The thing ``name`` (or the name an alias stands for) declares, imported on first use; an unknown name is
        the error ``unknown`` builds."""
        with self.lock:
            canonical = self.canonical(name)
            if canonical is None:
                raise self.unknown(name) if self.unknown else InputError(f"unknown {self.what} {name!r}; choose one of {', '.join(self.names())}")
            if canonical in self._loaded:
                return self._loaded[canonical]
            target: Any
            entry_point = False
            if canonical in self._registered:
                target, origin = self._registered[canonical], _REGISTERED
            elif canonical in self.built_in:
                target, origin = self.built_in[canonical], _BUILT_IN
            else:
                points = self.discovered()[canonical]
                if len(points) > 1:
                    raise ConfigError(
                        f"{self.what} {canonical!r} is declared by several installed packages ({', '.join(_origin(p) for p in points)}): uninstall all but one"
                    )
                target, origin, entry_point = points[0], _origin(points[0]), True
            thing = self._load(canonical, target, origin, entry_point=entry_point)
            self._loaded[canonical] = thing
            return thing

    def _load(self, name: str, target: Any, origin: str, *, entry_point: bool) -> T:
        try:
            # an installed package's entry point may come from the importlib_metadata backport (a finder some packages
            # add to sys.meta_path), whose EntryPoint is not importlib.metadata's: known by where it was found
            if entry_point or isinstance(target, metadata.EntryPoint):
                found = target.load()
            elif isinstance(target, str):
                module, _, attribute = target.partition(":")
                found = import_module(module)
                for part in attribute.split(".") if attribute else ():
                    found = getattr(found, part)
            else:
                found = target
            if not isinstance(found, self.expected) and callable(found):
                found = found()
        except Exception as exc:
            if isinstance(exc, self.passes):
                raise
            if self.missing is not None and isinstance(exc, ModuleNotFoundError) and origin == _BUILT_IN:
                # an optional dependency of a built-in thing is not installed
                raise self.missing(f"{self.what} {name!r} is not available in this build: {exc}") from exc
            raise ConfigError(f"{self.what} {name!r} ({origin}) could not be loaded: {type(exc).__name__}: {exc}") from exc
        if not isinstance(found, self.expected):
            expected = f"{self.expected.__module__}.{self.expected.__qualname__}"
            raise ConfigError(f"{self.what} {name!r} ({origin}) gives {type(found).__name__}, not a {expected}")
        declared = self.name_of(found)
        if declared != name:
            raise ConfigError(f"{self.what} {name!r} ({origin}) declares {self.declares} {declared!r}")
        return found


def _origin(point: metadata.EntryPoint) -> str:
    """Where an entry point comes from, for messages: its value and, where known, its distribution."""
    dist = getattr(point, "dist", None)
    named = f" of {dist.name}" if dist is not None and getattr(dist, "name", None) else ""
    return f"entry point {point.value}{named}"
