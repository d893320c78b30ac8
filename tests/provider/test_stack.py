"""The provider stack is assembled in one place (:func:`judgesdk.provider.stack.assemble`), in one order.

Reading the package's source with :mod:`ast`: no module but ``judgesdk/provider/stack.py`` instantiates a layer (a
class defined in ``judgesdk/provider/layers/``). Building a stack with every layer: they come in the order the
stack module's docstring gives.
"""

from __future__ import annotations

import ast
from pathlib import Path

from judgesdk.judging.judge_config import load_config
from judgesdk.provider.layers.answers import AnswerCheck
from judgesdk.provider.layers.batch import Deferral, DeferringProvider
from judgesdk.provider.layers.breaker import OverloadGuard
from judgesdk.provider.layers.budget import Budget, BudgetedProvider, BudgetMeter, MeteredProvider, UsageMeter
from judgesdk.provider.layers.cache import CachedProvider
from judgesdk.provider.layers.coalesce import CoalescingProvider
from judgesdk.provider.layers.ratelimit import SharedLimitProvider
from judgesdk.provider.layers.retry import RetryingProvider
from judgesdk.provider.layers.witness import Witness
from judgesdk.provider.protocol import WrapperProvider
from judgesdk.provider.stack import Extras, StackPlan, assemble, witnessed
from judgesdk.providers.scripted import ScriptedProvider

from support.source import parse

REPO = Path(__file__).resolve().parents[2]
LAYERS = REPO / "judgesdk" / "provider" / "layers"
STACK = REPO / "judgesdk" / "provider" / "stack.py"


def layer_classes() -> set[str]:
    """Names of the classes the layer modules define (the wrappers and their helpers)."""
    return {
        node.name
        for path in LAYERS.glob("*.py")
        for node in ast.walk(parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.ClassDef) and any(isinstance(b, ast.Name) and b.id == "WrapperProvider" for b in node.bases)
    }


def instantiations(source: str, names: set[str]) -> list[str]:
    found = []
    for node in ast.walk(parse(source)):
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else func.attr if isinstance(func, ast.Attribute) else None
            if name in names:
                found.append(f"line {node.lineno}: {name}(...)")
    return found


def test_the_layer_classes_are_found():
    assert {"CachedProvider", "CoalescingProvider", "RetryingProvider", "OverloadGuard", "BudgetedProvider", "MeteredProvider",
            "DeferringProvider", "SharedLimitProvider", "RateLimitedProvider", "ProviderPool", "Witness"} <= layer_classes()  # fmt: skip


def test_no_module_but_the_stack_composes_layers():
    names = layer_classes()
    offenders = {}
    for path in sorted([*(REPO / "judgesdk").rglob("*.py"), *(REPO / "providers").glob("*.py")]):
        if path == STACK or path.parent == LAYERS:
            continue
        hits = instantiations(path.read_text(encoding="utf-8"), names)
        if hits:
            offenders[str(path.relative_to(REPO))] = hits
    assert not offenders, f"layers instantiated outside judgesdk/provider/stack.py (add the layer to StackPlan or Extras): {offenders}"


def test_the_check_finds_a_layer_built_elsewhere():
    assert instantiations("p = RetryingProvider(CachedProvider(x, c))\n", {"RetryingProvider", "CachedProvider"}) == [
        "line 1: RetryingProvider(...)", "line 1: CachedProvider(...)",
    ]  # fmt: skip
    assert not instantiations("p = assemble(x, plan)\n", layer_classes())


class _Permits:
    async def acquire(self, request, multiple_samples):  # pragma: no cover - never called here
        return 0

    def release(self, ticket, usage, rate_limited=False, retry_after=None):  # pragma: no cover
        return None


def test_every_layer_stands_in_its_documented_place(tmp_path):
    config = load_config({"cache": {"directory": str(tmp_path)}})
    extras = Extras(budget=BudgetMeter(Budget(max_tokens=10)), meter=UsageMeter(), defer=Deferral(), shared_limit=_Permits())
    stack = witnessed(assemble(ScriptedProvider(lambda r: "3"), config.stack_plan(), extras))
    order = []
    layer = stack
    while isinstance(layer, WrapperProvider):
        order.append(type(layer))
        layer = layer.inner
    assert order == [
        Witness, CoalescingProvider, CachedProvider, RetryingProvider, OverloadGuard, BudgetedProvider, MeteredProvider,
        DeferringProvider, SharedLimitProvider, AnswerCheck,
    ]  # fmt: skip
    assert isinstance(layer, ScriptedProvider)


def test_a_plan_leaves_out_what_it_does_not_ask_for(tmp_path):
    bare = assemble(ScriptedProvider(lambda r: "3"), StackPlan(retry=None, overload=None, cache=None, coalesce=False))
    assert isinstance(bare, AnswerCheck) and isinstance(bare.inner, ScriptedProvider)  # the answer check is always there (issue 29 item 2)
    off = load_config({"cache": {"enabled": False}, "overload": {"enabled": False}}).stack_plan()
    assert [type(p) for p in (assemble(ScriptedProvider(lambda r: "3"), off), )] == [CoalescingProvider]
    assert type(assemble(ScriptedProvider(lambda r: "3"), off).inner) is RetryingProvider
