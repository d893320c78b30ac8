"""A disk cache in front of any provider.

The key hashes everything that can change an answer: the adapter kind, the model, the endpoint's host,
and the full request (prompt, every sampling parameter, the sample index of sampled calls, template id,
version and content hash). Credentials are never part of a request, so they can never reach the key or
the stored value. Logprobs are stored with the response, so a cached judgement is the same judgement.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from urllib.parse import urlparse

import diskcache

from judgesdk.provider import GenerateRequest, GenerateResponse, Provider, WrapperProvider


def endpoint_host(endpoint: str) -> str:
    """The host[:port] of a URL endpoint, or the endpoint itself (a model file, 'in-process')."""
    parsed = urlparse(endpoint)
    return parsed.netloc or endpoint


def cache_key(provider: Provider, request: GenerateRequest, namespace: str = "default") -> str:
    parts = {
        "namespace": namespace,
        "kind": provider.kind,
        "model": provider.model,
        "endpoint": endpoint_host(provider.endpoint),
        "request": request.fingerprint(),
    }
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def open_cache(directory: str | Path) -> diskcache.Cache:
    cache = diskcache.Cache(str(directory))
    cache.stats(enable=True)
    return cache


class CachedProvider(WrapperProvider):
    """Serves identical requests from disk. Wraps a provider and is itself a provider.

    Identical requests in flight at the same time are merged above it, by
    :class:`judgesdk.coalesce.CoalescingProvider` (``judgesdk.config.stack`` puts it there).
    """

    def __init__(
        self, inner: Provider, cache: diskcache.Cache, *, namespace: str = "default", ttl_s: float | None = None
    ) -> None:
        super().__init__(inner)
        self.cache = cache
        self.namespace = namespace
        self.ttl_s = ttl_s

    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        key = cache_key(self.inner, request, self.namespace)
        stored = self.cache.get(key)
        if stored is not None:
            return GenerateResponse.model_validate_json(stored).model_copy(update={"cached": True})
        response = await self.inner.generate(request)
        self.cache.set(key, response.model_dump_json(), expire=self.ttl_s, tag=self.namespace)
        return response


def cache_stats(directory: str | Path) -> dict[str, int]:
    """Entries, bytes on disk, and hits/misses recorded since statistics were enabled."""
    with diskcache.Cache(str(directory)) as cache:
        hits, misses = cache.stats()
        return {"entries": len(cache), "size_bytes": cache.volume(), "hits": hits, "misses": misses}


def clear_cache(directory: str | Path, namespace: str | None = None) -> int:
    """Remove every entry, or only one namespace's; returns how many were removed."""
    with diskcache.Cache(str(directory)) as cache:
        return cache.evict(namespace) if namespace else cache.clear()
