"""``judgesdk score --engine ray`` before Ray starts: which cluster it asks for (no Ray instance is started here).

Without ``--address`` the help promises a local instance of its own. ``ray.init()`` with no address joins instead
whatever instance the machine started last (``/tmp/ray/ray_current_cluster``), or waits minutes for it when that
instance is gone: a stale file made ``--engine ray`` hang 14 minutes, then exit 3 (benchmarks/ray_vs_plain.py).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from conftest import need

ray = need("ray")


class _Asked(Exception):
    pass


def _address_asked(monkeypatch, tmp_path: Path, address: str | None) -> object:
    from judgesdk.cli.ray_engine import run_on_ray
    from judgesdk.judging.judge_config import load_config

    asked: dict[str, object] = {}

    def init(**kwargs):
        asked.update(kwargs)
        raise _Asked

    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "init", init)
    args = argparse.Namespace(estimate=False, output=tmp_path / "out", address=address, quiet=True)
    with pytest.raises(_Asked):
        run_on_ray(args, [], "coherence", load_config({"cache": {"enabled": False}}))
    return asked["address"]


def test_without_address_a_local_instance_is_started_not_the_last_one_joined(monkeypatch, tmp_path):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert _address_asked(monkeypatch, tmp_path, None) == "local"


def test_an_address_given_is_the_one_asked_for(monkeypatch, tmp_path):
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    assert _address_asked(monkeypatch, tmp_path, "auto") == "auto"
    assert _address_asked(monkeypatch, tmp_path, "ray://head:10001") == "ray://head:10001"


def test_ray_address_in_the_environment_still_names_the_cluster(monkeypatch, tmp_path):
    monkeypatch.setenv("RAY_ADDRESS", "head:6379")
    assert _address_asked(monkeypatch, tmp_path, None) is None  # Ray reads RAY_ADDRESS itself


def test_a_job_too_small_for_the_engine_gets_a_one_line_hint(monkeypatch, tmp_path, capsys):
    from judgesdk.cli.ray_engine import SMALL_JOB_ITEMS, run_on_ray
    from judgesdk.judging.judge_config import load_config

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    monkeypatch.setattr(ray, "is_initialized", lambda: False)

    def init(**kwargs):
        raise _Asked

    monkeypatch.setattr(ray, "init", init)
    config = load_config({"cache": {"enabled": False}})
    for count, quiet, hinted in ((SMALL_JOB_ITEMS, False, True), (SMALL_JOB_ITEMS, True, False), (SMALL_JOB_ITEMS + 1, False, False)):
        args = argparse.Namespace(estimate=False, output=tmp_path / "out", address=None, quiet=quiet)
        with pytest.raises(_Asked):
            run_on_ray(args, [object()] * count, "coherence", config)
        err = capsys.readouterr().err
        assert ("hint:" in err) == hinted, (count, quiet, err)
        if hinted:
            assert len(err.strip().splitlines()) == 1 and f"{count} items" in err and "without --engine ray" in err, err
