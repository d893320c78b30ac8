"""judgesdk: judge generated text with language models, honestly.

``from judgesdk import Judge, Criterion, Scale`` gives the judge and the types it is given; the errors it raises
are here too. Everything else is imported from the face of the folder that owns it (``from judgesdk.gate import
GateConfig``, ``from judgesdk.meta import meta_evaluate``): each folder's ``__init__`` lists what it offers, and
nothing else of a folder is API.

**The plan.** Each folder is a floor and owns one concern; data flows up, one way: prompt -> provider -> label
distribution -> score -> reliability -> report. A module imports its own folder, or the faces of folders on its
floor or lower ones, never a higher one, and no modules import each other in a loop. The floors, from the ground
up, are written once, as ``FLOORS`` in ``tests/structure/test_layers.py``, which checks every import against them;
``tests/structure/test_faces.py`` checks that code outside a folder enters it through its face.

The folders, each a floor with a face: ``core/`` (errors, types, provenance, exit codes), ``provider/`` (the
provider interface, registry, prices and layers), ``stats/`` (statistics), ``providers/`` (one adapter per API),
``prompts/`` and ``prompting/`` (templates and what a judge is shown), ``items/`` (conversations, grounded
answers and agent runs as typed items), ``estimation/`` (label distributions),
``records/`` (the results file), ``fused/`` (the free local judge), ``scorers/`` (one method each), ``judging/``
(config, the judge, runners), ``meta/`` (meta-evaluation, calibration, cards), ``forecast/`` (the bill before a
run), ``jury/`` (several judges), ``gate/`` (release gates), ``distributed/`` (the Ray engine), ``view/`` (the
results viewer), ``serve/`` (the decisions server), ``cli/`` (the command line).

The modules at the top, ``errors.py``, ``presets.py`` and ``testing.py`` (the pytest plugin), are faces too: they
re-export names for the import paths users write, and nothing inside a folder imports them. ``Judge`` loads on first use: importing judgesdk alone
(types and errors) does not bring the provider stack, estimation and the scorers.
"""

from __future__ import annotations

# First, before anything that imports numpy: on a GPU build of llama-cpp-python, llama.cpp's libraries must load
# before the C++ runtime numpy brings, or loading a model crashes the process (judgesdk.providers.llamacpp.load_order).
from judgesdk.providers import load_llama_first as _load_llama_first

_load_llama_first()

from typing import TYPE_CHECKING

from judgesdk.core import lazy as _lazy

if TYPE_CHECKING:
    from judgesdk.core import (
        AuthError,
        ConfigError,
        Criterion,
        CriterionSpec,
        InputError,
        JudgeItem,
        JudgeResult,
        JudgeSDKError,
        LabelDistribution,
        PermanentError,
        ProviderError,
        RateLimitError,
        Scale,
        TransientError,
        Usage,
    )
    from judgesdk.judging import Judge

__version__ = "0.2.0"

__all__ = [
    "AuthError",
    "ConfigError",
    "Criterion",
    "CriterionSpec",
    "InputError",
    "Judge",
    "JudgeItem",
    "JudgeResult",
    "JudgeSDKError",
    "LabelDistribution",
    "PermanentError",
    "ProviderError",
    "RateLimitError",
    "Scale",
    "TransientError",
    "Usage",
]

__getattr__, __dir__ = _lazy(__name__, {**dict.fromkeys([name for name in __all__ if name != "Judge"], "judgesdk.core"), "Judge": "judgesdk.judging"}, globals())
