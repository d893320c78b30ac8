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

from typing import TYPE_CHECKING

from judgesdk.core import lazy as _lazy

if TYPE_CHECKING:
    from judgesdk.distributed.caches import merge_caches
    from judgesdk.distributed.engine import RayRun, require_ray, score_dataset
    from judgesdk.distributed.limiter import SharedLimiter
    from judgesdk.distributed.output import read_folder

__all__ = [
    "merge_caches",
    "RayRun",
    "read_folder",
    "require_ray",
    "score_dataset",
    "SharedLimiter",
]

__getattr__, __dir__ = _lazy(
    __name__,
    {
        "merge_caches": "judgesdk.distributed.caches",
        **dict.fromkeys(("RayRun", "require_ray", "score_dataset",), "judgesdk.distributed.engine"),
        "SharedLimiter": "judgesdk.distributed.limiter",
        "read_folder": "judgesdk.distributed.output",
    },
    globals(),
)
