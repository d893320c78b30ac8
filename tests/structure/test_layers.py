"""The package's floors, and a test that every import keeps to them.

:data:`FLOORS` is the plan, from the ground up, by folder: a module's floor is the floor of the folder it
sits in (``judgesdk/<folder>/...``; ``judgesdk.providers`` and ``judgesdk.prompts`` are the repository's
top-level ``providers/`` and ``prompts/``, mapped by ``pyproject.toml``). A module may import modules of its
own floor or of a lower one, never of a higher one, and judgesdk modules never import each other in a loop.
The modules at the top of ``judgesdk/`` are faces (re-exports for the import paths users write) on the top
floor: no module in a folder imports them, nor ``judgesdk`` itself. Where a file is put decides its floor:
no module is named here.

The imports are read with :mod:`ast` from every module of the installed package, wherever they stand: at
module level, under ``if TYPE_CHECKING:``, and inside functions, relative forms included. An import moved
into a function still ties the two modules, so it counts toward loops and floors like any other; and a
judgesdk module is imported inside a function only in the folders :data:`DEFERRED_OK` names, for start-up
time, never to dodge a loop. Imports of optional third-party packages (``openai``, ``llama_cpp``...) are not
judgesdk imports and are not checked here.

Modules loaded by name at run time (``importlib.import_module``) are not read: a scorer by its method, an
adapter by its provider kind through :mod:`judgesdk.provider.registry` (which sits below the adapters on
purpose: it knows kinds by ``"module:attribute"`` name, so config, the CLI and prices read it without
importing an adapter), and a face's names on first use (:mod:`judgesdk.core.faces`; a face declares them under
``if TYPE_CHECKING:``, which is read here).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import pkgutil
import re
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from support.source import parse

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[2]

# Floors from the ground up: (what the floor is, its folders). A folder is a package directly under
# judgesdk (``judgesdk.<folder>``); its sub-packages stand on its floor.
FLOORS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("core: errors, the public data types, provenance", ("core",)),
    ("the provider layer and statistics", ("provider", "stats")),
    ("adapters, templates as data, prompting", ("providers", "prompts", "prompting", "items")),
    ("estimation: label distributions", ("estimation",)),
    ("records: the results file and the files people write", ("records",)),
    ("the fused local judge", ("fused",)),
    ("scorers: one method each", ("scorers",)),
    ("judging: config, the judge, runners", ("judging",)),
    ("analysis: meta-evaluation, calibration, diffs, cards", ("meta",)),
    ("the bill before a run; juries", ("forecast", "jury")),
    ("release gates; the Ray engine", ("gate", "distributed")),
    ("services: the results viewer, the decisions server", ("view", "serve")),
    ("the command line", ("cli",)),
)
FACES = "faces: the modules at the top of judgesdk/ and the package itself"
MAX_TOP_ENTRIES, MAX_TOP_MODULES = 25, 12  # what a newcomer sees at the top of judgesdk/

# Folders whose modules may import judgesdk modules inside functions: folder -> why.
DEFERRED_OK: dict[str, str] = {
    "cli": "start-up time: `judgesdk --help` and each command load only what they run",
    FACES: "pytest loads the plugin (judgesdk.testing) in every session; the judge is built only for tests that use it",
}


@dataclass(frozen=True)
class Import:
    importer: str
    imported: str
    line: int
    deferred: bool  # inside a function
    type_only: bool  # under ``if TYPE_CHECKING:``

    def where(self) -> str:
        how = " (inside a function)" if self.deferred else " (type checking only)" if self.type_only else ""
        return f"{self.importer}:{self.line} imports {self.imported}{how}"


# -- reading the package ----------------------------------------------------------------------------


def package_modules() -> dict[str, tuple[Path, bool]]:
    """Every module of the installed package: name -> (source file, is a package)."""
    mapped = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"].get("package-dir", {})
    roots = sorted({"judgesdk", *(name for name in mapped if name.startswith("judgesdk."))})
    found: dict[str, tuple[Path, bool]] = {}
    for root in roots:
        package = importlib.import_module(root)
        found[root] = (Path(package.__file__), True)
        for info in pkgutil.walk_packages(package.__path__, root + "."):
            spec = importlib.util.find_spec(info.name)
            assert spec is not None and spec.origin is not None, info.name
            found.setdefault(info.name, (Path(spec.origin), info.ispkg))
    return found


def imports_in(name: str, source: str, is_package: bool, known: set[str]) -> Iterator[Import]:
    """The judgesdk modules that module ``name`` imports, as each import statement names them."""

    def target(dotted: str) -> str | None:
        while dotted and dotted not in known:
            dotted = dotted.rpartition(".")[0]
        return dotted or None

    def visit(node: ast.AST, deferred: bool, type_only: bool) -> Iterator[Import]:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
                yield from visit(child, True, type_only)
            elif isinstance(child, ast.If) and _is_type_checking(child.test):
                for stmt in child.body:
                    yield from visit(ast.Module(body=[stmt], type_ignores=[]), deferred, True)
                for stmt in child.orelse:
                    yield from visit(ast.Module(body=[stmt], type_ignores=[]), deferred, type_only)
            elif isinstance(child, (ast.Import, ast.ImportFrom)):
                targets = dict.fromkeys(target(dotted) for dotted in _named(child, name, is_package, known))
                for imported in targets:
                    if imported is not None and imported != name:
                        yield Import(name, imported, child.lineno, deferred, type_only)
            else:
                yield from visit(child, deferred, type_only)

    yield from visit(parse(source), False, False)


def _named(node: ast.Import | ast.ImportFrom, name: str, is_package: bool, known: set[str]) -> list[str]:
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    base = node.module or ""
    if node.level:  # relative: from the importer's package, one level up per extra dot
        package = name if is_package else name.rpartition(".")[0]
        for _ in range(node.level - 1):
            package = package.rpartition(".")[0]
        base = f"{package}.{base}" if base else package
    # ``from pkg import mod`` imports the module pkg.mod; ``from mod import name`` imports mod
    return list(dict.fromkeys(f"{base}.{alias.name}" if f"{base}.{alias.name}" in known else base for alias in node.names))


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def folder_of(module: str) -> str | None:
    """The folder a module sits in (``judgesdk.<folder>...``), or None for a face (``judgesdk``, ``judgesdk.<module>``)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 2 or (len(parts) == 2 and _is_folder(parts[1])) else None


def _is_folder(name: str) -> bool:
    return (REPO / "judgesdk" / name / "__init__.py").exists() or name in ("providers", "prompts")


def floor_of(module: str) -> int | None:
    """The index of ``module``'s floor in :data:`FLOORS` (``len(FLOORS)`` for a face), None when its folder
    has none."""
    folder = folder_of(module)
    if folder is None:
        return len(FLOORS)
    return next((i for i, (_, folders) in enumerate(FLOORS) if folder in folders), None)


def floor_name(index: int) -> str:
    return FACES if index == len(FLOORS) else FLOORS[index][0]


def all_imports() -> tuple[dict[str, tuple[Path, bool]], list[Import]]:
    modules = package_modules()
    known = set(modules)
    found = [imp for name, (path, is_package) in sorted(modules.items()) for imp in imports_in(name, path.read_text(encoding="utf-8"), is_package, known)]
    return modules, found


def cycles(imports: list[Import]) -> list[list[str]]:
    """Groups of modules that import each other in a loop (strongly connected, more than one module)."""
    graph: dict[str, set[str]] = {}
    for imp in imports:
        graph.setdefault(imp.importer, set()).add(imp.imported)
        graph.setdefault(imp.imported, set())
    order: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    groups: list[list[str]] = []

    def connect(node: str) -> None:  # Tarjan
        order[node] = low[node] = len(order)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in order:
                connect(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], order[nxt])
        if low[node] == order[node]:
            group = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for node in sorted(graph):
        if node not in order:
            connect(node)
    return groups


def upward(imports: list[Import]) -> list[Import]:
    """Imports from a lower floor to a higher one (a folder's module importing a face counts: faces are on top)."""
    return [imp for imp in imports if (low := floor_of(imp.importer)) is not None and (high := floor_of(imp.imported)) is not None and low < high]


def deferred_not_allowed(imports: list[Import]) -> list[Import]:
    def allowed(imp: Import) -> bool:
        return (folder_of(imp.importer) or FACES) in DEFERRED_OK

    return [imp for imp in imports if imp.deferred and not allowed(imp)]


# -- the tests --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def graph() -> tuple[dict[str, tuple[Path, bool]], list[Import]]:
    return all_imports()


def test_the_reader_sees_relative_deferred_and_type_only_imports():
    known = {"judgesdk", "judgesdk.a", "judgesdk.a.b", "judgesdk.a.c", "judgesdk.d"}
    source = (
        "from typing import TYPE_CHECKING\nfrom . import c\nfrom .c import thing\nfrom .. import d\n"
        "if TYPE_CHECKING:\n    from judgesdk.d import T\n"
        "def f():\n    import judgesdk.a.c\n    from judgesdk import d\n"
    )
    found = {(i.imported, i.line, i.deferred, i.type_only) for i in imports_in("judgesdk.a.b", source, False, known)}
    assert found == {
        ("judgesdk.a.c", 2, False, False), ("judgesdk.a.c", 3, False, False), ("judgesdk.d", 4, False, False),
        ("judgesdk.d", 6, False, True), ("judgesdk.a.c", 8, True, False), ("judgesdk.d", 9, True, False),
    }  # fmt: skip
    package = {(i.imported, i.line) for i in imports_in("judgesdk.a", "from . import b\nfrom .b import x\n", True, known)}
    assert package == {("judgesdk.a.b", 1), ("judgesdk.a.b", 2)}


def test_the_walk_reaches_every_part_of_the_package(graph):
    modules, _ = graph
    for name in ("judgesdk.judging.judge", "judgesdk.scorers.pairwise", "judgesdk.gate.run", "judgesdk.cli.meta_eval", "judgesdk.providers.scripted", "judgesdk.prompts"):
        assert name in modules


def test_every_module_stands_in_a_folder_with_a_floor_or_is_a_face(graph):
    modules, _ = graph
    unplaced = sorted(name for name in modules if floor_of(name) is None)
    assert not unplaced, f"modules in folders that FLOORS in tests/structure/test_layers.py does not place (declare the folder's floor): {unplaced}"


def test_the_plan_names_only_folders_that_exist_or_are_to_come():
    """A folder of FLOORS that does not exist is allowed only for services announced in the plan."""
    to_come = {"view", "serve"}
    missing = [f for _, folders in FLOORS for f in folders if not _is_folder(f) and f not in to_come]
    assert not missing, f"FLOORS names folders that do not exist: {missing}"


def test_every_folder_says_what_lives_there_and_what_it_may_import(graph):
    """Each folder's ``__init__`` docstring names its floor's purpose and a "May import:" line; every judgesdk
    folder named there stands on a lower or the same floor."""
    modules, _ = graph
    problems = []
    folders = sorted({folder_of(m) for m in modules} - {None})
    for folder in folders:
        package = f"judgesdk.{folder}"
        doc = ast.get_docstring(parse(modules[package][0].read_text(encoding="utf-8"))) or ""
        if "May import:" not in doc:
            problems.append(f"{package}: its __init__ docstring has no 'May import:' line")
            continue
        allowed = doc.split("May import:", 1)[1]
        for named in sorted(set(re.findall(r"judgesdk\.(\w+)", allowed))):
            if floor_of(f"judgesdk.{named}.x") is not None and floor_of(f"judgesdk.{named}.x") > floor_of(package):  # type: ignore[operator]
                problems.append(f"{package} says it may import judgesdk.{named}, a higher floor")
    assert not problems, "\n".join(problems)


def test_no_import_cycles(graph):
    _, imports = graph
    found = cycles(imports)
    ties = [imp.where() for group in found for imp in imports if imp.importer in group and imp.imported in group]
    assert not found, f"{len(found)} import cycle(s): {found}\n" + "\n".join(ties)


def test_no_import_runs_up_a_floor(graph):
    _, imports = graph
    found = upward(imports)
    lines = [f"{imp.where()}: {floor_name(floor_of(imp.importer))} -> {floor_name(floor_of(imp.imported))}" for imp in found]  # type: ignore[arg-type]
    assert not found, f"{len(found)} import(s) from a lower floor to a higher one:\n" + "\n".join(lines)


def test_judgesdk_modules_are_imported_inside_functions_only_for_start_up_time(graph):
    _, imports = graph
    found = deferred_not_allowed(imports)
    assert not found, "imports of judgesdk modules inside functions (hoist them; see DEFERRED_OK):\n" + "\n".join(imp.where() for imp in found)


def test_the_top_of_the_package_stays_small():
    """What a newcomer sees in judgesdk/: at most 25 entries, at most 12 of them modules (the faces)."""
    top = sorted(p.name for p in (REPO / "judgesdk").iterdir() if not p.name.startswith("__pycache__") and (p.suffix == ".py" or (p / "__init__.py").exists()))
    modules = [name for name in top if name.endswith(".py")]
    assert len(top) <= MAX_TOP_ENTRIES, f"{len(top)} entries at the top of judgesdk/ (at most {MAX_TOP_ENTRIES}): {top}"
    assert len(modules) <= MAX_TOP_MODULES, f"{len(modules)} modules at the top of judgesdk/ (at most {MAX_TOP_MODULES}): {modules}"


def test_adapters_import_what_is_on_disk():
    """Every import in the repository's providers/ (its subfolders too, e.g. ``llamacpp/``) resolves to a file on
    disk: siblings relatively (``from ._sdk import x``, ``from . import compat``; ``..`` for the folder above, never
    out of providers/), judgesdk's own modules under judgesdk/; never ``judgesdk.providers.*``, a path that exists
    only after installation (pyproject.toml maps providers/ to it)."""
    root = REPO / "providers"
    problems = []
    for path in sorted(root.rglob("*.py")):
        where = path.relative_to(root).as_posix()
        for node in ast.walk(parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level:
                package = path.parent  # ``from .x``: the importer's own folder; one folder up per extra dot
                for _ in range(node.level - 1):
                    package = package.parent
                if package != root and root not in package.parents:
                    problems.append(f"{where}:{node.lineno}: relative import from {package}, outside providers/")
                    continue
                base = package.joinpath(*node.module.split(".")) if node.module else None
                targets = [base] if base else [package / a.name for a in node.names]
                for target in targets:
                    if not (target.with_suffix(".py").exists() or (target / "__init__.py").exists()):
                        shown = target.relative_to(root).as_posix()
                        problems.append(f"{where}:{node.lineno}: relative import of {shown}, which is not a module in providers/")
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                dotted = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                for name in dotted:
                    if name == "judgesdk.providers" or name.startswith("judgesdk.providers."):
                        problems.append(f"{where}:{node.lineno}: imports {name}; import a sibling relatively (from .x import ...)")
                    elif name.startswith("judgesdk."):
                        parts = name.split(".")
                        on_disk = REPO.joinpath(*parts).with_suffix(".py").exists() or (REPO.joinpath(*parts) / "__init__.py").exists()
                        if not on_disk:
                            problems.append(f"{where}:{node.lineno}: imports {name}, which is not a file under judgesdk/")
    assert not problems, "\n".join(problems)


def test_providers_and_prompts_stay_at_the_top_of_the_repository():
    mapped = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]["package-dir"]
    assert mapped["judgesdk.providers"] == "providers" and (REPO / "providers" / "__init__.py").exists()
    assert mapped["judgesdk.prompts"] == "prompts" and (REPO / "prompts" / "__init__.py").exists()
