"""The package's face: ``from judgesdk import Judge, Criterion, Scale`` works, and ``import judgesdk`` stays
light (``Judge`` is loaded on first use, not by the import)."""

import subprocess
import sys
import warnings

import pytest


def test_judge_criterion_and_scale_import_from_the_package_without_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from judgesdk import Criterion, Judge, Scale

    import judgesdk.core.types
    import judgesdk.judging.judge

    assert Judge is judgesdk.judging.judge.Judge
    assert Criterion is judgesdk.core.types.Criterion and Scale is judgesdk.core.types.Scale


def test_the_package_lists_judge_and_refuses_unknown_names():
    import judgesdk

    assert "Judge" in judgesdk.__all__ and "Judge" in dir(judgesdk)
    with pytest.raises(AttributeError, match="no_such_name"):
        judgesdk.no_such_name  # noqa: B018


def test_import_judgesdk_does_not_load_the_judge():
    code = (
        "import sys, judgesdk\n"
        "heavy = sorted(m for m in ('judgesdk.judging.judge', 'judgesdk.judging.judge_config', 'judgesdk.scorers', 'judgesdk.estimation.estimator') if m in sys.modules)\n"
        "assert not heavy, heavy\n"
        "from judgesdk import Judge\n"
        "assert 'judgesdk.judging.judge' in sys.modules\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
