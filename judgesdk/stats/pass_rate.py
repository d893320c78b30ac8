"""A pass rate corrected from a small human slice: Rogan–Gladen, with its delta-method interval or a refusal.

Plain functions on arrays; the gate kind ``corrected_pass_rate`` (:mod:`judgesdk.gate.checks`) calls it. The
mean's correction (PPI++) is in :mod:`judgesdk.stats.ppi`; both report :class:`~judgesdk.stats.intervals.Interval`.

**Rogan–Gladen pass rate** (Rogan & Gladen 1978). The judge "passes" an item when its score is at or
above a threshold; on the slice its sensitivity ``Se`` (share of human passes it passes) and specificity
``Sp`` (share of human fails it fails) are estimated; the apparent pass rate ``p`` is the judge's on the
unlabelled items (independent of the slice)::

    pi = (p + Sp - 1) / (Se + Sp - 1)                          # clipped to [0, 1]

CI: **delta method**, normal interval, clipped to [0, 1]::

    var(pi) = [p(1-p)/N + pi^2 * Se~(1-Se~)/(n_pos+4) + (1-pi)^2 * Sp~(1-Sp~)/(n_neg+4)] / J^2

with ``J = Se + Sp - 1`` (Youden's index) and ``Se~ = (x+2)/(n_pos+4)``, ``Sp~`` likewise
(Agresti–Coull-style plug-ins for the *variances* only, so that a slice where the judge happened to be
perfect does not claim zero uncertainty about Se or Sp; the point estimate uses the raw shares).

It **refuses** (a :class:`PassRateRefusal` with the reason, which the gate reports as INCONCLUSIVE) when
the slice has no human passes or no human fails (Se or Sp undefined), when ``J < min_youden`` (default
0.2), or when the normal interval of ``J`` reaches 0. Why 0.2: the corrected rate's standard error is at
least ``1/J`` times the apparent rate's, so below 0.2 it is more than five times as wide and the ratio
rests on a denominator the slice barely separates from 0, where the delta method stops being a fair
description; a judge whose pass/fail decisions are that close to a coin flip should be fixed (a better
threshold or calibration) rather than corrected.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from pydantic import BaseModel, ConfigDict

from judgesdk.stats.intervals import Interval, normal_quantile, proportion_interval

__all__ = ["DEFAULT_MIN_YOUDEN", "PassRateRefusal", "RoganGladen", "rogan_gladen"]

DEFAULT_MIN_YOUDEN = 0.2


class RoganGladen(BaseModel):
    """A Rogan–Gladen corrected pass rate with the judge's sensitivity and specificity on the slice."""

    model_config = ConfigDict(frozen=True)

    corrected: Interval
    human_only: Interval  # the slice's human pass rate (Wilson interval)
    judge_only: Interval  # the judge's pass rate over every scored item, uncorrected (Wilson interval)
    confidence: float
    apparent: float  # judge pass rate on the unlabelled items, the p of the formula
    sensitivity: float
    specificity: float
    youden: float  # Se + Sp - 1
    n_pos: int  # human passes in the slice
    n_neg: int  # human fails in the slice
    n_unlabelled: int
    clipped: bool  # the raw estimate fell outside [0, 1]


class PassRateRefusal(BaseModel):
    """Rogan–Gladen declined: the judge's pass/fail carries too little signal on the slice (or it cannot tell)."""

    model_config = ConfigDict(frozen=True)

    reason: str
    sensitivity: float | None
    specificity: float | None
    youden: float | None
    n_pos: int
    n_neg: int
    human_only: Interval
    judge_only: Interval


def rogan_gladen(
    human_pass: Sequence[bool] | np.ndarray,
    judge_pass_labelled: Sequence[bool] | np.ndarray,
    judge_pass_unlabelled: Sequence[bool] | np.ndarray,
    *,
    confidence: float = 0.95,
    min_youden: float = DEFAULT_MIN_YOUDEN,
) -> RoganGladen | PassRateRefusal:
    """The Rogan–Gladen corrected human pass rate, or a refusal saying why (rules in the module docstring).

    ``human_pass[i]`` and ``judge_pass_labelled[i]`` are the human's and the judge's pass/fail on the same
    labelled item; ``judge_pass_unlabelled`` the judge's pass/fail on the other items of the run. ``confidence``:
    the intervals' two-sided level; ``min_youden``: the smallest sensitivity + specificity - 1 the judge must reach
    on the labelled items for a correction to be made (below it, a refusal). ValueError on unpaired or no labels.
    """
    h = np.asarray(human_pass, dtype=bool).reshape(-1)
    g = np.asarray(judge_pass_labelled, dtype=bool).reshape(-1)
    gu = np.asarray(judge_pass_unlabelled, dtype=bool).reshape(-1)
    if len(h) != len(g):
        raise ValueError(f"{len(h)} human labels but {len(g)} judge decisions for them: pair them by item")
    if len(h) == 0:
        raise ValueError("no labelled items")
    z = normal_quantile(confidence)
    n_pos, n_neg = int(h.sum()), int((~h).sum())
    human_only = proportion_interval(n_pos, len(h), confidence)
    everything = np.concatenate([g, gu])
    judge_only = proportion_interval(int(everything.sum()), len(everything), confidence)
    se_hat = float(g[h].mean()) if n_pos else None
    sp_hat = float((~g[~h]).mean()) if n_neg else None

    def refuse(reason: str, youden: float | None = None) -> PassRateRefusal:
        return PassRateRefusal(
            reason=reason, sensitivity=se_hat, specificity=sp_hat, youden=youden, n_pos=n_pos, n_neg=n_neg,
            human_only=human_only, judge_only=judge_only,
        )  # fmt: skip

    if se_hat is None or sp_hat is None:
        which = "passes" if se_hat is None else "fails"
        return refuse(
            f"the slice has no human {which} ({n_pos} pass, {n_neg} fail), so the judge's "
            f"{'sensitivity' if se_hat is None else 'specificity'} cannot be estimated; label more items"
        )
    youden = se_hat + sp_hat - 1
    se_t, sp_t = (h & g).sum() + 2, (~h & ~g).sum() + 2
    se_tilde, sp_tilde = se_t / (n_pos + 4), sp_t / (n_neg + 4)
    var_se, var_sp = se_tilde * (1 - se_tilde) / (n_pos + 4), sp_tilde * (1 - sp_tilde) / (n_neg + 4)
    if youden < min_youden:
        return refuse(
            f"the judge's sensitivity {se_hat:.3f} + specificity {sp_hat:.3f} - 1 = {youden:.3f} is below "
            f"{min_youden:g}: its pass/fail is too close to chance on the slice for a correction to mean anything",
            youden,
        )
    youden_low = youden - z * math.sqrt(var_se + var_sp)
    if youden_low <= 0:
        return refuse(
            f"sensitivity + specificity - 1 = {youden:.3f}, but its {confidence:.0%} interval reaches "
            f"{youden_low:.3f} <= 0 ({n_pos} human passes, {n_neg} fails): the slice cannot tell the judge from chance; "
            "label more items",
            youden,
        )
    if len(gu) == 0:  # everything is labelled: the correction returns the human rate exactly
        apparent, raw = float(g.mean()), human_only.estimate
        corrected = human_only.model_copy(update={"method": "labels only (every item is labelled)"})
    else:
        apparent = float(gu.mean())
        raw = (apparent + sp_hat - 1) / youden
        pi = min(1.0, max(0.0, raw))
        var = (apparent * (1 - apparent) / len(gu) + pi**2 * var_se + (1 - pi) ** 2 * var_sp) / youden**2
        half = z * math.sqrt(var)
        corrected = Interval(
            estimate=pi, low=max(0.0, pi - half), high=min(1.0, pi + half), n=len(h), method="Rogan-Gladen (delta method)"
        )
    return RoganGladen(
        corrected=corrected, human_only=human_only, judge_only=judge_only, confidence=confidence, apparent=apparent,
        sensitivity=se_hat, specificity=sp_hat, youden=youden, n_pos=n_pos, n_neg=n_neg, n_unlabelled=len(gu),
        clipped=raw != corrected.estimate,
    )  # fmt: skip
