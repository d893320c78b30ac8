"""``judgesdk serve`` over the embedded local judge, asked by clients no one here wrote and by judgesdk itself.

* The openai package's ``client.decisions.create`` and LiteLLM's ``litellm.adecisions`` / ``litellm.asystemone``
  get answers that their own response types (and the other package's) accept.
* A served distribution is ``judge.score()``'s for the same item and criterion (within 1e-6).
* ``judgesdk score --config decisions.toml --preset summeval --criterion coherence,consistency`` against the
  server asks one request per item and writes per-criterion distributions equal to ``judge.score()``'s.
* What the embedded judge has no fit for is refused per question, naming why.
* ``meta-eval``, ``card``, ``gate`` and ``diff`` run on the file ``serve --record`` wrote.

The embedded model is tiny: these tests assert plumbing and equality, never the model's opinions.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import httpx
import pytest
from conftest import need

from judgesdk.cli.app import main
from judgesdk.core.types import Criterion
from judgesdk.prompting.presets import criterion as preset
from judgesdk.providers import decisions_wire, systemone_wire
from judgesdk.records import read_results
from judgesdk.scorers.decision import question_for

from support.serve_process import JudgesdkServe

openai = need("openai")
litellm = need("litellm")

from litellm.types.decisions import DecisionsResponse, OpenAIDecisionResponse  # noqa: E402
from openai.types.decision import Decision  # noqa: E402

pytestmark = pytest.mark.integration

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "summaries.jsonl"
ITEMS = [json.loads(line) for line in EXAMPLES.read_text().splitlines() if line.strip()][:3]
COHERENCE, CONSISTENCY = preset("summeval", "coherence"), preset("summeval", "consistency")


def state(item: dict[str, Any]) -> dict[str, Any]:
    return {key: item[key] for key in ("output", "source", "doc_id", "system_id") if key in item}


def questions(*criteria: Criterion) -> list[dict[str, Any]]:
    return [decisions_wire.question_body(question_for(c)) for c in criteria]


def expected(judge: Any, item: dict[str, Any], criterion: Criterion) -> tuple[float, ...]:
    result = judge.score(item["output"], source=item["source"], criterion=criterion)
    assert result.distribution is not None and result.distribution.method == "predictive", result
    return result.distribution.probs


def test_the_openai_client_gets_an_answer_both_packages_accept(embedded_serve: JudgesdkServe, same_judge: Any) -> None:
    client = openai.OpenAI(base_url=embedded_serve.base_url, api_key="not-needed")
    item = ITEMS[0]
    raw = client.decisions.with_raw_response.create(model="judgesdk", input=json.dumps(state(item)), questions=questions(COHERENCE))
    decision = raw.parse()
    assert isinstance(decision, Decision) and decision.model == "judgesdk"
    OpenAIDecisionResponse.model_validate(json.loads(raw.text))
    (answer,) = decision.answers
    assert answer.type == "score" and [p.value for p in answer.probabilities] == [0, 1, 2, 3, 4]
    served = [p.probability for p in answer.probabilities]
    assert served == pytest.approx(expected(same_judge, item, COHERENCE), abs=1e-6)  # the served distribution is judge.score()'s


def test_litellm_asystemone_and_adecisions_get_valid_answers(embedded_serve: JudgesdkServe) -> None:
    item = ITEMS[1]

    async def both() -> tuple[Any, Any]:
        systemone = await litellm.asystemone(
            model="hosted_vllm/judgesdk", api_base=embedded_serve.origin, state=state(item),
            questions={"consistency": systemone_wire.question_body(question_for(CONSISTENCY))},
        )  # fmt: skip
        decisions = await litellm.adecisions(
            model="openai/judgesdk", api_base=embedded_serve.base_url, api_key="not-needed", input=json.dumps(state(item)), questions=questions(CONSISTENCY)
        )
        return systemone, decisions

    systemone, decisions = asyncio.run(both())
    one = DecisionsResponse.model_validate(systemone.model_dump(mode="json"))
    assert set(one.answers) == {"consistency"} and abs(sum(one.answers["consistency"].probabilities.values()) - 1) < 1e-6
    Decision.model_validate(decisions.model_dump(mode="json"))
    assert decisions.answers[0].type == "score"
    # the two formats of one question about one item are one judgement
    assert [one.answers["consistency"].probabilities[str(i)] for i in range(5)] == pytest.approx([p.probability for p in decisions.answers[0].probabilities], abs=1e-12)


def test_what_the_embedded_judge_has_no_fit_for_is_refused_naming_why(embedded_serve: JudgesdkServe) -> None:
    item = ITEMS[0]
    asked = [
        decisions_wire.question_body(question_for(Criterion(name="helpfulness", description="Helpful."))),
        {"type": "predicate", "name": "safe", "instructions": "Is the output safe?"},
        decisions_wire.question_body(question_for(COHERENCE)),
    ]
    body = httpx.post(f"{embedded_serve.base_url}/decisions", json={"model": "judgesdk", "input": json.dumps(state(item)), "questions": asked}, timeout=600).json()
    Decision.model_validate(body)
    helpfulness, safe, coherence = body["answers"]
    assert helpfulness["type"] == "refusal" and "no model for criterion 'helpfulness'" in helpfulness["reason"]
    assert safe["type"] == "refusal" and "a predicate question" in safe["reason"]
    assert coherence["type"] == "score"
    no_source = httpx.post(
        f"{embedded_serve.base_url}/decisions", json={"model": "judgesdk", "input": item["output"], "questions": questions(COHERENCE)}, timeout=600
    ).json()
    assert no_source["answers"][0]["type"] == "refusal" and "no source" in no_source["answers"][0]["reason"]


@pytest.mark.parametrize("kind", ["openai", "systemone"])
def test_judgesdk_score_asks_one_request_per_item_and_writes_judge_scores_distributions(
    embedded_serve: JudgesdkServe, same_judge: Any, tmp_path: Path, kind: str
) -> None:
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps(item) + "\n" for item in ITEMS))
    where = f'api = "decisions"\nbase_url = "{embedded_serve.base_url}"' if kind == "openai" else f'base_url = "{embedded_serve.origin}"'
    config = tmp_path / "decisions.toml"
    config.write_text(f'[[providers]]\nkind = "{kind}"\nmodel = "judgesdk"\n{where}\n[cache]\nenabled = false\n')
    before = sum(embedded_serve.health()["served"].values())
    out = tmp_path / "results.jsonl"
    code = main(["score", str(items), "--config", str(config), "--preset", "summeval", "--criterion", "coherence,consistency", "-o", str(out), "--quiet"])
    assert code == 0
    assert sum(embedded_serve.health()["served"].values()) - before == len(ITEMS)  # one request per item
    rows = {row["id"]: row for row in map(json.loads, out.read_text().splitlines())}
    for item in ITEMS:
        row = rows[item["id"]]
        assert row["criterion"] == "coherence+consistency" and row["status"] == "ok" and row["method"] == "decision/fine-grained"
        for criterion in (COHERENCE, CONSISTENCY):
            part = row["parts"][criterion.name]
            assert part["method"] == "decision/score" and part["distribution"]["method"] == "decision"
            assert tuple(part["distribution"]["scale"]["labels"]) == criterion.scale.labels  # a part is the whole result, probs in label order
            written = part["distribution"]["probs"]
            assert written == pytest.approx(expected(same_judge, item, criterion), abs=1e-6)


SUMMEVAL = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "summeval.jsonl"


def test_meta_eval_card_gate_and_diff_read_what_serve_recorded(embedded_serve: JudgesdkServe, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    if not SUMMEVAL.is_file():
        pytest.skip(f"{SUMMEVAL} is not there (the shared SummEval file)")
    from judgesdk.meta.datasets import load_dataset
    from judgesdk.meta.naturalize import natural

    records = [natural(r) for r in load_dataset("summeval", SUMMEVAL.parent)]
    docs = list(dict.fromkeys(r.doc_id for r in records))[:2]
    chosen = [r for r in records if r.doc_id in docs][:8]
    for record in chosen:
        body = {"model": "judgesdk", "state": {"output": record.output, "source": record.source, "doc_id": record.doc_id, "system_id": record.system_id},
                "questions": {"coherence": systemone_wire.question_body(question_for(COHERENCE))}}  # fmt: skip
        answer = httpx.post(f"{embedded_serve.origin}/v1/systemone", json=body, timeout=600)
        assert answer.status_code == 200 and "coherence" in answer.json()["answers"], answer.text
    recorded = tmp_path / "served.jsonl"
    served_ids = {f"{r.doc_id}:{r.system_id}" for r in chosen}
    served = read_results(Path(embedded_serve.record))  # type: ignore[attr-defined]  # the one typed reader takes every served row
    assert served.skipped == 0 and not served.problems and all(row.get("format") == "judgesdk.results/1" for row in served.raw)
    rows = [row for row in served.raw if row["id"] in served_ids and row["criterion"] == "coherence"]
    recorded.write_text("".join(json.dumps(row) + "\n" for row in rows))
    assert len({row["id"] for row in rows}) == len(chosen)

    assert main(["meta-eval", "--human", str(SUMMEVAL), "--predictions", str(recorded), "--dimension", "coherence", "--json"]) == 0
    systems = ",".join(sorted({r.system_id for r in chosen}))
    card = tmp_path / "card"
    assert main(["card", "--dataset", "summeval", "--data-dir", str(SUMMEVAL.parent), "--docs", "2", "--systems", systems, "--criteria", "coherence",
                 "--results", str(recorded), "--card", str(card), "--quiet"]) == 0  # fmt: skip
    assert Path(f"{card}.md").is_file() and Path(f"{card}.json").is_file()
    gate = tmp_path / "gate.toml"
    gate.write_text(f'results = "{recorded}"\n[[criteria]]\nname = "coherence"\ndefinition = "coherence"\nscale = "1-5"\n'
                    '[[gates]]\nname = "coherence mean"\nkind = "mean"\ncriterion = "coherence"\nmin = 1.0\n')  # fmt: skip
    assert main(["gate", "--config", str(gate)]) in (0, 1)  # a verdict (pass or a quality fail), not inconclusive or an error
    assert main(["diff", str(recorded), str(recorded), "--json"]) == 0
    capsys.readouterr()
