"""The answer check: a 200 that is no answer is a retryable error, below the retry and the cache.

A server can answer HTTP 200 with something that is not an answer: an error object in the body, an empty
``choices`` list, probabilities where log-probabilities belong (a proxy that converts them, a server bug),
NaN. Read as an answer, each would become a final verdict (``unparsed``, written once and never retried) or,
worse, a score (probabilities read as logprobs give a plausible, wrong mean with full coverage), and the cache
would serve it to every later run, into any results file. So every response of the adapter passes
:func:`answer_problem` here, directly above it: one that fails raises
:class:`~judgesdk.core.errors.MalformedAnswerError`, a transient error, which the retry layer above asks
again and which the cache above never stores (it only stores what comes back). An answer that stays
malformed after the retries is an ``error`` row naming what was wrong, judged again by the next run.

The adapters check the wire shapes they parse (an error body, ``choices`` that is no list: ``providers/_sdk.py``);
this layer checks what holds for every adapter, the registered third-party ones included.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from judgesdk.core import MalformedAnswerError
from judgesdk.provider.decisions import (
    DecisionAnswer,
    DecisionRequest,
    PredicateQuestion,
    ScoreQuestion,
    checked_distribution,
    checked_probability,
)
from judgesdk.provider.protocol import GenerateRequest, GenerateResponse, TokenLogprob, WrapperProvider
from judgesdk.provider.urls import scrub_credentials, scrub_exception

__all__ = ["LOGPROB_TOLERANCE", "AnswerCheck", "answer_problem", "decision_problem"]

LOGPROB_TOLERANCE = 1e-4  # a log-probability is <= 0; servers computing in float32 write up to ~1e-6 above it


def _bad_logprob(value: float) -> str | None:
    if math.isnan(value):
        return "NaN"
    if value > LOGPROB_TOLERANCE:
        return f"{value:+.4g} (above 0: a probability, not a log-probability?)"
    return None


def _token_problem(tokens: Iterable[TokenLogprob], what: str) -> str | None:
    for position, token in enumerate(tokens):
        for value in (token.logprob, *(top.logprob for top in token.top)):
            found = _bad_logprob(value)
            if found:
                return f"{what} at token {position} has log-probability {found}"
    return None


def decision_problem(asked: DecisionRequest, answers: Sequence[DecisionAnswer] | None) -> str | None:
    """What makes ``answers`` no answer to the decision request ``asked``, or None. Every route's answer passes it
    (the answer check, then the cache before it stores): one answer per question, each ``ok`` with probabilities that
    fit its question (finite, 0-1, summing to 1 within :data:`SUM_TOLERANCE`) or ``refused`` by the server. An
    ``error`` answer (a value of the wrong type or range, a sum off 1, an answer under another question's name, no
    ``answers`` at all) or a ``missing`` one is a malformed answer: asked again, never cached."""
    if answers is None:
        return "no decision answers in the answer"
    if len(answers) != len(asked.questions):
        return f"{len(answers)} decision answers to {len(asked.questions)} questions"
    for index, (question, answer) in enumerate(zip(asked.questions, answers)):
        where = f"question {index}" + (f" ({question.name!r})" if question.name else "")
        if answer.name is not None and answer.name != question.name:
            return f"the answer to {where} is named {answer.name!r}"
        if answer.status in ("error", "missing"):
            return f"{where}: {answer.status}: {answer.reason or 'no reason given'}"
        if answer.status != "ok":
            continue
        if isinstance(question, PredicateQuestion):
            found = checked_probability(answer.probability, "probability")
        elif answer.probabilities is None:
            found = "no probabilities"
        else:
            what = "levels" if isinstance(question, ScoreQuestion) else "options"
            expected = len(question.levels) if isinstance(question, ScoreQuestion) else len(question.choices)
            found = checked_distribution(answer.probabilities, expected, "probabilities", what)[1] or None
        if found:
            return f"{where}: {found}"
    return None


def answer_problem(request: GenerateRequest, response: GenerateResponse) -> str | None:
    """What makes ``response`` no answer to ``request``, or None: decision answers that :func:`decision_problem`
    finds wrong where questions were asked (a refusal is an answer: the decision path records it), no
    choices where text was asked, no label
    log-probabilities where labels were, a log-probability that is NaN or above 0 (within
    :data:`LOGPROB_TOLERANCE`). -inf (a token the server gave no probability) is a log-probability."""
    if request.decision is not None:  # typed questions: every answer ok (and a distribution) or refused by the server
        return decision_problem(request.decision, response.decisions)
    asked_text = request.labels is None and request.continuation is None
    if asked_text and not response.choices:
        return "no choices in the answer"
    if request.labels is not None and response.label_logprobs is None:
        return "no label log-probabilities in the answer"
    for label, value in (response.label_logprobs or {}).items():
        found = _bad_logprob(value)
        if found:
            return f"label {label!r} has log-probability {found}"
    for index, choice in enumerate(response.choices):
        found = _token_problem(choice.tokens or (), f"choice {index}")
        if found:
            return found
    return _token_problem(response.continuation_tokens or (), "the continuation")


class AnswerCheck(WrapperProvider):
    """Directly above the adapter (and its rate limit): a response :func:`answer_problem` finds wrong is a
    :class:`MalformedAnswerError` (module docstring). It is also where text leaves a provider, so no credential
    passes it (:func:`judgesdk.provider.urls.scrub_credentials`, issue 41): an error's text, a response's notes,
    its decision answers' reasons and its provenance are scrubbed here, below the retry and the cache, so that no
    row, note, log line or cache entry above holds a key a server echoed."""

    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        try:
            response = await self.inner.generate(request)
            problem = answer_problem(request, response)
            if problem is not None:
                raise MalformedAnswerError(f"{self.kind}: the answer of model {self.model!r} is malformed: {problem}", provider=self.kind)
        except Exception as exc:
            scrub_exception(exc)  # the same exception goes on, its texts scrubbed
            raise
        return scrubbed(response)


def scrubbed(response: GenerateResponse) -> GenerateResponse:
    """``response`` with no credential in its notes, decision reasons or provenance (the same object when none
    was found: the common case costs no copy)."""
    notes = [scrub_credentials(note) for note in response.notes]
    provenance = {key: scrub_credentials(value) for key, value in response.provenance.items()}
    decisions = response.decisions
    if decisions is not None and any(answer.reason for answer in decisions):
        decisions = [
            answer.model_copy(update={"reason": clean}) if (clean := scrub_credentials(answer.reason)) != answer.reason else answer for answer in decisions
        ]
    if notes == response.notes and provenance == response.provenance and decisions == response.decisions:
        return response
    return response.model_copy(update={"notes": notes, "provenance": provenance, "decisions": decisions})
