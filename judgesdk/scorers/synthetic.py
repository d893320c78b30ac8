"""Synthetic-reference scoring (000 §2): score an output by comparing it with a ladder of generated references.

1. **Ladder** (000 §2.1). For a (source, criterion) the judge writes the worst and the best possible output
   (rungs 1 and N, ``synthetic.generate_extreme``), then recursively an output of intermediate quality
   between two neighbouring rungs (``synthetic.generate_intermediate``): for N = 5 rung 3 between 1 and 5,
   then 2 (between 1 and 3) and 4 (between 3 and 5). :func:`generation_order` gives the order for any N;
   000 evaluates N in {2, 3, 5, 9} (Table 2) and uses 5. Rungs of one recursion level are written
   concurrently; greedy decoding, ``max_tokens`` from ``options.extra["rung_max_tokens"]`` (default 256).
2. **Comparison** (000 §2.2). The output is compared with every rung i: ``synthetic.compare_bws`` reads
   p("Better" | i), p("Worse" | i), p("Similar" | i) (000: softmax over the labels' log-probabilities, i.e.
   :func:`judgesdk.estimation.estimator.estimate` with exact labels where the provider has them), and the score is
   000's weighted sum

       s = sum_{i=1..N} [i, -i, 0] . [p(Better | i), p(Worse | i), p(Similar | i)]
         = sum_i i * (p(Better | i) - p(Worse | i)),

   in [-N(N+1)/2, N(N+1)/2] (a ranking score, as 000 correlates it; not on the criterion's scale).
   ``options.extra["prediction"] = "yesno"`` uses 000's Yes/No prompt (Tables 16-18) with the comparison
   "have better <criterion>" (``options.extra["comparison"]`` overrides it); 000 does not print how the
   Yes/No probabilities are combined, so p(Yes | i) takes the place of p(Better | i) and p(No | i) of
   p(Worse | i) in the same sum (rank-equivalent to sum_i i * p(Yes | i), since p(No) = 1 - p(Yes)).

Ladders are kept per (source, criterion and definition, N, generation-template hashes) in a
:class:`LadderStore` held in ``options.extra["ladders"]`` (created there on first use, so one judge reuses a
ladder for every output of a source), and can be exported/imported as JSONL for review and reuse.
``options.dataset`` selects the paper's per-dataset prompt (``<id>.<dataset>``) where one exists;
``options.template`` replaces the comparison prompt when it has ``{{rung}}`` and ``{{output}}``.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path

from pydantic import BaseModel, model_validator

from judgesdk.core import Criterion, InputError, JudgeItem, JudgeResult, MissingItemField, Scale
from judgesdk.estimation import Estimate, estimate
from judgesdk.prompting import Template
from judgesdk.provider import Provider, Usage
from judgesdk.scorers.common import (
    KeyedStore,
    ScorerOptions,
    UnusableAnswer,
    generate_text,
    template_override,
    template_values,
    total_usage,
    variant_template,
    worst_status,
)
from judgesdk.scorers.spec import MethodSpec

DEFAULT_RUNGS = 5  # 000 §2.1 (N = 5, the rating scale of SummEval and NewsRoom)
PAPER_RUNGS = (2, 3, 5, 9)  # 000 Table 2
MAX_RUNGS = 33
BWS_SCALE = Scale(labels=("Better", "Worse", "Similar"), values=(1.0, -1.0, 0.0))
YESNO_SCALE = Scale(labels=("Yes", "No"), values=(1.0, -1.0))



# -- a keyed store of generated texts (ladders here, Fusion-Eval plans in fusion.py) ----------------


# -- ladders ---------------------------------------------------------------------------------------


class Ladder(BaseModel):
    """The synthetic references of one (source, criterion): ``texts[i-1]`` is rung i (1 = worst, N = best)."""

    key: str
    source: str
    criterion: str
    definition: str
    rungs: int
    templates: list[str]  # "<id>@<content hash>" of the generation templates
    texts: list[str]
    generation_order: list[int]
    provider: str = ""
    model: str = ""

    @model_validator(mode="after")
    def _complete(self) -> Ladder:
        if len(self.texts) != self.rungs or sorted(self.generation_order) != list(range(1, self.rungs + 1)):
            raise ValueError(f"a ladder of {self.rungs} rungs needs {self.rungs} texts and each rung once in generation_order")
        return self


class LadderStore(KeyedStore[Ladder]):
    """Ladders of one judge (``options.extra["ladders"]``)."""

    record_type = Ladder

    def export_ladders(self, path: str | Path) -> int:
        return self.export_jsonl(path)

    def import_ladders(self, path: str | Path) -> int:
        return self.import_jsonl(path)


def ladder_store(options: ScorerOptions) -> LadderStore:
    """The ladder store of these options, created on first use."""
    return options.store("ladders", LadderStore)


def generation_order(n: int) -> list[list[tuple[int, int | None, int | None]]]:
    """Rungs by recursion level as (rung, worse neighbour, better neighbour): [[1, N]], then midpoints (000 §2.1).

    N=5 gives [[(1), (5)], [(3, 1, 5)], [(2, 1, 3), (4, 3, 5)]].
    """
    if not isinstance(n, int) or not 2 <= n <= MAX_RUNGS:
        raise InputError(f"a ladder needs 2 to {MAX_RUNGS} rungs (000 uses {', '.join(map(str, PAPER_RUNGS))}), got {n!r}")
    levels: list[list[tuple[int, int | None, int | None]]] = [[(1, None, None), (n, None, None)]]
    gaps = [(1, n)]
    while gaps:
        level = [((lo + hi) // 2, lo, hi) for lo, hi in gaps if hi - lo > 1]
        if level:
            levels.append([*level])  # a copy typed as the ladder's rungs (whose first level has no bounds)
        gaps = [g for mid, lo, hi in level for g in ((lo, mid), (mid, hi))]
    return levels


async def build_ladder(provider: Provider, item: JudgeItem, criterion: Criterion, rungs: int, options: ScorerOptions) -> tuple[Ladder, Usage]:
    """Generate the ladder level by level (000 §2.1); rungs of one level concurrently."""
    extreme, middle = _generation_templates(options)
    base = template_values(item, criterion)
    max_tokens = int(options.extra.get("rung_max_tokens", 256))
    texts: dict[int, str] = {}
    usages: list[Usage] = []

    async def write(rung: int, worse: int | None, better: int | None) -> tuple[int, str, Usage]:
        if worse is None:
            values = {**base, "extreme": "worst" if rung == 1 else "best"}
            text, usage = await generate_text(provider, extreme, values, max_tokens, options.settings.seed)
        else:
            values = {**base, "worse_rung": texts[worse], "better_rung": texts[better]}  # type: ignore[index]
            text, usage = await generate_text(provider, middle, values, max_tokens, options.settings.seed)
        return rung, text, usage

    levels = generation_order(rungs)
    for level in levels:
        for rung, text, usage in await asyncio.gather(*(write(*spec) for spec in level)):
            texts[rung] = text
            usages.append(usage)
    ladder = Ladder(
        key=ladder_key(item.source or "", criterion, rungs, options),
        source=item.source or "",
        criterion=criterion.name,
        definition=criterion.description,
        rungs=rungs,
        templates=[f"{t.id}@{t.content_hash}" for t in (extreme, middle)],
        texts=[texts[i] for i in range(1, rungs + 1)],
        generation_order=[rung for level in levels for rung, _, _ in level],
        provider=provider.kind,
        model=provider.model,
    )
    return ladder, total_usage(usages)


def _generation_templates(options: ScorerOptions) -> tuple[Template, Template]:
    return (
        variant_template("synthetic.generate_extreme", options.dataset),
        variant_template("synthetic.generate_intermediate", options.dataset),
    )


def ladder_key(source: str, criterion: Criterion, rungs: int, options: ScorerOptions) -> str:
    """Key of a ladder: source, criterion name and definition, N, and the generation templates' hashes."""
    hashes = [t.content_hash for t in _generation_templates(options)]
    payload = json.dumps([source, criterion.name, criterion.description, rungs, hashes], ensure_ascii=False)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


# -- scoring ---------------------------------------------------------------------------------------


def weighted_sum(rung_probs: list[tuple[float, float, float]]) -> float:
    """000 §2.2: s = sum_i [i, -i, 0] . [p(Better|i), p(Worse|i), p(Similar|i)], rungs numbered from 1."""
    return float(sum(i * better - i * worse + 0 * similar for i, (better, worse, similar) in enumerate(rung_probs, start=1)))


def _prediction(options: ScorerOptions, criterion: Criterion) -> tuple[Template, Scale, dict[str, str]]:
    """The comparison template, its labels, and extra values (000 Table 13-15, or Yes/No Tables 16-18)."""
    kind = options.extra.get("prediction", "bws")
    custom = template_override(options, {"rung", "output"})
    if kind == "bws":
        return custom or variant_template("synthetic.compare_bws", options.dataset), BWS_SCALE, {}
    if kind == "yesno":
        comparison = str(options.extra.get("comparison") or f"have better {criterion.name.lower()}")
        return custom or variant_template("synthetic.compare_yesno", options.dataset), YESNO_SCALE, {"comparison": comparison}
    raise InputError(f"extra['prediction'] must be 'bws' (p Better/Worse/Similar) or 'yesno', got {kind!r}")


def _rung_probs(found: Estimate, scale: Scale) -> tuple[float, float, float] | None:
    """(p Better, p Worse, p Similar) of one rung; Yes/No maps to (Yes, No, 0)."""
    if found.distribution is None:
        return None
    probs = found.distribution.probs
    return (probs[0], probs[1], probs[2] if len(probs) > 2 else 0.0)


async def score(provider: Provider, item: JudgeItem, criterion: Criterion, options: ScorerOptions, method: str = "synthetic") -> JudgeResult:
    """Score ``item`` against the synthetic ladder of its source (module docstring)."""
    if item.source is None or not item.source.strip():
        raise MissingItemField("it has no 'source', and synthetic-reference scoring writes references from the source: pass source='...'")
    rungs = options.extra.get("rungs", DEFAULT_RUNGS)
    generation_order(rungs)  # checks N before anything is generated
    template, scale, extra_values = _prediction(options, criterion)
    store = ladder_store(options)
    generated: list[Usage] = []

    async def build() -> Ladder:
        ladder, usage = await build_ladder(provider, item, criterion, rungs, options)
        generated.append(usage)
        return ladder

    try:
        ladder, built = await store.get_or_build(ladder_key(item.source, criterion, rungs, options), build)
    except UnusableAnswer as exc:
        return _failed(criterion, method, item, provider, f"ladder generation failed: {exc}", total_usage(generated))
    values = template_values(item, criterion)
    found = await asyncio.gather(
        *(estimate(provider, template.render(**values, **extra_values, rung=rung), scale, options.settings, tags=template.tags()) for rung in ladder.texts)
    )
    return _result(found, scale, criterion, method, item, ladder, built, total_usage([*generated, *(f.usage for f in found)]))


def _result(found: list[Estimate], scale: Scale, criterion: Criterion, method: str, item: JudgeItem, ladder: Ladder, built: bool, usage: Usage) -> JudgeResult:
    probs = [_rung_probs(f, scale) for f in found]
    usable = None not in probs
    methods = sorted({f.method for f in found})
    notes = [f"ladder {ladder.key[:12]} ({ladder.rungs} rungs) {'generated' if built else 'reused'}"]
    notes += [_rung_note(i, f, scale) for i, f in enumerate(found, start=1)]
    return JudgeResult(
        score=weighted_sum(probs) if usable else None,  # type: ignore[arg-type]
        status=worst_status([f.status for f in found]),
        criterion=criterion.name,
        method=f"{method}/{'+'.join(methods)}",
        method_reason=f"000 §2.2 weighted sum over {ladder.rungs} rungs of p({'/'.join(scale.labels)}); {found[0].reason}",
        raw=[t for f in found for t in f.texts],
        provider=found[0].provider,
        model=found[0].model,
        cached=all(f.cached for f in found) and not built,
        usage=usage,
        latency_s=sum(f.latency_s for f in found),
        notes=notes + [n for f in found for n in f.notes],
        details={
            "ladder": ladder.key,
            "rungs": ladder.rungs,
            "ladder_generated": built,
            "rung_probs": [f.distribution.as_dict() if f.distribution is not None else None for f in found],
        },
        item_id=item.id,
    )


def _rung_note(rung: int, found: Estimate, scale: Scale) -> str:
    if found.distribution is None:
        return f"rung {rung}: {found.status} ({found.reason})"
    shown = " ".join(f"p({label})={p:.4f}" for label, p in found.distribution.as_dict().items())
    return f"rung {rung}: {shown}"


def _failed(criterion: Criterion, method: str, item: JudgeItem, provider: Provider, why: str, usage: Usage) -> JudgeResult:
    return JudgeResult(
        score=None,
        status="unparsed",
        criterion=criterion.name,
        method=method,
        error=why,
        provider=provider.kind,
        model=provider.model,
        usage=usage,
        notes=[why],
        item_id=item.id,
    )


__all__ = [
    "KeyedStore",
    "Ladder",
    "LadderStore",
    "UnusableAnswer",
    "build_ladder",
    "generate_text",
    "generation_order",
    "ladder_key",
    "ladder_store",
    "score",
    "weighted_sum",
]


SYNTHETIC = MethodSpec(
    name="synthetic",
    score=score,
    options={"rungs": "any", "rung_max_tokens": "positive_integer", "prediction": "any", "comparison": "any", "ladders": "any"},
    off_scale="a ranking score against a ladder of references",
    forecast_approximation="later prompts embed generated texts (ladders, plans), counted at max_tokens each: an approximation",
)
