"""Old import paths (judgesdk 0.1) keep working for one release, with a DeprecationWarning naming the new home,
and the documented paths of today import without any warning."""

from __future__ import annotations

import importlib
import subprocess
import sys
import warnings

import pytest

from judgesdk._moved import MOVED, MOVED_NAMES


def _fresh(name: str) -> None:
    for loaded in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[loaded]


@pytest.mark.parametrize(("old", "new"), sorted(MOVED.items()))
def test_every_old_path_imports_with_a_warning_naming_its_new_home(old, new):
    _fresh(old)
    with pytest.warns(DeprecationWarning, match=new.replace(".", r"\.")):
        module = importlib.import_module(old)
    home = importlib.import_module(new)
    public = [n for n in getattr(home, "__all__", dir(home)) if not n.startswith("_")]
    for name in public[:20]:
        assert getattr(module, name) is getattr(home, name)


@pytest.mark.parametrize(("where", "home"), sorted(MOVED_NAMES.items()))
def test_names_that_left_their_module_are_found_through_its_old_path(where, home):
    old, name = where
    _fresh(old)
    with pytest.warns(DeprecationWarning):
        module = importlib.import_module(old)
    assert getattr(module, name) is getattr(importlib.import_module(home), name)


def test_an_old_path_does_not_shadow_a_real_module_and_unknown_names_fail():
    import judgesdk.records

    assert importlib.import_module("judgesdk.records") is judgesdk.records  # a real module always wins
    _fresh("judgesdk.runlog")
    with pytest.warns(DeprecationWarning):
        runlog = importlib.import_module("judgesdk.runlog")
    with pytest.raises(AttributeError):
        runlog.no_such_name  # noqa: B018


def test_old_from_imports_work_in_a_fresh_interpreter():
    """As a user's 0.1 code would write them, each in a new process (nothing imported before): shown by default
    (the warning points at the user's import line), an error under ``-W error``."""
    code = (
        "from judgesdk.cache import CachedProvider\n"
        "from judgesdk.gate.ppi import ppi_mean\n"
        "from judgesdk.runners import run_offline\n"
        "from judgesdk.config import load_config\n"
        "from judgesdk.cost import Budget\n"
        "print('ok')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr
    assert "<string>:1: DeprecationWarning: judgesdk.cache moved to judgesdk.provider.layers.cache" in done.stderr
    assert done.stderr.count("DeprecationWarning") == 5
    done = subprocess.run([sys.executable, "-W", "error::DeprecationWarning", "-c", code], capture_output=True, text=True)
    assert done.returncode != 0 and "judgesdk.cache moved to judgesdk.provider.layers.cache" in done.stderr


def test_documented_import_paths_work_without_warnings():
    """Every path README.md and CHANGELOG.md show today."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from judgesdk import Criterion, Judge, Scale  # noqa: F401
        from judgesdk.distributed import score_dataset  # noqa: F401
        from judgesdk.errors import ConfigError, InputError  # noqa: F401
        from judgesdk.judge import Judge as Judge2  # noqa: F401
        from judgesdk.judging.runners import run_offline  # noqa: F401
        from judgesdk.presets import criteria_for  # noqa: F401
        from judgesdk.provider import ProviderSpec, find_layer  # noqa: F401
        from judgesdk.provider.layers.ratelimit import RateLimitedProvider  # noqa: F401
        from judgesdk.provider.pricing import CostModel, Price, price_for, summarize_usage  # noqa: F401
        from judgesdk.providers.openai_batch import OpenAIBatchBackend  # noqa: F401
        from judgesdk.scorers.pairwise import as_criterion as pairwise_criterion  # noqa: F401
        from judgesdk.testing import assert_judged  # noqa: F401
        from judgesdk.types import JudgeResult, LabelDistribution  # noqa: F401
