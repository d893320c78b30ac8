"""Floor 8, judging: a judge assembled from config, and the runners that drive it over items.

* :mod:`~judgesdk.judging.judge_config`: the config (TOML, YAML, a mapping, ``JUDGESDK_*`` variables) as
  pydantic models, the detected provider chain, and the question a results row answers (:func:`ask_for`).
* :mod:`~judgesdk.judging.judge`: :class:`Judge`, what applications call: ``score``/``ascore``/
  ``score_many``, ``compare``, ``rank``, over a fallback chain of provider stacks.
* :mod:`~judgesdk.judging.runner`: the one runner (``score``, ``gate``, ``bench``, ``card``, the Ray engine):
  :func:`pending` skips the items already final in the results file, :func:`run` judges the rest, each row
  written as it exists, and a budget stop or Ctrl-C ends every command the same way.
* :mod:`~judgesdk.judging.runners`: what sits above the judge: a run within a budget, and a run answered through batch APIs.

May import: :mod:`judgesdk.core`, :mod:`judgesdk.provider`, :mod:`judgesdk.prompting`,
:mod:`judgesdk.estimation`, :mod:`judgesdk.records`, :mod:`judgesdk.fused`, :mod:`judgesdk.scorers` (and
:mod:`judgesdk.stats`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from judgesdk.core.faces import lazy as _lazy

if TYPE_CHECKING:
    from judgesdk.judging.judge import Judge
    from judgesdk.judging.judge_config import JudgeConfig, ask_for, load_config

__all__ = ["Judge", "JudgeConfig", "ask_for", "load_config"]
__getattr__, __dir__ = _lazy(
    __name__,
    {"Judge": "judgesdk.judging.judge", **dict.fromkeys(("JudgeConfig", "ask_for", "load_config"), "judgesdk.judging.judge_config")},
    globals(),
)
