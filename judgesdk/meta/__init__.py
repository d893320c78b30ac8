"""Floor 9, analysis (results in, no judging but bench): measure judges against human ratings the way the
papers do, and flag when not to trust them.

=================  ==============================================================================
module             what
=================  ==============================================================================
``items``          :class:`ScoredItem` (one human score + one prediction), :class:`PairwiseJudgement`
``datasets``       benchmark loaders (normalized JSONL, HANNA CSV), :func:`shared_data_dir`
``correlation``    levels (000 App. B), methods, conventions of the papers' scripts
``bootstrap``      bootstrap CIs over documents, paired permutation test
``preferences``    correct preferences #CP (001 §4.2.1, App. E)
``reliability``    P_i, meta-correlation M (001 eq. 1-3), R_i (eq. 4), positional bias (004 §3.5),
                   per-item "needs human review" flags
``report``         judge report (AlpacaEval-style evaluator analysis) and plots (001 Figs. 1, 3)
``readers``        prediction and head-to-head verdict files
``evaluation``     a full run over prediction files (what ``judgesdk meta-eval`` prints)
``card``           a judge card: evaluate's figures, the human ceiling, bias and cost (``judgesdk card``)
``card_measures``  the card's human ceiling, parse and coverage, self-consistency
=================  ==============================================================================

Also here: ``calibration.py`` (a monotone map of judge scores onto the human scale, and its file), ``diff.py`` (two
results files compared item by item), ``bench.py`` (a judge run over a benchmark, then meta-evaluated),
``card_files.py`` (a card's JSON, Markdown and HTML files), ``card_fits.py`` (which fused fit produced a card's
scores), ``naturalize.py`` (benchmark text as users write it: untokenized, cased as in the source).

May import: :mod:`judgesdk.core`, :mod:`judgesdk.stats`, :mod:`judgesdk.provider`, :mod:`judgesdk.prompting`,
:mod:`judgesdk.estimation`, :mod:`judgesdk.records`, :mod:`judgesdk.scorers`, :mod:`judgesdk.judging` (``bench``
judges).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from judgesdk.core import lazy as _lazy

if TYPE_CHECKING:
    from judgesdk.meta.bench import evaluate, item_of, predictions_path, run_criterion, select, shortest
    from judgesdk.meta.bootstrap import BootstrapCI, PermutationTest, bootstrap_ci, permutation_test
    from judgesdk.meta.calibration import Calibration, default_path, fit_calibration
    from judgesdk.meta.card import Card, JudgeIdentity, LabelledSet, build_card, criterion_card
    from judgesdk.meta.card_files import write_card
    from judgesdk.meta.correlation import (
        CONVENTIONS,
        LEVEL_ALIASES,
        LEVEL_DEFINITIONS,
        LEVELS,
        METHODS,
        Convention,
        Correlation,
        GroupCorrelation,
        LevelCorrelation,
        correlate,
        correlation_table,
        describe_level,
        group_correlations,
        level_correlation,
        resolve_level,
    )
    from judgesdk.meta.datasets import (
        DATASETS,
        HumanRecord,
        dimensions,
        human_scores,
        load_dataset,
        load_hanna_csv,
        load_jsonl,
        require_dimension,
        shared_data_dir,
    )
    from judgesdk.meta.diff import diff_files, diff_rows
    from judgesdk.meta.evaluation import MetaEvalResult, Prediction, load_pairwise, load_predictions, meta_evaluate, read_pairwise, scale_for
    from judgesdk.meta.items import KEEP, JoinReport, PairwiseJudgement, ScoredItem, check_keep, join, system_means
    from judgesdk.meta.naturalize import natural
    from judgesdk.meta.preferences import (
        CHALLENGE_ORDERS,
        CorrectPreferences,
        PairOutcome,
        all_pairs,
        average_quality,
        challenge_pairs,
        check_challenge_order,
        correct_preferences,
        correct_preferences_h2h,
    )
    from judgesdk.meta.readers import check_parse_mode
    from judgesdk.meta.reliability import (
        Agreement,
        ItemSignals,
        MetaCorrelation,
        PositionalBias,
        ReviewFlag,
        ReviewPolicy,
        Spread,
        SystemCorrelations,
        meta_correlation,
        method_agreement,
        per_system_correlations,
        positional_bias,
        review_flags,
    )
    from judgesdk.meta.report import (
        JudgeReport,
        LengthBias,
        MissingDependencyError,
        RepeatVariance,
        Throughput,
        judge_report,
        length_bias,
        plot_quality_vs_alignment,
        plot_system_spread,
        repeat_variance,
        require_matplotlib,
        throughput,
        write_report,
    )
    from judgesdk.provider import CostModel

__all__ = [
    "Agreement",
    "all_pairs",
    "average_quality",
    "bootstrap_ci",
    "BootstrapCI",
    "build_card",
    "Calibration",
    "Card",
    "CHALLENGE_ORDERS",
    "challenge_pairs",
    "check_challenge_order",
    "check_keep",
    "check_parse_mode",
    "Convention",
    "CONVENTIONS",
    "correct_preferences",
    "correct_preferences_h2h",
    "CorrectPreferences",
    "correlate",
    "Correlation",
    "correlation_table",
    "CostModel",
    "criterion_card",
    "DATASETS",
    "default_path",
    "describe_level",
    "diff_files",
    "diff_rows",
    "dimensions",
    "evaluate",
    "fit_calibration",
    "group_correlations",
    "GroupCorrelation",
    "human_scores",
    "HumanRecord",
    "item_of",
    "ItemSignals",
    "join",
    "JoinReport",
    "judge_report",
    "JudgeIdentity",
    "JudgeReport",
    "KEEP",
    "LabelledSet",
    "length_bias",
    "LengthBias",
    "LEVEL_ALIASES",
    "level_correlation",
    "LEVEL_DEFINITIONS",
    "LevelCorrelation",
    "LEVELS",
    "load_dataset",
    "load_hanna_csv",
    "load_jsonl",
    "load_pairwise",
    "load_predictions",
    "meta_correlation",
    "meta_evaluate",
    "MetaCorrelation",
    "MetaEvalResult",
    "method_agreement",
    "METHODS",
    "MissingDependencyError",
    "natural",
    "PairOutcome",
    "PairwiseJudgement",
    "per_system_correlations",
    "permutation_test",
    "PermutationTest",
    "plot_quality_vs_alignment",
    "plot_system_spread",
    "positional_bias",
    "PositionalBias",
    "Prediction",
    "predictions_path",
    "read_pairwise",
    "repeat_variance",
    "RepeatVariance",
    "require_dimension",
    "require_matplotlib",
    "resolve_level",
    "review_flags",
    "ReviewFlag",
    "ReviewPolicy",
    "run_criterion",
    "scale_for",
    "ScoredItem",
    "select",
    "shared_data_dir",
    "shortest",
    "Spread",
    "system_means",
    "SystemCorrelations",
    "Throughput",
    "throughput",
    "write_card",
    "write_report",
]

__getattr__, __dir__ = _lazy(
    __name__,
    {
        **dict.fromkeys(("evaluate", "item_of", "predictions_path", "run_criterion", "select", "shortest",), "judgesdk.meta.bench"),
        **dict.fromkeys(("BootstrapCI", "PermutationTest", "bootstrap_ci", "permutation_test",), "judgesdk.meta.bootstrap"),
        **dict.fromkeys(("Calibration", "default_path", "fit_calibration",), "judgesdk.meta.calibration"),
        **dict.fromkeys(("Card", "JudgeIdentity", "LabelledSet", "build_card", "criterion_card",), "judgesdk.meta.card"),
        "write_card": "judgesdk.meta.card_files",
        **dict.fromkeys(("CONVENTIONS", "Convention", "Correlation", "GroupCorrelation", "LEVELS", "LEVEL_ALIASES", "LEVEL_DEFINITIONS", "LevelCorrelation", "METHODS", "correlate", "correlation_table", "describe_level", "group_correlations", "level_correlation", "resolve_level",), "judgesdk.meta.correlation"),
        **dict.fromkeys(("DATASETS", "HumanRecord", "dimensions", "human_scores", "load_dataset", "load_hanna_csv", "load_jsonl", "require_dimension", "shared_data_dir",), "judgesdk.meta.datasets"),
        **dict.fromkeys(("diff_files", "diff_rows",), "judgesdk.meta.diff"),
        **dict.fromkeys(("MetaEvalResult", "Prediction", "load_pairwise", "load_predictions", "meta_evaluate", "read_pairwise", "scale_for",), "judgesdk.meta.evaluation"),
        **dict.fromkeys(("JoinReport", "KEEP", "PairwiseJudgement", "ScoredItem", "check_keep", "join", "system_means",), "judgesdk.meta.items"),
        "natural": "judgesdk.meta.naturalize",
        **dict.fromkeys(("CHALLENGE_ORDERS", "CorrectPreferences", "PairOutcome", "all_pairs", "average_quality", "challenge_pairs", "check_challenge_order", "correct_preferences", "correct_preferences_h2h",), "judgesdk.meta.preferences"),
        "check_parse_mode": "judgesdk.meta.readers",
        **dict.fromkeys(("Agreement", "ItemSignals", "MetaCorrelation", "PositionalBias", "ReviewFlag", "ReviewPolicy", "Spread", "SystemCorrelations", "meta_correlation", "method_agreement", "per_system_correlations", "positional_bias", "review_flags",), "judgesdk.meta.reliability"),
        **dict.fromkeys(("JudgeReport", "LengthBias", "MissingDependencyError", "RepeatVariance", "Throughput", "judge_report", "length_bias", "plot_quality_vs_alignment", "plot_system_spread", "repeat_variance", "require_matplotlib", "throughput", "write_report",), "judgesdk.meta.report"),
        "CostModel": "judgesdk.provider",
    },
    globals(),
)
