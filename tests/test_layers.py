"""The package's floors, and a test that every import keeps to them.

:data:`LAYERS` is the plan, from the ground up: a module may import modules of its own floor or of a lower
one, never of a higher one, and judgesdk modules never import each other in a loop. The imports are read
with :mod:`ast` from every module of the installed package (``judgesdk.providers`` and ``judgesdk.prompts``
included: ``pyproject.toml`` maps them to their own folders), wherever they stand: at module level, under
``if TYPE_CHECKING:``, and inside functions, relative forms (``from . import x``) included. An import moved
into a function still ties the two modules, so it counts toward loops and floors like any other; and a
judgesdk module is imported inside a function only where :data:`DEFERRED_OK` says why (start-up time of
the entry points), never to dodge a loop. Imports inside functions of optional third-party packages
(``openai``, ``litellm``, ``llama_cpp``...) are not judgesdk imports and are not checked here.

Modules loaded by name at run time (``importlib.import_module``) are not read: a scorer by its method (of its
loader's floor or a lower one); an adapter by its provider kind, through ``judgesdk.registry``, which sits
below the adapters on purpose: it knows kinds by name (``"module:attribute"``, or an installed package's
entry point), so config, the CLI and prices read it without importing an adapter, and the adapter modules
import the registry to declare themselves (a plugin registry, tested in tests/test_registry.py); and the
module-level ``__getattr__`` of ``judgesdk.cost`` and ``judgesdk.batch``, which still hand out the names
that moved up to ``judgesdk.budget`` and ``judgesdk.runners``, with a :class:`DeprecationWarning` (tested
below).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import pkgutil
import sys
import warnings
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from _source import parse

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

# Floors from the ground up: (what the floor is, the modules on it). ``pkg.*`` places every module under
# ``pkg`` that is not named on its own; ``judgesdk`` alone is the root package (the package's face).
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    (
        "core: errors, the provider protocol, the public types and their provenance",
        ("judgesdk.errors", "judgesdk.provider", "judgesdk.provenance", "judgesdk.types"),
    ),
    (
        "definitions: prompt templates and fences, answer parsing and grammars, criteria presets, method options, provider kinds (the registry), prices and usage",
        (
            "judgesdk.fences", "judgesdk.templates", "judgesdk.prompts", "judgesdk.prompts.*", "judgesdk.parsing",
            "judgesdk.grammars", "judgesdk.presets", "judgesdk.method_options", "judgesdk.registry", "judgesdk.cost",
        ),
    ),
    (
        "provider stack: wrappers (cache, coalescing, retry, rate limit, overload guard, budget), adapters and their batch backends",
        (
            "judgesdk.cache", "judgesdk.coalesce", "judgesdk.retry", "judgesdk.ratelimit", "judgesdk.breaker",
            "judgesdk.budget", "judgesdk.batch", "judgesdk.providers", "judgesdk.providers.*",
        ),
    ),
    (
        "estimation: label distributions, estimates, the fused judge's signals and model",
        (
            "judgesdk.distributions", "judgesdk.estimation", "judgesdk.stats", "judgesdk.fused", "judgesdk.fused.model",
            "judgesdk.fused.signals", "judgesdk.fused.text", "judgesdk.fused.domains", "judgesdk.fused_data",
        ),
    ),
    (
        "scorers: one method each, and post-processors over their results",
        ("judgesdk.scorers", "judgesdk.scorers.*", "judgesdk.postprocess"),
    ),
    (
        "judge: the configured provider stack, the judge, the results file",
        ("judgesdk.config", "judgesdk.judge", "judgesdk.records", "judgesdk.records.*", "judgesdk.runlog"),
    ),
    (
        "analysis: meta-evaluation, calibration, fitting the fused judge, comparing two runs (results in, no judging)",
        (
            "judgesdk.meta", "judgesdk.meta.*", "judgesdk.calibration", "judgesdk.fused.fit", "judgesdk.fused.priors", "judgesdk.fused.train", "judgesdk.fused.refit",
            "judgesdk.diff",
        ),
    ),
    (
        "runs: the budgeted and offline runners, juries, the Ray engine, the bill before a run, the release gate, bench, the pytest plugin",
        (
            "judgesdk.runners", "judgesdk.jury", "judgesdk.jury.*", "judgesdk.distributed", "judgesdk.distributed.*", "judgesdk.forecast", "judgesdk.forecast_planner", "judgesdk.forecast_tokens",
            "judgesdk.forecast_replay", "judgesdk.forecast_report", "judgesdk.gate", "judgesdk.gate.*", "judgesdk.bench",
            "judgesdk.testing",
        ),
    ),
    (
        "entry points: the command line and the package's face",
        (
            "judgesdk.cli", "judgesdk.score_cli", "judgesdk.compare_cli", "judgesdk.gate_cli", "judgesdk.meta.cli", "judgesdk.card_cli",
            "judgesdk.diff_cli", "judgesdk",
        ),
    ),
)  # fmt: skip

# Importers that may import judgesdk modules inside functions: importer -> (what, why).
DEFERRED_OK: dict[str, tuple[str, str]] = {
    "judgesdk.cli": ("judgesdk", "start-up time: `judgesdk --help` and each command load only what they run"),
    "judgesdk.score_cli": ("judgesdk", "start-up time of the CLI, which registers these commands"),
    "judgesdk.compare_cli": ("judgesdk", "start-up time of the CLI, which registers these commands"),
    "judgesdk.gate_cli": ("judgesdk", "start-up time of the CLI, which registers these commands"),
    "judgesdk.meta.cli": ("judgesdk", "start-up time of the CLI, which registers these commands"),
    "judgesdk.card_cli": ("judgesdk", "start-up time of the CLI, which registers these commands"),
    "judgesdk.diff_cli": ("judgesdk", "start-up time of the CLI, which registers these commands"),
    "judgesdk.testing": ("judgesdk", "pytest loads the plugin in every session; the judge is built only for tests that use it"),
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
    pyproject = Path(__file__).resolve().parents[1] / "pyproject.toml"
    mapped = tomllib.loads(pyproject.read_text(encoding="utf-8"))["tool"]["setuptools"].get("package-dir", {})
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


def floor_of(module: str) -> int | None:
    """The index of ``module``'s floor in :data:`LAYERS`: its own entry, else its nearest ``pkg.*``."""
    for index, (_, members) in enumerate(LAYERS):
        if module in members:
            return index
    parent = module
    while "." in parent:
        parent = parent.rpartition(".")[0]
        for index, (_, members) in enumerate(LAYERS):
            if f"{parent}.*" in members:
                return index
    return None


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
    """Imports from a lower floor to a higher one."""
    return [imp for imp in imports if (low := floor_of(imp.importer)) is not None and (high := floor_of(imp.imported)) is not None and low < high]


def deferred_not_allowed(imports: list[Import]) -> list[Import]:
    def allowed(imp: Import) -> bool:
        what, _ = DEFERRED_OK.get(imp.importer, ("", ""))
        return bool(what) and (imp.imported == what or imp.imported.startswith(what + "."))

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
    for name in ("judgesdk.judge", "judgesdk.scorers.pairwise", "judgesdk.gate.run", "judgesdk.meta.cli", "judgesdk.providers.scripted", "judgesdk.prompts"):
        assert name in modules


def test_every_module_has_a_floor(graph):
    modules, _ = graph
    unplaced = sorted(name for name in modules if floor_of(name) is None)
    assert not unplaced, f"modules with no floor in tests/test_layers.py LAYERS (declare where each stands): {unplaced}"


def test_the_plan_names_only_modules_that_exist(graph):
    modules, _ = graph
    stale = [m for _, members in LAYERS for m in members if not m.endswith(".*") and m not in modules]
    assert not stale, f"LAYERS names modules that do not exist: {stale}"


def test_no_import_cycles(graph):
    _, imports = graph
    found = cycles(imports)
    ties = [imp.where() for group in found for imp in imports if imp.importer in group and imp.imported in group]
    assert not found, f"{len(found)} import cycle(s): {found}\n" + "\n".join(ties)


def test_no_import_runs_up_a_floor(graph):
    _, imports = graph
    found = upward(imports)
    lines = [f"{imp.where()}: floor {floor_of(imp.importer)} ({LAYERS[floor_of(imp.importer)][0].split(':')[0]}) -> floor {floor_of(imp.imported)} ({LAYERS[floor_of(imp.imported)][0].split(':')[0]})" for imp in found]  # type: ignore[index]
    assert not found, f"{len(found)} import(s) from a lower floor to a higher one:\n" + "\n".join(lines)


def test_judgesdk_modules_are_imported_inside_functions_only_for_start_up_time(graph):
    _, imports = graph
    found = deferred_not_allowed(imports)
    assert not found, "imports of judgesdk modules inside functions (hoist them; see DEFERRED_OK):\n" + "\n".join(imp.where() for imp in found)


@pytest.mark.parametrize(
    ("old", "name", "new"),
    [
        ("judgesdk.cost", "Budget", "judgesdk.budget"),
        ("judgesdk.cost", "BudgetMeter", "judgesdk.budget"),
        ("judgesdk.cost", "BudgetState", "judgesdk.budget"),
        ("judgesdk.cost", "BudgetedProvider", "judgesdk.budget"),
        ("judgesdk.cost", "budgeted_judge", "judgesdk.runners"),
        ("judgesdk.cost", "score_within_budget", "judgesdk.runners"),
        ("judgesdk.cost", "ascore_within_budget", "judgesdk.runners"),
        ("judgesdk.batch", "run_offline", "judgesdk.runners"),
        ("judgesdk.batch", "OfflineReport", "judgesdk.runners"),
    ],
)
def test_moved_names_still_load_from_their_old_module_with_a_warning(old, name, new):
    module = importlib.import_module(old)
    with pytest.warns(DeprecationWarning, match=new):
        value = getattr(module, name)
    assert value is getattr(importlib.import_module(new), name)


def test_documented_import_paths_work_without_warnings():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from judgesdk.cost import CostModel, Price, price_for, summarize_usage  # noqa: F401
        from judgesdk.judge import Judge, as_criteria, as_criterion  # noqa: F401
        from judgesdk.provider import find_layer  # noqa: F401
        from judgesdk.scorers.pairwise import as_criterion as pairwise_criterion  # noqa: F401
