"""Floor 6. The fused local judge: signals a small model is good at (:mod:`.signals`, :mod:`.text`), a fitted map to
the human scale (:mod:`.model`), and the nested cross-validation that fits it (:mod:`.fit`).

The fit files (``data/``) are versioned data with their provenance; the scorer that judges with them is
:mod:`judgesdk.scorers.fused`.

Its modules:

* ``signals.py``: likelihoods and yes/no probabilities from a small model, measured once per output;
  ``text.py``: cheap, model-free evidence (overlap, novelty, length, repetition);
* ``overlap.py``: the overlap rung: model-free overlap signals with signs fixed in advance, their measured
  per-shape figures (``data/overlap_rungs.json``), the rule for when one may answer where no fit holds, and the
  measured figures of the prompted fallback (``data/fallbacks.json``: a method at chance is never a fallback);
* ``domains.py``: the tasks a fit is made for and the envelope check that an item is one of them; ``priors.py``:
  what each domain's fit may read and the sign each signal may take, fixed before fitting;
* ``model.py``: a fitted judge (ridge per criterion, then a monotone map) and its versioned file;
  ``levels.py``: its prediction as a probability per level of the scale, whose expected level is the score;
* ``fit.py``: nested, document-level cross-validation; ``train.py``: a fit file from signals and labels;
  ``refitting.py``: a refit on a user's own labelled outputs (``judgesdk calibrate --fused``).

May import: :mod:`judgesdk.core`, :mod:`judgesdk.stats`, :mod:`judgesdk.provider`, :mod:`judgesdk.prompting`,
:mod:`judgesdk.estimation`, :mod:`judgesdk.records`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from judgesdk.core import lazy as _lazy

if TYPE_CHECKING:
    from judgesdk.fused.domains import SHAPE, envelope, shape
    from judgesdk.fused.fit import CriterionFit, fit_criterion, group_bootstrap, group_codes, mean_group_spearman, system_kendall
    from judgesdk.fused.levels import level_probabilities, levels_with_mean
    from judgesdk.fused.model import (
        FORMAT,
        CriterionModel,
        Declined,
        FusedModelFile,
        ModelIdentity,
        bundled,
        bundled_for,
        bundled_labels,
        file_sha256,
        load,
        model_sha256,
        save,
    )
    from judgesdk.fused.overlap import (
        OVERLAP_SIGNS,
        REFERENCE_OVERLAP_SIGNALS,
        RUNG_SIGNALS,
        SOURCE_OVERLAP_SIGNALS,
        Rung,
        at_chance,
        decide,
        figure,
        item_shape,
        ladder_label,
        novel_share,
        overlap_signals,
        sentences,
        to_scale,
    )
    from judgesdk.fused.refitting import refit
    from judgesdk.fused.signals import (
        JOIN,
        QUESTIONS,
        REFERENCE_LIKELIHOOD_FEATURES,
        UNCONDITIONAL_FEATURES,
        WITHOUT_CONTEXT_FEATURES,
        Evidence,
        extract,
        features,
        templates,
    )
    from judgesdk.fused.text import text_features
    from judgesdk.fused.train import fit_file, readable, signal_table, signs_for

__all__ = [
    "bundled",
    "bundled_for",
    "bundled_labels",
    "CriterionFit",
    "CriterionModel",
    "Declined",
    "envelope",
    "Evidence",
    "extract",
    "features",
    "file_sha256",
    "fit_criterion",
    "fit_file",
    "FORMAT",
    "FusedModelFile",
    "group_bootstrap",
    "group_codes",
    "JOIN",
    "level_probabilities",
    "levels_with_mean",
    "load",
    "mean_group_spearman",
    "model_sha256",
    "ModelIdentity",
    "OVERLAP_SIGNS",
    "overlap_signals",
    "QUESTIONS",
    "at_chance",
    "decide",
    "figure",
    "item_shape",
    "ladder_label",
    "novel_share",
    "readable",
    "REFERENCE_LIKELIHOOD_FEATURES",
    "REFERENCE_OVERLAP_SIGNALS",
    "refit",
    "Rung",
    "RUNG_SIGNALS",
    "save",
    "SHAPE",
    "shape",
    "signal_table",
    "sentences",
    "signs_for",
    "SOURCE_OVERLAP_SIGNALS",
    "system_kendall",
    "templates",
    "text_features",
    "to_scale",
    "UNCONDITIONAL_FEATURES",
    "WITHOUT_CONTEXT_FEATURES",
]

__getattr__, __dir__ = _lazy(
    __name__,
    {
        **dict.fromkeys(("SHAPE", "envelope", "shape",), "judgesdk.fused.domains"),
        **dict.fromkeys(("CriterionFit", "fit_criterion", "group_bootstrap", "group_codes", "mean_group_spearman", "system_kendall",), "judgesdk.fused.fit"),
        "level_probabilities": "judgesdk.fused.levels",
        "levels_with_mean": "judgesdk.fused.levels",
        **dict.fromkeys(("CriterionModel", "Declined", "FORMAT", "FusedModelFile", "ModelIdentity", "bundled", "bundled_for", "bundled_labels", "file_sha256", "load", "model_sha256", "save",), "judgesdk.fused.model"),
        **dict.fromkeys(
            ("OVERLAP_SIGNS", "REFERENCE_OVERLAP_SIGNALS", "RUNG_SIGNALS", "Rung", "SOURCE_OVERLAP_SIGNALS", "at_chance", "decide", "figure",
             "item_shape", "ladder_label", "novel_share", "overlap_signals", "sentences", "to_scale",),
            "judgesdk.fused.overlap",
        ),
        "refit": "judgesdk.fused.refitting",
        **dict.fromkeys(("Evidence", "JOIN", "QUESTIONS", "REFERENCE_LIKELIHOOD_FEATURES", "UNCONDITIONAL_FEATURES", "WITHOUT_CONTEXT_FEATURES", "extract", "features", "templates",), "judgesdk.fused.signals"),
        "text_features": "judgesdk.fused.text",
        **dict.fromkeys(("fit_file", "readable", "signal_table", "signs_for",), "judgesdk.fused.train"),
    },
    globals(),
)
