"""The ``method_options`` each method reads, checked before any work so that a typo is an error, not ignored.

A scorer reads its settings from ``ScorerOptions.extra`` (see each scorer's docstring). This table lists
them; ``tests/catalogue/test_hostile_input.py`` checks it against the keys the scorer modules actually read, so a
new option must be added here. A config's ``method_options`` may hold settings of several methods (a judge
can be asked for another method per call), so it is checked against every known key; ``--option`` on the
command line is checked against the keys of the method (or comparison) that command runs.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import Any

from judgesdk.core.errors import InputError

# method -> the method_options keys its scorer reads
METHOD_KEYS: dict[str, tuple[str, ...]] = {
    "geval": (),
    "direct": ("grammar",),
    "sampling": (),
    "rts": ("max_tokens", "grammar"),
    "mcq": (),
    "likelihood": ("normalization",),
    "synthetic": ("rungs", "rung_max_tokens", "prediction", "comparison", "ladders"),
    "fusion": ("k", "temperature", "assistants", "task", "plan", "plans", "plan_max_tokens", "grammar"),
    "fused": ("fused_model", "fused_levels"),
    "auto": ("fused_model", "fused_levels", "decision_levels"),
    "decision": ("decision_levels",),
}
COMPARISON_KEYS: tuple[str, ...] = ("labels", "concurrency")  # judge.compare and judge.rank (004, 001 h2h)

POSITIVE_INTEGERS = ("max_tokens", "rung_max_tokens", "plan_max_tokens", "concurrency", "decision_levels")  # read with int()
NON_NEGATIVE_NUMBERS = ("temperature",)  # read with float()
# grammar: judgesdk.estimation.grammars.format_for constrains generated answers to the verdict format; fused_levels: the
# fused judge's result carries its predictive distribution over the scale's levels (judgesdk.fused.levels)
BOOLEANS = ("grammar", "fused_levels")


def known_keys() -> tuple[str, ...]:
    """Every key some method or comparison reads."""
    return tuple(sorted({key for keys in METHOD_KEYS.values() for key in keys} | set(COMPARISON_KEYS)))


def problem(options: Mapping[str, Any], valid: Iterable[str] | None = None, scope: str = "") -> str | None:
    """What is wrong with ``options`` (None when nothing): a key outside ``valid`` (default: every key some
    method reads), named with the closest valid key and the valid ones, or a value of the wrong type."""
    allowed = tuple(valid) if valid is not None else known_keys()
    for key, value in options.items():
        if key not in allowed:
            close = difflib.get_close_matches(str(key), allowed, n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            if not allowed:
                return f"unknown option {key!r}: no option is read{scope}"
            return f"unknown option {key!r}{hint}; valid keys{scope}: {', '.join(allowed)}"
        if key in POSITIVE_INTEGERS and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            return f"{key} must be a positive integer, got {value!r}"
        if key in NON_NEGATIVE_NUMBERS and (isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0):
            return f"{key} must be a number >= 0, got {value!r}"
        if key in BOOLEANS and not isinstance(value, bool):
            return f"{key} must be true or false, got {value!r}"
    return None


def check_method_options(options: Mapping[str, Any], method: str | None, *, what: str = "--option") -> None:
    """Raise :class:`InputError` for ``options`` given for one method (or ``"compare"``/``"rank"``): checked
    against that method's own keys where it is known, else against every known key."""
    if method in ("compare", "rank"):
        found = problem(options, COMPARISON_KEYS, f" for {method}")
    elif method in METHOD_KEYS:
        found = problem(options, METHOD_KEYS[method], f" for method {method!r}")
    else:
        found = problem(options)
    if found is not None:
        raise InputError(f"{what}: {found}")
