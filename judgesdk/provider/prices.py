"""Prices and token usage: what a model's tokens cost, and what a set of results used and cost.

:func:`summarize_usage` totals the usage every :class:`JudgeResult` carries, per provider/model, split into
what was *billed* (results not served from the cache) and all of it. Prices come from LiteLLM's bundled
price map, read offline (``LITELLM_LOCAL_MODEL_COST_MAP=True`` is set before LiteLLM is imported, so
nothing is fetched), or from explicit prices (:class:`CostModel`). A local model, or a model the map does
not know, gets cost ``None`` and a note saying why: never a made-up number.

Decision calls (``route="decisions"``: OpenAI Decisions, System One, LiteLLM's decision routes) are billed from
the map's ``<field>_decisions`` values where a model has them (``gpt-6-luna``: output tokens free, cached input
reads at the input price), through LiteLLM's own ``apply_decisions_pricing``, with the map's price tier for
requests above its ``_above_<N>k_tokens`` threshold (272k on ``gpt-6-luna``).

The budget cap that spends against these prices is a provider wrapper, :mod:`judgesdk.provider.layers.budget`; the runner
that stops a run cleanly at the cap is :func:`judgesdk.judging.runners.score_within_budget`.
found here, with a :class:`DeprecationWarning` (this module sits below both).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from judgesdk.core import ConfigError, JudgeResult
from judgesdk.provider.protocol import Usage
from judgesdk.provider.registry import Pricing, pricing

__all__ = ["CostModel", "CostReport", "Price", "Route", "UsageGroup", "price_for", "result_route", "summarize_usage"]

Route = str  # "chat" (every prompt-based call) or "decisions" (a decision request: its own price fields)


class CostModel(BaseModel):
    """Configured prices to turn token usage into money (USD per million tokens), instead of the price map."""

    model_config = ConfigDict(extra="forbid")

    usd_per_million_input: float = 0.0
    usd_per_million_output: float = 0.0
    usd_per_million_cached_input: float | None = None  # default: the input price
    # prompt-cache writes; default: the input price, times the cache-write multiple the kind's adapter declares
    # (Pricing.cache_write; set it for a model whose vendor bills writes, behind a kind that declares none)
    usd_per_million_cache_write: float | None = None


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
    # a price tier for requests above ``tier_tokens`` input tokens (decision routes of the price map): ``above``
    tier_tokens: int | None = None
    above: Price | None = None

    def cost(self, usage: Usage) -> float:
        """The cost of ``usage``; with a tier, requests whose input averages above ``tier_tokens`` (usage summed over
        ``calls`` requests; one judged item is one decision request) are priced at the tier."""
        if self.above is not None and self.tier_tokens is not None and usage.input_tokens > self.tier_tokens * max(usage.calls, 1):
            return self.above.cost(usage)
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
    names = [model, f"{pricing(kind).map_prefix or kind}/{model}"]
    if "/" in model:
        names.append(model.split("/", 1)[1])  # litellm routes: "anthropic/claude-..." -> "claude-..."
    return names


def price_for(kind: str, model: str, prices: CostModel | None = None, *, route: Route = "chat") -> tuple[Price | None, str]:
    """The per-token price of ``kind``/``model`` and where it came from, or None and why there is none.

    How a kind is priced (locally: no price; its price-map prefix; its prompt-cache multipliers) is what its
    adapter declares in the provider registry (:func:`judgesdk.provider.registry.pricing`). Prompt-cache writes are priced at the map's ``cache_creation_input_token_cost``, reads at its
    ``cache_read_input_token_cost``; where the map gives none, the multiples of the input price that the kind
    declares (:attr:`Pricing.cache_write`, :attr:`Pricing.cache_read`), else those of the kind named by the
    entry's ``litellm_provider`` (the vendor that bills it: a Claude model routed through LiteLLM is billed as
    Anthropic's adapter declares), else the input price. With configured ``prices``, reads cost
    ``usd_per_million_cached_input`` (default: the input price) and writes ``usd_per_million_cache_write``
    (default: the input price, times the kind's declared ``cache_write``).
    ``route="decisions"`` prices a decision call from the map's decision fields (module docstring).
    """
    if prices is not None:
        per_token = 1e-6
        cached = None if prices.usd_per_million_cached_input is None else prices.usd_per_million_cached_input * per_token
        written = prices.usd_per_million_cache_write
        price = Price(
            input=prices.usd_per_million_input * per_token, output=prices.usd_per_million_output * per_token,
            cached_input=cached, source="configured prices",
            cache_write_input=_declared_write(kind, prices.usd_per_million_input * per_token) if written is None else written * per_token,
        )  # fmt: skip
        return price, price.source
    if pricing(kind).local:
        return None, f"{kind}/{model}: runs locally, so there is no per-token price"
    table = _litellm_price_map()
    if table is None:
        return None, f"{kind}/{model}: LiteLLM is not installed, so its price map is unavailable (pip install 'judgesdk[litellm]' or set prices)"
    for name in _candidates(kind, model):
        entry = table.get(name)
        if isinstance(entry, Mapping) and entry.get("input_cost_per_token") is not None:
            if route == "decisions":
                return _decisions_price(kind, name, entry)
            return _map_price(kind, name, entry), f"LiteLLM price map: {name}"
    return None, f"{kind}/{model} is not in LiteLLM's bundled price map: cost unknown (set prices to estimate it)"


def _declared_write(kind: str, input_price: float) -> float | None:
    """The cache-write price ``kind`` declares for ``input_price`` input (its ``Pricing.cache_write``), or None (same as input)."""
    multiplier = pricing(kind).cache_write
    return None if multiplier is None else input_price * multiplier


def _map_price(kind: str, name: str, entry: Mapping[str, Any]) -> Price:
    """A price from one LiteLLM price-map entry, cache reads and writes included (see :func:`price_for`)."""
    input_price = float(entry["input_cost_per_token"])
    read, write = entry.get("cache_read_input_token_cost"), entry.get("cache_creation_input_token_cost")
    declared = pricing(kind)
    read_x, write_x = declared.cache_read, declared.cache_write
    if (read is None and read_x is None) or (write is None and write_x is None):
        billed = _billed_by(entry)  # a model routed through another kind is billed as its own vendor bills it
        read_x = billed.cache_read if read_x is None else read_x
        write_x = billed.cache_write if write_x is None else write_x
    read = input_price * read_x if read is None and read_x is not None else read
    write = input_price * write_x if write is None and write_x is not None else write
    return Price(
        input=input_price,
        output=float(entry.get("output_cost_per_token") or 0.0),
        cached_input=None if read is None else float(read),
        cache_write_input=None if write is None else float(write),
        source=f"LiteLLM price map: {name}",
    )


def _billed_by(entry: Mapping[str, Any]) -> Pricing:
    """The pricing declared by the kind that the price-map entry's ``litellm_provider`` names (the vendor billing
    the model), or the plain one where it names no provider kind."""
    vendor = entry.get("litellm_provider")
    if not isinstance(vendor, str) or not vendor:
        return Pricing()
    try:
        return pricing(vendor)
    except ConfigError:  # a kind of that name whose adapter cannot be loaded here: its declared multiples are unknown
        return Pricing()


def _decisions_price(kind: str, name: str, entry: Mapping[str, Any]) -> tuple[Price, str]:
    """A decision call's price from one map entry: its ``_decisions`` fields over the plain ones (LiteLLM's rule,
    :mod:`litellm.litellm_core_utils.decisions_pricing`), and its ``_above_<N>k_tokens`` tier."""
    from litellm.litellm_core_utils.decisions_pricing import apply_decisions_pricing, decisions_pricing_fields

    own = bool(decisions_pricing_fields(entry))
    row = dict(apply_decisions_pricing(entry))
    price = _map_price(kind, name, row).model_copy(update={"source": f"LiteLLM price map: {name} (decisions)"})
    tiers = sorted(
        int(key.removeprefix("input_cost_per_token_above_").removesuffix("k_tokens"))
        for key in row
        if key.startswith("input_cost_per_token_above_") and key.endswith("k_tokens") and key[27:-8].isdigit()
    )
    if tiers:
        suffix = f"_above_{tiers[0]}k_tokens"
        tier_row = {base: row.get(f"{base}{suffix}", row.get(base)) for base in _TIERED}
        tier_row["litellm_provider"] = row.get("litellm_provider")
        price = price.model_copy(update={"tier_tokens": tiers[0] * 1000, "above": _map_price(kind, name, tier_row)})
    how = "its decision prices" if own else "no decision prices of its own, so its plain prices"
    tier = f"; above {tiers[0]}k input tokens a request, the tier's prices" if tiers else ""
    return price, f"LiteLLM price map: {name} ({how}{tier})"


_TIERED = ("input_cost_per_token", "output_cost_per_token", "cache_read_input_token_cost", "cache_creation_input_token_cost")


def result_route(result: JudgeResult) -> Route:
    """``"decisions"`` for a result a decision request produced (its method ``decision/...`` or ``.../decision``)."""
    parts = result.method.split("/")
    return "decisions" if parts[0] == "decision" or parts[-1] == "decision" else "chat"


# -- usage and cost over results -------------------------------------------------------------------


class UsageGroup(BaseModel):
    """Usage of the results one provider/model produced (on one route: decision calls are priced apart)."""

    provider: str
    model: str
    route: Route = "chat"
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


def _group(provider: str, model: str, results: Sequence[JudgeResult], prices: CostModel | None, route: Route = "chat") -> UsageGroup:
    billed = sum((r.usage for r in results if not r.cached), Usage())
    usage = sum((r.usage for r in results), Usage())
    usd: float | None
    if billed.input_tokens + billed.output_tokens == 0:
        usd, note = 0.0, "nothing billed (every result from the cache, or no tokens)"
    else:
        price, note = price_for(provider, model, prices, route=route)
        usd = None if price is None else price.cost(billed)
    return UsageGroup(
        provider=provider, model=model, route=route, n_results=len(results), n_cached=sum(r.cached for r in results),
        usage=usage, billed=billed, usd=usd, price_note=note,
    )  # fmt: skip


def summarize_usage(results: Sequence[JudgeResult], prices: CostModel | None = None) -> CostReport:
    """Usage totals and estimated cost of ``results``, grouped by the provider/model that answered.

    Only results not served from the cache are billed. ``prices``: configured prices that replace the price map
    for every group (None: each group is priced by :func:`price_for`). The report's ``usd`` is None when some
    group has no known price; its notes say which."""
    by_model: dict[tuple[str, str, str], list[JudgeResult]] = {}
    for result in results:
        by_model.setdefault((result.provider, result.model, result_route(result)), []).append(result)
    groups = [_group(provider, model, members, prices, route) for (provider, model, route), members in sorted(by_model.items())]
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
