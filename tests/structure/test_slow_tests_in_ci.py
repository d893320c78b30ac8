"""The default test run leaves out the tests marked slow, and CI runs them anyway (issue 28, item 6): the README's
command stays inside its time budget without a test dropping out of CI."""

from __future__ import annotations

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib


def _commands() -> list[str]:
    return [line.split("#")[0].strip() for line in (ROOT / ".ci" / "run").read_text().splitlines() if "pytest" in line.split("#")[0]]


def test_the_default_run_deselects_slow_tests_and_ci_runs_both():
    addopts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["pytest"]["ini_options"]["addopts"]
    assert addopts == ["-m", "not slow"]
    readme = re.search(r"# 2\. run the tests[^\n]*\n([^\n]+)", (ROOT / "README.md").read_text())
    assert readme is not None
    commands = _commands()
    assert readme.group(1).strip() in commands  # the README's test command, as CI runs it
    assert ".venv/bin/python -m pytest -m slow" in commands  # and the slow tests
