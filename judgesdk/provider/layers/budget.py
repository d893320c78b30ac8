"""A budget cap that stops a run cleanly: a provider wrapper beside retry and rate limits.

A cap (tokens and/or USD) is enforced by :class:`BudgetedProvider`, a provider wrapper placed *under* the
cache and the retry policy (``cache -> retry -> budget -> adapter``), rather than by watching finished
results in ``score_many``'s ``on_result``. Why the wrapper:

* it acts *before* a model call: once the cap is reached no further call starts, whereas ``on_result``
  only sees a result after every call of that item has been paid for, and cannot stop the items that
  ``score_many`` has already scheduled;
* under the cache, it only ever sees real calls: cache hits stay free and are still served after the
  cap, so a re-run with a higher cap resumes at no cost;
* under the retry policy, each attempt is a call and is counted as one;
* it raises :class:`~judgesdk.core.errors.BudgetExceededError`, which is not a ``ProviderError``: the judge's
  fallback chain does not try the next provider (that would spend the same budget) and the error ends
  the run. :func:`judgesdk.judging.runners.score_within_budget` catches it, lets the calls already in flight
  finish (they are paid for: their results are kept; at most ``concurrency`` calls can end past the cap)
  and reports the stop. Results are written as they finish (:mod:`judgesdk.records`), so nothing
  finished is lost.

Prices come from :func:`judgesdk.provider.prices.price_for`.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field, model_validator

from judgesdk.core import BudgetExceededError, ConfigError, Usage
from judgesdk.provider.prices import CostModel, Price, price_for
from judgesdk.provider.protocol import GenerateRequest, GenerateResponse, Provider, WrapperProvider

__all__ = ["Budget", "BudgetMeter", "BudgetState", "BudgetedProvider"]


class Budget(BaseModel):
    """A cap on what one run may spend: tokens billed (input + output), USD, or both."""

    model_config = ConfigDict(extra="forbid")  # max_usdd must be refused: a cap silently not applied spends without bound

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
        self._prices: dict[tuple[str, str, str], Price | None] = {}

    def price(self, kind: str, model: str, route: str = "chat") -> Price | None:
        """The price of a call (``route="decisions"`` for a decision request: its own price fields)."""
        if (kind, model, route) not in self._prices:
            self._prices[(kind, model, route)] = price_for(kind, model, self.budget.prices, route=route)[0]
        return self._prices[(kind, model, route)]

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

    def record(self, kind: str, model: str, response: GenerateResponse, route: str = "chat") -> None:
        if response.cached:
            return
        self.calls += 1
        self.tokens += response.usage.input_tokens + response.usage.output_tokens
        price = self.price(kind, model, route)
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
    """Checks the meter before each call and records the call's usage after it (see the module docstring)."""

    def __init__(self, inner: Provider, meter: BudgetMeter) -> None:
        super().__init__(inner)
        self.meter = meter

    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        self.meter.check()
        response = await self.inner.generate(request)
        self.meter.record(self.kind, self.model, response, "decisions" if request.decision is not None else "chat")
        return response


class UsageMeter:
    """What the real calls of a run spent, per (kind, model): calls and token usage. Cached answers never reach
    it (it sits under the cache), and a retried call counts once, when it succeeds. ``judgesdk score`` sets it
    beside the estimate saved for the run (:class:`judgesdk.forecast.job.SpendMeter`)."""

    def __init__(self) -> None:
        self.usage: dict[tuple[str, str], Usage] = {}

    def record(self, kind: str, model: str, response: GenerateResponse) -> None:
        if not response.cached:
            key = (kind, model)
            self.usage[key] = self.usage.get(key, Usage()) + response.usage.model_copy(update={"calls": 1})


class MeteredProvider(WrapperProvider):
    """Records each answer's usage in a :class:`UsageMeter`."""

    def __init__(self, inner: Provider, meter: UsageMeter) -> None:
        super().__init__(inner)
        self.meter = meter

    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        response = await self.inner.generate(request)
        self.meter.record(self.kind, self.model, response)
        return response
