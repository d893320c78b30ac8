"""Retry storms (issue 12, item 11) against the real llama.cpp server: one slot, more items in flight than it
can answer within the client timeout, behind a FaultProxy that does not pass a client's disconnect on (so
the server computes every abandoned request, the worst case for a retrying client).

Every time constant of the run is a multiple of one request's latency measured alone just before (``L``, the
median of three): the client timeout (4 L), the circuit's first open period (L) and the waits that bound a run
(the circuit's ``max_wait_s``, the retry's ``max_total_s``: 200 L, at least their 120 s defaults). So the server answers about three requests in flight in time
and eight overload it, however fast the machine is.

The bound on calls: every item once, plus the first wave's timeouts (nothing is limited before the first
failure, by design: up to ``concurrency`` requests time out at once), plus at most one retry per item after
it. The old bound, two calls per item in all, is the benchmark's target over 50 items with 16 in flight;
over 12 items with 8 in flight the first wave alone is 8 of its 12 spare calls (a run at load 9 measured
20 calls: 12 + 8 timeouts, all in the first wave), and a later slowdown of a shared machine, which the
guard answers with another, smaller wave of timeouts, is enough for the 26 > 24 seen once (inferred, not
reproduced). The counting was right (the proxy's count equals the guard's). Without the overload guard (``overload.enabled = false``) the same run makes several
calls per item (4.7 in the benchmark) and most items end in errors (benchmarks/README.md, "Load and faults").
"""

from __future__ import annotations

import pytest

from judgesdk.core.types import Criterion, JudgeItem, Scale
from judgesdk.judging.judge import Judge
from judgesdk.judging.judge_config import ask_for, load_config
from judgesdk.provider.layers.breaker import OverloadGuard
from judgesdk.provider.protocol import find_layer
from judgesdk.records import Ledger, read_rows, row_for

from support.patience import latency_s

pytestmark = pytest.mark.integration

FLUENCY = Criterion(name="fluency", description="The quality of the individual sentences.", scale=Scale.likert(1, 5))
ITEMS = [
    JudgeItem(id=f"item-{i}", output=f"The council voted on Tuesday to turn rail yard number {i} into a park with a garden.")
    for i in range(12)
]
CONCURRENCY = 8


def judge_for(base_url: str, model: str, latency: float | None, concurrency: int) -> Judge:
    """A judge whose time constants are multiples of ``latency`` (the module docstring); ``None``: no timeout to
    speak of, for measuring ``latency`` itself."""
    if latency is None:
        timing: dict = {"timeout_s": 900.0, "overload": {}, "retry": {}}
    else:
        patience = max(120.0, 200 * latency)
        timing = {"timeout_s": 4 * latency, "overload": {"open_s": latency, "max_wait_s": patience}, "retry": {"max_total_s": patience}}
    config = load_config({
        "providers": [{"kind": "openai", "model": model, "base_url": base_url, "api": "completions", "timeout_s": timing["timeout_s"]}],
        "overload": timing["overload"], "retry": timing["retry"],
        "cache": {"enabled": False}, "method": "direct", "concurrency": concurrency,
    })  # fmt: skip
    return Judge.from_config(config)


def test_an_overloaded_one_slot_server_completes_every_item_with_at_most_one_retry_each_after_the_first_wave(llama_server, fault_proxy, tmp_path):
    alone = judge_for(fault_proxy.base_url, llama_server.model, None, 1)
    try:
        alone.score(ITEMS[0].output, criterion=FLUENCY)  # the template's prefix, computed once
        shown = iter(ITEMS[1:4])
        latency = latency_s(lambda: alone.score(next(shown).output, criterion=FLUENCY))
    finally:
        alone.close()
    before = fault_proxy.count
    judge = judge_for(fault_proxy.base_url, llama_server.model, latency, concurrency=CONCURRENCY)
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
    assert guard is not None and guard.stats.timeouts > 0, guard.stats  # the server was overloaded
    assert guard is not None and guard.stats.requests == calls, (calls, guard)  # every call went through the guard
    first_wave = CONCURRENCY  # the most that can time out before the guard knows of any failure
    assert calls <= len(ITEMS) + first_wave + len(ITEMS), f"L = {latency:.2f} s, {calls} calls: {guard.stats}"
