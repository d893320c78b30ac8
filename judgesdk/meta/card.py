"""Judge cards: what one judge configuration is worth on a labelled set, in one Markdown + JSON file.

A card (:class:`Card`) is built from the judge's results file for each criterion (a ``judgesdk score`` /
``judgesdk card`` ledger, or any predictions file ``judgesdk meta-eval`` reads) and the human file, and holds,
per criterion:

* **agreement with humans** at the levels ``meta-eval`` reports (sample, summary, system; Spearman, Pearson,
  Kendall) with bootstrap CIs over documents. They are :func:`judgesdk.meta.evaluation.meta_evaluate`'s
  figures, computed by the same call ``judgesdk meta-eval`` makes on the same files (predictions read with
  :func:`~judgesdk.meta.readers.load_predictions`, the scale from
  :func:`~judgesdk.meta.evaluation.scale_for`), so they are equal to its output, digit for digit;
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
  (:func:`~judgesdk.meta.report.repeat_variance`), from a row's ``samples``, else from a sampled label
  distribution (``distribution.method == "sampling"``: counts = probability x parsed samples); "n/a" with
  the reason otherwise;
* **length bias**: Spearman of the judge's score with output length (words) minus the humans' (meta-eval's
  :class:`~judgesdk.meta.report.LengthBias`);
* **tokens and time per 1,000 items** from the rows' ``usage`` and ``latency_s`` (meta-eval's
  :class:`~judgesdk.meta.report.Throughput`);
* **which fused fit** (domain and variant) scored the rows, how many ``auto`` judged by its fallback and how
  many items lay outside every fit's domain (:mod:`judgesdk.meta.card_fits`);

and, for the whole card, the judge's identity (provider, model id, the model file's hash or the API model
id as the provider names it, the SDK version) and the labelled selection (data file, subset, text view).

This module owns the card's content (:class:`Card`, the JSON a card file holds, and how it is computed; the
ceiling, parse and self-consistency measures in :mod:`judgesdk.meta.card_measures`);
:mod:`judgesdk.meta.card_files` writes it as ``STEM.json`` + ``STEM.md``; running a judge to produce the
results is ``judgesdk card``'s (:mod:`judgesdk.cli.card`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field

from judgesdk.core import InputError
from judgesdk.meta.card_fits import FitUsage, fit_usage
from judgesdk.meta.card_measures import HumanCeiling, ParseCoverage, SelfConsistency, human_ceiling, parse_coverage, self_consistency
from judgesdk.meta.datasets import HumanRecord, human_scores
from judgesdk.meta.evaluation import LevelResult, load_predictions, meta_evaluate, scale_for
from judgesdk.meta.items import Key, PairwiseJudgement, ScoredItem
from judgesdk.meta.reliability import PositionalBias, positional_bias
from judgesdk.meta.report import LengthBias, Throughput
from judgesdk.records import ResultRow, read_results

log = logging.getLogger("judgesdk.meta")
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
    """A judge card (module docstring): which judge (``judge``), on which labelled set (``data``), and one
    :class:`CriterionCard` section per criterion, with a ``title``, when it was ``created`` and free ``notes``;
    written as Markdown and JSON by :func:`~judgesdk.meta.card_files.write_card`."""

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


def read_card_rows(path: str | Path) -> dict[Key, ResultRow]:
    """The last row per (doc_id, system_id) of a results file, typed (as ``meta-eval`` keeps the last
    line of a repeated key); an :class:`InputError` when the file answers several questions (criteria, or
    one criterion asked under several judge configurations): meta-eval would mix their scores."""
    read = read_results(path)
    unkeyed = [(number, row) for number, row in enumerate(read.rows, start=1) if row.key is None]
    rows = [row for row in read.rows if row.key is not None]
    if unkeyed:  # a served request that named no doc_id/system_id: counted and skipped, as meta-eval skips it
        number, first = unkeyed[0]
        if not rows:
            raise InputError(f"{path}: row {number} (id {first.id!r}) has no doc_id and system_id: a card joins human scores on them")
        log.warning("%s: %d row(s) without doc_id and system_id skipped (first: row %d, id %r)", path, len(unkeyed), number, first.id)
    asked = {(r.criterion, r.asked) for r in rows if r.criterion is not None or r.asked is not None}
    if len(asked) > 1:
        found = ", ".join(sorted(f"{c or '?'} ({a or 'no asked key'})" for c, a in asked))
        raise InputError(
            f"results file {path} holds rows of {len(asked)} questions ({found}); a card, like meta-eval, reads one: "
            "give each criterion and judge configuration its own results file"
        )
    out: dict[Key, ResultRow] = {}
    for row in rows:
        out[row.key] = row  # type: ignore[index]  # checked above
    return out


def _verdicts(rows: Mapping[Key, ResultRow], where: str) -> list[PairwiseJudgement]:
    """The head-to-head verdicts the rows carry (``comparisons``: the ordered comparisons in which the row's
    output was shown first), as meta-eval's :class:`PairwiseJudgement`."""
    out = []
    for (doc, _), row in rows.items():
        for c in row.passed("comparisons") or []:
            if not isinstance(c, dict) or c.get("winner") not in ("first", "second", "tie") or c.get("first") is None or c.get("second") is None:
                if isinstance(c, dict) and c.get("winner") is None:
                    continue  # an unclear verdict counts toward neither position (as meta-eval's reader)
                raise InputError(f"{where}: a row's comparisons must be objects with first, second and winner (first/second/tie), got {c!r}")
            out.append(PairwiseJudgement(doc_id=doc, first=str(c["first"]), second=str(c["second"]), winner=c["winner"]))
    return out


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
    ``selected`` the keys of the labelled selection the judge was run on (all of the file's when None).
    ``dimension`` is the criterion's human score, ``results_file`` the judge's results (or predictions) file;
    ``method`` names the judge's method (for the positional-bias and self-consistency notes; empty: read from
    the rows). The agreement figures are :func:`~judgesdk.meta.evaluation.meta_evaluate`'s at ``levels``,
    ``methods`` and ``convention``, with ``bootstrap`` resamples (0: no CIs; negative is an
    :class:`~judgesdk.core.errors.InputError`) seeded by ``seed``; ``human_file`` is the human file's path as
    the card and its meta-eval command name it."""
    if bootstrap < 0:
        raise InputError(f"--bootstrap must be 0 or more resamples, got {bootstrap}")
    path = Path(results_file)
    scale, scale_source = scale_for(records, dimension, None)
    preds = load_predictions(path, scale, "rts", dimension=dimension)  # exactly what judgesdk meta-eval reads
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
            float(c["p_first"]) for k, row in rows.items() if k in joined_keys for c in row.passed("comparisons") or []
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
        parse=parse_coverage(result, [kept[k] for k in joined_keys], len(chosen), rows),
        positional=positional,
        positional_note=note,
        positional_mean_p_first=mean_p_first,
        self_consistency=self_consistency(result, rows, joined_keys, scale, method or "of the rows"),
        length=result.length,
        throughput=result.throughput,
        meta_eval_command=command,
        fits=fit_usage(row for key, row in rows.items() if key in joined_keys),
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
    """A card from its parts: its ``title``, the ``judge``, the labelled set ``data``, one section per criterion
    (``sections``, at least one, else :class:`~judgesdk.core.errors.InputError`), when it was ``created`` and
    free ``notes``. The providers, methods, questions asked, runtimes and templates named by the sections'
    result rows are filled into ``judge`` where it lacks them."""
    if not sections:
        raise InputError("a card needs at least one criterion")
    methods: dict[str, int] = dict(judge.methods_in_rows)
    providers = list(judge.providers)
    asked = list(judge.asked)
    runtimes, templates = list(judge.runtimes), list(judge.templates)
    for section in sections:
        for row in read_card_rows(section.results_file).values():
            provenance = row.passed("provenance")
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
