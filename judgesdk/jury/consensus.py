"""One item's verdict from its judges' results, the judges' weights, and their agreement over a run: the
statistics of a jury, with no judging in them (see :mod:`judgesdk.jury`)."""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel

from judgesdk.core import ConfigError, Criterion, InputError, JudgeResult, Scale
from judgesdk.judging import JuryConfig
from judgesdk.provider import Usage

METHOD = "jury"
MIN_LABELS = 10  # labelled items with every judge's score that fitting weights needs
DEFAULT_SPREAD = 0.25  # of the scale's range: the default disagreement threshold


# -- one item ---------------------------------------------------------------------------------------------


class Weights(BaseModel):
    """Fitted judge weights and how well they did on the labelled items they were fitted on."""

    values: dict[str, float]
    labels: int  # labelled items with every judge's score
    rmse: float  # of the weighted score against the labels
    rmse_mean: float  # of the judges' plain mean, for comparison


def verdict(
    parts: Mapping[str, JudgeResult], criteria: Sequence[Criterion], settings: JuryConfig,
    weights: Weights | None = None, item_id: str | None = None,
) -> JudgeResult:  # fmt: skip
    """The jury's result for one item from each judge's result (the rules: :mod:`judgesdk.jury`).

    ``parts``: each judge's result for the item, keyed by judge name; ``criteria``: the criteria judged (their
    names, joined by ``+``, name the result's criterion); ``settings``: the jury's config (aggregate, min_judges,
    disagreement threshold, by default a quarter of the scale's range); ``weights``: the fitted weights, needed
    only when the aggregate is ``"weights"`` (:class:`~judgesdk.core.errors.ConfigError` without them);
    ``item_id``: the item's id, set on the result. Returns a :class:`JudgeResult` of method ``"jury"`` with the
    judges' results as its ``parts`` and their scores, spread and review flag in ``details``; with fewer scores
    than min_judges it has no score and status ``"error"`` (``"unparsed"`` when no judge errored)."""
    scores = {name: result.score for name, result in parts.items()}
    ok = {name: score for name, score in scores.items() if score is not None}
    threshold = settings.disagreement if settings.disagreement is not None else DEFAULT_SPREAD * _range(criteria)
    spread = max(ok.values()) - min(ok.values()) if len(ok) >= 2 else None
    flagged = spread is not None and spread > threshold + 1e-12
    details: dict[str, Any] = {
        "aggregate": settings.aggregate, "scores": scores, "judges_ok": len(ok), "judges": len(parts),
        "min_judges": settings.needed, "spread": spread, "threshold": threshold, "flagged": flagged,
    }  # fmt: skip
    notes = [f"{name}: {r.score if r.score is not None else r.status} ({r.method})" for name, r in parts.items()]
    if flagged:
        notes.append(f"flagged for review: the judges' scores spread by {spread:.2f}, more than {threshold:.2f}")
    score, problem = None, None
    if len(ok) < settings.needed:
        failed = "; ".join(f"{n}: {r.status}" + (f" ({r.error})" if r.error else "") for n, r in parts.items() if r.score is None)
        problem = f"{len(ok)} of {len(parts)} judges gave a score and the jury needs {settings.needed} (min_judges): {failed}"
    elif settings.aggregate == "mean":
        score = statistics.fmean(ok.values())
    elif settings.aggregate == "median":
        score = float(statistics.median(ok.values()))
    elif settings.aggregate == "majority":
        score, details["majority"] = _majority({n: parts[n] for n in ok}, majority_scale(criteria))
    else:
        score, problem = _weighted(ok, weights)
        details["weights"] = weights.values if weights is not None else None
    if score is None:  # too few scores: a final "unparsed" only when re-asking cannot change it (no judge errored)
        final = len(ok) < settings.needed and all(r.status == "unparsed" for r in parts.values() if r.score is None)
        status = "unparsed" if final else "error"
    else:
        status = "low_coverage" if any(parts[n].status == "low_coverage" for n in ok) else "ok"
    members = list(parts.values())
    return JudgeResult(
        score=score,
        status=status,
        criterion="+".join(c.name for c in criteria),
        method=METHOD,
        method_reason=f"jury of {len(parts)} judges ({', '.join(parts)}): {_AGGREGATES[settings.aggregate]}; "
        f"flagged for review when their scores spread by more than {threshold:.2f}",
        provider=METHOD,
        model="+".join(parts),
        cached=all(r.cached for r in members),
        usage=sum((r.usage for r in members), Usage()),
        latency_s=max((r.latency_s for r in members), default=0.0),
        error=problem,
        notes=notes,
        details=details,
        parts=dict(parts),
        item_id=item_id,
    )


_AGGREGATES = {
    "mean": "the mean of their scores",
    "median": "the median of their scores",
    "majority": "the label most of them gave",
    "weights": "the mean of their scores weighted by weights fitted on human labels",
}


def _range(criteria: Sequence[Criterion]) -> float:
    """The range of a (combined) score: the mean of the criteria's scale ranges."""
    return statistics.fmean(c.scale.high - c.scale.low for c in criteria)


def majority_scale(criteria: Sequence[Criterion]) -> Scale:
    if len({c.scale for c in criteria}) != 1 or len(criteria) != 1:
        raise InputError(
            'aggregate = "majority" votes on one criterion\'s labels: judge one criterion at a time, or use mean or median'
        )
    return criteria[0].scale


def _label(result: JudgeResult, scale: Scale) -> str:
    """A judge's label: its distribution's mode on this scale, else the scale label nearest its score."""
    if result.distribution is not None and result.distribution.scale == scale:
        return result.distribution.mode
    assert result.score is not None
    return min(zip(scale.labels, scale.values), key=lambda lv: (abs(lv[1] - result.score), lv[1]))[0]  # type: ignore[operator]


def _majority(parts: Mapping[str, JudgeResult], scale: Scale) -> tuple[float, dict[str, Any]]:
    labels = {name: _label(result, scale) for name, result in parts.items()}
    votes = {label: list(labels.values()).count(label) for label in dict.fromkeys(labels.values())}
    top = max(votes.values())
    tied = [label for label, count in votes.items() if count == top]
    middle = statistics.median(r.score for r in parts.values() if r.score is not None)  # every part has one (see _label)
    label = min(tied, key=lambda lab: (abs(scale.value_of(lab) - middle), scale.value_of(lab)))
    return scale.value_of(label), {"labels": labels, "label": label, "votes": top, "tie": len(tied) > 1}


def _weighted(ok: Mapping[str, float], weights: Weights | None) -> tuple[float | None, str | None]:
    if weights is None:
        raise ConfigError('aggregate = "weights" needs fitted weights: Jury.fit_weights(items) first')
    total = sum(weights.values[name] for name in ok)
    if total <= 0:
        return None, f"the judges that answered ({', '.join(ok)}) have weight 0 in the weights fitted on {weights.labels} labels"
    return sum(weights.values[name] * score for name, score in ok.items()) / total, None


# -- weights ------------------------------------------------------------------------------------------------


def fit_weights(scores: np.ndarray, human: np.ndarray, names: Sequence[str]) -> Weights:
    """Weights ``w >= 0``, ``sum(w) = 1`` minimising ``||scores @ w - human||^2`` (``scores``: items x judges).

    ``human``: the human label of each item (the rows of ``scores``); ``names``: the judges, in the order of
    ``scores``' columns. Returns :class:`Weights` keyed by judge name, with the fit's RMSE beside the plain
    mean's; raises :class:`~judgesdk.core.errors.InputError` with fewer than 10 labelled items."""
    scores, human = np.asarray(scores, dtype=float), np.asarray(human, dtype=float)
    n, k = scores.shape
    if n < MIN_LABELS:
        raise InputError(f"fitting jury weights needs at least {MIN_LABELS} labelled items scored by every judge, got {n}")
    from scipy.optimize import minimize

    def loss(w: np.ndarray) -> float:
        return float(np.mean((scores @ w - human) ** 2))

    def grad(w: np.ndarray) -> np.ndarray:
        return 2.0 * scores.T @ (scores @ w - human) / n

    # scipy-stubs 1.17 has no minimize overload for SLSQP's dict constraints with jac= and options= (each alone checks)
    found = minimize(  # type: ignore[call-overload]
        loss, np.full(k, 1.0 / k), jac=grad, method="SLSQP", bounds=[(0.0, 1.0)] * k,
        constraints=[{"type": "eq", "fun": lambda w: w.sum() - 1.0, "jac": lambda w: np.ones(k)}],
        options={"ftol": 1e-14, "maxiter": 500},
    )  # fmt: skip
    w = np.clip(found.x, 0.0, None)
    w = w / w.sum()
    return Weights(
        values={name: float(v) for name, v in zip(names, w)},
        labels=n,
        rmse=math.sqrt(loss(w)),
        rmse_mean=math.sqrt(loss(np.full(k, 1.0 / k))),
    )


# -- agreement over a run -------------------------------------------------------------------------------------


class Agreement(BaseModel):
    """Krippendorff's alpha (interval) of a jury's judges over a run's items; None with the reason when undefined."""

    alpha: float | None
    level: str = "interval"
    items: int  # items scored by at least two judges (the pairable ones)
    judges: list[str]
    reason: str | None = None


def interval_alpha(data: np.ndarray) -> float | None:
    """Krippendorff's alpha at the interval level of ``data`` (judges x items, NaN where a judge gave no score);
    None when undefined (no item with two scores, or every score the same). Krippendorff (2011), "Computing
    Krippendorff's alpha-reliability": alpha = 1 - D_o / D_e over the pairable values, with squared differences."""
    data = np.asarray(data, dtype=float)
    observed, values = 0.0, []
    for unit in data.T:
        present = unit[~np.isnan(unit)]
        m = len(present)
        if m < 2:
            continue
        observed += _pair_sum(present) / (m - 1)
        values.append(present)
    if not values:
        return None
    pooled = np.concatenate(values)
    n = len(pooled)
    expected = _pair_sum(pooled) / (n - 1)
    return None if expected <= 0 else float(1.0 - observed / expected)


def _pair_sum(x: np.ndarray) -> float:
    """Sum of (x_i - x_j)^2 over ordered pairs i != j."""
    return float(2.0 * (len(x) * np.sum(x * x) - np.sum(x) ** 2))


def agreement(results: Iterable[JudgeResult | Mapping[str, Any]]) -> Agreement:
    """Krippendorff's alpha of the judges over jury results or their rows (each judge's score is read from
    ``details["scores"]``, so the rows of a resumed run count too)."""
    table = [scores for scores in (judge_scores(r) for r in results) if scores is not None]
    judges = list(dict.fromkeys(name for scores in table for name in scores))
    data = np.array([[finite_or_nan(scores.get(name)) for scores in table] for name in judges], dtype=float).reshape(len(judges), len(table))
    pairable = int((np.sum(~np.isnan(data), axis=0) >= 2).sum()) if table else 0
    alpha = interval_alpha(data) if pairable else None
    reason = None
    if alpha is None:
        reason = "no item was scored by two judges" if not pairable else "every judge gave every item the same score"
    return Agreement(alpha=alpha, items=pairable, judges=judges, reason=reason)


def judge_scores(result: JudgeResult | Mapping[str, Any]) -> Mapping[str, Any] | None:
    details = result.details if isinstance(result, JudgeResult) else result.get("details")
    scores = details.get("scores") if isinstance(details, Mapping) else None
    return scores if isinstance(scores, Mapping) else None


def finite_or_nan(value: Any) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) else math.nan
