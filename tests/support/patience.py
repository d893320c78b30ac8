"""How long an integration test waits for a real server: never a figure that only an idle machine meets.

Why: on a loaded 2-core machine (load 8-20) the embedded model answers many times slower than on an idle one,
and tests of *correctness* failed on client timeouts (issue 28, item 6: an httpx ReadTimeout against the
llama.cpp server, an APITimeoutError through the LiteLLM proxy, both at the adapters' 60 s default). Two
kinds of wait, one rule each:

* :data:`CEILING_S` - a test that is not about timing gives its clients this ceiling: it only bounds how long
  a hung server can hold the run, so it is far above any answer of the embedded model on a busy machine
  (``$JUDGESDK_TEST_CEILING_S`` overrides it).
* :func:`scaled` - a test whose subject is a timeout (a stall past it, an overload) sets its client timeout
  from a latency it *measured* on this machine just before (:func:`latency_s`), times a factor, so what the
  test exercises is the configured timeout against the fault, not the machine's speed.
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["CEILING_S", "PROBE_S", "alatency_s", "latency_s", "scaled", "wait_for"]

CEILING_S = float(os.environ.get("JUDGESDK_TEST_CEILING_S", "900"))
# One readiness probe's timeout: a server that answers its health check late is ready all the same (at load 50
# a starved server can take seconds), and the probe loop's deadline, not the probe, decides when to give up.
PROBE_S = 30.0


def latency_s(call: Callable[[], object], repeats: int = 3) -> float:
    """The median wall time of ``repeats`` runs of ``call`` (a request the test is about to make under load)."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


async def alatency_s(call: Callable[[], Awaitable[object]], repeats: int = 3) -> float:
    """:func:`latency_s` for a coroutine function (the adapters' ``generate``), on the running loop."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        await call()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def scaled(baseline_s: float, factor: float, floor_s: float) -> float:
    """``factor`` × a measured ``baseline_s``, at least ``floor_s``, never above :data:`CEILING_S`."""
    return min(CEILING_S, max(floor_s, factor * baseline_s))


def wait_for(condition: Callable[[], Any], what: str, timeout: float = 120.0) -> None:
    """A readiness wait: poll ``condition`` until it holds, failing with ``what`` after ``timeout`` seconds (generous:
    it only bounds a hang, it is not a timing assertion)."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)

