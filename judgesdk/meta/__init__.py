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
``evaluate``       a full run over prediction files (what ``judgesdk meta-eval`` prints)
``card``           a judge card: evaluate's figures, the human ceiling, bias and cost (``judgesdk card``)
``card_measures``  the card's human ceiling, parse and coverage, self-consistency
=================  ==============================================================================

Also here: ``calibration`` (a monotone map of judge scores onto the human scale, and its file), ``diff`` (two
results files compared item by item), ``bench`` (a judge run over a benchmark, then meta-evaluated).

May import: :mod:`judgesdk.core`, :mod:`judgesdk.stats`, :mod:`judgesdk.provider`, :mod:`judgesdk.prompting`,
:mod:`judgesdk.estimation`, :mod:`judgesdk.records`, :mod:`judgesdk.scorers`, :mod:`judgesdk.judging` (``bench``
judges).
"""

from judgesdk.meta.bootstrap import BootstrapCI, PermutationTest, bootstrap_ci, permutation_test
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
    shared_data_dir,
)
from judgesdk.meta.evaluate import MetaEvalResult, Prediction, load_pairwise, load_predictions, meta_evaluate, read_pairwise
from judgesdk.meta.items import JoinReport, PairwiseJudgement, ScoredItem, join, system_means
from judgesdk.meta.judge_report import (
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
    throughput,
    write_report,
)
from judgesdk.meta.preferences import (
    CorrectPreferences,
    PairOutcome,
    all_pairs,
    average_quality,
    challenge_pairs,
    correct_preferences,
    correct_preferences_h2h,
)
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
from judgesdk.provider.pricing import CostModel

__all__ = [
    "CONVENTIONS", "DATASETS", "LEVELS", "LEVEL_ALIASES", "LEVEL_DEFINITIONS", "METHODS",
    "Agreement", "BootstrapCI", "Convention", "Correlation", "CorrectPreferences", "CostModel",
    "GroupCorrelation", "HumanRecord", "ItemSignals", "JoinReport", "JudgeReport", "LengthBias",
    "LevelCorrelation", "MetaCorrelation", "MetaEvalResult", "MissingDependencyError", "PairOutcome",
    "PairwiseJudgement", "PermutationTest", "PositionalBias", "Prediction", "RepeatVariance",
    "ReviewFlag", "ReviewPolicy", "ScoredItem", "Spread", "SystemCorrelations", "Throughput",
    "all_pairs", "average_quality", "bootstrap_ci", "challenge_pairs", "correct_preferences", "correct_preferences_h2h",
    "correlate", "correlation_table", "describe_level", "dimensions", "group_correlations",
    "human_scores", "join", "judge_report", "length_bias", "level_correlation", "load_dataset",
    "load_hanna_csv", "load_jsonl", "load_pairwise", "load_predictions", "meta_correlation",
    "meta_evaluate", "method_agreement", "per_system_correlations", "permutation_test",
    "plot_quality_vs_alignment", "plot_system_spread", "positional_bias", "read_pairwise", "repeat_variance",
    "resolve_level", "review_flags", "shared_data_dir", "system_means", "throughput", "write_report",
]
