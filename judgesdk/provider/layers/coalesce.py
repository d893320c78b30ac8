"""Identical requests in flight at the same time become one call.

Judging repeats itself: two criteria that share a template variant, a pairwise comparison asked by two
strategies, or a retried item racing its first attempt can send byte-identical requests concurrently.
:class:`CoalescingProvider` lets the first one through and hands its response (or its error) to every
identical request that arrives before it finishes. It works with or without the disk cache: with the
cache it sits above it (a hit never waits), without it it still saves the duplicate calls.

"Identical" is the cache key (:func:`judgesdk.provider.layers.cache.cache_key`): the provider's kind, model and endpoint and
the request's full fingerprint, sample index included, so two different samples of a sampled estimate
are never merged.
"""

from __future__ import annotations

import asyncio

from judgesdk.provider.layers.cache import cache_key
from judgesdk.provider.protocol import GenerateRequest, GenerateResponse, Provider, WrapperProvider


class CoalescingProvider(WrapperProvider):
    """Shares one in-flight call among identical concurrent requests (see the module docstring)."""

    def __init__(self, inner: Provider) -> None:
        super().__init__(inner)
        self._in_flight: dict[str, asyncio.Future[GenerateResponse]] = {}
        self.coalesced = 0  # requests answered by another request's call

    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        key = cache_key(self.inner, request)
        pending = self._in_flight.get(key)
        if pending is not None:
            self.coalesced += 1
            return await asyncio.shield(pending)
        future: asyncio.Future[GenerateResponse] = asyncio.get_running_loop().create_future()
        self._in_flight[key] = future
        try:
            response = await self.inner.generate(request)
        except BaseException as exc:
            future.set_exception(exc)
            future.exception()  # mark retrieved: the waiters re-raise it, nobody else must
            raise
        else:
            future.set_result(response)
            return response
        finally:
            del self._in_flight[key]
