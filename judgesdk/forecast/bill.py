"""The estimate as data, on disk and on screen, and set beside what a run then spent.

:class:`Forecast` is what ``judgesdk score --estimate`` prints as JSON and saves beside the results file
(:func:`save`, :func:`estimate_path`); :func:`table` is the same as a rich table. What each count of a
:class:`ProviderForecast` means:

* **requests** the scorers send; **calls** that reach the model; **cache hits** (stored before the run,
  or by this run earlier when the cache is on); **merged**: identical requests in flight together, which
  one call answers (:mod:`judgesdk.provider.layers.coalesce`), e.g. the fused judge's signals shared by several criteria.
* **prompt tokens** of the calls (what ``usage.input_tokens`` records: the prompt, not a scored
  continuation) and **output tokens**: 0 for label and continuation requests; for generation an upper
  bound, ``max_tokens`` per answer (a model may stop sooner; it never goes further).
* **tokens evaluated** (the local model): the provider's ``counters.tokens_evaluated`` after prefix reuse,
  from a replay of its KV-cache rules (:mod:`judgesdk.forecast.kv_replay`) over the calls in arrival order:
  the source of a document is evaluated once when its outputs follow each other.
* **cost** from :func:`judgesdk.provider.prices.price_for` (0 for a local model; unknown, never made up, where there is
  no price).

A run into the same results file counts its spend per provider (:class:`ProviderSpend`, filled by
:class:`judgesdk.forecast.job.SpendMeter`); :func:`compare_rows` sets the two side by side for the run's report.
This module only describes and renders: it imports nothing of judgesdk.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

__all__ = [
    "ESTIMATE_SUFFIX", "Forecast", "ProviderForecast", "ProviderSpend", "compare_rows", "estimate_path", "load_saved",
    "save", "table",
]  # fmt: skip

ESTIMATE_SUFFIX = ".estimate.json"


# -- the estimate -------------------------------------------------------------------------------------


class ProviderForecast(BaseModel):
    """What one provider would be asked (see the module docstring for each count)."""

    provider: str
    model: str
    requests: int = 0
    calls: int = 0
    cache_hits: int = 0
    merged: int = 0
    prompt_tokens: int = 0
    output_tokens: int = 0  # an upper bound when ``output_tokens_exact`` is False
    output_tokens_exact: bool = True
    tokens_evaluated: int | None = None  # an in-process model: after prefix reuse
    tokens_reused: int | None = None
    tokens_evaluated_exact: bool = True  # False when generation (length unknown) is counted at max_tokens
    too_long: int = 0  # calls longer than the local context (they would fail)
    by_kind: dict[str, int] = Field(default_factory=dict)  # calls: labels, continuation, generation
    tokenizer: str = ""
    tokens_exact: bool = True  # counted with the provider's own tokenizer
    usd: float | None = None  # None: no known price
    price_note: str = ""


class Forecast(BaseModel):
    """The bill of a job before it runs: per provider, and what the counts rest on."""

    items: int  # distinct items judged
    judgements: int  # (item, job) pairs: the gate judges each criterion as its own job
    criteria: list[str]
    method: str
    providers: list[ProviderForecast]
    skipped: list[str] = Field(default_factory=list)  # providers of the chain that cannot be used (the next answers)
    failing: int = 0  # items whose planning ended in an error (they would fail in the run too)
    notes: list[str] = Field(default_factory=list)
    usd: float | None = None
    fingerprint: str = ""  # the job (questions and items), so a run can tell its own estimate


# -- saved beside the results -------------------------------------------------------------------------


def estimate_path(results: Path) -> Path:
    """Where ``judgesdk score --estimate -o RESULTS`` saves its estimate, and a run into RESULTS finds it.

    ``results``: the results file the estimate is for. Returns its path with ``.estimate.json`` appended to the name
    (:data:`ESTIMATE_SUFFIX`), in the same folder."""
    return results.with_name(results.name + ESTIMATE_SUFFIX)


def save(found: Forecast, results: Path) -> Path:
    """Save an estimate beside its results file, so that a run into the same file can show it beside its spend.

    ``found``: the estimate; ``results``: the results file it is for (the file itself is not touched). Writes
    ``found`` as JSON to :func:`estimate_path` of ``results``, replacing any estimate there, and returns that path."""
    path = estimate_path(results)
    path.write_text(found.model_dump_json(indent=1) + "\n", encoding="utf-8")
    return path


def load_saved(results: Path | None) -> Forecast | None:
    """The estimate saved beside ``results``, or None (none, or unreadable: a run never fails on it)."""
    if results is None:
        return None
    path = estimate_path(results)
    try:
        return Forecast.model_validate_json(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


# -- set beside what a run spent ----------------------------------------------------------------------


class ProviderSpend(BaseModel):
    """What a run spent with one provider: calls that reached the model, their usage, cache hits."""

    provider: str
    model: str
    calls: int = 0
    prompt_tokens: int = 0
    output_tokens: int = 0
    cache_hits: int | None = None  # None: the cache was off
    tokens_evaluated: int | None = None
    usd: float | None = None


def _n(value: int | None) -> str:
    return "-" if value is None else f"{value:,}"


def _usd(value: float | None) -> str:
    return "unknown" if value is None else f"${value:,.4f}"


def _beside(estimated: int | None, spent: int | None) -> str:
    """``"N estimated, M spent (+x %)"``: the estimate's error relative to the spend, where both exist."""
    off = "" if estimated is None or not spent else f" ({(estimated - spent) / spent:+.1%})"
    return f"{_n(estimated)} estimated, {_n(spent)} spent{off}"


def compare_rows(found: Forecast, spent: Sequence[ProviderSpend]) -> list[tuple[str, str]]:
    """Summary rows with the estimate beside what was spent, per provider the estimate planned for.

    ``found``: the estimate made before the run; ``spent``: what the run spent, per provider and model (a provider
    the estimate planned for but the run never called counts as nothing spent; one it did not plan for is left out).
    Returns (label, text) pairs for the run's report: calls, prompt and output tokens, cache hits, tokens evaluated
    (local models) and cost, each as "N estimated, M spent" with the relative error where both are known."""
    rows: list[tuple[str, str]] = []
    by_name = {(s.provider, s.model): s for s in spent}
    for planned in found.providers:
        actual = by_name.get((planned.provider, planned.model), ProviderSpend(provider=planned.provider, model=planned.model))
        name = f"{planned.provider}/{planned.model}"
        bound = "" if planned.output_tokens_exact else "at most "
        rows += [
            (f"estimate vs spent, {name}", f"estimated {'exactly' if planned.tokens_exact else 'approximately'}, before the run"),
            ("  model calls", _beside(planned.calls, actual.calls)),
            ("  prompt tokens", _beside(planned.prompt_tokens, actual.prompt_tokens)),
            ("  output tokens", f"{bound}{_n(planned.output_tokens)} estimated, {_n(actual.output_tokens)} spent"),
            ("  cache hits", f"{_n(planned.cache_hits)} estimated, {_n(actual.cache_hits)} spent"),
        ]
        if planned.tokens_evaluated is not None:
            rows.append(("  tokens evaluated", _beside(planned.tokens_evaluated, actual.tokens_evaluated)))
        rows.append(("  cost", f"{_usd(planned.usd)} estimated, {_usd(actual.usd)} spent"))
    return rows


# -- on screen ----------------------------------------------------------------------------------------


def table(found: Forecast, *, title: str = "judgesdk score --estimate (no model called)", saved: Path | None = None) -> Any:
    """The estimate as a rich table (what the CLI prints).

    ``found``: the estimate; ``title``: the table's title; ``saved``: where the estimate was saved
    (:func:`save`), shown as a last row, or None to leave that row out. Returns a :class:`rich.table.Table`
    (typed ``Any`` so that this module does not import rich until it is called)."""
    from rich.table import Table

    out = Table(title=title, show_header=False)
    jobs = "" if found.judgements == found.items else f", {found.judgements:,} judgements"
    out.add_row("items", f"{found.items:,}{jobs} ({', '.join(found.criteria)}; method {found.method})")
    for reason in found.skipped:
        out.add_row("skipped", reason)
    for p in found.providers:
        kinds = ", ".join(f"{v:,} {k}" for k, v in sorted(p.by_kind.items()))
        out.add_row("provider", f"{p.provider}/{p.model}")
        out.add_row("requests", f"{p.requests:,}")
        out.add_row("model calls", f"{p.calls:,}" + (f" ({kinds})" if kinds else ""))
        out.add_row("cache hits", f"{p.cache_hits:,}")
        out.add_row("merged in flight", f"{p.merged:,}")
        out.add_row("prompt tokens", f"{'' if p.tokens_exact else '~'}{p.prompt_tokens:,}")
        out.add_row("output tokens", f"{'' if p.output_tokens_exact else 'at most '}{p.output_tokens:,}")
        if p.tokens_evaluated is not None:
            bound = "" if p.tokens_evaluated_exact else "at most "
            reused = f"({p.tokens_reused or 0:,} prompt tokens reused)"
            out.add_row("tokens evaluated", f"{bound}{p.tokens_evaluated:,} after prefix reuse {reused}")
        out.add_row("cost", f"{_usd(p.usd)} ({p.price_note})")
    if found.failing:
        out.add_row("would fail", f"{found.failing:,} judgement(s)")
    for note in found.notes:
        out.add_row("note", note)
    if saved is not None:
        out.add_row("saved", f"{saved}: a run with the same -o shows this estimate beside what it spends")
    return out
