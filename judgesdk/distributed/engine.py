"""The Ray Data entry point: :func:`score_dataset` judges a Dataset (or a JSONL or Parquet path) on a cluster.

It is ``judgesdk score`` spread over actors: the same items and ids (:func:`judgesdk.records.read_items` for
a JSONL file), the same question (:func:`judgesdk.records.ask_for`), the same rows, resumed the same way
(ids already final for the question are skipped). Ray is imported here only, when a run starts, so the
SDK works without it.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from judgesdk.core import ConfigError, CriterionSpec, InputError, JudgeItem, JudgeSDKError, as_criteria
from judgesdk.distributed.batches import ITEM_COLUMNS, JudgeBatches, item_row, normalize_batch
from judgesdk.distributed.limiter import start_limiter
from judgesdk.distributed.output import compact, final_ids, latest_rows, read_folder, rows_datasink
from judgesdk.judging import JudgeConfig, ask_for, load_config
from judgesdk.provider import Provider, RateLimitConfig, provider_spec
from judgesdk.records import read_items


class RayRun(BaseModel):
    """What :func:`score_dataset` did: ``judged`` now, ``skipped`` (final from earlier runs), the statuses
    of the input's ids as the folder now holds them, rows ``dropped`` by compaction, the limiters' stats."""

    output: str
    asked: str
    items: int
    judged: int
    skipped: int
    statuses: dict[str, int] = Field(default_factory=dict)
    unscored: int = 0  # ids of this input without a score in the folder
    dropped: int = 0
    limiters: list[dict[str, Any]] = Field(default_factory=list)

    @property
    def complete(self) -> bool:
        return self.unscored == 0


def score_dataset(
    data: Any,
    output: str | Path,
    *,
    config: str | Path | Mapping[str, Any] | JudgeConfig | None = None,
    criterion: CriterionSpec = "overall quality",
    adapters: Sequence[Callable[[], Provider]] | None = None,
    rate_limits: Sequence[RateLimitConfig | None] | None = None,
    batch_size: int = 16,
    concurrency: int | tuple[int, int] | None = None,
    num_cpus: float = 1.0,
) -> RayRun:
    """Judge ``data`` into the folder ``output`` on the Ray cluster of this process (``ray.init`` first;
    without it Ray starts a local one), and return what happened.

    ``data``: a ``ray.data.Dataset`` (an ``output`` column, optional ``source``/``context``/``reference``,
    and ``id`` or ``doc_id``/``system_id``), a JSONL path (read as ``judgesdk score`` reads it), a Parquet
    file or folder, or ``(JudgeItem, extra)`` pairs. ``config``/``criterion``: as for ``judgesdk score``.
    ``adapters``: picklable provider factories replacing the configured chain (tests, custom backends).
    ``rate_limits``: one per provider of the chain (default: each configured provider's ``rate_limit``);
    each becomes one :class:`~judgesdk.distributed.limiter.SharedLimiter` actor for the whole job.
    ``batch_size`` items per call of an actor (items of one source kept together reuse its KV prefix
    locally); ``concurrency`` actors (default: one per ``num_cpus`` CPUs of the cluster).
    """
    ray = require_ray()
    judge_config = load_config(config)
    criteria = as_criteria(criterion)
    ask = ask_for(judge_config, criteria)
    folder = str(output)
    if batch_size < 1:
        raise InputError(f"batch_size must be at least 1, got {batch_size}")
    earlier = read_folder(folder)
    done = final_ids(earlier, ask)
    items, ids = _items(ray, data, done)
    limits = list(rate_limits) if rate_limits is not None else [p.rate_limit for p in judge_config.providers] if adapters is None else []
    if set(ids) <= done:  # nothing left to judge: no actor is started (a local model is not loaded)
        return _report(folder, ask, ids, done, 0, [])
    limiters = _start_limiters(limits)
    try:
        run = time.strftime("%Y%m%dT%H%M%S", time.gmtime()) + f"-{uuid.uuid4().hex[:6]}"
        judged = items.map_batches(
            JudgeBatches,
            fn_constructor_kwargs={
                "config": threads_per_actor(_without_buckets(judge_config) if any(limiters) else judge_config, num_cpus),
                "criteria": list(criteria), "ask": ask.key, "adapters": adapters, "limiters": limiters or None,
            },
            batch_size=batch_size, batch_format="numpy", compute=_pool(ray, concurrency, num_cpus), num_cpus=num_cpus,
        )  # fmt: skip
        _execute(judged, lambda ds: ds.write_datasink(rows_datasink(folder, run), ray_remote_args={"num_cpus": 0}))
        stats = [ray.get(limiter.stats.remote()) if limiter is not None else {} for limiter in limiters]
    finally:
        for limiter in limiters:
            if limiter is not None:
                ray.kill(limiter)
    return _report(folder, ask, ids, done, compact(folder, ask), stats)


def _report(folder: str, ask: Any, ids: list[str], done: set[str], dropped: int, stats: list[dict[str, Any]]) -> RayRun:
    rows = latest_rows(read_folder(folder), ask)
    mine = [rows.get(the_id) for the_id in ids]
    skipped = len(done & set(ids))
    return RayRun(
        output=folder, asked=ask.key, items=len(ids), judged=len(ids) - skipped, skipped=skipped,
        statuses=dict(Counter(str(row.get("status")) for row in mine if row is not None)),
        unscored=sum(row is None or row.get("score") is None for row in mine), dropped=dropped, limiters=stats,
    )  # fmt: skip


def require_ray() -> Any:
    """The ``ray`` module, imported only when the Ray engine is used (Ray is an optional extra). Returns the
    module; raises :class:`ConfigError` saying how to install it when it is missing."""
    try:
        import ray
    except ImportError:
        raise ConfigError("the Ray engine needs Ray: pip install 'judgesdk[ray]'") from None
    return ray


def _items(ray: Any, data: Any, done: set[str]) -> tuple[Any, list[str]]:
    """``data`` as a Dataset of the item rows (:data:`ITEM_COLUMNS`) whose id is not in ``done``, and every
    id of ``data`` (unique)."""
    if isinstance(data, (str, Path)):
        path = Path(data)
        if path.suffix == ".parquet" or path.is_dir():
            data = ray.data.read_parquet(str(path))
        else:
            data = read_items(path)
    if isinstance(data, Sequence):
        rows = [item_row(item, extra) for item, extra in data if isinstance(item, JudgeItem)]
        if len(rows) != len(data) or not rows:
            raise InputError("score_dataset takes a Dataset, a JSONL or Parquet path, or (JudgeItem, extra) pairs")
        return ray.data.from_items([row for row in rows if row["id"] not in done]), [row["id"] for row in rows]
    if not isinstance(data, ray.data.Dataset):
        raise InputError(f"score_dataset takes a Dataset, a JSONL or Parquet path, or (JudgeItem, extra) pairs, got {type(data).__name__}")
    from ray.data.expressions import col

    if "output" not in data.schema().names:
        raise InputError(f"the dataset has no 'output' column (it has {', '.join(data.schema().names)})")
    items = _execute(data.map_batches(normalize_batch, batch_format="numpy"), lambda ds: ds.materialize())
    ids = [str(row["id"]) for row in items.select_columns(["id"]).take_all()]
    repeated = [the_id for the_id, count in Counter(ids).items() if count > 1]
    if repeated:
        raise InputError(f"{len(repeated)} id(s) occur more than once in the dataset, e.g. {repeated[0]!r}: give each row a unique 'id'")
    if done:
        items = items.filter(expr=col("id").not_in(sorted(done)))
    return items.select_columns(list(ITEM_COLUMNS)), ids


def _start_limiters(limits: Sequence[RateLimitConfig | None]) -> list[Any]:
    """One :class:`~judgesdk.distributed.limiter.SharedLimiter` actor per provider with a ``rate_limit``: its
    ``max_concurrency``, RPM and TPM are the account's, enforced over all actors together."""
    return [start_limiter(limit) if limit is not None else None for limit in limits]


def _without_buckets(config: JudgeConfig) -> JudgeConfig:
    """The config each actor builds from: its providers' RPM/TPM left to the shared limiters, which also hold the
    account-wide in-flight cap (an actor's own ``max_concurrency`` stays, never the bound that binds, and sizes its
    pool of clients). Rate limits are not part of the question asked, so rows are unchanged."""
    providers = [
        p.model_copy(update={"rate_limit": p.rate_limit.model_copy(update={"requests_per_minute": None, "tokens_per_minute": None})})
        if p.rate_limit is not None else p
        for p in config.providers
    ]  # fmt: skip
    return config.model_copy(update={"providers": providers})


def threads_per_actor(config: JudgeConfig, num_cpus: float) -> JudgeConfig:
    """``config`` with each local provider that sets no ``n_threads`` given the actor's share, ``num_cpus``
    (at least 1). Left alone, llama.cpp takes every CPU of the node in every actor, and with one actor per
    ``num_cpus`` CPUs a 16-core node ran 16 actors × 16 threads. A local provider is one whose kind declares an
    ``n_threads`` option answer-neutral (the local adapter's ``ProviderSpec.answer_neutral``: one thread against both
    cores moved none of 24 scores), so rows and cache keys are unchanged; an explicit ``n_threads`` is kept."""
    threads = max(1, int(num_cpus))
    providers = [
        p.model_copy(update={"options": {**p.options, "n_threads": threads}})
        if not p.options.get("n_threads") and "n_threads" in provider_spec(p.kind).answer_neutral
        else p
        for p in config.providers
    ]  # fmt: skip
    return config.model_copy(update={"providers": providers})


def _pool(ray: Any, concurrency: int | tuple[int, int] | None, num_cpus: float) -> Any:
    """The actor pool: ``concurrency`` actors, a (min, max) autoscaling range, or one per ``num_cpus`` CPUs."""
    if isinstance(concurrency, tuple):
        return ray.data.ActorPoolStrategy(min_size=concurrency[0], max_size=concurrency[1])
    if concurrency is None:
        cpus = float(ray.cluster_resources().get("CPU", 1))
        concurrency = max(1, int(cpus // num_cpus)) if num_cpus > 0 else max(1, int(cpus))
    if concurrency < 1:
        raise InputError(f"concurrency must be at least 1 actor, got {concurrency}")
    return ray.data.ActorPoolStrategy(size=concurrency)


def _execute(dataset: Any, action: Callable[[Any], Any]) -> Any:
    """``action(dataset)`` with Ray Data raising a map's own exception (not a ``UserCodeException``), and a
    typed judgesdk error raised in an actor (bad input, config) raised as itself: the CLI's exit 3, one line."""
    dataset.context.raise_original_map_exception = True  # this dataset's own context: the caller's is untouched
    try:
        return action(dataset)
    except Exception as exc:
        typed = _typed(exc)
        if typed is None:
            raise
        raise typed from None


def _typed(exc: BaseException) -> JudgeSDKError | None:
    """The judgesdk error in ``exc``'s chain (Ray's ``RayTaskError`` carries the actor's in ``cause``)."""
    seen: BaseException | None = exc
    while seen is not None:
        cause = getattr(seen, "cause", None)
        if isinstance(seen, JudgeSDKError) and not isinstance(cause, BaseException):
            return seen
        seen = cause if isinstance(cause, BaseException) else (seen.__cause__ or seen.__context__)
    return None
