"""Refit the fused judge on a user's own labelled outputs (``judgesdk calibrate --fused``).

The shipped fit is tuned to SummEval's annotators and news summaries; a team with its own labels (any
criterion, any 1-N scale) gets a fit for its data from the same nested cross-validation, grouped by
``doc_id`` where the labels have one (else every item is its own group). The signals come from the
judge config's first provider through its cache (the CLI passes ``Judge.provider(0)``), so a refit after adding
labels recomputes nothing already seen. The fit is bound to one model file's sha256, so that provider is the local
model or a server that echoes prompt log-probabilities and whose served file the config names (``model_sha256``):
the route to a fused judge on a server that cannot serve the shipped fits' GGUF file (vLLM, SGLang).
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from judgesdk.core import ConfigError, InputError, JudgeItem
from judgesdk.fused.domains import shape
from judgesdk.fused.model import FusedModelFile, ModelIdentity, model_sha256
from judgesdk.fused.signals import extract, features
from judgesdk.fused.train import MIN_ITEMS, fit_file, signal_table
from judgesdk.provider import Provider
from judgesdk.records import dimension_labels


class Refit(BaseModel):
    fitted: FusedModelFile
    signals: dict[str, float]  # each raw signal's agreement on the same labels
    n_items: int
    n_groups: int


def labelled_items(path: Path, dimension: str, scale: tuple[float, float] | None = None) -> tuple[list[JudgeItem], list[float], list[str]]:
    """Items (output, source, reference) with their label for ``dimension`` and their group (doc_id); the labels read
    by the records' strict reader (:func:`judgesdk.records.dimension_labels`: finite numbers, each item once, inside
    ``scale`` when given)."""
    items, labels, groups = [], [], []
    for number, row, value in dimension_labels(path, dimension, scale=scale, what="labelled outputs"):
        if not isinstance(row.get("output"), str) or not isinstance(row.get("source"), str):
            raise InputError(f"{path}:{number}: a labelled output needs 'output' and 'source' strings to compute its signals")
        context = row.get("context") if isinstance(row.get("context"), str) else None
        items.append(JudgeItem(output=row["output"], source=row["source"], reference=row.get("reference"), context=context, id=str(row.get("id", number))))
        labels.append(value)
        groups.append(str(row.get("doc_id", f"line{number}")))
    return items, labels, groups


async def refit(
    provider: Provider,
    human: Path,
    dimension: str,
    *,
    scale: tuple[float, float] | None = None,
    min_items: int = MIN_ITEMS,
    seed: int = 0,
    domain: str = "news",
) -> Refit:
    """Signals of every labelled output from ``provider`` with ``domain``'s prompts (in file order, one at a
    time, so each source's prefix is evaluated once), then :func:`judgesdk.fused.train.fit_file`; the fit's
    envelope is the labelled items' shape, so it is applied only to items like them. ``human`` is a JSONL file
    of labelled outputs (``output`` and ``source`` strings, the label for ``dimension`` under ``scores`` or at
    the top level, ``doc_id`` as the group); ``scale`` is the human scale (default: the lowest and highest
    label), ``min_items`` the fewest labels a fit accepts, ``seed`` fixes the folds. Returns a :class:`Refit`:
    the fit with each raw signal's agreement on the same labels. Raises
    :class:`~judgesdk.core.errors.InputError` for too few or malformed labels (read as the gate reads them: finite
    numbers, each item once), a ``scale`` that is not two finite numbers, low below high, or a label outside it, and
    :class:`~judgesdk.core.errors.ConfigError` when the provider's model file has no known sha256."""
    items, labels, groups = labelled_items(human, dimension, scale)
    if len(items) < min_items:
        raise InputError(f"{dimension}: {len(items)} labelled items; a fit needs at least {min_items} (--min-items)")
    sha = model_sha256(provider)
    if sha is None:
        raise ConfigError(
            f"the fused judge is fitted to one model file: the config's first provider ({provider.kind}/{provider.model}) must be a local "
            "model, or a server whose served file the config names by model_sha256 under [providers.options]"
        )
    dialogue = domain == "dialogue"
    rows: list[dict[str, Any]] = [
        features(await extract(provider, item, reference=False, domain=domain, without_context=dialogue)) for item in items
    ]
    identity = ModelIdentity(name=provider.model, sha256=sha)
    low, high = scale if scale is not None else (min(labels), max(labels))
    data = {
        "dataset": str(human), "file_sha256": hashlib.sha256(human.read_bytes()).hexdigest(),
        "items": len(items), "documents": len(set(groups)), "dimension": dimension,
    }  # fmt: skip
    fitted = fit_file(
        rows, {dimension: labels}, groups, model=identity, scales={dimension: (low, high)}, data=data, seed=seed, min_items=min_items,
        domain=domain, shapes=[shape(item.output, item.source) for item in items],
    )  # fmt: skip
    return Refit(fitted=fitted, signals=signal_table(rows, labels, groups), n_items=len(items), n_groups=len(set(groups)))
