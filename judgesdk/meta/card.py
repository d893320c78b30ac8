"""Judge cards: what one judge configuration is worth on a labelled set, in one Markdown + JSON file.

A card (:class:`Card`) is built from the judge's results file for each criterion (a ``judgesdk score`` /
``judgesdk card`` ledger, or any predictions file ``judgesdk meta-eval`` reads) and the human file, and holds,
per criterion:

* **agreement with humans** at the levels ``meta-eval`` reports (sample, summary, system; Spearman, Pearson,
  Kendall) with bootstrap CIs over documents. They are :func:`judgesdk.meta.evaluate.meta_evaluate`'s
  figures, computed by the same call ``judgesdk meta-eval`` makes on the same files (predictions read with
  :func:`~judgesdk.meta.readers.load_predictions`, the scale from
  :func:`~judgesdk.meta.evaluate.scale_for`), so they are equal to its output, digit for digit;
* **the human ceiling**: leave-one-annotator-out agreement where the human file has per-annotator scores
  (``annotator_scores``): each annotator's scores against the mean of the other annotators, at the same
  levels, methods and convention (:func:`~judgesdk.meta.correlation.level_correlation`), averaged over
  annotators; the card names the items it rests on, and gives the judge's figure on those same items
  beside it (the judge is compared with the mean of all annotators there, an annotator with the mean of
  the others);
* **parse and coverage**: statuses of the joined rows, the share with a score, the items of the labelled
  selection without a row, and the label distributions' probability mass (``coverage``);
* **positional bias** for pairwise methods (004 §3.5, :func:`~judgesdk.meta.reliability.positional_bias`
  over the verdicts the rows carry); "n/a" otherwise;
* **self-consistency** where the method samples: the spread of repeated judgements of one item
  (:func:`~judgesdk.meta.judge_report.repeat_variance`), from a row's ``samples``, else from a sampled label
  distribution (``distribution.method == "sampling"``: counts = probability x parsed samples); "n/a" with
  the reason otherwise;
* **length bias**: Spearman of the judge's score with output length (words) minus the humans' (meta-eval's
  :class:`~judgesdk.meta.judge_report.LengthBias`);
* **tokens and time per 1,000 items** from the rows' ``usage`` and ``latency_s`` (meta-eval's
  :class:`~judgesdk.meta.judge_report.Throughput`);
* **which fused fit** (domain and variant) scored the rows, how many ``auto`` judged by its fallback and how
  many items lay outside every fit's domain (:mod:`judgesdk.meta.card_fits`);

and, for the whole card, the judge's identity (provider, model id, the model file's hash or the API model
id as the provider names it, the SDK version) and the labelled selection (data file, subset, text view).

This module owns the card's content (:class:`Card`, the JSON a card file holds, and how it is computed);
:mod:`judgesdk.meta.card_files` writes it as ``STEM.json`` + ``STEM.md``; running a judge to produce the
results is ``judgesdk card``'s (:mod:`judgesdk.cli.card`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from judgesdk.core.errors import InputError
from judgesdk.core.types import Scale
from judgesdk.meta.card_fits import FitUsage, fit_usage
from judgesdk.meta.correlation import level_correlation
from judgesdk.meta.datasets import HumanRecord, human_scores
from judgesdk.meta.evaluate import LevelResult, MetaEvalResult, load_predictions, meta_evaluate, scale_for
from judgesdk.meta.items import Key, PairwiseJudgement, ScoredItem
from judgesdk.meta.judge_report import LengthBias, RepeatVariance, Throughput, repeat_variance
from judgesdk.meta.reliability import PositionalBias, positional_bias
from judgesdk.records import ResultRow, read_results

__all__ = [
    "CARD_FORMAT",
    "Card",
    "CriterionCard",
    "HumanCeiling",
    "JudgeIdentity",
    "LabelledSet",
    "ParseCoverage",
    "SelfConsistency",
    "build_card",
    "criterion_card",
    "human_ceiling",
    "read_card_rows",
]

CARD_FORMAT = "judgesdk.card/1"


# -------------------------------------------------------------------------------------------------
# The format
# -------------------------------------------------------------------------------------------------


class JudgeIdentity(BaseModel):
    """What produced the scores: enough to tell two judges apart and to rebuild this one."""

    method: str  # as asked (e.g. auto, direct, sampling, pairwise/symmetric/48)
    methods_in_rows: dict[str, int] = Field(default_factory=dict)  # what the rows say produced each score
    providers: list[str] = Field(default_factory=list)  # provider/model as the rows name them
    model_identity: str = ""  # the model file's hash (local) or the API model id, as the provider reports it
    identity_source: str = ""  # where model_identity came from
    sdk_version: str = ""
    options: dict[str, Any] = Field(default_factory=dict)  # method options, samples, template... that change answers
    runtimes: list[str] = Field(default_factory=list)  # from the rows' provenance, where they carry it
    templates: list[str] = Field(default_factory=list)  # template id@version#hash, from the rows' provenance
    asked: list[str] = Field(default_factory=list)  # the results files' question keys (criterion/method/config hash)


class LabelledSet(BaseModel):
    """The labelled items the card is about."""

    human_file: str
    dataset: str = ""
    subset: str  # in words: which documents and systems
    n_items: int
    n_documents: int
    n_systems: int
    text: str = ""  # the text view the judge read (natural / published)


class CeilingLevel(BaseModel):
    """One level x method of the human ceiling: each annotator against the mean of the others."""

    level: str
    method: str
    value: float | None  # mean over annotators of the defined per-annotator values
    per_annotator: list[float | None]
    judge: float | None  # the judge (vs the mean of all annotators) on the same items, same level and method


class HumanCeiling(BaseModel):
    """Leave-one-annotator-out agreement, where the human file has per-annotator scores."""

    available: bool
    reason: str = ""  # why not, when not available
    n_items: int = 0
    n_documents: int = 0
    systems: list[str] = Field(default_factory=list)
    n_annotators: int = 0
    rests_on: str = ""  # the items, in words
    convention: str = ""
    levels: list[CeilingLevel] = Field(default_factory=list)


class ParseCoverage(BaseModel):
    """How many items got a usable score, and how much probability mass the label distributions held."""

    n_selected: int  # labelled items in the selection (human score on this criterion)
    n_rows: int  # of those, items with a row in the results
    n_scored: int
    share_scored: float | None  # n_scored / n_selected
    status: dict[str, int]
    n_with_distribution: int
    mean_coverage: float | None
    min_coverage: float | None
    share_low_coverage: float | None  # status low_coverage / rows


class SelfConsistency(BaseModel):
    """Agreement of a judge with itself across repeated samples of one item (or why there is none)."""

    applicable: bool
    reason: str = ""
    source: str = ""  # "samples" (the rows' repeated scores) or "sampled distributions"
    samples_per_item: float | None = None
    n_items_sampled: int | None = None  # items whose rows carry repeated samples (any parsed)
    variance: RepeatVariance | None = None
    mean_modal_share: float | None = None  # mean over items with >= 2 parsed samples of the share that gave the modal answer


class CriterionCard(BaseModel):
    criterion: str
    results_file: str
    scale: list[float]
    scale_source: str
    n_items: int  # joined to human scores
    agreement: list[LevelResult]  # meta_evaluate's levels: equal to judgesdk meta-eval's
    bootstrap: int
    seed: int
    convention: str
    ceiling: HumanCeiling
    parse: ParseCoverage
    positional: PositionalBias | None = None
    positional_note: str = ""
    positional_mean_p_first: float | None = None  # mean P(first better) of the verdicts that carry it (004 eq. 3)
    self_consistency: SelfConsistency
    length: LengthBias | None = None
    throughput: Throughput | None = None
    run_items_judged: int = 0  # items judged by the invocation that wrote the card (0: all from earlier runs)
    run_wall_seconds: float | None = None  # its wall-clock time judging them
    run_concurrency: int | None = None
    meta_eval_command: str = ""  # reproduces the agreement figures
    fits: FitUsage | None = None  # which fused fit (domain) scored the rows, fallbacks, items outside the domain


class Card(BaseModel):
    format: str = CARD_FORMAT
    title: str
    created: str = ""
    judge: JudgeIdentity
    data: LabelledSet
    criteria: list[CriterionCard]
    notes: list[str] = Field(default_factory=list)


# -------------------------------------------------------------------------------------------------
# Reading the results
# -------------------------------------------------------------------------------------------------


def read_card_rows(path: str | Path) -> dict[Key, tuple[ResultRow, dict[str, Any]]]:
    """The last row per (doc_id, system_id) of a results file, typed and raw (as ``meta-eval`` keeps the last
    line of a repeated key); an :class:`InputError` when the file answers several questions (criteria, or
    one criterion asked under several judge configurations): meta-eval would mix their scores."""
    read = read_results(path)
    rows = list(zip(read.rows, read.raw))
    for number, (row, _) in enumerate(rows, start=1):
        if row.key is None:
            raise InputError(f"{path}: row {number} (id {row.id!r}) has no doc_id and system_id: a card joins human scores on them")
    asked = {(r.criterion, r.asked) for r, _ in rows if r.criterion is not None or r.asked is not None}
    if len(asked) > 1:
        found = ", ".join(sorted(f"{c or '?'} ({a or 'no asked key'})" for c, a in asked))
        raise InputError(
            f"results file {path} holds rows of {len(asked)} questions ({found}); a card, like meta-eval, reads one: "
            "give each criterion and judge configuration its own results file"
        )
    out: dict[Key, tuple[ResultRow, dict[str, Any]]] = {}
    for row, raw in rows:
        out[row.key] = (row, raw)  # type: ignore[index]  # checked above
    return out


def _verdicts(rows: Mapping[Key, tuple[ResultRow, dict[str, Any]]], where: str) -> list[PairwiseJudgement]:
    """The head-to-head verdicts the rows carry (``comparisons``: the ordered comparisons in which the row's
    output was shown first), as meta-eval's :class:`PairwiseJudgement`."""
    out = []
    for (doc, _), (_, raw) in rows.items():
        for c in raw.get("comparisons") or []:
            if not isinstance(c, dict) or c.get("winner") not in ("first", "second", "tie") or c.get("first") is None or c.get("second") is None:
                if isinstance(c, dict) and c.get("winner") is None:
                    continue  # an unclear verdict counts toward neither position (as meta-eval's reader)
                raise InputError(f"{where}: a row's comparisons must be objects with first, second and winner (first/second/tie), got {c!r}")
            out.append(PairwiseJudgement(doc_id=doc, first=str(c["first"]), second=str(c["second"]), winner=c["winner"]))
    return out


# -------------------------------------------------------------------------------------------------
# The measures
# -------------------------------------------------------------------------------------------------


def human_ceiling(
    records: Sequence[HumanRecord],
    dimension: str,
    keys: set[Key],
    judge_items: Sequence[ScoredItem],
    *,
    levels: Sequence[str],
    methods: Sequence[str],
    convention: str = "skip-and-count",
) -> HumanCeiling:
    """Leave-one-annotator-out agreement on the items of ``keys`` that have per-annotator scores on
    ``dimension`` (module docstring). Items with another number of annotators than the most common one are
    left out (the mean of "the others" would mean different things); the judge's figure is computed on the
    same items."""
    scored: dict[Key, list[float]] = {}
    for r in records:
        values = (r.annotator_scores or {}).get(dimension)
        if r.key in keys and values and r.key not in scored:
            scored[r.key] = [float(v) for v in values]
    if not scored:
        return HumanCeiling(available=False, reason=f"no item of the selection has per-annotator scores on {dimension!r}")
    counts: dict[int, int] = {}
    for values in scored.values():
        counts[len(values)] = counts.get(len(values), 0) + 1
    k = max(counts, key=lambda n: (counts[n], n))
    if k < 2:
        return HumanCeiling(available=False, reason=f"the items have {k} annotator score per item on {dimension!r}: no one to leave out")
    scored = {key: values for key, values in scored.items() if len(values) == k}
    per_annotator: list[list[ScoredItem]] = []
    for a in range(k):
        per_annotator.append(
            [
                ScoredItem(doc_id=doc, system_id=system, human=(sum(v) - v[a]) / (k - 1), prediction=v[a])
                for (doc, system), v in scored.items()
            ]
        )
    judged = [it for it in judge_items if it.key in scored]
    out = []
    for lv in levels:
        for m in methods:
            level_values = [level_correlation(items, lv, m, convention).value for items in per_annotator]
            defined = [v for v in level_values if v is not None]
            judge = _safe_level(judged, lv, m, convention)
            out.append(
                CeilingLevel(
                    level=lv, method=m, value=sum(defined) / len(defined) if defined else None, per_annotator=level_values, judge=judge,
                )
            )  # fmt: skip
    docs = sorted({d for d, _ in scored})
    systems = sorted({s for _, s in scored})
    left_out = sum(n for size, n in counts.items() if size != k)
    rests_on = (
        f"{len(scored)} items with {k} annotator scores each on {dimension} ({len(docs)} documents x systems "
        f"{', '.join(systems)})" + (f"; {left_out} items with another number of annotators left out" if left_out else "")
    )
    return HumanCeiling(
        available=True, n_items=len(scored), n_documents=len(docs), systems=systems, n_annotators=k,
        rests_on=rests_on, convention=convention, levels=out,
    )  # fmt: skip


def _safe_level(items: Sequence[ScoredItem], level: str, method: str, convention: str) -> float | None:
    if not any(it.prediction is not None for it in items):
        return None
    return level_correlation(items, level, method, convention).value


def _parse_coverage(result: MetaEvalResult, preds: Sequence[Any], n_selected: int, rows: Mapping[Key, tuple[ResultRow, dict[str, Any]]]) -> ParseCoverage:
    n_rows = result.counts.join.n_joined
    n_scored = n_rows - result.counts.join.n_unparsed
    coverages = [p.coverage for p in preds if p.coverage is not None]
    joined = {p.key for p in preds}
    found: dict[str, int] = {}
    for key in joined:  # the rows' own statuses (meta-eval's counts say only whether a score was read)
        row = rows[key][0] if key in rows else None
        status = (row.status if row is not None else None) or next(p.status for p in preds if p.key == key)
        found[status] = found.get(status, 0) + 1
    status = dict(sorted(found.items()))
    low = found.get("low_coverage", 0)
    return ParseCoverage(
        n_selected=n_selected,
        n_rows=n_rows,
        n_scored=n_scored,
        share_scored=n_scored / n_selected if n_selected else None,
        status=status,
        n_with_distribution=len(coverages),
        mean_coverage=sum(coverages) / len(coverages) if coverages else None,
        min_coverage=min(coverages) if coverages else None,
        share_low_coverage=low / n_rows if n_rows else None,
    )


def _label_value(label: str, scale: Scale) -> float | None:
    if label in scale.labels:
        return scale.value_of(label)
    try:
        value = float(label)
    except ValueError:
        return None
    return value if math.isfinite(value) else None


def self_consistency(result: MetaEvalResult, rows: Mapping[Key, tuple[ResultRow, dict[str, Any]]], keys: set[Key], scale: Scale, method: str) -> SelfConsistency:
    """Spread across repeated samples: the rows' ``samples`` (meta-eval's repeats), else sampled distributions."""
    if result.repeats is not None:
        counts = [len(row.samples or []) for key, (row, _) in rows.items() if key in keys and row.samples]
        return SelfConsistency(
            applicable=True, source="samples", variance=result.repeats, n_items_sampled=len(counts),
            samples_per_item=sum(counts) / len(counts) if counts else None,
        )  # fmt: skip
    repeats: dict[Key, list[float | None]] = {}
    modal: list[float] = []
    for key, (row, raw) in rows.items():
        dist = raw.get("distribution")
        if key not in keys or not isinstance(dist, dict) or dist.get("method") != "sampling" or not isinstance(dist.get("probs"), dict):
            continue
        n = int(dist.get("n_samples") or 0)
        n_unparsed = int(dist.get("n_unparsed") or 0)
        parsed = n - n_unparsed
        values: list[float | None] = []
        for label, p in dist["probs"].items():
            value = _label_value(str(label), scale)
            count = round(float(p) * parsed)
            if value is not None and count:
                values.extend([value] * count)
        if len(values) != parsed:  # the probabilities do not come from `parsed` whole samples: no counts to rebuild
            raise InputError(f"row {row.id or key}: its sampled distribution does not add up to {parsed} parsed samples")
        repeats[key] = values + [None] * n_unparsed
        if parsed >= 2:  # the items the spread is measured on
            modal.append(max(float(p) for p in dist["probs"].values()))
    if not repeats:
        return SelfConsistency(
            applicable=False,
            reason=f"method {method} gives one deterministic judgement per item (no repeated samples: the rows carry "
            "neither 'samples' nor a sampled distribution)",
        )
    sizes = [len(v) for v in repeats.values()]
    return SelfConsistency(
        applicable=True, source="sampled distributions", samples_per_item=sum(sizes) / len(sizes), n_items_sampled=len(repeats),
        variance=repeat_variance(repeats), mean_modal_share=sum(modal) / len(modal) if modal else None,
    )  # fmt: skip


def criterion_card(
    records: Sequence[HumanRecord],
    dimension: str,
    results_file: str | Path,
    *,
    selected: set[Key] | None = None,
    method: str = "",
    levels: Sequence[str] = ("sample", "summary", "system"),
    methods: Sequence[str] = ("spearman", "pearson", "kendall"),
    convention: str = "skip-and-count",
    bootstrap: int = 1000,
    seed: int = 0,
    human_file: str = "",
) -> CriterionCard:
    """The card section of one criterion. ``records`` is the whole human file (as meta-eval reads it);
    ``selected`` the keys of the labelled selection the judge was run on (all of the file's when None)."""
    if bootstrap < 0:
        raise InputError(f"--bootstrap must be 0 or more resamples, got {bootstrap}")
    path = Path(results_file)
    scale, scale_source = scale_for(records, dimension, None)
    preds = load_predictions(path, scale, "rts")  # exactly what judgesdk meta-eval reads
    result = meta_evaluate(
        records, preds, dimension, levels=levels, methods=methods, convention=convention, bootstrap=bootstrap, seed=seed,
        scale=scale, pairwise=None,
        labels={"human_file": human_file, "predictions_file": str(path), "parse": "rts", "scale_source": scale_source},
    )  # fmt: skip
    rows = read_card_rows(path)
    human = human_scores(records, dimension)
    chosen = set(human) if selected is None else {k for k in selected if k in human}
    kept = {p.key: p for p in preds}  # the last line of a key, as meta-eval keeps
    joined_keys = {k for k in kept if k in human}
    verdicts = _verdicts({k: v for k, v in rows.items() if k in joined_keys}, str(path))
    positional, note, mean_p_first = None, "", None
    if verdicts:
        positional = positional_bias(verdicts)  # what meta-eval --pairwise computes from the same verdicts
        p_first = [
            float(c["p_first"]) for k, (_, raw) in rows.items() if k in joined_keys for c in raw.get("comparisons") or []
            if isinstance(c, dict) and isinstance(c.get("p_first"), (int, float)) and not isinstance(c.get("p_first"), bool)
        ]  # fmt: skip
        mean_p_first = sum(p_first) / len(p_first) if p_first else None
    elif method.startswith("pairwise"):
        note = "the rows carry no readable head-to-head verdicts"
    else:
        note = f"n/a: method {method or 'of the rows'} scores each output alone (positional bias is a property of pairwise comparisons)"
    judge_items = [ScoredItem(doc_id=k[0], system_id=k[1], human=human[k], prediction=kept[k].value) for k in human if k in kept]
    ceiling = human_ceiling(records, dimension, joined_keys, judge_items, levels=levels, methods=methods, convention=convention)
    command = (
        f"judgesdk meta-eval --human {human_file or '<human file>'} --predictions {path} --dimension {dimension} "
        f"--level {','.join(levels)} --method {','.join(methods)} --convention {convention} --bootstrap {bootstrap} --seed {seed}"
    )
    return CriterionCard(
        criterion=dimension,
        results_file=str(path),
        scale=list(scale.values),
        scale_source=scale_source,
        n_items=result.counts.join.n_joined,
        agreement=result.levels,
        bootstrap=bootstrap,
        seed=seed,
        convention=convention,
        ceiling=ceiling,
        parse=_parse_coverage(result, [kept[k] for k in joined_keys], len(chosen), rows),
        positional=positional,
        positional_note=note,
        positional_mean_p_first=mean_p_first,
        self_consistency=self_consistency(result, rows, joined_keys, scale, method or "of the rows"),
        length=result.length,
        throughput=result.throughput,
        meta_eval_command=command,
        fits=fit_usage(raw for key, (_, raw) in rows.items() if key in joined_keys),
    )


def build_card(
    title: str,
    judge: JudgeIdentity,
    data: LabelledSet,
    sections: Sequence[CriterionCard],
    *,
    created: str = "",
    notes: Sequence[str] = (),
) -> Card:
    """A card from its parts; the rows' providers and methods are filled into ``judge`` where it lacks them."""
    if not sections:
        raise InputError("a card needs at least one criterion")
    methods: dict[str, int] = dict(judge.methods_in_rows)
    providers = list(judge.providers)
    asked = list(judge.asked)
    runtimes, templates = list(judge.runtimes), list(judge.templates)
    for section in sections:
        for row, raw in read_card_rows(section.results_file).values():
            provenance = raw.get("provenance")
            provenance = provenance if isinstance(provenance, dict) else {}
            served = provenance.get("served")
            served = served if isinstance(served, dict) else {}
            if served.get("runtime") and str(served["runtime"]) not in runtimes:
                runtimes.append(str(served["runtime"]))
            for template in provenance.get("templates") or []:
                if str(template) not in templates:
                    templates.append(str(template))
            if row.method and not judge.methods_in_rows:
                methods[row.method] = methods.get(row.method, 0) + 1
            extra = row.model_extra or {}
            name = "/".join(str(x) for x in (extra.get("provider"), extra.get("model")) if x)
            if name and name not in providers:
                providers.append(name)
            if row.asked and row.asked not in asked:
                asked.append(row.asked)
    judge = judge.model_copy(update={"methods_in_rows": methods, "providers": providers, "asked": asked, "runtimes": runtimes, "templates": templates})
    return Card(title=title, created=created, judge=judge, data=data, criteria=list(sections), notes=list(notes))
