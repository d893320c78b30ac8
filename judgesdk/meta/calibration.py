"""Map judge scores onto the human scale, so that a gate's threshold means something in absolute terms.

Why: a judge's raw scores need not sit where human scores sit. 001 §4.2.5 finds reason-then-score
judges scoring far below human annotators while still ranking outputs well, so "mean >= 3.5" on raw
scores says little. A *monotone* map keeps the judge's ranking (its correlations with humans are
unchanged, up to ties) and moves its scores onto the humans' scale, fitted on a small labelled set.

* ``isotonic`` (default): the least-squares non-decreasing fit (:func:`judgesdk.stats.isotonic.fit_isotonic`). Between the fitted knots the map interpolates
  linearly and it is clamped beyond them, as scikit-learn's ``IsotonicRegression`` does, so it is
  continuous and never extrapolates.
* ``linear``: least squares ``human = a + b * judge``, clamped to the labels' range; steadier on very
  small sets, but it assumes the judge's scale is evenly stretched.

The fit is reported on held-out items (seeded k-fold: every item is predicted by a map fitted without
it): Spearman, Pearson and mean absolute error of the calibrated scores against the labels, next to
the raw scores' figures, so one sees what calibration bought. Fitting refuses too few items and
constant labels or scores (:class:`~judgesdk.core.errors.InputError` saying what to fix).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from judgesdk.core import ConfigError, InputError
from judgesdk.stats import fit_isotonic, fit_linear, single_value

__all__ = [
    "Calibration",
    "CalibrationMethod",
    "FitReport",
    "default_path",
    "fit_calibration",
]

CalibrationMethod = Literal["isotonic", "linear"]
FORMAT: Final = "judgesdk.calibration/1"
DEFAULT_MIN_ITEMS = 10


class FitReport(BaseModel):
    """How well the calibrated scores match human labels on items the map was not fitted on."""

    n_items: int
    folds: int
    seed: int
    spearman: float | None  # calibrated held-out predictions vs labels (None: undefined, see notes)
    pearson: float | None
    mae: float
    raw_spearman: float | None  # the uncalibrated judge scores vs labels, for comparison
    raw_pearson: float | None
    raw_mae: float
    notes: list[str] = Field(default_factory=list)


class Calibration(BaseModel):
    """A fitted monotone map judge score -> human scale, saved as JSON and applied by gates."""

    model_config = ConfigDict(frozen=True)

    format: Literal["judgesdk.calibration/1"] = FORMAT
    method: CalibrationMethod
    dimension: str  # the human dimension it maps onto
    criterion: str | None = None  # the judge criterion whose scores it maps, when known
    knots_x: list[float] = Field(default_factory=list)  # isotonic: judge scores...
    knots_y: list[float] = Field(default_factory=list)  # ...and the human-scale values they map to
    slope: float | None = None  # linear
    intercept: float | None = None
    low: float  # the labels' range: calibrated scores are clamped to it
    high: float
    fit: FitReport

    def apply(self, score: float) -> float:
        return float(self.apply_many([score])[0])

    def apply_many(self, scores: Sequence[float] | np.ndarray) -> np.ndarray:
        x = np.asarray(scores, dtype=float)
        if self.method == "isotonic":
            y = np.interp(x, self.knots_x, self.knots_y)
        else:
            y = (self.intercept or 0.0) + (self.slope or 0.0) * x
        return np.clip(y, self.low, self.high)

    def save(self, path: str | Path) -> Path:
        target = Path(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(self.model_dump_json(indent=2) + "\n", encoding="utf-8")
        return target

    @classmethod
    def load(cls, path: str | Path) -> Calibration:
        source = Path(path)
        if not source.is_file():
            raise ConfigError(f"calibration file {source} does not exist: fit one with `judgesdk calibrate ... -o {source}`")
        try:
            return cls.model_validate_json(source.read_text(encoding="utf-8"))
        except ValidationError as exc:
            raise ConfigError(f"{source} is not a judgesdk calibration ({FORMAT}): {exc}") from exc


def default_path(judge_config: str | Path, dimension: str) -> Path:
    """Where a calibration of ``dimension`` lives beside its judge config ``judge_config`` (a path):
    ``local.toml`` -> ``local.<dimension>.calibration.json``."""
    config = Path(judge_config)
    return config.with_name(f"{config.stem}.{dimension}.calibration.json")


# -- fitting ---------------------------------------------------------------------------------------


def _fitted(method: CalibrationMethod, x: np.ndarray, y: np.ndarray, **fields: Any) -> Calibration:
    """A calibration fitted on (x, y), with ``fields`` (dimension, fit report...) filled in."""
    if method == "isotonic":
        knots_x, knots_y = fit_isotonic(x, y)
        return Calibration(method=method, knots_x=knots_x, knots_y=knots_y, low=float(y.min()), high=float(y.max()), **fields)
    slope, intercept = fit_linear(x, y)
    return Calibration(method=method, slope=slope, intercept=intercept, low=float(y.min()), high=float(y.max()), **fields)


def _placeholder_report(n: int) -> FitReport:
    return FitReport(n_items=n, folds=0, seed=0, spearman=None, pearson=None, mae=0.0, raw_spearman=None, raw_pearson=None, raw_mae=0.0)


def _held_out(method: CalibrationMethod, x: np.ndarray, y: np.ndarray, folds: int, seed: int) -> np.ndarray:
    """Each item's calibrated score from a map fitted on the other folds (seeded shuffle)."""
    order = np.random.default_rng(seed).permutation(len(x))
    predictions = np.empty(len(x))
    for fold in np.array_split(order, folds):
        train = np.setdiff1d(order, fold)
        model = _fitted(method, x[train], y[train], dimension="fold", fit=_placeholder_report(len(train)))
        predictions[fold] = model.apply_many(x[fold])
    return predictions


def _agreement(pred: np.ndarray, labels: np.ndarray, what: str, notes: list[str]) -> tuple[float | None, float | None, float]:
    """(Spearman, Pearson, MAE) of ``pred`` against ``labels``; an undefined correlation is None with a note."""
    values = []
    for method in ("spearman", "pearson"):
        value, reason = single_value(pred, labels, method, constant_y_as_zero=False)
        note = f"{what}: correlation undefined ({reason})"
        if value is None and note not in notes:
            notes.append(note)
        values.append(value)
    return values[0], values[1], float(np.abs(pred - labels).mean())


def _check_inputs(x: np.ndarray, y: np.ndarray, min_items: int) -> None:
    if len(x) != len(y):
        raise InputError(f"calibration needs one human label per judge score: got {len(x)} scores and {len(y)} labels")
    if not (np.isfinite(x).all() and np.isfinite(y).all()):
        raise InputError("calibration scores and labels must be finite numbers (drop unscored items first)")
    if len(x) < min_items:
        raise InputError(
            f"calibration needs at least {min_items} labelled items, got {len(x)}: label more items "
            "(or lower the minimum knowingly: a map fitted on a handful of points mostly fits noise)"
        )
    if np.all(y == y[0]):
        raise InputError(f"every human label is {y[0]:g}: a constant label carries no scale to calibrate onto; label items across the scale")
    if np.all(x == x[0]):
        raise InputError(f"every judge score is {x[0]:g}: a judge that never varies cannot be mapped onto a scale; check the judge's results")


def fit_calibration(
    scores: Sequence[float],
    labels: Sequence[float],
    *,
    dimension: str,
    criterion: str | None = None,
    method: CalibrationMethod = "isotonic",
    min_items: int = DEFAULT_MIN_ITEMS,
    folds: int = 5,
    seed: int = 0,
) -> Calibration:
    """Fit a monotone map from judge ``scores`` to human ``labels`` and report it on held-out items.

    ``folds`` is capped at the number of items (leave-one-out then); ``seed`` fixes the fold split.
    ``dimension`` is the human dimension the map lands on and ``criterion`` the judge criterion whose scores it
    maps (when known); ``method`` is ``isotonic`` or ``linear``; fewer than ``min_items`` items (at least 3),
    scores and labels of different lengths, non-finite values or constant labels are an
    :class:`~judgesdk.core.errors.InputError`. Returns the :class:`Calibration` with its held-out report (its
    agreement beside the raw scores', and a note when the raw scores do not rise with the labels).
    """
    if method not in ("isotonic", "linear"):
        raise InputError(f"calibration method must be 'isotonic' or 'linear', got {method!r}")
    if min_items < 3 or folds < 2:
        raise InputError(f"min_items must be at least 3 and folds at least 2, got {min_items} and {folds}")
    x, y = np.asarray(scores, dtype=float), np.asarray(labels, dtype=float)
    _check_inputs(x, y, min_items)
    k = min(folds, len(x))
    notes: list[str] = []
    sp, pe, mae = _agreement(_held_out(method, x, y, k, seed), y, "calibrated held-out scores", notes)
    raw_sp, raw_pe, raw_mae = _agreement(x, y, "raw scores", notes)
    if raw_sp is not None and raw_sp <= 0:
        notes.append(
            f"judge scores do not rise with the human labels (Spearman {raw_sp:.2f}): the judge disagrees with "
            "humans on this dimension and no monotone map can fix that"
        )
    report = FitReport(
        n_items=len(x), folds=k, seed=seed, spearman=sp, pearson=pe, mae=mae,
        raw_spearman=raw_sp, raw_pearson=raw_pe, raw_mae=raw_mae, notes=notes,
    )  # fmt: skip
    return _fitted(method, x, y, dimension=dimension, criterion=criterion, fit=report)


# -- labelled sets from files ------------------------------------------------------------------------
