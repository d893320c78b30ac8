"""Floor 5. The results file, owned here: its rows, their key, the id rule, the writer (a locked ledger) and the reader.

One package, five seams: :mod:`~judgesdk.records.schema` (the typed row and the join key),
:mod:`~judgesdk.records.rows` (what a row holds, its key, the tolerant reader), :mod:`~judgesdk.records.ledger`
(the locked writer), :mod:`~judgesdk.records.results` (the one reader of results files and folders, as typed
rows: every command that reads results reads them there) and :mod:`~judgesdk.records.inputs` (the strict readers
of files a person wrote: items, predictions, labels). Import the names from here.

A results file (``judgesdk score -o``, the gate's ``results``, ``judgesdk bench`` predictions) is an
append-only ledger of JSON Lines, one row per judgement, written as each result exists:

* **A row** is :func:`result_line` (the result, its distribution summary, the input line's other fields)
  plus ``id`` (the item's) and ``asked`` (what was asked, see :class:`Ask`).
* **Its key** is ``(id, asked)``: the item and what was asked of the judge (criterion, method, and a short
  hash of everything in the judge configuration that changes answers). A run with another criterion,
  definition, method, template or model into the same file judges its items instead of skipping them.
  Rows written before ``asked`` existed count for every question on their ``criterion``.
* **Final rows**: a row is final when it holds a score, or an item-level verdict that re-running cannot
  change (``unparsed`` after repair). A row with status ``error`` (model file missing, key unset,
  provider down) is not: a re-run judges its item again and appends a new row.
* **The reader takes the latest row per key**, so a row retried after an error wins. A line that is not a
  whole JSON row is refused by the readers that compare or decide (:func:`read_results`: an InputError naming
  the line) and skipped and counted by those that resume (the :class:`Ledger`, which also drops a cut last
  line from the file when a run resumes, so that the resumed file reads whole).
* **Its schema** is :class:`ResultRow`: the fields that commands read from a row, typed (a reader validates a
  row with :func:`parse_row`, and an :class:`InputError` names the line and the field), and the fields the
  writer also writes, which pass through as they are.
* **The join key** to human scores (``meta-eval``, ``bench``, ``calibrate``) is :func:`join_key`: the row's
  ``(doc_id, system_id)``; ``bench`` writes each cell's row under :func:`cell_id`.
* **Ids** come from the item: its ``id`` (a number such as 0 included), else ``doc_id:system_id``, else a
  hash of its texts with an occurrence counter (identical items are judged once each, and keep their ids
  when other lines are edited); never a line number. Two lines with the same explicit id are an input error.
* **One writer at a time**: :class:`Ledger` holds an exclusive lock (``fcntl.flock``) on the file while a
  run appends to it; a second run on the same file fails at once with an :class:`InputError` instead of
  judging everything again into the same file.

Also here: :mod:`~judgesdk.records.labels` (human label files, read strictly and joined to a run).

May import: :mod:`judgesdk.core`, :mod:`judgesdk.provider`, :mod:`judgesdk.estimation`, :mod:`judgesdk.items`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from judgesdk.core import lazy as _lazy

if TYPE_CHECKING:
    from judgesdk.records.inputs import content_hash, item_ids, read_entries, read_items, read_objects, read_predictions, read_utf8
    from judgesdk.records.labels import HumanLabels, dimension_labels, load_labelled, read_labels
    from judgesdk.records.ledger import Ledger, append, encode_row
    from judgesdk.records.results import RESULTS_FORMAT, Results, part_row, read_results, to_result
    from judgesdk.records.rows import (
        FINAL_VERDICTS,
        Ask,
        asks_in,
        composite_id,
        done_ids,
        is_final,
        latest,
        parse_rows,
        read_rows,
        result_line,
        row_for,
        row_id,
    )
    from judgesdk.records.schema import JOIN_FIELDS, ResultRow, RowDistribution, cell_id, distribution_problem, finite_or_none, join_key, parse_row

__all__ = [
    "append",
    "Ask",
    "asks_in",
    "cell_id",
    "composite_id",
    "content_hash",
    "dimension_labels",
    "distribution_problem",
    "done_ids",
    "encode_row",
    "FINAL_VERDICTS",
    "finite_or_none",
    "HumanLabels",
    "is_final",
    "item_ids",
    "JOIN_FIELDS",
    "join_key",
    "latest",
    "Ledger",
    "load_labelled",
    "parse_row",
    "parse_rows",
    "read_entries",
    "read_items",
    "read_labels",
    "read_objects",
    "read_predictions",
    "part_row",
    "read_results",
    "read_rows",
    "read_utf8",
    "result_line",
    "ResultRow",
    "Results",
    "RESULTS_FORMAT",
    "row_for",
    "row_id",
    "RowDistribution",
    "to_result",
]

__getattr__, __dir__ = _lazy(
    __name__,
    {
        **dict.fromkeys(("content_hash", "item_ids", "read_entries", "read_items", "read_objects", "read_predictions", "read_utf8",), "judgesdk.records.inputs"),
        **dict.fromkeys(("HumanLabels", "dimension_labels", "load_labelled", "read_labels",), "judgesdk.records.labels"),
        **dict.fromkeys(("Ledger", "append", "encode_row",), "judgesdk.records.ledger"),
        **dict.fromkeys(("RESULTS_FORMAT", "Results", "part_row", "read_results", "to_result",), "judgesdk.records.results"),
        **dict.fromkeys(("Ask", "FINAL_VERDICTS", "asks_in", "composite_id", "done_ids", "is_final", "latest", "parse_rows", "read_rows", "result_line", "row_for", "row_id",), "judgesdk.records.rows"),
        **dict.fromkeys(("JOIN_FIELDS", "ResultRow", "RowDistribution", "cell_id", "distribution_problem", "finite_or_none", "join_key", "parse_row",), "judgesdk.records.schema"),
    },
    globals(),
)
