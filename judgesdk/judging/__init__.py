"""Floor 8, judging: a judge assembled from config, and the runners that drive it over items.

* :mod:`~judgesdk.judging.judge_config`: the config (TOML, YAML, a mapping, ``JUDGESDK_*`` variables) as
  pydantic models, the detected provider chain, and the question a results row answers (:func:`ask_for`).
* :mod:`~judgesdk.judging.judge`: :class:`Judge`, what applications call: ``score``/``ascore``/
  ``score_many``, ``compare``, ``rank``, over a fallback chain of provider stacks.
* :mod:`~judgesdk.judging.pace`: the item pace (:class:`~judgesdk.judging.pace.Pace`): with no concurrency
  configured, the items in flight follow what the provider allows, growing while latency holds, shrinking on 429s
  and timeouts.
* :mod:`~judgesdk.judging.items`: typed items (conversations, grounded answers, agent runs) turned into the four
  strings a prompt shows at one point (:func:`~judgesdk.judging.items.judge_item`), their kind and cuts in the
  result, and the criteria answered without a model call (``tool_correctness`` on an agent run).
* :mod:`~judgesdk.judging.runner`: the one runner (``score``, ``gate``, ``bench``, ``card``, the Ray engine):
  :func:`pending` skips the items already final in the results file, :func:`run` judges the rest, each row
  written as it exists, and a budget stop or Ctrl-C ends every command the same way.
* :mod:`~judgesdk.judging.runners`: what sits above the judge: a run within a budget, and a run answered through batch APIs.

May import: :mod:`judgesdk.core`, :mod:`judgesdk.provider`, :mod:`judgesdk.prompting`, :mod:`judgesdk.items`,
:mod:`judgesdk.estimation`, :mod:`judgesdk.records`, :mod:`judgesdk.fused`, :mod:`judgesdk.scorers` (and
:mod:`judgesdk.stats`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from judgesdk.core import lazy as _lazy

if TYPE_CHECKING:
    from judgesdk.judging.judge import CriterionSpec, Judge, ProviderSource, as_criteria, as_criterion
    from judgesdk.judging.judge_config import JudgeConfig, JuryConfig, ask_for, detect_chain, jury_member_config, load_config, validation_summary
    from judgesdk.judging.runner import Interrupted, Outcome, RowSink, Task, pending, print_rows, run
    from judgesdk.judging.runners import budgeted_judge, run_offline

__all__ = [
    "as_criteria",
    "as_criterion",
    "ask_for",
    "budgeted_judge",
    "CriterionSpec",
    "detect_chain",
    "Interrupted",
    "Judge",
    "JudgeConfig",
    "jury_member_config",
    "JuryConfig",
    "load_config",
    "Outcome",
    "pending",
    "print_rows",
    "ProviderSource",
    "RowSink",
    "run",
    "run_offline",
    "Task",
    "validation_summary",
]

__getattr__, __dir__ = _lazy(
    __name__,
    {
        **dict.fromkeys(("CriterionSpec", "Judge", "ProviderSource", "as_criteria", "as_criterion",), "judgesdk.judging.judge"),
        **dict.fromkeys(("JudgeConfig", "JuryConfig", "ask_for", "detect_chain", "jury_member_config", "load_config", "validation_summary",), "judgesdk.judging.judge_config"),
        **dict.fromkeys(("Interrupted", "Outcome", "RowSink", "Task", "pending", "print_rows", "run",), "judgesdk.judging.runner"),
        **dict.fromkeys(("budgeted_judge", "run_offline",), "judgesdk.judging.runners"),
    },
    globals(),
)
