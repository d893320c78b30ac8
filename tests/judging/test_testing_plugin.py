"""The pytest plugin, run in a throwaway pytest session (pytester): the `judge` fixture's config discovery,
assert_judged's pass and failure messages, and cached re-runs that make no model call."""

from __future__ import annotations

from importlib.metadata import entry_points
from pathlib import Path

import pytest
from conftest import need

from judgesdk.testing import find_config

# pytester's inline runs restore sys.modules after each run; what the inner sessions import must already be
# imported here, or a second run re-imports C extensions (numpy), which they do not allow.
from support.gates import scripted_rule  # noqa: F401

pytest_plugins = ["pytester"]

TESTS = Path(__file__).resolve().parents[1]  # tests/, where support/ is


def plugin_args() -> list[str]:
    """Load the plugin explicitly unless its pytest11 entry point is installed (loading it twice is an error)."""
    installed = any(ep.value == "judgesdk.testing" for ep in entry_points(group="pytest11"))
    return [] if installed else ["-p", "judgesdk.testing", "-W", "ignore::pytest.PytestAssertRewriteWarning"]


@pytest.fixture
def pytester(pytester):
    """pytester with the asyncio loop scope set, so inner sessions do not warn about it."""
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")
    return pytester


def test_find_config_precedence(tmp_path):
    (tmp_path / "judgesdk.toml").write_text("")
    (tmp_path / "other.toml").write_text("")
    assert find_config(None, {}, tmp_path) == tmp_path / "judgesdk.toml"
    assert find_config(None, {"JUDGESDK_CONFIG": str(tmp_path / "other.toml")}, tmp_path) == tmp_path / "other.toml"
    assert find_config(str(tmp_path / "judgesdk.toml"), {"JUDGESDK_CONFIG": str(tmp_path / "other.toml")}, tmp_path) == tmp_path / "judgesdk.toml"
    assert find_config(None, {}, tmp_path / "empty") is None
    with pytest.raises(pytest.UsageError, match="does not exist"):
        find_config(str(tmp_path / "none.toml"), {}, tmp_path)


def test_judge_fixture_is_built_from_the_projects_config(pytester, monkeypatch):
    monkeypatch.delenv("JUDGESDK_CONFIG", raising=False)
    monkeypatch.delenv("JUDGESDK_METHOD", raising=False)
    pytester.makefile(".toml", judgesdk='method = "direct"\n', other='method = "sampling"\n')
    pytester.makepyfile(
        """
        import os
        def test_method(judge):
            assert judge.method == os.environ["EXPECTED_METHOD"]
        """
    )
    monkeypatch.setenv("EXPECTED_METHOD", "direct")
    pytester.runpytest(*plugin_args()).assert_outcomes(passed=1)  # judgesdk.toml in the rootdir
    monkeypatch.setenv("EXPECTED_METHOD", "sampling")
    pytester.runpytest(*plugin_args(), "--judgesdk-config", "other.toml").assert_outcomes(passed=1)
    monkeypatch.setenv("JUDGESDK_CONFIG", "other.toml")
    pytester.runpytest(*plugin_args()).assert_outcomes(passed=1)


CONFTEST = """
import sys
sys.path.insert(0, TESTS)
import pytest
from judgesdk.judging.judge_config import load_config
from judgesdk.provider.stack import assemble
from judgesdk.judging.judge import Judge
from judgesdk.providers.scripted import ScriptedProvider
from support.gates import scripted_rule

@pytest.fixture(scope="session")
def judge():
    # the real disk cache (stacked as the judge config does) over a scripted model, shared by both runs
    provider = ScriptedProvider(scripted_rule)
    judge = Judge([assemble(provider, load_config({"cache": {"directory": CACHE}}).stack_plan())])
    yield judge
    judge.close()
    with open(LOG, "a") as fh:
        fh.write(f"calls {len(provider.calls)}\\n")
"""

TESTS_FILE = """
from judgesdk.testing import assert_judged

def record(result):
    with open(LOG, "a") as fh:
        fh.write(f"cached {result.cached}\\n")

def test_good(judge):
    record(assert_judged("a fine summary Q5", criterion="consistency", at_least=4, source="the article", judge=judge))

def test_bad(judge):
    assert_judged("a poor summary Q2 C30", criterion="consistency", at_least=4, source="the article", judge=judge)

def test_unreliable(judge):
    assert_judged("a poor summary Q5 C30", criterion="consistency", at_least=4, source="the article", judge=judge, reliable=True)
"""


def fill(template: str, **values: str) -> str:
    for name, value in values.items():
        template = template.replace(name, repr(value))
    return template


def test_assert_judged_messages_and_cached_reruns_make_no_model_call(pytester, tmp_path, monkeypatch):
    for var in ("JUDGESDK_CACHE_DIR", "JUDGESDK_NO_CACHE", "JUDGESDK_PROVIDER"):
        monkeypatch.delenv(var, raising=False)
    log = tmp_path / "log.txt"
    pytester.makeconftest(fill(CONFTEST, TESTS=str(TESTS), CACHE=str(tmp_path / "cache"), LOG=str(log)))
    pytester.makepyfile(fill(TESTS_FILE, LOG=str(log)))
    first = pytester.runpytest(*plugin_args())
    first.assert_outcomes(passed=1, failed=2)
    text = first.stdout.str()
    assert "judged 2.000 < at_least 4 on 'consistency'" in text
    assert "coverage: 0.300" in text and "needs human review" in text and "low_coverage" in text
    assert "distribution: 1: 0.000  2: 1.000" in text and "rationale: (none)" in text
    assert "judged 5.000 >= at_least 4 on 'consistency', but the judgement needs human review (reliable=True)" in text
    second = pytester.runpytest(*plugin_args())  # a CI re-run without changes
    second.assert_outcomes(passed=1, failed=2)
    assert log.read_text().splitlines() == ["cached False", "calls 3", "cached True", "calls 0"]


def test_assert_judged_outside_a_session_needs_a_judge():
    from judgesdk.core.errors import InputError
    from judgesdk.testing import _ACTIVE, assert_judged

    token = _ACTIVE.set(None)
    try:
        with pytest.raises(InputError, match="judge="):
            assert_judged("x", criterion="c", at_least=1)
    finally:
        _ACTIVE.reset(token)


@pytest.mark.integration
def test_session_judge_on_the_embedded_model_is_served_from_the_cache_on_a_rerun(gguf_path, pytester, tmp_path, monkeypatch):
    for var in ("JUDGESDK_CONFIG", "JUDGESDK_PROVIDER", "JUDGESDK_NO_CACHE", "JUDGESDK_METHOD"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("JUDGESDK_CACHE_DIR", str(tmp_path / "cache"))
    need("judgesdk.providers.llamacpp.adapter")  # imported once here, kept across the inline runs
    need("llama_cpp")
    # geval asks the model (auto answers these short items from the overlap rung, with no model call to cache)
    pytester.makefile(".toml", judgesdk='method = "geval"\n\n[[providers]]\nkind = "local"\n')
    pytester.makepyfile(
        """
        from judgesdk.testing import assert_judged

        SOURCE = "The city council approved a new park on Tuesday; construction starts next spring."

        def test_plausible():
            assert_judged("The council approved a park.", criterion="consistency", at_least=1.0, source=SOURCE)

        def test_demanding():
            assert_judged("A park was approved by the council.", criterion="consistency", at_least=4.9, source=SOURCE)
        """
    )
    first = pytester.runpytest(*plugin_args())
    first.assert_outcomes(passed=1, failed=1)
    text = first.stdout.str()
    assert "provider: local/" in text and "coverage: " in text and "judgesdk: 2 judgements, 0 served from cache" in text
    second = pytester.runpytest(*plugin_args())
    second.assert_outcomes(passed=1, failed=1)
    assert "judgesdk: 2 judgements, 2 served from cache, 0 tokens billed in 0 calls" in second.stdout.str()


def test_a_missing_config_fails_only_the_tests_that_judge(pytester):
    pytester.makepyfile(
        """
        def test_no_judging():
            pass

        def test_judging(judge):
            pass
        """
    )
    result = pytester.runpytest(*plugin_args(), "--judgesdk-config", "missing.toml")
    result.assert_outcomes(passed=1, errors=1)
    assert "judgesdk config missing.toml does not exist" in result.stdout.str()
