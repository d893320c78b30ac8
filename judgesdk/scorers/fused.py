"""The fused local judge: signals a small model is good at, mapped to the human scale by a fitted model.

A base model of a few hundred million parameters asked for a 1-5 label answers at chance, yet how probable
it finds an output given its source carries real signal. This scorer computes those signals once per
output (:mod:`judgesdk.fused.signals`) and maps them with a fit shipped for the model file
(:mod:`judgesdk.fused.model`; SummEval's four criteria for the embedded model, cross-validated by
document) or one the user fitted on their own labels (``method_options.fused_model = "path"``,
``judgesdk calibrate --fused``). The result is on the criterion's human scale, with an 80 % predictive
interval from cross-validated residuals, the signals, each signal's contribution, and the fit's
provenance. A fit made for another model file is refused: its weights mean nothing there.
"""

from __future__ import annotations

from pathlib import Path

from judgesdk.core.errors import ConfigError, InputError
from judgesdk.core.types import Criterion, JudgeItem, JudgeResult, LabelDistribution
from judgesdk.fused import model as fused_model
from judgesdk.fused.levels import level_probabilities
from judgesdk.fused.model import CriterionModel, FusedModelFile, model_sha256
from judgesdk.fused.signals import QUESTIONS, UNCONDITIONAL_FEATURES, extract, features
from judgesdk.provider.protocol import Provider
from judgesdk.scorers.common import ScorerOptions

OPTION = "fused_model"  # method_options key: path of a fit file made by `judgesdk calibrate --fused`
LEVELS = "fused_levels"  # method_options key: true gives the result its predictive distribution over the scale's levels


def fit_for(provider: Provider, options: ScorerOptions) -> FusedModelFile | None:
    """The configured fit (checked against the provider's model file), else the bundled one for it, else None."""
    sha = model_sha256(provider)
    configured = options.extra.get(OPTION)
    if configured is not None:
        fitted = fused_model.load(Path(str(configured)).expanduser())
        if sha is None or fitted.model.sha256 != sha:
            raise ConfigError(
                f"fused model file {configured} was fitted for model {fitted.model.name} (sha256 "
                f"{fitted.model.sha256[:12]}...), but the provider runs {provider.model} "
                f"({'sha256 ' + sha[:12] + '...' if sha else 'no model file'}): refit it with `judgesdk calibrate --fused`"
            )
        return fitted
    return fused_model.bundled_for(sha) if sha else None


def criterion_model(fitted: FusedModelFile, criterion: Criterion, item: JudgeItem) -> CriterionModel | None:
    return fitted.for_criterion(criterion.name, has_reference=bool(item.reference and item.reference.strip()))


async def score(provider: Provider, item: JudgeItem, criterion: Criterion, options: ScorerOptions, method: str = "fused") -> JudgeResult:
    fitted = fit_for(provider, options)
    if fitted is None:
        raise InputError(
            f"method 'fused' needs a fit for {provider.kind}/{provider.model}: the package ships one for the embedded "
            "model; fit one on your labels with `judgesdk calibrate --fused` and set method_options.fused_model"
        )
    model = criterion_model(fitted, criterion, item)
    if model is None:
        raise InputError(
            f"the fused fit for {fitted.model.name} has no model for criterion {criterion.name!r}; "
            f"it knows {', '.join(fitted.criterion_names())}"
        )
    return await score_with(provider, item, criterion, fitted, model, method, levels=bool(options.extra.get("fused_levels")))


async def score_with(
    provider: Provider, item: JudgeItem, criterion: Criterion, fitted: FusedModelFile, model: CriterionModel, method: str, *, levels: bool = False
) -> JudgeResult:
    """The fused result; with ``levels``, its ``distribution`` is the predictive distribution over the criterion's
    scale levels (:mod:`judgesdk.fused.levels`), the score still the prediction."""
    asked = [name for name in QUESTIONS if f"yes_{name}" in model.features]
    likelihood_given_reference = any(f in model.features for f in ("ref_mean", "ref_pmi"))
    baseline = any(f in model.features for f in UNCONDITIONAL_FEATURES)
    evidence = await extract(provider, item, questions=asked, reference=likelihood_given_reference, unconditional=baseline)
    values = features(evidence)
    value, (low, high) = model.predict(values)
    outside = model.outside(values)
    review, shift = model.needs_review(values), model.extrapolation(values)
    degenerate = model.too_short(values)
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
            f"signals of {fitted.model.name} mapped to the {model.low:g}-{model.high:g} human scale by a model fitted on "
            f"{fitted.data.get('dataset')} {model.criterion} (nested CV by document: per-document Spearman "
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
        + (["shorter than any output the fit was made on: scored at the bottom of the scale"] if degenerate else []),
        details={
            "outside_fitted_range": outside,
            "extrapolation": round(shift, 4),
            "outside_fit": review,
            "interval": [round(low, 4), round(high, 4)],
            "interval_level": model.interval_level,
            "signals": {k: round(v, 4) for k, v in values.items() if k in model.features},
            "contributions": model.contributions(values),
            "calibration": f"fused {fitted.signal_set} sha256:{fitted.digest[:16]}",
            "fit": {"criterion": model.criterion, "variant": model.variant, "signal_set": fitted.signal_set, "model_sha256": fitted.model.sha256, "sdk_version": fitted.sdk_version},
        },
        item_id=item.id,
    )
