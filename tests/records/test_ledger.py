"""The results file as a ledger (issue 12, defects 1, 3, 5 and 10; :mod:`judgesdk.records`).

Runs go through the real command line (``judgesdk.cli.app.main``) and the real gate, with the scripted
provider in place of a model: an output holding ``Q<n>`` gets score n, one holding a word of ``DOWN``
fails its call as a provider that is down would.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from judgesdk.cli.app import main
from judgesdk.core.errors import InputError, PermanentError
from judgesdk.core.types import Criterion
from judgesdk.gate import evaluate_gates, load_gate_config
from judgesdk.judging.judge import Judge
from judgesdk.judging.judge_config import ask_for, load_config
from judgesdk.provider.protocol import as_text
from judgesdk.providers.scripted import ScriptedProvider, ScriptedReply
from judgesdk.records import Ask, Ledger, is_final, item_ids, latest, parse_rows, read_rows

REPO = Path(__file__).resolve().parents[2]
FROM_CONFIG = Judge.from_config.__func__  # type: ignore[attr-defined]


class Rule:
    """Score Q<n>; fail (as a provider that is down) on outputs holding a word of ``down``."""

    def __init__(self, *down: str) -> None:
        self.down = set(down)

    def __call__(self, request):
        text = as_text(request.messages)
        if any(word in text for word in self.down):
            raise PermanentError("model file missing", provider="scripted")
        score = re.search(r"Q(\d)", text)
        if score is None:
            return "I cannot tell."  # unparsed: the item's own verdict
        return ScriptedReply(label_probs={score.group(1): 1.0})


@pytest.fixture
def provider(monkeypatch):
    """The scripted provider every ``judgesdk`` command of the test judges with (a fresh one per call)."""
    state = {"rule": Rule(), "calls": []}

    def from_config(cls, source=None, **kwargs):
        scripted = ScriptedProvider(state["rule"])
        scripted.calls = state["calls"]
        return FROM_CONFIG(cls, source, adapters=[scripted])

    monkeypatch.setattr(Judge, "from_config", classmethod(from_config))
    for name in ("JUDGESDK_PROVIDER", "JUDGESDK_METHOD", "JUDGESDK_NO_CACHE"):
        monkeypatch.delenv(name, raising=False)
    return state


def write_items(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def judge_toml(tmp_path: Path) -> Path:
    path = tmp_path / "judge.toml"
    path.write_text('method = "geval"\nconcurrency = 1\n[cache]\nenabled = false\n')
    return path


def score(tmp_path: Path, items: Path, out: Path, *extra: str) -> list[str]:
    return ["score", str(items), "-o", str(out), "--config", str(judge_toml(tmp_path)), "--quiet", "--criterion", "coherence", *extra]


def rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def run(argv, capsys):
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


# -- defect 1: an errored row is not done ---------------------------------------------------------------


def test_a_row_with_status_error_is_judged_again_and_the_rerun_exits_2_until_it_is_resolved(tmp_path, provider, capsys):
    items = write_items(tmp_path / "items.jsonl", [{"id": "a", "output": "fine Q4"}, {"id": "b", "output": "fine Q5 broken"}])
    out = tmp_path / "results.jsonl"
    provider["rule"] = Rule("broken")  # the provider is down for b
    code, _, _ = run(score(tmp_path, items, out), capsys)
    assert code == 2 and [(r["id"], r["status"]) for r in rows(out)] == [("a", "ok"), ("b", "error")]
    calls = len(provider["calls"])
    code, _, _ = run(score(tmp_path, items, out), capsys)  # still down: b is tried again, and the run is not a success
    assert code == 2 and len(provider["calls"]) == calls + 1
    provider["rule"] = Rule()  # back up: b gets its score, a is not judged again
    code, _, _ = run(score(tmp_path, items, out), capsys)
    assert code == 0 and len(provider["calls"]) == calls + 2
    assert [(r["id"], r["status"]) for r in rows(out)] == [("a", "ok"), ("b", "error"), ("b", "error"), ("b", "ok")]
    code, _, _ = run(score(tmp_path, items, out), capsys)  # everything final: nothing to do, success
    assert code == 0 and len(provider["calls"]) == calls + 2


def test_an_unparsed_row_is_final_and_a_rerun_still_exits_2(tmp_path, provider, capsys):
    items = write_items(tmp_path / "items.jsonl", [{"id": "a", "output": "fine Q4"}, {"id": "b", "output": "no number here"}])
    out = tmp_path / "results.jsonl"
    argv = score(tmp_path, items, out, "--method", "direct")
    assert run(argv, capsys)[0] == 2 and [r["status"] for r in rows(out)] == ["ok", "unparsed"]
    calls = len(provider["calls"])
    assert run(argv, capsys)[0] == 2  # b has no score: never a success, however often it is re-run
    assert len(provider["calls"]) == calls and len(rows(out)) == 2  # and the unparsed verdict is not asked again


def test_the_gate_takes_the_latest_row_per_item(tmp_path):
    results = tmp_path / "results.jsonl"
    first = {"id": "a", "criterion": "quality", "score": None, "status": "error", "error": "provider down"}
    retried = {"id": "a", "criterion": "quality", "score": 4.0, "status": "ok"}
    results.write_text(json.dumps(first) + "\n" + json.dumps(retried) + "\n" + json.dumps({"id": "b", "criterion": "quality", "score": 5.0}) + "\n")
    config = load_gate_config({"results": str(results), "criteria": [{"name": "quality"}], "gates": [{"kind": "mean", "criterion": "quality", "min": 4}]})
    verdict = evaluate_gates(config)
    assert verdict.exit_code == 0, verdict  # the retried row wins: complete, mean 4.5
    assert next(g for g in verdict.gates if g.check == "mean").observed == pytest.approx(4.5)


def test_the_gate_judges_an_errored_item_again(tmp_path):
    write_items(tmp_path / "items.jsonl", [{"id": "a", "output": "fine Q4 broken"}, {"id": "b", "output": "fine Q5"}])
    config = load_gate_config({
        "judge": {"cache": {"enabled": False}, "concurrency": 1, "method": "geval"},
        "input": str(tmp_path / "items.jsonl"), "results": str(tmp_path / "results.jsonl"),
        "criteria": [{"name": "quality"}], "gates": [{"kind": "mean", "criterion": "quality", "min": 4}],
    })  # fmt: skip
    assert evaluate_gates(config, providers=[ScriptedProvider(Rule("broken"))]).exit_code == 2
    provider = ScriptedProvider(Rule())
    verdict = evaluate_gates(config, providers=[provider])
    assert verdict.exit_code == 0 and len(provider.calls) == 1  # only a, whose row was an error
    assert next(g for g in verdict.gates if g.check == "mean").observed == pytest.approx(4.5)


# -- defect 3: ids from the item, keys with what was asked -------------------------------------------------


def test_an_id_of_0_is_kept(tmp_path, provider, capsys):
    items = write_items(tmp_path / "items.jsonl", [{"id": 7, "output": "x Q3"}, {"id": 0, "output": "y Q4"}])
    out = tmp_path / "results.jsonl"
    assert run(score(tmp_path, items, out), capsys)[0] == 0
    assert [r["id"] for r in rows(out)] == ["7", "0"]


def test_results_stay_with_their_items_when_the_input_is_edited(tmp_path, provider, capsys):
    """Items without ids: a line inserted at the top must not inherit the old first item's result."""
    out = tmp_path / "results.jsonl"
    old = [{"output": "first Q2"}, {"output": "second Q3"}]
    items = write_items(tmp_path / "items.jsonl", old)
    assert run(score(tmp_path, items, out), capsys)[0] == 0
    write_items(items, [{"output": "inserted Q5"}, *old])
    assert run(score(tmp_path, items, out), capsys)[0] == 0
    assert len(provider["calls"]) == 3  # only the inserted item was judged now
    by_id = latest(rows(out))
    lines = [(number, json.loads(line)) for number, line in enumerate(items.read_text().splitlines(), start=1)]
    for item_id, (_, raw) in zip(item_ids(lines), lines):  # each item's row holds that item's own score
        assert by_id[item_id]["score"] == float(re.search(r"Q(\d)", raw["output"]).group(1)), (raw, by_id[item_id])


def test_identical_items_without_ids_are_each_judged(tmp_path, provider, capsys):
    same = {"output": "the same Q4", "source": "s"}
    items = write_items(tmp_path / "items.jsonl", [same, {"output": "other Q2"}, same])
    out = tmp_path / "results.jsonl"
    assert run(score(tmp_path, items, out), capsys)[0] == 0
    ids = [r["id"] for r in rows(out)]
    assert len(set(ids)) == 3 and ids[2] == ids[0] + "#2" and all(i.startswith("sha:") for i in ids)
    assert run(score(tmp_path, items, out), capsys)[0] == 0 and len(rows(out)) == 3  # and resumed as such


@pytest.mark.parametrize(
    "lines,needles",
    [
        ([{"id": "a", "output": "x"}, {"id": "b", "output": "y"}, {"id": "a", "output": "z"}], ["lines 1, 3", "'a'"]),
        ([{"id": 1, "output": "x"}, {"id": "1", "output": "y"}], ["lines 1, 2", "'1'"]),
        ([{"doc_id": "d", "system_id": "s", "output": "x"}, {"doc_id": "d", "system_id": "s", "output": "y"}], ["lines 1, 2", "'d:s'"]),
    ],
    ids=["id", "number-and-text", "doc-system"],
)
def test_repeated_explicit_ids_are_an_input_error_naming_the_lines(lines, needles, tmp_path, provider, capsys):
    items = write_items(tmp_path / "items.jsonl", lines)
    code, _, err = run(score(tmp_path, items, tmp_path / "results.jsonl"), capsys)
    assert code == 3 and err.startswith("judgesdk: ") and err.count("\n") == 1 and "Traceback" not in err
    for needle in [*needles, "unique 'id'"]:
        assert needle in err, err
    assert provider["calls"] == [] and not (tmp_path / "results.jsonl").exists()


def test_another_criterion_into_the_same_file_judges_its_items(tmp_path, provider, capsys):
    items = write_items(tmp_path / "items.jsonl", [{"id": "a", "output": "x Q4"}, {"id": "b", "output": "y Q2"}])
    out = tmp_path / "results.jsonl"
    assert run(score(tmp_path, items, out), capsys)[0] == 0
    assert run(score(tmp_path, items, out, "--criterion", "fluency"), capsys)[0] == 0
    assert [(r["id"], r["criterion"]) for r in rows(out)] == [("a", "coherence"), ("b", "coherence"), ("a", "fluency"), ("b", "fluency")]
    assert len(provider["calls"]) == 4
    assert run(score(tmp_path, items, out, "--definition", "The text reads well."), capsys)[0] == 0  # another definition: asked anew
    assert run(score(tmp_path, items, out), capsys)[0] == 0 and run(score(tmp_path, items, out, "--criterion", "fluency"), capsys)[0] == 0
    assert len(provider["calls"]) == 6 and len(rows(out)) == 6  # each question once


def test_rows_written_before_asked_existed_count_for_their_criterion(tmp_path, provider, capsys):
    items = write_items(tmp_path / "items.jsonl", [{"id": "a", "output": "x Q4"}, {"id": "b", "output": "y Q2"}])
    out = tmp_path / "results.jsonl"
    out.write_text(json.dumps({"id": "a", "criterion": "coherence", "score": 4.0, "status": "ok"}) + "\n")
    assert run(score(tmp_path, items, out), capsys)[0] == 0
    assert [r["id"] for r in rows(out)] == ["a", "b"] and len(provider["calls"]) == 1


def test_the_key_names_criterion_method_and_what_in_the_config_changes_answers():
    crit = Criterion(name="coherence", description="well organised")
    base = ask_for(load_config({"method": "geval"}), crit)
    assert base.criterion == "coherence" and base.method == "geval" and base.key.startswith("coherence/geval/")
    assert ask_for(load_config({"method": "geval", "concurrency": 9, "cache": {"enabled": False}}), crit) == base
    assert ask_for(load_config({"method": "geval", "providers": [{"kind": "local", "timeout_s": 5}]}), crit) != base
    assert ask_for(load_config({"method": "geval"}), crit.model_copy(update={"description": "other"})) != base
    assert ask_for(load_config({"method": "geval", "estimation": {"samples": 3}}), crit) != base
    assert ask_for(load_config({"method": "geval"}), crit, "direct").method == "direct"



def test_the_key_of_a_method_that_reads_fits_names_the_fits_by_content(tmp_path, monkeypatch):
    """A release that ships other fits (a story fit where stories went to geval before), or a user's fit refitted in
    place, answers differently under the same config: ``--resume`` must not keep rows asked of the old fits."""
    from judgesdk.fused import model as fused_model
    from judgesdk.judging import judge_config

    crit = Criterion(name="coherence")
    auto, fused, geval = (ask_for(load_config({"method": m}), crit) for m in ("auto", "fused", "geval"))
    assert fused_model.bundled_labels() == tuple(f.label for f in fused_model.bundled())
    shipped = fused_model.bundled_labels()
    monkeypatch.setattr("judgesdk.judging.judge_config.bundled_labels", lambda: shipped[:2])  # as a release without the story fit (patched where the resume key reads it)
    assert ask_for(load_config({"method": "auto"}), crit) != auto and ask_for(load_config({"method": "fused"}), crit) != fused
    assert ask_for(load_config({"method": "geval"}), crit) == geval  # geval reads no fit
    monkeypatch.undo()
    mine = tmp_path / "fit.json"
    mine.write_text('{"a": 1}')
    config = {"method": "fused", "method_options": {"fused_model": str(mine)}}
    first = ask_for(load_config(config), crit)
    mine.write_text('{"a": 2}')  # refitted in place
    assert ask_for(load_config(config), crit) != first
    assert judge_config.fit_identities(str(mine))[-1].startswith("file sha256:")


# -- defect 5: one writer per results file --------------------------------------------------------------

SLOW_RUN = """
import asyncio, os, re, sys
from judgesdk.cli.app import main
from judgesdk.judging.judge import Judge
from judgesdk.providers.scripted import ScriptedProvider, ScriptedReply
from judgesdk.provider.protocol import as_text

class Slow(ScriptedProvider):
    async def generate(self, request):  # after the first answer, wait until the file named by RELEASE exists
        while self.calls and not os.path.exists(os.environ.get("RELEASE", "")):
            await asyncio.sleep(0.05)
        return await super().generate(request)

def rule(request):
    return ScriptedReply(label_probs={re.search(r"Q(\\d)", as_text(request.messages)).group(1): 1.0})

original = Judge.from_config.__func__
Judge.from_config = classmethod(lambda cls, source=None, **kw: original(cls, source, adapters=[Slow(rule)]))
sys.exit(main(sys.argv[1:]))
"""


def test_a_second_run_on_the_same_results_file_fails_at_once(tmp_path, provider, capsys):
    items = write_items(tmp_path / "items.jsonl", [{"id": f"i{n}", "output": f"item Q{n % 5 + 1}"} for n in range(12)])
    out = tmp_path / "results.jsonl"
    script = tmp_path / "slow_run.py"
    script.write_text(SLOW_RUN)
    release = tmp_path / "release"
    env = {**os.environ, "RELEASE": str(release)}
    first = subprocess.Popen([sys.executable, str(script), *score(tmp_path, items, out)], stderr=subprocess.PIPE, text=True, env=env)
    try:
        deadline = time.monotonic() + 60
        while not (out.exists() and out.read_text().count("\n") >= 1):  # the first run is judging (and holds the file)
            assert first.poll() is None and time.monotonic() < deadline, first.stderr.read() if first.poll() is not None else "timeout"
            time.sleep(0.05)
        code, _, err = run(score(tmp_path, items, out), capsys)
        assert code == 3 and err.count("\n") == 1 and "Traceback" not in err, err
        assert "is being written by another judgesdk run" in err and str(out) in err
        assert provider["calls"] == []
    finally:
        release.touch()  # let the first run finish
        first_code = first.wait(timeout=60)
    assert first_code == 0, first.stderr.read()
    ids = [r["id"] for r in rows(out)]
    assert sorted(ids) == sorted(f"i{n}" for n in range(12))  # every item once: no run judged on top of the other
    assert run(score(tmp_path, items, out), capsys)[0] == 0 and provider["calls"] == []  # the lock went with the first run


# -- defect 10: Ctrl-C ------------------------------------------------------------------------------------


class Interrupting(ScriptedProvider):
    """Answers by ``Rule``; on an output holding ``STOP`` the user presses Ctrl-C (SIGINT to the main
    thread) while this call is still waiting for its answer."""

    async def generate(self, request):
        if "STOP" in as_text(request.messages):
            signal.pthread_kill(threading.main_thread().ident, signal.SIGINT)
            await asyncio.sleep(30)
        return await super().generate(request)


@pytest.fixture
def ctrl_c_raises():
    """Ctrl-C as a user at a terminal meets it: Python's own SIGINT handler, which raises KeyboardInterrupt.
    A process started in the background by a non-interactive shell (``pytest &``, ``nohup``, some CI
    runners) inherits SIGINT *ignored*, and Python rightly keeps it ignored, so without this the simulated
    key press would be dropped and the run would finish normally."""
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, previous)


def test_ctrl_c_keeps_finished_results_prints_one_line_exits_130_and_resumes(tmp_path, provider, capsys, monkeypatch, ctrl_c_raises):
    outputs = ["a Q4", "b Q3", "c Q5 STOP", "d Q2", "e Q1"]
    items = write_items(tmp_path / "items.jsonl", [{"id": o[0], "output": o} for o in outputs])
    out = tmp_path / "results.jsonl"
    monkeypatch.setattr(Judge, "from_config", classmethod(lambda cls, source=None, **kw: FROM_CONFIG(cls, source, adapters=[Interrupting(Rule())])))
    try:
        code, _, err = run(score(tmp_path, items, out), capsys)
    except KeyboardInterrupt:
        pytest.fail("Ctrl-C escaped judgesdk.cli.app.main as a KeyboardInterrupt")
    assert code == 130
    assert err.startswith("judgesdk: interrupted") and err.count("\n") == 1 and "Traceback" not in err, err
    assert "2 finished result(s)" in err and str(out) in err
    assert [(r["id"], r["score"]) for r in rows(out)] == [("a", 4.0), ("b", 3.0)]  # both answers that had arrived
    monkeypatch.setattr(Judge, "from_config", classmethod(lambda cls, source=None, **kw: FROM_CONFIG(cls, source, adapters=[ScriptedProvider(Rule())])))
    code, _, err = run(score(tmp_path, items, out), capsys)
    assert code == 0, err
    assert [r["id"] for r in rows(out)] == ["a", "b", "c", "d", "e"]  # resumed: each item once


# -- the reader ---------------------------------------------------------------------------------------------


def test_ids_come_from_the_item_never_from_a_line_number():
    lines = [(1, {"id": 0, "output": "x"}), (2, {"doc_id": "d", "system_id": 3, "output": "x"}), (3, {"output": "x"}),
             (4, {"id": "", "output": "x"}), (5, {"doc_id": "only", "output": "y"})]  # fmt: skip
    ids = item_ids(lines)
    assert ids[:2] == ["0", "d:3"] and ids[2].startswith("sha:") and ids[3] == ids[2] + "#2" and ids[4] == "only"
    assert item_ids([(9, {"output": "x"})]) == [ids[2]]  # the same text on another line: the same id
    with pytest.raises(InputError, match="'id' must be a string or a number"):
        item_ids([(1, {"id": {"a": 1}, "output": "x"})])


def test_final_rows():
    assert is_final({"score": 3.0, "status": "ok"}) and is_final({"score": None, "status": "unparsed"})
    assert is_final({"score": 2.0, "status": "low_coverage"}) and is_final({"id": "x", "score": 4})
    assert not is_final({"score": None, "status": "error"}) and not is_final(None) and not is_final({"score": None})


ASKS = [Ask("coherence", "geval", "c0ffee0001"), Ask("fluency", "geval", "c0ffee0002")]
row_strategy = st.fixed_dictionaries({
    "id": st.sampled_from(["a", "b", "0", "é"]),
    "asked": st.sampled_from([a.key for a in ASKS]),
    "status": st.sampled_from(["ok", "error", "unparsed", "low_coverage"]),
    "output": st.text(max_size=12),  # any text, so a cut may fall inside a character
})  # fmt: skip


def expected_latest(rows_written: list[dict], ask: Ask) -> dict[str, dict]:
    found: dict[str, dict] = {}
    for row in rows_written:
        if row["asked"] == ask.key:
            found[row["id"]] = row
    return found


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows_written=st.lists(row_strategy, max_size=12), cut=st.integers(min_value=0, max_value=400), crlf=st.booleans())
def test_the_reader_takes_the_latest_row_per_key_and_survives_a_cut_last_line(tmp_path, rows_written, cut, crlf):
    for row in rows_written:
        row["score"] = None if row["status"] in ("error", "unparsed") else 3.0
    data = b"".join(json.dumps(r, ensure_ascii=False).encode() + (b"\r\n" if crlf else b"\n") for r in rows_written)
    whole = rows_written
    if rows_written and cut:  # a crash cut the last line somewhere inside it
        last = json.dumps(rows_written[-1], ensure_ascii=False).encode()
        data = data[: len(data) - len(last) - (2 if crlf else 1) + 1 + cut % (len(last) - 1)]
        whole = rows_written[:-1]
    read, skipped = parse_rows(data)
    assert read == whole and skipped == (len(rows_written) - len(whole))
    for ask in ASKS:
        assert latest(read, ask) == expected_latest(whole, ask)
    path = tmp_path / "r.jsonl"
    path.write_bytes(data)
    with Ledger.open(path) as ledger:  # a resumed run: the cut line is ended, the next row is whole
        assert ledger.rows == whole
        ledger.write({"id": "new", "asked": ASKS[0].key, "score": 1.0, "status": "ok"})
    again, _ = read_rows(path)
    assert again == [*whole, {"id": "new", "asked": ASKS[0].key, "score": 1.0, "status": "ok"}]
    assert latest(again, ASKS[0])["new"]["score"] == 1.0


# -- every reader of the file: summary, gate notes, bench, calibrate ----------------------------------------


def test_the_summary_counts_earlier_results_without_a_score(tmp_path, provider, capsys):
    items = write_items(tmp_path / "items.jsonl", [{"id": "a", "output": "fine Q4"}, {"id": "b", "output": "no number here"}])
    out = tmp_path / "results.jsonl"
    argv = [a for a in score(tmp_path, items, out, "--method", "direct") if a != "--quiet"]
    assert run(argv, capsys)[0] == 2
    code, _, err = run(argv, capsys)
    assert code == 2 and "judgesdk score" in err and "Traceback" not in err
    assert re.search(r"already done \(skipped\)\s*│\s*2", err) and re.search(r"of those, without a score\s*│\s*1", err), err


def test_reading_a_file_with_several_questions_on_one_criterion_says_so(tmp_path):
    results = tmp_path / "results.jsonl"
    lines = [{"id": "a", "criterion": "quality", "score": 2.0, "asked": "quality/geval/1"},
             {"id": "a", "criterion": "quality", "score": 4.0, "asked": "quality/direct/2"}]  # fmt: skip
    results.write_text("".join(json.dumps(r) + "\n" for r in lines))
    config = load_gate_config({"results": str(results), "criteria": [{"name": "quality"}], "gates": [{"kind": "mean", "criterion": "quality", "min": 1}]})
    verdict = evaluate_gates(config)
    assert next(g for g in verdict.gates if g.check == "mean").observed == 4.0
    assert any("answer 2 different questions" in note for note in verdict.notes), verdict.notes


def test_bench_judges_errored_records_again_and_evaluates_the_latest_row(tmp_path):
    from judgesdk.meta import bench
    from judgesdk.meta.datasets import HumanRecord

    records = [HumanRecord(dataset="summeval", doc_id=f"d{d}", system_id=s, source="an article", output=f"{s} Q{q}", scores={"coherence": q})
               for d in range(2) for s, q in (("good", 5), ("mid", 3), ("bad", 1))]  # fmt: skip
    crit = Criterion(name="coherence", description="coherent")
    path = tmp_path / "summeval.coherence.geval.jsonl"
    with Judge(ScriptedProvider(Rule("mid")), method="geval") as judge:
        assert bench.run_criterion(judge, records, crit, "geval", path) == 6
    provider = ScriptedProvider(Rule())
    with Judge(provider, method="geval") as judge:
        assert bench.run_criterion(judge, records, crit, "geval", path) == 2  # the two errored records only
    assert len(provider.calls) == 2 and len(rows(path)) == 8
    join = bench.evaluate(records, crit, path).counts.join
    assert join.n_joined == 6 and join.n_unparsed == 0 and join.n_duplicate_predictions == 0


def test_calibrate_reads_the_latest_row_and_refuses_a_file_of_two_runs(tmp_path):
    from judgesdk.records.labels import load_labelled

    judge_rows = [{"id": f"d{i}", "doc_id": f"d{i}", "system_id": "s", "score": float(i % 5 + 1), "criterion": "c", "asked": "c/geval/1"} for i in range(10)]
    retried = {"id": "d0", "doc_id": "d0", "system_id": "s", "score": None, "status": "error", "criterion": "c", "asked": "c/geval/1"}
    judge_rows.insert(0, retried)  # d0 errored first, then got its score
    human = tmp_path / "human.jsonl"
    human.write_text("".join(json.dumps({"doc_id": f"d{i}", "system_id": "s", "c": float(i % 5 + 1)}) + "\n" for i in range(10)))
    results = tmp_path / "results.jsonl"
    results.write_text("".join(json.dumps(r) + "\n" for r in judge_rows) + '{"id": "d9", "sco')  # and a cut last line
    with pytest.raises(InputError, match=r"results\.jsonl:12: the last line is cut"):  # refused, never dropped unsaid (issue 28)
        load_labelled(results, human, "c")
    results.write_text("".join(json.dumps(r) + "\n" for r in judge_rows))
    data = load_labelled(results, human, "c")
    assert data.n_results == 10 and data.n_unscored == 0 and data.scores == data.labels
    with open(results, "a") as fh:
        fh.write("\n" + json.dumps({**judge_rows[1], "asked": "c/direct/2"}) + "\n")
    with pytest.raises(InputError, match="2 different runs"):
        load_labelled(results, human, "c")


def test_a_resumed_score_says_what_it_did_with_unreadable_lines_and_judges_their_items(tmp_path, provider, capsys):
    items = write_items(tmp_path / "items.jsonl", [{"id": i, "output": f"fine Q{n}"} for n, i in enumerate("abcd", start=2)])
    out = tmp_path / "results.jsonl"
    assert run(score(tmp_path, items, out, "--method", "direct"), capsys)[0] == 0
    lines = out.read_text().splitlines()
    out.write_text(lines[0] + "\n" + lines[1][:15] + "\n" + lines[2] + "\n" + lines[3][:15])  # b cut mid-file, d cut at the end
    code, _, err = run(score(tmp_path, items, out, "--method", "direct"), capsys)
    assert code == 0 and f"-o {out}: its last line (4) was cut" in err and "line(s) 2 are not whole JSON rows" in err
    assert sorted(r["id"] for r in rows_read(out)) == ["a", "b", "c", "d"]


def rows_read(path: Path) -> list[dict]:
    return read_rows(path)[0]
