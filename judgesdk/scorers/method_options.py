"""The ``method_options`` each method reads, checked before any work so that a typo is an error, not ignored.

A scorer reads its settings from ``ScorerOptions.extra`` (see each scorer's docstring); its
:class:`~judgesdk.scorers.spec.MethodSpec` lists them with their types. ``tests/catalogue/test_hostile_input.py``
checks the specs against the keys the scorer modules actually read, so a new option must be declared there. A
config's ``method_options`` may hold settings of several methods (a judge can be asked for another method per
call), so it is checked against every known key; ``--option`` on the command line is checked against the keys of
the method (or comparison) that command runs.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from typing import Any

from judgesdk.core import InputError
from judgesdk.scorers.registry import is_method, method_names, method_spec
from judgesdk.scorers.spec import OptionType, option_problem

# the options judge.compare and judge.rank read (004, 001 h2h), which no method declares
COMPARISON_OPTIONS: dict[str, OptionType] = {"labels": "any", "concurrency": "positive_integer"}
COMPARISON_KEYS: tuple[str, ...] = tuple(COMPARISON_OPTIONS)


def known_options() -> dict[str, OptionType]:
    """Every key some method or comparison reads, with its type (where methods share a key, the first method's
    in :func:`~judgesdk.scorers.registry.method_names` order: the built-in ones agree). Reads every method's spec."""
    found: dict[str, OptionType] = {}
    for name in method_names():
        for key, kind in method_spec(name).options.items():
            found.setdefault(key, kind)
    for key, kind in COMPARISON_OPTIONS.items():
        found.setdefault(key, kind)
    return found


def known_keys() -> tuple[str, ...]:
    """Every key some method or comparison reads, sorted."""
    return tuple(sorted(known_options()))


def problem(options: Mapping[str, Any], valid: Mapping[str, OptionType] | None = None, scope: str = "") -> str | None:
    """What is wrong with ``options`` (None when nothing): a key outside ``valid`` (the keys a method reads, with
    their types; default: every key some method reads), named with the closest valid key and the valid ones, or a
    value of the wrong type. ``scope`` ends the list's label (" for method 'rts'")."""
    if not options:
        return None  # nothing to check: no spec is read
    typed = dict(valid) if valid is not None else {key: known_options()[key] for key in known_keys()}
    allowed = tuple(typed)
    for key, value in options.items():
        if key not in typed:
            close = difflib.get_close_matches(str(key), allowed, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            if not allowed:
                return f"unknown option {key!r}: no option is read{scope}"
            return f"unknown option {key!r}{hint}; valid keys{scope}: {', '.join(allowed)}"
        found = option_problem(key, typed[key], value)
        if found is not None:
            return found
    return None


def check_method_options(options: Mapping[str, Any], method: str | None, *, what: str = "--option") -> None:
    """Raise :class:`InputError` for ``options`` given for one method (or ``"compare"``/``"rank"``): checked
    against that method's own keys where it is known, else against every known key. ``what`` names where the
    options came from (the CLI flag, a config key) at the head of the error message."""
    if method in ("compare", "rank"):
        found = problem(options, COMPARISON_OPTIONS, f" for {method}")
    elif method is not None and is_method(method):
        found = problem(options, method_spec(method).options, f" for method {method!r}")
    else:
        found = problem(options)
    if found is not None:
        raise InputError(f"{what}: {found}")
