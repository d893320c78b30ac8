"""One comparison of two outputs for the same source, in one order or in both (004 §3.3, 001 §3.1).

A comparison asks the judge which of two outputs is better and reads a label distribution with
:func:`judgesdk.estimation.estimator.estimate` over the template's answer labels:

* ``protocol="pairwise"`` (004 §3.3): labels ``A`` / ``B`` after the answer prefix ("Response A",
  "Summary A"); the prompt-based classifier of 004 eq. 3 gives
  ``P(first better) = P(A) / (P(A) + P(B))``.
* ``protocol="h2h"`` (001 Tables 3, 14-16): labels ``A`` / ``B`` / ``C`` (tie). The same ratio over the
  two non-tie labels is reported as ``p_first`` (0.5 when all mass is on the tie), and ``P(C)`` as the
  tie probability.

:func:`compare` runs both orders (a first, then b first; one function, :func:`both_orders`) and keeps both
verdicts (001); ``p_a_better`` is the mean of the two per-order probabilities that ``a`` is better, and
``consistent`` says whether both orders gave the same verdict (004 §3.5: an unbiased comparator does).
:func:`judge_all` makes many ordered comparisons with a few in flight, for the rankings.

A provider that answers decision questions (:mod:`judgesdk.scorers.decision`) is asked, in each order, a
choice question over ``A``, ``B`` and ``tie`` with the two outputs in its input: the answer's probabilities are
read as a template's label distribution would be (``p_first = P(A) / (P(A) + P(B))``, ``P(tie)`` reported
where the protocol has a tie label), so both orders and their consistency work unchanged.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from judgesdk.core import Criterion, InputError, JudgeItem, ResultStatus, Scale, as_criterion
from judgesdk.estimation import estimate
from judgesdk.prompting import Template, bundled_template_ids, load_template
from judgesdk.provider import DecisionInput, DecisionRequest, Provider, Usage
from judgesdk.scorers import decision
from judgesdk.scorers.common import ScorerOptions, template_override, template_values, variant_template, worst_status

Protocol = Literal["pairwise", "h2h"]
Verdict = Literal["first", "second", "tie"]
Winner = Literal["a", "b", "tie"]

PROTOCOLS: tuple[str, ...] = ("pairwise", "h2h")
PAIRWISE_SCALE = Scale(labels=("A", "B"), values=(1.0, 0.0))
H2H_SCALE = Scale(labels=("A", "B", "C"), values=(1.0, 0.0, 0.5))
_CONCURRENCY = 8


# -- results ---------------------------------------------------------------------------------------


class OrderJudgement(BaseModel):
    """One comparison in one order. ``first``/``second`` index the compared outputs (0 = a, 1 = b in
    :func:`compare`; positions in the list in :func:`rank`)."""

    first: int
    second: int
    p_first: float | None  # 004 eq. 3: P(first label) / (P(first label) + P(second label)); None: unparsed
    p_tie: float | None = None  # tie label probability where the protocol has one (001's C)
    verdict: Verdict | None = None  # the most likely answer; None when unparsed
    probs: dict[str, float] = Field(default_factory=dict)
    status: ResultStatus
    method: str
    reason: str = ""
    raw: list[str] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    latency_s: float = 0.0
    cached: bool = False

    def p_wins(self, index: int) -> float | None:
        """Probability that output ``index`` (one of the two compared) is the better one."""
        if self.p_first is None:
            return None
        return self.p_first if index == self.first else 1.0 - self.p_first


class Comparison(BaseModel):
    """Both orders of one comparison of ``a`` with ``b``."""

    protocol: str
    criterion: str
    template_id: str
    p_a_better: float | None  # mean over both orders of P(a better | not a tie); None unless both parsed
    p_tie: float | None = None  # mean tie probability over both orders (h2h)
    verdicts: tuple[Winner | None, Winner | None]  # order a-b, then order b-a
    consistent: bool | None  # both orders gave the same verdict (004 §3.5); None when one is missing
    orders: tuple[OrderJudgement, OrderJudgement]  # a first, then b first
    status: ResultStatus
    provider: str = ""
    model: str = ""
    usage: Usage = Field(default_factory=Usage)
    latency_s: float = 0.0
    cached: bool = False
    notes: list[str] = Field(default_factory=list)

    @property
    def winner(self) -> Winner | None:
        """``a`` or ``b`` by ``p_a_better`` (``tie`` at exactly 0.5); None when unparsed."""
        if self.p_a_better is None:
            return None
        side: Winner = _side(self.p_a_better, "a", "b")
        return side


# -- one comparison --------------------------------------------------------------------------------


class _Setup(BaseModel):
    """What every comparison of one call shares: template, labels, criterion, settings."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)

    protocol: str
    template: Template
    scale: Scale
    tie: str | None
    criterion: Criterion
    source: str
    options: ScorerOptions


def _setup(protocol: str, source: str, criterion: Criterion | str, options: ScorerOptions | None) -> _Setup:
    options = options or ScorerOptions()
    crit = as_criterion(criterion)
    if protocol not in PROTOCOLS:
        raise InputError(f"unknown comparison protocol {protocol!r}; choose one of {', '.join(PROTOCOLS)}")
    if not isinstance(source, str) or not source.strip():
        raise InputError("a comparison needs the source both outputs were written for: pass source='...'")
    scale, tie = _labels(protocol, options)
    return _Setup(
        protocol=protocol,
        template=template_override(options, {"output_a", "output_b"}) or _default_template(protocol, crit, options.dataset),
        scale=scale,
        tie=tie,
        criterion=crit,
        source=source,
        options=options,
    )


def _labels(protocol: str, options: ScorerOptions) -> tuple[Scale, str | None]:
    """The answer labels: first position, second position, optional tie (``options.extra["labels"]``)."""
    custom = options.extra.get("labels")
    if custom is None:
        return (H2H_SCALE, "C") if protocol == "h2h" else (PAIRWISE_SCALE, None)
    labels = tuple(str(label) for label in custom)
    if len(labels) not in (2, 3):
        raise InputError(f"extra['labels'] must list the first, second and optionally the tie label, got {labels}")
    values = (1.0, 0.0, 0.5)[: len(labels)]
    return Scale(labels=labels, values=values), labels[2] if len(labels) == 3 else None


def _default_template(protocol: str, criterion: Criterion, dataset: str | None) -> Template:
    if protocol == "pairwise":
        return variant_template("pairwise.compare", dataset)
    template_id = f"h2h.{criterion.name.strip().lower()}"
    if template_id not in bundled_template_ids():
        known = ", ".join(t.removeprefix("h2h.") for t in bundled_template_ids() if t.startswith("h2h."))
        raise InputError(
            f"001 prints head-to-head prompts only for {known}; for {criterion.name!r} pass "
            "ScorerOptions(template=...) with output_a/output_b placeholders and A/B/C answers"
        )
    return load_template(template_id)


async def judge_order(setup: _Setup, provider: Provider, outputs: Sequence[str], first: int, second: int) -> OrderJudgement:
    """Ask for the label distribution with ``outputs[first]`` in the first position (004 eq. 3)."""
    if provider.capabilities.decisions and setup.options.settings.method in ("auto", "decision"):
        return await _decision_order(setup, provider, outputs, first, second)
    values = template_values(JudgeItem(output=outputs[first], source=setup.source), setup.criterion)
    messages = setup.template.render(**values, output_a=outputs[first], output_b=outputs[second])
    found = await estimate(provider, messages, setup.scale, setup.options.settings, tags=setup.template.tags())
    common = {
        "first": first, "second": second, "status": found.status, "method": found.method, "reason": found.reason,
        "raw": found.texts, "usage": found.usage, "latency_s": found.latency_s, "cached": found.cached,
    }  # fmt: skip
    if found.distribution is None:
        return OrderJudgement(p_first=None, **common)
    probs = found.distribution.as_dict()
    return OrderJudgement(**common, **_read(probs, setup.scale.labels, setup.tie))


async def _decision_order(setup: _Setup, provider: Provider, outputs: Sequence[str], first: int, second: int) -> OrderJudgement:
    """One order as a decision request: a choice of A (``outputs[first]``), B or tie (module docstring)."""
    question = decision.comparison_question(setup.criterion, ("A", "B"))
    compared = DecisionInput(outputs={"A": outputs[first], "B": outputs[second]}, source=setup.source)
    response, (answer,) = await decision.ask(provider, DecisionRequest(input=compared, questions=(question,)))
    common = {
        "first": first, "second": second, "method": "decision", "usage": response.usage, "latency_s": response.latency_s,
        "cached": response.cached, "reason": "the provider answers decision questions: a choice of A, B or tie",
    }  # fmt: skip
    if answer.status != "ok" or answer.probabilities is None:
        return OrderJudgement(p_first=None, **{**common, "status": answer.status, "reason": f"{answer.status}: {answer.reason}"})
    p_a, p_b, p_tie = answer.probabilities
    labels = setup.scale.labels
    probs = {labels[0]: p_a, labels[1]: p_b, (setup.tie or "tie"): p_tie}
    return OrderJudgement(status="ok", **common, **_read(probs, labels, setup.tie))


def _read(probs: dict[str, float], labels: tuple[str, ...], tie: str | None) -> dict[str, object]:
    """p_first, p_tie and the verdict from one label distribution."""
    p_a, p_b = probs[labels[0]], probs[labels[1]]
    p_tie = probs[tie] if tie is not None else None
    p_first = p_a / (p_a + p_b) if p_a + p_b > 0 else 0.5
    if p_tie is not None and p_tie > max(p_a, p_b):
        verdict: Verdict = "tie"
    else:
        verdict = _side(p_first, "first", "second")
    return {"p_first": p_first, "p_tie": p_tie, "verdict": verdict, "probs": probs}


_S = TypeVar("_S", bound=str)


def _side(p: float, above: _S, below: _S) -> _S | Literal["tie"]:
    return above if p > 0.5 else below if p < 0.5 else "tie"


async def both_orders(setup: _Setup, provider: Provider, outputs: Sequence[str], i: int, j: int) -> tuple[OrderJudgement, OrderJudgement]:
    """The comparison of ``outputs[i]`` and ``outputs[j]`` in both orders (004 §3.4, 001 §3.1): i first, then j first."""
    return await judge_order(setup, provider, outputs, i, j), await judge_order(setup, provider, outputs, j, i)


async def compare(
    provider: Provider,
    a: str,
    b: str,
    *,
    source: str,
    criterion: Criterion | str,
    options: ScorerOptions | None = None,
    protocol: Protocol = "pairwise",
) -> Comparison:
    """Compare ``a`` with ``b`` in both orders; ``protocol`` is ``pairwise`` (004) or ``h2h`` (001).

    ``provider`` answers both orders; ``source`` is what both outputs were written for (required: an empty one is
    an :class:`~judgesdk.core.errors.InputError`), ``criterion`` what they are compared on, and ``options`` the
    scorer options (a template, a dataset's prompt, answer labels under ``extra["labels"]``). Returns a
    :class:`Comparison`: P(``a`` is better) and P(tie) averaged over the two orders, each order's verdict and
    whether they agree."""
    outputs = _check_outputs([a, b])
    setup = _setup(protocol, source, criterion, options)
    ab, ba = await both_orders(setup, provider, outputs, 0, 1)
    p_a = [o.p_wins(0) for o in (ab, ba)]
    ties = [o.p_tie for o in (ab, ba) if o.p_tie is not None]
    verdicts = (_winner(ab), _winner(ba))
    return Comparison(
        protocol=protocol,
        criterion=setup.criterion.name,
        template_id=setup.template.id,
        p_a_better=sum(p_a) / 2 if None not in p_a else None,  # type: ignore[arg-type]
        p_tie=sum(ties) / len(ties) if len(ties) == 2 else None,
        verdicts=verdicts,
        consistent=verdicts[0] == verdicts[1] if None not in verdicts else None,
        orders=(ab, ba),
        status=worst_status([ab.status, ba.status]),
        provider=provider.kind,
        model=provider.model,
        usage=ab.usage + ba.usage,
        latency_s=ab.latency_s + ba.latency_s,
        cached=ab.cached and ba.cached,
        notes=[f"order {name}: {o.reason}" for name, o in (("a-b", ab), ("b-a", ba)) if o.status != "ok"],
    )


def _winner(order: OrderJudgement) -> Winner | None:
    if order.verdict is None:
        return None
    if order.verdict == "tie":
        return "tie"
    chosen = order.first if order.verdict == "first" else order.second
    return "a" if chosen == 0 else "b"


def _check_outputs(outputs: Sequence[str]) -> list[str]:
    bad = [i for i, text in enumerate(outputs) if not isinstance(text, str) or not text.strip()]
    if bad:
        raise InputError(f"outputs at positions {bad} are empty or not text: every compared output needs text")
    return list(outputs)


async def judge_all(setup: _Setup, provider: Provider, outputs: list[str], pairs: list[tuple[int, int]]) -> list[OrderJudgement]:
    """Every ordered comparison, at most a few in flight; sorted pairs keep a shared prompt prefix adjacent."""
    gate = asyncio.Semaphore(int(setup.options.extra.get("concurrency", _CONCURRENCY)))

    async def one(i: int, j: int) -> OrderJudgement:
        async with gate:
            return await judge_order(setup, provider, outputs, i, j)

    return list(await asyncio.gather(*(one(i, j) for i, j in pairs)))
