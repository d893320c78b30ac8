"""Build a fused fit file from signals and human labels: the shipped SummEval fit and a user's refit.

Both go through the same steps: per criterion (and per variant, with reference signals where every item
has a reference), :func:`judgesdk.fused.fit.fit_criterion`'s nested cross-validation by document, then one
:class:`~judgesdk.fused.model.FusedModelFile` with its provenance. :func:`signal_table` gives each raw
signal's agreement on the same data, so a report can show what fusing bought.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Mapping, Sequence
from importlib.metadata import PackageNotFoundError, version

import numpy as np

from judgesdk.core import InputError
from judgesdk.fused import priors
from judgesdk.fused.domains import DOMAINS, envelope
from judgesdk.fused.fit import CriterionFit, fit_criterion, group_codes, mean_group_spearman
from judgesdk.fused.model import CriterionModel, Declined, FusedModelFile, ModelIdentity, Variant
from judgesdk.fused.signals import UNCONDITIONAL_FEATURES, template_hashes

MIN_ITEMS = 10
ALIASES = {"faithfulness": "consistency", "factuality": "consistency", "factual consistency": "consistency"}


def sdk_version() -> str:
    try:
        return version("judgesdk")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree without metadata
        return "unknown"


def check_labels(labels: Sequence[float], criterion: str, min_items: int = MIN_ITEMS) -> None:
    if len(labels) < min_items:
        raise InputError(f"{criterion}: {len(labels)} labelled items; a fit needs at least {min_items} (--min-items)")
    if len(set(labels)) < 2:
        raise InputError(f"{criterion}: every label is {labels[0]}: constant labels say nothing to fit")
    if not all(math.isfinite(v) for v in labels):
        raise InputError(f"{criterion}: labels must be finite numbers")


def fit_file(
    features: Sequence[Mapping[str, float]],
    labels: Mapping[str, Sequence[float | None]],
    groups: Sequence[str],
    *,
    model: ModelIdentity,
    scales: Mapping[str, tuple[float, float]],
    data: dict[str, object],
    outer_k: int = 5,
    inner_k: int = 4,
    seed: int = 0,
    min_items: int = MIN_ITEMS,
    reference_variant: bool = False,
    without_source_for: Collection[str] | None = None,
    domain: str = "news",
    shapes: Sequence[Mapping[str, float]] | None = None,
    ship: str = "always",
    fits: dict[str, dict[str, CriterionFit]] | None = None,
) -> FusedModelFile:
    """One fit file for every criterion in ``labels`` (a None label leaves that item out of that criterion).
    ``features`` are each item's signals (:func:`judgesdk.fused.signals.features`), ``groups`` its document (no
    document is in both a training and a test fold), ``scales`` each criterion's human scale (low, high);
    ``model`` (the model file the signals were read from) and ``data`` (what was fitted on) are recorded as the
    file's provenance. ``outer_k`` and ``inner_k`` are the nested-CV folds (fewer for small sets), ``seed``
    fixes them, and a criterion with fewer than ``min_items`` labels, constant labels or non-finite ones is an
    :class:`~judgesdk.core.errors.InputError`, as is an unknown ``domain``.
    ``reference_variant`` adds a second model per criterion that also reads the reference's n-gram overlap
    (and the likelihood given it, where the rows have it), used for items that have a reference; it ships
    only where its nested-CV per-group Spearman beats the source-only model's on the same folds. A criterion
    keeps the prior signs of :func:`judgesdk.fused.priors.signs_for` for ``domain``. ``without_source_for``
    names the criteria that may read the pass without the source (:data:`~judgesdk.fused.signals.UNCONDITIONAL_FEATURES`;
    None: all): it doubles the model time of a criterion judged alone, so a criterion it barely helps should
    not make every user pay for it. ``shapes`` (each item's :func:`judgesdk.fused.domains.shape`) become the
    file's envelope. ``ship="beats-single"`` ships a criterion only where its nested-CV per-group Spearman
    has a 95 % CI above 0 and beats the best single signal; the others are listed as declined, with their
    figures. ``fits``, when given, receives every fitted variant (criterion -> variant -> fit) for reports."""
    if domain not in DOMAINS:
        raise InputError(f"no fused domain {domain!r}; known: {', '.join(DOMAINS)}")
    criteria: dict[str, list[CriterionModel]] = {}
    declined: list[Declined] = []
    with_reference = reference_variant and all("ref_f1_1" in f for f in features)
    complete = [i for i in range(len(features)) if all(values[i] is not None for values in labels.values())]
    # the auxiliary target: the mean of every criterion's label, each put on 0-1 by its scale (criteria on
    # different scales, as TopicalChat's, weigh alike), then back on each criterion's own scale
    unit = {c: (scales[c][0], (scales[c][1] - scales[c][0]) or 1.0) for c in labels}
    mean_unit = {i: float(np.mean([(labels[c][i] - unit[c][0]) / unit[c][1] for c in labels])) for i in complete} if len(labels) > 1 else {}  # type: ignore[operator]
    for name, values in labels.items():
        keep = [i for i, v in enumerate(values) if v is not None]
        y = [float(values[i]) for i in keep]  # type: ignore[arg-type]
        check_labels(y, name, min_items)
        rows = readable([features[i] for i in keep], name, without_source_for)
        docs = [groups[i] for i in keep]
        k_outer, k_inner = _folds_for(docs, outer_k, inner_k)
        low, high = scales[name]
        variants: list[Variant] = ["source", "source+reference"] if with_reference else ["source"]
        aux = [low + (high - low) * mean_unit[i] for i in keep] if mean_unit and all(i in mean_unit for i in keep) else None
        fitted: dict[str, CriterionFit] = {
            v: fit_criterion(
                rows, y, docs, criterion=name, variant=v, low=low, high=high, outer_k=k_outer, inner_k=k_inner, seed=seed, auxiliary=aux,
                signs=signs_for(name, domain), feature_groups=priors.FEATURE_GROUPS[domain],
            )
            for v in variants
        }  # fmt: skip
        if fits is not None:
            fits[name] = fitted
        source = fitted["source"].model
        why = _why_not(source) if ship == "beats-single" else None
        if why:
            declined.append(Declined(criterion=name, variant="source", reason=why, cv=source.cv))
            continue
        criteria[name] = [source]
        if "source+reference" in fitted:
            with_ref = fitted["source+reference"].model
            if not priors.reference_informs(name, ALIASES):
                reason = (f"{name} is about how the text reads, which a reference cannot tell (priors.READS_ALONE); "
                          f"with the reference {with_ref.cv.get('per_doc_spearman')} per-group Spearman (nested CV)")  # fmt: skip
                declined.append(Declined(criterion=name, variant="source+reference", reason=reason, cv=with_ref.cv))
            elif (with_ref.cv.get("per_doc_spearman") or -1.0) > (source.cv.get("per_doc_spearman") or -1.0):
                criteria[name].append(with_ref)
            else:
                reason = (f"with the reference {with_ref.cv.get('per_doc_spearman')} per-group Spearman (nested CV), "
                          f"not above source-only {source.cv.get('per_doc_spearman')}")  # fmt: skip
                declined.append(Declined(criterion=name, variant="source+reference", reason=reason, cv=with_ref.cv))
    spec = DOMAINS[domain]
    return FusedModelFile(
        signal_set=spec.signal_set,
        templates=template_hashes(domain),
        model=model,
        data=data,
        folds={"level": "document", "outer_k": outer_k, "inner_k": inner_k, "seed": seed, "nested": True},
        sdk_version=sdk_version(),
        criteria=criteria,
        aliases={alias: target for alias, target in ALIASES.items() if target in criteria},
        domain=domain,
        envelope=envelope(shapes, context=spec.context) if shapes else None,
        declined=declined,
    )


def _why_not(model: CriterionModel) -> str | None:
    """Why a criterion's fit should not ship (None: it should): no usable signal, or no gain over one signal."""
    cv = model.cv
    rho, low = cv.get("per_doc_spearman"), cv.get("per_doc_spearman_ci_low")
    single = cv.get("best_single_signal_per_doc_spearman")
    name = model.choice.get("best_single_signal")
    if rho is None or low is None or low <= 0:
        return f"no usable signal: per-group Spearman {rho} (nested CV), 95 % CI from {low}"
    if single is not None and rho <= single:
        return f"fusing does not beat one signal: per-group Spearman {rho} (nested CV) against {name} alone {single} (in-sample)"
    return None


def signs_for(criterion: str, domain: str = "news") -> Mapping[str, int] | None:
    """The prior signs for a criterion in a domain (:func:`judgesdk.fused.priors.signs_for`)."""
    return priors.signs_for(criterion, domain, ALIASES)


def readable(features: Sequence[Mapping[str, float]], criterion: str, without_source_for: Collection[str] | None) -> list[dict[str, float]]:
    """Each row of ``features`` with only the signals ``criterion``'s model may read: without the pass without
    the source unless the criterion is in ``without_source_for`` (None: every criterion may read it)."""
    dropped = set(UNCONDITIONAL_FEATURES) if without_source_for is not None and criterion not in without_source_for else set()
    return [{k: v for k, v in row.items() if k not in dropped} for row in features]


def _folds_for(groups: Sequence[str], outer_k: int, inner_k: int) -> tuple[int, int]:
    """Fewer folds for small sets (each inner training set keeps at least two groups per fold)."""
    n = len(set(groups))
    if n < 3:
        raise InputError(f"cross-validation needs at least 3 documents (or items without doc_id), got {n}")
    outer = min(outer_k, n)
    inner = max(2, min(inner_k, n - math.ceil(n / outer)))
    return outer, inner


def signal_table(features: Sequence[Mapping[str, float]], labels: Sequence[float], groups: Sequence[str]) -> dict[str, float]:
    """Each signal's mean per-document Spearman with the ``labels`` (pooled Spearman without documents), signal
    name -> value rounded to 4 places, over the signals every row of ``features`` has; ``groups`` names each
    row's document."""
    codes = group_codes(groups)
    y = np.asarray(labels, dtype=float)
    names = sorted(set.intersection(*(set(f) for f in features)))
    return {n: round(mean_group_spearman(np.array([f[n] for f in features], dtype=float), y, codes), 4) for n in names}
