"""Run a judge over a human-annotated benchmark and meta-evaluate it (``judgesdk bench``).

Predictions are written per criterion and method to ``<out>/<dataset>.<criterion>.<method>.jsonl`` as each
one finishes, keyed by ``doc_id::system_id`` (:func:`judgesdk.records.cell_id`) in a
:class:`judgesdk.records.Ledger`; a re-run skips items whose row is final and judges those that errored
again, so an interrupted benchmark resumes where it stopped, and the latest row per item is evaluated. Items
are judged document by document, so the local provider reuses each source's KV prefix across that
document's outputs.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from judgesdk.core import Criterion, InputError, JudgeItem
from judgesdk.judging import Judge, Task, pending, run
from judgesdk.meta.datasets import HumanRecord
from judgesdk.meta.evaluation import MetaEvalResult, load_predictions, meta_evaluate
from judgesdk.records import Ledger, cell_id


def select(records: Sequence[HumanRecord], *, docs: int | None = None, systems: Sequence[str] | None = None) -> list[HumanRecord]:
    """Of ``records``, the first ``docs`` documents (file order) and only ``systems`` (all when None). Nothing
    left, or a system the data does not have, is an :class:`~judgesdk.core.errors.InputError`."""
    order = list(dict.fromkeys(r.doc_id for r in records))
    keep_docs = set(order[:docs] if docs else order)
    chosen = [r for r in records if r.doc_id in keep_docs and (not systems or r.system_id in systems)]
    if not chosen:
        raise InputError(f"no items left after selecting docs={docs} systems={list(systems or [])}")
    missing = set(systems or []) - {r.system_id for r in records}
    if missing:
        raise InputError(f"unknown systems {sorted(missing)}; the data has {sorted({r.system_id for r in records})}")
    return chosen


def shortest(records: Sequence[HumanRecord], count: int) -> list[HumanRecord]:
    """The ``count`` records with the fewest characters of source and output together (ties by document, then
    system): the cheapest real items, where each token costs much (a server echoing log-probabilities in Python)."""
    return sorted(records, key=lambda r: (len(r.source or "") + len(r.output), r.doc_id, r.system_id))[:count]


def item_of(record: HumanRecord) -> JudgeItem:
    """The item a judge scores for a human ``record``: its output, source, context and reference, with the id
    ``doc_id::system_id`` (:func:`judgesdk.records.cell_id`) that joins its prediction back to the record."""
    return JudgeItem(
        output=record.output, source=record.source, context=record.context, reference=record.reference,
        id=cell_id(record.doc_id, record.system_id),
    )  # fmt: skip


def predictions_path(out_dir: Path, dataset: str, criterion: str, method: str) -> Path:
    """Where the predictions of ``method`` on ``dataset``'s ``criterion`` are written under ``out_dir``:
    ``<out_dir>/<dataset>.<criterion>.<method>.jsonl``."""
    return out_dir / f"{dataset}.{criterion}.{method}.jsonl"


def run_criterion(judge: Judge, records: Sequence[HumanRecord], criterion: Criterion, method: str, path: Path) -> int:
    """Judge every record of ``records`` without a final row in ``path`` on ``criterion`` with ``judge`` and
    ``method``, through the one runner (:mod:`judgesdk.judging.runner`); returns how many were judged now.
    Ctrl-C keeps what finished (:class:`~judgesdk.judging.runner.Interrupted`)."""
    with Ledger.open(path, what="predictions file", create_parents=True) as ledger:
        items = [(item_of(r), {"doc_id": r.doc_id, "system_id": r.system_id}) for r in records]
        task, _ = pending(Task(criterion, items, method=method), ledger)
        outcome = run(judge, [task], ledger)
    if outcome.interrupted:
        raise outcome.interruption(path)
    return len(task.items)


def evaluate(records: Sequence[HumanRecord], criterion: Criterion, path: Path, **options: object) -> MetaEvalResult:
    """Meta-evaluate the predictions file at ``path`` (the latest row per item: a row retried after an error
    wins) against the human ``records`` on ``criterion``'s dimension and scale; ``options`` are passed to
    :func:`~judgesdk.meta.evaluation.meta_evaluate` (levels, methods, convention, bootstrap...)."""
    latest = {p.key: p for p in load_predictions(path, criterion.scale)}  # a row retried after an error wins
    predictions = list(latest.values())
    return meta_evaluate(
        records, predictions, criterion.name, scale=criterion.scale,
        labels={"human_file": "benchmark", "predictions_file": str(path), "scale_source": "preset"}, **options,  # type: ignore[arg-type]
    )  # fmt: skip
