"""Floor 4, estimation: a label distribution over a scale from what a provider gives.

* :mod:`~judgesdk.estimation.estimate`: ask a provider with the best method its capabilities allow (exact >
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

from judgesdk.core.faces import lazy as _lazy

if TYPE_CHECKING:
    from judgesdk.estimation.estimate import Estimate, EstimationSettings, choose_method, estimate, read_label

__all__ = ["Estimate", "EstimationSettings", "choose_method", "estimate", "read_label"]
__getattr__, __dir__ = _lazy(__name__, dict.fromkeys(__all__, "judgesdk.estimation.estimate"), globals())
