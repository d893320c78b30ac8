"""The judge's item pace against a loopback OpenAI-compatible server in its own process (issue 46, item 1): with no
concurrency configured, the items in flight grow past the old default of 4, and a server that answers 429 above 8
requests in flight gets at most 1.1 requests per item. Counts, not timings (tests/support/quota_server.py)."""

from __future__ import annotations

import os
from typing import Any

from conftest import need

from judgesdk.judging import Judge

from support.quota_server import QuotaServer

need("openai")


def judge_config(base_url: str) -> dict[str, Any]:
    """A hosted judge as a user configures it, with no concurrency (the pace) and no cache."""
    os.environ.setdefault("JUDGESDK_PACE_TEST_KEY", "loopback")
    provider = {"kind": "openai", "model": "pace-model", "base_url": base_url, "api_key_env": "JUDGESDK_PACE_TEST_KEY"}
    return {"providers": [provider], "cache": {"enabled": False}, "method": "geval"}


def items(n: int) -> list[dict[str, str]]:
    source = "The council met on Tuesday."
    return [{"output": f"Summary {i}: the council approved the new park.", "source": source} for i in range(n)]


def test_unset_concurrency_grows_past_four_in_flight(monkeypatch):
    monkeypatch.delenv("JUDGESDK_CONCURRENCY", raising=False)
    with QuotaServer(latency=0.2) as server, Judge.from_config(judge_config(server.base_url)) as judge:
        results = judge.score_many(items(120), criterion="coherence")
        stats = server.stats()
    assert [r.status for r in results] == ["ok"] * 120
    assert stats["max_in_flight"] > 4, stats


def test_a_server_with_a_quota_of_8_in_flight_gets_at_most_a_tenth_more_requests(monkeypatch):
    monkeypatch.delenv("JUDGESDK_CONCURRENCY", raising=False)
    with QuotaServer(latency=0.2, quota=8) as server, Judge.from_config(judge_config(server.base_url)) as judge:
        results = judge.score_many(items(200), criterion="coherence")
        stats = server.stats()
    assert [r.status for r in results] == ["ok"] * 200
    assert stats["requests"] <= 1.1 * 200, stats
    assert stats["max_in_flight"] > 4, stats  # the pace did look past the old default (else the count proves little)
