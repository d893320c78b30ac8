"""A folder is entered through its face: code outside a folder imports only that folder's ``__init__``.

A face (``judgesdk/<folder>/__init__.py``, and the top-level ``providers/`` installed as :mod:`judgesdk.providers`)
lists the names the rest of the code may use (its ``__all__``); everything else in the folder is the folder's own
business and may move without notice. This module checks the rule for the package (``judgesdk/``, ``providers/``,
``prompts/``) and for its users in the repository (``benchmarks/``, ``examples/``), and that faces stay lazy:

* an import of a judgesdk module from outside its folder names the face (``from judgesdk.provider import
  Provider``), never a module or a sub-package inside it (``judgesdk.provider.protocol``), and never imports a
  submodule through the face (``from judgesdk.fused import model``);
* a face declares each name twice by construction, once for the type checker (``if TYPE_CHECKING:`` imports) and
  once for run time (:func:`judgesdk.core.lazy`'s table); both name the same object;
* importing every face loads no SDK (``openai``, ``anthropic``, ``litellm``, ``llama_cpp``, ``ray``...): a name
  loads its module when it is first read.

Tests are not held to the rule: a test may import the internals of the folder it tests.
"""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest
from test_layers import REPO, _is_type_checking, folder_of, package_modules

from support.source import parse

USERS = ("benchmarks", "examples")  # folders of code that uses judgesdk as its users do
TOP_FACES = ("judgesdk", "judgesdk.errors", "judgesdk.presets", "judgesdk.testing")  # the top-level faces


def folders() -> list[str]:
    """Every folder of the package: ``judgesdk/<folder>/`` with an ``__init__`` and the two mapped top-level ones."""
    found = sorted(p.name for p in (REPO / "judgesdk").iterdir() if (p / "__init__.py").exists())
    return [*found, "providers", "prompts"]


def faces() -> list[str]:
    return [*TOP_FACES, *(f"judgesdk.{folder}" for folder in folders())]


def _absolute(node: ast.ImportFrom, module: str, is_package: bool) -> str:
    if not node.level:
        return node.module or ""
    package = module if is_package else module.rpartition(".")[0]
    for _ in range(node.level - 1):
        package = package.rpartition(".")[0]
    return f"{package}.{node.module}" if node.module else package


def deep_imports(source: str, module: str | None, is_package: bool, known: set[str]) -> list[str]:
    """The imports in ``source`` that reach into a folder other than ``module``'s without passing its face:
    ``"line: what"`` each. ``module`` is None for code outside the package (benchmarks, examples)."""
    home = folder_of(module) if module else None
    found = []
    for node in ast.walk(parse(source)):
        if isinstance(node, ast.Import):
            targets = [(alias.name, None) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if module is None and node.level:
                continue  # a benchmark's own helper modules
            base = _absolute(node, module or "", is_package)
            targets = [(base, alias.name) for alias in node.names]
        else:
            continue
        for dotted, name in targets:
            if not dotted.startswith("judgesdk"):
                continue
            folder = folder_of(dotted) if dotted != "judgesdk" else None
            if folder is None:  # judgesdk itself, or a module at its top
                if dotted not in TOP_FACES:
                    found.append(f"{node.lineno}: imports {dotted}, which is not a face")
                elif name and f"{dotted}.{name}" in known:
                    found.append(f"{node.lineno}: imports the module {dotted}.{name} as a name; import the names its face offers")
                continue
            if folder == home:
                continue
            face = f"judgesdk.{folder}"
            if dotted != face:
                found.append(f"{node.lineno}: imports {dotted}{'.' + name if name else ''}; import it from the face {face}")
            elif name is None:
                found.append(f"{node.lineno}: `import {face}`; import the names it offers (from {face} import ...)")
            elif f"{face}.{name}" in known:
                found.append(f"{node.lineno}: imports the module {face}.{name} through the face; import the names it offers instead")
    return found


@pytest.fixture(scope="module")
def modules() -> dict[str, tuple[Path, bool]]:
    return package_modules()


def test_the_reader_finds_deep_and_submodule_imports():
    known = {"judgesdk", "judgesdk.a", "judgesdk.a.b", "judgesdk.c", "judgesdk.c.d"}
    source = "from judgesdk.a.b import X\nfrom judgesdk.a import b\nfrom judgesdk.a import Y\nimport judgesdk.a.b\nfrom . import d\nfrom judgesdk.c.d import Z\n"
    import test_layers

    original = test_layers._is_folder
    test_layers._is_folder = lambda name: name in ("a", "c")  # type: ignore[assignment]
    try:
        found = deep_imports(source, "judgesdk.c.e", False, known)
    finally:
        test_layers._is_folder = original  # type: ignore[assignment]
    lines = sorted(int(f.split(":")[0]) for f in found)
    assert lines == [1, 2, 4], found  # the face import (3), the own folder's relative (5) and absolute (6) imports pass


def test_code_outside_a_folder_imports_only_its_face(modules):
    known = set(modules)
    problems = []
    for name, (path, is_package) in sorted(modules.items()):
        problems += [f"{name} ({path.relative_to(REPO) if path.is_relative_to(REPO) else path}):{p}" for p in deep_imports(path.read_text(encoding="utf-8"), name, is_package, known)]
    assert not problems, f"{len(problems)} import(s) past a folder's face:\n" + "\n".join(problems)


@pytest.mark.parametrize("users", USERS)
def test_benchmarks_and_examples_import_only_faces(modules, users):
    known = set(modules)
    problems = []
    for path in sorted((REPO / users).rglob("*.py")):
        problems += [f"{path.relative_to(REPO)}:{p}" for p in deep_imports(path.read_text(encoding="utf-8"), None, False, known)]
    assert not problems, f"{len(problems)} import(s) past a face in {users}/ (they are users: they import faces):\n" + "\n".join(problems)


def declared_homes(face: str) -> dict[str, str]:
    """What a face's source says each of its names is: name -> the module it is imported from (eagerly or under
    ``if TYPE_CHECKING:``)."""
    spec = importlib.util.find_spec(face)
    assert spec is not None and spec.origin is not None
    tree = parse(Path(spec.origin).read_text(encoding="utf-8"))
    homes = {}
    for node in tree.body:
        statements = node.body if isinstance(node, ast.If) and _is_type_checking(node.test) else [node]
        for stmt in statements:
            if not isinstance(stmt, ast.ImportFrom):
                continue
            module = _absolute(stmt, face, True)  # the adapters' face imports its modules relatively
            if module.startswith("judgesdk"):
                for alias in stmt.names:
                    homes[alias.asname or alias.name] = module
    return homes


@pytest.mark.parametrize("face", [f for f in faces() if f != "judgesdk.prompts"])
def test_a_face_names_each_of_its_names_once_for_the_type_checker_and_once_for_run_time(face):
    """Every name in ``__all__`` is declared by an import the type checker reads, and reading it at run time gives
    the very object that import names (a lazy face's table and its TYPE_CHECKING block cannot drift apart)."""
    module = importlib.import_module(face)
    homes = declared_homes(face)
    for name in module.__all__:
        if name in vars(module) and not name.startswith("_") and name not in homes:
            continue  # defined in the face itself
        assert name in homes, f"{face}.{name} is in __all__ but no import in the face declares it (add it under `if TYPE_CHECKING:`)"
        assert getattr(module, name) is getattr(importlib.import_module(homes[name]), name), f"{face}.{name} is not {homes[name]}.{name}"


def test_importing_every_face_loads_no_sdk():
    heavy = ("openai", "anthropic", "litellm", "llama_cpp", "ray", "google.genai", "starlette", "uvicorn", "matplotlib")
    code = (
        "import importlib, sys\n"
        f"for face in {faces()!r}:\n"
        "    importlib.import_module(face)\n"
        f"loaded = sorted(m for m in {heavy!r} if m in sys.modules)\n"
        "assert not loaded, loaded\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
