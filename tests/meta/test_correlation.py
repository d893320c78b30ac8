"""Known-answer tests of correlation levels (000 App. B), methods and conventions."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from judgesdk.core.errors import InputError
from judgesdk.meta import (
    ScoredItem,
    correlate,
    correlation_table,
    describe_level,
    group_correlations,
    level_correlation,
    resolve_level,
)
from judgesdk.stats.groups import group_values


def table(human: dict[str, list[float]], pred: dict[str, list[float | None]]) -> list[ScoredItem]:
    """Rows are documents, columns systems A, B, C."""
    return [
        ScoredItem(doc_id=d, system_id=s, human=h, prediction=p)
        for d in human
        for s, h, p in zip("ABC", human[d], pred[d])
    ]


# d3 has constant human scores: skipped at sample level, but part of the pooled and system tables.
HUMAN = {"d1": [1, 2, 3], "d2": [2, 1, 3], "d3": [3, 3, 3]}
PRED = {"d1": [1, 3, 2], "d2": [1, 2, 3], "d3": [2, 1, 3]}


@pytest.mark.parametrize(
    "method,expected",
    [("spearman", 0.5), ("pearson", 0.5), ("kendall", 1 / 3)],  # hand-computed: both documents give the same value
)
def test_sample_level_averages_documents_and_counts_skipped(method: str, expected: float) -> None:
    r = level_correlation(table(HUMAN, PRED), "sample", method)
    assert r.value == pytest.approx(expected)
    assert r.skipped == {"constant_human": 1}
    assert r.n_groups == 2 and r.p_value is None
    assert "averaged over documents" in r.definition


@pytest.mark.parametrize(
    "method,expected",
    # system means: human (2, 2, 3), pred (4/3, 2, 8/3); hand-computed
    [("spearman", 1.5 / math.sqrt(3)), ("kendall", 2 / math.sqrt(6)), ("pearson", stats.pearsonr([2, 2, 3], [4 / 3, 2, 8 / 3])[0])],
)
def test_system_level_correlates_system_means(method: str, expected: float) -> None:
    r = level_correlation(table(HUMAN, PRED), "system", method)
    assert r.value == pytest.approx(expected)
    assert r.n_groups == 3


def test_summary_and_turn_level_pool_all_items() -> None:
    items = table(HUMAN, PRED)
    h = [it.human for it in items]
    p = [it.prediction for it in items]
    for level in ("summary", "turn", "pooled", "segment-level"):
        r = level_correlation(items, level, "kendall")
        assert r.value == pytest.approx(stats.kendalltau(h, p)[0])
        assert r.p_value == pytest.approx(stats.kendalltau(h, p)[1])
        assert r.n_items == 9


def test_levels_differ_on_the_same_table() -> None:
    """The three definitions are not interchangeable: a table where they disagree in sign."""
    human = {"d1": [1, 2, 3], "d2": [4, 5, 6]}
    pred = {"d1": [3, 2, 1], "d2": [6, 5, 4]}  # reversed within documents, right across them
    items = table(human, pred)
    assert level_correlation(items, "sample").value == pytest.approx(-1.0)
    assert level_correlation(items, "summary").value > 0.5
    assert level_correlation(items, "system").value == pytest.approx(-1.0)


def test_level_names_and_aliases() -> None:
    assert resolve_level("pooled") == "summary"
    assert resolve_level("Sample-Level") == "sample"
    assert resolve_level("turn-level") == "turn"
    assert resolve_level("per-document") == "sample"
    assert "pooled" in describe_level("summary-level")  # 000's meaning, not G-Eval's
    with pytest.raises(InputError, match="sample"):
        resolve_level("dialogue")


def test_undefined_is_none_with_reason_never_nan() -> None:
    items = table({"d1": [1, 2, 3]}, {"d1": [4, 4, 4]})
    r = level_correlation(items, "summary")
    assert r.value is None and r.undefined_reason == "constant_prediction" and r.p_value is None
    s = level_correlation(items, "sample")
    assert s.value is None and s.skipped == {"constant_prediction": 1}


# -------------------------------------------------------------------------------------------------
# conventions
# -------------------------------------------------------------------------------------------------

CONST_PRED = {"d1": [1, 2, 3], "d2": [2, 1, 3], "d3": [1, 2, 3]}
CONST_PRED_P = {"d1": [1, 3, 2], "d2": [1, 2, 3], "d3": [2, 2, 2]}


def test_default_skips_constant_prediction_but_004_counts_it_as_zero() -> None:
    items = table(CONST_PRED, CONST_PRED_P)
    default = level_correlation(items, "sample")
    assert default.value == pytest.approx(0.5) and default.skipped == {"constant_prediction": 1}
    geval = level_correlation(items, "sample", convention="geval")
    assert geval.value == pytest.approx(0.5)
    c004 = level_correlation(items, "sample", convention="004")
    assert c004.value == pytest.approx((0.5 + 0.5 + 0.0) / 3)
    assert c004.skipped == {} and c004.n_groups == 3
    assert any("counted as 0" in n for n in c004.notes)


def test_004_still_skips_constant_human_documents() -> None:
    r = level_correlation(table(HUMAN, PRED), "sample", convention="004")
    assert r.value == pytest.approx(0.5) and r.skipped == {"constant_human": 1}


def test_geval_scores_parse_failures_as_zero_default_drops_them() -> None:
    pred = {"d1": [1, 3, None], "d2": [1, 2, 3]}
    items = table({"d1": [1, 2, 3], "d2": [2, 1, 3]}, pred)
    default = level_correlation(items, "sample")
    # d1 keeps A, B: human (1, 2), pred (1, 3) -> 1.0; d2 -> 0.5
    assert default.value == pytest.approx(0.75)
    assert default.n_unparsed == 1 and default.unparsed_handling == "dropped" and default.n_items == 5
    geval = level_correlation(items, "sample", convention="geval")
    # d1 pred (1, 3, 0): ranks (2, 3, 1) vs (1, 2, 3) -> -0.5; d2 -> 0.5
    assert geval.value == pytest.approx(0.0)
    assert geval.unparsed_handling == "scored 0" and geval.n_items == 6


def test_002_pooled_computes_pooled_whatever_level_and_says_so() -> None:
    items = table(HUMAN, PRED)
    r = level_correlation(items, "sample", convention="002-pooled")
    assert r.level == "summary" and r.requested_level == "sample"
    assert r.value == pytest.approx(level_correlation(items, "summary").value)
    assert r.notes and "002-pooled" in r.notes[0]


def test_unknown_convention_and_method_raise_input_error() -> None:
    items = table(HUMAN, PRED)
    with pytest.raises(InputError, match="skip-and-count"):
        level_correlation(items, convention="nope")
    with pytest.raises(InputError, match="spearman"):
        level_correlation(items, method="cosine")


def test_all_unparsed_is_an_input_error() -> None:
    items = table({"d1": [1, 2, 3]}, {"d1": [None, None, None]})
    with pytest.raises(InputError, match="unparsed"):
        level_correlation(items)


def test_correlation_table_covers_levels_and_methods() -> None:
    rows = correlation_table(table(HUMAN, PRED))
    assert [(r.level, r.method) for r in rows][:3] == [("sample", "spearman"), ("sample", "pearson"), ("sample", "kendall")]
    assert len(rows) == 9


# -------------------------------------------------------------------------------------------------
# the fast group path equals scipy
# -------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["spearman", "pearson", "kendall"])
def test_group_values_match_scipy_with_ties(method: str) -> None:
    rng = np.random.default_rng(7)
    sizes = [2, 3, 5, 5, 16, 16, 40, 350]
    groups = np.concatenate([np.full(n, g) for g, n in enumerate(sizes)])
    x = rng.integers(1, 6, len(groups)).astype(float)
    y = x + rng.integers(-2, 3, len(groups))
    values, reasons = group_values(x, y, groups, len(sizes), method, constant_y_as_zero=False)
    fn = {"spearman": stats.spearmanr, "pearson": stats.pearsonr, "kendall": stats.kendalltau}[method]
    for g in range(len(sizes)):
        xs, ys = x[groups == g], y[groups == g]
        if len(set(xs)) < 2 or len(set(ys)) < 2:
            assert reasons[g] is not None
            continue
        assert values[g] == pytest.approx(fn(xs, ys)[0], abs=1e-12)


def test_correlate_is_scipy_like() -> None:
    r = correlate([1, 2, 3, 4], [1, 3, 2, 4], "kendall")
    assert r.value == pytest.approx(stats.kendalltau([1, 2, 3, 4], [1, 3, 2, 4])[0])
    assert r.n == 4 and r.p_value is not None
    assert correlate([1, 1], [1, 2]).undefined_reason == "constant_x"
    assert correlate([1], [1]).undefined_reason == "too_few_items"
    with pytest.raises(InputError):
        correlate([1, 2], [1, 2, 3])


def test_per_system_groups() -> None:
    groups = group_correlations(table(HUMAN, PRED), by="system")
    by = {g.group: g for g in groups}
    # A: human (1, 2, 3), pred (1, 1, 2) -> ranks (1.5, 1.5, 3): 1.5 / sqrt(2 * 1.5)
    assert by["A"].value == pytest.approx(1.5 / math.sqrt(3))
    # C: human constant (3, 3, 3) -> undefined
    assert by["C"].value is None and by["C"].undefined_reason == "constant_human"
