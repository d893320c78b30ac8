"""The fused judge through ``python -m llama_cpp.server`` (issue 30, item 6 and its Done-when): the ``openai`` provider
with ``api = "completions"`` gives the output's token log-likelihoods through ``echo``; with the config naming the
served model file's sha256, the shipped fit applies, and the scores equal the in-process judge's within 0.03
(the README example and the two shortest SummEval items). Without the sha256 the fit is refused. The per-token gap
itself is measured by benchmarks/fused_server_gap.py (benchmarks/README.md).

llama-cpp-python's server turns an echo into log-probabilities in Python, sorting Gemma's 262k-token vocabulary for
every prompt token: the two SummEval items (one 100-word article, two of its summaries; coherence only: consistency
adds the pass without the source) and the README example took 8 min 12 s on a 2-core machine whose other core was busy part of the time (2026-11-27), far
longer under load (a 170-token request once took over 20 minutes at load 30-50). The client timeout is an hour;
nothing here is timed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from judgesdk import Judge
from judgesdk.errors import InputError

pytestmark = [pytest.mark.integration, pytest.mark.slow]

SOURCE = (
    "The city council of Marlow voted on Tuesday to turn the disused rail yard into a public park "
    "with a playground and a community garden."
)  # the README's example
OUTPUT = "The council approved a park on the old rail yard, with a playground and a garden."


def _server_config(server, sha: str | None) -> dict:
    options = {"model_sha256": sha} if sha else {}
    return {
        "method": "fused", "cache": {"enabled": False}, "retry": {"max_attempts": 1}, "concurrency": 1,
        "providers": [{"kind": "openai", "model": server.model, "base_url": server.base_url, "api": "completions", "timeout_s": 3600,
                       "options": options}],
    }  # fmt: skip


def _shortest_summeval(count: int) -> list[dict]:
    """The ``count`` SummEval items with the fewest characters of article and summary together (natural text)."""
    from judgesdk.meta.bench import shortest
    from judgesdk.meta.datasets import load_dataset
    from judgesdk.meta.naturalize import natural

    return [{"id": f"{r.doc_id}::{r.system_id}", "source": r.source, "output": r.output} for r in shortest([natural(r) for r in load_dataset("summeval")], count)]


def test_the_fused_judge_through_llama_cpp_server_scores_as_the_in_process_judge(llama_server, local, gguf_path: Path):
    from judgesdk.fused.model import file_sha256

    sha = file_sha256(gguf_path)
    readme = [{"id": "readme", "source": SOURCE, "output": OUTPUT}]
    summeval = _shortest_summeval(2)
    assert all(len(item["source"].split()) <= 120 for item in summeval), [len(item["source"].split()) for item in summeval]
    # consistency also reads the pass without the source (two requests an item): the README example only
    for criterion, items in (("coherence", readme + summeval), ("consistency", readme)):
        # Judge(local, ...) leaves the shared session provider open (a Judge closes only providers it built: one built
        # through ``adapters=[lambda: local]`` would close it for every later test)
        with Judge(local, method="fused") as here, Judge.from_config(_server_config(llama_server, sha)) as there:
            mine = here.score_many(items, criterion=criterion)
            served = there.score_many(items, criterion=criterion)
        for item, a, b in zip(items, mine, served):
            assert a.status == b.status == "ok", (item["id"], a.error, a.notes, b.error, b.notes)
            assert a.method == b.method and a.method.startswith("fused"), (a.method, b.method)
            assert abs(a.score - b.score) <= 0.03, (criterion, item["id"], a.score, b.score)
            assert b.details["fit"]["model_sha256"] == sha
    assert json.dumps(served[0].provenance, default=str).count(sha) >= 1  # the answer names the file it was scored with


def test_without_the_model_files_sha256_the_fit_is_refused(llama_server):
    """Refused before any request: without the sha256 no fit is bound to the served file (exit 3 in the CLI)."""
    with Judge.from_config(_server_config(llama_server, None)) as judge, pytest.raises(InputError, match="needs a fit"):
        judge.score_many([{"id": "readme", "source": SOURCE, "output": OUTPUT}], criterion="coherence")
