"""Merge response caches: one SQLite cache per node during a run, one cache after it.

The cache (:mod:`judgesdk.provider.layers.cache`) is a diskcache SQLite database: many processes of one node may share it,
but SQLite's locks are unsafe on a network filesystem, so a cluster keeps one cache per node (each node's
default folder, or ``JUDGESDK_CACHE_DIR``). Keys hash the provider and the full request, so the same key in
two caches is the same question: the destination's entry is kept and the source's skipped. Expiry times and
namespaces (tags) travel with each entry; entries already expired are not copied.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from pathlib import Path

import diskcache
from pydantic import BaseModel

from judgesdk.core import InputError
from judgesdk.provider import CACHE_IO_ERRORS, damaged, open_cache


class MergeReport(BaseModel):
    """Entries ``added`` to the destination, ``already_there`` (same key kept as it was), ``expired``."""

    destination: str
    sources: list[str]
    added: int = 0
    already_there: int = 0
    expired: int = 0


def merge_caches(destination: str | Path, sources: Sequence[str | Path]) -> MergeReport:
    """Copy every live entry of each cache folder in ``sources`` into the cache folder ``destination``."""
    destination = Path(destination).expanduser()
    if not sources:
        raise InputError("cache merge needs a destination and at least one source: judgesdk cache merge DST SRC...")
    folders = [Path(s).expanduser() for s in sources]
    for folder in folders:
        if not (folder / diskcache.core.DBNAME).is_file():
            raise InputError(f"cache merge: {folder} is not a judgesdk cache folder (no {diskcache.core.DBNAME} in it)")
        if folder.resolve() == destination.resolve():
            raise InputError(f"cache merge: {folder} is the destination itself")
    report = MergeReport(destination=str(destination), sources=[str(f) for f in folders])
    with open_cache(destination) as target:
        for folder in folders:
            try:
                _copy_entries(folder, target, report)
            except CACHE_IO_ERRORS as exc:
                if damaged(exc):
                    raise InputError(
                        f"cache merge: the cache in {folder} is damaged ({exc}): move it aside (or delete it) and merge the others; "
                        f"entries merged before it stay in {destination}"
                    ) from None
                raise InputError(f"cache merge: copying {folder} into {destination} failed ({exc}): free space and run it again") from None
    return report


def _copy_entries(folder: Path, target: diskcache.Cache, report: MergeReport) -> None:
    """Every live entry of the cache in ``folder`` into ``target``, counted in ``report``."""
    with diskcache.Cache(str(folder)) as source:
        for key in source.iterkeys():
            value, expire_time, tag = source.get(key, expire_time=True, tag=True)
            if value is None:  # expired since it was listed
                report.expired += 1
            elif key in target:
                report.already_there += 1
            else:
                left = None if expire_time is None else expire_time - time.time()
                if left is not None and left <= 0:
                    report.expired += 1
                    continue
                target.set(key, value, expire=left, tag=tag)
                report.added += 1
