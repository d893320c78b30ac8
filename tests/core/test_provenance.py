"""Provenance in every result (judgesdk.core.provenance): the record, its hash of the options, how two records
differ; and its users end to end: the judge that writes it, ``judgesdk diff`` and the ``provenance`` gate kind."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from pydantic import ValidationError
from scipy import stats

from judgesdk.cli.app import main
from judgesdk.core.errors import InputError, PermanentError
from judgesdk.core.provenance import Provenance, changes, options_hash, record_of, sdk_version
from judgesdk.core.types import Criterion, JudgeResult
from judgesdk.gate import CriterionRun, GateRun, decide, load_gate_config
from judgesdk.judging.judge import Judge
from judgesdk.meta.diff import diff_rows
from judgesdk.provider.protocol import Capabilities, GenerateRequest, GenerateResponse, as_text
from judgesdk.providers.scripted import ScriptedProvider, ScriptedReply
from judgesdk.records import row_for

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
CRIT = Criterion(name="quality", description="quality")


class Echoing:
    """A provider whose responses say they were served by a model named after the judged output, answering
    after a delay that depends on it, so concurrent items interleave."""

    kind = "echo"
    model = "echo-1"
    endpoint = "in-process"
    capabilities = Capabilities(logprobs=True, max_top_logprobs=20, exact_labels=True)

    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        text = as_text(request.messages)
        name = next(word for word in text.split() if word.startswith("out-"))
        await asyncio.sleep(0.01 * (hash(name) % 5))
        return GenerateResponse(
            label_logprobs={label: -1.0 if label == "3" else -5.0 for label in request.labels or ()},
            provider=self.kind, model=self.model, provenance={"model": f"served-{name}", "runtime": "echo 1"},
        )  # fmt: skip

    async def aclose(self) -> None:
        return None


class Failing:
    kind, model, endpoint = "down", "down-1", "in-process"
    capabilities = Capabilities(exact_labels=True)

    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        raise PermanentError("down", provider=self.kind)

    async def aclose(self) -> None:
        return None


def test_each_result_names_what_produced_it_and_concurrent_items_do_not_mix():
    judge = Judge(Echoing(), method="geval", concurrency=8)
    items = [{"output": f"out-{i} is the summary", "source": "a source text", "id": str(i)} for i in range(12)]
    results = judge.score_many(items, criterion=CRIT)
    for i, result in enumerate(results):
        prov = result.provenance
        assert prov is not None and prov.served == {"model": f"served-out-{i}", "runtime": "echo 1"}
        assert prov.provider == "echo" and prov.model == "echo-1" and prov.method == "geval" and prov.sdk == sdk_version()
        assert prov.templates == result.provenance.templates and len(prov.templates) == 1
        assert prov.templates[0].startswith("direct.likert@1#")
    judge.close()


def test_a_fallback_result_credits_only_the_provider_that_answered():
    judge = Judge([Failing(), ScriptedProvider(lambda r: ScriptedReply(label_probs={"4": 0.9, "3": 0.1}))], method="geval")
    result = judge.score("out-1 text", source="src", criterion=CRIT)
    assert result.status == "ok" and result.provenance.provider == "scripted"
    assert result.provenance.served == {"runtime": "scripted"}
    judge.close()


def test_options_and_template_changes_change_the_record():
    def prov(**kwargs) -> Provenance:
        with Judge(ScriptedProvider(lambda r: ScriptedReply(label_probs={"4": 0.9, "3": 0.1})), method="geval", **kwargs) as judge:
            return judge.score("text", source="src", criterion=CRIT).provenance

    base = prov().flat()
    assert changes(base, prov().flat()) == {}
    assert set(changes(base, prov(method_options={"samples": 3}).flat())) == {"options"}
    assert set(changes(base, prov(template="direct.baseline").flat())) == {"templates"}
    assert changes(None, base) == {"provenance": ("", "recorded")}
    jury = record_of(None, {"a": prov(), "b": None})  # a jury's result: its judges' records under their names
    assert jury["a.provider"] == "scripted" and not any(k.startswith("b.") for k in jury) and record_of(None, {}) is None


def test_a_cached_answer_keeps_the_provenance_of_the_call_that_made_it(tmp_path):
    config = {"method": "geval", "cache": {"enabled": True, "directory": str(tmp_path / "cache")}}
    first = Judge.from_config(config, adapters=[Echoing()])
    fresh = first.score("out-7 text", source="src", criterion=CRIT)
    first.close()

    class Renamed(Echoing):
        async def generate(self, request):  # pragma: no cover - must not be called: the answer is cached
            raise AssertionError("called")

    second = Judge.from_config(config, adapters=[Renamed()])
    cached = second.score("out-7 text", source="src", criterion=CRIT)
    second.close()
    assert cached.cached and cached.provenance.served == fresh.provenance.served == {"model": "served-out-7", "runtime": "echo 1"}


def test_rows_carry_the_provenance_and_the_gate_reads_it_back(tmp_path):
    with Judge(ScriptedProvider(lambda r: ScriptedReply(label_probs={"4": 0.9, "3": 0.1})), method="geval") as judge:
        result = judge.score("text", source="src", criterion=CRIT, item_id="a")
    row = json.loads(json.dumps(row_for(result, "a")))
    assert row["provenance"]["provider"] == "scripted" and row["provenance"]["templates"]
    assert JudgeResult.model_validate({k: v for k, v in row.items() if k not in ("id", "distribution")}).provenance == result.provenance


def test_the_record_is_flat_and_compared_field_by_field():
    made = Provenance(sdk="0.1.0", provider="openai", model="m", method="geval", options="x", served={"model": "m-1"}, templates=("a", "b"))
    flat = made.flat()
    assert flat == {"sdk": "0.1.0", "provider": "openai", "model": "m", "method": "geval", "options": "x", "templates": "a, b",
                    "calibration": "", "served.model": "m-1"}  # fmt: skip
    assert changes(flat, {**flat, "served.model": "m-2", "served.runtime": "r"}) == {"served.model": ("m-1", "m-2"), "served.runtime": ("", "r")}
    assert changes(None, None) == {} and changes(flat, None) == {"provenance": ("recorded", "")}
    with pytest.raises(ValidationError, match="frozen"):
        made.sdk = "2"  # type: ignore[misc]  # a record is never edited in place


def test_the_options_hash_is_stable_and_ignores_key_order():
    # what Provenance.options holds in every results file written so far: a change here marks every row as changed
    assert options_hash({"samples": 3, "k": [1, 2]}, {"temperature": 0.0}) == "56d18151c820"
    assert options_hash({"k": [1, 2], "samples": 3}, {"temperature": 0.0}) == "56d18151c820"
    assert options_hash({}, {}) == "87c67facdd3d" != options_hash({"samples": 3}, {})


# -- diff -----------------------------------------------------------------------------------------------


def prov(template: str = "direct.likert@1#aaaa", served_model: str = "m-2024-01") -> dict:
    return Provenance(
        sdk="0.1.0", provider="openai", model="m", method="geval", options="x", served={"model": served_model}, templates=(template,)
    ).model_dump(mode="json")


def rows(scores: dict[str, float | None], **kwargs) -> dict:
    return {
        (i, "quality"): {"id": i, "criterion": "quality", "score": s, "status": "ok" if s is not None else "error", "provenance": prov(**kwargs)}
        for i, s in scores.items()
    }


def test_diff_names_the_items_that_moved_and_the_field_that_changed():
    old = rows({"a": 3.0, "b": 4.0, "c": 2.0, "gone": 1.0})
    new = rows({"a": 3.5, "b": 4.005, "c": 1.0, "added": 2.0}, template="direct.likert@2#bbbb")
    report = diff_rows(old, new, tolerance=0.01)
    assert [c.id for c in report.changed] == ["a", "c"]  # b moved by 0.005, within the tolerance
    assert report.changed[0].causes == {"templates": ("direct.likert@1#aaaa", "direct.likert@2#bbbb")}
    assert report.causes == {"templates": 2} and report.unexplained == 0 and report.provenance_changed == 3
    assert (report.paired, report.only_old, report.only_new) == (3, 1, 1)
    assert report.shift.n == 3 and report.shift.mean == pytest.approx((0.5 + 0.005 - 1.0) / 3)
    assert report.shift.p_value == pytest.approx(stats.wilcoxon([0.5, 0.005, -1.0]).pvalue)


def test_diff_calls_a_move_under_the_same_record_unexplained_and_a_status_change_a_change():
    report = diff_rows(rows({"a": 3.0, "b": 2.0}), rows({"a": 4.0, "b": None}))
    assert [c.id for c in report.changed] == ["a", "b"] and report.unexplained == 2 and report.causes == {}
    assert report.changed[1].new_status == "error" and report.changed[1].shift is None
    same = diff_rows(rows({"a": 3.0}), rows({"a": 3.0}))
    assert not same.changed and same.shift.p_value is None
    with pytest.raises(InputError, match="tolerance"):
        diff_rows({}, {}, tolerance=-1)


def test_diff_cli_exit_codes(tmp_path, capsys):
    def write(name: str, data: dict) -> Path:
        path = tmp_path / name
        path.write_text("".join(json.dumps(r) + "\n" for r in data.values()))
        return path

    a = write("a.jsonl", rows({"x": 3.0, "y": 2.0}))
    b = write("b.jsonl", rows({"x": 3.0, "y": 2.5}, served_model="m-2024-06"))
    assert main(["diff", str(a), str(a)]) == 0
    assert main(["diff", str(a), str(b)]) == 1
    out = capsys.readouterr().out
    assert "y quality: 2.000 -> 2.500 (served.model: m-2024-01 -> m-2024-06)" in out
    assert main(["diff", str(a), str(b), "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["causes"] == {"served.model": 1}
    assert main(["diff", str(a), str(tmp_path / "missing.jsonl")]) == 3
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"id": "y", "criterion": "quality", "score": 1.0, "provenance": {"sdk": 1}}) + "\n")
    assert main(["diff", str(a), str(bad)]) == 3 and "provenance" in capsys.readouterr().err


# -- the provenance gate ------------------------------------------------------------------------------


def judged(ids: str, **kwargs) -> list[JudgeResult]:
    return [
        JudgeResult(score=4.0, status="ok", criterion="quality", method="geval", item_id=i, provenance=Provenance.model_validate(prov(**kwargs)))
        for i in ids
    ]


def verdict_of(results, baseline, **gate):
    config = load_gate_config({"criteria": [{"name": "quality"}], "gates": [{"criterion": "quality", "kind": "provenance", **gate}]})
    run = GateRun(criteria={"quality": CriterionRun(criterion=CRIT, expected=[r.item_id for r in results], results=results, baseline=baseline)})
    verdict = decide(config, run)
    return verdict, next(g for g in verdict.gates if g.check == "provenance")


def test_the_provenance_gate_fails_on_a_silent_model_update_unless_it_is_accepted():
    verdict, same = verdict_of(judged("abc"), judged("abc"))
    assert same.outcome == "pass" and verdict.exit_code == 0
    verdict, moved = verdict_of(judged("abc", served_model="m-2024-06"), judged("abc"))
    assert moved.outcome == "fail" and "served.model: m-2024-01 -> m-2024-06" in moved.message and verdict.exit_code == 2
    _, accepted = verdict_of(judged("abc", served_model="m-2024-06"), judged("abc"), accept=["served"])
    assert accepted.outcome == "pass" and accepted.details["accepted"] == ["served.model"]
    _, template = verdict_of(judged("abc", template="t@2#b"), judged("abc"), accept=["served.model"])
    assert template.outcome == "fail" and "templates" in template.message


def test_the_provenance_gate_cannot_decide_on_results_without_a_record():
    old = [r.model_copy(update={"provenance": None}) for r in judged("ab")]
    _, gate = verdict_of(judged("ab"), old)
    assert gate.outcome == "undetermined" and "2 of 2 in the baseline" in gate.message
    with pytest.raises(Exception, match="compares against a baseline run"):
        from judgesdk.gate import evaluate_gates

        evaluate_gates(load_gate_config({"criteria": [{"name": "quality"}], "gates": [{"criterion": "quality", "kind": "provenance"}]}))


# -- the embedded model, end to end -----------------------------------------------------------------------


@pytest.mark.integration
def test_diff_of_two_runs_that_differ_only_in_template_version_names_the_items_and_the_cause(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("JUDGESDK_CACHE_DIR", str(tmp_path / "cache"))
    template = (Path(__file__).resolve().parents[2] / "prompts" / "direct" / "likert.toml").read_text()
    edited = template.replace('version = "1"', 'version = "2"').replace(
        "2. Judge the output against the evaluation criteria only.",
        "2. Judge the output strictly against the evaluation criteria, penalising any claim the source does not support.",
    )
    assert edited.count('version = "2"') == 1 and "penalising" in edited
    (tmp_path / "likert.v2.toml").write_text(edited)
    items = tmp_path / "in.jsonl"
    items.write_text("\n".join((EXAMPLES / "summaries.jsonl").read_text().splitlines()[:3]) + "\n")
    common = ["score", str(items), "--provider", "local", "--method", "geval", "--criterion", "consistency", "--quiet"]
    assert main([*common, "--template", "direct.likert", "-o", str(tmp_path / "v1.jsonl")]) == 0
    assert main([*common, "--template", str(tmp_path / "likert.v2.toml"), "-o", str(tmp_path / "v2.jsonl")]) == 0
    assert main(["diff", str(tmp_path / "v1.jsonl"), str(tmp_path / "v1.jsonl")]) == 0
    capsys.readouterr()
    code = main(["diff", str(tmp_path / "v1.jsonl"), str(tmp_path / "v2.jsonl"), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 1 and report["paired"] == 3 and report["changed"]
    for change in report["changed"]:
        assert set(change["causes"]) == {"templates"}
        old, new = change["causes"]["templates"]
        assert old.startswith("direct.likert@1#") and new.startswith("direct.likert@2#")
    first = json.loads((tmp_path / "v1.jsonl").read_text().splitlines()[0])["provenance"]
    assert first["served"]["model_sha256"] and first["served"]["runtime"].startswith("llama-cpp-python ")


def test_diff_and_the_gate_read_a_jurys_record_from_its_judges():
    def jury_row(i: str, score: float, served_model: str) -> dict:
        return {"id": i, "criterion": "quality", "score": score, "status": "ok", "method": "jury", "provenance": None,
                "parts": {"a": {"score": score, "provenance": prov(served_model=served_model)}, "b": {"score": score, "provenance": prov()}}}

    report = diff_rows({("x", "quality"): jury_row("x", 3.0, "m-1")}, {("x", "quality"): jury_row("x", 3.5, "m-2")})
    assert report.changed[0].causes == {"a.served.model": ("m-1", "m-2")}

    def jury_result(served_model: str) -> JudgeResult:
        parts = {"a": judged("x", served_model=served_model)[0], "b": judged("x")[0]}
        return JudgeResult(score=4.0, status="ok", criterion="quality", method="jury", item_id="x", parts=parts)

    _, gate = verdict_of([jury_result("m-2")], [jury_result("m-2024-01")])
    assert gate.outcome == "fail" and "a.served.model" in gate.message
