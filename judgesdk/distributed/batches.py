"""What runs inside a Ray actor: one :class:`~judgesdk.judging.judge.Judge` per actor, called on batches of items.

Building the judge once per actor, not per batch, is what keeps a local model loaded and its KV prefix cache
warm across batches, and a hosted client's connections open. The rows it returns are the rows ``judgesdk
score`` writes (:func:`judgesdk.records.row_for`, encoded by :func:`judgesdk.records.encode_row`), carried
through Ray as JSON text next to their id, so that no Arrow schema has to fit every method's ``details``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from judgesdk.core import ConfigError, Criterion, JudgeItem, JudgeSDKError
from judgesdk.distributed.limiter import RayPermits
from judgesdk.judging import Judge, JudgeConfig, Task, ask_for, detect_chain, load_config, run
from judgesdk.provider import Extras, Provider, bottom
from judgesdk.records import Ask, encode_row, item_ids

ITEM_COLUMNS = ("id", "output", "source", "context", "reference", "extra")  # the item rows the engine feeds in
TEXTS = ("output", "source", "context", "reference")


def item_row(item: JudgeItem, extra: Mapping[str, Any]) -> dict[str, Any]:
    """One input item as a Ray row; ``extra`` (the input line's other fields) rides along as JSON text."""
    return {**{name: getattr(item, name) for name in TEXTS}, "id": item.id, "extra": json.dumps(dict(extra), ensure_ascii=False)}


def normalize_batch(batch: Mapping[str, Any]) -> dict[str, list[Any]]:
    """A batch of a user's Dataset as item rows: ids by :func:`judgesdk.records.item_ids` (an ``id`` column,
    else ``doc_id:system_id``, else a hash of the texts), the texts, and every other column as ``extra``.
    Identical texts in different batches get the same id: the engine checks ids are unique afterwards."""
    columns = list(batch)
    count = len(batch[columns[0]]) if columns else 0
    lines = [(n + 1, {c: _plain(batch[c][n]) for c in columns}) for n in range(count)]
    ids = item_ids(lines, "dataset batch")
    out: dict[str, list[Any]] = {name: [] for name in ITEM_COLUMNS}
    for (_, raw), the_id in zip(lines, ids):
        for name in TEXTS:
            out[name].append(_text(raw.get(name)))
        out["id"].append(the_id)
        out["extra"].append(json.dumps({k: v for k, v in raw.items() if k not in (*TEXTS, "id", "scores")}, ensure_ascii=False, default=str))
    return out


def _text(value: Any) -> str | None:
    """A text cell: Arrow hands a column with no text at all over as floats (NaN), so anything else is None."""
    return value if isinstance(value, str) else None


def _plain(value: Any) -> Any:
    """A numpy scalar or array from a batch as the Python value it holds."""
    return value.tolist() if hasattr(value, "tolist") else value


class JudgeBatches:
    """The callable class of ``map_batches``: Ray builds it once per actor, then calls it on each batch.

    ``config`` is the config as the driver resolved it; each actor loads it again (its own ``JUDGESDK_*``
    variables apply, e.g. a per-node cache directory), and refuses to judge when that changed the question
    (:class:`~judgesdk.records.Ask`): rows of another question would not be the rows asked for.
    ``adapters`` (picklable factories) replace the configured chain, as in :meth:`Judge.from_config`;
    ``limiters`` hold one :class:`~judgesdk.distributed.limiter.SharedLimiter` actor (or None) per provider.
    """

    def __init__(
        self,
        config: JudgeConfig,
        criteria: Sequence[Criterion],
        ask: str,
        adapters: Sequence[Callable[[], Provider]] | None = None,
        limiters: Sequence[Any] | None = None,
    ) -> None:
        self.broken: JudgeSDKError | None = None
        try:
            self._build(config, criteria, ask, adapters, limiters)
        except JudgeSDKError as exc:  # raised from __call__, where Ray hands the driver the error itself
            self.broken = exc

    def _build(
        self,
        config: JudgeConfig,
        criteria: Sequence[Criterion],
        ask: str,
        adapters: Sequence[Callable[[], Provider]] | None,
        limiters: Sequence[Any] | None,
    ) -> None:
        loaded = load_config(config)
        self.criteria = list(criteria) if len(criteria) > 1 else criteria[0]
        self.ask: Ask = ask_for(loaded, criteria)
        if self.ask.key != ask:
            raise ConfigError(
                f"this worker's configuration asks {self.ask.key}, the driver's {ask}: a JUDGESDK_* variable set "
                "on this node changes answers (method, model...); set the same on every node"
            )
        chain: list[Any] = list(adapters) if adapters else [_builder(p) for p in loaded.providers or detect_chain(os.environ)]
        shared = [*(limiters or ()), *[None] * (len(chain) - len(limiters or ()))]
        extras = [Extras(shared_limit=None if limiter is None else RayPermits(limiter)) for limiter in shared]
        self.judge = Judge.from_config(loaded, adapters=chain, extras=extras)
        self.judge.check_providers()

    def __call__(self, batch: Mapping[str, Any]) -> dict[str, list[str]]:
        if self.broken is not None:  # a typed error in the constructor becomes the job's error (the CLI's exit 3)
            raise self.broken
        count = len(batch["id"])
        items = [JudgeItem(**{name: _text(_plain(batch[name][n])) for name in (*TEXTS, "id")}) for n in range(count)]
        extras = [json.loads(_plain(batch["extra"][n])) for n in range(count)]
        outcome = run(self.judge, [Task(self.criteria, list(zip(items, extras)), self.ask)], None)  # the one runner
        rows = outcome.rows  # one per item (a failure is its item's error row), in finishing order
        return {"id": [str(row["id"]) for row in rows], "row": [encode_row(row).decode("utf-8").rstrip("\n") for row in rows]}


def _builder(provider_config: Any) -> Callable[[], Provider]:
    """The configured adapter; its own RPM/TPM buckets are dropped when a shared limiter takes them over
    (:func:`judgesdk.distributed.engine.score_dataset` passes the stripped config)."""
    return lambda: bottom(provider_config)
