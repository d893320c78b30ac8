"""The fused local judge: signals a small model is good at, mapped to the human scale by a fitted model.

A base model of a few hundred million parameters asked for a 1-5 label answers at chance, yet how probable
it finds an output given its source carries real signal. This scorer computes those signals once per
output (:mod:`judgesdk.fused.signals`) and maps them with a fit shipped for the model file
(:mod:`judgesdk.fused.model`; SummEval's four criteria for the embedded model, cross-validated by
document) or one the user fitted on their own labels (``method_options.fused_model = "path"``,
``judgesdk calibrate --fused``). The result is on the criterion's human scale, with an 80 % predictive
interval from cross-validated residuals, the signals, each signal's contribution, and the fit's
provenance. A fit made for another model file is refused: its weights mean nothing there.

A model file may have several shipped fits, one per task (:mod:`judgesdk.fused.domains`: news summaries,
grounded dialogue responses, stories); :func:`choose` picks the one whose envelope holds the item's shape
and says, per fit, why the others do not apply. Asked for explicitly (``method = "fused"``), an item no fit
holds is still scored, by the first fit with the criterion, and marked ``outside_domain`` with the reasons.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from judgesdk.core import ConfigError, Criterion, InputError, JudgeItem, JudgeResult, LabelDistribution
from judgesdk.fused import (
    QUESTIONS,
    REFERENCE_LIKELIHOOD_FEATURES,
    SHAPE,
    UNCONDITIONAL_FEATURES,
    WITHOUT_CONTEXT_FEATURES,
    CriterionModel,
    FusedModelFile,
    bundled_for,
    extract,
    features,
    level_probabilities,
    load,
    model_sha256,
    shape,
)
from judgesdk.provider import Provider
from judgesdk.scorers.common import ScorerOptions
from judgesdk.scorers.spec import MethodSpec

OPTION = "fused_model"  # method_options key: path of a fit file made by `judgesdk calibrate --fused`
LEVELS = "fused_levels"  # method_options key: true gives the result its predictive distribution over the scale's levels


def fits_for(provider: Provider, options: ScorerOptions) -> list[FusedModelFile]:
    """The configured fit (``options.extra["fused_model"]``, a path; checked against the provider's model file:
    a fit for another file is a :class:`~judgesdk.core.errors.ConfigError`), else the bundled ones for the
    ``provider``'s model file (one per domain), else none."""
    sha = model_sha256(provider)
    configured = options.extra.get(OPTION)
    if configured is not None:
        fitted = load(Path(str(configured)).expanduser())
        if sha is None or fitted.model.sha256 != sha:
            raise ConfigError(
                f"fused model file {configured} was fitted for model {fitted.model.name} (sha256 "
                f"{fitted.model.sha256[:12]}...), but the provider runs {provider.model} "
                f"({'sha256 ' + sha[:12] + '...' if sha else 'no model file'}): refit it with `judgesdk calibrate --fused`"
            )
        return [fitted]
    return bundled_for(sha) if sha else []


def fit_for(provider: Provider, options: ScorerOptions) -> FusedModelFile | None:
    """The first fit for the provider's model file (the configured one, else the bundled news fit)."""
    fits = fits_for(provider, options)
    return fits[0] if fits else None


def criterion_model(fitted: FusedModelFile, criterion: Criterion, item: JudgeItem) -> CriterionModel | None:
    return fitted.for_criterion(criterion.name, has_reference=bool(item.reference and item.reference.strip()))


@dataclass
class Choice:
    """The fit that applies to an item (None: none does) and, per fit that does not, why not."""

    fitted: FusedModelFile | None = None
    model: CriterionModel | None = None
    reasons: dict[str, list[str]] = field(default_factory=dict)  # fit (domain) -> why it does not apply
    shape: dict[str, float] = field(default_factory=dict)
    in_domain: list[str] = field(default_factory=list)  # the fits whose envelope holds the item (with or without the criterion)

    @property
    def outside_domain(self) -> bool:
        """No fit's envelope holds the item (as opposed to a fit that holds it but has no model for the criterion)."""
        return not self.in_domain

    def why(self) -> str:
        return "; ".join(f"{name} fit: {', '.join(reasons)}" for name, reasons in self.reasons.items())


def _has_context(item: JudgeItem) -> bool:
    return item.context is not None and bool(item.context.strip())


def choose(fits: list[FusedModelFile], item: JudgeItem, criterion: Criterion) -> Choice:
    """Of ``fits``, the one whose envelope holds the item and that has a model for the criterion; where several
    do, the one in whose fitted ranges (without margins) most of the item's shape lies, the first on a tie. The
    :class:`Choice` also says, per fit that does not apply, why not."""
    values = shape(item.output, item.source)
    choice = Choice(shape=values)
    best = -1
    for fitted in fits:
        if fitted.envelope is None:  # format 1: no envelope; the rule of the first fits (no grounding fact) holds
            why = ["a grounding fact (context): the fit was made for summaries of a source"] if _has_context(item) else []
        else:
            why = fitted.envelope.outside(values, has_context=_has_context(item))
        if why:
            choice.reasons[fitted.domain] = why
            continue
        choice.in_domain.append(fitted.domain)
        model = criterion_model(fitted, criterion, item)
        if model is None:
            declined = fitted.declined_for(criterion.name)
            choice.reasons[fitted.domain] = [
                f"{criterion.name}: {declined.reason}" if declined else
                f"no model for criterion {criterion.name!r} (it knows {', '.join(fitted.criterion_names())})"
            ]  # fmt: skip
            continue
        depth = _depth(fitted, values)
        if depth > best:
            best, choice.fitted, choice.model = depth, fitted, model
    return choice


def _depth(fitted: FusedModelFile, values: dict[str, float]) -> int:
    if fitted.envelope is None:
        return 0
    return sum(lo <= values[name] <= hi for name, (lo, hi) in fitted.envelope.ranges.items() if name in values)


async def score(provider: Provider, item: JudgeItem, criterion: Criterion, options: ScorerOptions, method: str = "fused") -> JudgeResult:
    fits = fits_for(provider, options)
    if not fits:
        raise InputError(
            f"method 'fused' needs a fit for {provider.kind}/{provider.model}: the package ships one for the embedded "
            "model; fit one on your labels with `judgesdk calibrate --fused` and set method_options.fused_model"
        )
    levels = bool(options.extra.get(LEVELS))
    choice = choose(fits, item, criterion)
    if choice.fitted is not None and choice.model is not None:
        return await score_with(provider, item, criterion, choice.fitted, choice.model, method, choice=choice, levels=levels)
    # asked for by name: scored by the first fit with the criterion, marked as outside its domain
    for fitted in fits:
        model = criterion_model(fitted, criterion, item)
        if model is not None:
            return await score_with(provider, item, criterion, fitted, model, method, choice=choice, outside_domain=choice.reasons.get(fitted.domain, []), levels=levels)
    known = sorted({name for f in fits for name in f.criterion_names()})
    raise InputError(f"the fused fits for {fits[0].model.name} have no model for criterion {criterion.name!r}; they know {', '.join(known)}")


async def score_with(
    provider: Provider,
    item: JudgeItem,
    criterion: Criterion,
    fitted: FusedModelFile,
    model: CriterionModel,
    method: str,
    *,
    choice: Choice | None = None,
    outside_domain: list[str] | None = None,
    levels: bool = False,
) -> JudgeResult:
    """The fused result; with ``levels``, its ``distribution`` is the predictive distribution over the criterion's
    scale levels (:mod:`judgesdk.fused.levels`), the score still the prediction."""
    asked = [name for name in QUESTIONS if f"yes_{name}" in model.features]
    likelihood_given_reference = any(f in model.features for f in REFERENCE_LIKELIHOOD_FEATURES)
    baseline = any(f in model.features for f in UNCONDITIONAL_FEATURES)
    history = any(f in model.features for f in WITHOUT_CONTEXT_FEATURES)
    evidence = await extract(
        provider, item, questions=asked, reference=likelihood_given_reference, unconditional=baseline, domain=fitted.domain, without_context=history,
    )  # fmt: skip
    values = features(evidence)
    value, (low, high) = model.predict(values)
    outside = model.outside(values)
    review, shift = model.needs_review(values), model.extrapolation(values)
    degenerate = model.too_short(values)
    elsewhere = list(outside_domain or [])
    item_shape = choice.shape if choice is not None else shape(item.output, item.source)
    if degenerate:  # below the fit's support: no extrapolated number, the bottom of the scale, flagged
        value, low, high = model.low, model.low, model.low
    distribution = None
    if levels:
        probs = level_probabilities(model, value, criterion.scale.values)
        distribution = LabelDistribution(scale=criterion.scale, probs=probs, method="predictive")
    return JudgeResult(
        score=value,
        status="ok",
        distribution=distribution,
        criterion=criterion.name,
        method=f"{method}/{model.variant}",
        method_reason=(
            f"signals of {fitted.model.name} mapped to the {model.low:g}-{model.high:g} human scale by the {fitted.domain} fit on "
            f"{fitted.data.get('dataset')} {model.criterion} (nested CV by group: per-group Spearman "
            f"{model.cv.get('per_doc_spearman')})"
        ),
        provider=provider.kind,
        model=provider.model,
        usage=evidence.usage,
        latency_s=sum(evidence.seconds.values()),
        cached=evidence.cached,
        notes=[f"{int(model.interval_level * 100)}% predictive interval {low:.2f}-{high:.2f}"]
        + (
            [f"signals outside the range the fit has seen ({', '.join(outside)}) "
             f"{'move the score by' if model.extrapolate else 'would move the score by'} {shift:+.2f}: needs review"]
            if review
            else []
        )
        + (["shorter than any output the fit was made on: scored at the bottom of the scale"] if degenerate else [])
        + ([f"outside the domain of the {fitted.domain} fit ({', '.join(elsewhere)}): scored by it because method "
            f"{method!r} was asked for; needs review"] if elsewhere else []),
        details={
            "outside_fitted_range": outside,
            "extrapolation": round(shift, 4),
            "outside_fit": review or bool(elsewhere),  # the review flag: signals far outside the fit, or the item outside its domain
            "outside_domain": bool(elsewhere),
            "domain_reasons": elsewhere,
            "shape": {k: round(item_shape[k], 4) for k in SHAPE},
            "interval": [round(low, 4), round(high, 4)],
            "interval_level": model.interval_level,
            "signals": {k: round(v, 4) for k, v in values.items() if k in model.features},
            "contributions": model.contributions(values),
            "calibration": f"fused {fitted.signal_set} sha256:{fitted.digest[:16]}",
            "fit": {
                "criterion": model.criterion, "variant": model.variant, "domain": fitted.domain, "label": fitted.label, "format": fitted.format,
                "signal_set": fitted.signal_set, "model_sha256": fitted.model.sha256, "sdk_version": fitted.sdk_version,
            },  # fmt: skip
        },
        item_id=item.id,
    )


FUSED = MethodSpec(name="fused", score=score, options={OPTION: "any", LEVELS: "boolean"}, reads_fits=True)
