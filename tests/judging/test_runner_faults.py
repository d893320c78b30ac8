"""Nothing escapes the runner (issue 12, item 2): one item's unexpected exception is that item's ``error``
result, every other item finishes and is written; text that is not valid Unicode is refused at the edge;
a model file that will not load is skipped by the fallback chain, once."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import pytest

from judgesdk.cli.app import main
from judgesdk.core.errors import InputError
from judgesdk.judging.judge import Judge
from judgesdk.provider.protocol import as_text
from judgesdk.providers.scripted import ScriptedProvider, ScriptedReply

FROM_CONFIG = Judge.from_config.__func__  # type: ignore[attr-defined]


class Rule:
    """Score Q<n>; raise a plain ``ValueError`` (a bug, not a provider failure) on outputs holding ``BUG``."""

    def __init__(self, broken: bool = True) -> None:
        self.broken = broken

    def __call__(self, request):
        text = as_text(request.messages)
        if self.broken and "BUG" in text:
            raise ValueError("a bug in an adapter")
        return ScriptedReply(label_probs={re.search(r"Q(\d)", text).group(1): 1.0})


def items(n: int = 5) -> list[dict]:
    return [{"id": f"i{k}", "output": f"Q{k % 5 + 1} summary" + (" BUG" if k == 2 else ""), "source": "an article"} for k in range(n)]


def test_an_unexpected_exception_is_that_items_error_and_the_others_finish():
    with Judge(ScriptedProvider(Rule()), method="geval", concurrency=2) as judge:
        results = judge.score_many(items(), criterion="coherence")
    assert [r.status for r in results] == ["ok", "ok", "error", "ok", "ok"]
    assert [r.score for r in results if r.status == "ok"] == [1.0, 2.0, 4.0, 5.0]
    assert results[2].item_id == "i2" and "unexpected ValueError: a bug in an adapter" in (results[2].error or "")


def test_the_single_item_api_still_raises_the_exception():
    with Judge(ScriptedProvider(Rule()), method="geval") as judge, pytest.raises(ValueError):
        judge.score("Q1 BUG", source="an article", criterion="coherence")


@pytest.fixture
def rule(monkeypatch):
    state = {"rule": Rule()}

    def from_config(cls, source=None, **kwargs):
        return FROM_CONFIG(cls, source, adapters=[ScriptedProvider(lambda request: state["rule"](request))])

    monkeypatch.setattr(Judge, "from_config", classmethod(from_config))
    for name in ("JUDGESDK_PROVIDER", "JUDGESDK_METHOD", "JUDGESDK_NO_CACHE"):
        monkeypatch.delenv(name, raising=False)
    return state


def test_the_cli_writes_every_other_row_and_a_rerun_judges_only_the_failed_item(rule, tmp_path, capsys):
    source = tmp_path / "items.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in items()))
    results = tmp_path / "results.jsonl"
    argv = ["score", str(source), "-o", str(results), "--method", "geval", "--criterion", "coherence", "--no-cache", "--quiet"]
    assert main(argv) == 2  # incomplete, not a traceback
    assert "Traceback" not in capsys.readouterr().err
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    assert sorted(r["id"] for r in rows) == ["i0", "i1", "i2", "i3", "i4"]
    assert {r["id"]: r["status"] for r in rows}["i2"] == "error"
    rule["rule"] = Rule(broken=False)
    assert main(argv) == 0
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    assert [r["id"] for r in rows[5:]] == ["i2"] and rows[5]["status"] == "ok"


def test_the_judge_refuses_a_lone_surrogate_before_any_call():
    provider = ScriptedProvider(Rule())
    with Judge(provider, method="geval") as judge, pytest.raises(InputError, match="lone surrogate"):
        judge.score("Q1 \udcff", source="an article", criterion="coherence")
    assert provider.calls == []


def test_a_model_file_that_will_not_load_is_skipped_by_the_chain_once(gguf_path, tmp_path):
    from judgesdk.providers.llamacpp import LlamaCppProvider

    damaged = tmp_path / "damaged.gguf"
    damaged.write_bytes(Path(gguf_path).read_bytes()[: 2_000_000])  # a valid header, then nothing
    local = LlamaCppProvider(damaged)
    backup = ScriptedProvider(Rule())
    with Judge([local, backup], method="geval", concurrency=1) as judge:
        results = judge.score_many(items(4)[:2] + items(4)[3:], criterion="coherence")
        assert [r.status for r in results] == ["ok", "ok", "ok"]
        assert all(r.provider == "scripted" for r in results)
        assert "could not load" in results[0].notes[0] and "damaged" in results[0].notes[0]
        assert judge.usable and len(judge.unusable) == 1


def test_a_typed_input_error_stops_the_run_after_cancelling_the_items_in_flight():
    """The caller's mistake fails the run (CLI exit 3); nothing reports a result after score_many returned."""
    reported: list[int] = []

    def rule(request):
        if "STOP" in as_text(request.messages):
            raise InputError("this item needs a reference")
        return ScriptedReply(label_probs={"3": 1.0})

    batch = [{"id": f"i{k}", "output": "STOP" if k == 1 else f"out {k}", "source": "s"} for k in range(6)]
    scripted = ScriptedProvider(rule)
    answer = scripted.generate

    async def slowly(request):
        await asyncio.sleep(0.05)
        return await answer(request)

    scripted.generate = slowly
    with Judge(scripted, method="geval", concurrency=3) as judge:
        with pytest.raises(InputError, match="needs a reference"):
            judge.score_many(batch, criterion="coherence", on_result=lambda i, r: reported.append(i))
        settled = list(reported)
        judge.run(asyncio.sleep(0.3))  # anything still running would report now
    assert reported == settled and 1 not in reported


# -- an item without a field its method needs (issue 28, item 3) ------------------------------------------------


def _without_source(n: int = 7, missing: int = 3) -> list[dict]:
    """``n`` items for 001's MCQ prompt (which shows the source); item ``missing`` has no source."""
    return [{"id": f"i{k}", "output": f"Q{k % 5 + 1} summary", **({} if k == missing else {"source": "an article"})} for k in range(n)]


def letters(request):
    """001's MCQ asks for a letter: answer the one of Q<n> (A = 1 ... E = 5)."""
    return ScriptedReply(label_probs={"ABCDE"[int(re.search(r"Q(\d)", as_text(request.messages)).group(1)) - 1]: 1.0})


def test_an_item_without_the_source_its_template_needs_is_its_error_and_the_others_are_judged():
    provider = ScriptedProvider(letters)
    with Judge(provider, method="mcq", concurrency=2) as judge:
        results = judge.score_many(_without_source(), criterion="consistency")
    assert [r.status for r in results] == ["ok", "ok", "ok", "error", "ok", "ok", "ok"]
    error = results[3].error or ""
    assert results[3].item_id == "i3" and "item 'i3'" in error and "'source'" in error and "mcq.consistency" in error
    assert len(provider.calls) == 6  # the item without a source never reached the model


def test_score_writes_every_other_row_names_the_item_and_a_fixed_input_judges_only_it(rule, tmp_path, capsys):
    """``judgesdk score`` judges the rest (exit 2, incomplete) and the re-run after the line is fixed judges that item."""
    rule["rule"] = letters
    source = tmp_path / "items.jsonl"
    source.write_text("".join(json.dumps(row) + "\n" for row in _without_source()))
    results = tmp_path / "results.jsonl"
    argv = ["score", str(source), "-o", str(results), "--method", "mcq", "--criterion", "consistency", "--no-cache", "--quiet"]
    assert main(argv) == 2
    assert "Traceback" not in capsys.readouterr().err
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    assert sorted(r["id"] for r in rows) == [f"i{k}" for k in range(7)]
    by_id = {r["id"]: r for r in rows}
    assert by_id["i3"]["status"] == "error" and "item 'i3'" in by_id["i3"]["error"] and "'source'" in by_id["i3"]["error"]
    assert all(by_id[f"i{k}"]["status"] == "ok" for k in range(7) if k != 3)
    source.write_text("".join(json.dumps({**row, "source": "an article"}) + "\n" for row in _without_source()))
    assert main(argv) == 0
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    assert [r["id"] for r in rows[7:]] == ["i3"] and rows[7]["status"] == "ok"
