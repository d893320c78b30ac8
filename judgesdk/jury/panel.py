"""The jury itself: one :class:`~judgesdk.judging.judge.Judge` per judge of ``[jury]``, each item judged by all of them,
and the question (:class:`~judgesdk.records.Ask`) a jury answers (see :mod:`judgesdk.jury`)."""

from __future__ import annotations

import asyncio
import hashlib
import json
import math
import os
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import numpy as np

from judgesdk.core import ConfigError, Criterion, CriterionSpec, InputError, JudgeItem, JudgeResult, JudgeSDKError, as_criteria
from judgesdk.judging import Judge, JudgeConfig, JuryConfig, ProviderSource, ask_for, detect_chain, jury_member_config, load_config
from judgesdk.jury.consensus import (
    METHOD,
    MIN_LABELS,
    Agreement,
    Weights,
    agreement,
    finite_or_nan,
    fit_weights,
    judge_scores,
    majority_scale,
    verdict,
)
from judgesdk.provider import Extras, Provider, ProviderConfig, borrowed, bottom, unwrap
from judgesdk.records import (
    Ask,
    read_labels,  # the gate's labels file: one {"id", "label"} per line
)

T = TypeVar("T")


# -- the question a jury answers --------------------------------------------------------------------------------


def jury_ask(config: JudgeConfig, criteria: Criterion | Sequence[Criterion]) -> Ask:
    """The :class:`~judgesdk.records.Ask` of a jury: its judges' own questions (provider, method, template,
    options...), the aggregate, ``min_judges``, the threshold and the labels the weights are fitted on, so that
    changing any of them judges the items again instead of skipping them.

    ``config``: the judge config, which must have a ``[jury]`` section
    (:class:`~judgesdk.core.errors.ConfigError` otherwise); ``criteria``: the criterion or criteria judged. Returns
    an Ask of method ``"jury"`` on the criteria's names joined by ``+``, whose config is a 10-digit hash of the
    above."""
    jury = _jury_of(config)
    chosen = (criteria,) if isinstance(criteria, Criterion) else tuple(criteria)
    labels = jury.weights_from
    depends_on = {
        "judges": {judge.name: ask_for(jury_member_config(config, judge), chosen).key for judge in jury.judges},
        "aggregate": jury.aggregate,
        "min_judges": jury.needed,
        "disagreement": jury.disagreement,
        "labels": hashlib.sha256(labels.read_bytes()).hexdigest() if labels is not None else None,
    }
    digest = hashlib.sha256(json.dumps(depends_on, sort_keys=True).encode()).hexdigest()[:10]
    return Ask(criterion="+".join(c.name for c in chosen), method=METHOD, config=digest)


def _jury_of(config: JudgeConfig) -> JuryConfig:
    if config.jury is None:
        raise ConfigError("this config has no [jury] section: add one with two or more [[jury.judges]]")
    return config.jury


# -- the jury ---------------------------------------------------------------------------------------------------


class Jury:
    """Judges every item with each of its judges and returns one :class:`JudgeResult` per item (the rules:
    :mod:`judgesdk.jury`). Build it with :meth:`from_config`; the sync methods mirror :class:`~judgesdk.judging.judge.Judge`'s."""

    def __init__(self, config: JudgeConfig, members: Mapping[str, Judge], pool: _AdapterPool, slice_items: Sequence[JudgeItem] = ()) -> None:
        self.config = config
        self.settings = _jury_of(config)
        self.members = dict(members)
        self.weights: Weights | None = None  # fitted for the criteria in _fitted_for
        self._fitted_for: tuple[Criterion, ...] = ()
        self.results: list[JudgeResult] = []  # this jury's results so far, for agreement()
        self._pool = pool
        self._slice_items = list(slice_items)
        self._memo: dict[str, dict[str, JudgeResult]] = {}  # judges' results on the labelled items, used once
        self._host = next(iter(self.members.values()))

    @classmethod
    def from_config(
        cls,
        source: str | Path | Mapping[str, Any] | JudgeConfig | None = None,
        *,
        adapters: Mapping[str, ProviderSource | Sequence[ProviderSource]] | None = None,
        extras: Extras | None = None,
        slice_items: Sequence[JudgeItem] = (),
    ) -> Jury:
        """A jury from a config with a ``[jury]`` section; one :meth:`Judge.from_config` per judge.

        ``adapters`` replaces the provider chain of the judges it names (e.g. scripted providers in tests);
        ``extras`` are what the run adds to every judge's stack (:class:`judgesdk.provider.stack.Extras`, e.g. a budget); ``slice_items`` are the items the ``weights_from`` labels may name
        (default: the items of the first :meth:`ascore_many` call).
        """
        config = load_config(source)
        jury = _jury_of(config)
        forced = os.environ.get("JUDGESDK_METHOD")
        clash = [j.name for j in jury.judges if forced and j.method is not None and j.method != forced]
        if clash:
            raise ConfigError(
                f"JUDGESDK_METHOD={forced} is set and would replace the method of jury judge(s) {', '.join(clash)}: "
                "unset it to run this jury (each judge names its own method)"
            )
        pool = _AdapterPool()
        members: dict[str, Judge] = {}
        for judge in jury.judges:
            member = jury_member_config(config, judge)
            given = (adapters or {}).get(judge.name)
            if given is None:
                chain: list[ProviderSource] = [pool.source(pc) for pc in member.providers or detect_chain(os.environ)]
            else:
                chain = list(given) if isinstance(given, Sequence) else [given]
            members[judge.name] = Judge.from_config(member, adapters=chain, extras=extras)
        return cls(config, members, pool, slice_items)

    def ask(self, criterion: CriterionSpec) -> Ask:
        """The question this jury answers on ``criterion`` (:func:`jury_ask`)."""
        return jury_ask(self.config, as_criteria(criterion))

    # -- async API ----------------------------------------------------------------------------------------

    async def ascore(
        self, output: str, *, source: str | None = None, context: str | None = None, reference: str | None = None,
        criterion: CriterionSpec = "overall quality", item_id: str | None = None,
    ) -> JudgeResult:  # fmt: skip
        item = JudgeItem(output=output, source=source, context=context, reference=reference, id=item_id)
        return (await self.ascore_many([item], criterion=criterion))[0]

    async def ascore_many(
        self, items: Iterable[JudgeItem | Mapping[str, Any]], *, criterion: CriterionSpec = "overall quality",
        on_result: Callable[[int, JudgeResult], None] | None = None,
    ) -> list[JudgeResult]:  # fmt: skip
        """Judge every item with every judge, at most ``concurrency`` items in flight; results in input order,
        each handed to ``on_result`` as it exists. With ``aggregate = "weights"`` the labelled items are judged
        first and the weights fitted on them. A typed error meant for the caller stops the run, as in
        :meth:`Judge.ascore_many`."""
        parsed = [item if isinstance(item, JudgeItem) else JudgeItem.model_validate(item) for item in items]
        criteria = as_criteria(criterion)
        if self.settings.aggregate == "majority":
            majority_scale(criteria)
        if self.settings.aggregate == "weights" and (self.weights is None or self._fitted_for != criteria):
            await self.afit_weights(self._slice_items or parsed, criteria)
        gate = asyncio.Semaphore(self.config.concurrency)

        async def one(index: int, item: JudgeItem) -> JudgeResult:
            async with gate:
                parts = self._memo.pop(_key(item, criteria), None) or await self._members(item, criteria)
            result = verdict(parts, criteria, self.settings, self.weights, item.id)
            self.results.append(result)
            if on_result is not None:
                on_result(index, result)
            return result

        return await _all(one(i, item) for i, item in enumerate(parsed))

    async def afit_weights(self, items: Sequence[JudgeItem], criterion: CriterionSpec) -> Weights:
        """Judge the items the ``weights_from`` labels name (all of them must be among ``items``) and fit the
        judges' weights on those every judge scored (:func:`fit_weights`)."""
        criteria = as_criteria(criterion)
        if self.settings.weights_from is None:
            raise ConfigError('fitting jury weights needs weights_from = "labels.jsonl" in [jury]')
        labels = read_labels(self.settings.weights_from)
        by_id = {item.id: item for item in items if item.id is not None}
        missing = [key for key in labels.values if key not in by_id]
        if missing:
            raise InputError(
                f"jury weights_from {self.settings.weights_from}: {len(missing)} labelled id(s) are not items of this run "
                f"({', '.join(map(repr, missing[:3]))}{'...' if len(missing) > 3 else ''}): label items of the input, by their ids"
            )
        gate = asyncio.Semaphore(self.config.concurrency)

        async def one(key: str) -> tuple[str, dict[str, JudgeResult]]:
            async with gate:
                return key, await self._members(by_id[key], criteria)

        judged = await _all(one(key) for key in labels.values)
        names = list(self.members)
        complete = [(key, parts) for key, parts in judged if all(parts[n].score is not None for n in names)]
        if len(complete) < MIN_LABELS:
            raise InputError(
                f"jury weights_from {self.settings.weights_from}: {len(complete)} of {len(judged)} labelled items have a score "
                f"from every judge, and fitting weights needs at least {MIN_LABELS}: label more items"
            )
        self._memo.update({_key(by_id[key], criteria): parts for key, parts in judged})
        scores = np.array([[parts[n].score for n in names] for _, parts in complete], dtype=float)
        self.weights = fit_weights(scores, np.array([labels.values[key] for key, _ in complete]), names)
        self._fitted_for = criteria
        return self.weights

    async def _members(self, item: JudgeItem, criteria: tuple[Criterion, ...]) -> dict[str, JudgeResult]:
        """Every judge's result on ``item``, judged concurrently."""
        spec: CriterionSpec = list(criteria) if len(criteria) > 1 else criteria[0]

        async def one(name: str, judge: Judge) -> JudgeResult:
            try:
                return await judge.ascore(
                    item.output, source=item.source, context=item.context, reference=item.reference, criterion=spec, item_id=item.id
                )
            except JudgeSDKError:  # bad input or config, a budget stop: meant for the caller
                raise
            except Exception as exc:  # noqa: BLE001 - anything else is this judge's failure on this item
                return JudgeResult(
                    score=None, status="error", criterion="+".join(c.name for c in criteria), method=judge.method,
                    error=f"unexpected {type(exc).__name__}: {exc}", item_id=item.id,
                )  # fmt: skip

        found = await _all(one(name, judge) for name, judge in self.members.items())
        return dict(zip(self.members, found))

    async def aclose(self) -> None:
        for judge in self.members.values():
            await judge.aclose()
        await self._pool.aclose()

    # -- sync API -------------------------------------------------------------------------------------------

    def score(self, output: str, **kwargs: Any) -> JudgeResult:
        return self._host.run(self.ascore(output, **kwargs))

    def score_many(self, items: Iterable[JudgeItem | Mapping[str, Any]], **kwargs: Any) -> list[JudgeResult]:
        return self._host.run(self.ascore_many(items, **kwargs))

    def run(self, coro: Awaitable[T]) -> T:
        """Run a coroutine on the loop every judge of the jury lives on (:meth:`Judge.run`), from synchronous code."""
        return self._host.run(coro)

    def fit_weights(self, items: Sequence[JudgeItem], criterion: CriterionSpec = "overall quality") -> Weights:
        return self._host.run(self.afit_weights(items, criterion))

    def close(self) -> None:
        self._host.run(self.aclose())
        self._host.close()

    def __enter__(self) -> Jury:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- providers, as a Judge reports them -------------------------------------------------------------------

    def check_providers(self) -> list[str]:
        """Build every judge's providers now; why each unusable one is skipped, by judge. :class:`ConfigError`
        when fewer judges than ``min_judges`` have a usable provider."""
        reasons, unusable = [], []
        for name, judge in self.members.items():
            try:
                reasons += [f"jury judge {name}: {reason}" for reason in judge.check_providers()]
            except ConfigError as exc:
                unusable.append(f"{name}: {exc}")
        self._require(unusable)
        return reasons + [f"jury judge {judge} (the jury goes on without it)" for judge in unusable]

    def require_usable(self) -> None:
        self._require([f"{name}: {'; '.join(j.unusable)}" for name, j in self.members.items() if not j.usable])

    def _require(self, unusable: list[str]) -> None:
        usable = len(self.members) - len(unusable)
        if usable < self.settings.needed:
            raise ConfigError(
                f"{usable} of the jury's {len(self.members)} judges can be used and it needs {self.settings.needed} "
                f"(min_judges): {'; '.join(unusable)}"
            )

    @property
    def usable(self) -> bool:
        return sum(judge.usable for judge in self.members.values()) >= self.settings.needed

    @property
    def providers_in_use(self) -> list[Provider]:
        """Each judge's providers built so far, once per adapter (judges share adapters)."""
        seen: dict[int, Provider] = {}
        for judge in self.members.values():
            for provider in judge.providers_in_use:
                seen.setdefault(id(unwrap(provider)), provider)
        return list(seen.values())

    # -- the run's summary ------------------------------------------------------------------------------------

    def agreement(self, earlier: Iterable[Mapping[str, Any]] = ()) -> Agreement:
        """Krippendorff's alpha over this jury's results and ``earlier`` rows (a resumed run's)."""
        return agreement([*earlier, *self.results])

    def summary_rows(self, earlier: Sequence[Mapping[str, Any]] = ()) -> list[tuple[str, str]]:
        """The jury's lines of a run's summary: each judge and how often it answered, alpha, the flagged items."""
        rows = [*earlier, *(r.model_dump(mode="json", include={"details"}) for r in self.results)]
        table = [s for s in (judge_scores(r) for r in rows) if s is not None]
        found = self.agreement(earlier)
        flagged = sum(bool((r.get("details") or {}).get("flagged")) for r in rows)
        seen = {(r.get("details") or {}).get("threshold") for r in rows}
        thresholds = ", ".join(f"{t:.2f}" for t in sorted(t for t in seen if t is not None))
        out = [(METHOD, f"{len(self.members)} judges, aggregate {self.settings.aggregate}, min_judges {self.settings.needed}")]
        for name, member in self.members.items():
            answered = sum(not math.isnan(finite_or_nan(scores.get(name))) for scores in table)
            served = sorted({f"{p.provider}/{p.model}" for r in self.results for p in [(r.parts or {}).get(name)] if p and p.provider})
            out.append((f"judge {name}", f"{member.method} on {', '.join(served) or '-'}: a score for {answered} of {len(table)} items"))
        alpha = f"{found.alpha:.3f} over {found.items} items" if found.alpha is not None else f"- ({found.reason})"
        out.append(("Krippendorff's alpha (interval)", alpha))
        out.append(("flagged for review", f"{flagged} of {len(rows)} items (judges' scores spread by more than {thresholds or '-'})"))
        if self.weights is not None:
            w = self.weights
            shares = ", ".join(f"{n} {v:.2f}" for n, v in w.values.items())
            out.append(("jury weights", f"{shares} (fitted on {w.labels} labels: RMSE {w.rmse:.3f}, plain mean {w.rmse_mean:.3f})"))
        return out


def _key(item: JudgeItem, criteria: Sequence[Criterion]) -> str:
    return json.dumps([item.model_dump(mode="json"), [c.model_dump(mode="json") for c in criteria]], sort_keys=True)


async def _all(coroutines: Iterable[Any]) -> list[Any]:
    """Gather; on an error (or cancellation) cancel the rest before raising, so none reports afterwards."""
    tasks = [asyncio.ensure_future(c) for c in coroutines]
    try:
        return list(await asyncio.gather(*tasks))
    except BaseException:
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise


class _AdapterPool:
    """One adapter per distinct provider config, built on first use and shared by the judges that name it."""

    def __init__(self) -> None:
        self._built: dict[str, Provider] = {}
        self._lock = threading.Lock()

    def source(self, config: ProviderConfig) -> Callable[[], Provider]:
        key = config.model_dump_json()

        def build() -> Provider:
            with self._lock:
                if key not in self._built:
                    self._built[key] = bottom(config)
                return borrowed(self._built[key])

        return build

    async def aclose(self) -> None:
        built, self._built = list(self._built.values()), {}
        for adapter in built:
            await adapter.aclose()
