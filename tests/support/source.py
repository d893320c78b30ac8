"""Reading the package's source with :mod:`ast`, for the tests that check its structure
(tests/structure/test_layers.py, tests/records/test_records_owner.py, tests/providers/test_llamacpp_compat.py)."""

from __future__ import annotations

import ast
import pickle
import subprocess
import sys


def parse(source: str) -> ast.Module:
    """``ast.parse``, or the same parse in a fresh interpreter when this one refuses. CPython 3.11.7 can raise
    ``SystemError: AST constructor recursion depth mismatch`` for any source once an earlier test in the
    process has upset its recursion bookkeeping (seen in full-suite runs, never in a file run alone); what a
    module imports does not depend on which interpreter read it."""
    try:
        return ast.parse(source)
    except SystemError:
        child = "import ast, pickle, sys; sys.stdout.buffer.write(pickle.dumps(ast.parse(sys.stdin.read())))"
        done = subprocess.run([sys.executable, "-c", child], input=source.encode("utf-8"), capture_output=True, check=True)
        return pickle.loads(done.stdout)
