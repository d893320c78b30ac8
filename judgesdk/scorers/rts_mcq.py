"""Reason-then-score and multiple-choice scoring (001 §3.1, Tables 1-2 and 8-13).

* ``rts``: the judge writes its reason in one sentence, then a final score from one to five
  (chain-of-thought style). The score is read from the free text by :func:`judgesdk.estimation.parsing.parse_score`
  (last marked number, fractions like "2.5 out of 5" kept as decimals); the whole answer is kept as
  ``rationale``. 001 decodes at temperature 0; ``options.extra["max_tokens"]`` (default 256) bounds the
  answer. An answer without a readable score gives status ``unparsed`` and no score. On providers that
  honour a grammar the answer is one sentence then ``Final score: <label>`` (:mod:`judgesdk.estimation.grammars`),
  repaired once when it still does not parse; method option ``grammar = false`` lets it run free.
* ``mcq``: the judge picks one of five letters, each with a fixed description (A = One ... E = Five),
  so that no free reasoning can mislead it (001 §3.1). Letters map to 1-5 through ``Scale.letters()``
  and are read by ``estimate()``: exact letter probabilities or top-k logprobs where the provider gives
  them (the score is then the expected value, G-Eval style), otherwise the greedy letter, parsed.

The bundled prompts are 001's wording for the four SummEval criteria (``rts.<criterion>``,
``mcq.<criterion>``) on a 1-5 scale; ``options.template`` replaces them for any other criterion.
"""

from __future__ import annotations

from judgesdk.core import Criterion, InputError, JudgeItem, JudgeResult, Scale
from judgesdk.estimation import FormatUse, estimate, format_for, parse_score, repair
from judgesdk.prompting import Template, load_template
from judgesdk.provider import Provider
from judgesdk.scorers.common import (
    ScorerOptions,
    greedy_request,
    greedy_without_probabilities,
    result_from_estimate,
    result_from_responses,
    template_values,
)
from judgesdk.scorers.spec import MethodSpec

PAPER_CRITERIA = ("coherence", "consistency", "fluency", "relevance")
PAPER_SCALE = Scale.likert(1, 5)
RTS_MAX_TOKENS = 256


async def score(
    provider: Provider, item: JudgeItem, criterion: Criterion, options: ScorerOptions, method: str
) -> JudgeResult:
    """Score with ``method`` "rts" or "mcq" (see the module docstring)."""
    if method == "rts":
        return await score_rts(provider, item, criterion, options)
    if method == "mcq":
        return await score_mcq(provider, item, criterion, options)
    raise InputError(f"the rts_mcq scorer runs methods 'rts' and 'mcq', not {method!r}")


def paper_template(kind: str, criterion: Criterion, options: ScorerOptions) -> Template:
    """``options.template``, else 001's ``<kind>.<criterion>`` prompt (which asks for one to five)."""
    if options.template is not None:
        return options.template
    name = criterion.name.strip().lower()
    if name not in PAPER_CRITERIA:
        raise InputError(
            f"001 prints {kind.upper()} prompts only for {', '.join(PAPER_CRITERIA)}, not {criterion.name!r}: "
            f"use one of those criteria or pass template=... (placeholders: source, output)"
        )
    if criterion.scale.values != PAPER_SCALE.values:
        raise InputError(
            f"{kind}.{name} asks for a score from one to five, but criterion {criterion.name!r} has scale "
            f"{criterion.scale.labels}: use a 1-5 criterion or pass template=..."
        )
    return load_template(f"{kind}.{name}")


async def score_rts(provider: Provider, item: JudgeItem, criterion: Criterion, options: ScorerOptions) -> JudgeResult:
    """001's RTS: one greedy free-text answer; the score is parsed from it, the text kept as rationale."""
    template = paper_template("rts", criterion, options)
    max_tokens = int(options.extra.get("max_tokens", RTS_MAX_TOKENS))
    fmt = format_for("rts", provider, criterion.scale, options.extra, max_tokens=max_tokens)
    values = template_values(item, criterion)
    request = greedy_request(template, values, max_tokens, options.settings.seed, grammar=fmt.grammar if fmt else None)
    responses = [await provider.generate(request)]
    text = responses[0].choices[0].text if responses[0].choices else ""
    parsed = parse_score(text, criterion.scale)
    reason = "score parsed from the free-text answer (001 §3.1 RTS)"
    details: dict[str, object] = {}
    notes: list[str] = []
    if fmt is not None:
        use = FormatUse(format="rts", answers=1)
        if not parsed.ok:
            repaired, text = await repair(provider, request, text, fmt)
            responses.append(repaired)
            parsed = parse_score(text, criterion.scale)
            use = use.model_copy(update={"repairs": 1, "repaired": int(parsed.ok)})
        reason = "score parsed from the grammar-constrained answer (001 §3.1 RTS)"
        details, notes = {"answer_format": use.model_dump()}, [use.note()]
    if not parsed.ok:
        reason += f": {parsed.status}" + (f", read {parsed.span!r}" if parsed.span else ", no score in the answer")
    return result_from_responses(
        provider,
        responses,
        notes=notes,
        details=details,
        score=parsed.value,
        status="ok" if parsed.ok else "unparsed",
        criterion=criterion.name,
        method="rts/parsed",
        method_reason=reason,
        rationale=text.strip() or None,
        raw=[text],
        item_id=item.id,
    )


async def score_mcq(provider: Provider, item: JudgeItem, criterion: Criterion, options: ScorerOptions) -> JudgeResult:
    """001's MCQ: letters A.. over the criterion's values (A-E = 1-5), read by ``estimate()``."""
    template = paper_template("mcq", criterion, options)
    letters = Scale.letters(criterion.scale.values)
    messages = template.render(**template_values(item, criterion))
    settings = greedy_without_probabilities(options.settings, provider.capabilities)
    found = await estimate(provider, messages, letters, settings, tags=template.tags())
    return result_from_estimate(found, criterion, "mcq", item)


RTS = MethodSpec(name="rts", score=score, options={"max_tokens": "positive_integer", "grammar": "boolean"})
MCQ = MethodSpec(name="mcq", score=score)
