"""The verdict: one object per gate outcome, one status, one exit code.

Everything that is printed and the exit code derive from :class:`Verdict` and nothing else, so a
printed "FAIL" can never exit 0. The status rules (quality failures give ``fail``; reliability,
completeness and undetermined gates give ``inconclusive``, which wins) are in the
:mod:`judgesdk.gate` docstring and in :func:`verdict_status`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field, computed_field

from judgesdk.core import ExitCode
from judgesdk.provider import BudgetState, CostReport

GateKind = Literal["quality", "reliability", "completeness"]
Outcome = Literal["pass", "fail", "undetermined"]
Status = Literal["pass", "fail", "inconclusive"]
EXIT_CODES: dict[str, int] = {"pass": ExitCode.OK, "fail": ExitCode.FAILED, "inconclusive": ExitCode.INCOMPLETE}


class GateResult(BaseModel):
    """One gate's outcome: the value observed, the threshold it was held to, and why."""

    name: str
    check: str  # mean, pass_rate, ci_lower, ppi_ci_lower, corrected_pass_rate, ppi_regression, regression, review, coverage, completeness, budget, methods
    kind: GateKind
    criterion: str | None
    outcome: Outcome
    observed: float | None
    threshold: float | None
    op: Literal[">=", "<="]
    message: str
    details: dict[str, Any] = Field(default_factory=dict)


def verdict_status(gates: Sequence[GateResult]) -> Status:
    """pass / fail / inconclusive from the gates (rules in the :mod:`judgesdk.gate` docstring)."""
    if any(g.outcome == "undetermined" or (g.outcome == "fail" and g.kind != "quality") for g in gates):
        return "inconclusive"
    if any(g.outcome == "fail" for g in gates):
        return "fail"
    return "pass"


_HEADLINES = {
    "pass": "every gate passed",
    "fail": "a quality gate failed",
    "inconclusive": "the judge was unreliable, the run incomplete, or a gate could not be evaluated",
}


class Verdict(BaseModel):
    """The one object that decides what is printed and the exit code."""

    gates: list[GateResult]
    usage: CostReport | None = None
    budget: BudgetState | None = None
    source: str = ""
    notes: list[str] = Field(default_factory=list)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def status(self) -> Status:
        return verdict_status(self.gates)

    @computed_field  # type: ignore[prop-decorator]
    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.status]

    @property
    def headline(self) -> str:
        return _HEADLINES[self.status]
