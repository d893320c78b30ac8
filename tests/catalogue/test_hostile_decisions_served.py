"""The hostile catalogue, class **served decisions read back** (issue 44, items 4 and 5): what ``judgesdk serve``
answers, what it records, and what ``meta-eval``/``card`` read of it, against requests and record files that a
decisions client or an operator will send.

* ``one score``: the distribution served for a judgement has the judgement's score as its expected level (a
  decisions client reads that), so that a served, a recorded and a direct score are one number;
* ``records``: a multi-question row is read as the part a dimension names, never the mean of its parts; a row
  without ``doc_id``/``system_id`` is counted and skipped with a warning, never fatal to the file;
* ``requests``: two questions of one request with one name are a 400 naming the field; a comparison under any
  name gets an answer or a per-question refusal that an HTTP client can act on; typed choice values
  (``[true, "true"]``) are two options.

Each row failed on d1a3c5d. The end-to-end agreement (README example, the embedded model, both wire formats and
the record) is tests/integration/test_serve_one_score.py.
"""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path

import pytest

from judgesdk.core import Criterion, JudgeResult, Scale
from judgesdk.fused import bundled, level_probabilities
from judgesdk.judging import Judge, load_config
from judgesdk.meta.card import read_card_rows
from judgesdk.meta.readers import load_predictions
from judgesdk.provider import Capabilities, ChoiceQuestion, DecisionInput, RequestError
from judgesdk.providers import decisions_wire
from judgesdk.providers.scripted import ScriptedProvider, ScriptedReply
from judgesdk.records import read_predictions, read_results
from judgesdk.serve.backend import Backend, criterion_for

LIKERT = Scale.likert(1, 5)
SCORE = {"type": "score", "instructions": "Rate it.", "levels": [{"label": str(i)} for i in range(1, 6)]}


def _rows(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


# -- one score -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("score", [1.0, 1.2, 1.76, 2.598, 3.287, 4.4, 4.93, 5.0])
def test_the_served_levels_expected_value_is_the_point_score(score: float) -> None:
    """one score: before, the fit's normal binned with its tails cut at the scale's ends had a mean pulled toward
    the middle (3.287 served as 3.083), so a decisions client read another score than ``judge.score()``."""
    fits = [fit for fit in bundled() if fit.domain == "news"]
    models = [model for fit in fits for variants in fit.criteria.values() for model in variants]
    assert models
    for model in models:
        for values in ((1.0, 2.0, 3.0, 4.0, 5.0), (0.0, 1.0, 2.0, 3.0, 4.0)):  # 1-5 levels, and a 0-4 index of them
            probs = level_probabilities(model, score, values)
            assert sum(probs) == pytest.approx(1.0, abs=1e-12) and min(probs) >= 0.0
            mapped = min(values) + (score - model.low) * (max(values) - min(values)) / (model.high - model.low)
            assert sum(p * v for p, v in zip(probs, values)) == pytest.approx(mapped, abs=1e-9), (model.criterion, model.variant)


def test_the_served_levels_keep_the_fits_spread() -> None:
    """one score: the mean is made exact without collapsing the distribution to a point (the spread is the fit's)."""
    model = next(model for fit in bundled() if fit.domain == "news" for model in fit.criteria["consistency"])
    probs = level_probabilities(model, 3.0, (1.0, 2.0, 3.0, 4.0, 5.0))
    assert max(probs) < 0.95 and sum(p > 0.01 for p in probs) >= 2


# -- records -------------------------------------------------------------------------------------------


def test_a_dimension_is_read_from_its_part_not_the_mean_of_parts(tmp_path: Path) -> None:
    """records: a served four-question row's ``score`` is the mean of its parts; ``meta-eval --dimension
    consistency`` and ``card`` read it as ``consistency``'s part."""
    parts = {"coherence": {"score": 2.0, "status": "ok"}, "consistency": {"score": 4.5, "status": "ok"}}
    path = _rows(tmp_path / "served.jsonl", [
        {"id": "d1:s1", "doc_id": "d1", "system_id": "s1", "criterion": "coherence+consistency", "score": 3.25, "status": "ok", "parts": parts},
        {"id": "d1:s2", "doc_id": "d1", "system_id": "s2", "criterion": "coherence+consistency", "score": 2.0, "status": "ok",
         "parts": {"coherence": {"score": 2.0, "status": "ok"}}},
    ])  # fmt: skip
    predictions = {p.system_id: p for p in load_predictions(path, LIKERT, dimension="consistency")}
    assert predictions["s1"].value == 4.5 and predictions["s1"].status == "ok"
    assert predictions["s2"].value is None and predictions["s2"].status == "no_part"  # never another criterion's number
    assert [p.value for p in load_predictions(path, LIKERT, dimension="coherence")] == [2.0, 2.0]


def test_the_gate_reads_a_dimensions_part_of_a_served_row(tmp_path: Path) -> None:
    """records: the gate found no row on ``consistency`` in a served two-question row (its criterion is
    ``coherence+consistency``), and a reader without parts support takes the row's mean."""
    parts = {name: JudgeResult(score=value, status="ok", criterion=name, method="fused/source").model_dump(mode="json")
             for name, value in (("coherence", 2.0), ("consistency", 4.5))}  # fmt: skip
    path = _rows(tmp_path / "served.jsonl", [
        {"id": "d1:s1", "format": "judgesdk.results/1", "doc_id": "d1", "system_id": "s1", "criterion": "coherence+consistency",
         "method": "fused", "score": 3.25, "status": "ok", "parts": parts},
    ])  # fmt: skip
    (result,) = read_results(path).results(Criterion(name="consistency", description="Factual.", scale=LIKERT))
    assert result.score == 4.5 and result.criterion == "consistency"


def test_a_row_without_join_keys_is_skipped_with_a_warning(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """records: a served request that named no doc_id/system_id rejected the whole file."""
    path = _rows(tmp_path / "served.jsonl", [
        {"id": "d1:s1", "doc_id": "d1", "system_id": "s1", "criterion": "coherence", "score": 3.0, "status": "ok"},
        {"id": "sha:ab12", "criterion": "coherence", "score": 4.0, "status": "ok"},
    ])  # fmt: skip
    with caplog.at_level(logging.WARNING):
        rows = read_predictions(path)
        card_rows = read_card_rows(path)
    assert [row.key for _, row in rows] == [("d1", "s1")] and list(card_rows) == [("d1", "s1")]
    assert "1 line(s) without doc_id and system_id skipped" in caplog.text and "1 row(s) without doc_id and system_id skipped" in caplog.text


# -- requests ------------------------------------------------------------------------------------------


def test_two_questions_with_one_name_are_a_400_naming_the_field() -> None:
    """requests: both were answered and recorded as one part."""
    body = {"model": "judgesdk", "input": json.dumps({"output": "o", "source": "s"}),
            "questions": [{**SCORE, "name": "coherence"}, {**SCORE, "name": "fluency"}, {**SCORE, "name": "coherence"}]}  # fmt: skip
    with pytest.raises(RequestError) as caught:
        decisions_wire.read_request(body, max_questions=10)
    assert caught.value.status == 400 and caught.value.param == "questions[2].name" and caught.value.code == "duplicate_question_name"
    unnamed = {**body, "questions": [SCORE, SCORE]}  # unnamed questions are answered in order: not a clash
    assert len(decisions_wire.read_request(unnamed, max_questions=10)[1].questions) == 2


def test_typed_choice_values_are_distinct_options() -> None:
    """requests: ``[true, "true"]`` is schema-valid, and was refused as 'scale labels must be distinct'."""
    question = ChoiceQuestion(name="x", instructions="Pick.", choices=[{"value": True}, {"value": "true"}, {"value": False}])
    labels = criterion_for(question).scale.labels
    assert len(set(labels)) == 3 and labels[1] == "true"


def _hosted_backend() -> Backend:
    """A hosted-like judge (a scripted provider with top log-probabilities, no exact labels: not the embedded kind)."""
    provider = ScriptedProvider(lambda request: ScriptedReply(label_probs={"A": 0.7, "B": 0.3}), capabilities=Capabilities(logprobs=True, max_top_logprobs=20))
    return Backend(Judge(provider, method="geval"), load_config({"providers": [{"kind": "local"}], "method": "geval"}))


COMPARED = DecisionInput(outputs={"A": "The council voted for a park.", "B": "Cats sleep."}, source="The council voted to build a park.")


def test_a_comparison_with_a_tie_under_any_name_is_a_refusal_a_client_can_act_on() -> None:
    """requests: a choice question named ``better`` with a ``tie`` option failed the whole request with a 400 that
    pointed at ``ScorerOptions(template=...)``, a Python API an HTTP client cannot use."""
    backend = _hosted_backend()
    tie = ChoiceQuestion(name="better", instructions="Which is better?", choices=[{"value": "A"}, {"value": "B"}, {"value": "tie"}])
    plain = ChoiceQuestion(name="better", instructions="Which is better?", choices=[{"value": "A"}, {"value": "B"}])
    try:
        refused, answered = asyncio.run(backend.answer(COMPARED, (tie, plain)))
    finally:
        asyncio.run(backend.close())
    assert refused.answer.status == "refused" and "ScorerOptions" not in refused.answer.reason
    assert "drop the 'tie' option" in refused.answer.reason and "coherence" in refused.answer.reason
    assert answered.answer.status == "ok" and answered.answer.probabilities is not None  # A or B, under any name
    assert sum(answered.answer.probabilities) == pytest.approx(1.0)
