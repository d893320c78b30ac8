"""The bill before the run: what judging some items would ask of the model, found without calling it.

:func:`forecast` runs the job (the items, the criteria, the judge config) through the real scorers on a
judge whose one provider is a stand-in that records every request and answers it without a model call. Items
run with the config's concurrency, and it counts, per provider, the requests, the calls that reach the
model, cache hits, requests merged in flight, prompt and output tokens, the tokens the local model evaluates
after prefix reuse, and the cost. The parts, each in its own module:

* :mod:`judgesdk.forecast.planner`: :class:`PlanningProvider`, the stand-in, and what it counts;
* :mod:`judgesdk.forecast.tokens`: the provider's own tokenizer where one is local, else
  :data:`CHARS_PER_TOKEN`;
* :mod:`judgesdk.forecast.kv_replay`: the local model's KV-cache prefix reuse, replayed on token ids;
* :mod:`judgesdk.forecast.bill`: :class:`Forecast` and what each count means, saved beside the results
  file, as a table, and set beside what a run spent.

Exact, request for request: the fused judge (``auto`` on a local model), ``likelihood``, and every method
that reads exact label probabilities (``geval``/``mcq`` on a local model). Calls exact, output tokens an
upper bound: ``direct``, ``sampling`` (n samples), ``rts``, and ``geval`` on top-logprobs APIs, assuming no
fallback to sampling (label coverage below the floor) and no grammar repair; both depend on the answers.
Approximate: ``synthetic`` and ``fusion``, whose later prompts embed generated texts (ladders, plans),
counted at ``max_tokens`` each. A method whose next request depends on an answer follows the stand-in.

:class:`SpendMeter` counts what a real run then spends, and :class:`Beside` sets the estimate saved for its
results file beside it in the run's report.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from judgesdk.core import ConfigError, Criterion, JudgeItem, ProviderError
from judgesdk.forecast.bill import (
    Forecast,
    ProviderForecast,
    ProviderSpend,
    compare_rows,
    estimate_path,
    load_saved,
    save,
    table,
)
from judgesdk.forecast.kv_replay import KVReplay, label_paths, local_settings
from judgesdk.forecast.planner import PlanningProvider
from judgesdk.forecast.tokens import CHARS_PER_TOKEN, Vocab, tokenizer_for
from judgesdk.judging import Judge, JudgeConfig, ask_for, detect_chain
from judgesdk.provider import (
    CachedProvider,
    CostModel,
    Provider,
    ProviderConfig,
    Usage,
    UsageMeter,
    build_adapter,
    check_directory,
    find_layer,
    open_cache,
    price_for,
    pricing,
    unwrap,
)
from judgesdk.records import is_final, read_results
from judgesdk.scorers import is_method, method_spec

__all__ = [
    "CHARS_PER_TOKEN", "Beside", "Forecast", "PlanningProvider", "ProviderForecast", "ProviderSpend", "SpendMeter",
    "aforecast", "compare_rows", "estimate_path", "fingerprint", "forecast", "label_paths", "load_saved", "save",
    "table", "todo_items",
]  # fmt: skip

Job = tuple[Criterion | Sequence[Criterion], Sequence[JudgeItem]]


# -- planning a job -----------------------------------------------------------------------------------


def fingerprint(config: JudgeConfig, jobs: Sequence[Job]) -> str:
    """What identifies a job: each question asked (criteria, method, the judge config that changes answers,
    :func:`judgesdk.records.ask_for`) and its items.

    ``config``: the judge config the job runs with; ``jobs``: the job's (criterion or criteria, items) pairs, in
    order. Returns 16 hex digits of a SHA-256 over them: a saved estimate whose fingerprint differs from a run's
    was made for other items or another question (:class:`Beside` then does not compare them)."""
    payload = [
        [ask_for(config, criterion).key, [item.model_dump(mode="json") for item in items]]
        for criterion, items in jobs
    ]
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode("utf-8")).hexdigest()[:16]


def todo_items(items: Sequence[tuple[JudgeItem, Mapping[str, Any]]], results: Path | None, ask: Any) -> list[JudgeItem]:
    """The items a run into ``results`` would judge: those without a final row for ``ask`` there (read, never locked)."""
    if results is None or not results.is_file():
        return [item for item, _ in items]
    done = {key for key, row in read_results(results, unreadable="skip").latest(ask).items() if is_final(row.model_dump())}  # as the run reads it
    return [item for item, _ in items if (item.id or "") not in done]


def forecast(
    config: JudgeConfig, jobs: Sequence[Job], *, adapters: Sequence[Any] | None = None, prices: CostModel | None = None
) -> Forecast:
    """The bill of judging ``jobs`` (criterion or criteria, items), one after the other as the gate runs them,
    with ``config``'s judge; no model is called. ``adapters`` replaces the config's provider chain (instances
    or factories, e.g. a scripted provider); an instance given is not closed.

    ``prices``: explicit prices for the cost (:class:`judgesdk.provider.prices.CostModel`), or None for the
    known prices of the provider's model (a local model then costs 0). Only the chain's first provider that can
    be built is planned for; the ones before it are named in ``skipped``. Returns the :class:`Forecast`; raises
    :class:`~judgesdk.core.errors.ConfigError` when no provider of the chain can be built. Runs its own event
    loop: inside one, await :func:`aforecast`."""
    return asyncio.run(aforecast(config, jobs, adapters=adapters, prices=prices))


async def aforecast(
    config: JudgeConfig, jobs: Sequence[Job], *, adapters: Sequence[Any] | None = None, prices: CostModel | None = None
) -> Forecast:
    """:func:`forecast` on the running event loop: the same ``config``, ``jobs``, ``adapters`` and ``prices``,
    the same :class:`Forecast` returned."""
    adapter, owned, options, skipped = _first_usable(config, adapters)
    cache = _read_cache(config)
    tokens = tokenizer_for(adapter)
    try:
        replay = None
        if isinstance(tokens, Vocab):
            replay = KVReplay(n_swa=tokens.n_swa, **local_settings(adapter, options))
        planner = PlanningProvider(adapter, tokens=tokens, cache=cache, namespace=config.cache.namespace, replay=replay)
        judge = Judge(
            [planner], template=config.template, method=config.method, dataset=config.dataset,
            method_options=config.method_options, settings=config.estimation, concurrency=config.concurrency,
        )  # fmt: skip
        failing: list[str] = []
        criteria: list[str] = []
        for criterion, items in jobs:
            chosen = [criterion] if isinstance(criterion, Criterion) else list(criterion)
            criteria += [c.name for c in chosen if c.name not in criteria]
            planner.scale = chosen[0].scale
            for result in await judge.ascore_many(list(items), criterion=criterion):
                if result.status == "error":
                    failing.append(result.error or "error")
    finally:
        if isinstance(tokens, Vocab):
            tokens.close()
        if cache is not None:
            cache.close()
        if owned:
            await adapter.aclose()
    count = planner.count
    count.usd, count.price_note = _cost(count, prices)
    notes = _notes(count, config)
    if failing:
        notes.append(f"{len(failing)} judgement(s) would end in an error, e.g.: {failing[0]}")
    distinct = {item.id or item.model_dump_json() for _, items in jobs for item in items}
    return Forecast(
        items=len(distinct), judgements=sum(len(items) for _, items in jobs), criteria=criteria, method=config.method,
        providers=[count], skipped=skipped,
        failing=len(failing), notes=notes, usd=count.usd, fingerprint=fingerprint(config, jobs),
    )  # fmt: skip


def _given(provider: Provider) -> Callable[[], Provider]:
    """A factory that answers ``provider`` itself (an adapter the caller built and owns)."""
    return lambda: provider


def _first_usable(config: JudgeConfig, adapters: Sequence[Any] | None) -> tuple[Provider, bool, Mapping[str, Any], list[str]]:
    """The provider that would answer (the chain's first that can be built), whether it was built here, its
    configured options, and why the ones before it are skipped."""
    sources: list[tuple[Callable[[], Provider], bool, Mapping[str, Any]]]
    if adapters is not None:
        sources = [(_given(a), False, {}) if hasattr(a, "generate") else (a, True, {}) for a in adapters]
    else:
        chain: list[ProviderConfig] = config.providers or detect_chain(os.environ)
        sources = [(functools.partial(build_adapter, pc), True, pc.options) for pc in chain]
    skipped: list[str] = []
    for index, (build, owned, options) in enumerate(sources):
        try:
            return build(), owned, options, skipped
        except ProviderError as exc:  # no key, no model file: the run would skip it the same way
            skipped.append(f"provider {index} unavailable: {exc}")
    raise ConfigError("no provider of the chain can be used: " + "; ".join(skipped))


def _read_cache(config: JudgeConfig) -> Any:
    """The run's disk cache to look requests up in, or None when it is off or holds nothing yet (an estimate
    creates no cache folder)."""
    if not config.cache.enabled:
        return None
    directory = check_directory(config.cache.directory)  # a folder the run could not use: its ConfigError, now
    if not (directory / "cache.db").is_file():
        return _EmptyCache()
    return open_cache(directory)


class _EmptyCache:
    """The cache of a run whose cache folder does not exist yet: on, and empty."""

    def get(self, key: str) -> None:
        return None

    def close(self) -> None:
        return None


def _cost(count: ProviderForecast, prices: CostModel | None) -> tuple[float | None, str]:
    if pricing(count.provider).local and prices is None:
        return 0.0, f"{count.provider}/{count.model} runs locally: no per-token price"
    if count.calls == 0:
        return 0.0, "nothing to pay: every request is answered by the cache"
    price, note = price_for(count.provider, count.model, prices, route="decisions" if count.by_kind.get("decision") else "chat")
    if price is None:
        return None, note
    return price.cost(Usage(input_tokens=count.prompt_tokens, output_tokens=count.output_tokens, calls=count.calls)), note


def _notes(count: ProviderForecast, config: JudgeConfig) -> list[str]:
    notes = [f"tokens counted with {count.tokenizer}"]
    if not count.output_tokens_exact:
        notes.append("output tokens are an upper bound: max_tokens per generated answer (a model may stop sooner)")
    if count.tokens_evaluated is not None:
        notes.append(
            "tokens evaluated: the local model's prefix reuse replayed over the calls in arrival order "
            f"(concurrency {config.concurrency})" + ("" if count.tokens_evaluated_exact else "; generation counted at max_tokens")
        )
    if count.too_long:
        notes.append(f"{count.too_long} call(s) need more tokens than the local context holds: they would fail (raise n_ctx)")
    approximation = method_spec(config.method).forecast_approximation if is_method(config.method) else None
    if approximation is not None:
        notes.append(f"{config.method}: {approximation}")
    if count.by_kind.get("generation") and approximation is None:
        notes.append("generated answers are assumed usable: no fallback to sampling (label coverage) and no grammar repair")
    if count.by_kind.get("decision"):
        notes.append("decision calls: prompt tokens are the input and questions as sent, with no output tokens (decision APIs bill none on gpt-6-luna)")
    if config.cache.enabled and count.cache_hits:
        notes.append("cache hits include requests repeated within the run: the run's cache answers them")
    return notes


# -- what a run spends, beside the estimate -----------------------------------------------------------


class SpendMeter(UsageMeter):
    """Counts what a run's calls spend, per provider: ``Judge.from_config(config, extras=Extras(meter=meter))``
    puts it under the cache and retry, where only real calls pass (each successful attempt once)."""

    def spent(self, judge: Judge, prices: CostModel | None = None) -> list[ProviderSpend]:
        """Per provider the judge used: its calls and usage, its cache's hits, its local model's evaluated tokens.
        Read before the judge is closed."""
        found = []
        for stack in judge.providers_in_use:
            usage = self.usage.get((stack.kind, stack.model), Usage())
            cached = find_layer(stack, CachedProvider)
            counters = getattr(unwrap(stack), "counters", None)
            spend = ProviderSpend(
                provider=stack.kind, model=stack.model, calls=usage.calls, prompt_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens, cache_hits=None if cached is None else cached.hits,
                tokens_evaluated=None if counters is None else counters.tokens_evaluated,
            )  # fmt: skip
            if pricing(stack.kind).local and prices is None:
                spend.usd = 0.0
            else:
                route = "decisions" if getattr(unwrap(stack), "api", "chat") in ("decisions", "systemone") else "chat"
                price, _ = price_for(stack.kind, stack.model, prices, route=route)
                spend.usd = None if price is None else price.cost(usage)
            found.append(spend)
        return found


class Beside:
    """The estimate saved for a results file (``judgesdk score --estimate -o FILE``) and the meter that counts
    what the run into FILE spends, to set beside it in the run's report."""

    def __init__(self, saved: Forecast) -> None:
        self.saved = saved
        self.meter = SpendMeter()

    @classmethod
    def open(cls, results: Path | None) -> Beside | None:
        saved = load_saved(results)
        return None if saved is None else cls(saved)

    def rows(self, config: JudgeConfig, jobs: Sequence[Job]) -> Callable[[Judge], list[tuple[str, str]]]:
        """The report rows for a run of ``jobs``; read from the judge before it is closed. An estimate made
        for other items or another question is named, not compared."""
        if self.saved.fingerprint != fingerprint(config, jobs):
            note = [("estimate", "the saved estimate is for other items or another question (run --estimate again): not compared")]
            return lambda judge: note
        return lambda judge: compare_rows(self.saved, self.meter.spent(judge))

