"""Test modules are imported by basename (tests/ has no ``__init__.py``; pytest's default import mode puts each
folder on ``sys.path``), so two files named alike in different folders stop the whole run at collection
("import file mismatch"), as tests/fused/ and tests/integration/'s test_fused_server.py once did."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

TESTS = Path(__file__).resolve().parent.parent


def test_no_two_test_modules_share_a_basename():
    seen: dict[str, list[str]] = defaultdict(list)
    for path in TESTS.rglob("*.py"):
        if path.name.startswith("test_") or path.name == "conftest.py":
            seen[path.name].append(str(path.relative_to(TESTS)))
    clashes = {name: paths for name, paths in seen.items() if len(paths) > 1 and name != "conftest.py"}
    assert not clashes, f"rename one of each: {clashes}"
