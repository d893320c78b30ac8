"""Correlation of judge predictions with human scores at the levels and conventions of the papers.

Levels (000 App. B; names follow 000, whose "summary-level" is the pooled figure)
-------------------------------------------------------------------------------

=========  =====================================================================================
level      definition (T documents, M systems, rho = Spearman / Pearson / Kendall tau-b)
=========  =====================================================================================
sample     F^sample = 1/T sum_i rho([pred_i1..pred_iM], [human_i1..human_iM]): within each document
           across systems, averaged over documents. G-Eval and UniEval call this "summary-level".
summary    F^summary = rho over all T x M items pooled (the document ignored). 001 Table 4 (1,200
           summaries) and 002's segment-level Kendall are this figure.
system     F^system = rho([mean_i pred_ij]_j, [mean_i human_ij]_j): per-system means, then
           correlated across the M systems (Fabbri et al. 2021; 003's SummEval Kendall).
turn       the pooled figure under TopicalChat's name (UniEval, 003 Table 3): same as summary.
=========  =====================================================================================

Aliases: "sample-level", "per-document", "document" -> sample; "summary-level", "pooled",
"segment", "segment-level" -> summary; "system-level" -> system; "turn-level" -> turn. The G-Eval
sense of "summary-level" (per-document average) is *not* accepted as an alias: it would clash with
000's name, so ask for "sample" instead. Every result carries the definition it computed.

Conventions (how undefined correlations and parse failures are treated)
---------------------------------------------------------------------

=====================  ==========================================================================
name                   rule
=====================  ==========================================================================
skip-and-count         default. A group (document, or the pooled / system table) whose human or
                       predicted scores are constant has no correlation: it is skipped and counted
                       in ``skipped``. Unparsed predictions are dropped and counted. Never 0.
geval                  G-Eval's meta_eval script: skip a document when human or predicted scores
                       are constant; a parse failure is scored 0.
004                    004's script: skip only documents with constant human scores; a constant
                       prediction gives correlation 0 (NaN -> 0). Unparsed dropped.
002-pooled             002: one segment-level correlation over every item pooled, whatever level
                       was asked (the result says so). Unparsed dropped.
001-drop-undefined     001: per-candidate correlations that are undefined (GPT-4 gave M12 all 5s,
                       Table 28 "-") are dropped from the table and from M; otherwise as the
                       default. Unparsed dropped.
=====================  ==========================================================================

A correlation that cannot be computed is reported as ``None`` with a reason, never NaN, never 0
unless a convention that says so was chosen.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict

from judgesdk.core import InputError
from judgesdk.meta.items import Frame, ScoredItem, require_items
from judgesdk.stats import METHODS, Method, check_method, group_values, p_value, single_value

__all__ = [
    "CONVENTIONS",
    "LEVELS",
    "LEVEL_ALIASES",
    "LEVEL_DEFINITIONS",
    "METHODS",
    "Convention",
    "Correlation",
    "GroupCorrelation",
    "Level",
    "LevelCorrelation",
    "Method",
    "correlate",
    "correlation_table",
    "describe_level",
    "effective_level",
    "get_convention",
    "group_correlations",
    "level_correlation",
    "resolve_level",
]

Level = Literal["sample", "summary", "system", "turn"]
LEVELS: tuple[Level, ...] = ("sample", "summary", "system", "turn")

LEVEL_DEFINITIONS: dict[str, str] = {
    "sample": "sample-level (000 App. B): correlation within each document across systems, averaged over documents "
    "(G-Eval/UniEval call this 'summary-level')",
    "summary": "summary-level (000 App. B): one correlation over all items pooled, documents ignored",
    "system": "system-level (000 App. B): per-system mean prediction vs per-system mean human score, across systems",
    "turn": "turn-level (TopicalChat name, UniEval/003): one correlation over all items pooled (= 000's summary-level)",
}

LEVEL_ALIASES: dict[str, Level] = {
    "sample-level": "sample",
    "per-document": "sample",
    "document": "sample",
    "summary-level": "summary",
    "pooled": "summary",
    "segment": "summary",
    "segment-level": "summary",
    "system-level": "system",
    "turn-level": "turn",
}


def resolve_level(name: str) -> Level:
    """000's level name for ``name`` (a level or an unambiguous alias); InputError otherwise."""
    key = name.strip().lower()
    if key in LEVELS:
        return key
    if key in LEVEL_ALIASES:
        return LEVEL_ALIASES[key]
    raise InputError(
        f"unknown correlation level {name!r}: use sample (per-document average), summary (pooled), "
        f"system (per-system means) or turn (pooled, TopicalChat); aliases: {', '.join(LEVEL_ALIASES)}"
    )


def effective_level(convention: Convention, level: str) -> Level:
    """The level actually computed: the requested one, unless the convention pools everything (002)."""
    requested = resolve_level(level)
    if convention.force_level and requested not in ("summary", "turn"):
        return convention.force_level
    return requested


def describe_level(level: str) -> str:
    """The printed definition of a level (000 App. B)."""
    return LEVEL_DEFINITIONS[resolve_level(level)]


class Convention(BaseModel):
    """How one paper's script treats undefined correlations and parse failures."""

    model_config = ConfigDict(frozen=True)

    name: str
    constant_prediction: Literal["skip", "zero"]
    unparsed: Literal["drop", "zero"]
    force_level: Level | None = None
    source: str
    description: str


CONVENTIONS: dict[str, Convention] = {
    c.name: c
    for c in (
        Convention(
            name="skip-and-count",
            constant_prediction="skip",
            unparsed="drop",
            source="judgesdk default",
            description="constant human or predicted groups skipped and counted; unparsed dropped and counted; never 0",
        ),
        Convention(
            name="geval",
            constant_prediction="skip",
            unparsed="zero",
            source="G-Eval meta-evaluation script",
            description="documents with constant human or predicted scores skipped; a parse failure scored 0",
        ),
        Convention(
            name="004",
            constant_prediction="zero",
            unparsed="drop",
            source="004 (Liusie et al.) script",
            description="only constant-human documents skipped; a constant prediction counts as correlation 0",
        ),
        Convention(
            name="002-pooled",
            constant_prediction="skip",
            unparsed="drop",
            force_level="summary",
            source="002 §3 (segment-level Kendall)",
            description="every item pooled into one correlation, whatever level was asked",
        ),
        Convention(
            name="001-drop-undefined",
            constant_prediction="skip",
            unparsed="drop",
            source="001 §4.2.3, Table 28",
            description="undefined per-candidate correlations dropped (001 Table 28 '-'); otherwise as the default",
        ),
    )
}


def get_convention(name: str | Convention) -> Convention:
    if isinstance(name, Convention):
        return name
    if name not in CONVENTIONS:
        raise InputError(f"unknown convention {name!r}: use one of {', '.join(CONVENTIONS)}")
    return CONVENTIONS[name]


class Correlation(BaseModel):
    """One correlation (``scipy.stats``-like): value None with a reason when undefined."""

    method: Method
    value: float | None
    p_value: float | None
    n: int
    undefined_reason: str | None = None


def correlate(x: Sequence[float], y: Sequence[float], method: str = "spearman") -> Correlation:
    """Spearman, Pearson or Kendall tau-b (scipy's ``kendalltau`` default, as 001 footnote 2) of x and y.

    Constant input or fewer than two pairs gives ``value=None`` and ``undefined_reason``
    ("too_few_items", "constant_x", "constant_y") instead of NaN. ``method`` is ``spearman``, ``pearson`` or
    ``kendall``; ``x`` and ``y`` must be 1-D and of equal length (else :class:`~judgesdk.core.errors.InputError`).
    Returns the :class:`Correlation` with its scipy p-value and the number of pairs.
    """
    m = check_method(method)
    xa, ya = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if xa.shape != ya.shape or xa.ndim != 1:
        raise InputError(f"correlate needs two 1-D sequences of equal length, got {xa.shape} and {ya.shape}")
    value, reason = single_value(xa, ya, m, constant_y_as_zero=False)
    return Correlation(method=m, value=value, p_value=p_value(xa, ya, m), n=len(xa), undefined_reason=reason)


# -------------------------------------------------------------------------------------------------
# Applying a convention
# -------------------------------------------------------------------------------------------------


def prepare(items: Sequence[ScoredItem], convention: Convention) -> tuple[list[ScoredItem], int]:
    """Apply the convention's unparsed rule: drop or score 0. Returns the items and how many were unparsed."""
    require_items(items)
    n_unparsed = sum(it.prediction is None for it in items)
    if convention.unparsed == "zero":
        kept = [it if it.prediction is not None else it.model_copy(update={"prediction": 0.0}) for it in items]
    else:
        kept = [it for it in items if it.prediction is not None]
    if not kept:
        raise InputError(f"all {len(items)} predictions are unparsed: nothing to correlate (check the --parse mode)")
    return kept, n_unparsed


def prepared_frame(items: Sequence[ScoredItem], convention: Convention) -> tuple[Frame, int]:
    """:func:`prepare` then the arrays every computation runs on; returns the frame and the unparsed count."""
    kept, n_unparsed = prepare(items, convention)
    return Frame.build(kept), n_unparsed


def paired_frame(
    items_a: Sequence[ScoredItem], items_b: Sequence[ScoredItem], convention: Convention
) -> tuple[Frame, np.ndarray, int]:
    """Two judges' items joined on (doc_id, system_id), both scored after the convention.

    Returns a frame holding A's predictions, B's predictions aligned to it, and how many keys
    (of either side) were dropped. Both sides must carry the same human score for a key.
    """
    kept_a, _ = prepare(items_a, convention)
    b_by_key = {it.key: it for it in prepare(items_b, convention)[0]}
    pairs = [(a, b_by_key[a.key]) for a in kept_a if a.key in b_by_key]
    for a, b in pairs:
        if a.human != b.human:
            raise InputError(
                f"the two judges carry different human scores for {a.key} ({a.human} vs {b.human}): "
                "compare them against the same human file"
            )
    if len(pairs) < 2:
        raise InputError("the two judges share fewer than two scored items: check their doc_id/system_id")
    dropped = len({it.key for it in items_a} | {it.key for it in items_b}) - len(pairs)
    return Frame.build([a for a, _ in pairs]), np.array([b.prediction for _, b in pairs], dtype=float), dropped


_REASON_NAMES = {
    "too_few_items": "too_few_items",
    "constant_x": "constant_human",
    "constant_y": "constant_prediction",
    "constant_y_as_zero": "constant_prediction_scored_0",
}


class LevelStatistic:
    """The level correlation as a function of predictions and a (re)sample of documents.

    Used once for the reported value and many times by the bootstrap (resampled documents) and the
    permutation test (permuted predictions), so all three compute exactly the same number.
    """

    def __init__(self, frame: Frame, level: Level, method: Method, convention: Convention) -> None:
        self.frame, self.level, self.method, self.convention = frame, level, method, convention
        self.members = frame.doc_members()
        self._zero = convention.constant_prediction == "zero"
        self._own_doc_values: tuple[np.ndarray, list[str | None]] | None = None

    def doc_values(self, prediction: np.ndarray | None = None) -> tuple[np.ndarray, list[str | None]]:
        """Per-document correlations (NaN where undefined) and reasons; cached for the frame's own predictions."""
        f = self.frame
        if prediction is not None:
            return group_values(f.human, prediction, f.doc, len(f.doc_names), self.method, self._zero)
        if self._own_doc_values is None:
            self._own_doc_values = group_values(f.human, f.prediction, f.doc, len(f.doc_names), self.method, self._zero)
        return self._own_doc_values

    def __call__(self, prediction: np.ndarray | None = None, docs: np.ndarray | None = None) -> tuple[float | None, str | None]:
        pred = self.frame.prediction if prediction is None else prediction
        docs = np.arange(len(self.members)) if docs is None else docs
        if self.level == "sample":
            values, _ = self.doc_values(prediction)
            chosen = values[docs]
            chosen = chosen[~np.isnan(chosen)]
            return (float(chosen.mean()), None) if chosen.size else (None, "no_document_defined")
        idx = np.concatenate([self.members[d] for d in docs])
        human, p = self.frame.human[idx], pred[idx]
        if self.level == "system":
            human, p = _system_means(self.frame.system[idx], human, p, len(self.frame.system_names))
        value, reason = single_value(human, p, self.method, self._zero)
        return value, (_REASON_NAMES[reason] if reason else None)


def _system_means(codes: np.ndarray, human: np.ndarray, pred: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    counts = np.bincount(codes, minlength=n)
    present = counts > 0
    return (
        np.bincount(codes, weights=human, minlength=n)[present] / counts[present],
        np.bincount(codes, weights=pred, minlength=n)[present] / counts[present],
    )


# -------------------------------------------------------------------------------------------------
# Public results
# -------------------------------------------------------------------------------------------------


class LevelCorrelation(BaseModel):
    """A correlation at one level, with everything needed to tell how it was computed."""

    level: Level
    requested_level: Level
    definition: str
    method: Method
    convention: str
    value: float | None
    p_value: float | None  # summary/turn/system only; a mean of per-document correlations has none
    undefined_reason: str | None = None
    n_items: int  # items that entered the correlation
    n_groups: int  # documents averaged (sample), systems (system), 1 (pooled)
    n_unparsed: int
    unparsed_handling: Literal["dropped", "scored 0"]
    skipped: dict[str, int]  # sample level: documents skipped, by reason
    notes: list[str] = []


def level_correlation(
    items: Sequence[ScoredItem],
    level: str = "summary",
    method: str = "spearman",
    convention: str | Convention = "skip-and-count",
) -> LevelCorrelation:
    """Correlation of predictions with human scores at ``level`` (000 App. B) under ``convention``.

    Sample level averages the defined per-document correlations and counts the skipped documents
    by reason; pooled and system levels give one correlation and a scipy p-value. ``items`` are the judged
    items with their human scores, ``method`` the correlation (spearman, pearson, kendall). Returns a
    :class:`LevelCorrelation` naming the level it computed (a convention may pool: then it says so in ``notes``)
    and its definition; an undefined value is None with the reason.
    """
    conv = get_convention(convention)
    requested = resolve_level(level)
    actual = effective_level(conv, requested)
    m = check_method(method)
    frame, n_unparsed = prepared_frame(items, conv)
    stat = LevelStatistic(frame, actual, m, conv)
    value, reason = stat()
    notes = [] if actual == requested else [f"convention {conv.name} pools every item: computed {actual}-level, not {requested}-level"]
    skipped: dict[str, int] = {}
    n_groups, p = 1, None
    if actual == "sample":
        _, reasons = stat.doc_values()
        counted = Counter(_REASON_NAMES[r] for r in reasons if r is not None)
        skipped = {r: c for r, c in counted.items() if r != "constant_prediction_scored_0"}
        n_groups = len(reasons) - sum(skipped.values())
        if counted.get("constant_prediction_scored_0"):
            notes.append(f"{counted['constant_prediction_scored_0']} documents with constant predictions counted as 0")
    elif actual == "system":
        h, pr = _system_means(frame.system, frame.human, frame.prediction, len(frame.system_names))
        n_groups, p = len(h), p_value(h, pr, m)
    else:
        p = p_value(frame.human, frame.prediction, m)
    return LevelCorrelation(
        level=actual,
        requested_level=requested,
        definition=LEVEL_DEFINITIONS[actual],
        method=m,
        convention=conv.name,
        value=value,
        p_value=p if value is not None and reason is None else None,
        undefined_reason=reason,
        n_items=len(frame),
        n_groups=n_groups,
        n_unparsed=n_unparsed,
        unparsed_handling="scored 0" if conv.unparsed == "zero" else "dropped",
        skipped=skipped,
        notes=notes,
    )


def correlation_table(
    items: Sequence[ScoredItem],
    levels: Sequence[str] = ("sample", "summary", "system"),
    methods: Sequence[str] = METHODS,
    convention: str | Convention = "skip-and-count",
) -> list[LevelCorrelation]:
    """:func:`level_correlation` of ``items`` for every level of ``levels`` x method of ``methods``, in that
    order, under ``convention``."""
    return [level_correlation(items, lv, m, convention) for lv in levels for m in methods]


class GroupCorrelation(BaseModel):
    """The correlation within one group (a document, or a system: P_i of 001 eq. 2)."""

    group: str
    value: float | None
    p_value: float | None
    n: int
    undefined_reason: str | None = None


def group_correlations(
    items: Sequence[ScoredItem],
    by: Literal["doc", "system"],
    method: str = "spearman",
    convention: str | Convention = "skip-and-count",
) -> list[GroupCorrelation]:
    """Correlation of predictions with human scores within each document or each system.

    ``by="system"`` gives 001's per-candidate correlations P_i (eq. 2). Undefined groups are kept
    in the list with ``value=None`` and the reason (001's convention drops them later, in M).
    ``items`` are the judged items with their human scores, ``method`` the correlation (spearman, pearson,
    kendall) and ``convention`` how unparsed predictions and constant groups are treated (module docstring).
    """
    conv = get_convention(convention)
    m = check_method(method)
    frame, _ = prepared_frame(items, conv)
    codes, names = (frame.doc, frame.doc_names) if by == "doc" else (frame.system, frame.system_names)
    return labelled_groups(frame.human, frame.prediction, codes, names, m, conv.constant_prediction == "zero")


def labelled_groups(
    x: np.ndarray,
    y: np.ndarray,
    codes: np.ndarray,
    names: Sequence[str],
    method: Method,
    constant_y_as_zero: bool,
    reason_names: Callable[[str], str] = lambda r: _REASON_NAMES[r],
) -> list[GroupCorrelation]:
    """Per-group correlations of x and y with names, sizes and p-values (shared by P_i and R_i)."""
    values, reasons = group_values(x, y, codes, len(names), method, constant_y_as_zero)
    out = []
    for g, name in enumerate(names):
        mask = codes == g
        value = None if np.isnan(values[g]) else float(values[g])
        reason = reasons[g]
        out.append(
            GroupCorrelation(
                group=name,
                value=value,
                p_value=p_value(x[mask], y[mask], method) if reason is None else None,
                n=int(mask.sum()),
                undefined_reason=None if reason is None else reason_names(reason),
            )
        )
    return out
