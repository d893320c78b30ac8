"""The judge (a face: it lives in :mod:`judgesdk.judging.judge`). ``from judgesdk import Judge`` is the short form."""

from __future__ import annotations

from judgesdk.judging.judge import CriterionSpec, Judge, ProviderSource, as_criteria, as_criterion

__all__ = ["CriterionSpec", "Judge", "ProviderSource", "as_criteria", "as_criterion"]
