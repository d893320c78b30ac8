"""Every exit of a command goes through the exit table (judgesdk.core.exits.ExitCode), read from the source with
:mod:`ast`: a literal ``return 0`` in judgesdk/cli/ (where a command's function returns its exit code) or
``sys.exit(2)`` / ``SystemExit(2)`` says a code the table may not mean (2 is "incomplete", not "usage"), and a
reader cannot find which exits say what by searching for ``ExitCode.``."""

from __future__ import annotations

import ast
from pathlib import Path

from support.source import parse

CLI = Path(__file__).resolve().parents[2] / "judgesdk" / "cli"
EXITS = {"exit", "_exit"}  # sys.exit, os._exit, builtins.exit


def _int_literals(node: ast.expr | None) -> list[ast.Constant]:
    """The int literals ``node`` evaluates to: itself, either branch of ``a if c else b``, an operand of
    ``a or b``, a negated one. A tuple (``return 0, False``: a count and a flag) is no exit code."""
    if node is None:
        return []
    if isinstance(node, ast.Constant):
        return [node] if isinstance(node.value, int) and not isinstance(node.value, bool) else []
    if isinstance(node, ast.UnaryOp):
        return _int_literals(node.operand)
    if isinstance(node, ast.IfExp):
        return _int_literals(node.body) + _int_literals(node.orelse)
    if isinstance(node, ast.BoolOp):
        return [found for value in node.values for found in _int_literals(value)]
    return []


def _callee(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""


def literal_exits(source: str) -> list[tuple[int, str]]:
    """``(line, what)`` for each int literal ``source`` returns or passes to an exit."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(parse(source)):
        if isinstance(node, ast.Return):
            found += [(c.lineno, f"return {c.value}") for c in _int_literals(node.value)]
        elif isinstance(node, ast.Call) and (_callee(node) in EXITS or _callee(node) == "SystemExit"):
            for arg in [*node.args, *(k.value for k in node.keywords)]:
                found += [(c.lineno, f"{_callee(node)}({c.value})") for c in _int_literals(arg)]
    return sorted(found)


def test_no_command_returns_or_exits_with_a_literal_code():
    offenders = {
        f"{path.relative_to(CLI.parents[1])}:{line}": what
        for path in sorted(CLI.rglob("*.py"))
        for line, what in literal_exits(path.read_text(encoding="utf-8"))
    }
    assert not offenders, f"use the named codes of judgesdk.core.exits.ExitCode: {offenders}"


def test_the_check_finds_each_form_of_a_literal_exit_and_passes_the_named_ones():
    bad = """
def a(args):
    return 0
def b(args):
    return 2 if args.x else ExitCode.OK
def c():
    sys.exit(2)
def d():
    raise SystemExit(code=1)
def e(args):
    return args.x or 1
"""
    assert [what for _, what in literal_exits(bad)] == ["return 0", "return 2", "exit(2)", "SystemExit(1)", "return 1"]
    good = """
def a(args):
    return ExitCode.OK if args.x else ExitCode.INCOMPLETE
def b():
    raise SystemExit(main())
def c():
    return 0, False
def d():
    return len(args)
"""
    assert literal_exits(good) == []


def test_the_check_reads_every_module_of_the_cli():
    modules = sorted(path.name for path in CLI.rglob("*.py"))
    assert {"app.py", "gate.py", "score.py", "usage.py"} <= set(modules)
    assert all(isinstance(parse(path.read_text(encoding="utf-8")), ast.Module) for path in CLI.rglob("*.py"))
