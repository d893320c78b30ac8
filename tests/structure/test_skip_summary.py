"""The end of a test run names what it skipped and what would run it (tests/support/skips.py)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

from support.skips import enabled_by, summary_lines


def test_a_missing_package_is_named_with_the_extra_that_installs_it():
    assert enabled_by("could not import 'openai': No module named 'openai'") == "pip install -e '.[openai]'"
    assert enabled_by("could not import 'llama_cpp.server': No module named 'llama_cpp'").startswith("pip install -e '.[local]'")
    assert enabled_by("could not import 'zzz_unknown'") == "pip install zzz_unknown"
    assert enabled_by("needs Debian's chromium (apt-get install chromium)") is None  # the reason says it itself


def test_reasons_are_counted_most_first_and_slow_tests_are_named():
    lines = summary_lines(["b", "a", "a"], deselected=3)
    assert lines[0].split() == ["2", "skipped:", "a"] and lines[1].split() == ["1", "skipped:", "b"]
    assert "-m slow" in lines[2] and lines[2].split()[0] == "3"
    assert summary_lines([], 0) == []
    assert summary_lines([], 2712, "slow") == [" 2712 not selected by -m 'slow'"]  # the slow run leaves out the others


def test_a_run_ends_with_the_summary(tmp_path):
    (tmp_path / "test_some.py").write_text(textwrap.dedent('''
        import pytest

        def test_needs_a_package():
            pytest.importorskip("zzz_not_installed_anywhere")

        def test_runs():
            pass
    '''))
    conftest = tmp_path / "conftest.py"
    conftest.write_text(
        "import sys\n"
        f"sys.path.insert(0, {str(__import__('pathlib').Path(__file__).resolve().parents[1])!r})\n"
        "from support.skips import report\n"
        "def pytest_terminal_summary(terminalreporter, exitstatus, config):\n"
        "    report(terminalreporter)\n"
    )
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:judgesdk", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert "what this run did not run" in run.stdout, run.stdout[-2000:]
    assert "zzz_not_installed_anywhere" in run.stdout and "pip install zzz_not_installed_anywhere" in run.stdout
