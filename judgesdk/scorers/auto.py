"""``method = "auto"`` (the default): the fused judge where it has been fitted and measured, else G-Eval.

The fused judge (:mod:`judgesdk.scorers.fused`) is used when the provider gives token likelihoods and exact
label probabilities (a local model), a fit exists for its model file, the item is an output judged against
a source, the fit has a model for the criterion (by name or alias: faithfulness is consistency), and no prompt
template was configured. Anything else (hosted providers, dialogue or stories, other criteria, a chosen
template) is judged by the prompted method, and the
result's notes say why, so a reader never mistakes one scale for the other.
"""

from __future__ import annotations

from judgesdk.core.types import Criterion, JudgeItem, JudgeResult
from judgesdk.fused.model import CriterionModel, FusedModelFile
from judgesdk.provider.protocol import Provider
from judgesdk.scorers import fused, likert
from judgesdk.scorers.common import ScorerOptions

PROMPTED = "geval"
NOT_SUMMARIES = {"topicalchat", "hanna"}  # benchmarks whose outputs are not summaries of their source


def fused_unavailable(provider: Provider, item: JudgeItem, criterion: Criterion, options: ScorerOptions) -> tuple[str | None, tuple[FusedModelFile, CriterionModel] | None]:
    """Why the fused judge cannot judge this (None when it can), and the criterion model when it can."""
    caps = provider.capabilities
    if not (caps.loglikelihood and caps.exact_labels):
        return f"{provider.kind}/{provider.model} gives no token likelihoods and exact label probabilities", None
    if options.dataset in NOT_SUMMARIES or item.context is not None:
        return "the fused judge is fitted on summaries of a source, and this is another task", None
    if options.template is not None:
        return f"a prompt template ({options.template.id}) was configured, and the prompted method runs it", None
    if item.source is None or not item.source.strip():
        return "the item has no source, and the fused judge scores an output against its source", None
    fitted = fused.fit_for(provider, options)
    if fitted is None:
        return f"no fused fit for the model file of {provider.model}", None
    model = fused.criterion_model(fitted, criterion, item)
    if model is None:
        return f"the fused fit has no model for criterion {criterion.name!r} (it knows {', '.join(fitted.criterion_names())})", None
    return None, (fitted, model)


async def score(provider: Provider, item: JudgeItem, criterion: Criterion, options: ScorerOptions, method: str = "auto") -> JudgeResult:
    reason, found = fused_unavailable(provider, item, criterion, options)
    if reason is None:
        assert found is not None  # no reason: the fit and the criterion model were found
        fitted, model = found
        result = await fused.score_with(provider, item, criterion, fitted, model, "fused")
        note = "auto chose fused: a fit for this model file and criterion"
    else:
        result = await likert.score(provider, item, criterion, options, PROMPTED)
        note = f"auto chose {PROMPTED}: {reason}"
    # ``method`` names what produced the number (fused/..., geval/...); the choice is in the reason and notes
    return result.model_copy(update={"method_reason": f"{note}; {result.method_reason}", "notes": [note, *result.notes]})
