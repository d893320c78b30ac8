"""The judge behind ``judgesdk serve``, and how each question of a decision request becomes a judgement.

A question is judged as the criterion it names, on its own levels, through :meth:`Judge.ascore`, the same call
``judge.score()`` makes, so a served distribution is the judge's own:

* a **score** question named ``N`` with levels ``l1..lk`` (lowest first) is ``Criterion(name=N, description=
  instructions, scale=Scale(labels=(l1..lk), values=(1..k)))``; the answer's probabilities are the result's
  distribution over those levels;
* a **predicate** is the criterion on a ``No``/``Yes`` scale, answered with P(Yes);
* a **choice** is the criterion on a scale of its options (in order; values compared by type, so
  ``[true, "true"]`` are two options: :func:`option_labels`), or, for a comparison input (``outputs``
  ``{"A": ..., "B": ...}`` with a ``source``), :meth:`Judge.acompare` in both orders under any question name,
  ``tie`` being the probability of a tie where an option is named ``tie`` (001's head-to-head prompt, printed
  for SummEval's four criteria only: a ``tie`` question under another name is refused, per question, saying to
  rename it or drop ``tie``).

A score question's distribution from the fused judge has the judgement's score as its expected level
(:mod:`judgesdk.fused.levels`), so a decisions client, ``judge.score()`` and the ``--record`` row read one score.

Which judge answers what:

* **The embedded local judge** (the default, or any chain whose first provider gives token likelihoods and
  exact label probabilities): the fused judge answers a score question that names a criterion it has a fit
  for (by name or alias) about an output with a source, with its predictive distribution over the question's
  levels (:mod:`judgesdk.fused.levels`: the fit's 1-5 human scale mapped onto the levels). Any other question
  gets a per-question refusal naming why (a small model's prompted answers are at chance), unless the server
  was started with ``--allow-unfitted``: then the prompted method (``geval``) answers it and the answer is
  flagged ``unfitted``.
* **Any other chain** (a hosted model behind judgesdk's cache, fallback, budget and rate limits): every
  question is answered by the configured method.

A judgement that ends without a distribution (the provider failed, the answer could not be read) is a
refusal that says so: a served answer is never a made-up number.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from judgesdk.core import ConfigError, Criterion, InputError, JudgeItem, JudgeResult, ProviderError, Scale
from judgesdk.fused import model_sha256
from judgesdk.judging import Judge, JudgeConfig, budgeted_judge, load_config
from judgesdk.prompting import bundled_template_ids
from judgesdk.provider import Budget, BudgetMeter, ChoiceQuestion, DecisionAnswer, DecisionInput, PredicateQuestion, Provider, Question, ScoreQuestion, Usage
from judgesdk.scorers import LEVELS, fits_for, fused_unavailable

__all__ = ["Answered", "Backend", "EMBEDDED", "criterion_for"]

EMBEDDED: dict[str, Any] = {"providers": [{"kind": "local"}], "method": "auto"}  # the default judge: the embedded model
PREDICATE_SCALE = Scale(labels=("No", "Yes"), values=(0.0, 1.0))
PROMPTED = "geval"  # what answers an unfitted question when the server allows it


@dataclass
class Answered:
    """One question's answer, and the judgement it came from (recorded with ``--record``; None for a refusal
    made before judging, or a comparison)."""

    answer: DecisionAnswer
    result: JudgeResult | None = None


def criterion_for(question: Question) -> Criterion:
    """The criterion a question names, on the question's own levels (module docstring)."""
    name = question.name or "unnamed"
    description = question.instructions.strip() or name
    if isinstance(question, ScoreQuestion):
        labels = tuple(level.label for level in question.levels)
        return Criterion(name=name, description=description, scale=Scale(labels=labels, values=tuple(float(i) for i in range(1, len(labels) + 1))))
    if isinstance(question, PredicateQuestion):
        rules = " ".join(f"{answer} when: {rule}." for answer, rule in (("Yes", question.true_when), ("No", question.false_when)) if rule)
        return Criterion(name=name, description=f"{description} {rules}".strip(), scale=PREDICATE_SCALE)
    labels = option_labels(tuple(option.value for option in question.choices))
    return Criterion(name=name, description=description, scale=Scale(labels=labels, values=tuple(float(i) for i in range(len(labels)))))


def _option_label(value: str | bool) -> str:
    return ("true" if value else "false") if isinstance(value, bool) else value


def option_labels(values: tuple[str | bool, ...]) -> tuple[str, ...]:
    """The scale labels of a choice question's option ``values``, compared by type: a boolean is ``true`` or
    ``false``, unless a text option has that spelling (``[true, "true"]`` are two options), when the booleans
    are labelled ``true (boolean)`` / ``false (boolean)``."""
    plain = tuple(_option_label(value) for value in values)
    if len(set(plain)) == len(plain):
        return plain
    return tuple(f"{_option_label(value)} (boolean)" if isinstance(value, bool) else value for value in values)


class Backend:
    """A judge answering decision questions (module docstring). One per server; built from a judge config."""

    def __init__(self, judge: Judge, config: JudgeConfig, *, allow_unfitted: bool = False) -> None:
        self.judge = judge
        self.config = config
        self.allow_unfitted = allow_unfitted
        self.meter: BudgetMeter | None = None
        self.provider = self._first_usable()
        caps = self.provider.capabilities
        self.embedded = caps.loglikelihood and caps.exact_labels  # a local model: the fused judge's kind

    @classmethod
    def open(cls, config: Path | None = None, *, allow_unfitted: bool = False, budget: Budget | None = None) -> Backend:
        """The judge of ``config`` (a judge config file; None: the embedded local judge), its providers built now
        so that a server never starts without a usable judge (a :class:`ConfigError` naming why). With a
        ``budget``, every real call is metered under the cache (:mod:`judgesdk.provider.layers.budget`): once
        it is spent, the server answers 503 and cache hits are still served."""
        settings = load_config(config) if config is not None else load_config(EMBEDDED)
        if settings.jury is not None:
            raise ConfigError("judgesdk serve answers with one judge: remove [jury] from the config, or serve one judge of it")
        options = {**settings.method_options, LEVELS: True}  # the fused judge answers with its level distribution
        settings = settings.model_copy(update={"method_options": options})
        meter = BudgetMeter(budget) if budget is not None else None
        judge = budgeted_judge(settings, meter)
        try:
            judge.check_providers()
        except BaseException:
            judge.close()
            raise
        backend = cls(judge, settings, allow_unfitted=allow_unfitted)
        backend.meter = meter
        return backend

    def _first_usable(self) -> Provider:
        """The stack of the chain's first provider that can be built (the one that answers while it works)."""
        index = 0
        while True:
            try:
                return self.judge.provider(index)
            except ProviderError:
                index += 1
            except InputError:  # past the end of the chain
                break
        raise ConfigError("no provider of the judge's chain can be used: " + "; ".join(self.judge.unusable))

    def describe(self) -> dict[str, Any]:
        """What ``GET /v1/models`` says of this judge: how it answers and the criteria it has fits for."""
        fitted = self.fitted_criteria()
        return {
            "provider": self.provider.kind,
            "provider_model": self.provider.model,
            "method": self.config.method,
            "fitted_criteria": fitted,
            "answers": (
                "score questions naming a fitted criterion (the fused judge's predictive distribution); others "
                + ("with the prompted method, flagged unfitted" if self.allow_unfitted else "refused")
                if self.embedded
                else "every question, with the configured method"
            ),
        }

    def fitted_criteria(self) -> list[str]:
        """The criteria (and aliases) the fused judge has fits for on this provider's model file; none for a hosted chain."""
        if not self.embedded or model_sha256(self.provider) is None:
            return []
        fits = fits_for(self.provider, self.judge.options)
        return sorted({name for fitted in fits for name in fitted.criterion_names()})

    async def answer(self, request_input: DecisionInput, questions: tuple[Question, ...], item_id: str | None = None) -> list[Answered]:
        """Every question of one request about ``request_input``, judged concurrently (identical calls underneath
        are made once: the judge's coalescing and cache). Behind a chain that answers decisions itself, the
        questions on one scale go upstream together, as one request."""
        names = [q.name for q in questions]
        if self.provider.capabilities.decisions and request_input.outputs is None and len(questions) > 1 and len(set(names)) == len(names):
            return await self._upstream_together(request_input, questions, item_id)
        return list(await asyncio.gather(*(self._one(request_input, q, item_id) for q in questions)))

    async def _upstream_together(self, given: DecisionInput, questions: tuple[Question, ...], item_id: str | None) -> list[Answered]:
        """The questions grouped by scale, each group one fine-grained judgement (one upstream decision request)."""
        criteria = [criterion_for(q) for q in questions]
        groups: dict[Scale, list[int]] = {}
        for index, criterion in enumerate(criteria):
            groups.setdefault(criterion.scale, []).append(index)
        answered: list[Answered | None] = [None] * len(questions)

        async def group(indexes: list[int]) -> None:
            chosen = [criteria[i] for i in indexes]
            result = await self.judge.ascore(
                given.output or "", source=given.source, context=given.context, reference=given.reference,
                criterion=chosen if len(chosen) > 1 else chosen[0], item_id=item_id,
            )  # fmt: skip
            parts = result.parts if len(chosen) > 1 else {chosen[0].name: result}
            for i, criterion in zip(indexes, chosen):
                part = (parts or {}).get(criterion.name) or result  # an error result (no parts) answers every question of its group
                answered[i] = Answered(_from_result(questions[i], part, False), part)

        await asyncio.gather(*(group(indexes) for indexes in groups.values()))
        return [one for one in answered if one is not None]

    async def close(self) -> None:
        await self.judge.aclose()

    # -- one question -------------------------------------------------------------------------------

    async def _one(self, given: DecisionInput, question: Question, item_id: str | None) -> Answered:
        if given.outputs is not None:
            return await self._comparison(given, question)
        item = JudgeItem(output=given.output or "", source=given.source, context=given.context, reference=given.reference, id=item_id)
        criterion = criterion_for(question)
        method, unfitted = self.config.method, False
        if self.embedded:
            why = self._why_not_fitted(item, criterion, question)
            if why is not None and not self.allow_unfitted:
                return Answered(DecisionAnswer(name=question.name, status="refused", reason=why), _refused(criterion, why, item))
            if why is not None:
                method, unfitted = PROMPTED, True
        result = await self.judge.ascore(
            item.output, source=item.source, context=item.context, reference=item.reference, criterion=criterion, method=method, item_id=item_id
        )
        if unfitted:
            result = result.model_copy(update={"details": {**result.details, "unfitted": True}, "notes": [*result.notes, "unfitted: no fit for this criterion"]})
        return Answered(_from_result(question, result, unfitted), result)

    def _why_not_fitted(self, item: JudgeItem, criterion: Criterion, question: Question) -> str | None:
        """Why the fused judge cannot answer ``question`` (None when it can)."""
        if not isinstance(question, ScoreQuestion):
            kind = "a predicate" if isinstance(question, PredicateQuestion) else "a choice"
            return f"{kind} question: the embedded judge answers score questions on criteria it has a fit for (its prompted answers are at chance)"
        if question.name is None:
            return "the question names no criterion: name it after one the judge has a fit for (GET /v1/models)"
        reason, _ = fused_unavailable(self.provider, item, criterion, self.judge.options)
        return None if reason is None else f"{reason}: the embedded judge answers only what it has a fit for (its prompted answers are at chance)"

    async def _comparison(self, given: DecisionInput, question: Question) -> Answered:
        outputs = given.outputs or {}
        if not isinstance(question, ChoiceQuestion):
            return Answered(DecisionAnswer(name=question.name, status="refused", reason="a comparison input (outputs) is asked with a choice question"))
        typed = [option.value for option in question.choices]
        values = [value for value in typed if isinstance(value, str)]  # a boolean option names no output
        sides = [label for label in outputs]
        if len(sides) != 2 or len(values) != len(typed) or set(values) - {"tie"} != set(sides) or len(values) != len(set(values)):
            return Answered(
                DecisionAnswer(
                    name=question.name, status="refused",
                    reason="a comparison's choices are its two outputs' labels (texts) and optionally 'tie'",
                )
            )  # fmt: skip
        if not (given.source and given.source.strip()):
            return Answered(DecisionAnswer(name=question.name, status="refused", reason="a comparison needs the source both outputs were written for"))
        unfitted = False
        if self.embedded:
            if not self.allow_unfitted:
                why = (
                    "the embedded judge has no fit for comparisons (its prompted answers are at chance): "
                    "ask a server started with --allow-unfitted, or one serving a hosted judge (--config)"
                )
                return Answered(DecisionAnswer(name=question.name, status="refused", reason=why))
            unfitted = True
        criterion = Criterion(name=question.name or "comparison", description=question.instructions.strip() or "overall quality")
        protocol = "h2h" if "tie" in values else "pairwise"
        head_to_head = {t for t in bundled_template_ids() if t.startswith("h2h.")}
        if protocol == "h2h" and f"h2h.{criterion.name.strip().lower()}" not in head_to_head:
            # 001's head-to-head prompt (A, B or tie) is printed for a few criteria only; the pairwise prompt takes any
            # name, but has no tie: say what the client can change, per question, never a 400 about a Python API
            known = ", ".join(sorted(t.removeprefix("h2h.") for t in head_to_head))
            why = (
                f"a comparison with a 'tie' option is asked with the head-to-head prompt, which this judge has for {known} only: "
                "name the question after one of them, or drop the 'tie' option (A or B is asked under any name)"
            )
            return Answered(DecisionAnswer(name=question.name, status="refused", reason=why))
        try:
            comparison = await self.judge.acompare(outputs[sides[0]], outputs[sides[1]], source=given.source, criterion=criterion, protocol=protocol)
        except ProviderError as exc:
            return Answered(DecisionAnswer(name=question.name, status="refused", reason=f"the judge could not answer: {exc}"))
        except InputError as exc:  # what the judge cannot ask (a prompt it has not): this question's refusal, not the request's
            return Answered(DecisionAnswer(name=question.name, status="refused", reason=f"the judge cannot ask this comparison: {exc}"))
        if comparison.p_a_better is None:
            return Answered(DecisionAnswer(name=question.name, status="refused", reason=f"the judge's comparison ended {comparison.status}"))
        tie = (comparison.p_tie or 0.0) if "tie" in values else 0.0
        mass = {sides[0]: (1.0 - tie) * comparison.p_a_better, sides[1]: (1.0 - tie) * (1.0 - comparison.p_a_better), "tie": tie}
        probs = tuple(mass[v] for v in values)
        total = sum(probs)
        return Answered(DecisionAnswer(name=question.name, status="ok", probabilities=tuple(p / total for p in probs), unfitted=unfitted))


def _from_result(question: Question, result: JudgeResult, unfitted: bool) -> DecisionAnswer:
    """The answer a judgement gives: its distribution over the question's levels or options, or a refusal saying
    why there is none."""
    distribution = result.distribution
    if distribution is None:
        why = result.error or result.status
        return DecisionAnswer(name=question.name, status="refused", reason=f"the judge could not answer ({result.method}): {why}")
    probs = distribution.probs
    total = sum(probs)
    probs = tuple(p / total for p in probs) if total > 0 else probs
    if isinstance(question, PredicateQuestion):
        return DecisionAnswer(name=question.name, status="ok", probability=probs[1], unfitted=unfitted)
    return DecisionAnswer(name=question.name, status="ok", probabilities=probs, unfitted=unfitted)


def _refused(criterion: Criterion, why: str, item: JudgeItem) -> JudgeResult:
    """The record of a question refused before judging: no score, its reason."""
    return JudgeResult(score=None, status="refused", criterion=criterion.name, method="serve", method_reason=why, notes=[f"refused: {why}"], item_id=item.id)


def total_usage(answered: list[Answered]) -> Usage:
    """What the request cost: the usage of every judgement made for it (a cached one costs nothing)."""
    total = Usage()
    for one in answered:
        if one.result is not None and not one.result.cached:
            total = total + one.result.usage
    return total
