"""A disk cache in front of any provider.

The key hashes everything that can change an answer: the adapter kind, the model, the endpoint's whole URL
(host, port, path and query: two servers behind one proxy at ``/a/v1`` and ``/b/v1`` are two caches; never
its credentials, which the adapters remove from ``endpoint``), the provider's ``identity`` where it declares
one (a local model file's content hash, so a file replaced at the same path is a different model), the
adapter's answer-changing options set away from their defaults (``answer_settings``: a local model's
``parallel_suffixes``, an OpenAI server's ``api``; each kind's ``ProviderSpec.answer_neutral`` lists the
options that cannot change an answer), and the full request (prompt, every sampling parameter,
the sample index of sampled calls, template id, version and content hash). Credentials are never part of a
request, so they can never reach the key or the stored value. Logprobs are stored with the response, so a
cached judgement is the same judgement.

A cache that cannot work is handled by when it shows:

* **Opening** (:func:`open_cache`, when a provider is built, before it is asked anything): a cache path
  that is a file, a folder that cannot be written or created, a database that will not open, is a
  :class:`~judgesdk.core.errors.ConfigError` naming the path and the fix. Nothing has been paid for yet, and
  silently running uncached would cost every answer again without the user knowing why.
* **During a run** (disk full, the folder made read-only, a damaged database, a lock held past the
  timeout): the answer just received is returned all the same, one warning is logged, and the provider
  goes on without the cache. An answer already paid for must never be lost to a failed write, and every
  later read or write would fail the same way, costing time and a warning each.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
from pathlib import Path
from urllib.parse import urlparse

import diskcache
from pydantic import ValidationError

from judgesdk.core import ConfigError
from judgesdk.provider.layers.answers import answer_problem
from judgesdk.provider.protocol import GenerateRequest, GenerateResponse, Provider, WrapperProvider, identity_of, learn_identity, settings_of

log = logging.getLogger("judgesdk.cache")

CACHE_IO_ERRORS = (sqlite3.Error, OSError, diskcache.Timeout)  # what diskcache raises when storage fails
_FIX = "point cache.directory (or JUDGESDK_CACHE_DIR) at a writable folder, or turn the cache off (--no-cache, JUDGESDK_NO_CACHE=1)"


def endpoint_key(endpoint: str) -> str:
    """What the cache key names an endpoint by: a URL's host[:port] with its path (a trailing ``/`` dropped) and
    query, without scheme or credentials; anything else (a model file, 'in-process') as it is. A URL without a path
    keys as its host did before paths were keyed, so those caches stay valid."""
    parsed = urlparse(endpoint)
    if not parsed.netloc:
        return endpoint
    host = parsed.netloc.rpartition("@")[2]  # credentials never reach a key (the adapters have removed them already)
    return host + parsed.path.rstrip("/") + (f"?{parsed.query}" if parsed.query else "")


def cache_key(provider: Provider, request: GenerateRequest, namespace: str = "default") -> str:
    """The key of ``request`` to ``provider``. A provider without an ``identity`` keys as it did before
    identities existed, so the caches of hosted APIs stay valid. ``namespace``: the cache's namespace (config
    ``cache.namespace``): the same request keys apart under another one. Returns a SHA-256 hex digest."""
    parts = {
        "namespace": namespace,
        "kind": provider.kind,
        "model": provider.model,
        "endpoint": endpoint_key(provider.endpoint),
        "request": request.fingerprint(),
    }
    identity = identity_of(provider)
    if identity:
        parts["identity"] = identity
    settings = settings_of(provider)
    if settings:
        parts["settings"] = settings
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def check_directory(directory: str | Path) -> Path:
    """``directory`` if a cache can live there (an existing writable folder, or one that can be created);
    else a :class:`ConfigError` that names the path and the fix. Root passes the permission checks, as
    it would pass the writes they predict."""
    path = Path(directory).expanduser()
    try:
        if path.exists() and not path.is_dir():
            raise ConfigError(f"cache directory {path} is a file, not a folder: {_FIX}")
        if path.is_dir():
            if not os.access(path, os.W_OK | os.X_OK):
                raise ConfigError(f"cache directory {path} is not writable: {_FIX}")
            database = path / diskcache.core.DBNAME
            if database.exists() and not os.access(database, os.R_OK | os.W_OK):
                raise ConfigError(f"cache database {database} is not writable: {_FIX}")
            return path
        parent = next(p for p in path.absolute().parents if p.exists())
        if not parent.is_dir():
            raise ConfigError(f"cache directory {path} cannot be created: {parent} is a file: {_FIX}")
        if not os.access(parent, os.W_OK | os.X_OK):
            raise ConfigError(f"cache directory {path} cannot be created: {parent} is not writable: {_FIX}")
    except OSError as exc:  # e.g. a parent that cannot be searched
        raise ConfigError(f"cannot use cache directory {path} ({exc.strerror or exc}): {_FIX}") from None
    return path


def open_cache(directory: str | Path, *, size_limit_mb: float | None = None) -> diskcache.Cache:
    """The cache in ``directory``, created if needed, with hit/miss statistics on. ``size_limit_mb``: the
    most it holds before the least recently stored entries are evicted (None: as last set there, else
    diskcache's 1 GiB). Raises :class:`ConfigError` when the cache cannot be used (see the module docstring)."""
    path = check_directory(directory)
    settings = {} if size_limit_mb is None else {"size_limit": int(size_limit_mb * 2**20)}
    cache = None
    try:
        cache = diskcache.Cache(str(path), **settings)
        cache.stats(enable=True)
    except CACHE_IO_ERRORS as exc:
        if cache is not None:
            cache.close()
        if damaged(exc):
            raise ConfigError(
                f"the response cache in {path} is damaged ({_reason(exc)}): delete or move the folder {path} (a new cache starts "
                "empty; no result depends on it), or turn the cache off (--no-cache)"
            ) from None
        raise ConfigError(f"cannot open the response cache in {path} ({_reason(exc)}): free space, or {_FIX}") from None
    return cache


def damaged(exc: BaseException) -> bool:
    """Whether a cache error says the database file itself is unreadable (not a database, a malformed image), rather
    than that storage failed (a full disk, a lock: ``sqlite3.OperationalError``, ``OSError``). ``exc``: the error
    the cache raised."""
    return isinstance(exc, sqlite3.DatabaseError) and not isinstance(exc, sqlite3.OperationalError)


class CachedProvider(WrapperProvider):
    """Serves identical requests from disk. Wraps a provider and is itself a provider.

    Identical requests in flight at the same time are merged above it, by
    :class:`judgesdk.provider.layers.coalesce.CoalescingProvider` (``judgesdk.provider.stack.assemble`` puts it there). When the cache
    fails during a run, ``failure`` says how, and requests go straight to the inner provider from then on.
    ``hits`` counts the requests it answered from disk (a run's report sets them beside its estimate).
    """

    def __init__(
        self, inner: Provider, cache: diskcache.Cache, *, namespace: str = "default", ttl_s: float | None = None
    ) -> None:
        super().__init__(inner)
        self.cache = cache
        self.namespace = namespace
        self.ttl_s = ttl_s
        self.failure: str | None = None
        self.hits = 0

    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        if self.failure is not None or not await learn_identity(self.inner):  # which model answers is unknown just now
            return await self.inner.generate(request)
        key = cache_key(self.inner, request, self.namespace)
        stored = self._read(key)
        if stored is not None:
            self.hits += 1
            return stored
        response = await self.inner.generate(request)
        if answer_problem(request, response) is None:  # a malformed answer is never stored (the answer check raises below)
            self._write(key, response)
        return response

    def _read(self, key: str) -> GenerateResponse | None:
        try:
            stored = self.cache.get(key)
        except CACHE_IO_ERRORS as exc:
            self._give_up("reading", exc)
            return None
        if stored is None:
            return None
        try:
            return GenerateResponse.model_validate_json(stored).model_copy(update={"cached": True})
        except ValidationError:  # a damaged or foreign entry: asked again, and the fresh answer replaces it
            return None

    def _write(self, key: str, response: GenerateResponse) -> None:
        if self.failure is not None:  # a read failed while this request was being answered
            return
        try:
            self.cache.set(key, response.model_dump_json(), expire=self.ttl_s, tag=self.namespace)
        except CACHE_IO_ERRORS as exc:
            self._give_up("writing to", exc)

    def _give_up(self, doing: str, exc: BaseException) -> None:
        """Stop using the cache, with the run's one warning about it."""
        self.failure = cache_failure(doing, self.cache, exc)
        log.warning(
            "judgesdk: %s; going on without the cache for the rest of this run (answers received are kept): "
            "free space or fix the folder's permissions, or turn the cache off (--no-cache)",
            self.failure,
        )


def cache_failure(doing: str, cache: diskcache.Cache, exc: BaseException) -> str:
    """What failed, for a message: ``"writing to the response cache in DIR failed (database or disk is full)"``."""
    return f"{doing} the response cache in {cache.directory} failed ({_reason(exc)})"


def _reason(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror
    return str(exc) or type(exc).__name__


def cache_stats(directory: str | Path) -> dict[str, int]:
    """Entries, bytes on disk, and hits/misses recorded since statistics were enabled, of the cache in
    ``directory`` (opened by :func:`open_cache`, so a :class:`ConfigError` when it cannot be used)."""
    with open_cache(directory) as cache:
        hits, misses = cache.stats()
        return {"entries": len(cache), "size_bytes": cache.volume(), "hits": hits, "misses": misses}


def clear_cache(directory: str | Path, namespace: str | None = None) -> int:
    """Remove every entry of the cache in ``directory``, or only those of ``namespace``; returns how many were
    removed."""
    with open_cache(directory) as cache:
        return cache.evict(namespace) if namespace else cache.clear()
