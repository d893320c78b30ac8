"""Fusion-Eval (003): an LLM fuses the scores of assistant evaluators, following a plan it wrote itself.

* **Assistant evaluators** (003 §2.1) share one small interface, :class:`Assistant`: a ``name``, a
  ``description`` (shown to the planning LLM) and ``async __call__(provider, item) -> float``. An assistant
  that cannot score an item raises :class:`AssistantUnavailable`; its score is then written as
  "unavailable" and the result notes why. Built-ins that run here (no extra dependency):

  - ``ROUGE-1``, ``ROUGE-2``, ``ROUGE-L``: F1 of the output against the source (Lin, 2004), tokens are
    lowercased runs of ``[a-z0-9]`` (the ``rouge_score`` default tokenizer, without stemming); ROUGE-N counts
    clipped n-gram matches, ROUGE-L uses the longest common subsequence; P = matches / output n-grams,
    R = matches / source n-grams, F1 = 2PR / (P + R); 0 when either side has no n-gram.
  - ``CHRF``: chrF (Popovic, 2015) of the output against the source: whitespace removed, character n-grams
    n = 1..6, precision and recall averaged over the orders both texts have, F-beta with beta = 2
    (sacreBLEU's default chrF2), on 0-1.
  - ``LM_PROB`` (003 §3.1, "PaLM2 Prob"): the judge's probability of the output given the source under
    the ``likelihood.generic`` prefix, as exp(mean token log-probability) in (0, 1], from the provider's
    log-likelihood (``GenerateRequest.continuation``); unavailable where the provider has none.
  - ``NLI`` (003 §2.1): entailment probability asked of the judge with ``fusion.nli`` (source = premise,
    output = hypothesis), p("Yes") of a Yes/No distribution from :func:`judgesdk.estimation.estimator.estimate`.

* **Plan** (003 §2.1): ``fusion.plan`` asks the LLM once per (task, criterion, assistants) for its plan
  (greedy, ``options.extra["plan_max_tokens"]``, default 512). Plans are kept in a :class:`PlanStore`
  (``options.extra["plans"]``), exportable to JSONL for review and importable after editing;
  ``options.extra["plan"]`` supplies a plan text directly.
* **Execution** (003 §2.2, §3.1): ``fusion.execute`` is filled with the plan, the item and the assistant
  scores; the score is the mean of k predictions (``options.extra["k"]``, default 8 as in 003), each the
  score read after the template's ``Score:`` prefix, i.e. ``estimate()`` with ``sampling`` (k samples at
  ``options.extra["temperature"]``, default 0.5, 003's PaLM2 setting; k = 1 reads one greedy answer).
  A prediction that names no score on the criterion's scale is left out (``n_unparsed``); when none can be
  read the result is ``unparsed``. On providers that honour a grammar each prediction is constrained to a
  label of the scale after ``Score:`` and repaired once if it still does not parse (:mod:`judgesdk.estimation.grammars`;
  ``options.extra["grammar"] = False`` lets the predictions run free).

``options.extra["assistants"]`` picks assistants by built-in name or passes :class:`Assistant` objects;
``options.extra["task"]`` words the task for the planner (default from ``options.dataset``). The paper's
full per-dataset templates (``fusion.execute.summeval`` / ``.topicalchat``) need BLEURT scores, which do not
run here, and answer every criterion at once, so this scorer always executes ``fusion.execute``
(``options.template`` overrides it when it has ``{{assistant_scores}}``).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from pydantic import BaseModel

from judgesdk.core import CapabilityError, Criterion, InputError, JudgeItem, JudgeResult, MissingItemField, Scale
from judgesdk.estimation import EstimationSettings, estimate, format_for
from judgesdk.prompting import load_template
from judgesdk.provider import GenerateRequest, GenerateResponse, Provider, Usage, WrapperProvider
from judgesdk.scorers import likelihood
from judgesdk.scorers.common import (
    KeyedStore,
    ScorerOptions,
    UnusableAnswer,
    generate_text,
    result_from_estimate,
    template_override,
    template_values,
)
from judgesdk.scorers.spec import MethodSpec

DEFAULT_K = 8  # 003 §3.1: 8 predictions
DEFAULT_TEMPERATURE = 0.5  # 003 §3.1: PaLM2 at 0.5 (GPT-4 at 0.1)
YES_NO = Scale(labels=("Yes", "No"), values=(1.0, 0.0))
TASKS = {
    "summeval": "one summary written for a news article",
    "newsroom": "one summary written for a news article",
    "topicalchat": "one response for the next turn of a conversation",
    "hanna": "one story written for a story prompt",
}
DEFAULT_TASK = "one output written for a source text"
_TOKEN = re.compile(r"[a-z0-9]+")


# -- lexical overlap, pure Python ------------------------------------------------------------------


def rouge_tokens(text: str) -> list[str]:
    """Lowercased runs of ASCII letters and digits (rouge_score's default tokenizer, no stemming)."""
    return _TOKEN.findall(text.lower())


def _f1(matches: float, n_candidate: int, n_reference: int) -> float:
    if matches == 0 or n_candidate == 0 or n_reference == 0:
        return 0.0
    precision, recall = matches / n_candidate, matches / n_reference
    return 2 * precision * recall / (precision + recall)


def _ngrams(items: Sequence[str], n: int) -> Counter[tuple[str, ...]]:
    return Counter(tuple(items[i : i + n]) for i in range(len(items) - n + 1))


def rouge_n(candidate: str, reference: str, n: int) -> float:
    """ROUGE-N F1: clipped n-gram matches between the two token lists."""
    cand, ref = _ngrams(rouge_tokens(candidate), n), _ngrams(rouge_tokens(reference), n)
    return _f1(sum((cand & ref).values()), sum(cand.values()), sum(ref.values()))


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence (dynamic programming, one row at a time)."""
    previous = [0] * (len(b) + 1)
    for x in a:
        current = [0]
        for j, y in enumerate(b, start=1):
            current.append(previous[j - 1] + 1 if x == y else max(previous[j], current[j - 1]))
        previous = current
    return previous[-1]


def rouge_l(candidate: str, reference: str) -> float:
    """ROUGE-L F1 (beta = 1) from the longest common subsequence of the token lists."""
    cand, ref = rouge_tokens(candidate), rouge_tokens(reference)
    return _f1(lcs_length(cand, ref), len(cand), len(ref))


def chrf(candidate: str, reference: str, *, order: int = 6, beta: float = 2.0) -> float:
    """chrF on 0-1: character n-gram precision and recall averaged over the orders 1..``order`` that both
    texts have (whitespace removed), combined as F-beta (Popovic, 2015; sacreBLEU's chrF2 defaults)."""
    cand, ref = "".join(candidate.split()), "".join(reference.split())
    precisions, recalls = [], []
    for n in range(1, order + 1):
        c, r = _ngrams(cand, n), _ngrams(ref, n)
        if not c or not r:
            continue
        matches = sum((c & r).values())
        precisions.append(matches / sum(c.values()))
        recalls.append(matches / sum(r.values()))
    if not precisions:
        return 0.0
    precision, recall = sum(precisions) / len(precisions), sum(recalls) / len(recalls)
    factor = beta**2
    return (1 + factor) * precision * recall / (factor * precision + recall) if precision + recall > 0 else 0.0


# -- assistant evaluators --------------------------------------------------------------------------


class AssistantUnavailable(Exception):
    """An assistant cannot score this item with this provider (the message says why)."""


@runtime_checkable
class Assistant(Protocol):
    """An assistant evaluator of 003: a named score in a documented range for one item."""

    # read-only properties: the assistants are frozen dataclasses, which a settable protocol member would reject
    @property
    def name(self) -> str: ...
    @property
    def description(self) -> str: ...

    async def __call__(self, provider: Provider, item: JudgeItem) -> float: ...


@dataclass(frozen=True)
class OverlapAssistant:
    """A lexical-overlap metric of the output against the source (no model call)."""

    name: str
    description: str
    metric: Callable[[str, str], float]  # (candidate, reference) -> score

    async def __call__(self, provider: Provider, item: JudgeItem) -> float:
        if not item.source:
            raise AssistantUnavailable(f"{self.name} compares the output with the source, and there is none")
        return float(self.metric(item.output, item.source))


@dataclass(frozen=True)
class LMProbability:
    """003's LM probability: exp(mean log P(output token | prefix, previous tokens)) under ``likelihood.generic``."""

    criterion: Criterion
    name: str = "LM_PROB"
    description: str = (
        "LM_PROB provides a probability score, ranging from 0 to 1, indicating the likelihood that the given "
        "output would be generated by a language model given the source (per-token geometric mean)."
    )
    template_id: str = "likelihood.generic"

    async def __call__(self, provider: Provider, item: JudgeItem) -> float:
        if not provider.capabilities.loglikelihood:
            raise AssistantUnavailable(f"{provider.kind}/{provider.model} gives no log-likelihood of a continuation")
        if not item.source:
            raise AssistantUnavailable("LM_PROB conditions on the source, and there is none")
        try:
            response = await likelihood.loglikelihood(provider, load_template(self.template_id), item, self.criterion, item.source)
        except CapabilityError as exc:  # no token log-probabilities came back
            raise AssistantUnavailable(str(exc)) from exc
        return math.exp(likelihood.mean_logprob(response))


@dataclass(frozen=True)
class NLIEntailment:
    """003's NLI assistant asked of the judge: p("Yes") that the source entails the output (``fusion.nli``)."""

    settings: EstimationSettings
    name: str = "NLI"
    description: str = (
        "Natural Language Inference (NLI) provides the probability of the entailed relationship between the "
        "source text (as premise) and the output (as hypothesis). Its range is between 0-1, close to 1 "
        "indicates that the hypothesis is entailed by the premise."
    )
    template_id: str = "fusion.nli"

    async def __call__(self, provider: Provider, item: JudgeItem) -> float:
        if not item.source:
            raise AssistantUnavailable("NLI needs the source as premise, and there is none")
        template = load_template(self.template_id)
        found = await estimate(provider, template.render(source=item.source, output=item.output), YES_NO, self.settings, tags=template.tags())
        if found.distribution is None:
            raise AssistantUnavailable(f"the entailment answer could not be read ({found.reason})")
        return found.distribution.prob("Yes")


def _overlap(name: str, what: str, metric: Callable[[str, str], float]) -> OverlapAssistant:
    return OverlapAssistant(
        name=name,
        description=f"{name} is the {what} between the output and the source text (0-1, higher means more overlap).",
        metric=metric,
    )


BUILTIN_NAMES = ("ROUGE-1", "ROUGE-2", "ROUGE-L", "CHRF", "LM_PROB", "NLI")


def builtin_assistants(criterion: Criterion, settings: EstimationSettings) -> dict[str, Assistant]:
    """The built-in assistants by name (LM_PROB uses the criterion's likelihood prefix)."""
    return {
        "ROUGE-1": _overlap("ROUGE-1", "unigram-overlap F1 (ROUGE-1)", lambda c, r: rouge_n(c, r, 1)),
        "ROUGE-2": _overlap("ROUGE-2", "bigram-overlap F1 (ROUGE-2)", lambda c, r: rouge_n(c, r, 2)),
        "ROUGE-L": _overlap("ROUGE-L", "longest-common-subsequence F1 (ROUGE-L)", rouge_l),
        "CHRF": _overlap("CHRF", "character n-gram F-score (chrF)", chrf),
        "LM_PROB": LMProbability(criterion=criterion),
        "NLI": NLIEntailment(settings=settings),
    }


def assistants_for(criterion: Criterion, options: ScorerOptions) -> list[Assistant]:
    """``options.extra["assistants"]`` (built-in names and/or Assistant objects), default all built-ins."""
    chosen = options.extra.get("assistants", BUILTIN_NAMES)
    builtins = builtin_assistants(criterion, options.settings)
    result: list[Assistant] = []
    for entry in chosen:
        if isinstance(entry, str) and entry.upper() in builtins:
            result.append(builtins[entry.upper()])
        elif isinstance(entry, Assistant) and not isinstance(entry, str):
            result.append(entry)
        else:
            raise InputError(
                f"unknown assistant {entry!r}: use one of {', '.join(BUILTIN_NAMES)} "
                "or an object with name, description and async __call__(provider, item)"
            )
    if len({a.name for a in result}) != len(result) or not result:
        raise InputError("Fusion-Eval needs at least one assistant and distinct assistant names")
    return result


async def run_assistants(assistants: Sequence[Assistant], provider: Provider, item: JudgeItem) -> dict[str, float | str]:
    """Each assistant's score, or why it is unavailable."""

    async def one(assistant: Assistant) -> float | str:
        try:
            value = float(await assistant(provider, item))
        except AssistantUnavailable as exc:
            return f"unavailable ({exc})"
        return value if math.isfinite(value) else "unavailable (not a finite number)"

    values = await asyncio.gather(*(one(a) for a in assistants))
    return {a.name: v for a, v in zip(assistants, values)}


def describe_assistants(assistants: Sequence[Assistant]) -> str:
    """003 §2.1's numbered assistant descriptions for the planning prompt."""
    return "\n".join(f"{i}. {a.name}: {a.description}" for i, a in enumerate(assistants, start=1))


def format_scores(scores: dict[str, float | str]) -> str:
    """003 App. A.1's input blocks: "<NAME> Score:" then the value, one block per assistant."""
    return "\n\n".join(f"{name} Score:\n{v:.4f}" if isinstance(v, float) else f"{name} Score:\n{v}" for name, v in scores.items())


# -- the plan --------------------------------------------------------------------------------------


class Plan(BaseModel):
    """The LLM's evaluation plan for one (task, criterion, assistants); ``text`` fills ``{{plan}}``."""

    key: str
    task: str
    criteria: str
    assistants: str
    template: str  # "<id>@<content hash>" of the planning template
    text: str
    provider: str = ""
    model: str = ""


class PlanStore(KeyedStore[Plan]):
    """Plans of one judge (``options.extra["plans"]``); export them to review or edit, import them back."""

    record_type = Plan

    def export_plans(self, path: str | Path) -> int:
        return self.export_jsonl(path)

    def import_plans(self, path: str | Path) -> int:
        return self.import_jsonl(path)


def plan_store(options: ScorerOptions) -> PlanStore:
    """The plan store of these options, created on first use."""
    return options.store("plans", PlanStore)


def criterion_line(criterion: Criterion) -> str:
    low, high = (int(v) if float(v).is_integer() else v for v in (criterion.scale.low, criterion.scale.high))
    return f"{criterion.name} ({low}-{high}): {criterion.description or criterion.name}"


def task_for(options: ScorerOptions) -> str:
    if options.extra.get("task"):
        return str(options.extra["task"])
    key = "".join(ch for ch in (options.dataset or "").lower() if ch.isalnum())
    return TASKS.get(key, DEFAULT_TASK)


async def get_plan(provider: Provider, criterion: Criterion, assistants: Sequence[Assistant], options: ScorerOptions) -> tuple[Plan, bool]:
    """The stored plan for (task, criterion, assistants), written by the LLM on first use (003 §2.1)."""
    template = load_template("fusion.plan")
    values = {"task": task_for(options), "criteria": criterion_line(criterion), "assistants": describe_assistants(assistants)}
    payload = json.dumps([values, template.content_hash], sort_keys=True, ensure_ascii=False)
    key = hashlib.sha256(payload.encode("utf-8")).hexdigest()

    async def write() -> Plan:
        text, _ = await generate_text(provider, template, values, int(options.extra.get("plan_max_tokens", 512)), options.settings.seed)
        return Plan(key=key, template=f"{template.id}@{template.content_hash}", text=text, provider=provider.kind, model=provider.model, **values)

    return await plan_store(options).get_or_build(key, write)


# -- scoring ---------------------------------------------------------------------------------------


class _Metered(WrapperProvider):
    """Adds up the usage of every call made through it (assistants, plan, execution)."""

    def __init__(self, inner: Provider) -> None:
        super().__init__(inner)
        self.usage = Usage()

    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        response = await self.inner.generate(request)
        self.usage = self.usage + response.usage
        return response


def execution_settings(options: ScorerOptions) -> EstimationSettings:
    """k predictions (003 §3.1): k samples at the configured temperature, or one greedy answer for k = 1."""
    k = options.extra.get("k", DEFAULT_K)
    if not isinstance(k, int) or k < 1:
        raise InputError(f"extra['k'] is the number of Fusion-Eval predictions to average: a positive integer, got {k!r}")
    temperature = float(options.extra.get("temperature", DEFAULT_TEMPERATURE))
    if k == 1:
        return options.settings.model_copy(update={"method": "parsed"})
    return options.settings.model_copy(update={"method": "sampling", "samples": k, "temperature": temperature})


async def score(provider: Provider, item: JudgeItem, criterion: Criterion, options: ScorerOptions, method: str = "fusion") -> JudgeResult:
    """Fusion-Eval score of ``item`` on ``criterion`` (module docstring)."""
    if not item.source:
        raise MissingItemField("it has no 'source', and Fusion-Eval judges an output against its source: pass source='...'")
    settings = execution_settings(options)
    assistants = assistants_for(criterion, options)
    metered = _Metered(provider)
    scores = await run_assistants(assistants, metered, item)
    try:
        plan_text, plan_note = await _plan_text(metered, criterion, assistants, options)
    except UnusableAnswer as exc:
        return _unusable(criterion, method, item, metered, scores, f"planning failed: {exc}")
    template = template_override(options, {"assistant_scores"}) or load_template("fusion.execute")
    values = {**template_values(item, criterion), "plan": plan_text, "assistant_scores": format_scores(scores)}
    fmt = format_for("fusion", provider, criterion.scale, options.extra)
    found = await estimate(metered, template.render(**values), criterion.scale, settings, tags=template.tags(), answer_format=fmt)
    result = result_from_estimate(found, criterion, method, item)
    notes = [plan_note, *_score_notes(scores), *result.notes]
    details = {**result.details, "assistant_scores": scores, "plan": plan_text, "k": options.extra.get("k", DEFAULT_K)}
    return result.model_copy(update={"usage": metered.usage, "notes": notes, "details": details})


async def _plan_text(provider: Provider, criterion: Criterion, assistants: Sequence[Assistant], options: ScorerOptions) -> tuple[str, str]:
    if options.extra.get("plan"):
        return str(options.extra["plan"]), "plan given in options"
    plan, written = await get_plan(provider, criterion, assistants, options)
    return plan.text, f"plan {plan.key[:12]} {'written' if written else 'reused'}"


def _score_notes(scores: dict[str, float | str]) -> list[str]:
    return [f"assistant {name} = {v:.4f}" if isinstance(v, float) else f"assistant {name} {v}" for name, v in scores.items()]


def _unusable(criterion: Criterion, method: str, item: JudgeItem, provider: _Metered, scores: dict[str, float | str], why: str) -> JudgeResult:
    return JudgeResult(
        score=None,
        status="unparsed",
        criterion=criterion.name,
        method=method,
        error=why,
        provider=provider.kind,
        model=provider.model,
        usage=provider.usage,
        notes=[why, *_score_notes(scores)],
        details={"assistant_scores": scores},
        item_id=item.id,
    )


__all__ = [
    "BUILTIN_NAMES",
    "Assistant",
    "AssistantUnavailable",
    "LMProbability",
    "NLIEntailment",
    "OverlapAssistant",
    "Plan",
    "PlanStore",
    "assistants_for",
    "builtin_assistants",
    "chrf",
    "get_plan",
    "plan_store",
    "rouge_l",
    "rouge_n",
    "score",
]


FUSION = MethodSpec(
    name="fusion",
    score=score,
    options={
        "k": "any", "temperature": "non_negative_number", "assistants": "any", "task": "any", "plan": "any", "plans": "any",
        "plan_max_tokens": "positive_integer", "grammar": "boolean",
    },  # fmt: skip
    forecast_approximation="later prompts embed generated texts (ladders, plans), counted at max_tokens each: an approximation",
)
