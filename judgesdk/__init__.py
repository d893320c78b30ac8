"""judgesdk: judge generated text with language models, honestly.

``from judgesdk import Judge, Criterion, Scale`` gives the judge and the types it is given. ``Judge`` is
loaded on first use: importing :mod:`judgesdk.judging.judge` brings the provider stack, estimation and the
scorers, which ``import judgesdk`` alone (types and errors) does not need.

**The plan.** Each folder is a floor and owns one concern; data flows up, one way: prompt -> provider ->
label distribution -> score -> reliability -> report. A module imports its own floor or lower ones, never a
higher one, and no modules import each other in a loop (``tests/structure/test_layers.py`` reads every
import). From the ground up:

==  ==================================  =====================================================================
 1  ``core/``                           errors, the public data types, provenance
 2  ``provider/``, ``stats/``           the provider interface, registry, prices, wrappers and the one stack;
                                        statistics (correlations of groups, PPI, resampling, isotonic fits)
 3  ``providers/`` ``prompts/``         (top-level folders, installed as ``judgesdk.providers`` and
    ``prompting/``                      ``judgesdk.prompts``) one adapter per API; templates as data; their
                                        loader, fences and the criteria presets
 4  ``estimation/``                     label distributions from what a provider gives, parsing, grammars
 5  ``records/``                        the results file: rows, their key, writer and readers; human labels
 6  ``fused/``                          the fused local judge: signals, fitted model, fitting
 7  ``scorers/``                        one method each (G-Eval, RTS, MCQ, pairwise, fused...)
 8  ``judging/``                        config, the Judge, the runners
 9  ``meta/``                           meta-evaluation, calibration, diffs, judge cards, bench
10  ``forecast/``, ``jury/``            the bill before a run; several judges on one item
11  ``gate/``, ``distributed/``         release gates; the Ray engine
12  ``cli/``                            one module per command
==  ==================================  =====================================================================

The modules at the top (``errors``, ``types``, ``judge``, ``presets``, ``testing``) are faces: they re-export
from the floors for the import paths users write, and nothing inside a folder imports them. Old paths
(``judgesdk.cache``, ``judgesdk.gate.ppi``...) still import, with a DeprecationWarning (:mod:`judgesdk._moved`).
"""

from __future__ import annotations

# First, before anything that imports numpy: on a GPU build of llama-cpp-python, llama.cpp's libraries must load
# before the C++ runtime numpy brings, or loading a model crashes the process (judgesdk.providers.llamacpp.load_order).
from judgesdk.providers.llamacpp.load_order import load_llama_first as _load_llama_first

_load_llama_first()

import importlib
from typing import TYPE_CHECKING
from typing import Any as _Any

from judgesdk import _moved
from judgesdk.core.errors import (
    AuthError,
    ConfigError,
    InputError,
    JudgeSDKError,
    PermanentError,
    ProviderError,
    RateLimitError,
    TransientError,
)
from judgesdk.core.types import Criterion, JudgeResult, LabelDistribution, Scale

if TYPE_CHECKING:
    from judgesdk.judging.judge import Judge

__version__ = "0.1.0"

_moved.install()  # old import paths (judgesdk.cache, judgesdk.gate.ppi...) keep working, with a warning

__all__ = [
    "AuthError",
    "ConfigError",
    "Criterion",
    "InputError",
    "Judge",
    "JudgeResult",
    "JudgeSDKError",
    "LabelDistribution",
    "PermanentError",
    "ProviderError",
    "RateLimitError",
    "Scale",
    "TransientError",
]

# names loaded on first use: name -> module
_LAZY = {"Judge": "judgesdk.judging.judge"}


def __getattr__(name: str) -> _Any:
    home = _LAZY.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
