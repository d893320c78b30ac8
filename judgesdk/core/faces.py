"""Package faces that load on first use: a package names what it offers without importing it all.

A face (a package's ``__init__``) lists its public names in ``__all__``; where importing their modules
costs start-up time (SciPy, the provider stack, Ray), it maps each name to its module and lets
:func:`lazy` load the module when the name is first read. ``import judgesdk`` then stays as quick as
importing its types and errors.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy"]


def lazy(package: str, homes: Mapping[str, str], namespace: dict[str, Any]) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """``(__getattr__, __dir__)`` for ``package`` whose names in ``homes`` (name -> module) load on first use.

    A loaded name is stored in the package's ``namespace`` (its ``globals()``), so later reads skip this."""

    def __getattr__(name: str) -> Any:
        home = homes.get(name)
        if home is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(home), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted({*namespace, *homes})

    return __getattr__, __dir__
