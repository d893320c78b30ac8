"""A judge report in the spirit of AlpacaEval's evaluator analysis, with 001's plots.

One call, :func:`judge_report`, gathers what decides whether a judge can be used on a benchmark:

* agreement with humans: correlations per level and method (000 App. B), per-system correlations
  P_i and their spread (001 eq. 2, Fig. 1) and the meta-correlation M (001 eq. 3, Fig. 3);
* bias toward the first position (004 §3.5) when pairwise verdicts are given;
* bias toward longer outputs: Spearman of the judge's scores with output length next to the
  humans' (a judge may follow length more than people do), and, over same-document pairs of
  different length, how often the judge and the humans score the longer output higher (AlpacaEval's
  "prefers longer");
* variance across repeats: mean standard deviation of repeated judgements of one item and the share
  of items whose repeats disagree;
* share of parsed answers;
* time and cost per 1,000 judgements from :class:`judgesdk.core.types.JudgeResult` latencies and usage.

:func:`write_report` writes PNG plots (per-system correlation spread, 001 Fig. 1; quality vs
alignment, 001 Fig. 3), an HTML page and the JSON. Plots need matplotlib (an optional dependency):
without it a :class:`MissingDependencyError` says how to install it.
"""

from __future__ import annotations

import html
import itertools
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel

from judgesdk.core import JudgeResult, MissingDependencyError
from judgesdk.meta.correlation import Convention, LevelCorrelation, correlate, correlation_table
from judgesdk.meta.items import Key, PairwiseJudgement, ScoredItem
from judgesdk.meta.reliability import (
    MetaCorrelation,
    PositionalBias,
    SystemCorrelations,
    meta_correlation,
    per_system_correlations,
    positional_bias,
)
from judgesdk.provider import CostModel, price_for
from judgesdk.stats import METHODS

__all__ = [
    "CostModel",
    "JudgeReport",
    "LengthBias",
    "MissingDependencyError",
    "RepeatVariance",
    "Throughput",
    "judge_report",
    "length_bias",
    "plot_quality_vs_alignment",
    "plot_system_spread",
    "repeat_variance",
    "throughput",
    "write_report",
]


class LengthBias(BaseModel):
    """Does the judge follow output length more than humans do?"""

    judge_vs_length: float | None  # Spearman(prediction, length)
    human_vs_length: float | None  # Spearman(human, length)
    excess: float | None  # judge - human
    judge_prefers_longer: float | None  # same-document pairs, judge not tied
    human_prefers_longer: float | None  # same-document pairs, humans not tied
    n_items: int
    n_pairs: int  # same-document pairs of different length


def _prefers_longer(pairs: Sequence[tuple[float, float, float, float]]) -> float | None:
    """Share of (len_a, len_b, s_a, s_b) with s_a != s_b where the longer output scores higher."""
    decided = [(la > lb) == (sa > sb) for la, lb, sa, sb in pairs if sa != sb]
    return sum(decided) / len(decided) if decided else None


def length_bias(items: Sequence[ScoredItem], lengths: Mapping[Key, float]) -> LengthBias:
    """Length bias of a pointwise judge over ``items`` (those with a prediction and a length);
    ``lengths`` maps (doc_id, system_id) to output length. Returns the :class:`LengthBias`: the judge's and the
    humans' Spearman with length, their difference, and how often each prefers the longer of two outputs of
    one document."""
    scored = [it for it in items if it.prediction is not None and it.key in lengths]
    length = [float(lengths[it.key]) for it in scored]
    judge = correlate([it.prediction for it in scored], length).value if scored else None  # type: ignore[misc]
    human = correlate([it.human for it in scored], length).value if scored else None
    by_doc: dict[str, list[ScoredItem]] = {}
    for it in scored:
        by_doc.setdefault(it.doc_id, []).append(it)
    pairs = [
        (lengths[a.key], lengths[b.key], a, b)
        for group in by_doc.values()
        for a, b in itertools.combinations(group, 2)
        if lengths[a.key] != lengths[b.key]
    ]
    return LengthBias(
        judge_vs_length=judge,
        human_vs_length=human,
        excess=None if judge is None or human is None else judge - human,
        judge_prefers_longer=_prefers_longer([(la, lb, a.prediction, b.prediction) for la, lb, a, b in pairs]),  # type: ignore[misc]
        human_prefers_longer=_prefers_longer([(la, lb, a.human, b.human) for la, lb, a, b in pairs]),
        n_items=len(scored),
        n_pairs=len(pairs),
    )


class RepeatVariance(BaseModel):
    """How much repeated judgements of the same item vary (AlpacaEval's "variance")."""

    n_items: int  # items with at least two parsed repeats
    mean_sd: float | None  # mean over items of the sample sd (ddof=1) of the repeats
    share_changed: float | None  # items whose repeats are not all equal
    n_unparsed_repeats: int


def repeat_variance(repeats: Mapping[Any, Sequence[float | None]]) -> RepeatVariance:
    """Variance across repeats; ``repeats`` maps an item id to its repeated scores (None = unparsed)."""
    sds, changed, unparsed = [], 0, 0
    for values in repeats.values():
        parsed = [v for v in values if v is not None]
        unparsed += len(values) - len(parsed)
        if len(parsed) >= 2:
            sds.append(float(np.std(parsed, ddof=1)))
            changed += len(set(parsed)) > 1
    return RepeatVariance(
        n_items=len(sds),
        mean_sd=float(np.mean(sds)) if sds else None,
        share_changed=changed / len(sds) if sds else None,
        n_unparsed_repeats=unparsed,
    )


class Throughput(BaseModel):
    """Time and cost per 1,000 judgements, from the results' latencies and usage."""

    n_judgements: int
    share_ok: float | None
    seconds_per_1000: float | None  # sum of latencies (sequential time), per 1,000
    input_tokens_per_1000: float | None
    output_tokens_per_1000: float | None
    usd_per_1000: float | None  # None without a CostModel
    share_cached: float | None


def throughput(results: Sequence[JudgeResult], cost: CostModel | None = None) -> Throughput:
    """Per-1,000 time, tokens and cost of ``results`` (cached results count at their recorded usage)."""
    n = len(results)
    if n == 0:
        return Throughput(
            n_judgements=0, share_ok=None, seconds_per_1000=None, input_tokens_per_1000=None,
            output_tokens_per_1000=None, usd_per_1000=None, share_cached=None,
        )
    scale = 1000 / n
    inp = sum(r.usage.input_tokens for r in results)
    out = sum(r.usage.output_tokens for r in results)
    usd: float | None = None
    if cost is not None:  # one price arithmetic for reports and budgets (prompt-cache reads and writes included)
        usd = sum((price_for(r.provider or "", r.model or "", cost)[0].cost(r.usage) for r in results), 0.0)  # type: ignore[union-attr]
    return Throughput(
        n_judgements=n,
        share_ok=sum(r.status == "ok" for r in results) / n,
        seconds_per_1000=sum(r.latency_s for r in results) * scale,
        input_tokens_per_1000=inp * scale,
        output_tokens_per_1000=out * scale,
        usd_per_1000=None if usd is None else usd * scale,
        share_cached=sum(r.cached for r in results) / n,
    )


class JudgeReport(BaseModel):
    """Everything :func:`judge_report` measured; sections are None when their input was not given."""

    n_items: int
    n_parsed: int
    share_parsed: float
    agreement: list[LevelCorrelation]
    per_system: list[SystemCorrelations]
    meta: list[MetaCorrelation]
    positional: PositionalBias | None = None
    length: LengthBias | None = None
    repeats: RepeatVariance | None = None
    throughput: Throughput | None = None


def judge_report(
    items: Sequence[ScoredItem],
    *,
    levels: Sequence[str] = ("sample", "summary", "system"),
    methods: Sequence[str] = METHODS,
    convention: str | Convention = "skip-and-count",
    lengths: Mapping[Key, float] | None = None,
    repeats: Mapping[Any, Sequence[float | None]] | None = None,
    pairwise: Sequence[PairwiseJudgement] | None = None,
    results: Sequence[JudgeResult] | None = None,
    cost: CostModel | None = None,
) -> JudgeReport:
    """Evaluator analysis of one judge on one benchmark dimension (sections in the module doc).

    ``items`` are the judge's items with their human scores; agreement is computed at ``levels`` x ``methods``
    under ``convention``, and per-system and meta correlations per method. The optional sections are computed
    only when their input is given: ``lengths`` ((doc_id, system_id) -> output length) for length bias,
    ``repeats`` (item id -> repeated scores) for variance across repeats, ``pairwise`` verdicts for positional
    bias, and ``results`` (with ``cost``, prices for the cost figures) for time, tokens and cost per 1,000.
    Returns the :class:`JudgeReport`.
    """
    n_parsed = sum(it.prediction is not None for it in items)
    return JudgeReport(
        n_items=len(items),
        n_parsed=n_parsed,
        share_parsed=n_parsed / len(items) if items else 0.0,
        agreement=correlation_table(items, levels, methods, convention),
        per_system=[per_system_correlations(items, m, convention) for m in methods],
        meta=[meta_correlation(items, m, convention) for m in methods],
        positional=positional_bias(pairwise) if pairwise else None,
        length=length_bias(items, lengths) if lengths is not None else None,
        repeats=repeat_variance(repeats) if repeats is not None else None,
        throughput=throughput(results, cost) if results is not None else None,
    )


# -------------------------------------------------------------------------------------------------
# Plots and files
# -------------------------------------------------------------------------------------------------


def require_matplotlib():  # noqa: ANN201 - returns matplotlib.pyplot
    """matplotlib.pyplot with the Agg backend; MissingDependencyError when matplotlib is not installed."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise MissingDependencyError(
            "plots need matplotlib, which is not installed: pip install matplotlib (or run without --report)"
        ) from exc
    return plt


def plot_system_spread(series: Mapping[str, SystemCorrelations], path: str | Path, title: str = "") -> Path:
    """Box plot of per-system correlations P_i, one box per label of ``series`` (label -> its per-system
    correlations; 001 Fig. 1), saved as PNG at ``path`` (returned); ``title`` replaces the default title. Needs
    matplotlib (else :class:`~judgesdk.core.errors.MissingDependencyError`)."""
    plt = require_matplotlib()
    labels = list(series)
    data = [[g.value for g in series[k].systems if g.value is not None] for k in labels]
    fig, ax = plt.subplots(figsize=(1.8 + 1.4 * len(labels), 4))
    ax.boxplot(data, showmeans=True)
    ax.set_xticks(range(1, len(labels) + 1), labels)
    for i, values in enumerate(data, start=1):
        ax.scatter(np.full(len(values), i), values, s=12, alpha=0.6)
    ax.axhline(0, color="grey", linewidth=0.5)
    ax.set_ylabel("per-system correlation P_i (001 eq. 2)")
    ax.set_title(title or "Spread of per-system correlations with humans")
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


def plot_quality_vs_alignment(meta: MetaCorrelation, path: str | Path, title: str = "") -> Path:
    """Scatter of system quality Q_i against alignment P_i, labelled, with M in the title (001 Fig. 3), read
    from ``meta`` and saved as PNG at ``path`` (returned); ``title`` replaces the default title. Needs
    matplotlib (else :class:`~judgesdk.core.errors.MissingDependencyError`)."""
    plt = require_matplotlib()
    systems = [s for s, v in meta.performance.items() if v is not None]
    q = [meta.quality[s] for s in systems]
    p = [meta.performance[s] for s in systems]
    fig, ax = plt.subplots(figsize=(6, 4.5))
    ax.scatter(q, p)
    for s, x, y in zip(systems, q, p):
        ax.annotate(s, (x, y), textcoords="offset points", xytext=(4, 3), fontsize=8)
    ax.set_xlabel("system quality Q_i: mean human score (001 eq. 1)")
    ax.set_ylabel(f"P_i: {meta.method} with humans (001 eq. 2)")
    m = "undefined" if meta.value is None else f"{meta.value:.3f}"
    ax.set_title(title or f"Quality vs alignment, meta-correlation M = {m} (001 eq. 3)")
    fig.tight_layout()
    out = Path(path)
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


def _fmt(v: object) -> str:
    if v is None:
        return "-"
    if isinstance(v, float):
        return f"{v:.4f}"
    return html.escape(str(v))


def _html_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    head = "".join(f"<th>{html.escape(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{_fmt(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><tr>{head}</tr>{body}</table>"


def write_report(report: JudgeReport, directory: str | Path, title: str = "Judge report") -> list[Path]:
    """Write ``system_spread.png``, ``quality_vs_alignment_<method>.png``, ``report.html`` and ``report.json``.

    The files of ``report`` go in ``directory`` (created when missing), the page headed by ``title``; returns
    their paths. Raises :class:`MissingDependencyError` (before writing anything) when matplotlib is missing.
    """
    require_matplotlib()
    out_dir = Path(directory)
    out_dir.mkdir(parents=True, exist_ok=True)
    files = [plot_system_spread({s.method: s for s in report.per_system}, out_dir / "system_spread.png")]
    files += [plot_quality_vs_alignment(m, out_dir / f"quality_vs_alignment_{m.method}.png") for m in report.meta]
    sections = [
        f"<h1>{html.escape(title)}</h1>",
        f"<p>{report.n_parsed} of {report.n_items} items parsed ({report.share_parsed:.1%}).</p>",
        "<h2>Agreement with humans</h2>",
        _html_table(
            ["level", "method", "value", "p", "items", "groups", "skipped", "definition"],
            [[a.level, a.method, a.value, a.p_value, a.n_items, a.n_groups, a.skipped or "", a.definition] for a in report.agreement],
        ),
        "<h2>Per-system correlations (001 eq. 2) and meta-correlation (001 eq. 3)</h2>",
        _html_table(
            ["method", "median P_i", "min", "max", "range", "undefined", "M", "p(M)"],
            [
                [s.method, s.spread.median, s.spread.min, s.spread.max, s.spread.range, s.n_undefined, m.value, m.p_value]
                for s, m in zip(report.per_system, report.meta)
            ],
        ),
    ]
    for name in ("positional", "length", "repeats", "throughput"):
        section = getattr(report, name)
        if section is not None:
            sections.append(f"<h2>{name}</h2>" + _html_table(["measure", "value"], list(section.model_dump().items())))
    sections += [f'<h2>{p.stem}</h2><img src="{p.name}" alt="{p.stem}">' for p in files]
    page = out_dir / "report.html"
    page.write_text(
        "<!doctype html><meta charset='utf-8'><title>" + html.escape(title) + "</title>"
        "<style>body{font-family:sans-serif;max-width:60em;margin:auto}td,th{padding:2px 8px;border-bottom:1px solid #ddd}</style>"
        + "\n".join(sections),
        encoding="utf-8",
    )
    data = out_dir / "report.json"
    data.write_text(report.model_dump_json(indent=2), encoding="utf-8")
    return [*files, page, data]
