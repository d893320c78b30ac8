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
from collections.abc import Iterable

from judgesdk.core import MalformedAnswerError
from judgesdk.provider.protocol import GenerateRequest, GenerateResponse, TokenLogprob, WrapperProvider

__all__ = ["LOGPROB_TOLERANCE", "AnswerCheck", "answer_problem"]

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


def answer_problem(request: GenerateRequest, response: GenerateResponse) -> str | None:
    """What makes ``response`` no answer to ``request``, or None: no decision answers where questions were asked
    (a refused or missing answer to one question is an answer: the decision path records its status), no
    choices where text was asked, no label
    log-probabilities where labels were, a log-probability that is NaN or above 0 (within
    :data:`LOGPROB_TOLERANCE`). -inf (a token the server gave no probability) is a log-probability."""
    if request.decision is not None:  # typed questions: the decision path gives each answer its own status
        return "no decision answers in the answer" if response.decisions is None else None
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
    :class:`MalformedAnswerError` (module docstring)."""

    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        response = await self.inner.generate(request)
        problem = answer_problem(request, response)
        if problem is not None:
            raise MalformedAnswerError(f"{self.kind}: the answer of model {self.model!r} is malformed: {problem}", provider=self.kind)
        return response
