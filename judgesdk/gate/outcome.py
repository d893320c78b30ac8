"""A check's outcome as a :class:`~judgesdk.gate.verdict.GateResult`, and the scores checks read.

Shared by the plain checks (:mod:`judgesdk.gate.checks`) and the corrected ones (:mod:`judgesdk.gate.corrected`):
every result is built one way, and every check reads the same (calibrated) scores.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from judgesdk.core import JudgeResult
from judgesdk.gate.run import CriterionRun
from judgesdk.gate.verdict import GateKind, GateResult, Outcome
from judgesdk.meta import Calibration

__all__ = ["calibrated_scores", "gate_result", "scale_note", "undetermined"]


def calibrated_scores(results: Sequence[JudgeResult], calibration: Calibration | None) -> dict[str, float]:
    """Each scored item's score by item id, mapped to the human scale by ``calibration`` when one is given."""
    scored = {r.item_id or "": float(r.score) for r in results if r.score is not None}
    if calibration is None or not scored:
        return scored
    return dict(zip(scored, calibration.apply_many(list(scored.values())).tolist()))


def gate_result(gate: Any, kind: GateKind, outcome: Outcome | bool, observed: float | None, threshold: float | None, message: str, op: str = ">=", **details: Any) -> GateResult:
    """``gate``'s (a configured gate, or a built-in one shaped like it) result of ``kind``: ``outcome`` (True/False:
    pass/fail), the ``observed`` figure against ``threshold`` by ``op``, the ``message`` a report prints and the
    ``details`` it reads."""
    if isinstance(outcome, bool):
        outcome = "pass" if outcome else "fail"
    return GateResult(
        name=gate.label, check=gate.kind, kind=kind, criterion=gate.criterion, outcome=outcome,
        observed=observed, threshold=threshold, op=op, message=message, details=details,
    )  # fmt: skip


def undetermined(gate: Any, kind: GateKind, why: str) -> GateResult:
    """``gate``'s result when the run cannot decide it, saying ``why``."""
    return gate_result(gate, kind, "undetermined", None, getattr(gate, "min", None), why)


def scale_note(run: CriterionRun) -> str:
    """The words a message adds when ``run``'s scores were mapped to the human scale."""
    return " on the human scale" if run.calibration is not None else ""
