"""Former home of the results-file helpers: :mod:`judgesdk.records` owns the results file now (row schema,
join key, id rule, locked writer, reader). Its old names still load from here, with a
:class:`DeprecationWarning`; import them from :mod:`judgesdk.records`."""

from __future__ import annotations

import importlib
import warnings
from typing import Any

__all__ = ["append", "done_ids", "read_objects", "read_utf8", "result_line"]

_HOME = "judgesdk.records"


def __getattr__(name: str) -> Any:
    """The old names, from :mod:`judgesdk.records` (deprecated here)."""
    if name not in __all__:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(f"judgesdk.runlog.{name} moved to {_HOME}.{name}: import it from {_HOME}", DeprecationWarning, stacklevel=2)
    return getattr(importlib.import_module(_HOME), name)
