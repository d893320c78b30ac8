"""Old import paths, kept working for one release with a :class:`DeprecationWarning`.

judgesdk 0.2 put its modules into folders, one concern each (the package docstring has the plan). Code
written against 0.1 imports ``judgesdk.cache``, ``judgesdk.gate.ppi``, ``judgesdk.runners``...; those paths
are not files any more. :class:`MovedFinder` (installed by ``judgesdk/__init__``, after the normal
finders, so a real module always wins) answers them: importing an old path gives a small module that warns
once, names the new home, and hands out the new home's attributes. Names that moved between modules before
0.2 (``judgesdk.cost.Budget`` and its kin) are answered the same way, from :data:`MOVED_NAMES`.

Nothing inside judgesdk imports an old path (tests/structure/test_layers.py reads every import); the table
is for users' code, and ``tests/structure/test_moved.py`` imports every entry.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
import warnings
from typing import Any

__all__ = ["MOVED", "MOVED_NAMES", "MovedFinder", "install"]

REMOVAL = "judgesdk 0.3"

# old module path -> its home now
MOVED: dict[str, str] = {
    "judgesdk.provenance": "judgesdk.core.provenance",
    "judgesdk.registry": "judgesdk.provider.registry",
    "judgesdk.cost": "judgesdk.provider.pricing",
    "judgesdk.cache": "judgesdk.provider.layers.cache",
    "judgesdk.coalesce": "judgesdk.provider.layers.coalesce",
    "judgesdk.retry": "judgesdk.provider.layers.retry",
    "judgesdk.ratelimit": "judgesdk.provider.layers.ratelimit",
    "judgesdk.breaker": "judgesdk.provider.layers.breaker",
    "judgesdk.budget": "judgesdk.provider.layers.budget",
    "judgesdk.batch": "judgesdk.provider.layers.batch",
    "judgesdk.gate.ppi": "judgesdk.stats.ppi",
    "judgesdk.gate.stats": "judgesdk.stats.resampling",
    "judgesdk.scorers.positional": "judgesdk.stats.positional",
    "judgesdk.templates": "judgesdk.prompting.templates",
    "judgesdk.fences": "judgesdk.prompting.fences",
    "judgesdk.distributions": "judgesdk.estimation.distributions",
    "judgesdk.parsing": "judgesdk.estimation.parsing",
    "judgesdk.grammars": "judgesdk.estimation.grammars",
    "judgesdk.postprocess": "judgesdk.scorers.postprocess",
    "judgesdk.method_options": "judgesdk.scorers.method_options",
    "judgesdk.config": "judgesdk.judging.judge_config",
    "judgesdk.runners": "judgesdk.judging.runners",
    "judgesdk.runlog": "judgesdk.records",
    "judgesdk.calibration": "judgesdk.meta.calibration",
    "judgesdk.diff": "judgesdk.meta.diff",
    "judgesdk.bench": "judgesdk.meta.bench",
    "judgesdk.meta.report": "judgesdk.meta.judge_report",
    "judgesdk.forecast_planner": "judgesdk.forecast.planner",
    "judgesdk.forecast_replay": "judgesdk.forecast.kv_replay",
    "judgesdk.forecast_report": "judgesdk.forecast.bill",
    "judgesdk.forecast_tokens": "judgesdk.forecast.tokens",
    "judgesdk.gate.config": "judgesdk.gate.gate_config",
    "judgesdk.gate.report": "judgesdk.gate.render",
    "judgesdk.jury.verdict": "judgesdk.jury.consensus",
    "judgesdk.score_cli": "judgesdk.cli.score",
    "judgesdk.compare_cli": "judgesdk.cli.compare",
    "judgesdk.gate_cli": "judgesdk.cli.gate",
    "judgesdk.card_cli": "judgesdk.cli.card",
    "judgesdk.diff_cli": "judgesdk.cli.diff",
    "judgesdk.meta.cli": "judgesdk.cli.meta_eval",
    "judgesdk.distributed.cli": "judgesdk.cli.ray_engine",
}

# (old module path, name) -> the module that holds the name now, for names that left their module
MOVED_NAMES: dict[tuple[str, str], str] = {
    ("judgesdk.cost", "Budget"): "judgesdk.provider.layers.budget",
    ("judgesdk.cost", "BudgetMeter"): "judgesdk.provider.layers.budget",
    ("judgesdk.cost", "BudgetState"): "judgesdk.provider.layers.budget",
    ("judgesdk.cost", "BudgetedProvider"): "judgesdk.provider.layers.budget",
    ("judgesdk.cost", "budgeted_judge"): "judgesdk.judging.runners",
    ("judgesdk.cost", "score_within_budget"): "judgesdk.judging.runners",
    ("judgesdk.cost", "ascore_within_budget"): "judgesdk.judging.runners",
    ("judgesdk.batch", "run_offline"): "judgesdk.judging.runners",
    ("judgesdk.batch", "OfflineReport"): "judgesdk.judging.runners",
}


def _forwarding_module(old: str, new: str) -> types.ModuleType:
    """A module standing at ``old`` whose attributes are those of ``new`` (or of a name's own new home)."""
    module = types.ModuleType(old, f"Moved to {new} (this path goes in {REMOVAL}).")

    def __getattr__(name: str) -> Any:
        home = MOVED_NAMES.get((old, name), new)
        if name.startswith("__"):
            raise AttributeError(name)
        return getattr(importlib.import_module(home), name)

    def __dir__() -> list[str]:
        return sorted(dir(importlib.import_module(new)))

    module.__getattr__ = __getattr__  # type: ignore[method-assign]
    module.__dir__ = __dir__  # type: ignore[method-assign]
    return module


class _Loader(importlib.abc.Loader):
    def __init__(self, new: str) -> None:
        self.new = new

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        return _forwarding_module(spec.name, self.new)

    def exec_module(self, module: types.ModuleType) -> None:
        warnings.warn(
            f"{module.__name__} moved to {self.new}: import it from there ({module.__name__} goes in {REMOVAL})",
            DeprecationWarning,
            stacklevel=2,
        )


class MovedFinder(importlib.abc.MetaPathFinder):
    """Finds the old paths of :data:`MOVED`, after every other finder has failed to."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        new = MOVED.get(fullname)
        if new is None:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Loader(new))


def install() -> None:
    """Put one :class:`MovedFinder` at the end of ``sys.meta_path`` (idempotent)."""
    if not any(isinstance(finder, MovedFinder) for finder in sys.meta_path):
        sys.meta_path.append(MovedFinder())
