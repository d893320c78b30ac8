"""Fit fused judges with document-level nested cross-validation.

Per criterion and variant, the candidates are a few feature groups x ridge strengths x two fitting modes
("pooled": ordinary ridge; "within": slopes from within-document deviations, the variation that a
per-document correlation rewards, plus the pooled mean as intercept). For the criteria we know
(:data:`SIGNED_CRITERIA`) every weight keeps the sign of :data:`PRIOR_SIGNS`, fixed before fitting from
what each signal means, and signals without a sign that holds across data sets are left out: a free
ridge fitted on SummEval alone learned SummEval's systems (fewer sentences and fewer repeated words read
as coherent) and reached 0.57 on NewsRoom's coherence even unclipped, where the signed fit keeps 0.66
(`benchmarks/README.md`).
A criterion we know nothing about (a user's refit) gets the free ridge: its own data decide the signs.
The inner folds choose one candidate by mean per-document Spearman (pooled Spearman when the data has no documents); the outer
folds measure the whole procedure, calibration included, on documents it never saw. No document is ever
in both a training and a test fold. The shipped model is the same procedure run on all the data, with its
monotone calibration fitted on out-of-fold linear scores and its interval on out-of-fold residuals.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.optimize import lsq_linear
from scipy.stats import kendalltau, rankdata, spearmanr

from judgesdk.core import InputError
from judgesdk.fused.model import CriterionModel, Variant
from judgesdk.stats import pava

LIKELIHOOD = ("cond_mean", "cond_low", "cond_low10", "cond_min", "cond_std", "uncond_mean", "pmi_mean", "pmi_low", "log_tokens")
QUESTIONS = ("yes_coherence", "yes_consistency", "yes_fluency", "yes_relevance")
TEXT = (
    "log_words", "repeat_3", "repeat_1", "log_sentences", "words_per_sentence", "unfinished", "adjacent_repeat",
    "src_prec_1", "src_prec_2", "src_prec_4", "lead_recall_2", "key_recall", "key_early", "name_recall", "len_ratio",
)  # fmt: skip
# the n-gram overlap with the reference (free), and the likelihood given it (one more pass) where it was computed
REFERENCE = (
    "ref_f1_1", "ref_f1_2", "ref_prec_1", "ref_recall_1", "ref_prec_2", "ref_recall_2", "ref_content_recall", "ref_key_recall",
    "ref_mean", "ref_pmi",
)  # fmt: skip
GROUPS: dict[str, tuple[str, ...]] = {
    "likelihood": LIKELIHOOD,
    "likelihood+text": LIKELIHOOD + TEXT,
    "likelihood+questions": LIKELIHOOD + QUESTIONS,
    "all": LIKELIHOOD + QUESTIONS + TEXT,
}
# The direction each signal may move a score in, whatever the data: +1 more is better, -1 more is worse.
PRIOR_SIGNS: dict[str, int] = {
    # the model finds the output probable given its source; its least probable tokens are where it stumbles
    "cond_mean": 1, "cond_low": 1, "cond_low10": 1, "cond_min": 1, "cond_std": -1,
    "pmi_mean": 1, "pmi_low": 1,  # more probable with the source than without: supported by it
    "yes_coherence": 1, "yes_consistency": 1, "yes_fluency": 1, "yes_relevance": 1,
    "src_prec_1": 1,  # its words occur in the source
    "src_prec_4": -1,  # long verbatim copies: the likelihood they earn is the source's, not the writing's
    "key_recall": 1, "key_early": 1, "name_recall": 1, "lead_recall_2": 1,  # covers what the source is about
    "repeat_3": -1, "adjacent_repeat": -1, "unfinished": -1,  # degenerate text
    "words_per_sentence": 1,  # fragments and one-clause sentences read badly
    "ref_f1_1": 1, "ref_f1_2": 1, "ref_mean": 1, "ref_pmi": 1,  # close to the reference
    "ref_prec_1": 1, "ref_recall_1": 1, "ref_prec_2": 1, "ref_recall_2": 1, "ref_content_recall": 1, "ref_key_recall": 1,
}  # fmt: skip
# Left out where signs are fixed, because their direction flips between data sets (per-document Spearman with
# coherence, SummEval / NewsRoom): length (log_words 0.00 / 0.56, log_tokens, len_ratio), sentence count
# (log_sentences -0.24 / 0.38), word repeats (repeat_1 -0.27 / 0.32), src_prec_2, and uncond_mean (probable
# without the source: fluent, or generic).
SIGNED_CRITERIA = frozenset({"coherence", "consistency", "fluency", "relevance"})
ALPHAS = (1.0, 10.0, 100.0, 1000.0)
MODES = ("pooled", "within")
INTERVAL_LEVEL = 0.8


@dataclass(frozen=True)
class Spec:
    group: str
    features: tuple[str, ...]
    alpha: float
    mode: str
    mix: float = 0.0  # share of the auxiliary target (e.g. the mean of all criteria) in what the ridge is fitted to
    signs: tuple[int, ...] | None = None  # per feature, the sign its weight must keep (0: either; None: all free)


@dataclass
class Linear:
    features: tuple[str, ...]
    center: np.ndarray
    spread: np.ndarray
    coef: np.ndarray
    intercept: float

    def __call__(self, X: np.ndarray) -> np.ndarray:
        return self.intercept + ((X - self.center) / self.spread) @ self.coef


@dataclass
class CriterionFit:
    """The shipped model, and the nested-CV (outer-fold) predictions and 80 % intervals it was measured by,
    in input order."""

    model: CriterionModel
    predictions: np.ndarray
    intervals: np.ndarray | None = None  # (n, 2): each held-out item's interval


def candidates(
    variant: Variant,
    available: set[str],
    mixes: Sequence[float] = (0.0,),
    signs: Mapping[str, int] | None = None,
    groups: Mapping[str, tuple[str, ...]] | None = None,
) -> list[Spec]:
    specs = []
    seen: set[tuple[str, ...]] = set()
    for group, names in (GROUPS if groups is None else groups).items():
        features = names + (REFERENCE if variant == "source+reference" else ())
        features = tuple(f for f in features if f in available and (signs is None or f in signs))
        if not features or features in seen:  # a group with nothing new here (e.g. no questions computed)
            continue
        seen.add(features)
        fixed = None if signs is None else tuple(signs[f] for f in features)
        for alpha in ALPHAS:
            for mode in MODES:
                for mix in mixes:
                    specs.append(Spec(group, features, alpha, mode, mix, fixed))
    return specs


def matrix(rows: Sequence[dict[str, float]], features: Sequence[str]) -> np.ndarray:
    return np.array([[row[f] for f in features] for row in rows], dtype=float)


def group_codes(groups: Sequence[str]) -> np.ndarray:
    """``groups`` (one document or system name per item) as integer codes 0..g-1, one per item, in the sorted
    order of the names: the form the fitting and agreement functions take groups in."""
    return np.unique(np.asarray(groups), return_inverse=True)[1]


def demean(values: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Values minus their group's mean (row-wise for a matrix)."""
    codes = np.unique(codes, return_inverse=True)[1]  # a fold's subset leaves gaps in the codes
    n = codes.max() + 1
    counts = np.bincount(codes, minlength=n).astype(float)
    if values.ndim == 1:
        return values - (np.bincount(codes, weights=values, minlength=n) / counts)[codes]
    means = np.stack([np.bincount(codes, weights=values[:, j], minlength=n) for j in range(values.shape[1])], axis=1)
    return values - (means / counts[:, None])[codes]


def fit_linear(X: np.ndarray, y: np.ndarray, codes: np.ndarray, spec: Spec) -> Linear:
    center = X.mean(axis=0)
    spread = X.std(axis=0)
    spread[spread < 1e-9] = 1.0
    Z = (X - center) / spread
    target = y - y.mean()
    if spec.mode == "within":
        Z, target = demean(Z, codes), demean(y, codes)
    if spec.signs is None:
        coef = np.linalg.solve(Z.T @ Z + spec.alpha * np.eye(Z.shape[1]), Z.T @ target)
    else:  # the same ridge, each weight bounded to its sign (bounded least squares on the augmented system); 0: free
        sign = np.asarray(spec.signs, dtype=float)
        flip = np.where(sign == 0, 1.0, sign)
        k = Z.shape[1]
        A = np.vstack([Z * flip, np.sqrt(spec.alpha) * np.eye(k)])
        lower = np.where(sign == 0, -np.inf, 0.0)
        coef = lsq_linear(A, np.concatenate([target, np.zeros(k)]), bounds=(lower, np.full(k, np.inf)), method="bvls").x * flip
    return Linear(spec.features, center, spread, coef, float(y.mean()))


def mean_group_spearman(pred: np.ndarray, y: np.ndarray, codes: np.ndarray) -> float:
    """Mean over groups (``codes``, from :func:`group_codes`) of Spearman(pred, y); when no group has 3 or more
    items (no documents) the pooled Spearman; NaN when no group has anything to rank.

    A group whose human scores are all equal has nothing to rank and is skipped. A group where ``pred`` is
    constant but the humans are not counts 0: a signal that ties every output of a document ranks none of
    them. Skipping those too, as this function once did, let a signal that is zero in most documents (a
    story's share of the prompt's names: varying in 1 of 19 HANNA prompts) be scored on the few where it
    varies, and win the "best single signal" comparison the ship rule makes with 0.70."""
    if np.bincount(codes).max() < 3:
        return float(spearmanr(pred, y).statistic)
    values: list[np.ndarray] = []
    for members in _groups_by_size(codes):  # one (groups x size) block per group size: ranked row-wise at once
        rp, rt = rankdata(pred[members], axis=1), rankdata(y[members], axis=1)
        rp, rt = rp - rp.mean(axis=1, keepdims=True), rt - rt.mean(axis=1, keepdims=True)
        spread_p, spread_t = (rp**2).sum(axis=1), (rt**2).sum(axis=1)
        ranked = spread_t > 0  # humans tied throughout: nothing to rank, skipped
        norm = np.sqrt(spread_p * spread_t)
        rho = np.divide((rp * rt).sum(axis=1), norm, out=np.zeros(len(norm)), where=norm > 0)  # pred tied: 0
        values.append(rho[ranked])
    joined = np.concatenate(values) if values else np.empty(0)
    return float(joined.mean()) if len(joined) else float("nan")


def _groups_by_size(codes: np.ndarray) -> list[np.ndarray]:
    """Index blocks (groups x members) of the groups with at least 3 members, one block per size."""
    order = np.argsort(codes, kind="stable")
    sizes = np.bincount(codes)
    starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
    blocks = []
    for size in np.unique(sizes[sizes >= 3]):
        groups = np.flatnonzero(sizes == size)
        blocks.append(np.stack([order[starts[g] : starts[g] + size] for g in groups]))
    return blocks


def folds(codes: np.ndarray, k: int, seed: int) -> list[np.ndarray]:
    """Test masks of ``k`` folds over whole groups (seeded shuffle of the groups)."""
    unique = np.unique(codes)
    if len(unique) < k:
        raise InputError(f"cross-validation needs at least {k} documents (or items), got {len(unique)}")
    order = np.random.default_rng(seed).permutation(unique)
    fold_of = {int(g): i % k for i, g in enumerate(order)}
    assignment = np.array([fold_of[int(c)] for c in codes])
    return [assignment == i for i in range(k)]


def fitting_target(y: np.ndarray, aux: np.ndarray | None, spec: Spec) -> np.ndarray:
    """What the ridge is fitted to: the criterion's labels, or a mix with a less noisy auxiliary target
    (SummEval's four criteria share much of their signal; their mean has a third of one's annotator noise).
    Predictions are always judged, and calibrated, against the criterion's own labels."""
    return y if aux is None or spec.mix == 0 else (1 - spec.mix) * y + spec.mix * aux


def out_of_fold(X: np.ndarray, y: np.ndarray, codes: np.ndarray, spec: Spec, k: int, seed: int, aux: np.ndarray | None = None) -> np.ndarray:
    pred = np.empty_like(y)
    fit_to = fitting_target(y, aux, spec)
    for test in folds(codes, k, seed):
        pred[test] = fit_linear(X[~test], fit_to[~test], codes[~test], spec)(X[test])
    return pred


def choose(
    columns: dict[str, np.ndarray], y: np.ndarray, codes: np.ndarray, specs: list[Spec], k: int, seed: int, aux: np.ndarray | None = None
) -> tuple[Spec, float]:
    best, best_score = specs[0], -np.inf
    for spec in specs:
        X = np.stack([columns[f] for f in spec.features], axis=1)
        score = mean_group_spearman(out_of_fold(X, y, codes, spec, k, seed, aux), y, codes)
        if score > best_score + 1e-12:
            best, best_score = spec, score
    return best, float(best_score)


def monotone_map(linear: np.ndarray, y: np.ndarray) -> tuple[list[float], list[float]]:
    """Isotonic fit of y on the linear score, as strictly increasing knots (the blocks' mean linear score
    -> the block's fitted value), so that interpolation keeps distinct scores distinct."""
    order = np.argsort(linear, kind="stable")
    x_sorted, y_sorted = linear[order], y[order]
    fitted = pava(y_sorted)
    xs, ys = [], []
    start = 0
    for i in range(1, len(fitted) + 1):
        if i == len(fitted) or fitted[i] != fitted[start]:
            xs.append(float(x_sorted[start:i].mean()))
            ys.append(float(fitted[start]))
            start = i
    if len(xs) == 1:
        return xs, ys
    keep = np.concatenate([[True], np.diff(xs) > 1e-12])
    return list(np.asarray(xs)[keep]), list(np.asarray(ys)[keep])


def fit_criterion(
    rows: Sequence[dict[str, float]],
    y: Sequence[float],
    groups: Sequence[str],
    *,
    criterion: str,
    variant: Variant,
    low: float,
    high: float,
    outer_k: int = 5,
    inner_k: int = 4,
    seed: int = 0,
    auxiliary: Sequence[float] | None = None,
    signs: Mapping[str, int] | None = PRIOR_SIGNS,
    feature_groups: Mapping[str, tuple[str, ...]] | None = None,
    interval_bins: int | None = None,
    bootstrap: int = 1000,
) -> CriterionFit:
    """The nested-CV procedure of the module docstring for one ``criterion`` and ``variant`` (``"source"`` or
    ``"source+reference"``), as a :class:`CriterionFit`. ``rows`` are the items' signals (name -> value; only
    signals every row has are candidates), ``y`` their human scores and ``groups`` their documents (no document
    is in both a training and a test fold); the calibrated score is clipped to ``low``..``high``, the human
    scale. ``outer_k`` folds measure the procedure, ``inner_k`` folds inside each choose the candidate, and
    ``seed`` fixes the folds and the bootstrap (a typed :class:`~judgesdk.core.errors.InputError` when no
    signal is available or there are fewer documents than folds). The model's ``cv`` holds its outer-fold
    agreement (with a bootstrap CI over groups), the best single signal's for comparison, and how often the
    80 % interval held the held-out human score. With ``auxiliary`` (one value per row, e.g. the mean of
    every criterion's labels), the inner folds may also choose to fit to a mix of it. ``signs`` (default
    :data:`PRIOR_SIGNS`) fixes each weight's sign (0: either) and keeps only signals that have an entry;
    None fits a free ridge over every signal. ``feature_groups`` replaces :data:`GROUPS` (another domain's
    signals); ``interval_bins`` the number of score bins the interval is calibrated in (None: by data size)."""
    target = np.asarray(y, dtype=float)
    aux = None if auxiliary is None else np.asarray(auxiliary, dtype=float)
    codes = group_codes(groups)
    available = set.intersection(*(set(r) for r in rows))
    specs = candidates(variant, available, (0.0,) if aux is None else (0.0, 0.5), signs, feature_groups)
    if not specs:
        raise InputError(f"no signals available to fit {criterion} ({variant})")
    bins = interval_bins if interval_bins is not None else default_bins(len(target))
    names = sorted({f for s in specs for f in s.features})
    columns = {f: np.array([r[f] for r in rows], dtype=float) for f in names}

    outer_pred = np.empty_like(target)
    outer_interval = np.empty((len(target), 2))
    single_pred = np.empty_like(target)  # the best single signal chosen on each training part (nested)
    for fold, test in enumerate(folds(codes, outer_k, seed)):
        train = ~test
        sub = {f: c[train] for f, c in columns.items()}
        aux_train = None if aux is None else aux[train]
        spec, _ = choose(sub, target[train], codes[train], specs, inner_k, seed + 1 + fold, aux_train)
        X_train = np.stack([sub[f] for f in spec.features], axis=1)
        inner = out_of_fold(X_train, target[train], codes[train], spec, inner_k, seed + 1 + fold, aux_train)
        xs, ys = monotone_map(inner, target[train])
        model = fit_linear(X_train, fitting_target(target[train], aux_train, spec), codes[train], spec)
        linear_test = model(np.stack([columns[f][test] for f in spec.features], axis=1))
        slope = tail_slope(inner, target[train])
        outer_pred[test] = [_calibrated(v, xs, ys, low, high, slope) for v in linear_test]
        held = cross_calibrated(inner, target[train], codes[train], inner_k, seed + 1 + fold, low, high)
        edges, bounds = conformal_bins(held, target[train], INTERVAL_LEVEL, bins)
        outer_interval[test] = [interval_of(v, edges, bounds, low, high) for v in outer_pred[test]]
        name, sign = best_single_signed(sub, target[train], codes[train])
        single_pred[test] = sign * columns[name][test]

    spec, inner_score = choose(columns, target, codes, specs, inner_k, seed, aux)
    X = np.stack([columns[f] for f in spec.features], axis=1)
    oof = out_of_fold(X, target, codes, spec, inner_k, seed, aux)
    xs, ys = monotone_map(oof, target)
    model = fit_linear(X, fitting_target(target, aux, spec), codes, spec)
    slope = tail_slope(oof, target)
    held = cross_calibrated(oof, target, codes, inner_k, seed, low, high)
    edges, bounds = conformal_bins(held, target, INTERVAL_LEVEL, bins)
    cv = agreement(outer_pred, target, codes)
    cv["per_doc_spearman_ci_low"], cv["per_doc_spearman_ci_high"] = group_bootstrap(outer_pred, target, codes, bootstrap, seed)
    cv["mae"] = float(np.mean(np.abs(outer_pred - target)))
    best_name, best_value = best_single(columns, target, codes)
    cv["best_single_signal_per_doc_spearman"] = best_value
    cv["best_single_signal_nested_per_doc_spearman"] = mean_group_spearman(single_pred, target, codes)
    inside = (outer_interval[:, 0] <= target + 1e-9) & (target - 1e-9 <= outer_interval[:, 1])
    cv["interval_coverage"] = float(inside.mean())
    cv["interval_items"] = float(len(target))
    model_out = CriterionModel(
        criterion=criterion,
        variant=variant,
        features=list(spec.features),
        center=model.center.tolist(),
        spread=model.spread.tolist(),
        coef=model.coef.tolist(),
        intercept=model.intercept,
        calibration_x=xs,
        calibration_y=ys,
        low=low,
        high=high,
        interval=_widest(bounds),
        interval_level=INTERVAL_LEVEL,
        interval_edges=edges,
        interval_bounds=bounds,
        fitted_range=[(float(np.quantile(X[:, j], 0.005)), float(np.quantile(X[:, j], 0.995))) for j in range(X.shape[1])],
        extrapolate=spec.signs is not None,
        tail_slope=slope,
        min_words=int(round(np.expm1(min(r["log_words"] for r in rows)))) if all("log_words" in r for r in rows) else None,
        choice={"group": spec.group, "alpha": spec.alpha, "mode": spec.mode, "auxiliary_mix": spec.mix, "signs": "free" if spec.signs is None else "prior", "inner_cv_per_doc_spearman": round(inner_score, 4), "best_single_signal": best_name},
        cv={k: (None if v is None else round(float(v), 4)) for k, v in cv.items()},
    )
    return CriterionFit(model_out, outer_pred, outer_interval)


def default_bins(n: int) -> int:
    """Score bins the interval is calibrated in: three where each holds 200+ items, else two, else one (a 10 %
    tail of fewer than ~10 residuals is noise)."""
    return 3 if n >= 600 else 2 if n >= 200 else 1


def cross_calibrated(linear: np.ndarray, y: np.ndarray, codes: np.ndarray, k: int, seed: int, low: float, high: float) -> np.ndarray:
    """Each item's calibrated score from a monotone map fitted on the other folds' items: out-of-fold linear
    scores calibrated out of fold too. Residuals of a map fitted on the same items are too small (the map
    has learnt them; benchmarks/README.md measures what that did to the first fit's coverage)."""
    out = np.empty_like(y)
    for test in folds(codes, k, seed):
        xs, ys = monotone_map(linear[~test], y[~test])
        slope = tail_slope(linear[~test], y[~test])
        out[test] = [_calibrated(v, xs, ys, low, high, slope) for v in linear[test]]
    return out


def conformal_bins(pred: np.ndarray, y: np.ndarray, level: float, bins: int) -> tuple[list[float], list[tuple[float, float]]]:
    """Split-conformal residual bounds (prediction - human), per bin of the predicted score: the inner bin
    edges (quantiles of the predictions) and, per bin, the ceil((n+1)(1-t))-th smallest and largest
    residuals for tails t = (1 - level) / 2, so an interval holds a new human score with probability at least
    ``level`` when the new item is exchangeable with these. Binning by score lets a low score, where humans
    disagree most, get a wider interval than a high one."""
    residual = pred - y
    edges = sorted({float(e) for e in np.quantile(pred, np.arange(1, bins) / bins)}) if bins > 1 else []
    bounds = []
    which = np.searchsorted(edges, pred, side="right")
    for b in range(len(edges) + 1):
        r = np.sort(residual[which == b])
        if not len(r):
            r = np.sort(residual)
        n = len(r)
        tail = (1 - level) / 2
        k = min(n, int(np.ceil((n + 1) * (1 - tail))))  # rank of the upper bound (1-based), capped at the largest
        bounds.append((float(r[n - k]), float(r[k - 1])))
    return edges, bounds


def interval_of(score: float, edges: Sequence[float], bounds: Sequence[tuple[float, float]], low: float, high: float) -> tuple[float, float]:
    """The interval around ``score`` from its bin's residual bounds, clipped to the scale."""
    lo, hi = bounds[int(np.searchsorted(edges, score, side="right"))]
    return max(low, score - hi), min(high, score - lo)


def _widest(bounds: Sequence[tuple[float, float]]) -> tuple[float, float]:
    return (min(b[0] for b in bounds), max(b[1] for b in bounds))


def group_values(pred: np.ndarray, y: np.ndarray, codes: np.ndarray) -> np.ndarray:
    """Per group, Spearman of prediction and label (groups with a constant side left out)."""
    values = []
    for g in np.unique(codes):
        m = codes == g
        if m.sum() >= 3 and np.ptp(pred[m]) > 0 and np.ptp(y[m]) > 0:
            values.append(float(spearmanr(pred[m], y[m]).statistic))
    return np.array(values)


def group_bootstrap(pred: np.ndarray, y: np.ndarray, codes: np.ndarray, n: int = 1000, seed: int = 0) -> tuple[float | None, float | None]:
    """95 % percentile-bootstrap CI of the mean per-group Spearman of ``pred`` and ``y``, groups (``codes``, from
    :func:`group_codes`) resampled ``n`` times with ``seed``; only groups of 3+ items where neither side is
    constant count. ``(None, None)`` when ``n`` is 0 or fewer than two groups count (data without groups)."""
    values = group_values(pred, y, codes)
    if n <= 0 or len(values) < 2:
        return None, None
    rng = np.random.default_rng(seed)
    means = values[rng.integers(0, len(values), size=(n, len(values)))].mean(axis=1)
    return float(np.quantile(means, 0.025)), float(np.quantile(means, 0.975))


def tail_slope(linear: np.ndarray, y: np.ndarray) -> float | None:
    """Least-squares slope of the labels on the linear score (None where it is not positive: the end
    segments' slopes then continue the map)."""
    spread = float(np.var(linear))
    slope = float(np.cov(linear, y, bias=True)[0, 1] / spread) if spread > 0 else 0.0
    return slope if slope > 0 else None


def _calibrated(value: float, xs: list[float], ys: list[float], low: float, high: float, tail: float | None = None) -> float:
    probe = CriterionModel(
        criterion="", features=[], center=[], spread=[], coef=[], intercept=0.0,
        calibration_x=xs, calibration_y=ys, low=low, high=high, interval=(0.0, 0.0), tail_slope=tail,
    )  # fmt: skip
    return probe.calibrate(float(value))


def agreement(pred: np.ndarray, y: np.ndarray, codes: np.ndarray) -> dict[str, float | None]:
    out: dict[str, float | None] = {
        "per_doc_spearman": mean_group_spearman(pred, y, codes),
        "pooled_spearman": float(spearmanr(pred, y).statistic),
    }
    return out


def best_single(columns: dict[str, np.ndarray], y: np.ndarray, codes: np.ndarray) -> tuple[str, float]:
    """The single signal with the highest |mean per-document Spearman| on these data (its sign chosen here:
    an optimistic comparison for the fused model)."""
    best, value = "", -np.inf
    for name, column in columns.items():
        rho = mean_group_spearman(column, y, codes)
        if np.isfinite(rho) and abs(rho) > value:
            best, value = name, abs(rho)
    return best, float(value)


def best_single_signed(columns: dict[str, np.ndarray], y: np.ndarray, codes: np.ndarray) -> tuple[str, float]:
    """The single signal with the highest |mean per-group Spearman| here, and the sign that makes it agree."""
    best, value, sign = "", -np.inf, 1.0
    for name, column in columns.items():
        rho = mean_group_spearman(column, y, codes)
        if np.isfinite(rho) and abs(rho) > value:
            best, value, sign = name, abs(rho), 1.0 if rho >= 0 else -1.0
    return best, sign


def system_kendall(pred: np.ndarray, y: np.ndarray, systems: Sequence[str]) -> float:
    """Kendall tau between per-system mean predictions (``pred``) and per-system mean human scores (``y``),
    ``systems`` naming each item's system: how well the judge ranks systems rather than outputs."""
    codes = group_codes(systems)
    n = codes.max() + 1
    counts = np.bincount(codes, minlength=n)
    return float(kendalltau(np.bincount(codes, weights=pred, minlength=n) / counts, np.bincount(codes, weights=y, minlength=n) / counts).statistic)
