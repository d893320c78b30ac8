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

A method measured at chance on a model is never a fallback for it (issue 45): on a model file where the prompted
method was measured at chance (the embedded Gemma 3 270M: ``judgesdk/fused/data/fallbacks.json``), an item no fit
holds goes down the ladder instead. The overlap rung (:mod:`judgesdk.fused.overlap`) answers where the overlap
signal fixed for the criterion (consistency, relevance; with a reference or without) was measured on the shared
data with a 95 % interval above 0 for the item's shape (short, or longer); its score is the signal's empirical
quantile among the shared data's items mapped linearly onto the criterion's scale (a rank position, no
interval). Elsewhere the answer is ``refused``, saying why: never a chance-level number. Hosted providers (no
likelihoods) keep the prompted fallback: it was not measured at chance on them.
"""

from __future__ import annotations

from typing import Any

from judgesdk.core import Criterion, JudgeItem, JudgeResult
from judgesdk.fused import at_chance, decide, ladder_label, model_sha256, overlap_signals, to_scale
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
    elif (chance := _prompted_at_chance(provider, options)) is not None:
        return ladder(provider, item, criterion, reason or "", choice, chance)
    else:
        result = await likert.score(provider, item, criterion, options, PROMPTED)
        note = f"auto chose {PROMPTED}: {reason}"
        outside = choice is not None and choice.outside_domain
        auto = {"chose": PROMPTED, "fit": None, "domain": None, "outside_domain": outside, "reasons": choice.reasons if choice else {}, "why": reason}
    # ``method`` names what produced the number (fused/..., geval/...); the choice is in the reason, notes and details
    return result.model_copy(
        update={"method_reason": f"{note}; {result.method_reason}", "notes": [note, *result.notes], "details": {**result.details, "auto": auto}}
    )


def _prompted_at_chance(provider: Provider, options: ScorerOptions) -> dict[str, Any] | None:
    """The measured entry saying the prompted method is at chance on ``provider``'s model file (None for hosted
    providers, which give no likelihoods, for a model file never measured so, and where ``options`` configure a
    prompt template: a template the user chose is run as asked)."""
    if not provider.capabilities.loglikelihood or options.template is not None:
        return None
    return at_chance(model_sha256(provider), PROMPTED)


def ladder(provider: Provider, item: JudgeItem, criterion: Criterion, reason: str, choice: fused.Choice | None, chance: dict[str, Any]) -> JudgeResult:
    """Where no fit holds ``item`` for ``criterion`` on ``provider``'s model file and the prompted fallback was
    measured at chance there (``chance``: that measured entry), the overlap rung's answer or ``refused``; ``reason``
    says why no fit holds and ``choice`` is the fit search (None when none was made). No model call."""
    rung = decide(criterion.name, item.output, item.source, item.reference, item.context)
    figs = chance.get("figures", {}).get("per_doc_spearman", {})
    measured = f"{PROMPTED} is at chance on {chance['model']} (per-document Spearman {', '.join(f'{k} {v}' for k, v in figs.items())}: {chance['source']})"
    auto: dict[str, Any] = {
        "fit": None, "domain": None, "outside_domain": choice is not None and choice.outside_domain,
        "reasons": choice.reasons if choice else {}, "why": reason, "not_chosen": {PROMPTED: measured},
        "rung": {"criterion": rung.criterion, "variant": rung.variant, "shape": rung.shape, "signal": rung.signal,
                 "figure": rung.figure, "why": rung.why},
    }  # fmt: skip
    common = {"criterion": criterion.name, "provider": provider.kind, "model": provider.model, "item_id": item.id}
    if rung.signal is None or rung.figure is None:
        note = f"auto refused: no fused fit holds ({reason}); {measured}, so it is no fallback; the overlap rung declines: {rung.why}"
        return JudgeResult(
            score=None, status="refused", method="auto/refused", method_reason=note, notes=[note],
            details={"auto": {"chose": "refused", **auto}}, **common,
        )  # fmt: skip
    values = overlap_signals(item.output, item.source, item.reference)
    low, high = min(criterion.scale.values), max(criterion.scale.values)
    value = to_scale(rung.signal, values[rung.signal], low, high)
    fig = rung.figure
    measured_rung = f"rho {fig['rho']} [{fig['ci'][0]}, {fig['ci'][1]}] over {fig['n_docs']} documents of {', '.join(fig['datasets'])}"
    note = (
        f"auto chose the overlap rung ({rung.signal}, {rung.variant}, {rung.shape} item): no fused fit holds ({reason}); {measured}, "
        f"so it is no fallback; the rung's measured per-document Spearman with the human {rung.criterion} scores: {measured_rung}"
    )
    scale_note = (
        f"score = where {rung.signal} ({values[rung.signal]:.3f}) lies among the shared data's items, mapped linearly onto "
        f"{low:g}-{high:g}: it ranks outputs of one source, it is not calibrated to the human levels; no interval"
    )
    return JudgeResult(
        score=value, status="ok", method=f"overlap/{rung.variant}", method_reason=note, notes=[note, scale_note],
        details={
            "auto": {"chose": "overlap", **auto},
            "signals": {k: round(v, 4) for k, v in values.items()},
            "calibration": ladder_label(),
        },
        **common,
    )  # fmt: skip


def summary_rows(results: list[JudgeResult]) -> list[tuple[str, str]]:
    """Run-summary rows for what ``auto`` chose: the fused fits used (domain/variant: items) and the items it
    judged by the fallback, with how many of those lay outside every fit's domain, read from the details of
    ``results`` (and of their parts), as (label, value) pairs. Empty when no result came from ``auto``."""
    used: dict[str, int] = {}
    fallback = outside = 0
    rungs: dict[str, int] = {}
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
            elif chosen.get("chose") in ("overlap", "refused"):  # the ladder below a fit on a model where the prompted method is at chance
                rung = chosen.get("rung") or {}
                key = f"overlap ({rung.get('signal')})" if chosen.get("chose") == "overlap" else "refused"
                rungs[key] = rungs.get(key, 0) + 1
            else:
                fallback += 1
                outside += bool(chosen.get("outside_domain"))
    if not used and not fallback and not rungs:
        return []
    rows = [("fused fits used", ", ".join(f"{k} {v}" for k, v in sorted(used.items())) or "none")]
    if rungs:
        rows.append((f"outside every fit ({PROMPTED} at chance on this model)", ", ".join(f"{k} {v}" for k, v in sorted(rungs.items()))))
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
