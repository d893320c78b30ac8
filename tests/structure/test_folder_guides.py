"""Every folder's guide (the docstring of its ``__init__.py``) names each module and sub-package of the folder.

Why: the guide is where a maintainer starts; a module it leaves out (the one reader of results, the CLI's exit
table, the runner) is a module nobody finds until they grep. A module is named by its file (``results.py``), by
its dotted path (``:mod:`~judgesdk.records.results```, or a name in it: ``:class:`~judgesdk.records.results.Results```),
or as the first cell of a row of the guide's module table (````results````); a sub-package the same ways, or
by its folder (``pairwise/``). A word alone does not count: ``results`` is also a config key.
Private modules (``_name.py``) are the folder's own business and may go unnamed. The folders are those of the
package as the repository holds it: ``judgesdk/`` and its folders, ``providers/`` (``judgesdk.providers``) and
``prompts/`` (``judgesdk.prompts``), read with :mod:`ast`, so a new module fails here until its guide names it.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOPS = ("judgesdk", "providers", "prompts")  # the package's folders in the repository (pyproject.toml's package-dir)


def folders() -> list[Path]:
    """Every package folder (one with an ``__init__.py``) under :data:`TOPS`, the tops included."""
    found = []
    for top in TOPS:
        found += sorted(init.parent for init in (ROOT / top).rglob("__init__.py") if "__pycache__" not in init.parts)
    return found


def members(folder: Path) -> list[tuple[str, bool]]:
    """The folder's public modules and sub-packages: (name, whether it is a sub-package)."""
    found = [(p.stem, False) for p in sorted(folder.glob("*.py")) if p.name != "__init__.py" and not p.name.startswith("_")]
    found += [(p.name, True) for p in sorted(folder.iterdir()) if p.is_dir() and (p / "__init__.py").exists() and not p.name.startswith("_")]
    return found


def dotted(folder: Path) -> str:
    """The import path of a package folder (``providers/llamacpp`` is ``judgesdk.providers.llamacpp``)."""
    parts = folder.relative_to(ROOT).parts
    return ".".join(parts if parts[0] == "judgesdk" else ("judgesdk", *parts))


def named(guide: str, name: str, package: bool, where: str) -> bool:
    """Whether ``guide``, the guide of the package at import path ``where``, names its module (or sub-package,
    when ``package``) ``name`` in one of the ways the module docstring lists."""
    forms = (
        rf"(?<![\w.]){re.escape(name)}/" if package else rf"(?<![\w.]){re.escape(name)}\.py\b",  # its file or folder
        rf"(?<![\w.]){re.escape(where)}\.{re.escape(name)}\b",  # its dotted path, or a name's in it
        rf"(?m)^\s*``{re.escape(name)}``\s",  # the first cell of a table row
    )
    return any(re.search(form, guide) for form in forms)


def unnamed(folder: Path) -> list[str]:
    """The public modules and sub-packages of ``folder`` that its guide does not name."""
    guide = ast.get_docstring(ast.parse((folder / "__init__.py").read_text(encoding="utf-8"))) or ""
    where = dotted(folder)
    return [f"{name}/" if package else f"{name}.py" for name, package in members(folder) if not named(guide, name, package, where)]


@pytest.mark.parametrize("folder", folders(), ids=lambda f: str(f.relative_to(ROOT)))
def test_guide_names_every_module(folder: Path) -> None:
    missing = unnamed(folder)
    assert not missing, f"{folder.relative_to(ROOT)}/__init__.py's docstring does not name {', '.join(missing)}: add a line saying what each owns"


def test_named_reads_files_paths_and_table_rows() -> None:
    """The rule itself: a file, a dotted path or a table row counts; a bare word, or a longer name that
    contains the module's, does not."""
    records = "judgesdk.records"
    assert named("the reader (results.py)", "results", False, records)
    assert named("see :mod:`~judgesdk.records.results`", "results", False, records)
    assert named(":class:`~judgesdk.records.results.Results`", "results", False, records)
    assert named("``schema``     the typed row\n``results``    the reader", "results", False, records)
    assert named("the adapter folder llamacpp/", "llamacpp", True, "judgesdk.providers")
    assert not named("runners.py only", "runner", False, "judgesdk.judging")
    assert not named(":mod:`~judgesdk.judging.runners`", "runner", False, "judgesdk.judging")
    assert not named("the gate's ``results``, the results file", "results", False, records)
    assert not named("my_results.py, judgesdk.gate.results", "results", False, records)
