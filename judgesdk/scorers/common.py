"""Steps every scorer shares: the template's variables for an item, and an estimate turned into a result."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Generic, TypeVar, cast

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from judgesdk.core import Criterion, InputError, JudgeItem, JudgeResult, ResultStatus
from judgesdk.estimation import Estimate, EstimationSettings
from judgesdk.prompting import Template, bundled_template_ids, load_template
from judgesdk.provider import Capabilities, GenerateRequest, GenerateResponse, Provider, Usage

S = TypeVar("S")
R = TypeVar("R", bound=BaseModel)
_STATUS_RANK: dict[str, int] = {"ok": 0, "low_coverage": 1, "unparsed": 2, "refused": 3, "missing": 4, "error": 5}


class ScorerOptions(BaseModel):
    """What a scorer may be told beyond the item and criterion.

    ``template`` overrides the scorer's default template; ``dataset`` selects dataset-specific prompt
    variants where a paper prints them (``<id>.<dataset>``); ``extra`` holds method-specific settings
    (e.g. ladder size, number of Fusion-Eval predictions), documented by each scorer.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    settings: EstimationSettings = Field(default_factory=EstimationSettings)
    template: Template | None = None
    dataset: str | None = None
    extra: dict[str, Any] = Field(default_factory=dict)

    def store(self, key: str, kind: type[S]) -> S:
        """The per-judge store ``extra[key]`` (ladders, plans), created on first use; kept with the judge's
        options so nothing is global and a judge's artefacts can be exported, reviewed and imported."""
        store = self.extra.setdefault(key, kind())
        if not isinstance(store, kind):
            raise InputError(f"options.extra[{key!r}] must be a {kind.__name__}, got {type(store).__name__}")
        return store

    def template_or(self, default_id: str | Path) -> Template:
        return self.template if self.template is not None else load_template(default_id)


def template_values(item: JudgeItem, criterion: Criterion) -> dict[str, object]:
    """Values for the documented placeholder names (see prompts/README.md), read from ``item`` (output, source,
    context, reference) and ``criterion`` (name, definition, scale ends). Absent fields stay None, so a
    template that needs one fails with a typed error naming it."""
    return {
        "output": item.output,
        "source": item.source,
        "context": item.context,
        "reference": item.reference,
        "criterion": criterion.name,
        "definition": criterion.description or criterion.name,
        "criteria": criteria_block([criterion]),  # templates that list criteria; several: bound by the caller
        "scale_low": _number(criterion.scale.low),
        "scale_high": _number(criterion.scale.high),
    }


def criteria_block(criteria: Sequence[Criterion], separator: str = " - ") -> str:
    """A ``{{criteria}}`` block: one "Name<separator>definition" line per criterion."""
    return "\n".join(f"{c.name.capitalize()}{separator}{c.description or c.name}" for c in criteria)


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def result_from_estimate(estimate: Estimate, criterion: Criterion, method: str, item: JudgeItem) -> JudgeResult:
    """A score only where there is a distribution; a low-coverage estimate keeps its score and its status."""
    distribution = estimate.distribution
    return JudgeResult(
        score=distribution.expected if distribution is not None else None,
        status=estimate.status,
        criterion=criterion.name,
        method=f"{method}/{estimate.method}",
        method_reason=estimate.reason,
        distribution=distribution,
        raw=estimate.texts,
        provider=estimate.provider,
        model=estimate.model,
        cached=estimate.cached,
        usage=estimate.usage,
        latency_s=estimate.latency_s,
        notes=estimate.notes,
        details={"answer_format": estimate.answer_format.model_dump()} if estimate.answer_format is not None else {},
        item_id=item.id,
    )


def greedy_without_probabilities(settings: EstimationSettings, capabilities: Capabilities) -> EstimationSettings:
    """Label probabilities where the provider has them; otherwise the greedy answer (T=0, as 001 and
    002's Direct decode), not ``estimate()``'s sampling fallback. An explicit method is kept."""
    if settings.method == "auto" and not (capabilities.exact_labels or capabilities.logprobs):
        return settings.model_copy(update={"method": "parsed"})
    return settings


def result_from_responses(provider: Provider, responses: Sequence[GenerateResponse], **fields: object) -> JudgeResult:
    """A result whose provenance (provider, model, usage, latency, cache) sums ``responses``.

    Shared by the scorers that call the provider directly rather than through ``estimate()``
    (likelihood, RTS); a candidate for ``scorers.common``.
    """
    usage = Usage()
    for response in responses:
        usage = usage + response.usage
    notes = [n for r in responses for n in r.notes]
    extra_notes = cast(list[str], fields.pop("notes", []))
    return JudgeResult(
        provider=provider.kind,
        model=provider.model,
        usage=usage,
        latency_s=sum(r.latency_s for r in responses),
        cached=bool(responses) and all(r.cached for r in responses),
        notes=[*extra_notes, *notes],
        **fields,
    )


class KeyedStore(Generic[R]):
    """Records generated once per key: looked up, built at most once at a time, exported/imported as JSONL.

    Concurrent requests for a key that is being built wait for that build instead of starting another.
    A failed build is not stored.
    """

    record_type: type[R]

    def __init__(self) -> None:
        self._records: dict[str, R] = {}
        self._building: dict[str, asyncio.Future[R]] = {}

    def __len__(self) -> int:
        return len(self._records)

    def __iter__(self) -> Iterator[R]:
        return iter(list(self._records.values()))

    def get(self, key: str) -> R | None:
        return self._records.get(key)

    def put(self, record: R) -> None:
        self._records[record.key] = record  # type: ignore[attr-defined]

    async def get_or_build(self, key: str, build: Callable[[], Awaitable[R]]) -> tuple[R, bool]:
        """The record for ``key`` and whether this call built it."""
        if key in self._records:
            return self._records[key], False
        if key in self._building:
            return await asyncio.shield(self._building[key]), False
        future: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self._building[key] = future
        try:
            record = await build()
        except asyncio.CancelledError:
            future.cancel()
            raise
        except Exception as exc:
            future.set_exception(exc)
            future.exception()  # mark retrieved: waiters (if any) re-raise it
            raise
        else:
            self.put(record)
            future.set_result(record)
            return record, True
        finally:
            del self._building[key]

    def export_jsonl(self, path: str | Path) -> int:
        """Write every record as one JSON line; returns how many."""
        records = list(self)
        Path(path).write_text("".join(r.model_dump_json() + "\n" for r in records), encoding="utf-8")
        return len(records)

    def import_jsonl(self, path: str | Path) -> int:
        """Read records written by :meth:`export_jsonl` (they replace records with the same key)."""
        file = Path(path)
        if not file.is_file():
            raise InputError(f"no file at {file} to import {self.record_type.__name__} records from")
        records = []
        for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), start=1):
            if not line.strip():
                continue
            try:
                records.append(self.record_type.model_validate_json(line))
            except ValidationError as exc:
                raise InputError(f"{file}:{number}: not a {self.record_type.__name__} record: {exc.errors()[0]['msg']}") from exc
        for record in records:
            self.put(record)
        return len(records)


class UnusableAnswer(Exception):
    """The model's answer cannot be used (an empty rung or plan): the result is ``unparsed``."""


def greedy_request(
    template: Template, values: Mapping[str, object], max_tokens: int, seed: int | None, grammar: str | None = None
) -> GenerateRequest:
    """The request of :func:`greedy_response` (``grammar`` only for providers with ``Capabilities.grammar``)."""
    return GenerateRequest(
        messages=template.render(**values), max_tokens=max_tokens, temperature=0.0, seed=seed, tags=template.tags(), grammar=grammar
    )


async def greedy_response(
    provider: Provider, template: Template, values: Mapping[str, object], max_tokens: int, seed: int | None
) -> tuple[GenerateResponse, str]:
    """One greedy (temperature 0) free-text generation from ``template``: the response and its text."""
    response = await provider.generate(greedy_request(template, values, max_tokens, seed))
    return response, response.choices[0].text if response.choices else ""


async def generate_text(provider: Provider, template: Template, values: Mapping[str, object], max_tokens: int, seed: int | None) -> tuple[str, Usage]:
    """One greedy generation from ``template``; an empty answer raises :class:`UnusableAnswer`."""
    response, text = await greedy_response(provider, template, values, max_tokens, seed)
    text = text.strip()
    if not text:
        raise UnusableAnswer(f"{template.id} returned an empty text")
    return text, response.usage


def variant_template(base_id: str, dataset: str | None) -> Template:
    """``<base_id>.<dataset>`` when that bundled variant exists (prompts/README.md), else ``base_id``."""
    if dataset:
        key = "".join(ch for ch in dataset.lower() if ch.isalnum())
        if f"{base_id}.{key}" in bundled_template_ids():
            return load_template(f"{base_id}.{key}")
    return load_template(base_id)


def template_override(options: ScorerOptions, needed: set[str]) -> Template | None:
    """``options.template`` when it has the ``needed`` placeholders, else None: a judge configured with a
    scoring template (e.g. ``direct.likert``) still compares, and builds ladders, with the methods' own."""
    template = options.template
    return template if template is not None and needed <= template.variables else None


def worst_status(statuses: Sequence[ResultStatus]) -> ResultStatus:
    """The most severe of ``statuses`` (ok < low_coverage < unparsed < refused < missing < error); ok for none."""
    return max(statuses, key=_STATUS_RANK.__getitem__, default="ok")


def total_usage(usages: Sequence[Usage]) -> Usage:
    total = Usage()
    for usage in usages:
        total = total + usage
    return total
