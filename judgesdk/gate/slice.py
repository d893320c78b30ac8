"""The human slice behind the corrected gates: drawing it, reading its labels, joining them to a run, sizing it.

* :func:`draw_slice`: the ids to label, a seeded random sample of a run's item ids. The ids are sorted
  before a seeded permutation is taken, so the draw depends only on the set of ids and the seed (not on
  the order a resumed run wrote them), and the first ``n`` of a larger draw with the same seed are the
  smaller draw: label a pilot of 30, then extend it to 80 without throwing the pilot away.
* :func:`read_labels`: a labels JSONL, one ``{"id": ..., "label": number}`` per line (what
  ``judgesdk label-slice`` writes, with the labels filled in).
* :func:`join_slice`: labels paired with a run's judge scores; labels for ids the run does not have, or
  too few labels, are an :class:`~judgesdk.core.errors.InputError` saying what to fix.
* :func:`plan_labels`: "how many human labels for a +-delta interval", from a pilot slice, with the
  PPI++ variance formula of :mod:`judgesdk.stats.ppi` (and the human-only count beside it).

A corrected estimate is only as good as the slice is random: label the items the planner drew, all of
them, rather than the easy ones.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np
from pydantic import BaseModel
from scipy import stats

from judgesdk.core import InputError
from judgesdk.records import HumanLabels

__all__ = ["LabelPlan", "Slice", "draw_slice", "join_slice", "plan_labels"]


def draw_slice(ids: Iterable[str], n: int, seed: int = 0) -> list[str]:
    """``n`` distinct ids drawn at random (seeded) from ``ids``, in draw order (a prefix of a larger draw).

    ``seed``: the generator's seed; the same ids (in any order, repeats ignored) and seed draw the same slice.
    Returns the ids as strings; an :class:`InputError` when ``n`` is below 1 or above the number of distinct ids."""
    pool = sorted({str(i) for i in ids})
    if n < 1:
        raise InputError(f"the slice size must be at least 1, got {n}")
    if n > len(pool):
        raise InputError(f"cannot draw {n} items to label from a run of {len(pool)} items: ask for at most {len(pool)}")
    order = np.random.default_rng(seed).permutation(len(pool))[:n]
    return [pool[i] for i in order]


class Slice(BaseModel):
    """Labels joined to a run's judge scores: the labelled items (human and judge), and the judge on the rest."""

    ids: list[str]  # labelled items with a judge score, in the labels file's order
    human: list[float]
    judge: list[float]
    judge_unlabelled: list[float]  # scored items of the run that are not in the slice
    unscored: list[str]  # labelled items the judge gave no score (left out)


def join_slice(labels: HumanLabels, scores: Mapping[str, float], expected: Sequence[str], *, min_labels: int) -> Slice:
    """Pair ``labels`` with the run's judge ``scores`` (id -> score; items without a score absent).

    ``expected`` holds every item id of the run. InputError when labels name ids the run does not have or
    when the file holds fewer than ``min_labels`` labels. Labelled items without a judge score are left
    out (listed in ``unscored``); the caller decides what too few remaining labels mean.
    """
    known = set(expected) | set(scores)
    foreign = [i for i in labels.values if i not in known]
    if foreign:
        shown = ", ".join(repr(i) for i in foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        raise InputError(
            f"{labels.path}: {len(foreign)} labelled id(s) are not items of this run: {shown}; label items drawn from "
            "this run's results (judgesdk label-slice --results FILE --n N), with the ids as they appear there"
        )
    if len(labels.values) < min_labels:
        raise InputError(
            f"{labels.path}: {len(labels.values)} labels, but the gate needs at least {min_labels} (min_labels) for its "
            "normal-approximation interval: label more items of the drawn slice"
        )
    ids = [i for i in labels.values if i in scores]
    chosen = set(labels.values)
    return Slice(
        ids=ids,
        human=[labels.values[i] for i in ids],
        judge=[float(scores[i]) for i in ids],
        judge_unlabelled=[float(v) for i, v in scores.items() if i not in chosen],
        unscored=[i for i in labels.values if i not in scores],
    )


class LabelPlan(BaseModel):
    """How many human labels a +-``half_width`` interval needs, with the judge (PPI++) and without it."""

    half_width: float
    confidence: float
    n_total: int  # scored items in the run
    n_pilot: int
    sd_human: float
    sd_judge: float
    correlation: float  # judge vs human on the pilot
    n_ppi: int | None  # None: not reachable even by labelling every item
    lam: float | None  # the tuned lambda at n_ppi
    n_human_only: int  # may exceed n_total (then not reachable)


def plan_labels(
    human: Sequence[float],
    judge_labelled: Sequence[float],
    judge_all: Sequence[float],
    half_width: float,
    *,
    confidence: float = 0.95,
    clip: bool = True,
) -> LabelPlan:
    """Labels needed for a PPI++ interval of half-width at most ``half_width``, from a pilot slice.

    ``human`` and ``judge_labelled`` are the pilot's labels and the judge's scores on them; ``judge_all``
    the judge's scores on every scored item of the run (pilot included). The moments come from the pilot
    (sd of the labels, judge-human correlation, ddof 1) and the whole run (sd of the judge); for each
    candidate n the PPI++ variance ``lam^2 var(f)/(N-n) + var(y - lam f)/n`` is evaluated at its tuned lam
    (:func:`judgesdk.stats.ppi.ppi_lambda`'s formula) and the smallest n whose ``t * se <= half_width`` is
    returned (t: Student's quantile with n - 1 degrees of freedom, as the gate's default interval uses);
    the human-only count is the smallest n with ``t * sd_y / sqrt(n) <= half_width``. The pilot's estimates
    are noisy, and the gate's interval also counts the tuned lambda's noise (jackknife) and, on labels piled
    at one end of the scale, reaches further toward the other (Hall's skewness correction): treat the answer
    as a guide, and re-plan from the bigger slice.

    ``confidence``: the interval's level (0.95: a 95% interval); ``clip``: keep the tuned lambda within [0, 1],
    as the gate's PPI++ does by default. Returns the :class:`LabelPlan`, whose ``n_ppi`` is None when no n up to
    the whole run reaches the half-width; an :class:`InputError` for a non-positive half-width, a pilot of fewer
    than 5 labels, or labels and scores of different lengths.
    """
    y = np.asarray(human, dtype=float)
    f = np.asarray(judge_labelled, dtype=float)
    fa = np.asarray(judge_all, dtype=float)
    if not half_width > 0:
        raise InputError(f"the interval half-width must be positive, got {half_width}")
    if len(y) != len(f):
        raise InputError(f"{len(y)} pilot labels but {len(f)} judge scores for them")
    if len(y) < 5:
        raise InputError(f"a pilot slice of {len(y)} labels says nothing about the variances: label at least 5 (better 20-30)")
    sd_y = float(np.std(y, ddof=1))
    sd_f = float(np.std(fa, ddof=1)) if len(fa) > 1 else 0.0
    sd_fp = float(np.std(f, ddof=1))
    rho = float(np.corrcoef(y, f)[0, 1]) if sd_y > 0 and sd_fp > 0 else 0.0
    cov = rho * sd_y * sd_f
    n_total = len(fa)
    tail = 1 - (1 - confidence) / 2
    n_human = max(2, math.ceil((float(stats.norm.ppf(tail)) * sd_y / half_width) ** 2))  # z's answer, a lower bound
    while float(stats.t.ppf(tail, n_human - 1)) * sd_y / math.sqrt(n_human) > half_width:
        n_human += 1
    n = np.arange(2, n_total + 1, dtype=float)
    q = stats.t.ppf(tail, n - 1)
    rest = n_total - n
    with np.errstate(divide="ignore", invalid="ignore"):
        lam = np.where(rest > 0, cov / ((1 + n / np.maximum(rest, 1)) * max(sd_f**2, 1e-300)), 0.0)
    if clip:
        lam = np.clip(lam, 0.0, 1.0)
    if sd_f == 0:
        lam = np.zeros_like(n)
    var = np.where(rest > 0, lam**2 * sd_f**2 / np.maximum(rest, 1), 0.0) + np.maximum(sd_y**2 - 2 * lam * cov + lam**2 * sd_f**2, 0.0) / n
    ok = np.nonzero(q * np.sqrt(var) <= half_width)[0]
    first = int(ok[0]) if len(ok) else None
    return LabelPlan(
        half_width=half_width, confidence=confidence, n_total=n_total, n_pilot=len(y), sd_human=sd_y, sd_judge=sd_f,
        correlation=rho, n_ppi=None if first is None else int(n[first]), lam=None if first is None else float(lam[first]),
        n_human_only=n_human,
    )  # fmt: skip
