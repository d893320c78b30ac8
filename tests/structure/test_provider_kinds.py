"""Facts about a vendor live with its adapter (its :class:`~judgesdk.provider.registry.ProviderSpec`), not in shared code.

A table keyed by provider kind (``{"anthropic": {...}}``) or a test of a kind's name (``kind == "anthropic"``) in a
module under ``judgesdk/`` is a fact about one vendor that a new adapter cannot declare for itself: it learns of it
when a test fails, or never. Read from the syntax tree of every module under ``judgesdk/`` (the adapters are the
top-level ``providers/``, not read here), this test finds a string constant equal to a built-in kind's name (or an
alias) that is

* a key of a dict literal, or
* compared (``==``, ``!=``, ``in``, ``not in``), alone or in a literal tuple, list or set.

Allowed, each with its reason (:data:`ALLOWED`): the registry's built-in table, which names each kind and where its
spec lives (as an installed package's entry point does), and nothing about the vendor; and an ``api`` value that
shares its name with a kind.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

from judgesdk.provider.registry import BUILT_IN, BUILT_IN_ALIASES

REPO = Path(__file__).resolve().parents[2]
KINDS = frozenset(BUILT_IN) | frozenset(BUILT_IN_ALIASES)

# (module path, the name's use: "key" or "compared", the name) -> why it may stay
ALLOWED: dict[tuple[str, str, str], str] = {
    **{("judgesdk/provider/registry.py", "key", kind): "the built-in table: a kind's name and where its spec is declared" for kind in KINDS},
    ("judgesdk/forecast/job.py", "compared", "systemone"): (
        "an adapter's api value (System One's decision format, which the litellm adapter also speaks), compared to price "
        "a decision call: not the systemone kind"
    ),
}


def _names(node: ast.expr) -> Iterator[ast.Constant]:
    """String constants in ``node``: itself, or the members of a tuple, list or set literal."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        yield node
    elif isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        for element in node.elts:
            yield from _names(element)


def kind_names(source: str, filename: str = "<module>") -> list[tuple[int, str, str]]:
    """(line, "key" or "compared", name) of each built-in kind's name used as a dict key or compared in ``source``."""
    found: list[tuple[int, str, str]] = []
    for node in ast.walk(ast.parse(source, filename=filename)):
        if isinstance(node, ast.Dict):
            found += [(c.lineno, "key", c.value) for key in node.keys if key is not None for c in _names(key) if c.value in KINDS]
        elif isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            found += [(c.lineno, "compared", c.value) for operand in operands for c in _names(operand) if c.value in KINDS]
    return found


def _modules() -> list[Path]:
    return sorted((REPO / "judgesdk").rglob("*.py"))


def test_the_built_in_kinds_are_known():
    assert {"openai", "anthropic", "litellm", "local"} <= KINDS


@pytest.mark.parametrize("path", _modules(), ids=lambda p: str(p.relative_to(REPO)))
def test_no_shared_module_keys_or_compares_a_provider_kind(path):
    where = str(path.relative_to(REPO))
    found = [(line, use, name) for line, use, name in kind_names(path.read_text(encoding="utf-8"), where) if (where, use, name) not in ALLOWED]
    assert not found, (
        f"{where} names provider kinds: "
        + ", ".join(f"line {line}: {name!r} ({'a dict key' if use == 'key' else 'compared'})" for line, use, name in found)
        + ". Declare the fact on the adapter's ProviderSpec (answer_neutral, apis, pricing, detect_env/detect_order) and read it from the spec"
    )


def test_every_allowance_is_still_needed():
    """An allowance no module uses any more is removed, so the list stays the short one the docstring promises."""
    used = {(str(p.relative_to(REPO)), use, name) for p in _modules() for _, use, name in kind_names(p.read_text(encoding="utf-8"))}
    stale = sorted(set(ALLOWED) - used)
    assert not stale, f"remove these from ALLOWED: {stale}"


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ('NEUTRAL = {"anthropic": {"prompt_cache": "why"}}', [(1, "key", "anthropic")]),
        ('if kind == "anthropic":\n    pass', [(1, "compared", "anthropic")]),
        ('ok = entry.get("x") in ("bedrock", "litellm")', [(1, "compared", "litellm")]),
        ('label = "local"\nprint({"model": "openai"})', []),  # a value, not a key or a comparison
    ],
)
def test_the_finder_sees_keys_and_comparisons(source, expected):
    assert kind_names(source) == expected
