"""The public data types (a face: they live in :mod:`judgesdk.core.types`): what is judged, on which scale,
and what came back."""

from __future__ import annotations

from judgesdk.core.types import (
    Criterion,
    CriterionSpec,
    JudgeItem,
    JudgeResult,
    LabelDistribution,
    Scale,
    Usage,
    as_criteria,
    as_criterion,
    method_family,
)

__all__ = [
    "Criterion",
    "CriterionSpec",
    "JudgeItem",
    "JudgeResult",
    "LabelDistribution",
    "Scale",
    "Usage",
    "as_criteria",
    "as_criterion",
    "method_family",
]
