"""A provider that answers from a script: a function, a table, or a list. For deterministic tests.

Replies can carry label probabilities, from which the provider derives everything a real model would
give: the greedy text, seeded samples at temperature > 0, top-k logprobs at the answer position, and
exact label log-probabilities. Parsing and aggregation can thus be tested on known numbers, here and in
users' own test suites. It is never what an integration test is about.
"""

from __future__ import annotations

import math
import random
import time
from collections.abc import Callable, Mapping, Sequence

from pydantic import BaseModel

from judgesdk.core import InputError
from judgesdk.provider import (
    Capabilities,
    Choice,
    DecisionAnswer,
    GenerateRequest,
    GenerateResponse,
    Pricing,
    ProviderSpec,
    TokenLogprob,
    TopLogprob,
    Usage,
    as_text,
)


class ScriptedReply(BaseModel):
    """One scripted answer, richer than a plain text: the numbers a real model would give, set by the test.

    ``label_probs`` (label -> probability) gives the greedy text (the most likely label), seeded samples at
    temperature > 0, top-k logprobs at the answer position and exact label log-probabilities (a label with no
    probability is left out). ``continuation_logprobs`` are the log-probabilities of a scored continuation's
    tokens (words), -1.0 each when not given; ``decisions`` answers a decision request."""

    text: str | None = None  # None: derived from label_probs (the most likely label)
    label_probs: dict[str, float] | None = None
    continuation_logprobs: list[float] | None = None  # one per token of a scored continuation
    decisions: list[DecisionAnswer] | None = None  # the answers to a decision request (capabilities DECISIONS)


Rule = Callable[[GenerateRequest], "str | ScriptedReply"]

FULL = Capabilities(
    logprobs=True, max_top_logprobs=20, multiple_samples=True, seed=True, exact_labels=True, loglikelihood=True, prefill=True
)


DECISIONS = Capabilities(decisions=True, max_questions=400)  # answers decision requests only, as a decision API does


class ScriptedProvider:
    """Answers each request by ``script``.

    * a callable ``request -> str | ScriptedReply``;
    * a mapping ``substring -> reply``: the first key found in the prompt text answers;
    * a sequence of replies, consumed one per call.
    """

    kind = "scripted"

    def __init__(
        self,
        script: Rule | Mapping[str, str | ScriptedReply] | Sequence[str | ScriptedReply],
        *,
        model: str = "scripted",
        capabilities: Capabilities = FULL,
    ) -> None:
        self.model = model
        self.endpoint = "in-process"
        self.capabilities = capabilities
        self.calls: list[GenerateRequest] = []
        self._rule = _as_rule(script)

    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        started = time.perf_counter()
        self.calls.append(request)
        reply = self._rule(request)
        if isinstance(reply, str):
            reply = ScriptedReply(text=reply)
        prompt = as_text(request.messages) if request.decision is None else request.decision.as_text()
        rng = random.Random(f"{request.seed}:{request.sample_index}:{prompt}")
        choices = [self._choice(reply, request, rng) for _ in range(request.n)] if request.decision is None else []
        return GenerateResponse(
            choices=choices,
            label_logprobs=_label_logprobs(reply, request) if request.labels else None,
            continuation_tokens=_continuation(reply, request) if request.continuation is not None else None,
            decisions=list(reply.decisions or []) if request.decision is not None else None,
            usage=Usage(input_tokens=len(prompt.split()), output_tokens=sum(len(c.text.split()) for c in choices), calls=1),
            latency_s=time.perf_counter() - started,
            provider=self.kind,
            model=self.model,
            provenance={"runtime": "scripted"},
        )

    def _choice(self, reply: ScriptedReply, request: GenerateRequest, rng: random.Random) -> Choice:
        text = reply.text
        probs = reply.label_probs
        if text is None and probs:
            if request.temperature > 0:
                text = rng.choices(list(probs), weights=list(probs.values()))[0]
            else:
                text = max(probs, key=probs.__getitem__)
        text = text or ""
        tokens = None
        if request.top_logprobs and self.capabilities.logprobs:
            tokens = _top_logprobs(text, probs or {}, request.top_logprobs)
        return Choice(text=text, tokens=tokens, finish_reason="stop")

    async def aclose(self) -> None:
        return None


def _as_rule(script: object) -> Rule:
    if callable(script):
        return script
    if isinstance(script, Mapping):
        table = dict(script)

        def by_substring(request: GenerateRequest) -> str | ScriptedReply:
            prompt = as_text(request.messages) if request.decision is None else request.decision.as_text()
            for key, reply in table.items():
                if key in prompt:
                    return reply
            raise InputError(f"scripted provider: no key of {list(table)} occurs in the prompt")

        return by_substring
    if isinstance(script, Sequence) and not isinstance(script, str):
        replies = list(script)

        def in_order(request: GenerateRequest) -> str | ScriptedReply:
            if not replies:
                raise InputError("scripted provider: the list of replies is used up")
            return replies.pop(0)

        return in_order
    raise InputError("a script is a callable, a mapping of prompt substrings to replies, or a list of replies")


def _top_logprobs(text: str, probs: dict[str, float], k: int) -> list[TokenLogprob]:
    ranked = sorted(probs.items(), key=lambda kv: -kv[1])[:k]
    top = [TopLogprob(token=label, logprob=math.log(p)) for label, p in ranked if p > 0]
    first = text.split()[0] if text.split() else text
    logprob = math.log(probs[first]) if probs.get(first, 0) > 0 else -30.0
    return [TokenLogprob(token=first, logprob=logprob, top=top)]


def _label_logprobs(reply: ScriptedReply, request: GenerateRequest) -> dict[str, float]:
    """Probability goes to the continuation spelled exactly as the label; other variants get none (omitted)."""
    probs = reply.label_probs or {}
    return {label: math.log(probs[label]) for label in request.labels or () if probs.get(label, 0) > 0}


def _continuation(reply: ScriptedReply, request: GenerateRequest) -> list[TokenLogprob]:
    words = (request.continuation or "").split()
    values = reply.continuation_logprobs or [-1.0] * len(words)
    return [TokenLogprob(token=w, logprob=lp) for w, lp in zip(words, values, strict=False)]


PROVIDER = ProviderSpec(
    kind=ScriptedProvider.kind,
    capabilities=FULL,
    pricing=Pricing(local=True),
    default_concurrency=4,  # answers at once, from a script: a fixed number keeps tests' interleavings reproducible
    built_in_code="the scripted provider is built in code: ScriptedProvider(script)",
)
