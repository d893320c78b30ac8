"""The stand-in provider an estimate judges with: it records every request and answers without a model call.

:class:`PlanningProvider` sits where the run's provider stack would, over the adapter the run would use, and
gets every request exactly as the real scorers build it (templates, labels, continuations, samples, tags).
It answers from the run's disk cache where the request is stored there (read only; a hit costs nothing),
else with a stand-in answer shaped like the real one: uniform label probabilities, one log-probability per
continuation token, a generated text that parses on the criterion's scale, a uniform answer to each decision
question (a decision call is counted by its input and questions, with no output tokens). Identical requests in flight
together are answered once, as the coalescing layer does, and the model's calls one at a time in arrival
order, as the local model's worker answers them, so that the KV-cache replay
(:mod:`judgesdk.forecast.kv_replay`) sees them in the run's order. What it counts goes into a
:class:`~judgesdk.forecast.bill.ProviderForecast` (its module says what each count means).
"""

from __future__ import annotations

import asyncio
import math
from typing import Any

from pydantic import ValidationError

from judgesdk.core import Scale
from judgesdk.forecast.bill import ProviderForecast
from judgesdk.forecast.kv_replay import KVReplay, label_paths
from judgesdk.provider import (
    Choice,
    DecisionAnswer,
    GenerateRequest,
    GenerateResponse,
    PredicateQuestion,
    Provider,
    ScoreQuestion,
    TokenLogprob,
    TopLogprob,
    Usage,
    WrapperProvider,
    cache_key,
    request_text,
)

__all__ = ["PlanningProvider"]

_SETTLE = 40  # event-loop turns between two answers: every task that can go on reaches its next request


class PlanningProvider(WrapperProvider):
    """Answers the scorers without calling ``inner`` (see the module docstring) and counts what a run would ask.

    ``inner`` is the adapter the run would use: its kind, model, endpoint, identity and capabilities decide
    what the scorers build and the cache keys; its ``generate`` is never called. ``cache`` is the run's disk
    cache (None: off), read only. ``tokens`` counts the prompts (:mod:`judgesdk.forecast.tokens`); ``replay``
    replays the local model's KV cache over the calls (None: no local vocabulary to replay with). ``scale`` is
    the criterion scale a generated stand-in answer is given on.
    """

    def __init__(
        self,
        inner: Provider,
        *,
        tokens: Any,
        cache: Any = None,
        namespace: str = "default",
        replay: KVReplay | None = None,
    ) -> None:
        super().__init__(inner)
        self.tokens = tokens
        self.cache = cache
        self.namespace = namespace
        self.replay = replay
        self.scale: Scale = Scale.likert(1, 5)
        self.count = ProviderForecast(provider=inner.kind, model=inner.model, tokenizer=tokens.how, tokens_exact=tokens.exact)
        if replay is not None:
            self.count.tokens_evaluated = self.count.tokens_reused = 0
        self._answered: dict[str, GenerateResponse] = {}
        self._in_flight: dict[str, asyncio.Future[GenerateResponse]] = {}
        self._queue: list[tuple[GenerateRequest, str, asyncio.Future[GenerateResponse]]] = []
        self._worker: asyncio.Task[None] | None = None

    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        key = cache_key(self.inner, request, self.namespace)
        self.count.requests += 1
        pending = self._in_flight.get(key)
        if pending is not None:  # the coalescing layer: one call answers both
            self.count.merged += 1
            return await asyncio.shield(pending)
        if self.cache is not None:
            stored = self._answered.get(key) or self._stored(key)
            if stored is not None:
                self.count.cache_hits += 1
                return stored.model_copy(update={"cached": True})
        future: asyncio.Future[GenerateResponse] = asyncio.get_running_loop().create_future()
        self._in_flight[key] = future
        self._queue.append((request, key, future))
        if self._worker is None:
            self._worker = asyncio.ensure_future(self._work())
        return await asyncio.shield(future)

    def _stored(self, key: str) -> GenerateResponse | None:
        try:
            raw = self.cache.get(key)
        except Exception:  # noqa: BLE001 - an unreadable cache: the run would go on without it
            return None
        if raw is None:
            return None
        try:
            return GenerateResponse.model_validate_json(raw)
        except ValidationError:  # the run asks again and replaces it
            return None

    async def _work(self) -> None:
        """Answer queued calls one at a time, in arrival order, letting every task reach its next request
        between two answers (the local model's one worker thread; queued label requests are drained
        together, as the provider does)."""
        try:
            while True:
                for _ in range(_SETTLE):
                    await asyncio.sleep(0)
                if not self._queue:
                    return
                head = self._queue[0][0]
                if head.labels is not None and self.replay is not None and self.replay.parallel > 1:
                    batch = [entry for entry in self._queue if entry[0].labels is not None]
                else:
                    batch = [self._queue[0]]
                taken = {id(entry) for entry in batch}
                self._queue = [entry for entry in self._queue if id(entry) not in taken]
                try:
                    responses = self._answer([request for request, _, _ in batch])
                except Exception as exc:  # noqa: BLE001 - each waiting request hears it (e.g. text the tokenizer refuses)
                    responses = [exc] * len(batch)  # type: ignore[list-item]
                for (_, key, future), response in zip(batch, responses):
                    del self._in_flight[key]
                    if future.done():
                        continue
                    if isinstance(response, Exception):
                        future.set_exception(response)
                    else:
                        self._answered[key] = response
                        future.set_result(response)
        finally:
            self._worker = None

    # -- stand-in answers and what they cost
    def _answer(self, requests: list[GenerateRequest]) -> list[GenerateResponse]:
        prompts = [request_text(r) for r in requests]
        ids = [self.tokens.ids(p, bos=True) for p in prompts]
        counts = [len(i) if i is not None else self.tokens.count(p, bos=True) for i, p in zip(ids, prompts)]
        reused = [0] * len(requests)
        if self.replay is not None and all(i is not None for i in ids) and all(r.decision is None for r in requests):
            reused = self._replay(requests, ids)
        responses = []
        for request, n_prompt, n_reused in zip(requests, counts, reused):
            kind = (
                "decision" if request.decision is not None
                else "labels" if request.labels is not None
                else "continuation" if request.continuation is not None
                else "generation"
            )  # fmt: skip
            self.count.calls += 1
            self.count.by_kind[kind] = self.count.by_kind.get(kind, 0) + 1
            self.count.prompt_tokens += n_prompt
            response = self._stand_in(request, kind)
            output = 0
            if kind == "generation":
                output = request.n * request.max_tokens
                self.count.output_tokens_exact = False
                if self.replay is not None:
                    self.count.tokens_evaluated_exact = False
            self.count.output_tokens += output
            if self.count.tokens_reused is not None:
                self.count.tokens_reused += n_reused
            response.usage = Usage(input_tokens=n_prompt, output_tokens=output, cached_input_tokens=n_reused, calls=1)
            responses.append(response)
        if self.replay is not None:
            self.count.tokens_evaluated = self.replay.evaluated
            self.count.too_long = self.replay.too_long
        return responses

    def _replay(self, requests: list[GenerateRequest], ids: list[list[int]]) -> list[int]:
        replay, tokens = self.replay, self.tokens
        assert replay is not None
        reused = [0] * len(requests)
        if requests[0].labels is not None:
            labels = [r.labels for r in requests]
            for group in replay.groups(ids, labels):
                encoded = {label: tokens.ids(label, bos=False) for label in requests[group[0]].labels or ()}
                paths = label_paths({k: v for k, v in encoded.items() if v})
                for index, value in zip(group, replay.label_group([ids[i] for i in group], paths)):
                    reused[index] = value
            return reused
        request, prompt = requests[0], ids[0]
        if request.continuation is not None:
            reused[0] = replay.continuation(prompt, tokens.ids(request.continuation, bos=False))
        else:
            reused[0] = replay.generate(prompt, request.n, request.max_tokens)
        return reused

    def _stand_in(self, request: GenerateRequest, kind: str) -> GenerateResponse:
        response = GenerateResponse(provider=self.kind, model=self.model)
        if kind == "decision":
            response.decisions = [_uniform(q) for q in request.decision.questions]  # type: ignore[union-attr]
        elif kind == "labels":
            labels = request.labels or ()
            response.label_logprobs = {label: -math.log(max(1, len(labels))) for label in labels}
        elif kind == "continuation":
            text = request.continuation or ""
            ids = self.tokens.ids(text, bos=False)
            pieces = self.tokens.pieces_of(ids) if ids is not None else self.tokens.pieces(text)
            response.continuation_tokens = [TokenLogprob(token=p, logprob=-2.0) for p in pieces or [text]]
        else:
            text = self._answer_text(request)
            tokens = [TokenLogprob(token=text, logprob=0.0, top=[TopLogprob(token=text, logprob=0.0)])] if request.top_logprobs else None
            response.choices = [Choice(text=text, tokens=tokens, finish_reason="stop") for _ in range(request.n)]
        return response

    def _answer_text(self, request: GenerateRequest) -> str:
        """A generated answer that lets the scorer go on as with a usable answer: a label of the scale its
        template asks for (mid-scale), or a free text of ``max_tokens`` words (ladders, plans)."""
        template = dict(request.tags).get("template_id", "")
        if template.startswith(("synthetic.generate", "fusion.plan")):
            return " ".join(["text"] * max(1, request.max_tokens))
        if template.startswith("synthetic.compare_bws"):
            return "Similar"
        if template.startswith(("synthetic.compare_yesno", "fusion.nli")):
            return "Yes"
        scale = Scale.letters(self.scale.values) if template.startswith("mcq.") else self.scale
        return scale.labels[len(scale.labels) // 2]


def _uniform(question: object) -> DecisionAnswer:
    """A stand-in answer to one decision question: every level or option equally likely."""
    if isinstance(question, PredicateQuestion):
        return DecisionAnswer(name=question.name, status="ok", probability=0.5)
    options = question.levels if isinstance(question, ScoreQuestion) else question.choices  # type: ignore[attr-defined]
    return DecisionAnswer(name=question.name, status="ok", probabilities=tuple(1.0 / len(options) for _ in options))  # type: ignore[attr-defined]
