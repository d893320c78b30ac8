"""FaultProxy's slow body (``slow:S``), the fault the load-and-faults benchmark adds to 429s, 5xx, stalls and
resets: the answer arrives whole, its pieces ``S / SLOW_CHUNKS`` apart (a lower bound on the proxy's own
handling time, which a slow machine only lengthens)."""

from __future__ import annotations

import json
import urllib.request

import pytest

from support.batch_server import BatchServer
from support.fault_proxy import SLOW_CHUNKS, FaultProxy, parse_fault


def test_slow_parses_and_rejects_bad_seconds():
    assert parse_fault("slow:0.4").kind == "slow" and parse_fault("slow:0.4").seconds == 0.4
    for bad in ("slow", "slow:-1", "slow:1:2"):
        with pytest.raises(ValueError):
            parse_fault(bad)


def test_a_slow_body_arrives_whole_and_in_pieces():
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "hello"}]}).encode()
    with BatchServer(lambda b: "a fairly long answer " * 20) as upstream, FaultProxy(upstream.openai_base_url) as proxy:
        proxy.script(["slow:0.4"])
        request = urllib.request.Request(f"{proxy.base_url}/chat/completions", data=body, headers={"Content-Type": "application/json"})
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(request, timeout=5) as response:
            answer = json.loads(response.read())
        assert answer["choices"][0]["message"]["content"].startswith("a fairly long answer")
        assert proxy.wait_for(1, done=True)
        record = proxy.requests[0]
        assert record.fault == "slow:0.4" and record.status == 200
        assert record.duration is not None and record.duration >= 0.4 * (SLOW_CHUNKS - 1) / SLOW_CHUNKS
