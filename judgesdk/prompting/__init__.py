"""Floor 3, prompting: what a judge is shown. Templates as data, fences around judged text, criteria presets.

* :mod:`~judgesdk.prompting.templates`: prompt templates (TOML files with an id, a version and a content
  hash) and their rendering; the bundled ones are the repository's top-level ``prompts/`` folder, installed
  as the data package :mod:`judgesdk.prompts`.
* :mod:`~judgesdk.prompting.fences`: judged text can neither close its fence nor forge the answer line.
* :mod:`~judgesdk.prompting.presets`: the published criteria (definitions, scales) of SummEval,
  TopicalChat, HANNA and NewsRoom (``presets_data/``).

Also here: :mod:`~judgesdk.prompting.injection`, judged text that talks to the judge: a review flag, never a silent score.

May import: :mod:`judgesdk.core`, :mod:`judgesdk.provider` (its message type), :mod:`judgesdk.prompts`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from judgesdk.core import lazy as _lazy

if TYPE_CHECKING:
    from judgesdk.prompting.fences import Fences, fences_of, neutralize
    from judgesdk.prompting.injection import instruction_like
    from judgesdk.prompting.presets import criteria_for, criterion, datasets
    from judgesdk.prompting.templates import Template, bundled_template_ids, load_template, verbatim_values

__all__ = [
    "bundled_template_ids",
    "criteria_for",
    "criterion",
    "datasets",
    "Fences",
    "fences_of",
    "instruction_like",
    "load_template",
    "neutralize",
    "Template",
    "verbatim_values",
]

__getattr__, __dir__ = _lazy(
    __name__,
    {
        **dict.fromkeys(("Fences", "fences_of", "neutralize",), "judgesdk.prompting.fences"),
        "instruction_like": "judgesdk.prompting.injection",
        **dict.fromkeys(("criteria_for", "criterion", "datasets",), "judgesdk.prompting.presets"),
        **dict.fromkeys(("Template", "bundled_template_ids", "load_template", "verbatim_values",), "judgesdk.prompting.templates"),
    },
    globals(),
)
