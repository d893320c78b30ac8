"""The data every meta-evaluation function takes: one human score and one judge prediction per output.

A benchmark item is a (document, system) cell of the T x M table of 000 App. B: ``doc_id`` is the
input the systems share (article, dialogue context, story prompt), ``system_id`` the system that
produced the judged output. ``prediction`` is None when the judge's answer could not be parsed or
is missing: conventions (see :mod:`judgesdk.meta.correlation`) decide whether such items are
dropped (default) or scored 0 (G-Eval's scripts), and every result counts them.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, field_validator

from judgesdk.core import InputError

Key = tuple[str, str]
Keep = Literal["last", "first"]
KEEP = ("last", "first")


class ScoredItem(BaseModel):
    """The human score and the judge's prediction for one (doc_id, system_id)."""

    model_config = ConfigDict(frozen=True)

    doc_id: str
    system_id: str
    human: float
    prediction: float | None = None

    @field_validator("human")
    @classmethod
    def _finite_human(cls, v: float) -> float:
        if not math.isfinite(v):
            raise InputError(f"a human score must be a finite number, got {v}")
        return v

    @field_validator("prediction")
    @classmethod
    def _finite_prediction(cls, v: float | None) -> float | None:
        if v is not None and not math.isfinite(v):
            raise InputError(f"a prediction must be a finite number or None (unparsed), got {v}")
        return v

    @property
    def key(self) -> Key:
        return (self.doc_id, self.system_id)


class PairwiseJudgement(BaseModel):
    """One head-to-head verdict (001 §3.1 H2H, 004 §2): ``first`` was shown in position 1."""

    model_config = ConfigDict(frozen=True)

    doc_id: str
    first: str
    second: str
    winner: Literal["first", "second", "tie"]

    @property
    def winning_system(self) -> str | None:
        return {"first": self.first, "second": self.second}.get(self.winner)


class JoinReport(BaseModel):
    """What joining predictions to human scores kept and left out."""

    n_joined: int
    n_unparsed: int  # joined items whose prediction is None
    n_predictions_unmatched: int  # prediction keys with no human score
    n_human_without_prediction: int
    n_duplicate_predictions: int  # lines for a key already seen (one line per key is kept, see join)


def check_keep(keep: str) -> Keep:
    """``keep`` as a :data:`Keep`, or an InputError naming the choices."""
    if keep not in KEEP:
        raise InputError(f"--duplicates must be last or first (which line of a repeated doc_id/system_id counts), got {keep!r}")
    return keep  # type: ignore[return-value]


def join(
    human: Mapping[Key, float], predictions: Iterable[tuple[Key, float | None]], keep: Keep = "last"
) -> tuple[list[ScoredItem], JoinReport]:
    """Join predictions to human scores on (doc_id, system_id); a repeated key keeps its ``keep`` line.

    "last" by default: a results file is a ledger where a row retried after an error is appended
    after it (:mod:`judgesdk.records`), and 001's scripts overwrite earlier lines the same way.
    Items come back in the order of ``human`` (the benchmark's order), restricted to joined keys.
    """
    check_keep(keep)
    seen: dict[Key, float | None] = {}
    duplicates = unmatched = 0
    for key, value in predictions:
        if key in seen:
            duplicates += 1
            if keep == "last":
                seen[key] = value
            continue
        seen[key] = value
        unmatched += key not in human
    items = [
        ScoredItem(doc_id=k[0], system_id=k[1], human=h, prediction=seen[k]) for k, h in human.items() if k in seen
    ]
    report = JoinReport(
        n_joined=len(items),
        n_unparsed=sum(it.prediction is None for it in items),
        n_predictions_unmatched=unmatched,
        n_human_without_prediction=len(human) - len(items),
        n_duplicate_predictions=duplicates,
    )
    return items, report


def system_means(items: Sequence[ScoredItem], field: Literal["human", "prediction"] = "human") -> dict[str, float]:
    """Mean score of each system over its items; Q_i of 001 eq. 1 for ``field="human"``.

    Items whose ``field`` is None are left out of the mean.
    """
    sums: dict[str, list[float]] = {}
    for it in items:
        value = getattr(it, field)
        if value is not None:
            sums.setdefault(it.system_id, []).append(value)
    return {s: float(np.mean(v)) for s, v in sums.items()}


@dataclass(frozen=True)
class Frame:
    """Items as parallel arrays with integer codes for documents and systems (internal)."""

    doc: np.ndarray
    system: np.ndarray
    human: np.ndarray
    prediction: np.ndarray  # no missing values: conventions are applied before a Frame is built
    doc_names: tuple[str, ...]
    system_names: tuple[str, ...]

    @classmethod
    def build(cls, items: Sequence[ScoredItem]) -> Frame:
        if any(it.prediction is None for it in items):
            raise ValueError("Frame.build needs every prediction set; apply a convention first")
        doc_names = tuple(dict.fromkeys(it.doc_id for it in items))
        system_names = tuple(dict.fromkeys(it.system_id for it in items))
        doc_code = {d: i for i, d in enumerate(doc_names)}
        sys_code = {s: i for i, s in enumerate(system_names)}
        return cls(
            doc=np.array([doc_code[it.doc_id] for it in items], dtype=int),
            system=np.array([sys_code[it.system_id] for it in items], dtype=int),
            human=np.array([it.human for it in items], dtype=float),
            prediction=np.array([it.prediction for it in items], dtype=float),
            doc_names=doc_names,
            system_names=system_names,
        )

    def __len__(self) -> int:
        return len(self.human)

    def doc_members(self) -> list[np.ndarray]:
        """Item indices of each document, by document code."""
        order = np.argsort(self.doc, kind="stable")
        bounds = np.searchsorted(self.doc[order], np.arange(len(self.doc_names) + 1))
        return [order[bounds[i] : bounds[i + 1]] for i in range(len(self.doc_names))]


def require_items(items: Sequence[ScoredItem], what: str = "items") -> None:
    if len(items) == 0:
        raise InputError(f"no {what} to evaluate: check that predictions and human scores share doc_id/system_id")
