"""Floor 11. Past one machine: judging on a Ray cluster (``pip install 'judgesdk[ray]'``).

* :func:`score_dataset` (:mod:`~judgesdk.distributed.engine`): a Ray Data ``map_batches`` over actors that
  each build one :class:`~judgesdk.judging.judge.Judge`, writing ``judgesdk score``'s rows with Ray's file writer
  into a folder, each id exactly once, resumable (:mod:`~judgesdk.distributed.output` says how).
  ``judgesdk score --engine ray --address auto`` runs it from the command line.
* :class:`~judgesdk.distributed.limiter.SharedLimiter`: one rate limiter actor per hosted account, shared
  by every actor, since an API's RPM and TPM are the account's, not each worker's.
* :func:`~judgesdk.distributed.caches.merge_caches` (``judgesdk cache merge DST SRC...``): the response
  cache is SQLite, safe on a node's own disk but not on a shared network filesystem, so each node keeps its
  own and the caches are merged afterwards.

Nothing here imports Ray until a run starts: the names below load their module on first use.

Also here: :mod:`~judgesdk.distributed.batches`, what runs inside a Ray actor (one judge per actor, called on batches of items).

May import: every floor up to :mod:`judgesdk.judging` (:mod:`judgesdk.core`, :mod:`judgesdk.provider`,
:mod:`judgesdk.records`, :mod:`judgesdk.judging`...).
"""

from __future__ import annotations

from typing import Any as _Any

__all__ = ["RayRun", "SharedLimiter", "merge_caches", "score_dataset"]

_WHERE = {
    "RayRun": "judgesdk.distributed.engine",
    "score_dataset": "judgesdk.distributed.engine",
    "SharedLimiter": "judgesdk.distributed.limiter",
    "merge_caches": "judgesdk.distributed.caches",
}


def __getattr__(name: str) -> _Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'judgesdk.distributed' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_WHERE[name]), name)
