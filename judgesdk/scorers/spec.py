"""What a scoring method declares about itself, for the code that runs, checks, resumes and bills it.

Each scorer module declares a :class:`MethodSpec` per method it implements (``likert`` declares ``geval``,
``direct`` and ``sampling``), and the rest of judgesdk reads its facts from there, never from a table of method
names: the options it reads and their types (``method_options`` checked at config load), whether its score
lies off the criterion's scale (a jury refuses it), whether its answers come from a fused fit (part of the
resume key), whether it scores the judged output as the prompt's continuation (its template shows no
``{{output}}``), how its bill is forecast, and how it meets a provider that answers decision questions.
:mod:`judgesdk.scorers.registry` finds the specs: built-in, registered in process, or from entry points.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from judgesdk.core import Criterion, JudgeItem, JudgeResult
from judgesdk.provider import Provider
from judgesdk.scorers.common import ScorerOptions

__all__ = ["DecisionPath", "MethodSpec", "OptionType", "ScoreFn", "option_problem"]

# (provider, item, criterion, options, method name) -> the result; the method name lets one coroutine serve several
ScoreFn = Callable[[Provider, JudgeItem, Criterion, ScorerOptions, str], Awaitable[JudgeResult]]

# How a method_options value is checked before any work (the scorer then reads it with int(), float(), bool()...):
# "any": not checked here (the scorer says what is wrong); "positive_integer": an int >= 1 (not a bool);
# "non_negative_number": an int or float >= 0 (not a bool); "boolean": true or false.
OptionType = Literal["any", "positive_integer", "non_negative_number", "boolean"]

# How a method meets a provider that answers typed decision questions (judgesdk.scorers.decision.chosen):
# "never": it asks its own prompts; "asked": it is the decision request itself (a provider without decisions is a
# CapabilityError); "chosen": answered by a decision request where the estimation settings pick ``decision``, its
# result then named "<method>/decision"; "chosen_after_fits": the same, except on a provider a fused fit may answer
# (log-likelihoods and exact labels), where the method decides per criterion, its result named "decision/<type>".
DecisionPath = Literal["never", "asked", "chosen", "chosen_after_fits"]


@dataclass(frozen=True)
class MethodSpec:
    """One scoring method, as its scorer module declares it.

    ``name``: what configs and ``--method`` call it (letters, digits, ``.``, ``_``, ``-``).
    ``score``: the scorer coroutine (see :data:`ScoreFn`); it lives in the module that declares the spec, which
    is imported only when the method's spec is first read.
    ``options``: the ``method_options`` keys its scorer reads, in the order error messages list them, each with
    its :data:`OptionType`; any other key given for this method is refused, naming these.
    ``off_scale``: None when its score is a value on the criterion's scale; else what the score is instead
    ("a log-probability"), named in the error that refuses it as a jury judge.
    ``reads_fits``: its answers come from a fused fit file, so the fits' identities join the resume key
    (:func:`judgesdk.judging.judge_config.ask_for`): a refitted or new fit asks again.
    ``output_as_continuation``: its template holds no ``{{output}}``: the judged output is scored as the prompt's
    continuation, so a template without it is not refused.
    ``forecast_approximation``: None when the forecast counts its requests as the run makes them; else why the
    forecast is an approximation, shown in its notes.
    ``decisions``: how it meets a provider that answers decision questions (:data:`DecisionPath`).
    ``resolves_per_criterion``: it picks another method per criterion, and its results name the one picked, so
    a fine-grained result names the family its parts resolved to.
    ``samples``: its score is the mean of answers sampled with the estimation settings' ``samples`` and
    ``temperature``, which a judge card therefore records.
    """

    name: str
    score: ScoreFn
    options: Mapping[str, OptionType] = field(default_factory=dict)
    off_scale: str | None = None
    reads_fits: bool = False
    output_as_continuation: bool = False
    forecast_approximation: str | None = None
    decisions: DecisionPath = "never"
    resolves_per_criterion: bool = False
    samples: bool = False


def option_problem(key: str, kind: OptionType, value: Any) -> str | None:
    """What is wrong with ``value`` given for option ``key`` of type ``kind`` (None when nothing)."""
    if kind == "positive_integer" and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        return f"{key} must be a positive integer, got {value!r}"
    if kind == "non_negative_number" and (isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0):
        return f"{key} must be a number >= 0, got {value!r}"
    if kind == "boolean" and not isinstance(value, bool):
        return f"{key} must be true or false, got {value!r}"
    return None
