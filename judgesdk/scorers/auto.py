"""``method = "auto"`` (the default): the fused judge where it has been fitted and measured, else G-Eval.

The fused judge (:mod:`judgesdk.scorers.fused`) is used when the provider gives token likelihoods (a local
model, or a server echoing prompt log-probabilities whose model file the config names by its sha256) and, for a
fit that asks yes/no questions, exact label probabilities; a fit exists for its model file whose domain holds
the item (news summaries, grounded dialogue responses, stories: :mod:`judgesdk.fused.domains`, checked on the
item's shape before any model call); that fit has a model for the criterion (by name or alias: faithfulness is
consistency); and no prompt template was configured. Anything else (hosted providers, an item no fit was made
for, a criterion a fit declined for lack of signal, a chosen template) is judged by the prompted method, and
the result's notes and ``details.auto`` say why, so a reader never mistakes one scale for the other and every
row names the fit or the fallback that produced it. A provider that answers decision questions
(:mod:`judgesdk.scorers.decision`) is asked those instead of a prompt: its own distribution, the criteria of an
item in one request.
"""

from __future__ import annotations

from judgesdk.core import Criterion, JudgeItem, JudgeResult
from judgesdk.provider import Provider
from judgesdk.scorers import decision, fused, likert
from judgesdk.scorers.common import ScorerOptions
from judgesdk.scorers.spec import MethodSpec

PROMPTED = "geval"
# Benchmarks whose outputs are not summaries: `judgesdk bench` names them in the options (the prompted
# methods pick per-dataset templates by it). The fused judge does not read the name: a fit applies by the
# item's shape, so a dialogue or story gets its own domain's fit or the fallback, whatever the file is called.
NOT_SUMMARIES = {"topicalchat", "hanna"}


def fused_unavailable(provider: Provider, item: JudgeItem, criterion: Criterion, options: ScorerOptions) -> tuple[str | None, fused.Choice | None]:
    """Why the fused judge cannot judge ``item`` on ``criterion`` with ``provider`` under ``options`` (None when
    it can: likelihoods, no configured template, a source, and a fit that applies), and the
    :class:`~judgesdk.scorers.fused.Choice`
    (the fit and criterion model when it can; why each fit does not apply when a fit was looked for)."""
    caps = provider.capabilities
    if not caps.loglikelihood:
        return f"{provider.kind}/{provider.model} gives no token likelihoods", None
    if options.template is not None:
        return f"a prompt template ({options.template.id}) was configured, and the prompted method runs it", None
    if item.source is None or not item.source.strip():
        return "the item has no source, and the fused judge scores an output against its source", None
    fits = fused.fits_for(provider, options)
    if not fits:
        return f"no fused fit for the model file of {provider.model}", None
    choice = fused.choose(fits, item, criterion)
    if choice.fitted is None:
        return f"no fused fit applies to this item: {choice.why()}", choice
    if not caps.exact_labels and choice.model is not None and any(f"yes_{name}" in choice.model.features for name in fused.QUESTIONS):
        return (
            f"the fused fit asks yes/no questions, which need exact label probabilities that {provider.kind}/{provider.model} does not give",
            None,
        )
    return None, choice


async def score(provider: Provider, item: JudgeItem, criterion: Criterion, options: ScorerOptions, method: str = "auto") -> JudgeResult:
    reason, found = fused_unavailable(provider, item, criterion, options)
    choice = found if isinstance(found, fused.Choice) else None
    if reason is None and choice is not None and choice.fitted is not None and choice.model is not None:
        result = await fused.score_with(provider, item, criterion, choice.fitted, choice.model, "fused", choice=choice, levels=bool(options.extra.get(fused.LEVELS)))
        note = f"auto chose fused: the {choice.fitted.domain} fit for this model file holds the item and has {criterion.name}"
        auto = {"chose": "fused", "fit": choice.fitted.label, "domain": choice.fitted.domain, "outside_domain": False, "reasons": choice.reasons}
    elif decision.chosen(provider, "auto", options.settings)[0]:  # its method_reason says why
        return await decision.score(provider, item, criterion, options, "auto")
    else:
        result = await likert.score(provider, item, criterion, options, PROMPTED)
        note = f"auto chose {PROMPTED}: {reason}"
        outside = choice is not None and choice.outside_domain
        auto = {"chose": PROMPTED, "fit": None, "domain": None, "outside_domain": outside, "reasons": choice.reasons if choice else {}, "why": reason}
    # ``method`` names what produced the number (fused/..., geval/...); the choice is in the reason, notes and details
    return result.model_copy(
        update={"method_reason": f"{note}; {result.method_reason}", "notes": [note, *result.notes], "details": {**result.details, "auto": auto}}
    )


def summary_rows(results: list[JudgeResult]) -> list[tuple[str, str]]:
    """Run-summary rows for what ``auto`` chose: the fused fits used (domain/variant: items) and the items it
    judged by the fallback, with how many of those lay outside every fit's domain, read from the details of
    ``results`` (and of their parts), as (label, value) pairs. Empty when no result came from ``auto``."""
    used: dict[str, int] = {}
    fallback = outside = 0
    for result in results:
        parts = list(result.parts.values()) if result.parts else [result]
        for part in parts:
            chosen = (part.details or {}).get("auto")
            if not isinstance(chosen, dict):
                continue
            if chosen.get("chose") == fused.FUSED.name:
                fit = (part.details or {}).get("fit") or {}
                key = f"{chosen.get('domain')}/{fit.get('variant', '?')}"
                used[key] = used.get(key, 0) + 1
            else:
                fallback += 1
                outside += bool(chosen.get("outside_domain"))
    if not used and not fallback:
        return []
    rows = [("fused fits used", ", ".join(f"{k} {v}" for k, v in sorted(used.items())) or "none")]
    if fallback:
        rows.append((f"auto fell back to {PROMPTED}", f"{fallback} (outside every fit's domain: {outside}; the rest: no fit or no model for the criterion)"))
    return rows


AUTO = MethodSpec(
    name="auto",
    score=score,
    options={fused.OPTION: "any", fused.LEVELS: "boolean", decision.BINNING_OPTION: "positive_integer"},
    reads_fits=True,
    decisions="chosen_after_fits",
    resolves_per_criterion=True,
)
