"""A fitted fused judge: per criterion, a ridge model over named signals, then a monotone map to the human scale.

The file is versioned data (``format``) with its provenance: the data it was fitted on, the folds, the model
file it is valid for (sha256), the signal set and prompt hashes, and the SDK version. A fit is refused for
another model file or for changed signal prompts, because its weights mean nothing there. Prediction is
plain arithmetic (no fitting library at scoring time): standardise, dot product, piecewise-linear
calibration, clip to the scale, and a predictive interval from the cross-validated residuals.
"""

from __future__ import annotations

import functools
import hashlib
import json
import math
from importlib import resources
from pathlib import Path
from typing import Literal

import numpy as np
from pydantic import BaseModel, Field, ValidationError

from judgesdk.core import ConfigError, InputError
from judgesdk.fused.domains import DOMAINS, Envelope
from judgesdk.provider import Provider, identity_of, unwrap

FORMAT = "judgesdk.fused/2"
# Format 1 (the first fits) had no domain, no envelope and one interval per criterion; it is still read (as a
# news fit whose applicability is not checked), so a user's refit keeps working.
READABLE_FORMATS = ("judgesdk.fused/1", FORMAT)
Variant = Literal["source", "source+reference"]


class CriterionModel(BaseModel):
    """One criterion's fitted map from features to its human scale."""

    criterion: str
    variant: Variant = "source"
    features: list[str]
    center: list[float]
    spread: list[float]
    coef: list[float]
    intercept: float
    calibration_x: list[float]  # increasing knots of the monotone map from the linear score to the scale
    calibration_y: list[float]
    low: float
    high: float
    interval: tuple[float, float]  # residual quantiles (calibrated prediction - human), cross-validated
    interval_level: float = 0.8
    # Format 2: split-conformal residual bounds per bin of the score (inner edges on the calibrated score);
    # empty in format 1, where ``interval`` holds for every score.
    interval_edges: list[float] = Field(default_factory=list)
    interval_bounds: list[tuple[float, float]] = Field(default_factory=list)
    fitted_range: list[tuple[float, float]] = Field(default_factory=list)  # per feature: 0.5 % and 99.5 % quantiles of the fitting data
    min_words: int | None = None  # the shortest output the fit was made on
    # Signs fixed by prior make the map monotone in every signal, so it may continue past the fitted range;
    # clipping there tied every such output (26-42 % of NewsRoom's outputs lie beyond SummEval's likelihood
    # range, and the clipped SummEval fit fell from 0.66 to 0.38 there). Free fits clip.
    extrapolate: bool = False
    # Beyond the knots, the least-squares slope of the labels on the cross-validated linear score: the
    # monotone map's end segments are where few labels sit (SummEval's lowest block of consistency spans a
    # fifth of the linear range at 2.99-3.00), so continuing them put every worse output at the same ~3.
    tail_slope: float | None = None
    choice: dict[str, object] = Field(default_factory=dict)  # what the inner CV chose (features group, alpha, mode)
    cv: dict[str, float | None] = Field(default_factory=dict)  # nested-CV agreement on the fitting data

    def linear(self, values: dict[str, float], *, clip: bool = True) -> float:
        missing = [f for f in self.features if f not in values]
        if missing:
            raise InputError(f"the fused {self.criterion} model needs the signals {missing}")
        raw = np.array([values[f] for f in self.features], dtype=float)
        if clip and self.fitted_range:  # no extrapolation: a value beyond what the fit has seen counts as its edge
            lo, hi = np.array(self.fitted_range, dtype=float).T
            raw = np.clip(raw, lo, hi)
        x = (raw - np.array(self.center)) / np.array(self.spread)
        return float(self.intercept + x @ np.array(self.coef))

    def calibrate(self, linear: float) -> float:
        xs, ys = self.calibration_x, self.calibration_y
        if len(xs) == 1:
            return float(np.clip(ys[0], self.low, self.high))
        # beyond the knots: continue with the tail slope (older fits: the end segments' slopes), then clip
        if linear < xs[0]:
            value = ys[0] + (linear - xs[0]) * (self.tail_slope or (ys[1] - ys[0]) / (xs[1] - xs[0]))
        elif linear > xs[-1]:
            value = ys[-1] + (linear - xs[-1]) * (self.tail_slope or (ys[-1] - ys[-2]) / (xs[-1] - xs[-2]))
        else:
            value = float(np.interp(linear, xs, ys))
        return float(np.clip(value, self.low, self.high))

    def predict(self, values: dict[str, float]) -> tuple[float, tuple[float, float]]:
        score = self.calibrate(self.linear(values, clip=not self.extrapolate))
        return score, self.interval_at(score)

    def interval_at(self, score: float) -> tuple[float, float]:
        """The predictive interval around a calibrated score: its score bin's residual bounds (format 2), else
        the one interval of the criterion; clipped to the scale."""
        lo, hi = self.residual_bounds(score)
        return max(self.low, score - hi), min(self.high, score - lo)

    def residual_bounds(self, score: float) -> tuple[float, float]:
        """The residual (prediction - human) quantiles that hold at this calibrated score: its score bin's
        (format 2), else the criterion's one pair."""
        if self.interval_bounds:
            lo, hi = self.interval_bounds[int(np.searchsorted(self.interval_edges, score, side="right"))]
            return float(lo), float(hi)
        return self.interval

    def too_short(self, values: dict[str, float]) -> bool:
        """Shorter than every output the fit was made on (a word or two): likelihoods of so few tokens say
        nothing about a summary (one probable word looks perfectly fluent and coherent to them)."""
        if self.min_words is None or "log_words" not in values:
            return False
        return round(math.expm1(values["log_words"])) < self.min_words

    def outside(self, values: dict[str, float]) -> list[str]:
        """Features beyond the range the model was fitted on (a degenerate or unusual output): the linear
        map extrapolates there, so the score deserves a human look."""
        if not self.fitted_range:
            return []
        return [f for f, (lo, hi) in zip(self.features, self.fitted_range) if not lo <= values[f] <= hi]

    def extrapolation(self, values: dict[str, float]) -> float:
        """How much of the score rests on the linear map beyond the fitted range: the calibrated score with
        the raw signals minus the one with them clipped (:meth:`predict` gives the first for a model that
        extrapolates, the second for one that clips)."""
        return self.calibrate(self.linear(values, clip=False)) - self.calibrate(self.linear(values))

    def needs_review(self, values: dict[str, float]) -> bool:
        """Signals beyond the fitted range that matter: extrapolating them moves the score by more than
        half the predictive interval. A mere excursion is common on text unlike the fitting data (short
        outputs, other domains; on SummEval 7 % of items have one) and mostly moves nothing; flagging every
        one would send most such outputs to review and make the flag noise."""
        half_width = (self.interval[1] - self.interval[0]) / 2
        return bool(self.outside(values)) and abs(self.extrapolation(values)) > half_width

    def contributions(self, values: dict[str, float]) -> dict[str, float]:
        """Each feature's share of the linear score (coefficient x standardised value)."""
        return {
            f: round(c * (values[f] - m) / s, 4) for f, c, m, s in zip(self.features, self.coef, self.center, self.spread)
        }


class ModelIdentity(BaseModel):
    """The model file a fit is valid for: its ``name`` (as the provider calls it), its ``sha256`` (what a fit is
    matched on: weights fitted on one file's signals mean nothing on another's) and, when known, its ``size`` in
    bytes."""

    name: str
    sha256: str
    size: int | None = None


class Declined(BaseModel):
    """A criterion the data was fitted for but that does not ship: why, with its measured figures."""

    criterion: str
    variant: Variant = "source"
    reason: str
    cv: dict[str, float | None] = Field(default_factory=dict)


class FusedModelFile(BaseModel):
    """A fitted fused judge as saved to and read from JSON (:func:`save`, :func:`load`): the fitted variants per
    criterion, with the provenance that says where the fit applies (the model file, the signal set and its prompt
    hashes, the domain and the envelope of fitted items) and how it was fitted (data, folds, SDK version), plus
    the criteria that were measured but declined."""

    format: str = FORMAT
    signal_set: str
    templates: dict[str, str]  # template id -> "version:hash"
    model: ModelIdentity
    data: dict[str, object]  # dataset, items, documents, file sha256, text preparation
    folds: dict[str, object]  # outer/inner k, seed, level
    sdk_version: str
    criteria: dict[str, list[CriterionModel]]  # criterion -> its variants
    aliases: dict[str, str] = Field(default_factory=dict)  # other names (faithfulness) -> criterion
    domain: str = "news"  # whose signal prompts it reads (judgesdk.fused.domains); format 1 fits are news fits
    envelope: Envelope | None = None  # the shape of the fitted items (None in format 1: not checked)
    declined: list[Declined] = Field(default_factory=list)  # criteria measured but not shipped, and why

    @property
    def digest(self) -> str:
        """sha256 of the fit's content (canonical JSON): what a result's provenance names it by, so two runs
        with differently fitted maps are told apart even under one file name."""
        return hashlib.sha256(json.dumps(self.model_dump(mode="json"), sort_keys=True).encode("utf-8")).hexdigest()

    def for_criterion(self, name: str, *, has_reference: bool) -> CriterionModel | None:
        """The variant for a criterion name (or alias): with reference signals when the item has one."""
        key = name.strip().lower()
        key = self.aliases.get(key, key)
        variants = self.criteria.get(key, [])
        wanted = "source+reference" if has_reference else "source"
        for variant in variants:
            if variant.variant == wanted:
                return variant
        return next((v for v in variants if v.variant == "source"), None)

    def criterion_names(self) -> list[str]:
        return sorted({*self.criteria, *self.aliases})

    def declined_for(self, name: str) -> Declined | None:
        key = name.strip().lower()
        key = self.aliases.get(key, key)
        return next((d for d in self.declined if d.criterion == key and d.variant == "source"), None)

    @property
    def label(self) -> str:
        """How results name this fit: its domain and the head of its content hash."""
        return f"{self.domain} sha256:{self.digest[:12]}"


def load(path: str | Path) -> FusedModelFile:
    """The fit saved at ``path``, validated. Raises :class:`~judgesdk.core.errors.ConfigError` (naming the file,
    and the field where one is wrong) when the file is missing, is not JSON, does not validate, has a format this
    SDK does not read, or is for a domain it does not know."""
    p = Path(path)
    try:
        raw = json.loads(p.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise ConfigError(f"fused model file {p} does not exist") from exc
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ConfigError(f"fused model file {p} is not JSON: {exc}") from exc
    try:
        fitted = FusedModelFile.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        raise ConfigError(f"fused model file {p}: field {'.'.join(map(str, first['loc']))}: {first['msg']}") from exc
    if fitted.format not in READABLE_FORMATS:
        raise ConfigError(f"fused model file {p} has format {fitted.format!r}; this SDK reads {' and '.join(map(repr, READABLE_FORMATS))}")
    if fitted.domain not in DOMAINS:
        raise ConfigError(f"fused model file {p} is for domain {fitted.domain!r}; this SDK knows {', '.join(DOMAINS)}")
    return fitted


def save(fitted: FusedModelFile, path: str | Path) -> Path:
    """Write ``fitted`` as indented JSON to ``path`` (creating its folder), readable by :func:`load`; returns the
    path written."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(json.dumps(fitted.model_dump(mode="json"), indent=1) + "\n", encoding="utf-8")
    return p


def file_sha256(path: str | Path) -> str:
    """The sha256 (hex) of the file at ``path``, read in 1 MiB blocks so a model file of gigabytes is never held
    in memory: what a fit's :class:`ModelIdentity` names its model file by."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# Data beside the fits that is no fit: the overlap rung's measured figures and the prompted fallback's
# (:mod:`judgesdk.fused.overlap`).
_NOT_FITS = frozenset({"overlap_rungs.json", "fallbacks.json"})


@functools.cache
def _bundled() -> tuple[FusedModelFile, ...]:
    root = resources.files("judgesdk.fused.data")
    found = sorted(root.iterdir(), key=lambda p: p.name)
    fits = [load(Path(str(p))) for p in found if p.name.endswith(".json") and p.name not in _NOT_FITS]
    order = list(DOMAINS)
    return tuple(sorted(fits, key=lambda f: order.index(f.domain)))


def bundled() -> list[FusedModelFile]:
    """The fits shipped with the package (``judgesdk/fused/data/*.json``), in :data:`DOMAINS` order (read once:
    ``auto`` asks for them per item)."""
    return list(_bundled())


@functools.cache
def bundled_labels() -> tuple[str, ...]:
    """The shipped fits' labels (domain and content hash), hashed once per process: a resume key names them on
    every served request (:func:`judgesdk.judging.judge_config.fit_identities`)."""
    return tuple(f.label for f in _bundled())


def bundled_for(model_sha256: str) -> list[FusedModelFile]:
    """The shipped fits for the model file whose sha256 is ``model_sha256`` (one per domain), news first; empty
    when none was fitted for that file."""
    return [f for f in bundled() if f.model.sha256 == model_sha256]


def model_sha256(provider: Provider) -> str | None:
    """The sha256 of the model file behind a provider: the local provider's, or what a provider states as its
    identity (``sha256:<hex>``, e.g. a server configured with its file's hash); None for hosted models and
    test doubles. A fit applies to this file whichever provider serves it, and to no other file."""
    value = getattr(unwrap(provider), "model_sha256", None)
    value = value() if callable(value) else value
    if value:
        return str(value)
    identity = identity_of(provider)
    if identity.startswith("sha256:") and len(identity) == 7 + 64:
        return identity[7:]
    return None
