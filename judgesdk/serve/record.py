"""``judgesdk serve --record FILE``: every served judgement appended to a results file, as ``judgesdk score -o``
writes one, so that ``meta-eval``, ``card``, ``gate`` and ``diff`` read served traffic unchanged.

One row per served request, as ``judgesdk score -o`` writes one per item: the judgement of its one question,
or, for several questions, their fine-grained result (:func:`judgesdk.scorers.multi.combine`: the mean where
every part has a score, each question's judgement in ``parts``), through :func:`judgesdk.records.row_for`.
``asked`` is the :class:`~judgesdk.records.Ask` that :func:`judgesdk.judging.judge_config.ask_for` gives the
served judge's config for the questions' criteria (two questions with different definitions or levels are
different questions); a refused question is a part with status ``refused``. The row has the item's id (the input's ``id``, else ``doc_id:system_id``, else a hash of its texts, as
``judgesdk score`` derives ids) and the input's ``doc_id``/``system_id`` (the join key to human labels), plus
``served``: the route, the model name asked for and the question's name. The judged texts are not written
(a results file never holds them); the file is held by the locked ledger for the server's life.

The file is held safely (issue 41): one writer per file (the ledger's lock: a second server on the same path is
refused at start); a file removed or replaced while serving is recreated, with a warning, before the next row
(:meth:`Recorder.check`, also run every second by the server, so that no second server can take the path
meanwhile); a row the file system refuses (a full disk) is a :class:`RecordUnavailable`, which the server answers
with 503 and counts in :attr:`Recorder.failures`, so that it exits non-zero.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path
from typing import Any

from judgesdk.core import Criterion, InputError, JudgeItem
from judgesdk.judging import JudgeConfig, ask_for
from judgesdk.provider import DecisionInput, scrub_json
from judgesdk.records import Ledger, composite_id, content_hash, row_for
from judgesdk.scorers import combine
from judgesdk.serve.backend import Answered, criterion_for

__all__ = ["RecordUnavailable", "Recorder", "item_id"]

log = logging.getLogger("judgesdk.serve")


class RecordUnavailable(Exception):
    """A served judgement that cannot be recorded (the file system refuses the row, or the file cannot be
    recreated): the server answers 503 rather than serve what it does not record."""


def item_id(given: DecisionInput, ids: dict[str, str]) -> str:
    """The id a served item is recorded under: ``id``, else ``doc_id:system_id``, else ``sha:<hash of its texts>``."""
    if ids.get("id"):
        return ids["id"]
    return composite_id(ids) or f"sha:{content_hash(given.state())}"


class Recorder:
    """The results file a server appends its judgements to (one writer: the ledger's lock)."""

    def __init__(self, path: Path, config: JudgeConfig) -> None:
        self.path = path
        self.ledger = Ledger.open(path, what="--record", create_parents=True)
        self.identity = _identity(path)
        self.config = config
        self.failures = 0  # served judgements not recorded (the server exits non-zero when any)
        self.problem: str | None = None  # the last reason, for the exit line

    def check(self) -> None:
        """The file still at its path, or recreated there (a warning: the rows before are in the removed file);
        a :class:`RecordUnavailable` when it cannot be."""
        if _identity(self.path) == self.identity:
            return
        self.ledger.close()
        try:
            self.ledger = Ledger.open(self.path, what="--record", create_parents=True)
        except InputError as exc:
            raise self._failed(str(exc)) from None
        self.identity = _identity(self.path)
        log.warning("judgesdk serve: --record %s was removed or replaced while serving: recreated; the rows before it are not in it", self.path)

    def _failed(self, why: str) -> RecordUnavailable:
        self.failures += 1
        self.problem = why
        log.warning("judgesdk serve: a judgement was not recorded: %s", why)
        return RecordUnavailable(why)

    def write(self, route: str, model: str, given: DecisionInput, ids: dict[str, str], answered: list[Answered], questions: tuple[Any, ...]) -> int:
        """Append the row of one served request (none when no question was judged: a comparison); returns how many.
        A :class:`RecordUnavailable` when the row cannot be written (the file recreated first if it was removed)."""
        judged = [(question, one.result) for question, one in zip(questions, answered) if one.result is not None]
        if not judged:
            return 0
        the_id = item_id(given, ids)
        criteria: list[Criterion] = [criterion_for(question) for question, _ in judged]
        if len(judged) == 1:
            result = judged[0][1]
        else:
            parts = {criterion.name: result for criterion, (_, result) in zip(criteria, judged)}
            result = combine(parts, self.config.method, JudgeItem(output=given.output or "-", id=the_id))
        extra: dict[str, str] = {key: ids[key] for key in ("doc_id", "system_id") if key in ids}
        served = {"route": route, "model": model, "questions": [question.name for question, _ in judged]}
        row = row_for(result, the_id, ask_for(self.config, criteria), {**extra, "served": served})
        self.check()
        try:
            self.ledger.write(scrub_json(row))  # no credential in the record (judgesdk.provider.scrub_credentials)
        except InputError as exc:  # the file system refused the row (cut back to the last whole row)
            raise self._failed(str(exc)) from None
        return 1

    def close(self) -> None:
        self.ledger.close()


def _identity(path: Path) -> tuple[int, int] | None:
    """The file at ``path`` (device, inode), None when there is none: a changed identity is a removed file."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    return (found.st_dev, found.st_ino)
