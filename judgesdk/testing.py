"""pytest plugin: judge outputs inside a test suite.

Loaded through the ``pytest11`` entry point (or ``-p judgesdk.testing``). It gives

* a session-scoped ``judge`` fixture built from the project's config: ``--judgesdk-config PATH``, else
  ``$JUDGESDK_CONFIG``, else ``judgesdk.toml`` in the rootdir, else the default provider chain;
* :func:`assert_judged`, whose failure message shows the score, the label distribution, the rationale
  and the reliability flags (status, coverage, the review flag of :mod:`judgesdk.meta.reliability`).

The judge goes through the disk cache of its config, so a CI re-run of unchanged tests makes no
model call: every answer comes from the cache (persist the cache directory between CI runs). The
terminal summary says how many judgements were served from it.

``assert_judged(..., judge=None)`` uses the session's judge. It finds it through a context variable
that the plugin sets for the session and resets after it: a test need not pass the fixture around, and
no module-level object holds state beyond the session that set it.
"""

from __future__ import annotations

import contextvars
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from judgesdk.core import InputError

if TYPE_CHECKING:
    from judgesdk.core import Criterion, JudgeResult
    from judgesdk.judging import Judge

__all__ = ["assert_judged", "failure_message", "find_config"]

CONFIG_ENV = "JUDGESDK_CONFIG"
CONFIG_NAME = "judgesdk.toml"


def find_config(option: str | None, env: Mapping[str, str], rootdir: Path) -> Path | None:
    """The judge config a test session uses: the option, then ``$JUDGESDK_CONFIG``, then ``rootdir/judgesdk.toml``."""
    for value in (option, env.get(CONFIG_ENV)):
        if value:
            path = Path(value)
            if not path.is_file():
                raise pytest.UsageError(f"judgesdk config {path} does not exist (from --judgesdk-config or ${CONFIG_ENV})")
            return path
    default = rootdir / CONFIG_NAME
    return default if default.is_file() else None


class SessionJudge:
    """The session's judge, built on first use: a test run that never judges reads no config and loads no model
    (so a stale ``$JUDGESDK_CONFIG`` only matters to sessions that judge)."""

    def __init__(self, option: str | None, rootdir: Path) -> None:
        self.option, self.rootdir = option, rootdir
        self.results: list[JudgeResult] = []
        self._judge: Judge | None = None

    def get(self) -> Judge:
        if self._judge is None:
            from judgesdk.judging import Judge

            self._judge = Judge.from_config(find_config(self.option, os.environ, self.rootdir))
        return self._judge

    def owns(self, judge: Judge) -> bool:
        return judge is self._judge

    def close(self) -> None:
        if self._judge is not None:
            self._judge.close()
            self._judge = None


_SESSION_KEY = pytest.StashKey[SessionJudge]()
_ACTIVE: contextvars.ContextVar[SessionJudge | None] = contextvars.ContextVar("judgesdk_session_judge", default=None)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("judgesdk")
    group.addoption(
        "--judgesdk-config",
        default=None,
        metavar="PATH",
        help=f"judge config for the `judge` fixture (default: ${CONFIG_ENV}, then {CONFIG_NAME} in the rootdir)",
    )


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_SESSION_KEY] = SessionJudge(config.getoption("--judgesdk-config", default=None), Path(str(config.rootpath)))


def pytest_unconfigure(config: pytest.Config) -> None:
    holder = config.stash.get(_SESSION_KEY, None)
    if holder is not None:
        holder.close()


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    holder = config.stash.get(_SESSION_KEY, None)
    if holder is None or not holder.results:
        return
    from judgesdk.provider import Usage

    results = holder.results
    cached = sum(r.cached for r in results)
    billed = sum((r.usage for r in results if not r.cached), Usage())
    terminalreporter.write_line(
        f"judgesdk: {len(results)} judgements, {cached} served from cache, "
        f"{billed.input_tokens + billed.output_tokens} tokens billed in {billed.calls} calls"
    )


@pytest.fixture(scope="session", autouse=True)
def _judgesdk_session(request: pytest.FixtureRequest) -> Iterator[None]:
    """Makes the session's judge the one ``assert_judged(judge=None)`` uses (lazily: nothing is built here)."""
    token = _ACTIVE.set(request.config.stash[_SESSION_KEY])
    try:
        yield
    finally:
        _ACTIVE.reset(token)


@pytest.fixture(scope="session")
def judge(request: pytest.FixtureRequest) -> Judge:
    """The project's judge (see the module docstring for where its config comes from)."""
    return request.config.stash[_SESSION_KEY].get()


def _criterion(criterion: Criterion | str) -> Criterion:
    from judgesdk.core import as_criterion

    return as_criterion(criterion)


def failure_message(result: JudgeResult, at_least: float, reason: str | None = None) -> str:
    """Why an output failed: its score against the bar, distribution, rationale and reliability flags."""
    from judgesdk.meta import ItemSignals, review_flags

    head = reason or (
        f"judged {result.score:.3f} < at_least {at_least:g} on {result.criterion!r}"
        if result.score is not None
        else f"no score on {result.criterion!r} (status {result.status}): {result.error or 'the answer could not be read'}"
    )
    dist = result.distribution
    coverage = "n/a" if dist is None or dist.coverage is None else f"{dist.coverage:.3f}"
    lines = [head, f"  status: {result.status}  coverage: {coverage}  method: {result.method}  provider: {result.provider}/{result.model}  cached: {result.cached}"]
    if dist is not None:
        lines.append("  distribution: " + "  ".join(f"{label}: {p:.3f}" for label, p in dist.as_dict().items()))
    lines.append(f"  rationale: {result.rationale.strip() if result.rationale else '(none)'}")
    flag = review_flags([ItemSignals.from_result(result.item_id or "item", result)])[0]
    if flag.needs_review:
        lines.append(f"  review: needs human review (risk {flag.risk:.2f}; {', '.join(flag.reasons)})")
    else:
        lines.append("  review: no flag" + (f" (risk {flag.risk:.2f})" if flag.risk is not None else " (no reliability signal)"))
    lines += [f"  note: {note}" for note in result.notes]
    return "\n".join(lines)


def assert_judged(
    output: str,
    *,
    criterion: Criterion | str,
    at_least: float,
    source: str | None = None,
    reference: str | None = None,
    context: str | None = None,
    judge: Judge | None = None,
    reliable: bool = False,
) -> JudgeResult:
    """Judge ``output`` and fail the test unless its score is at least ``at_least``; returns the result.

    With ``reliable=True`` the test also fails when the judgement needs human review (low coverage,
    high entropy...): use it where a flaky judgement must not pass silently.
    """
    __tracebackhide__ = True
    holder = _ACTIVE.get()
    if judge is None:
        if holder is None:
            raise InputError("assert_judged needs judge=... outside a pytest session with the judgesdk plugin")
        judge = holder.get()
    result = judge.score(output, source=source, reference=reference, context=context, criterion=_criterion(criterion))
    if holder is not None and holder.owns(judge):
        holder.results.append(result)
    if result.score is None or result.score < at_least:
        pytest.fail(failure_message(result, at_least), pytrace=False)
    if reliable:
        from judgesdk.meta import ItemSignals, review_flags

        if review_flags([ItemSignals.from_result(result.item_id or "item", result)])[0].needs_review:
            why = f"judged {result.score:.3f} >= at_least {at_least:g} on {result.criterion!r}, but the judgement needs human review (reliable=True)"
            pytest.fail(failure_message(result, at_least, why), pytrace=False)
    return result
