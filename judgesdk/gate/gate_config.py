"""What a gate file says: the criteria, the gates (one pydantic model per kind) and how to load it.

Held apart from running and deciding so that a config can be validated (``load_gate_config``) without
judging anything, and so the gate models are the one place that says which knobs each kind takes.
Relative paths in a gate file are resolved against the file's folder here, once.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from judgesdk.core import ConfigError, Criterion, InputError, Scale
from judgesdk.judging import validation_summary
from judgesdk.meta import ReviewPolicy
from judgesdk.prompting import criterion as presets_criterion
from judgesdk.provider import Budget

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib


class CriterionSpec(BaseModel):
    """A criterion the gates judge: its definition and scale, or a dataset preset; optionally a calibration."""

    model_config = ConfigDict(extra="forbid")

    name: str
    definition: str | None = None
    scale: str = "1-5"  # LOW-HIGH Likert scale
    preset: str | None = None  # dataset whose published criterion (definition, scale) to use, e.g. "summeval"
    calibration: Path | None = None  # a calibration JSON: scores and thresholds on the human scale
    labels: Path | None = None  # human labels of a random slice of the run (JSONL: id, label), for the corrected gates
    baseline_labels: Path | None = None  # human labels of a random slice of the baseline run, for ppi_regression
    # true: human labels may lie outside ``scale`` (continuous or rescaled human scores); the corrected gates then
    # take them and their intervals are not bounded by the scale. false (default): such a label is an input error.
    open_scale: bool = False

    def criterion(self) -> Criterion:
        if self.preset:
            return presets_criterion(self.preset, self.name)
        try:
            low, high = (int(part) for part in self.scale.split("-", 1))
        except ValueError as exc:
            raise ConfigError(f"criterion {self.name!r}: scale must look like 1-5, got {self.scale!r}") from exc
        return Criterion(name=self.name, description=self.definition or self.name, scale=Scale.likert(low, high))


class _Gate(BaseModel):
    model_config = ConfigDict(extra="forbid")

    name: str | None = None  # default: "<criterion> <kind>"
    criterion: str
    if TYPE_CHECKING:
        kind: str  # each gate declares its kind as a Literal field (not a field here: it would change the field order)

    @property
    def label(self) -> str:
        return self.name or f"{self.criterion} {self.kind}"


class MeanGate(_Gate):
    """Quality: the mean score is at least ``min``."""

    kind: Literal["mean"]
    min: float


class PassRateGate(_Gate):
    """Quality: the share of scored items with score >= ``item_min`` is at least ``min``."""

    kind: Literal["pass_rate"]
    item_min: float
    min: float = Field(ge=0.0, le=1.0)


class CILowerGate(_Gate):
    """Quality: the lower bound of the bootstrap CI of the mean is at least ``min``."""

    kind: Literal["ci_lower"]
    min: float
    confidence: float = Field(default=0.95, gt=0.0, lt=1.0)
    n_resamples: int = Field(default=2000, ge=100)
    seed: int = 0


class RegressionGate(_Gate):
    """Quality: no significant drop of the mean beyond ``max_drop`` against the baseline run (paired by id)."""

    kind: Literal["regression"]
    max_drop: float = Field(default=0.0, ge=0.0)
    alpha: float = Field(default=0.05, gt=0.0, lt=1.0)
    n_permutations: int = Field(default=10000, ge=100)
    seed: int = 0


class PPICILowerGate(_Gate):
    """Quality: the lower bound of the PPI++ corrected CI of the mean human score is at least ``min``.

    Needs ``labels`` on the criterion: human labels of a random slice of this run (judgesdk.stats.ppi).
    ``method``: ``cross-fit`` (default; cross-fitted lambda, jackknife variance, t quantile with Hall's
    skewness correction, bounded by the criterion's scale) or ``ppi++`` (ppi-python's normal interval, which
    under-covers on labels piled at one end of the scale).
    """

    kind: Literal["ppi_ci_lower"]
    min: float
    confidence: float = Field(default=0.95, gt=0.0, lt=1.0)
    min_labels: int = Field(default=30, ge=2)  # fewer labels in the file is an input error
    method: Literal["cross-fit", "ppi++"] = "cross-fit"


class PPIRegressionGate(_Gate):
    """Quality: no significant drop of the *corrected* mean human score beyond ``max_drop`` against the
    baseline run, each run's mean estimated from its own random human slice (``labels`` and
    ``baseline_labels`` on the criterion) by PPI++ (``method`` as ``ppi_ci_lower``'s). The slices are
    independent draws, so the difference's variance is the sum of the two; a drop is significant when the
    one-sided p-value of ``new - baseline >= -max_drop`` is below ``alpha``. Unlike ``regression`` it needs
    no shared items, and it holds the human score, not the judge's, to the baseline."""

    kind: Literal["ppi_regression"]
    max_drop: float = Field(default=0.0, ge=0.0)
    alpha: float = Field(default=0.05, gt=0.0, lt=1.0)
    min_labels: int = Field(default=30, ge=2)
    method: Literal["cross-fit", "ppi++"] = "cross-fit"


class CorrectedPassRateGate(_Gate):
    """Quality: the lower bound of the corrected human pass rate's CI is at least ``min``.

    An item passes for the human when its label is >= ``item_min``, for the judge when its score is >=
    ``judge_item_min`` (default ``item_min``; scores calibrated when the criterion names a calibration).
    ``method``: ``ppi`` (default) is PPI++ on the pass indicators, the judge's pass/fail as its prediction
    (the cross-fit interval, bounded by [0, 1]): never refused, and about as wide as the labels alone when
    the judge is no help. ``rogan-gladen`` corrects the judge's pass rate by its sensitivity and specificity
    on the slice, and is refused (undetermined, so INCONCLUSIVE) when their sum - 1 is below
    ``min_youden`` or its interval reaches 0; it needs a judge far better than chance to beat the labels
    alone (benchmarks/README.md). Needs ``labels`` on the criterion.
    """

    kind: Literal["corrected_pass_rate"]
    item_min: float
    judge_item_min: float | None = None
    min: float = Field(ge=0.0, le=1.0)
    confidence: float = Field(default=0.95, gt=0.0, lt=1.0)
    min_labels: int = Field(default=30, ge=2)
    min_youden: float = Field(default=0.2, gt=0.0, lt=1.0)  # rogan-gladen only
    method: Literal["ppi", "rogan-gladen"] = "ppi"


LABELLED_KINDS = ("ppi_ci_lower", "corrected_pass_rate", "ppi_regression")


class ReviewGate(_Gate):
    """Reliability: the share of items flagged "needs human review" (meta.reliability rules) is at most ``max_share``."""

    kind: Literal["review"]
    max_share: float = Field(ge=0.0, le=1.0)
    policy: ReviewPolicy = Field(default_factory=ReviewPolicy)


class CoverageGate(_Gate):
    """Reliability: the mean label-mass coverage of the distributions is at least ``min``."""

    kind: Literal["coverage"]
    min: float = Field(ge=0.0, le=1.0)


class ProvenanceGate(_Gate):
    """Reliability: the judge is the baseline's. Fails when a field of the results' provenance (model id the
    API reports, model file sha256, template id/version/hash, method options, calibration, SDK, client
    version: judgesdk.core.provenance) differs from the baseline's, unless ``accept`` lists it, so a silent model
    update at a provider cannot move a release verdict. ``accept`` takes field names as ``judgesdk diff``
    prints them (``templates``, ``sdk``, ``served.runtime``) or a prefix (``served``: every served field)."""

    kind: Literal["provenance"]
    accept: list[str] = Field(default_factory=list)


BASELINE_KINDS = ("regression", "provenance", "ppi_regression")

# Thresholds that are values on a scale, by gate kind: the judge's scores (on the criterion's scale, or on the human
# scale where the criterion names a calibration) and the human labels (on the criterion's scale unless open_scale).
SCORE_THRESHOLDS = {"mean": ("min",), "ci_lower": ("min",), "pass_rate": ("item_min",), "corrected_pass_rate": ("judge_item_min",)}
LABEL_THRESHOLDS = {"ppi_ci_lower": ("min",), "corrected_pass_rate": ("item_min",)}
SCORE_DROPS, LABEL_DROPS = {"regression": ("max_drop",)}, {"ppi_regression": ("max_drop",)}


def off_scale(gate: Any, low: float, high: float, where: str, *, labels: bool) -> str | None:
    """Why a threshold of ``gate`` cannot be met or missed on a scale from ``low`` to ``high`` (``where`` names
    it), or None. A mean of at least 0.35 on a 1-5 scale always passes and an ``item_min`` of -10 passes every
    item: a gate that decides nothing must not look like a gate that passed."""
    values, drops = (LABEL_THRESHOLDS, LABEL_DROPS) if labels else (SCORE_THRESHOLDS, SCORE_DROPS)
    for name in values.get(gate.kind, ()):
        value = getattr(gate, name)
        if value is not None and not low <= value <= high:
            return (
                f"gate {gate.label!r}: {name} = {value:g} is outside {where} {low:g}-{high:g}, so the gate could never "
                f"{'fail' if value < low else 'pass'}: give a value on that scale"
            )
    for name in drops.get(gate.kind, ()):
        value = getattr(gate, name)
        if value > high - low:
            return (
                f"gate {gate.label!r}: {name} = {value:g} is more than {where} {low:g}-{high:g} spans ({high - low:g}), so "
                "no drop could exceed it: give a drop smaller than the scale's range"
            )
    return None


def _scale_problem(gate: Any, spec: CriterionSpec) -> str | None:
    """A threshold of ``gate`` outside its criterion's scale (module :func:`off_scale`). A calibrated criterion's
    score thresholds are on the human scale: they are checked against the calibration when it is loaded
    (:func:`judgesdk.gate.run.collect`)."""
    try:
        scale = spec.criterion().scale
    except (ConfigError, InputError):  # a bad scale or preset: named when the criterion is used
        return None
    low, high = min(scale.values), max(scale.values)
    where = f"criterion {spec.name!r}'s scale"
    if spec.calibration is None and (found := off_scale(gate, low, high, where, labels=False)):
        return found
    return None if spec.open_scale else off_scale(gate, low, high, where, labels=True)

Gate = Annotated[
    MeanGate | PassRateGate | CILowerGate | RegressionGate | ReviewGate | CoverageGate | PPICILowerGate | CorrectedPassRateGate
    | PPIRegressionGate | ProvenanceGate,
    Field(discriminator="kind"),
]


class GateConfig(BaseModel):
    """What ``judgesdk gate`` checks. Relative paths in a file are relative to that file."""

    model_config = ConfigDict(extra="forbid")

    judge: Path | dict[str, Any] | None = None  # judge config: a TOML/YAML path or an inline table
    input: Path | None = None  # JSONL of outputs to judge
    results: Path | None = None  # results JSONL: appended to when judging (resumable), else read
    baseline: Path | None = None  # a stored results JSONL to compare against (regression gates)
    max_unscored_share: float = Field(default=0.0, ge=0.0, le=1.0)  # items allowed to end without a score
    allow_mixed_methods: bool = False  # scores of different methods (e.g. a fallback from fused to geval) on one criterion
    budget: Budget | None = None
    criteria: list[CriterionSpec] = Field(min_length=1)
    gates: list[Gate] = Field(min_length=1)

    @model_validator(mode="after")
    def _check(self) -> GateConfig:
        names = [c.name for c in self.criteria]
        if len(set(names)) != len(names):
            raise ValueError(f"criterion names must be unique, got {names}")
        for gate in self.gates:
            if gate.criterion not in names:
                raise ValueError(f"gate {gate.label!r} names criterion {gate.criterion!r}, which is not among [[criteria]] ({', '.join(names)})")
        labelled = {c.name for c in self.criteria if c.labels is not None}
        for gate in self.gates:
            if gate.kind in LABELLED_KINDS and gate.criterion not in labelled:
                raise ValueError(
                    f"gate {gate.label!r} corrects the judge with human labels: set labels = \"slice-labels.jsonl\" (id, label "
                    f"per line; draw the ids with `judgesdk label-slice`) on the [[criteria]] entry {gate.criterion!r}"
                )
        with_baseline_labels = {c.name for c in self.criteria if c.baseline_labels is not None}
        for gate in self.gates:
            if gate.kind == "ppi_regression" and gate.criterion not in with_baseline_labels:
                raise ValueError(
                    f"gate {gate.label!r} compares corrected means of two runs: set baseline_labels = \"baseline-labels.jsonl\" "
                    f"(a random slice of the baseline run, labelled; `judgesdk label-slice --results BASELINE`) on the "
                    f"[[criteria]] entry {gate.criterion!r}"
                )
        specs = {c.name: c for c in self.criteria}
        for gate in self.gates:
            found = _scale_problem(gate, specs[gate.criterion])
            if found:
                raise ValueError(found)
        labels = [g.label for g in self.gates]
        duplicates = sorted({label for label in labels if labels.count(label) > 1})
        if duplicates:
            raise ValueError(f"gate names must be unique; give these a distinct name: {duplicates}")
        return self


def _resolve(data: dict[str, Any], base: Path) -> dict[str, Any]:
    """Relative paths of a gate file, made relative to the file's folder."""
    def under(value: str) -> str:
        return os.path.normpath(base / value)

    out = dict(data)
    for key in ("judge", "input", "results", "baseline"):
        if isinstance(out.get(key), str):
            out[key] = under(out[key])
    out["criteria"] = [
        {**c, **{k: under(c[k]) for k in ("calibration", "labels", "baseline_labels") if isinstance(c.get(k), str)}} if isinstance(c, dict) else c
        for c in out.get("criteria") or []
    ]
    if out.get("input") and not out.get("results"):
        out["results"] = under("gate-results.jsonl")
    return out


def load_gate_config(source: str | Path | Mapping[str, Any]) -> GateConfig:
    """A validated gate config from a TOML file or a mapping; ConfigError says what to fix.

    ``source``: the path of a TOML file, whose relative paths (judge, input, results, baseline, and each
    criterion's calibration and label files) are read relative to the file's folder; or a mapping of the same
    keys, taken as given. Returns the :class:`GateConfig`; a missing or unreadable file, invalid TOML or an
    invalid field is a :class:`ConfigError` naming the field, never the value given."""
    if isinstance(source, Mapping):
        data, where = dict(source), "gate config"
    else:
        path = Path(source)
        if not path.is_file():
            raise ConfigError(f"gate config {path} does not exist")
        try:
            data = _resolve(tomllib.loads(path.read_text(encoding="utf-8")), path.resolve().parent)
        except UnicodeDecodeError as exc:
            raise ConfigError(f"gate config {path} is not UTF-8 text (byte {exc.start}): save it as UTF-8") from None
        except OSError as exc:
            raise ConfigError(f"cannot read gate config {path}: {exc.strerror or exc}") from None
        except tomllib.TOMLDecodeError as exc:  # names the line and column, never quotes the line
            raise ConfigError(f"gate config {path} is not valid TOML: {exc}") from None
        where = f"gate config {path}"
    try:
        return GateConfig.model_validate(data)
    except ValidationError as exc:  # one line naming each bad field, never the value given (it may be a secret)
        raise ConfigError(f"invalid {where}: {validation_summary(exc, GateConfig)}") from None
