"""Facts about a scoring method live in its :class:`~judgesdk.scorers.spec.MethodSpec`, nowhere else.

A table of method names outside the specs (``OFF_SCALE = {"likelihood": ...}``, ``("synthetic", "fusion")``) is a
place a new method must be added by hand and that no test guards: miss it and a jury averages off-scale scores,
or a resumed run keeps stale rows. Likewise a test of a method's name (``method == "geval"``) outside the module
that declares that method. Read from the syntax tree of every module on the scorers' floor and above (the floors
below cannot import the scorers, and use the same words in vocabularies of their own: estimation methods
``auto``/``sampling``/``decision``, answer formats ``direct``/``rts``/``fusion``), this test finds:

* a dict (by its keys), tuple, list or set literal holding two or more built-in method names as string constants
  (one, where a module-level name holds it: ``OUTPUT_AS_CONTINUATION = ("likelihood",)``), outside the module
  that declares all of them;
* a comparison (``==``, ``!=``, ``in``, ``not in``) of something against a method-name constant (or a literal
  collection holding one), outside the module that declares that method.

Exceptions, each with its reason: the registry's built-in table (names and where each spec lives, no facts);
comparisons (and the literals compared) whose subject is reached through ``settings``, ``estimation`` or
``dist``/``distribution``, whose ``.method`` is an estimation or distribution method
(:class:`judgesdk.estimation.estimator.EstimationSettings`, :class:`judgesdk.core.types.LabelDistribution`), or
through ``kind`` (a request's kind in the forecast: ``decision``, ``generation``), other vocabularies sharing words
with the methods; and the modules of :data:`OTHER_VOCABULARY_MODULES`.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from judgesdk.scorers import registry

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "judgesdk"

# folders on the scorers' floor and above (tests/structure/test_layers.py FLOORS), and the faces at the top
CHECKED = ("scorers", "judging", "meta", "forecast", "jury", "gate", "distributed", "view", "serve", "cli")
REGISTRY_TABLE = ("judgesdk/scorers/registry.py", "BUILT_IN")  # names and locations only: checked below
OTHER_VOCABULARIES = {"settings", "estimation", "dist", "distribution", "kind"}  # see the module docstring
# modules whose words are another vocabulary altogether -> what the words are there
OTHER_VOCABULARY_MODULES = {
    "judgesdk/meta/readers.py": "parse modes: how a predictions file's text is read (rts: numbers, mcq: letters)",
}


def _checked_files() -> list[Path]:
    tops = [p for p in PACKAGE.glob("*.py")]
    return sorted(tops + [p for folder in CHECKED for p in (PACKAGE / folder).rglob("*.py")])


def _declared_by(path: Path) -> set[str]:
    """The method names the module at ``path`` declares: those of the built-in table that point into it."""
    module = ".".join(path.relative_to(REPO).with_suffix("").parts)
    return {name for name, where in registry.BUILT_IN.items() if where.partition(":")[0] == module}


def _names(node: ast.AST | None) -> list[str]:
    """The built-in method names ``node`` holds as string constants: itself, or the elements (keys) of a literal."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return [node.value] if node.value in registry.BUILT_IN else []
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return [name for element in node.elts for name in _names(element) if isinstance(element, ast.Constant)]
    if isinstance(node, ast.Dict):
        return [name for key in node.keys if isinstance(key, ast.Constant) for name in _names(key)]
    return []


def _words(node: ast.AST) -> set[str]:
    """The identifiers a subject is reached through (``setup.options.settings.method``: setup, options, settings)."""
    return {n.id for n in ast.walk(node) if isinstance(n, ast.Name)} | {n.attr for n in ast.walk(node) if isinstance(n, ast.Attribute)}


def _assigned_name(tree: ast.Module, target: ast.AST) -> str | None:
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is target:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            return next((t.id for t in targets if isinstance(t, ast.Name)), None)
    return None


def method_name_tables(path: Path) -> list[str]:
    """What :data:`CHECKED` modules must not hold (see the module docstring), as ``file:line: what`` lines."""
    return tables_in(path.read_text(), path.relative_to(REPO).as_posix(), _declared_by(path))


def tables_in(source: str, where: str, own: set[str]) -> list[str]:
    """The method-name tables and tests in ``source`` (the module ``where``, which declares the methods ``own``)."""
    tree = ast.parse(source, filename=where)
    if where in OTHER_VOCABULARY_MODULES:
        return []
    other = {  # literals compared with an estimation method, a distribution's method, a request's kind
        id(operand)
        for node in ast.walk(tree) if isinstance(node, ast.Compare)
        if any(_words(o) & OTHER_VOCABULARIES for o in [node.left, *node.comparators] if not _names(o))
        for operand in [node.left, *node.comparators]
    }  # fmt: skip
    module_level = {id(node.value) for node in tree.body if isinstance(node, (ast.Assign, ast.AnnAssign))}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Tuple, ast.List, ast.Set, ast.Dict)):
            names = _names(node)
            if id(node) in other:
                continue
            table = len(names) >= 2 or (names and id(node) in module_level)
            if table and not set(names) <= own and (where, _assigned_name(tree, node)) != REGISTRY_TABLE:
                found.append(f"{where}:{node.lineno}: a table of methods {', '.join(names)}")
        elif isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            for subject in operands:
                others = [o for o in operands if o is not subject]
                names = [name for o in others for name in _names(o)]
                if not names or _names(subject) or _words(subject) & OTHER_VOCABULARIES:
                    continue
                if set(names) - own:
                    found.append(f"{where}:{node.lineno}: {ast.unparse(node)} tests a method's name")
                break
    return found


def test_no_method_name_table_or_test_outside_the_specs():
    found = [line for path in _checked_files() for line in method_name_tables(path)]
    assert not found, (
        "method names outside the module declaring the method: put the fact in its MethodSpec "
        "(judgesdk/scorers/spec.py) and read it from there:\n" + "\n".join(found)
    )


@pytest.mark.parametrize(
    "source,flagged",
    [
        ('OFF = {"likelihood": "a log-probability", "synthetic": "a ranking"}', True),
        ('if method in ("synthetic", "fusion"): pass', True),
        ('if config.method == "geval": pass', True),
        ('if settings.method == "auto": pass', False),  # an estimation method
        ('if dist.method in ("sampling", "decision"): pass', False),  # a distribution's method
        ('def f():\n    kinds = ("geval", "exact")', False),  # one method name, in a function: not a table
        ('CONTINUATION = ("likelihood",)', True),  # one, but a module's table
    ],
)
def test_the_finder_sees_tables_and_tests(source, flagged):
    assert bool(tables_in(source, "judgesdk/judging/probe.py", set())) is flagged
    assert not tables_in(source, "judgesdk/scorers/probe.py", set(registry.BUILT_IN))  # the declaring module may


def test_the_exceptions_are_still_needed():
    """A module excused for another vocabulary still uses it (else the excuse goes)."""
    for where in OTHER_VOCABULARY_MODULES:
        path = REPO / where
        assert tables_in(path.read_text(), "judgesdk/judging/probe.py", set()), f"{where} no longer needs its exception"


def test_the_built_in_table_holds_only_names_and_locations():
    """Facts go in the specs: the table maps each name to a ``module:attribute`` under judgesdk.scorers."""
    for name, where in registry.BUILT_IN.items():
        module, _, attribute = where.partition(":")
        assert module.startswith("judgesdk.scorers.") and attribute.isidentifier(), (name, where)
        assert registry.method_spec(name).name == name
