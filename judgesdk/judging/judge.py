"""The Judge: what applications call. ``score()``/``ascore()`` for one item, ``score_many()`` for many.

A judge holds a fallback chain of providers (built lazily: a local model is loaded only when it is
needed) and moves to the next one when a provider fails after its retries or cannot be built (no
credentials). Each result names the provider that produced it. Async inside; the sync methods run
on a private event loop owned by the judge, so sync callers never juggle loops and SDK clients stay on
the loop they were created on. No global state: two judges share nothing.
"""

from __future__ import annotations

import asyncio
import logging
import math
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

from judgesdk.core import (
    ConfigError,
    Criterion,
    CriterionSpec,
    InputError,
    JudgeItem,
    JudgeResult,
    JudgeSDKError,
    MissingItemField,
    Provenance,
    ProviderError,
    UnavailableError,
    as_criteria,
    as_criterion,
    options_hash,
    sdk_version,
    stray,
    stray_message,
)
from judgesdk.estimation import EstimationSettings
from judgesdk.items import Item, Unreadable, read_item
from judgesdk.judging.items import annotate, deterministic, is_item, judge_item
from judgesdk.judging.judge_config import JudgeConfig, detect_chain, load_config
from judgesdk.judging.pace import ItemGate, Pace
from judgesdk.prompting import Template, instruction_like, load_template
from judgesdk.provider import (
    Extras,
    OverloadGuard,
    Provider,
    ProviderSource,
    assemble,
    collecting,
    provider_spec,
    served_by,
    settings_of,
    witnessed,
)
from judgesdk.scorers import Comparison, Ranking, ScorerOptions, combine, method_spec, score_fine_grained, scorer_for
from judgesdk.scorers import compare as pairwise_compare
from judgesdk.scorers import rank as pairwise_rank

__all__ = ["CriterionSpec", "Judge", "ProviderSource", "as_criteria", "as_criterion"]

T = TypeVar("T")
Entry = JudgeItem | Item | Unreadable  # what the judge runs: four strings, a typed item, or a line that was unreadable
log = logging.getLogger("judgesdk")
_CANCEL_WAIT_S = 10.0  # how long Ctrl-C waits for cancelled calls to unwind


class Judge:
    """A judge over a fallback chain of providers (module docstring); build one from a config with
    :meth:`from_config`, or directly.

    ``providers`` is one provider or a chain of them, each an instance or a factory called on first use (an
    empty chain is an :class:`~judgesdk.core.errors.InputError`). ``template`` is a prompt template (an id, a
    path or a loaded :class:`~judgesdk.prompting.Template`; None: each method's own), refused when its prompt
    would not show the judged output; ``method`` is the scoring method (``auto``: the fused judge where a fit
    applies, else the prompted one; an unknown name fails here, not at the first item); ``dataset`` selects
    dataset-specific prompt variants where a paper prints them; ``method_options`` are per-method settings;
    ``settings`` says how distributions are estimated; ``concurrency`` (at least 1) is how many items are in
    flight at once, a fixed limit; None (the default) keeps the number the first usable provider's kind declares
    (``ProviderSpec.default_concurrency``: 4 for the local model) or, where it declares none (a hosted API), follows
    the provider's pace (:class:`Pace`: growing while latency holds, shrinking on 429s and timeouts, at most
    :data:`PACE_CAP`). ``item_budget`` is the most tokens a typed item's rendering may have (None: no limit; the
    truncation policy of :func:`judgesdk.items.render_item`, its cuts in each result's notes and
    ``details["item"]``). Use it as a context manager, or call :meth:`close`, to close the providers it built and stop
    its private event loop.
    """

    def __init__(
        self,
        providers: ProviderSource | Sequence[ProviderSource],
        *,
        template: str | Path | Template | None = None,
        method: str = "auto",
        dataset: str | None = None,
        method_options: Mapping[str, Any] | None = None,
        settings: EstimationSettings | None = None,
        concurrency: int | None = None,
        item_budget: int | None = None,
    ) -> None:
        chain = list(providers) if isinstance(providers, Sequence) else [providers]
        if not chain:
            raise InputError("a Judge needs at least one provider")
        if concurrency is not None and concurrency < 1:
            raise InputError(f"concurrency must be at least 1, got {concurrency}")
        self._sources: list[ProviderSource] = chain
        self._built: dict[int, Provider] = {}
        self._broken: dict[int, str] = {}
        scorer_for(method)  # fail now on an unknown method, not at the first item
        self.options = ScorerOptions(
            settings=settings or EstimationSettings(),
            template=None if template is None else _template(template, method),
            dataset=dataset,
            extra=dict(method_options or {}),
        )
        self.method = method
        self.concurrency = concurrency
        if item_budget is not None and item_budget <= 0:
            raise InputError(f"item_budget must be a positive number of tokens, got {item_budget}")
        self.item_budget = item_budget
        self._pace: Pace | None = None  # what the last run learnt of the provider's pace (concurrency unset)
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None

    @classmethod
    def from_config(
        cls,
        source: str | Path | Mapping[str, Any] | JudgeConfig | None = None,
        *,
        adapters: Sequence[ProviderSource] | None = None,
        extras: Extras | Sequence[Extras | None] | None = None,
    ) -> Judge:
        """A judge from a TOML/YAML path, a mapping or a :class:`JudgeConfig` (plus ``JUDGESDK_*`` variables).

        Each provider is the config's (or one of ``adapters``, replacing the configured chain, e.g. a scripted
        provider in tests) under the config's layers and a run's ``extras`` (a budget, a meter, a deferral, a
        shared limiter; one for the whole chain, or one per provider of it), stacked by
        :func:`judgesdk.provider.stack.assemble`; configured adapters are under their ``rate_limit``. Providers are
        built on first use.
        """
        import os

        config = load_config(source)
        if config.jury is not None:  # one judge cannot stand for several: it would quietly judge with the top-level chain
            raise ConfigError(
                "this config has a [jury] section, which one Judge cannot answer: use judgesdk.jury.Jury.from_config "
                "(judgesdk score reads it), or remove [jury] to judge with the top-level providers"
            )
        chain: Sequence[Any] = adapters if adapters is not None else (config.providers or detect_chain(os.environ))
        plan = config.stack_plan()
        each = list(extras) if isinstance(extras, Sequence) else [extras] * len(chain)
        return cls(
            [_stacked(source, plan, added) for source, added in zip(chain, each, strict=True)],
            template=config.template,
            method=config.method,
            dataset=config.dataset,
            method_options=config.method_options,
            settings=config.estimation,
            concurrency=config.fixed_concurrency(),
        )

    # -- async API -------------------------------------------------------------------------------

    async def ascore(
        self,
        output: str | Item,
        *,
        source: str | None = None,
        context: str | None = None,
        reference: str | None = None,
        criterion: CriterionSpec = "overall quality",
        method: str | None = None,
        item_id: str | None = None,
    ) -> JudgeResult:
        """Judge one output. Several criteria (a list) give 002's fine-grained result: their mean, with each
        criterion's result in ``parts``; the criteria of one output are asked together, so with
        ``template="direct.likert.shared_criteria"`` a local model evaluates the shared prompt once.

        ``output`` may be a typed item (a :class:`~judgesdk.items.Conversation`,
        :class:`~judgesdk.items.GroundedAnswer` or :class:`~judgesdk.items.AgentRun`): it becomes the four strings
        at one point (:func:`judgesdk.judging.items.judge_item`), so ``source``, ``context`` and ``reference`` are
        then not given; ``item_id`` overrides the item's own ``id``."""
        if is_item(output):
            if any(text is not None for text in (source, context, reference)):
                raise InputError("a typed item carries its own source, context and reference: pass the item alone")
            typed: Item = output  # type: ignore[assignment]
            entry: Entry = typed if item_id is None else typed.model_copy(update={"id": item_id})
        else:
            entry = JudgeItem(output=output, source=source, context=context, reference=reference, id=item_id)
        return await self._judge_entry(entry, as_criteria(criterion), method or self.method)

    async def ascore_many(
        self,
        items: Iterable[JudgeItem | Item | Unreadable | Mapping[str, Any]],
        *,
        criterion: CriterionSpec = "overall quality",
        method: str | None = None,
        on_result: Callable[[int, JudgeResult], None] | None = None,
    ) -> list[JudgeResult]:
        """Judge many items, at most ``concurrency`` in flight (unset: the provider's pace, see the class
        docstring); results in input order (``on_result`` sees them as they finish, in any order). ``criterion``
        may be a list (fine-grained, as in :meth:`ascore`).

        A failing item (its providers failed, or something untyped raised while judging it) becomes a result
        with status ``error``; every other result is still returned (and handed to ``on_result`` as soon as it
        exists, so callers can persist progress). A typed error meant for the caller (:class:`InputError`,
        :class:`ConfigError`, a budget stop) stops the run: the items in flight are cancelled first.

        An item may be a typed one (as :meth:`ascore` takes it, or a mapping with a ``kind``, read by
        :func:`judgesdk.items.read_item`), or an :class:`~judgesdk.items.Unreadable` input line, whose
        result is an ``error`` naming the line while the others are judged.
        """
        parsed = [_entry(item) for item in items]
        fixed = self._fixed_concurrency()
        if fixed is None and (self._pace is None or self._pace.in_flight):  # a run under way keeps its own
            self._pace = Pace() if self._pace is None else self._pace.carried()
        gate = ItemGate(fixed, None if fixed is not None else self._pace, self._pace_signals)
        crit = as_criteria(criterion)

        async def one(index: int, item: Entry) -> JudgeResult:
            async with gate.slot() as slot:
                try:
                    result = await self._judge_entry(item, crit, method or self.method)
                except JudgeSDKError:  # typed and meant for the caller (bad input or config, a budget stop): it
                    raise  # stops the run (below); provider failures never get here, the chain made them results
                except Exception as exc:  # noqa: BLE001 - anything else is this item's status; the others go on
                    result = _item_failed(item, crit, method or self.method, exc)
                except BaseException as exc:  # SystemExit, GeneratorExit... raised by this item's code: its status too
                    if not stray(exc):
                        raise
                    result = _error_result(item, crit, method or self.method, stray_message(exc))
                slot.answered = result.status != "error"
            if on_result is not None:
                on_result(index, result)
            return result

        tasks = [asyncio.ensure_future(one(i, item)) for i, item in enumerate(parsed)]
        try:
            return list(await asyncio.gather(*tasks))
        except BaseException:  # stop the other items before returning, so none reports after the caller's cleanup
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            raise

    async def acompare(
        self, a: str, b: str, *, source: str, criterion: Criterion | str = "overall quality", protocol: str = "pairwise"
    ) -> Comparison:
        """P(``a`` better than ``b``) from both orders (004), per-order detail, tie and verdicts (``h2h``: 001)."""
        crit = as_criterion(criterion)
        return await self._chain(lambda p: pairwise_compare(p, a, b, source=source, criterion=crit, options=self.options, protocol=protocol))  # type: ignore[arg-type]

    async def arank(
        self,
        outputs: Sequence[str],
        *,
        source: str,
        criterion: Criterion | str = "overall quality",
        strategy: str = "full",
        budget: int | None = None,
        **kwargs: Any,
    ) -> Ranking:
        """Rank outputs of one source by comparisons (004 §3.4): full, random, no-repeat, symmetric, bradley-terry.

        ``kwargs`` go to :func:`judgesdk.scorers.pairwise.rank` (``protocol``, ``selection``, ``seed``, ``hard``, ``ids``).
        """
        crit = as_criterion(criterion)
        return await self._chain(
            lambda p: pairwise_rank(p, outputs, source=source, criterion=crit, strategy=strategy, budget=budget, options=self.options, **kwargs)  # type: ignore[arg-type]
        )

    async def _chain(self, call: Callable[[Provider], Awaitable[T]]) -> T:
        """``call`` on the first working provider, with earlier failures in its notes; ``_ChainFailed`` (a
        ProviderError naming every failure) when none works."""
        result, failures = await self._first_success(call)
        return result.model_copy(update={"notes": [*failures, *result.notes]}) if failures else result  # type: ignore[attr-defined]

    async def aclose(self) -> None:
        """Close the providers this judge built from factories (config); instances passed in stay open,
        since their owner may share them between judges."""
        for index, provider in self._built.items():
            if self._sources[index] is provider.inner:  # type: ignore[attr-defined]
                continue
            await provider.aclose()
        self._built.clear()

    # -- sync API --------------------------------------------------------------------------------

    def run(self, coro: Awaitable[T]) -> T:
        """Run a coroutine that uses this judge's providers on the judge's own event loop (where its SDK
        clients and local model worker live), from synchronous code."""
        return self._sync(coro)

    def score(self, output: str | Item, **kwargs: Any) -> JudgeResult:
        return self._sync(self.ascore(output, **kwargs))

    def score_many(self, items: Iterable[JudgeItem | Item | Unreadable | Mapping[str, Any]], **kwargs: Any) -> list[JudgeResult]:
        return self._sync(self.ascore_many(items, **kwargs))

    def compare(self, a: str, b: str, **kwargs: Any) -> Comparison:
        return self._sync(self.acompare(a, b, **kwargs))

    def rank(self, outputs: Sequence[str], **kwargs: Any) -> Ranking:
        return self._sync(self.arank(outputs, **kwargs))

    def close(self) -> None:
        if self._loop is not None:
            self._sync(self.aclose())
            self._loop.call_soon_threadsafe(self._loop.stop)
            if self._thread is not None:
                self._thread.join(timeout=10)
            self._loop.close()
            self._loop = None

    def __enter__(self) -> Judge:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _sync(self, coro: Awaitable[T]) -> T:
        if self._loop is None:
            self._loop = asyncio.new_event_loop()
            self._thread = threading.Thread(target=self._loop.run_forever, name="judgesdk-loop", daemon=True)
            self._thread.start()
        ended = threading.Event()

        async def watched() -> T:
            try:
                return await coro
            except BaseException as exc:  # a SystemExit escaping a task would end the loop's thread: the caller would wait forever
                if isinstance(exc, Exception) or not stray(exc):
                    raise
                raise RuntimeError(stray_message(exc)) from exc
            finally:
                ended.set()

        future = asyncio.run_coroutine_threadsafe(watched(), self._loop)
        try:
            return future.result()
        except KeyboardInterrupt:  # Ctrl-C: stop the calls in flight, and return only once none can still
            future.cancel()  # hand a result to a callback (the caller is about to close its results file)
            ended.wait(timeout=_CANCEL_WAIT_S)
            raise

    # -- the chain -------------------------------------------------------------------------------

    def provider(self, index: int = 0) -> Provider:
        """The chain's ``index``-th provider as the judge uses it (the whole stack: coalescing, cache,
        retry, rate limit, adapter), built now if it was not yet. Read a layer's counters with
        :func:`judgesdk.provider.protocol.find_layer`."""
        if not 0 <= index < len(self._sources):
            raise InputError(f"provider index {index} is outside the chain of {len(self._sources)}")
        return self._provider(index).inner  # type: ignore[attr-defined] # under the judge's Witness

    @property
    def providers_in_use(self) -> list[Provider]:
        """The chain's providers built so far (those a call has needed), as whole stacks; nothing is built."""
        return [self._built[i].inner for i in sorted(self._built)]  # type: ignore[attr-defined]

    def _provider(self, index: int) -> Provider:
        """The built stack under the witness (:func:`judgesdk.provider.stack.witnessed`), which sees every answer it gives."""
        if index not in self._built:
            source = self._sources[index]
            self._built[index] = witnessed(_as_builder(source)())
        return self._built[index]

    async def _judge_entry(self, entry: Entry, criteria: tuple[Criterion, ...], method: str) -> JudgeResult:
        """One entry judged: four strings through the chain (:meth:`_judge`); an unreadable line as its ``error``
        result; a typed item as its four strings (:func:`~judgesdk.judging.items.judge_item`), its deterministic
        criteria answered without a model call and the others through the chain, the item's kind and cuts in
        the result."""
        if isinstance(entry, JudgeItem):
            return await self._judge(entry, criteria, method)
        if isinstance(entry, Unreadable):
            return _error_result(entry, criteria, method, entry.error)
        if len({c.scale for c in criteria}) > 1:
            raise InputError(
                f"criteria {', '.join(c.name for c in criteria)} are on different scales: their mean would mix "
                "scales; judge them in separate runs"
            )
        judged, cuts = judge_item(entry, budget=self.item_budget)
        fixed = {c.name: answer for c in criteria if (answer := deterministic(entry, c)) is not None}
        rest = tuple(c for c in criteria if c.name not in fixed)
        if not fixed:
            result = await self._judge(judged, criteria, method)
        elif not rest:
            result = fixed[criteria[0].name] if len(criteria) == 1 else combine(fixed, method, judged)
        else:
            asked = await self._judge(judged, rest, method)
            by_name = dict(asked.parts) if len(rest) > 1 and asked.parts else {rest[0].name: asked}
            if any(c.name not in by_name for c in rest):  # an error for the whole (every provider failed): its parts
                by_name = {c.name: asked.model_copy(update={"criterion": c.name}) for c in rest}
            parts = {c.name: fixed.get(c.name) or by_name[c.name] for c in criteria}
            result = combine(parts, method, judged).model_copy(update={"provenance": asked.provenance})
        return annotate(result, entry, cuts)

    async def _judge(self, item: JudgeItem, criteria: tuple[Criterion, ...], method: str) -> JudgeResult:
        """One item through the chain; when every provider fails, an ``error`` result that says why. A result
        carries the :class:`Provenance` of the provider that produced it and of the responses it rests on
        (each provider tried gets a fresh collector, so a failed attempt's answers are not credited)."""
        call = _scoring_call(item, criteria, method, self.options)

        async def attributed(provider: Provider) -> JudgeResult:
            with collecting() as calls:
                result = await call(provider)
            return result.model_copy(update={"provenance": self._provenance(provider, method, calls, result)})

        started = time.perf_counter()
        try:
            result = await self._chain(attributed)
        except _ChainFailed as exc:
            result = _error_result(item, criteria, method, str(exc), latency_s=time.perf_counter() - started)
        except MissingItemField as exc:  # this item lacks what its prompt shows: its error, the others go on (issue 28)
            named = f"item {item.id!r}" if item.id is not None else "an item without an id"
            result = _error_result(item, criteria, method, f"{named}: {exc}", latency_s=time.perf_counter() - started)
        return _flag_instructions(item, result)

    def _provenance(self, provider: Provider, method: str, calls: list[Any], result: JudgeResult) -> Provenance:
        served, templates = served_by(calls)
        if settings := settings_of(provider):  # the adapter's answer-changing options, as the cache key names them
            served = {**served, "settings": settings}
        fits = {r.details.get("calibration") for r in [result, *(result.parts or {}).values()]} - {None, ""}
        return Provenance(
            sdk=sdk_version(),
            provider=provider.kind,
            model=provider.model,
            method=method,
            options=options_hash(self.options.extra, self.options.settings.model_dump(mode="json")),
            served=served,
            templates=templates,
            calibration=" | ".join(sorted(str(f) for f in fits)) or None,
        )

    def check_providers(self) -> list[str]:
        """Build every provider of the chain now and return why each one that cannot be built is skipped;
        :class:`ConfigError` when none can be (no model file, no key...), so that a run fails once, before any
        item, instead of writing one error per item. A local model is not loaded here (only its file checked)."""
        for index in range(len(self._sources)):
            self._usable(index)
        self.require_usable()
        return self.unusable

    def require_usable(self) -> None:
        """:class:`ConfigError` naming every provider's reason once none of the chain can be used."""
        if not self.usable:
            raise ConfigError("no provider of the chain can be used: " + "; ".join(self.unusable))

    @property
    def usable(self) -> bool:
        """False once every provider of the chain is known to be unusable (it could not be built, or its
        model would not load)."""
        return len(self._broken) < len(self._sources)

    @property
    def unusable(self) -> list[str]:
        """Why each provider known to be unusable is skipped, in chain order."""
        return [self._broken[i] for i in sorted(self._broken)]

    def _fixed_concurrency(self) -> int | None:
        """Items in flight as a fixed limit: the judge's ``concurrency``, else what the first usable provider's kind
        declares (``ProviderSpec.default_concurrency``); None: follow the provider's pace."""
        if self.concurrency is not None:
            return self.concurrency
        for index in range(len(self._sources)):
            provider = self._usable(index)
            if provider is not None:
                try:
                    return provider_spec(provider.kind).default_concurrency
                except ConfigError:  # a kind built in code that the registry does not know: a provider of one's own
                    return None
        return None

    def _pace_signals(self) -> tuple[int, int | None]:
        """What the providers built so far have learnt, for the item pace: the congestion they saw (429s, overload
        answers and timeouts counted by each overload guard) and the tightest in-flight limit below it (an
        overload guard's learnt limit, a rate limit's ``max_concurrency`` × its back-off factor; None: none)."""
        congested, bound = 0, None
        for provider in list(self._built.values()):
            layer: Any = provider
            while layer is not None:
                limit: float | int | None = None
                if isinstance(layer, OverloadGuard):
                    congested += layer.stats.congested
                    limit = layer.limit.limit
                elif isinstance(getattr(type(layer), "concurrency_limit", None), property):  # a rate limit layer
                    limit = layer.concurrency_limit
                if limit is not None:
                    bound = max(1, math.floor(limit)) if bound is None else min(bound, max(1, math.floor(limit)))
                layer = getattr(layer, "inner", None)
        return congested, bound

    def _usable(self, index: int) -> Provider | None:
        """The chain's ``index``-th provider, or None when it cannot be built (remembered for the judge's lifetime)."""
        if index in self._broken:
            return None
        try:
            return self._provider(index)
        except ProviderError as exc:  # e.g. no credentials or no model file
            self._broken[index] = f"provider {index} unavailable: {exc}"
            return None

    async def _first_success(self, call: Callable[[Provider], Awaitable[T]]) -> tuple[T, list[str]]:
        """Run ``call`` on the first provider of the chain that can be built and does not fail.

        Returns the value and what failed before it; raises ``_ChainFailed`` when every provider failed.
        """
        failures: list[str] = []
        for index in range(len(self._sources)):
            provider = self._usable(index)
            if provider is None:
                failures.append(self._broken[index])
                continue
            try:
                return await call(provider), failures
            except UnavailableError as exc:  # it will fail every item the same way: skip it from now on
                self._broken[index] = f"provider {index} unavailable: {exc}"
                failures.append(self._broken[index])
            except ProviderError as exc:
                failures.append(f"{provider.kind}/{provider.model} failed: {exc}")
        raise _ChainFailed("every provider failed: " + "; ".join(failures))


class _ChainFailed(ProviderError):
    """Every provider of the chain failed; the message lists why."""


def _entry(value: Any) -> Entry:
    """What ``ascore_many`` was given, as an entry: a JudgeItem, a typed item and an unreadable line as they are,
    a mapping with a ``kind`` read as a typed item, any other mapping as a JudgeItem's fields."""
    if isinstance(value, (JudgeItem, Unreadable)) or is_item(value):
        return value
    if isinstance(value, Mapping) and "kind" in value:
        return read_item(value)
    return JudgeItem.model_validate(value)


def _item_failed(item: Entry, criteria: tuple[Criterion, ...], method: str, exc: Exception) -> JudgeResult:
    """An ``error`` result for an item whose judging raised something untyped (a bug in a scorer or an adapter),
    named by its type; the traceback is logged at DEBUG (``-v`` on the CLI)."""
    log.debug("item %s: unexpected error", item.id, exc_info=exc)
    return _error_result(item, criteria, method, f"unexpected {type(exc).__name__}: {exc} (run with -v for the traceback)")


def _error_result(item: Entry, criteria: tuple[Criterion, ...], method: str, error: str, latency_s: float = 0.0) -> JudgeResult:
    return JudgeResult(
        score=None, status="error", criterion="+".join(c.name for c in criteria), method=method, error=error, latency_s=latency_s, item_id=item.id
    )


def _flag_instructions(item: JudgeItem, result: JudgeResult) -> JudgeResult:
    """The result with ``details["instruction_like"]`` naming text of the output that addresses the judge
    (:func:`judgesdk.prompting.injection.instruction_like`): the review policy flags it for a human, the score
    stands as the judge gave it. Read from the item alone, so it never changes an answer or a cache key."""
    reason = instruction_like(item.output)
    return result if reason is None else result.model_copy(update={"details": {**result.details, "instruction_like": reason}})


def _template(template: str | Path | Template, method: str) -> Template:
    """The judge's template, refused when its prompt would not show the judged output: every method but those
    that score the output as the continuation of the prompt (``likelihood``: ``MethodSpec.output_as_continuation``)
    puts it in the prompt."""
    loaded = template if isinstance(template, Template) else load_template(template)
    if not method_spec(method).output_as_continuation and not loaded.shows_the_output():
        raise InputError(
            f"template {loaded.id!r} has no {{{{output}}}}: the judge would score without seeing the text it judges; put "
            "{{output}} where the judged text goes ({{output_a}} and {{output_b}} for a comparison)"
        )
    return loaded


def _as_builder(source: ProviderSource) -> Callable[[], Provider]:
    """A factory for a provider given as an instance or as a factory."""
    return (lambda: source) if hasattr(source, "generate") else source  # type: ignore[return-value]


def _stacked(source: Any, plan: Any, extras: Extras | None) -> Callable[[], Provider]:
    """A factory of the whole stack over ``source`` (a provider config, an adapter or an adapter's factory)."""
    return lambda: assemble(source, plan, extras)


def _scoring_call(
    item: JudgeItem, criteria: tuple[Criterion, ...], method: str, options: ScorerOptions
) -> Callable[[Provider], Awaitable[JudgeResult]]:
    """The scorer call for one item: the method's scorer for one criterion, fine-grained for several."""
    scorer = scorer_for(method)
    if len(criteria) == 1:
        return lambda p: scorer(p, item, criteria[0], options, method)
    return lambda p: score_fine_grained(p, item, criteria, options, method)
