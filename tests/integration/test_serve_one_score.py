"""One score per judgement (issue 44, item 4): the README example's direct score, the expected level of the
distribution ``judgesdk serve`` answers (OpenAI Decisions and System One formats) and the score ``--record``
wrote agree within 1e-6.

A decisions client reads a served distribution by its expected level; ``judge.score()`` reports the fused
point score. Before this, the served distribution was the fit's normal binned with its tails cut at the
scale's ends, whose mean sat up to 0.2 from the point (3.287 served as 3.083).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import need

from judgesdk.prompting.presets import criterion as preset
from judgesdk.providers import decisions_wire, systemone_wire
from judgesdk.scorers.decision import question_for

from support.serve_process import JudgesdkServe

need("starlette")

pytestmark = [pytest.mark.integration, pytest.mark.slow]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "summaries.jsonl"
ITEMS = [json.loads(line) for line in EXAMPLES.read_text().splitlines() if line.strip()]
CONSISTENCY = preset("summeval", "consistency")


def expected_level(probabilities: list[float]) -> float:
    """The expected level of a served distribution over levels 1..k (lowest first), as a decisions client reads it."""
    return sum((k + 1) * p for k, p in enumerate(probabilities))


def served(serve: JudgesdkServe, item: dict[str, Any]) -> tuple[float, float]:
    """The expected level served for ``item`` on ``/v1/decisions`` and on ``/v1/systemone``."""
    state = {key: item[key] for key in ("output", "source", "doc_id", "system_id")}
    body = {"model": "judgesdk", "input": json.dumps(state), "questions": [decisions_wire.question_body(question_for(CONSISTENCY))]}
    openai_format = httpx.post(f"{serve.base_url}/decisions", json=body, timeout=600)
    assert openai_format.status_code == 200, openai_format.text
    (answer,) = openai_format.json()["answers"]
    by_value = sorted(answer["probabilities"], key=lambda p: p["value"])
    body = {"model": "judgesdk", "state": state, "questions": {"consistency": systemone_wire.question_body(question_for(CONSISTENCY))}}
    systemone_format = httpx.post(f"{serve.origin}/v1/systemone", json=body, timeout=600)
    assert systemone_format.status_code == 200, systemone_format.text
    levels = systemone_format.json()["answers"]["consistency"]
    return expected_level([p["probability"] for p in by_value]), expected_level(_systemone_probabilities(levels))


def _systemone_probabilities(answer: Any) -> list[float]:
    """A System One score answer's probabilities, lowest level first (whatever shape the answer takes)."""
    if isinstance(answer, dict) and "probabilities" in answer:
        answer = answer["probabilities"]
    if isinstance(answer, dict):  # keyed by level index
        return [float(answer[key]) for key in sorted(answer, key=int)]
    return [float(p["probability"]) if isinstance(p, dict) else float(p) for p in answer]


def test_direct_served_and_recorded_scores_are_one_number(embedded_serve: JudgesdkServe, same_judge: Any) -> None:
    record = Path(embedded_serve.record)  # type: ignore[attr-defined]
    for item in ITEMS:
        direct = same_judge.score(item["output"], source=item["source"], criterion=CONSISTENCY)
        assert direct.score is not None and direct.distribution is not None, direct
        openai_level, systemone_level = served(embedded_serve, item)
        assert openai_level == pytest.approx(direct.score, abs=1e-6), item["id"]
        assert systemone_level == pytest.approx(direct.score, abs=1e-6), item["id"]
        assert expected_level(list(direct.distribution.probs)) == pytest.approx(direct.score, abs=1e-6)
    rows = [json.loads(line) for line in record.read_text().splitlines() if line.strip()]
    recorded = {row["id"]: row["score"] for row in rows if row.get("criterion") == "consistency"}
    for item in ITEMS:
        direct = same_judge.score(item["output"], source=item["source"], criterion=CONSISTENCY)
        assert recorded[item["id"]] == pytest.approx(direct.score, abs=1e-6), item["id"]
