"""Agent runs judged end to end (issue 42 step 2): ``judgesdk score examples/agent_runs.jsonl --criterion
task_completion,tool_correctness`` against ``python -m llama_cpp.server`` standing in for a hosted judge writes one
row per run with both parts, and ``tool_correctness`` (the deterministic match of the expected calls) sends no
request: the server's access log counts the same requests as for ``task_completion`` alone. With the embedded
default (method ``auto`` on the local model), ``task_completion`` is ``refused`` with its reason, never a number.

The embedded model is a tiny base model: these tests assert plumbing (rows, parts, statuses, request counts),
never the model's opinions. Each run makes a handful of requests of a few hundred tokens on a 2-core machine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judgesdk.cli.app import main

from support.patience import CEILING_S

pytestmark = [pytest.mark.integration, pytest.mark.slow]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
RUNS = EXAMPLES / "agent_runs.jsonl"


def _posts(server) -> int:
    """The requests the server has answered so far, from its access log (uvicorn writes one line per request)."""
    return server.log_path.read_text(errors="replace").count('"POST /v1/')


def _clean_env(monkeypatch) -> None:
    for name in ("JUDGESDK_PROVIDER", "JUDGESDK_METHOD", "JUDGESDK_NO_CACHE", "JUDGESDK_CONFIG"):
        monkeypatch.delenv(name, raising=False)


def _score(tmp_path: Path, name: str, criteria: str, *flags: str) -> tuple[int, dict[str, dict]]:
    out = tmp_path / f"{name}.jsonl"
    code = main(["score", str(RUNS), "-o", str(out), "--quiet", "--criterion", criteria, *flags])
    return code, {row["id"]: row for row in map(json.loads, out.read_text().splitlines())}


def test_agent_runs_through_llama_cpp_server_one_row_each_and_no_request_for_tool_correctness(
    llama_server, tmp_path, monkeypatch
):
    _clean_env(monkeypatch)
    config = tmp_path / "judge.toml"
    config.write_text(
        'method = "geval"\nconcurrency = 1\n[cache]\nenabled = false\n[retry]\nmax_attempts = 1\n'
        f'[[providers]]\nkind = "openai"\nmodel = "{llama_server.model}"\nbase_url = "{llama_server.base_url}"\n'
        f'api = "completions"\ntimeout_s = {CEILING_S}\n'
    )
    before = _posts(llama_server)
    _, both = _score(tmp_path, "both", "task_completion,tool_correctness", "--config", str(config))
    with_both = _posts(llama_server) - before
    _, alone = _score(tmp_path, "alone", "task_completion", "--config", str(config))
    with_alone = _posts(llama_server) - before - with_both
    assert with_alone > 0, f"the access log counted no request: {llama_server.log_tail()}"
    assert with_both == with_alone, (with_both, with_alone)  # tool_correctness asked the server nothing

    assert set(both) == {"book-meeting", "refund-lookup"} == set(alone)
    for row in both.values():
        assert set(row["parts"]) == {"task_completion", "tool_correctness"}, row
        judged = row["parts"]["task_completion"]
        assert judged["method"].startswith("geval") and judged["status"] != "error", judged
        assert row["details"]["item"]["kind"] == "agent_run/1"
    matched = both["book-meeting"]["parts"]["tool_correctness"]
    assert (matched["score"], matched["method"]) == (1.0, "deterministic/tool_calls")
    assert [p["status"] for p in matched["details"]["tool_calls"]["parts"]] == ["matched"] * 3
    unmatched = both["refund-lookup"]["parts"]["tool_correctness"]
    assert unmatched["status"] == "refused" and "expected_calls" in unmatched["method_reason"]


def test_with_the_embedded_default_task_completion_is_refused_never_a_number(gguf_path, tmp_path, monkeypatch):
    _clean_env(monkeypatch)
    code, rows = _score(tmp_path, "embedded", "task_completion,tool_correctness", "--no-cache")
    assert code != 0  # rows without a score
    assert set(rows) == {"book-meeting", "refund-lookup"}
    for row in rows.values():
        part = row["parts"]["task_completion"]
        assert part["status"] == "refused" and part["score"] is None, part
        assert part["method"] == "auto/refused" and part["method_reason"], part
        assert row["score"] is None and row["status"] == "refused"
    assert rows["book-meeting"]["parts"]["tool_correctness"]["score"] == 1.0
