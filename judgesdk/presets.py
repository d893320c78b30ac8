"""Criteria presets (a face: they live in :mod:`judgesdk.prompting.presets`): the published criteria of
SummEval, TopicalChat, HANNA and NewsRoom, with their definitions and scales.

>>> from judgesdk.presets import criteria_for
>>> [c.name for c in criteria_for("summeval")]
['coherence', 'consistency', 'fluency', 'relevance']
"""

from __future__ import annotations

from judgesdk.prompting import criteria_for, criterion, datasets

__all__ = ["criteria_for", "criterion", "datasets"]
