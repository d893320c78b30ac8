"""``judgesdk score --engine ray``: the same job as ``judgesdk score``, on a Ray cluster.

Kept apart from :mod:`judgesdk.cli.score` so that the command imports Ray only when this engine is chosen.
``-o`` names a folder here (one results file per write task, see :mod:`judgesdk.distributed.output`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import Any

from judgesdk.core import ConfigError, InputError
from judgesdk.distributed import RayRun, require_ray, score_dataset
from judgesdk.judging import JudgeConfig

SMALL_JOB_ITEMS = 2400  # up to this many items the hint is printed: the largest job measured, still slower on Ray (benchmarks/README.md)


def small_job_hint(count: int) -> str | None:
    """The one line printed before a job too small for the engine: Ray's start, its actors and a judge per actor
    cost tens of seconds before the first call, which plain ``score``'s concurrency does not pay (measured on one
    machine with a hosted-style provider: benchmarks/README.md)."""
    if count > SMALL_JOB_ITEMS:
        return None
    return (
        f"judgesdk: hint: {count} items are few for --engine ray: starting Ray, its actors and a judge in each costs tens of "
        "seconds before the first call; without --engine ray this job likely finishes sooner (benchmarks/README.md, 'Plain against Ray')"
    )


def run_on_ray(args: argparse.Namespace, items: list[Any], criterion: Any, config: JudgeConfig) -> RayRun:
    """Connect to the cluster at ``--address`` (``auto``: the one this node belongs to; none: start a
    local one), judge ``items`` into the folder ``-o``, print the run's report (JSON on stderr).

    Without ``--address`` (and without ``RAY_ADDRESS``, which Ray reads itself) Ray is asked for ``"local"``:
    a bare ``ray.init()`` joins the instance this machine started last (``/tmp/ray/ray_current_cluster``), and
    waits minutes for it when that file is stale."""
    if args.estimate:
        raise InputError("--estimate calls no model: run it without --engine ray")
    if getattr(config, "jury", None) is not None:
        raise InputError("--engine ray does not run a [jury] yet: run it without --engine ray")
    if args.output is None:
        raise InputError("--engine ray writes a folder of results: give it with -o FOLDER")
    if args.output.is_file():
        raise InputError(f"-o {args.output} is a file: --engine ray writes a folder of results files; give a folder path")
    hint = small_job_hint(len(items))
    if hint and not args.quiet:
        print(hint, file=sys.stderr)
    ray = require_ray()
    started = False
    if not ray.is_initialized():
        try:
            address = args.address if args.address or os.environ.get("RAY_ADDRESS") else "local"
            ray.init(address=address, log_to_driver=False)
        except (ConnectionError, RuntimeError, ValueError) as exc:
            raise ConfigError(f"cannot reach a Ray cluster at --address {args.address}: {exc}") from None
        started = True
    try:
        run = score_dataset(items, args.output, config=config, criterion=criterion)
    finally:
        if started:
            ray.shutdown()
    if not args.quiet:
        print(json.dumps(run.model_dump()), file=sys.stderr)
    return run
