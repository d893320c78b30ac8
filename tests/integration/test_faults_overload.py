"""Retry storms (issue 12, item 11) against the real llama.cpp server: one slot, more items in flight than it
can answer within the client timeout, behind a FaultProxy that does not pass a client's disconnect on (so
the server computes every abandoned request, the worst case for a retrying client).

The timeout is set from one request's latency measured alone (2.5 of them, at least 2 s), so the server
can answer about two requests in flight in time whatever this machine's speed, and eight in flight overload
it. Without the overload guard (``overload.enabled = false``) the same run makes several calls per item
and most items end in errors (benchmarks/README.md, "Load and faults").
"""

from __future__ import annotations

import time

import pytest

from judgesdk.core.types import Criterion, JudgeItem, Scale
from judgesdk.judging.judge import Judge
from judgesdk.judging.judge_config import ask_for, load_config
from judgesdk.provider.layers.breaker import OverloadGuard
from judgesdk.provider.protocol import find_layer
from judgesdk.records import Ledger, read_rows, row_for

pytestmark = pytest.mark.integration

FLUENCY = Criterion(name="fluency", description="The quality of the individual sentences.", scale=Scale.likert(1, 5))
ITEMS = [
    JudgeItem(id=f"item-{i}", output=f"The council voted on Tuesday to turn rail yard number {i} into a park with a garden.")
    for i in range(12)
]


def judge_for(base_url: str, model: str, timeout_s: float, concurrency: int) -> Judge:
    config = load_config({
        "providers": [{"kind": "openai", "model": model, "base_url": base_url, "api": "completions", "timeout_s": timeout_s}],
        "cache": {"enabled": False}, "method": "direct", "concurrency": concurrency,
    })  # fmt: skip
    return Judge.from_config(config)


def test_an_overloaded_one_slot_server_completes_every_item_with_at_most_two_calls_each(llama_server, fault_proxy, tmp_path):
    alone = judge_for(fault_proxy.base_url, llama_server.model, 120.0, 1)
    try:
        alone.score(ITEMS[0].output, criterion=FLUENCY)  # the template's prefix, computed once
        started = time.perf_counter()
        alone.score(ITEMS[1].output, criterion=FLUENCY)
        latency = time.perf_counter() - started
    finally:
        alone.close()
    before = fault_proxy.count
    judge = judge_for(fault_proxy.base_url, llama_server.model, max(2.0, 2.5 * latency), concurrency=8)
    config = load_config({"method": "direct"})
    path = tmp_path / "results.jsonl"
    try:
        with Ledger.open(path) as ledger:
            judge.score_many(
                ITEMS, criterion=FLUENCY, on_result=lambda i, r: ledger.write(row_for(r, ITEMS[i].id or "", ask_for(config, FLUENCY)))
            )
        guard = find_layer(judge.providers_in_use[0], OverloadGuard)
    finally:
        judge.close()
    rows, _ = read_rows(path)
    assert sorted(row["id"] for row in rows) == sorted(item.id for item in ITEMS)  # none lost, none twice
    assert all(row["item_id"] == row["id"] for row in rows)
    final = [row for row in rows if row["score"] is not None or row["status"] == "unparsed"]
    assert len(final) == len(ITEMS), [row.get("error") for row in rows if row["status"] == "error"]
    calls = fault_proxy.count - before
    assert guard is not None and guard.stats.timeouts > 0  # the server was overloaded
    assert calls <= 2 * len(ITEMS) and guard.stats.requests == calls
