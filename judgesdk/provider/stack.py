"""The provider stack, assembled here and nowhere else.

Every model call goes through the same layers, in one order. From the outside in:

=====================  ====================  ==========================================================
layer                  set by                why here
=====================  ====================  ==========================================================
witness                the judge             sees every answer of the item being judged (provenance)
coalesce               always                identical requests in flight become one call, cached or not
cache                  ``[cache]``           a hit never waits for back-off, a retry never re-asks it
retry                  ``[retry]``           every attempt below passes the guard and the limits; a
                                             request sleeping between attempts holds no in-flight slot
overload guard         ``[overload]``        timeouts shrink the load instead of feeding a retry storm
budget                 a run's cap           checked before each real call (a cache hit is free)
meter                  a run's report        counts what the real calls spend (set beside an estimate)
batch deferral         offline runs          a cache miss is recorded for a batch API and fails fast
shared limit           the Ray engine        one account-wide limiter for every actor
answer check           always                a 200 that is no answer (an error body, no choices,
                                             logprobs above 0 or NaN) is a retryable error: retried
                                             above, never cached
rate limit             ``rate_limit``        in flight, RPM/TPM buckets, back-off on 429s, over a pool
                                             of SDK clients (one httpx pool each)
adapter                ``[[providers]]``     the API itself (:mod:`judgesdk.providers`)
=====================  ====================  ==========================================================

:func:`assemble` builds it from a :class:`StackPlan` (the config's layers, ``JudgeConfig.stack_plan()``) and
:class:`Extras` (what a run adds: a budget, a meter, a deferral, a shared limiter). :func:`bottom` is the part
an account shares (rate limit over a pool of adapters; a jury's judges naming the same provider share it,
through :func:`borrowed`), and :func:`witnessed` puts the judge's witness on top. The layers themselves are
small classes in :mod:`judgesdk.provider.layers`, one behaviour each; ``tests/provider/test_stack.py`` fails
when any other module instantiates one.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import cast

from judgesdk.core import ConfigError
from judgesdk.provider.layers.answers import AnswerCheck
from judgesdk.provider.layers.batch import Deferral, DeferringProvider
from judgesdk.provider.layers.breaker import OverloadConfig, OverloadGuard
from judgesdk.provider.layers.budget import BudgetedProvider, BudgetMeter, MeteredProvider, UsageMeter
from judgesdk.provider.layers.cache import CachedProvider, open_cache
from judgesdk.provider.layers.coalesce import CoalescingProvider
from judgesdk.provider.layers.ratelimit import PermitSource, ProviderPool, RateLimitConfig, RateLimitedProvider, SharedLimitProvider
from judgesdk.provider.layers.retry import RetryingProvider, RetryPolicy
from judgesdk.provider.layers.witness import Witness
from judgesdk.provider.protocol import Provider, WrapperProvider
from judgesdk.provider.registry import ProviderSettings, provider_spec
from judgesdk.provider.settings import CacheConfig, ProviderConfig, _capabilities
from judgesdk.provider.urls import remember_secret

__all__ = ["Extras", "ProviderSource", "StackPlan", "assemble", "borrowed", "bottom", "build_adapter", "limited", "witnessed"]

ProviderSource = Provider | Callable[[], Provider]  # an instance, or a factory called when the stack is built


@dataclass(frozen=True)
class StackPlan:
    """The layers a config asks for (``JudgeConfig.stack_plan()``); None leaves a layer out."""

    retry: RetryPolicy | None = field(default_factory=RetryPolicy)
    overload: OverloadConfig | None = field(default_factory=OverloadConfig)  # a disabled guard is left out too
    cache: CacheConfig | None = None  # a disabled cache is left out too
    coalesce: bool = True


@dataclass(frozen=True)
class Extras:
    """What a run adds to the config's stack, each in its fixed place (module docstring)."""

    budget: BudgetMeter | None = None
    meter: UsageMeter | None = None
    defer: Deferral | None = None
    shared_limit: PermitSource | None = None


def build_adapter(config: ProviderConfig) -> Provider:
    """The bare adapter for one provider config, as its kind's registry spec builds it (the adapter's module,
    and its SDK, imported only now: extras stay optional)."""
    spec = provider_spec(config.kind)
    options = spec.parse_options(config.options)
    settings = ProviderSettings(
        kind=config.kind, model=config.model or spec.default_model, base_url=config.base_url, api=config.api,
        timeout_s=config.timeout_s, api_key_env=config.api_key_env, max_answer_bytes=config.max_answer_bytes,
    )  # fmt: skip
    if config.api_key_env:  # the key the adapter will send (settings.api_key()) is never shown (judgesdk.provider.urls)
        remember_secret(os.environ.get(config.api_key_env))
    capabilities = _capabilities(config, spec, settings)
    return spec.create(dataclasses.replace(settings, capabilities=capabilities), options)


def model_identity(config: ProviderConfig) -> str:
    """What names the model ``config`` asks beyond its own text (:attr:`ProviderSpec.model_identity`: a local model
    file's sha256), or "": also for a config that cannot be built (building it says why, once)."""
    try:
        spec = provider_spec(config.kind)
        if spec.model_identity is None:
            return ""
        settings = ProviderSettings(kind=config.kind, model=config.model or spec.default_model, base_url=config.base_url, api=config.api)
        return spec.model_identity(settings, spec.parse_options(config.options))
    except ConfigError:
        return ""


def bottom(config: ProviderConfig, limits: RateLimitConfig | None = None) -> Provider:
    """The adapter under its rate limits, pooled over ``rate_limit.client_count()`` SDK clients, or the bare
    adapter when no limits are set. ``limits`` replaces the config's (the Ray engine hands its shared limiter the
    RPM/TPM buckets and keeps the in-flight bound here). An in-process model (``pooled=False`` in its spec) is
    never pooled: one model, one copy."""
    limits = config.rate_limit if limits is None else limits
    if limits is None:
        return build_adapter(config)
    if not provider_spec(config.kind).pooled:
        limits = limits.model_copy(update={"clients": 1})
    count = limits.client_count()
    adapter = build_adapter(config) if count == 1 else ProviderPool([build_adapter(config) for _ in range(count)])
    return RateLimitedProvider(adapter, limits)


def limited(provider: Provider, limits: RateLimitConfig) -> RateLimitedProvider:
    """The single-process rate limiter over any provider: the Ray engine's account-wide limiter actor runs it over a
    stand-in whose calls are its workers' permits (:mod:`judgesdk.distributed.limiter`). ``provider``: what it
    limits; ``limits``: the rate limit (in flight, RPM/TPM buckets, back-off on 429s)."""
    return RateLimitedProvider(provider, limits)


def assemble(source: ProviderConfig | ProviderSource, plan: StackPlan, extras: Extras | None = None) -> Provider:
    """The whole stack (module docstring) over ``source``: a provider config (its :func:`bottom`), or an adapter
    given as an instance or a factory (a scripted provider, a shared adapter), which gets no rate limit of its own.

    ``plan``: the layers the config asks for (retry, overload guard, cache, coalescing; None leaves one out);
    ``extras``: what the run adds (a budget, a usage meter, a deferral, a shared limit), each in its fixed place.
    Returns the top of the stack.

    A cache that cannot be opened is a :class:`~judgesdk.core.errors.ConfigError` here, before the provider is
    asked anything (see :mod:`judgesdk.provider.layers.cache`)."""
    extras = extras or Extras()
    if isinstance(source, ProviderConfig):
        provider = bottom(source)
    else:
        # an instance is told from a factory by what it has (a Protocol isinstance check would ask for every member)
        provider = cast(Provider, source) if hasattr(source, "generate") else source()
    provider = AnswerCheck(provider)
    if extras.shared_limit is not None:
        provider = SharedLimitProvider(provider, extras.shared_limit)
    if extras.defer is not None:
        provider = DeferringProvider(provider, extras.defer)
    if extras.meter is not None:
        provider = MeteredProvider(provider, extras.meter)
    if extras.budget is not None:
        provider = BudgetedProvider(provider, extras.budget)
    if plan.overload is not None and plan.overload.enabled:
        provider = OverloadGuard(provider, plan.overload)
    if plan.retry is not None:
        provider = RetryingProvider(provider, plan.retry)
    if plan.cache is not None and plan.cache.enabled:
        cache = plan.cache
        store = open_cache(cache.directory, size_limit_mb=cache.size_limit_mb)
        provider = CachedProvider(provider, store, namespace=cache.namespace, ttl_s=cache.ttl_s)
    if plan.coalesce:
        provider = CoalescingProvider(provider)
    return provider


def witnessed(provider: Provider) -> Witness:
    """``provider`` (a whole stack) under the judge's witness, outermost."""
    return Witness(provider)


class _Borrowed(WrapperProvider):
    """A shared provider as one user of it sees it: closing this leaves it open (its owner closes it once)."""

    async def aclose(self) -> None:
        return None


def borrowed(provider: Provider) -> Provider:
    """A view of ``provider`` whose ``aclose`` does nothing, for a provider shared by several stacks (a jury's
    judges naming one config share its adapter and rate limit; the jury closes it)."""
    return _Borrowed(provider)
