"""Pairwise comparative assessment (004) and head-to-head comparison (001 §3.1, Tables 3, 14-16).

One comparison asks the judge which of two outputs for the same source is better, in both orders
(:func:`compare`, ``protocol`` ``pairwise`` of 004 or ``h2h`` of 001 with a tie label); :func:`rank` orders
N outputs of one source by many comparisons (004 §3.4):

* ``full``: all N(N-1) ordered comparisons; score = win ratio, 004 eq. 4;
* ``random`` / ``no-repeat`` / ``symmetric``: a budget of R ordered comparisons chosen as in 004 Fig. 2;
  score = win ratio over the comparisons made;
* ``bradley-terry``: a Bradley-Terry model with a first-position advantage fitted to any subset of
  comparisons (the full matrix, or ``selection`` with the budget: symmetric by default, 004 §5.3's best
  subset, or ``active``: where the current fit is least certain);
* ``sort``: merge sort on order-calibrated probabilities, O(N log N) comparisons, scored by a Bradley-Terry
  fit to the comparisons it made.

Every ranking reports the positional bias of 004 §3.5 (how often the first position won) and which
comparisons were made. The modules, from the bottom up (every name is importable from here):

====================  ==============================================================================
``comparison``        prompts, labels and reading one comparison; :func:`compare`; the result models
``aggregate``         which comparisons (:func:`select_pairs`), win ratios, Bradley-Terry, positional bias
``adaptive``          comparisons chosen as the ranking goes: merge sort and active selection
``ranking``           :func:`rank` and :class:`Ranking`
====================  ==============================================================================

The positional-bias computation itself is :func:`judgesdk.stats.positional.position_bias`, shared with
meta-evaluation (:func:`judgesdk.meta.reliability.positional_bias`).
"""

from __future__ import annotations

from judgesdk.core import as_criterion
from judgesdk.scorers.pairwise.adaptive import calibrated, position_scores, sort_outputs
from judgesdk.scorers.pairwise.aggregate import (
    SELECTIONS,
    BradleyTerryFit,
    PositionalBias,
    Selection,
    best_first,
    fit_bradley_terry,
    positional_bias,
    select_pairs,
    win_ratios,
)
from judgesdk.scorers.pairwise.comparison import (
    H2H_SCALE,
    PAIRWISE_SCALE,
    PROTOCOLS,
    Comparison,
    OrderJudgement,
    Protocol,
    Verdict,
    Winner,
    both_orders,
    compare,
    judge_all,
    judge_order,
)
from judgesdk.scorers.pairwise.ranking import STRATEGIES, Ranking, Strategy, rank

__all__ = [
    "H2H_SCALE", "PAIRWISE_SCALE", "PROTOCOLS", "SELECTIONS", "STRATEGIES",
    "BradleyTerryFit", "Comparison", "OrderJudgement", "PositionalBias", "Protocol", "Ranking", "Selection",
    "Strategy", "Verdict", "Winner",
    "as_criterion", "best_first", "both_orders", "calibrated", "compare", "fit_bradley_terry", "judge_all",
    "judge_order", "position_scores", "positional_bias", "rank", "select_pairs", "sort_outputs", "win_ratios",
]  # fmt: skip
