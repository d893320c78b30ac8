"""``method = "decision"``: a decision model's own distribution, one request for every criterion of an item.

A provider whose ``capabilities.decisions`` is set (OpenAI Decisions, a System One server, LiteLLM's decision
routes, ``judgesdk serve``) is asked typed questions about the item (:mod:`judgesdk.provider.decisions`)
instead of a prompt whose answer is read:

* a criterion on a 2-10 level scale is a **score** question: its levels are the scale's labels, lowest value
  first, and the instructions carry the criterion's definition; the answer's probability per level is the
  result's distribution (``distribution.method == "decision"``), its expected value the score;
* a pass/fail criterion (two labels valued 0 and 1) is a **predicate** question: the answer is P(pass);
* a scale of more than 10 levels is a :class:`~judgesdk.core.errors.ConfigError` naming the limit, unless
  ``method_options.decision_levels = N`` asks for the scale binned into N (2-10) consecutive levels, each
  valued at its labels' mean; the result's distribution is then on that binned scale, and says so.

Every criterion of one item goes into **one** request, one question each (:func:`score_criteria`, which
:func:`judgesdk.scorers.multi.score_fine_grained` calls), and the results carry one part per criterion as
fine-grained results do. The whole request is the cache key, so a repeated item is served from the cache.

Statuses: a question the server declines is ``refused`` and one it leaves unanswered ``missing``: neither
has a score (never a 0); an answer whose probabilities do not sum to 1 within 1e-6, whose level count differs
from the question's, or whose values have the wrong type is an ``error`` naming the field. The model the
server names is recorded in the result's provenance (``served``), and ``method_reason`` says why this path
was taken: ``auto`` and ``geval`` take it on a provider that answers decisions (exact > decision > logprobs
> sampling, :func:`judgesdk.estimation.estimator.choose_method`), ``decision`` asks for it.
"""

from __future__ import annotations

from collections.abc import Sequence

from judgesdk.core import CapabilityError, ConfigError, Criterion, InputError, JudgeItem, JudgeResult, LabelDistribution, ResultStatus, Scale
from judgesdk.estimation import EstimationSettings, choose_method
from judgesdk.provider import (
    MAX_LEVELS,
    MIN_LEVELS,
    ChoiceOption,
    ChoiceQuestion,
    DecisionAnswer,
    DecisionInput,
    DecisionRequest,
    GenerateRequest,
    GenerateResponse,
    Level,
    PredicateQuestion,
    Provider,
    Question,
    ScoreQuestion,
)
from judgesdk.scorers.common import ScorerOptions
from judgesdk.scorers.registry import method_spec
from judgesdk.scorers.spec import MethodSpec

__all__ = ["BINNING_OPTION", "chosen", "decision_input", "question_for", "score", "score_criteria"]

BINNING_OPTION = "decision_levels"  # method_options: bin a scale wider than 10 levels into this many
INPUT_NOTE = "The input is a JSON object: judge its 'output' (with its 'source', 'context' or 'reference' where given)."
_STATUS: dict[str, ResultStatus] = {"refused": "refused", "missing": "missing", "error": "error"}


def chosen(provider: Provider, method: str, settings: EstimationSettings) -> tuple[bool, str]:
    """Whether ``method`` is answered by the decision path on ``provider``, and why (for ``method_reason``).

    Read from the method's :attr:`~judgesdk.scorers.spec.MethodSpec.decisions`: ``decision`` ("asked") always is
    (a provider without decisions is a :class:`CapabilityError`, so a fallback chain moves on); ``auto`` and
    ``geval`` ("chosen...") are where the estimation settings let
    :func:`~judgesdk.estimation.estimator.choose_method` pick ``decision`` (exact > decision > logprobs > sampling).
    """
    caps = provider.capabilities
    path = method_spec(method).decisions
    if path == "asked":
        if not caps.decisions:
            raise CapabilityError(
                f"method 'decision' needs a provider that answers decision questions (kind 'systemone', or api 'decisions' on "
                f"openai / litellm); {provider.kind}/{provider.model} does not"
            )
        return True, "method 'decision': the provider's own distribution from a decision request"
    if path == "never" or not caps.decisions or settings.method not in ("auto", "decision"):
        return False, ""
    if path == "chosen_after_fits" and caps.loglikelihood and caps.exact_labels:  # a fused fit may answer: it decides per criterion
        return False, ""
    picked, why = choose_method(caps, settings.method)
    return picked == "decision", f"{method} chose decision: {why}" if settings.method == "auto" else f"{method}: estimation method 'decision'"


def decision_input(item: JudgeItem) -> DecisionInput:
    return DecisionInput(output=item.output, source=item.source, context=item.context, reference=item.reference)


class _Asked:
    """One criterion as asked: its question, and how the answer maps back to a distribution on a scale."""

    def __init__(self, criterion: Criterion, options: ScorerOptions) -> None:
        self.criterion = criterion
        self.scale, self.order, self.note = _question_scale(criterion, options)
        self.question = question_for(criterion, self.scale, self.order)

    def result(self, answer: DecisionAnswer, method: str, reason: str, item: JudgeItem) -> JudgeResult:
        evidence: dict[str, object] = {"question": self.question.type, "status": answer.status}
        if answer.score is not None:
            evidence["server_score"] = answer.score
        if answer.confidence is not None:
            evidence["confidence"] = answer.confidence
        notes = [self.note] if self.note else []
        if answer.unfitted:
            notes.append("the server flags this answer unfitted: no model fitted for this criterion answered it")
            evidence["unfitted"] = True
        # what produced the number: "decision/<question type>", or "geval/decision" where geval was asked (as geval/exact)
        named = f"{method}/decision" if method_spec(method).decisions == "chosen" else f"decision/{self.question.type}"
        common = {"criterion": self.criterion.name, "method": named, "method_reason": reason, "item_id": item.id}
        if answer.status != "ok":
            why = answer.reason or answer.status
            return JudgeResult(
                score=None, status=_STATUS[answer.status], error=why if answer.status == "error" else None,
                notes=[*notes, f"{answer.status}: {why}"], details={"decision": evidence}, **common,
            )  # fmt: skip
        if isinstance(self.question, PredicateQuestion):
            p = answer.probability or 0.0
            asked: tuple[float, ...] = (p, 1.0 - p)  # (pass, fail), in the question scale's order (below)
        else:
            asked = answer.probabilities or ()
        probs = [0.0] * len(self.scale.labels)
        for position, p in zip(self.order, asked):
            probs[position] = p
        distribution = LabelDistribution(scale=self.scale, probs=tuple(probs), method="decision", coverage=1.0)
        return JudgeResult(
            score=distribution.expected, status="ok", distribution=distribution, notes=notes, details={"decision": evidence}, **common
        )


def _question_scale(criterion: Criterion, options: ScorerOptions) -> tuple[Scale, list[int], str]:
    """The scale the question asks on (the criterion's, or its binned version), the scale positions of the
    question's levels (lowest value first), and a note when the scale was binned."""
    scale = criterion.scale
    note = ""
    if len(scale.labels) > MAX_LEVELS:
        wanted = options.extra.get("decision_levels")  # BINNING_OPTION
        if wanted is None:
            raise ConfigError(
                f"criterion {criterion.name!r} has {len(scale.labels)} levels: decision questions take {MIN_LEVELS}-{MAX_LEVELS}; "
                f"use a scale of at most {MAX_LEVELS} labels, or set method_options.{BINNING_OPTION} = N ({MIN_LEVELS}-{MAX_LEVELS}) to bin it"
            )
        scale, note = _binned(scale, int(wanted))
    order = sorted(range(len(scale.labels)), key=lambda i: scale.values[i])
    if _pass_fail(scale):
        order = [scale.values.index(1.0), scale.values.index(0.0)]  # predicate: (pass, fail)
    return scale, order, note


def _binned(scale: Scale, bins: int) -> tuple[Scale, str]:
    if not MIN_LEVELS <= bins <= MAX_LEVELS:
        raise ConfigError(f"method_options.{BINNING_OPTION} = {bins}: decision questions take {MIN_LEVELS}-{MAX_LEVELS} levels")
    ranked = sorted(range(len(scale.labels)), key=lambda i: scale.values[i])
    size, extra = divmod(len(ranked), bins)
    groups, start = [], 0
    for b in range(bins):
        end = start + size + (1 if b < extra else 0)
        groups.append(ranked[start:end])
        start = end
    labels = tuple(f"{scale.labels[g[0]]}-{scale.labels[g[-1]]}" if len(g) > 1 else scale.labels[g[0]] for g in groups)
    values = tuple(sum(scale.values[i] for i in g) / len(g) for g in groups)
    note = f"the {len(scale.labels)}-level scale was binned into {bins} levels ({BINNING_OPTION}); the distribution is over the bins"
    return Scale(labels=labels, values=values), note


def _pass_fail(scale: Scale) -> bool:
    return len(scale.labels) == 2 and set(scale.values) == {0.0, 1.0}


def question_for(criterion: Criterion, scale: Scale | None = None, order: Sequence[int] | None = None) -> Question:
    """The question asked for ``criterion`` on ``scale`` (default: the criterion's own): a predicate for a
    pass/fail scale, else a score question with the scale's labels as levels, in ``order`` (indices into the
    scale's labels; default: lowest value first), named after it."""
    scale = scale or criterion.scale
    definition = criterion.description or criterion.name
    if _pass_fail(scale):
        passed = scale.labels[scale.values.index(1.0)]
        return PredicateQuestion(
            name=criterion.name, instructions=f"{INPUT_NOTE} Does the output pass on {criterion.name} ({passed})? {definition}"
        )
    order = list(order) if order is not None else sorted(range(len(scale.labels)), key=lambda i: scale.values[i])
    levels = tuple(Level(label=scale.labels[i]) for i in order)
    return ScoreQuestion(
        name=criterion.name,
        instructions=f"{INPUT_NOTE} Rate the output on {criterion.name}: {definition} Levels run from worst ({levels[0].label}) to best ({levels[-1].label}).",
        levels=levels,
    )


async def ask(provider: Provider, decision: DecisionRequest) -> tuple[GenerateResponse, list[DecisionAnswer]]:
    """One decision call; an answer list that does not match the questions is a missing answer each."""
    response = await provider.generate(GenerateRequest(messages=(), decision=decision, max_tokens=0))
    answers = list(response.decisions or [])
    for index in range(len(answers), len(decision.questions)):
        answers.append(DecisionAnswer(name=decision.questions[index].name, status="missing", reason="the provider returned no answer for it"))
    return response, answers[: len(decision.questions)]


async def score_criteria(
    provider: Provider, item: JudgeItem, criteria: Sequence[Criterion], options: ScorerOptions, method: str = "decision"
) -> dict[str, JudgeResult]:
    """Every criterion of ``item`` in one decision request: one result per criterion, by name."""
    names = [c.name for c in criteria]
    if len(set(names)) != len(names):
        raise InputError(f"criteria judged together need distinct names, got {', '.join(names)}")
    picked, reason = chosen(provider, method, options.settings)
    if not picked:
        raise CapabilityError(f"{provider.kind}/{provider.model} is not asked decision questions for method {method!r}")
    asked = [_Asked(c, options) for c in criteria]
    request = DecisionRequest(input=decision_input(item), questions=tuple(a.question for a in asked))
    response, answers = await ask(provider, request)
    results = {}
    for index, (one, answer) in enumerate(zip(asked, answers)):
        result = one.result(answer, method, reason, item)
        first = index == 0  # the request's usage and latency once, on the first part, so a sum over parts is the request's
        results[one.criterion.name] = result.model_copy(
            update={
                "provider": provider.kind, "model": provider.model, "cached": response.cached,
                "usage": response.usage if first else response.usage.__class__(), "latency_s": response.latency_s if first else 0.0,
                "notes": [*result.notes, *(response.notes if first else [])],
            }
        )  # fmt: skip
    return results


async def score(provider: Provider, item: JudgeItem, criterion: Criterion, options: ScorerOptions, method: str = "decision") -> JudgeResult:
    """One criterion by the decision path (a request with one question)."""
    return (await score_criteria(provider, item, [criterion], options, method))[criterion.name]


def comparison_question(criterion: Criterion, labels: Sequence[str]) -> ChoiceQuestion:
    """The choice question of a comparison (``outputs`` ``{"A": ..., "B": ...}`` in the input): A, B or a tie."""
    definition = criterion.description or criterion.name
    return ChoiceQuestion(
        name=criterion.name,
        instructions=(
            f"The input is a JSON object with a 'source' and two 'outputs' written for it, {labels[0]} and {labels[1]}. "
            f"Which output is better on {criterion.name}? {definition} Answer tie when neither is better."
        ),
        choices=(ChoiceOption(value=labels[0]), ChoiceOption(value=labels[1]), ChoiceOption(value="tie")),
    )


DECISION = MethodSpec(name="decision", score=score, options={BINNING_OPTION: "positive_integer"}, decisions="asked")
