"""Floor 7. Scorer strategies: each builds prompts from a template, asks the provider layer for a label
distribution or a generation, and returns a :class:`judgesdk.core.types.JudgeResult`.

Every scorer module exposes one coroutine with the same contract::

    async def score(provider, item, criterion, options: ScorerOptions, method: str) -> JudgeResult

and is found by method name through :func:`scorer_for` (imported lazily, so a method's dependencies
load only when it is used). Shared steps live in ``common``.

Also here: ``postprocess`` (Filtering and Binning over results, 002) and ``method_options`` (which option
each method reads).

May import: :mod:`judgesdk.core`, :mod:`judgesdk.stats`, :mod:`judgesdk.provider`, :mod:`judgesdk.prompting`,
:mod:`judgesdk.estimation`, :mod:`judgesdk.fused`.
"""

from __future__ import annotations

import importlib as _importlib
from collections.abc import Awaitable as _Awaitable
from collections.abc import Callable as _Callable

from judgesdk.core.errors import InputError as _InputError
from judgesdk.core.types import Criterion as _Criterion
from judgesdk.core.types import JudgeItem as _JudgeItem
from judgesdk.core.types import JudgeResult as _JudgeResult
from judgesdk.provider.protocol import Provider as _Provider
from judgesdk.scorers.common import ScorerOptions as _ScorerOptions

__all__ = ["METHODS", "ScoreFn", "scorer_for"]

ScoreFn = _Callable[[_Provider, _JudgeItem, _Criterion, _ScorerOptions, str], _Awaitable[_JudgeResult]]

# method name -> module under judgesdk.scorers
METHODS: dict[str, str] = {
    "auto": "auto",
    "fused": "fused",
    "geval": "likert",
    "direct": "likert",
    "sampling": "likert",
    "rts": "rts_mcq",
    "mcq": "rts_mcq",
    "likelihood": "likelihood",
    "synthetic": "synthetic",
    "fusion": "fusion",
    "decision": "decision",
}


def scorer_for(method: str) -> ScoreFn:
    if method not in METHODS:
        raise _InputError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    try:
        module = _importlib.import_module(f"judgesdk.scorers.{METHODS[method]}")
    except ModuleNotFoundError as exc:
        raise _InputError(f"method {method!r} is not available in this build: {exc}") from exc
    return module.score
