"""Token usage, estimated cost, and a budget cap that stops a run cleanly.

**Usage and cost.** :func:`summarize_usage` totals the usage every :class:`JudgeResult` carries, per
provider/model, split into what was *billed* (results not served from the cache) and all of it. Prices
come from LiteLLM's bundled price map, read offline (``LITELLM_LOCAL_MODEL_COST_MAP=True`` is set
before LiteLLM is imported, so nothing is fetched), or from explicit prices
(:class:`~judgesdk.meta.report.CostModel`). A local model, or a model the map does not know, gets cost
``None`` and a note saying why: never a made-up number.

**Budget cap.** A cap (tokens and/or USD) is enforced by :class:`BudgetedProvider`, a provider wrapper
placed *under* the cache and the retry policy (``cache -> retry -> budget -> adapter``), rather than by
watching finished results in ``score_many``'s ``on_result``. Why the wrapper:

* it acts *before* a model call: once the cap is reached no further call starts, whereas ``on_result``
  only sees a result after every call of that item has been paid for, and cannot stop the items that
  ``score_many`` has already scheduled;
* under the cache, it only ever sees real calls: cache hits stay free and are still served after the
  cap, so a re-run with a higher cap resumes at no cost;
* under the retry policy, each attempt is a call and is counted as one;
* it raises :class:`~judgesdk.errors.BudgetExceededError`, which is not a ``ProviderError``: the judge's
  fallback chain does not try the next provider (that would spend the same budget) and the error ends
  the run. :func:`score_within_budget` catches it, lets the calls already in flight finish (they are
  paid for: their results are kept; at most ``concurrency`` calls can end past the cap) and reports
  the stop. Results are written as they finish (:mod:`judgesdk.runlog`), so nothing finished is lost.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, Field, model_validator

from judgesdk.errors import BudgetExceededError, ConfigError
from judgesdk.provider import GenerateRequest, GenerateResponse, Provider, Usage, WrapperProvider
from judgesdk.types import Criterion, JudgeItem, JudgeResult

if TYPE_CHECKING:
    from judgesdk.config import JudgeConfig
    from judgesdk.judge import Judge, ProviderSource

__all__ = [
    "Budget",
    "CostModel",
    "BudgetMeter",
    "BudgetState",
    "BudgetedProvider",
    "CostReport",
    "Price",
    "UsageGroup",
    "budgeted_judge",
    "price_for",
    "score_within_budget",
    "summarize_usage",
]

LOCAL_KINDS = ("local", "scripted")


class CostModel(BaseModel):
    """Configured prices to turn token usage into money (USD per million tokens), instead of the price map."""

    usd_per_million_input: float = 0.0
    usd_per_million_output: float = 0.0
    usd_per_million_cached_input: float | None = None  # default: the input price
    # prompt-cache writes; default: the input price, x1.25 for kind "anthropic" (set it for Claude behind LiteLLM)
    usd_per_million_cache_write: float | None = None


# Anthropic's prompt-cache multipliers of the input price (5-minute TTL), for a price source that gives none
ANTHROPIC_CACHE_WRITE = 1.25
ANTHROPIC_CACHE_READ = 0.1


class Price(BaseModel):
    """USD per token.

    ``usage.input_tokens`` counts every prompt token; of those, ``cached_input_tokens`` (read from a prompt
    cache) are priced at ``cached_input`` and ``cache_write_input_tokens`` (written to one, as Anthropic
    bills them) at ``cache_write_input``, the rest at ``input``.
    """

    input: float
    output: float
    cached_input: float | None = None  # None: same as input
    cache_write_input: float | None = None  # None: same as input
    source: str

    def cost(self, usage: Usage) -> float:
        cached, written = usage.cached_input_tokens, usage.cache_write_input_tokens
        cached_price = self.input if self.cached_input is None else self.cached_input
        write_price = self.input if self.cache_write_input is None else self.cache_write_input
        plain = usage.input_tokens - cached - written
        return plain * self.input + cached * cached_price + written * write_price + usage.output_tokens * self.output


def _litellm_price_map() -> Mapping[str, Any] | None:
    """LiteLLM's bundled price map, never fetched from the network; None when LiteLLM is not installed."""
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    try:
        import litellm
    except ImportError:
        return None
    return litellm.model_cost


def _candidates(kind: str, model: str) -> list[str]:
    names = [model, f"{kind}/{model}"]
    if "/" in model:
        names.append(model.split("/", 1)[1])  # litellm routes: "anthropic/claude-..." -> "claude-..."
    return names


def price_for(kind: str, model: str, prices: CostModel | None = None) -> tuple[Price | None, str]:
    """The per-token price of ``kind``/``model`` and where it came from, or None and why there is none.

    Prompt-cache writes are priced at the map's ``cache_creation_input_token_cost``, reads at its
    ``cache_read_input_token_cost``; where the map gives none, an Anthropic model gets Anthropic's
    multipliers of the input price (writes 1.25x, reads 0.1x) and any other model the input price. With
    configured ``prices``, reads cost ``usd_per_million_cached_input`` (default: the input price) and
    writes ``usd_per_million_cache_write`` (default: the input price, times 1.25 for ``kind="anthropic"``).
    """
    if prices is not None:
        per_token = 1e-6
        cached = None if prices.usd_per_million_cached_input is None else prices.usd_per_million_cached_input * per_token
        written = prices.usd_per_million_cache_write
        price = Price(
            input=prices.usd_per_million_input * per_token, output=prices.usd_per_million_output * per_token,
            cached_input=cached, source="configured prices",
            cache_write_input=_anthropic_write(kind, prices.usd_per_million_input * per_token) if written is None else written * per_token,
        )  # fmt: skip
        return price, price.source
    if kind in LOCAL_KINDS:
        return None, f"{kind}/{model}: runs locally, so there is no per-token price"
    table = _litellm_price_map()
    if table is None:
        return None, f"{kind}/{model}: LiteLLM is not installed, so its price map is unavailable (pip install 'judgesdk[litellm]' or set prices)"
    for name in _candidates(kind, model):
        entry = table.get(name)
        if isinstance(entry, Mapping) and entry.get("input_cost_per_token") is not None:
            return _map_price(kind, name, entry), f"LiteLLM price map: {name}"
    return None, f"{kind}/{model} is not in LiteLLM's bundled price map: cost unknown (set prices to estimate it)"


def _anthropic_write(kind: str, input_price: float) -> float | None:
    """The cache-write price Anthropic charges for ``input_price`` input, or None (same as input) for other kinds."""
    return input_price * ANTHROPIC_CACHE_WRITE if kind == "anthropic" else None


def _map_price(kind: str, name: str, entry: Mapping[str, Any]) -> Price:
    """A price from one LiteLLM price-map entry, cache reads and writes included (see :func:`price_for`)."""
    input_price = float(entry["input_cost_per_token"])
    read, write = entry.get("cache_read_input_token_cost"), entry.get("cache_creation_input_token_cost")
    if kind == "anthropic" or entry.get("litellm_provider") == "anthropic":
        read = input_price * ANTHROPIC_CACHE_READ if read is None else read
        write = input_price * ANTHROPIC_CACHE_WRITE if write is None else write
    return Price(
        input=input_price,
        output=float(entry.get("output_cost_per_token") or 0.0),
        cached_input=None if read is None else float(read),
        cache_write_input=None if write is None else float(write),
        source=f"LiteLLM price map: {name}",
    )


# -- usage and cost over results -------------------------------------------------------------------


class UsageGroup(BaseModel):
    """Usage of the results one provider/model produced."""

    provider: str
    model: str
    n_results: int
    n_cached: int
    usage: Usage  # every result's recorded usage, cached or not
    billed: Usage  # results not served from the cache: what this run paid for
    usd: float | None  # cost of ``billed``; None when the price is unknown
    price_note: str


class CostReport(BaseModel):
    """Usage totals and estimated cost of a set of results."""

    n_results: int
    n_cached: int
    usage: Usage
    billed: Usage
    usd: float | None  # None when any billed group has no known price
    groups: list[UsageGroup]
    notes: list[str] = Field(default_factory=list)


def _group(provider: str, model: str, results: Sequence[JudgeResult], prices: CostModel | None) -> UsageGroup:
    billed = sum((r.usage for r in results if not r.cached), Usage())
    usage = sum((r.usage for r in results), Usage())
    if billed.input_tokens + billed.output_tokens == 0:
        usd, note = 0.0, "nothing billed (every result from the cache, or no tokens)"
    else:
        price, note = price_for(provider, model, prices)
        usd = None if price is None else price.cost(billed)
    return UsageGroup(
        provider=provider, model=model, n_results=len(results), n_cached=sum(r.cached for r in results),
        usage=usage, billed=billed, usd=usd, price_note=note,
    )  # fmt: skip


def summarize_usage(results: Sequence[JudgeResult], prices: CostModel | None = None) -> CostReport:
    """Usage totals and estimated cost of ``results``, grouped by the provider/model that answered."""
    by_model: dict[tuple[str, str], list[JudgeResult]] = {}
    for result in results:
        by_model.setdefault((result.provider, result.model), []).append(result)
    groups = [_group(provider, model, members, prices) for (provider, model), members in sorted(by_model.items())]
    unknown = [g for g in groups if g.usd is None]
    return CostReport(
        n_results=len(results),
        n_cached=sum(r.cached for r in results),
        usage=sum((g.usage for g in groups), Usage()),
        billed=sum((g.billed for g in groups), Usage()),
        usd=None if unknown else sum(g.usd or 0.0 for g in groups),
        groups=groups,
        notes=[g.price_note for g in unknown],
    )


# -- budget ----------------------------------------------------------------------------------------


class Budget(BaseModel):
    """A cap on what one run may spend: tokens billed (input + output), USD, or both."""

    max_tokens: int | None = Field(default=None, ge=1)
    max_usd: float | None = Field(default=None, gt=0)
    prices: CostModel | None = None  # instead of LiteLLM's price map

    @model_validator(mode="after")
    def _check(self) -> Budget:
        if self.max_tokens is None and self.max_usd is None:
            raise ConfigError("a budget needs max_tokens, max_usd or both")
        return self


class BudgetState(BaseModel):
    """What a run spent against its budget, and whether the cap stopped it."""

    budget: Budget
    calls: int
    tokens: int
    usd: float
    unpriced_calls: int  # calls whose model has no known price (not in ``usd``)
    stopped: bool
    reason: str | None = None


class BudgetMeter:
    """Counts the real calls of one run and refuses new ones once the cap is reached. One per run."""

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self.calls = self.tokens = self.unpriced_calls = 0
        self.usd = 0.0
        self.reason: str | None = None
        self._prices: dict[tuple[str, str], Price | None] = {}

    def price(self, kind: str, model: str) -> Price | None:
        if (kind, model) not in self._prices:
            self._prices[(kind, model)] = price_for(kind, model, self.budget.prices)[0]
        return self._prices[(kind, model)]

    def require_prices(self, models: Sequence[tuple[str, str]]) -> None:
        """With a USD cap, at least one provider of the chain must have a price, or the cap means nothing."""
        if self.budget.max_usd is None or any(self.price(kind, model) is not None for kind, model in models):
            return
        why = "; ".join(price_for(kind, model, self.budget.prices)[1] for kind, model in models)
        raise ConfigError(f"max_usd cannot be enforced: no provider of the chain has a known price ({why}); use max_tokens or set [budget.prices]")

    def check(self) -> None:
        """Raise BudgetExceededError when the cap is reached (called before every real call)."""
        cap = self.budget
        if cap.max_tokens is not None and self.tokens >= cap.max_tokens:
            self.reason = f"token budget reached: {self.tokens} tokens billed, cap {cap.max_tokens}"
        elif cap.max_usd is not None and self.usd >= cap.max_usd:
            self.reason = f"USD budget reached: ${self.usd:.4f} spent, cap ${cap.max_usd:.4f}"
        if self.reason is not None:
            raise BudgetExceededError(self.reason)

    def record(self, kind: str, model: str, response: GenerateResponse) -> None:
        if response.cached:
            return
        self.calls += 1
        self.tokens += response.usage.input_tokens + response.usage.output_tokens
        price = self.price(kind, model)
        if price is None:
            self.unpriced_calls += 1
        else:
            self.usd += price.cost(response.usage)

    def state(self) -> BudgetState:
        return BudgetState(
            budget=self.budget, calls=self.calls, tokens=self.tokens, usd=self.usd,
            unpriced_calls=self.unpriced_calls, stopped=self.reason is not None, reason=self.reason,
        )  # fmt: skip


class BudgetedProvider(WrapperProvider):
    """Checks the meter before each call and records the call's usage after it (see module docstring)."""

    def __init__(self, inner: Provider, meter: BudgetMeter) -> None:
        super().__init__(inner)
        self.meter = meter

    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        self.meter.check()
        response = await self.inner.generate(request)
        self.meter.record(self.kind, self.model, response)
        return response


def budgeted_judge(
    config: JudgeConfig, meter: BudgetMeter | None = None, providers: Sequence[ProviderSource] | None = None
) -> Judge:
    """A judge as :meth:`Judge.from_config` builds it, with ``meter`` under each provider's cache and retry.

    ``providers`` replaces the config's chain (e.g. a scripted provider in tests); they are stacked the
    same way (cache and retry from ``config``). With no meter, nothing is capped.
    """
    from judgesdk.config import DEFAULT_MODELS, detect_chain
    from judgesdk.judge import Judge

    if providers is None and meter is not None:
        chain = config.providers or detect_chain(os.environ)
        meter.require_prices([(pc.kind, pc.model or DEFAULT_MODELS.get(pc.kind, "")) for pc in chain])
    wrap = None if meter is None else (lambda adapter: BudgetedProvider(adapter, meter))
    return Judge.from_config(config, adapters=providers, wrap=wrap)


Job = tuple[Criterion, Sequence[JudgeItem]]


async def ascore_within_budget(
    judge: Judge, jobs: Sequence[Job], on_result: Callable[[Criterion, int, JudgeResult], None]
) -> str | None:
    """Judge each (criterion, items) job in turn; on a budget stop, let calls in flight finish.

    Returns None when every job ran, else the reason the budget stopped the run. Results reach
    ``on_result`` as they finish, including those of calls in flight when the cap was reached.
    """
    for criterion, items in jobs:
        before = asyncio.all_tasks()
        try:
            await judge.ascore_many(items, criterion=criterion, on_result=lambda i, r, c=criterion: on_result(c, i, r))
        except BudgetExceededError as exc:
            # score_many's gather raised on the first stop; its other items are still running: wait for them
            await asyncio.gather(*(asyncio.all_tasks() - before - {asyncio.current_task()}), return_exceptions=True)
            return str(exc)
    return None


def score_within_budget(
    judge: Judge, jobs: Sequence[Job], on_result: Callable[[Criterion, int, JudgeResult], None]
) -> str | None:
    """Sync :func:`ascore_within_budget` on a fresh event loop, which also closes the judge's providers.

    Use a judge built for this run (e.g. by :func:`budgeted_judge`): its providers are created on, and
    closed with, this loop.
    """

    async def run() -> str | None:
        try:
            return await ascore_within_budget(judge, jobs, on_result)
        finally:
            await judge.aclose()

    return asyncio.run(run())
