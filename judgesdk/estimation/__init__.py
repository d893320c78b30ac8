"""Floor 4, estimation: a label distribution over a scale from what a provider gives.

* :mod:`~judgesdk.estimation.estimator`: ask a provider with the best method its capabilities allow (exact >
  logprobs > sampling; parsed on request), record the method and why (:class:`EstimationSettings`).
* :mod:`~judgesdk.estimation.distributions`: distributions from exact label log-probabilities, top-k
  logprobs, samples or one answer (pure functions; label spellings merged, coverage kept).
* :mod:`~judgesdk.estimation.parsing`: the public judge-answer parser (scores, letters, verdicts).
* :mod:`~judgesdk.estimation.choices`: which option an answer chooses (letters, verdict words), for the parser.
* :mod:`~judgesdk.estimation.grammars`: answer formats as GBNF grammars, and the one repair of an answer.

May import: :mod:`judgesdk.core`, :mod:`judgesdk.provider`, :mod:`judgesdk.prompting`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from judgesdk.core import lazy as _lazy

if TYPE_CHECKING:
    from judgesdk.estimation.estimator import Estimate, EstimationSettings, choose_method, estimate, read_label
    from judgesdk.estimation.grammars import FormatUse, format_for, repair
    from judgesdk.estimation.parsing import parse_choice, parse_score

__all__ = [
    "choose_method",
    "Estimate",
    "estimate",
    "EstimationSettings",
    "format_for",
    "FormatUse",
    "parse_choice",
    "parse_score",
    "read_label",
    "repair",
]

__getattr__, __dir__ = _lazy(
    __name__,
    {
        **dict.fromkeys(("Estimate", "EstimationSettings", "choose_method", "estimate", "read_label",), "judgesdk.estimation.estimator"),
        **dict.fromkeys(("FormatUse", "format_for", "repair",), "judgesdk.estimation.grammars"),
        **dict.fromkeys(("parse_choice", "parse_score",), "judgesdk.estimation.parsing"),
    },
    globals(),
)
