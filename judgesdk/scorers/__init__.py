"""Floor 7. Scorer strategies: each builds prompts from a template, asks the provider layer for a label
distribution or a generation, and returns a :class:`judgesdk.core.types.JudgeResult`.

Every scorer module exposes one coroutine with the same contract::

    async def score(provider, item, criterion, options: ScorerOptions, method: str) -> JudgeResult

and declares each method it implements as a :class:`~judgesdk.scorers.spec.MethodSpec` (its options, whether its
score is on the criterion's scale, whether it reads fused fits...): the rest of judgesdk reads those facts from
the spec, never from a table of method names. :mod:`judgesdk.scorers.registry` finds a method's spec by name
(built in, :func:`register`, or an entry point of the group ``judgesdk.methods``) and imports its module only
when it is used, so a method's dependencies load only then; :func:`scorer_for` gives its coroutine. Shared
steps live in ``common``.

Also here: ``postprocess`` (Filtering and Binning over results, 002) and ``method_options`` (which option
each method reads).

The methods, one module each: ``auto.py`` (the default: the fused judge where fitted, else G-Eval), ``fused.py``
(the fused local judge), ``likert.py`` (G-Eval, direct and sampled Likert scores, 002), ``multi.py`` (002's
strategies around it: granularity, demonstrations, rationales), ``rts_mcq.py`` (001's reason-then-score and
multiple choice), ``likelihood.py`` (GPTScore-style likelihood), ``synthetic.py`` (000's reference ladders),
``fusion.py`` (003's Fusion-Eval), ``decision.py`` (a decision model's own distribution), ``pairwise/`` (004's
comparisons and 001's head-to-head). Beside them: ``spec.py`` (what a method declares), ``registry.py`` (finding a
method by name), ``common.py`` (steps every scorer shares), ``method_options.py`` (checking ``method_options``)
and ``postprocess.py`` (002's Filtering and Binning).

May import: :mod:`judgesdk.core`, :mod:`judgesdk.stats`, :mod:`judgesdk.provider`, :mod:`judgesdk.prompting`,
:mod:`judgesdk.estimation`, :mod:`judgesdk.fused`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from judgesdk.core import lazy as _lazy

if TYPE_CHECKING:
    from judgesdk.scorers.auto import NOT_SUMMARIES, fused_unavailable, summary_rows
    from judgesdk.scorers.common import ScorerOptions, criteria_block, template_values
    from judgesdk.scorers.decision import question_for
    from judgesdk.scorers.fused import LEVELS, choose, fits_for
    from judgesdk.scorers.likert import DEFAULT_TEMPLATE
    from judgesdk.scorers.method_options import check_method_options, problem
    from judgesdk.scorers.multi import combine, demonstration_template, score_coarse_grained, score_fine_grained, score_with_rationale
    from judgesdk.scorers.pairwise import SELECTIONS, STRATEGIES, Comparison, Ranking, compare, rank
    from judgesdk.scorers.postprocess import bin_scores, filter_redundant
    from judgesdk.scorers.registry import is_method, method_names, method_spec, register, scorer_for, unregister
    from judgesdk.scorers.spec import MethodSpec, ScoreFn

__all__ = [
    "bin_scores",
    "check_method_options",
    "choose",
    "combine",
    "compare",
    "Comparison",
    "criteria_block",
    "DEFAULT_TEMPLATE",
    "demonstration_template",
    "filter_redundant",
    "fits_for",
    "fused_unavailable",
    "is_method",
    "LEVELS",
    "method_names",
    "method_spec",
    "MethodSpec",
    "NOT_SUMMARIES",
    "problem",
    "question_for",
    "rank",
    "Ranking",
    "register",
    "score_coarse_grained",
    "score_fine_grained",
    "score_with_rationale",
    "ScoreFn",
    "scorer_for",
    "ScorerOptions",
    "SELECTIONS",
    "STRATEGIES",
    "summary_rows",
    "template_values",
    "unregister",
]

__getattr__, __dir__ = _lazy(
    __name__,
    {
        **dict.fromkeys(("NOT_SUMMARIES", "fused_unavailable", "summary_rows",), "judgesdk.scorers.auto"),
        **dict.fromkeys(("ScorerOptions", "criteria_block", "template_values",), "judgesdk.scorers.common"),
        "question_for": "judgesdk.scorers.decision",
        **dict.fromkeys(("LEVELS", "choose", "fits_for",), "judgesdk.scorers.fused"),
        "DEFAULT_TEMPLATE": "judgesdk.scorers.likert",
        **dict.fromkeys(("check_method_options", "problem",), "judgesdk.scorers.method_options"),
        **dict.fromkeys(("combine", "demonstration_template", "score_coarse_grained", "score_fine_grained", "score_with_rationale",), "judgesdk.scorers.multi"),
        **dict.fromkeys(("Comparison", "Ranking", "SELECTIONS", "STRATEGIES", "compare", "rank",), "judgesdk.scorers.pairwise"),
        **dict.fromkeys(("bin_scores", "filter_redundant",), "judgesdk.scorers.postprocess"),
        **dict.fromkeys(("is_method", "method_names", "method_spec", "register", "scorer_for", "unregister",), "judgesdk.scorers.registry"),
        **dict.fromkeys(("MethodSpec", "ScoreFn",), "judgesdk.scorers.spec"),
    },
    globals(),
)
