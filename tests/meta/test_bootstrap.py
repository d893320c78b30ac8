"""Bootstrap CIs over documents and the paired permutation test."""

from __future__ import annotations

import numpy as np
import pytest

from judgesdk.core.errors import InputError
from judgesdk.meta import ScoredItem, bootstrap_ci, level_correlation, permutation_test


def simulated(n_docs: int, n_systems: int, rho: float, seed: int) -> list[ScoredItem]:
    """Human and prediction bivariate normal with correlation ``rho`` (the pooled Pearson truth)."""
    rng = np.random.default_rng(seed)
    cov = [[1.0, rho], [rho, 1.0]]
    draws = rng.multivariate_normal([0.0, 0.0], cov, size=(n_docs, n_systems))
    return [
        ScoredItem(doc_id=f"d{d}", system_id=f"s{s}", human=float(draws[d, s, 0]), prediction=float(draws[d, s, 1]))
        for d in range(n_docs)
        for s in range(n_systems)
    ]


def test_ci_contains_the_population_correlation() -> None:
    items = simulated(120, 5, rho=0.6, seed=3)
    ci = bootstrap_ci(items, "summary", "pearson", n_resamples=300, seed=1)
    assert ci.low < 0.6 < ci.high
    assert ci.high - ci.low < 0.2  # informative, not a trivially wide interval
    assert ci.estimate == pytest.approx(level_correlation(items, "summary", "pearson").value)
    assert ci.n_documents == 120 and ci.n_undefined == 0


def test_ci_of_independent_scores_contains_zero_and_strong_signal_excludes_it() -> None:
    null = bootstrap_ci(simulated(60, 6, rho=0.0, seed=5), "sample", "spearman", n_resamples=300)
    assert null.low < 0 < null.high
    strong = bootstrap_ci(simulated(60, 6, rho=0.8, seed=5), "sample", "spearman", n_resamples=300)
    assert strong.low > 0.5


def test_bootstrap_is_seeded() -> None:
    items = simulated(30, 4, rho=0.5, seed=0)
    a = bootstrap_ci(items, "system", "kendall", n_resamples=100, seed=9)
    b = bootstrap_ci(items, "system", "kendall", n_resamples=100, seed=9)
    c = bootstrap_ci(items, "system", "kendall", n_resamples=100, seed=10)
    assert (a.low, a.high) == (b.low, b.high)
    assert (a.low, a.high) != (c.low, c.high)


def test_bootstrap_rejects_bad_arguments() -> None:
    items = simulated(5, 3, rho=0.5, seed=0)
    with pytest.raises(InputError):
        bootstrap_ci(items, n_resamples=0)
    with pytest.raises(InputError):
        bootstrap_ci(items, confidence=1.5)


def with_predictions(items: list[ScoredItem], values: np.ndarray) -> list[ScoredItem]:
    return [it.model_copy(update={"prediction": float(v)}) for it, v in zip(items, values)]


def test_permutation_test_detects_a_better_judge() -> None:
    items = simulated(40, 5, rho=0.7, seed=11)
    noise = np.random.default_rng(2).normal(size=len(items))
    worse = with_predictions(items, noise)
    t = permutation_test(items, worse, "summary", "spearman", n_permutations=200, seed=0)
    assert t.p_value <= 0.01
    assert t.difference == pytest.approx(
        level_correlation(items, "summary").value - level_correlation(worse, "summary").value
    )
    one_sided_wrong_way = permutation_test(worse, items, "summary", n_permutations=200, alternative="greater")
    assert one_sided_wrong_way.p_value > 0.9


def test_permutation_test_on_two_equally_good_judges_is_not_significant() -> None:
    items = simulated(40, 5, rho=0.5, seed=12)
    rng = np.random.default_rng(4)
    humans = np.array([it.human for it in items])
    x = with_predictions(items, 0.5 * humans + rng.normal(scale=0.9, size=len(items)))
    # Y is X on another scale (10x + 3): the same judge, so any difference is swap noise
    y = with_predictions(items, [10 * it.prediction + 3 for it in x])
    t = permutation_test(x, y, "sample", "pearson", n_permutations=200, seed=0)
    assert t.difference == pytest.approx(0.0, abs=1e-12)
    assert t.p_value == 1.0


def test_permutation_test_needs_shared_items_with_the_same_human_scores() -> None:
    items = simulated(5, 3, rho=0.5, seed=0)
    other = [it.model_copy(update={"doc_id": "x" + it.doc_id}) for it in items]
    with pytest.raises(InputError, match="fewer than two"):
        permutation_test(items, other)
    shifted = [it.model_copy(update={"human": it.human + 1}) for it in items]
    with pytest.raises(InputError, match="same human file"):
        permutation_test(items, shifted)
