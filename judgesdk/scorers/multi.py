"""The prompting strategies of 002 around direct Likert scoring, built on the likert scorer.

Every variant below renders a template and hands it to :func:`judgesdk.scorers.likert.score`, so the
three aggregations of 002 §4.2 (eq. 1-3: ``direct`` = Direct, ``geval`` = Logprob, ``sampling`` =
Approximation) apply to all of them unchanged.

* **Human / Model Guideline** (002 §4.1.1, Fig. 1, App. D Tables 20-21) are template choices only:
  ``template="direct.human_guideline"`` or ``"direct.model_guideline"``.
* **Fine-grained** (002 §4.1.2): one call per criterion, then the mean of the per-criterion scores
  (:func:`score_fine_grained`; the per-criterion results are kept in ``parts``).
* **Coarse-grained** (002 §4.1.2): one holistic call whose prompt lists every criterion
  (``direct.*_guideline.coarse``, :func:`score_coarse_grained`).
* **Demonstrations** (002 §4.1.3): one worst (score 1) or best (score 5) human-scored example, with
  or without a rationale, formatted like the judged item into ``{{demonstrations}}``
  (:func:`pick_demonstration`, :func:`format_demonstrations`, :func:`demonstration_template`).
* **Rationale generation** (002 §4.3, Fig. 2b, Table 17): the score read at ``Score:``, plus the
  judge's explanation (:func:`score_with_rationale`).
"""

from __future__ import annotations

import asyncio
import hashlib
import re
from collections.abc import Callable, Sequence
from typing import Literal

from pydantic import BaseModel, ConfigDict

from judgesdk.core import Criterion, InputError, JudgeItem, JudgeResult, ResultStatus, Scale
from judgesdk.prompting import Template, load_template
from judgesdk.provider import Provider
from judgesdk.scorers import decision, likert
from judgesdk.scorers.common import ScorerOptions, criteria_block, greedy_response, template_values
from judgesdk.scorers.registry import method_spec, scorer_for

Guideline = Literal["human", "model"]
_CRITERIA_SEPARATOR: dict[str, str] = {"human": ": ", "model": " - "}  # HG "Name: def", MG "Name - def"
RATIONALE_MAX_TOKENS = 256


class Demonstration(BaseModel):
    """One human-scored example for in-context demonstration (002 §4.1.3, Tables 15-16)."""

    model_config = ConfigDict(frozen=True)

    source: str
    output: str
    score: float
    rationale: str | None = None  # 002's "Reason" variant: a rationale for the human score


# -- templates with some placeholders filled ------------------------------------------------------


def _constant(value: str) -> Callable[[re.Match[str]], str]:
    """A replacement function for re.sub that inserts ``value`` as is (a replacement string would read its backslashes)."""
    return lambda _match: value


def bind(template: Template, **values: str) -> Template:
    """``template`` with the named placeholders filled, the others left for the scorer to render.

    Used to put demonstrations or a criteria list into a template before it goes through the likert
    scorer, whose values are only the item's and the criterion's. The content hash covers the values.
    """
    for name, value in values.items():
        if "{{" in value:
            raise InputError(f"the value bound to {{{{{name}}}}} contains '{{{{', which would be read as a placeholder")

    def fill(text: str | None) -> str | None:
        if text is None:
            return None
        for name, value in values.items():
            text = re.sub(r"\{\{\s*" + re.escape(name) + r"\s*\}\}", _constant(value), text)
        return text

    digest = hashlib.sha256(repr((template.content_hash, sorted(values.items()))).encode("utf-8")).hexdigest()[:16]
    filled = {
        "system": fill(template.system),
        "user": fill(template.user),
        "answer_prefix": fill(template.answer_prefix),
    }
    return template.model_copy(update={**filled, "content_hash": digest})


def shared_scale(criteria: Sequence[Criterion]) -> Scale:
    """The one scale of ``criteria``: 002 averages (or asks holistically) on a common scale."""
    if not criteria:
        raise InputError("pass at least one criterion")
    scales = {c.scale for c in criteria}
    if len(scales) > 1:
        names = ", ".join(f"{c.name} {c.scale.labels[0]}-{c.scale.labels[-1]}" for c in criteria)
        raise InputError(f"criteria scored together need one scale, got {names}: judge them separately")
    return criteria[0].scale


# -- fine- and coarse-grained ---------------------------------------------------------------------


async def score_fine_grained(
    provider: Provider,
    item: JudgeItem,
    criteria: Sequence[Criterion],
    options: ScorerOptions,
    method: str = "geval",
    guideline: Guideline = "model",
) -> JudgeResult:
    """002 §4.1.2 fine-grained: score each criterion with ``method``, then average (the parts are kept).

    On a provider that answers decision questions (:mod:`judgesdk.scorers.decision`), the criteria are one
    request with a question each. Otherwise the criteria of one output are asked together, so a provider sees
    their prompts side by side: with a
    template that defines every criterion up front (``{{criteria}}``, filled here, e.g.
    ``direct.likert.shared_criteria``) they differ only in the answer prefix, and a local model reuses
    the rest of the prompt for every criterion after the first.

    ``provider`` judges ``item`` on each of ``criteria`` (one shared scale, else
    :class:`~judgesdk.core.errors.InputError`) under ``options``; ``guideline`` (``model`` or ``human``) picks how
    the criteria are written into a configured template. Returns :func:`combine`'s result: the mean, with each
    criterion's result in ``parts``.
    """
    shared_scale(criteria)
    if decision.chosen(provider, method, options.settings)[0]:  # one decision request asks every criterion
        return combine(await decision.score_criteria(provider, item, criteria, options, method), method, item)
    if options.template is not None:
        options = options.model_copy(update={"template": with_criteria(options.template, criteria, guideline)})
    scorer = scorer_for(method)
    results = await asyncio.gather(*(scorer(provider, item, c, options, method) for c in criteria))
    return combine({c.name: r for c, r in zip(criteria, results)}, method, item)


def combine(parts: dict[str, JudgeResult], method: str, item: JudgeItem) -> JudgeResult:
    """One result for ``item`` from its per-criterion results ``parts`` (criterion name -> result): the mean of
    the part scores, with the parts kept in ``parts``; no score when any part has none (its status is reported).
    ``method`` is the method that was asked for, named in the result's ``method`` (for one that resolves per
    criterion, such as ``auto``, what the parts resolved to, or ``mixed`` when they differ)."""
    failed = [r.status for r in parts.values() if r.score is None]
    flagged = any(r.status == "low_coverage" for r in parts.values())
    status: ResultStatus = failed[0] if failed else ("low_coverage" if flagged else "ok")
    scores = [r.score for r in parts.values() if r.score is not None]
    results = list(parts.values())
    return JudgeResult(
        score=None if failed else sum(scores) / len(scores),
        status=status,
        criterion="+".join(parts),
        method=f"{_family(results, method)}/fine-grained",
        method_reason="002 §4.1.2 fine-grained: mean of the per-criterion scores (see parts)",
        provider=results[0].provider,
        model=results[0].model,
        cached=all(r.cached for r in results),
        usage=sum((r.usage for r in results[1:]), results[0].usage),
        latency_s=sum(r.latency_s for r in results),
        notes=[f"{name}: {r.score if r.score is not None else r.status} ({r.method})" for name, r in parts.items()],
        item_id=item.id,
        parts=parts,
    )


def with_criteria(template: Template, criteria: Sequence[Criterion], guideline: Guideline) -> Template:
    """``template`` with its ``{{criteria}}`` block filled from ``criteria`` (unchanged when it has none)."""
    if "criteria" not in template.variables:
        return template
    return bind(template, criteria=format_criteria(criteria, guideline))


def format_criteria(criteria: Sequence[Criterion], guideline: Guideline) -> str:
    """The ``{{criteria}}`` block: one "Name: definition" (HG) or "Name - definition" (MG) line each."""
    return criteria_block(criteria, _CRITERIA_SEPARATOR[guideline])


async def score_coarse_grained(
    provider: Provider,
    item: JudgeItem,
    criteria: Sequence[Criterion],
    options: ScorerOptions,
    method: str = "geval",
    guideline: Guideline = "human",
) -> JudgeResult:
    """002 §4.1.2 coarse-grained: one holistic score with every criterion in the prompt.

    Template: ``options.template`` or ``direct.<guideline>_guideline.coarse``; the result's criterion is
    "overall" on the criteria's shared scale (criteria on different scales are an
    :class:`~judgesdk.core.errors.InputError`). ``provider`` judges ``item`` with the likert ``method``
    (``geval``, ``direct``, ``sampling``...); ``guideline`` (``human`` or ``model``) picks how the criteria are
    written into the prompt. Returns the one holistic result.
    """
    scale = shared_scale(criteria)
    template = with_criteria(options.template_or(f"direct.{guideline}_guideline.coarse"), criteria, guideline)
    overall = Criterion(name="overall", description=format_criteria(criteria, guideline), scale=scale)
    result = await likert.score(provider, item, overall, options.model_copy(update={"template": template}), method)
    note = f"coarse-grained over {', '.join(c.name for c in criteria)} (002 §4.1.2)"
    return result.model_copy(update={"method": f"{result.method}/coarse-grained", "notes": [note, *result.notes]})


# -- demonstrations -------------------------------------------------------------------------------


def pick_demonstration(pool: Sequence[Demonstration], kind: Literal["worst", "best"]) -> Demonstration:
    """002 §4.1.3: the lowest- ('worst') or highest-scored ('best') example of ``pool`` (first on ties).

    The pool should hold other items of the same criterion, never the item being judged.
    """
    if not pool:
        raise InputError("pick_demonstration needs a non-empty pool of human-scored examples")
    if kind not in ("worst", "best"):
        raise InputError(f"kind must be 'worst' or 'best', got {kind!r}")
    return min(pool, key=lambda d: d.score) if kind == "worst" else max(pool, key=lambda d: d.score)


def format_demonstration(demo: Demonstration, criterion: Criterion, guideline: Guideline = "human") -> str:
    """One example laid out like the judged item of the HG (and RG) or MG prompt, then its score
    and, for 002's "Reason" variant, its rationale (template descriptions of ``direct.*.demo``)."""
    score = f"{demo.score:g}"
    if guideline == "model":
        text = f"Source Text:\n\n{demo.source}\n\nSummary:\n\n{demo.output}\n\n- {criterion.name}: {score}"
    else:
        text = f"Source text: {demo.source}\n\nSummary: {demo.output}\n\nScore: {score}"
    return f"{text}\n\nRationale: {demo.rationale}" if demo.rationale else text


def format_demonstrations(demos: Sequence[Demonstration], criterion: Criterion, guideline: Guideline = "human") -> str:
    """Several examples separated by blank lines (002 itself uses one per judged item)."""
    if not demos:
        raise InputError("pass at least one demonstration")
    return "\n\n".join(format_demonstration(d, criterion, guideline) for d in demos)


def demonstration_template(
    demos: Sequence[Demonstration],
    criterion: Criterion,
    guideline: Literal["human", "model", "rationale"] = "human",
) -> Template:
    """``direct.<guideline>_guideline.demo`` (or ``direct.rationale.demo``) with the examples bound: ``demos``
    (at least one, else :class:`~judgesdk.core.errors.InputError`) written out for ``criterion``.

    Pass the result as ``template=`` to the likert scorer (``geval``/``direct``/``sampling``) or, for
    ``"rationale"``, to :func:`score_with_rationale`.
    """
    template_id = "direct.rationale.demo" if guideline == "rationale" else f"direct.{guideline}_guideline.demo"
    layout: Guideline = "model" if guideline == "model" else "human"
    return bind(load_template(template_id), demonstrations=format_demonstrations(demos, criterion, layout))


# -- rationale generation -------------------------------------------------------------------------


async def score_with_rationale(
    provider: Provider, item: JudgeItem, criterion: Criterion, options: ScorerOptions, method: str = "geval"
) -> JudgeResult:
    """002 §4.3 Rationale Generation: the score, read at the prompt's ``Score:`` like any likert score
    (``method`` picks Direct / Logprob / Approximation), and the judge's explanation, one greedy
    continuation of the same prompt (``options.extra["max_tokens"]``, default 256; a local provider
    reuses the prompt's KV prefix). Template: ``options.template`` or ``direct.rationale``. ``provider`` judges
    ``item`` on ``criterion``; returns the likert result with the explanation in ``rationale`` (None when the
    continuation is empty), the usage and latency of both requests added."""
    template = options.template_or("direct.rationale")
    scored = await likert.score(provider, item, criterion, options.model_copy(update={"template": template}), method)
    max_tokens = int(options.extra.get("max_tokens", RATIONALE_MAX_TOKENS))
    response, text = await greedy_response(provider, template, template_values(item, criterion), max_tokens, options.settings.seed)
    return scored.model_copy(
        update={
            "rationale": text.strip() or None,
            "raw": [*scored.raw, text],
            "usage": scored.usage + response.usage,
            "latency_s": scored.latency_s + response.latency_s,
            "cached": scored.cached and response.cached,
            "method": f"{scored.method}/rationale",
        }
    )


def _family(results: list[JudgeResult], method: str) -> str:
    """The method the parts were scored with (``auto`` resolves per criterion, ``MethodSpec.resolves_per_criterion``:
    name what it resolved to, or ``mixed`` when the parts' scales differ)."""
    families = {r.method.split("/")[0] for r in results if r.score is not None}
    if not method_spec(method).resolves_per_criterion or not families:
        return method
    return families.pop() if len(families) == 1 else "mixed"
