"""Floor 1, core: what every other floor shares: the typed errors, the public data types, provenance.

* :mod:`~judgesdk.core.errors`: typed errors, each saying what to fix; provider errors classified once.
* :mod:`~judgesdk.core.types`: what is judged (:class:`JudgeItem`, :class:`Criterion` on a :class:`Scale`)
  and what comes back (:class:`JudgeResult`, :class:`LabelDistribution`, :class:`Usage`).
* :mod:`~judgesdk.core.provenance`: what produced a verdict (:class:`Provenance`) and how two differ.
* :mod:`~judgesdk.core.faces`: package faces that load their names on first use.
* :mod:`~judgesdk.core.exits`: the process exit codes, one table for every command (and the gate's verdict).

May import: nothing of judgesdk (pydantic and the standard library only).
"""

from __future__ import annotations

from judgesdk.core.errors import ConfigError, InputError, JudgeSDKError, ProviderError
from judgesdk.core.provenance import Provenance
from judgesdk.core.types import Criterion, JudgeItem, JudgeResult, LabelDistribution, Scale, Usage

__all__ = [
    "ConfigError",
    "Criterion",
    "InputError",
    "JudgeItem",
    "JudgeResult",
    "JudgeSDKError",
    "LabelDistribution",
    "Provenance",
    "ProviderError",
    "Scale",
    "Usage",
]
