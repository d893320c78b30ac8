"""Floor 11. Release gates on judge scores: named checks, one verdict, one exit code, several renderings.

A gate config (``gate.toml``, :class:`GateConfig`) names the judge config, the items to judge (or a
previous run's results), the criteria and the gates. Running it has two steps:

1. :func:`collect` (impure): judge the items (results appended to a JSONL as they finish, so a re-run
   resumes and a budget stop keeps what finished) or read earlier results; load calibrations and the
   baseline. It returns a :class:`GateRun`.
2. :func:`decide` (pure): compute a :class:`Verdict` from the config and the run.

The exit code is a property of the verdict and nothing else, and the text, JUnit XML, Markdown and
JSON outputs are renderings of that same object, so a printed "FAIL" can never exit 0 (and a
"PASS" never exits non-zero). Exit codes:

* 0 every gate passed;
* 1 a quality gate failed (mean, pass rate, CI lower bound, regression, corrected mean or pass rate) and the judge was reliable
  and the run complete;
* 2 inconclusive: a reliability gate (review share, coverage, a judge whose provenance differs from the
  baseline's) or a completeness gate (items left
  without a score, budget stop) failed, or a gate could not be evaluated. This wins over 1 on
  purpose: a quality verdict from an unreliable judge or an incomplete run is not evidence;
* 3 (from the CLI, before any verdict exists) a usage or configuration error.

Thresholds are on the human scale when a criterion names a calibration (:mod:`judgesdk.meta.calibration`):
scores, the per-item threshold, the CI and the baseline comparison all use calibrated scores.

Statistics (seeded, so a verdict is reproducible): the CI gate is a percentile bootstrap of the mean
that resamples items with replacement; the regression gate pairs items by id with the baseline run
and runs a one-sided sign-flip permutation test on the paired differences shifted by the allowed
drop delta (H0: mean change >= -delta); it fails when that is rejected at ``alpha``.
(:mod:`judgesdk.meta.bootstrap` resamples *correlations* over documents, a different statistic, so
the two small resamplers for a mean live in :mod:`judgesdk.stats.resampling`.)

Corrected gates: with human labels for a random slice of the run (``labels`` on a criterion),
``ppi_ci_lower`` holds the lower bound of the PPI++ interval of the mean *human* score to a threshold,
``corrected_pass_rate`` the lower bound of the corrected human pass rate (PPI++ on the pass indicators;
or Rogan–Gladen, refused, so inconclusive, when the judge's sensitivity + specificity is too close to 1),
and ``ppi_regression`` compares this run's corrected mean with the baseline run's, each from its own
slice (``baseline_labels``); formulas in :mod:`judgesdk.stats.ppi` and :mod:`judgesdk.stats.pass_rate`, the slice (drawing, reading, planning
its size) in :mod:`judgesdk.gate.slice`.

One idea per module; this package re-exports the public names, so ``from judgesdk.gate import X``
is the import to use:

* :mod:`judgesdk.gate.gate_config`: the gate file: :class:`CriterionSpec`, one model per gate kind,
  :class:`GateConfig`, :func:`load_gate_config`;
* :mod:`judgesdk.gate.run`: the impure step: :class:`CriterionRun`, :class:`GateRun`,
  :func:`collect`, reading result rows back through :func:`judgesdk.records.read_results`;
* :mod:`judgesdk.stats.resampling`: the seeded resamplers :func:`bootstrap_mean_ci` and :func:`sign_flip_p`;
* :mod:`judgesdk.stats.ppi` and :mod:`judgesdk.stats.pass_rate`: corrected estimates from a human slice:
  :func:`ppi_mean` (PPI++), :func:`rogan_gladen`; their :class:`Interval` from :mod:`judgesdk.stats.intervals`;
* :mod:`judgesdk.gate.slice`: the slice: :func:`draw_slice`, :func:`read_labels`, :func:`join_slice`,
  :func:`plan_labels`;
* :mod:`judgesdk.gate.verdict`: :class:`GateResult`, :class:`Verdict`, :func:`verdict_status`, the
  exit codes;
* :mod:`judgesdk.gate.checks`: the pure step: each gate kind's check, :func:`decide`,
  :func:`evaluate_gates`; the corrected kinds' checks in :mod:`judgesdk.gate.corrected`, every check's
  result built by :mod:`judgesdk.gate.outcome`;
* :mod:`judgesdk.gate.render`: the text, JSON, JUnit XML and Markdown renderings, :func:`write_reports`.

May import: every floor up to :mod:`judgesdk.forecast` and :mod:`judgesdk.jury` (:mod:`judgesdk.judging`,
:mod:`judgesdk.meta`, :mod:`judgesdk.records`, :mod:`judgesdk.stats`...).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from judgesdk.core import lazy as _lazy

if TYPE_CHECKING:
    from judgesdk.gate.checks import decide, evaluate_gates
    from judgesdk.gate.gate_config import (
        CILowerGate,
        CorrectedPassRateGate,
        CoverageGate,
        CriterionSpec,
        Gate,
        GateConfig,
        MeanGate,
        PassRateGate,
        PPICILowerGate,
        PPIRegressionGate,
        ProvenanceGate,
        RegressionGate,
        ReviewGate,
        load_gate_config,
    )
    from judgesdk.gate.render import check_output, render_json, render_junit, render_markdown, render_text, write_output, write_reports
    from judgesdk.gate.run import CriterionRun, GateRun, collect, estimate
    from judgesdk.gate.slice import LabelPlan, Slice, draw_slice, join_slice, plan_labels
    from judgesdk.gate.verdict import EXIT_CODES, GateKind, GateResult, Outcome, Status, Verdict, verdict_status
    from judgesdk.records import HumanLabels, read_labels
    from judgesdk.stats import Interval, PassRateRefusal, PPIMean, RoganGladen, bootstrap_mean_ci, ppi_mean, rogan_gladen, sign_flip_p

__all__ = [
    "bootstrap_mean_ci",
    "check_output",
    "CILowerGate",
    "collect",
    "CorrectedPassRateGate",
    "CoverageGate",
    "CriterionRun",
    "CriterionSpec",
    "decide",
    "draw_slice",
    "estimate",
    "evaluate_gates",
    "EXIT_CODES",
    "Gate",
    "GateConfig",
    "GateKind",
    "GateResult",
    "GateRun",
    "HumanLabels",
    "Interval",
    "join_slice",
    "LabelPlan",
    "load_gate_config",
    "MeanGate",
    "Outcome",
    "PassRateGate",
    "PassRateRefusal",
    "plan_labels",
    "ppi_mean",
    "PPICILowerGate",
    "PPIMean",
    "PPIRegressionGate",
    "ProvenanceGate",
    "read_labels",
    "RegressionGate",
    "render_json",
    "render_junit",
    "render_markdown",
    "render_text",
    "ReviewGate",
    "rogan_gladen",
    "RoganGladen",
    "sign_flip_p",
    "Slice",
    "Status",
    "Verdict",
    "verdict_status",
    "write_output",
    "write_reports",
]

__getattr__, __dir__ = _lazy(
    __name__,
    {
        **dict.fromkeys(("decide", "evaluate_gates",), "judgesdk.gate.checks"),
        **dict.fromkeys(("CILowerGate", "CorrectedPassRateGate", "CoverageGate", "CriterionSpec", "Gate", "GateConfig", "MeanGate", "PPICILowerGate", "PPIRegressionGate", "PassRateGate", "ProvenanceGate", "RegressionGate", "ReviewGate", "load_gate_config",), "judgesdk.gate.gate_config"),
        **dict.fromkeys(("check_output", "render_json", "render_junit", "render_markdown", "render_text", "write_output", "write_reports",), "judgesdk.gate.render"),
        **dict.fromkeys(("CriterionRun", "GateRun", "collect", "estimate",), "judgesdk.gate.run"),
        **dict.fromkeys(("LabelPlan", "Slice", "draw_slice", "join_slice", "plan_labels",), "judgesdk.gate.slice"),
        **dict.fromkeys(("EXIT_CODES", "GateKind", "GateResult", "Outcome", "Status", "Verdict", "verdict_status",), "judgesdk.gate.verdict"),
        **dict.fromkeys(("HumanLabels", "read_labels",), "judgesdk.records"),
        **dict.fromkeys(("Interval", "PPIMean", "PassRateRefusal", "RoganGladen", "bootstrap_mean_ci", "ppi_mean", "rogan_gladen", "sign_flip_p",), "judgesdk.stats"),
    },
    globals(),
)
