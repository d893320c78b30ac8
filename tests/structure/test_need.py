"""Tests import optional packages through ``need`` (tests/conftest.py), never ``pytest.importorskip`` (issue 41, item 8).

Why: ``importorskip`` skips on any ImportError, so a broken openai, litellm or llama_cpp install turned hundreds of
tests into skips, under ``JUDGESDK_REQUIRE_INTEGRATION=1`` (.ci/run) too, and CI went green on what it did not run.
``need`` skips only where the package is not installed, fails there in CI, and fails in every mode where the package
is installed but its import raises. Found with :mod:`ast`, so a call in a string (a generated test file) is not one.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import conftest
import pytest
from conftest import need

from support.skips import enabled_by

TESTS = Path(__file__).resolve().parents[1]


def _importorskip_calls(path: Path) -> list[int]:
    """The lines of ``path`` that call or import ``importorskip`` (``pytest.importorskip(...)``, a bare name, an alias)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        if isinstance(node, ast.Attribute) and node.attr == "importorskip":
            found.append(node.lineno)
        elif isinstance(node, ast.Name) and node.id == "importorskip":
            found.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and any(alias.name == "importorskip" for alias in node.names):
            found.append(node.lineno)
    return found


def test_no_test_uses_importorskip():
    found = {
        f"{path.relative_to(TESTS)}:{line}"
        for path in sorted(TESTS.rglob("*.py"))
        if path != TESTS / "conftest.py" and "__pycache__" not in path.parts
        for line in _importorskip_calls(path)
    }
    assert not found, f"use need(name) from conftest instead of pytest.importorskip (a broken install must fail, not skip): {sorted(found)}"


def test_the_search_finds_every_spelling(tmp_path):
    sample = tmp_path / "sample.py"
    sample.write_text('import pytest\nfrom pytest import importorskip as get\npytest.importorskip("a")\nimportorskip("b")\nx = "pytest.importorskip(\'c\')"\n')
    assert _importorskip_calls(sample) == [2, 3, 4]


def test_an_installed_package_is_returned():
    assert need("json") is sys.modules["json"]
    assert need("email.mime.text").__name__ == "email.mime.text"


@pytest.mark.parametrize("name", ["zzz_not_installed_anywhere", "zzz_not_installed_anywhere.sub"])
def test_a_package_not_installed_skips_with_the_reason_the_summary_reads(name, monkeypatch):
    monkeypatch.setattr(conftest, "REQUIRE_INTEGRATION", False)
    with pytest.raises(pytest.skip.Exception) as info:
        need(name)
    reason = str(info.value)
    assert reason.startswith(f"could not import {name!r}: No module named 'zzz_not_installed_anywhere'"), reason
    assert enabled_by(reason) == "pip install zzz_not_installed_anywhere"
    assert info.value.allow_module_level  # a module's top-level need() skips the module, as importorskip did
    assert enabled_by("could not import 'openai': No module named 'openai'") == "pip install -e '.[openai]'"


def test_a_package_not_installed_fails_in_ci(monkeypatch):
    monkeypatch.setattr(conftest, "REQUIRE_INTEGRATION", True)
    with pytest.raises(pytest.fail.Exception, match=r"could not import 'zzz_not_installed_anywhere'.*JUDGESDK_REQUIRE_INTEGRATION=1"):
        need("zzz_not_installed_anywhere")


@pytest.mark.parametrize("ci", [False, True], ids=["locally", "in-ci"])
@pytest.mark.parametrize(
    ("body", "said"),
    [
        ("import zzz_dependency_gone\n", "ModuleNotFoundError: No module named 'zzz_dependency_gone'"),  # a dependency not installed
        ("import zzz_broken_pkg._native\n", "ModuleNotFoundError: No module named 'zzz_broken_pkg._native'"),  # a part of the package lost
        ("raise OSError('libllama.so: cannot open shared object file')\n", "OSError: libllama.so"),  # a native library that does not load
        ("from json import no_such_name\n", "ImportError: cannot import name 'no_such_name'"),  # an incompatible version of a dependency
    ],
    ids=["dependency", "own-part", "native-library", "version"],
)
def test_an_installed_package_that_does_not_import_fails_in_every_mode(body, said, ci, tmp_path, monkeypatch):
    package = tmp_path / "zzz_broken_pkg"
    package.mkdir()
    (package / "__init__.py").write_text(body)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setattr(conftest, "REQUIRE_INTEGRATION", ci)
    try:
        with pytest.raises(pytest.fail.Exception, match=r"'zzz_broken_pkg' is installed but does not import \(a broken install\)") as info:
            need("zzz_broken_pkg")
        assert said in str(info.value)
    finally:
        for name in [n for n in sys.modules if n.startswith("zzz_broken_pkg")]:
            del sys.modules[name]
