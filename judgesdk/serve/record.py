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
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from judgesdk.core import Criterion, JudgeItem
from judgesdk.judging import JudgeConfig, ask_for
from judgesdk.provider import DecisionInput, scrub_json
from judgesdk.records import Ledger, composite_id, content_hash, row_for
from judgesdk.scorers import combine
from judgesdk.serve.backend import Answered, criterion_for

__all__ = ["Recorder", "item_id"]


def item_id(given: DecisionInput, ids: dict[str, str]) -> str:
    """The id a served item is recorded under: ``id``, else ``doc_id:system_id``, else ``sha:<hash of its texts>``."""
    if ids.get("id"):
        return ids["id"]
    return composite_id(ids) or f"sha:{content_hash(given.state())}"


class Recorder:
    """The results file a server appends its judgements to (one writer: the ledger's lock)."""

    def __init__(self, path: Path, config: JudgeConfig) -> None:
        self.ledger = Ledger.open(path, what="--record", create_parents=True)
        self.config = config

    def write(self, route: str, model: str, given: DecisionInput, ids: dict[str, str], answered: list[Answered], questions: tuple[Any, ...]) -> int:
        """Append the row of one served request (none when no question was judged: a comparison); returns how many."""
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
        self.ledger.write(scrub_json(row))  # no credential in the record (judgesdk.provider.scrub_credentials)
        return 1

    def close(self) -> None:
        self.ledger.close()
