"""Optional post-processors over lists of results: 002's Filtering and Binning (§4.4, App. B).

002 applied both in its test phase on top of Human-Guideline scores and reports gains from each
(Table 2: Filtering, then Binning).

* :func:`filter_redundant` (002 §4.4 "Filtering", App. D Table 18): the judge is asked whether the
  output is redundant (repeated words or phrases, "a first member, a second member, ..."); a "Yes"
  marks a failed generation, which receives the scale's minimum score whatever it was scored before.
* :func:`bin_scores` (002 §4.4 "Binning", App. B): near-identical scores ("1 and 1.01") are merged
  into one value, to remove noise among outputs of equivalent quality. 002 gives no formula, only the
  intent and its effect (unique scores 36 -> 10 and 46 -> 13); the rule here is ours and stated in
  full: sort the distinct scores, open a bin at the lowest one, put every score within ``width`` of
  the bin's first score into it, open the next bin at the first score beyond, and so on; each result
  then gets the mean score of its bin. Bins are disjoint ordered intervals, so the order of results
  with different bins never changes (ties are only created, never reversed).

Both return new result objects (inputs are not changed) and say what they did in ``notes``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from judgesdk.core import Criterion, InputError, JudgeItem, JudgeResult, Scale
from judgesdk.estimation import EstimationSettings, estimate
from judgesdk.prompting import Template, load_template
from judgesdk.provider import Provider
from judgesdk.scorers.common import greedy_without_probabilities, template_values

__all__ = ["REDUNDANCY_SCALE", "bin_scores", "filter_redundant", "is_redundant"]

REDUNDANCY_SCALE = Scale(labels=("Yes", "No"), values=(1.0, 0.0))  # value = "is redundant"
FILTER_TEMPLATE = "filtering.redundancy"


async def is_redundant(
    provider: Provider,
    item: JudgeItem,
    *,
    template: Template | None = None,
    settings: EstimationSettings | None = None,
    threshold: float = 0.5,
) -> tuple[bool | None, str]:
    """Whether the judge calls ``item.output`` redundant: P("Yes") > ``threshold`` (the greedy "Yes"
    of 002 where only text is available). None when the answer could not be read; plus a note."""
    template = template or load_template(FILTER_TEMPLATE)
    settings = greedy_without_probabilities(settings or EstimationSettings(), provider.capabilities)
    messages = template.render(**template_values(item, Criterion(name="redundancy")))
    found = await estimate(provider, messages, REDUNDANCY_SCALE, settings, tags=template.tags())
    if found.distribution is None:
        return None, f"redundancy check ({found.method}) unreadable: {found.reason}; score kept"
    p_yes = found.distribution.prob("Yes")
    return p_yes > threshold, f"redundancy check ({found.method}): P(Yes)={p_yes:.3f}"


async def filter_redundant(
    provider: Provider,
    items: Sequence[JudgeItem],
    results: Sequence[JudgeResult],
    scale: Scale,
    *,
    template: Template | None = None,
    settings: EstimationSettings | None = None,
    threshold: float = 0.5,
) -> list[JudgeResult]:
    """002 §4.4 Filtering: results whose output the judge calls redundant get ``scale``'s minimum.

    ``items[i]`` is the item ``results[i]`` judged (a count mismatch is an
    :class:`~judgesdk.core.errors.InputError`). A filtered result has status ``ok`` even if its
    own score could not be read: the filter decided its score. Unreadable checks keep the result.
    ``provider`` answers the redundancy question, asked with ``template`` (default: 002's filter prompt) under
    ``settings`` (greedy where the provider gives no probabilities); an output is redundant when P("Yes")
    exceeds ``threshold``. Returns the results in input order, each with a note on its check.
    """
    if len(items) != len(results):
        raise InputError(
            f"filter_redundant needs one item per result, got {len(items)} items and {len(results)} results"
        )
    checks = await asyncio.gather(
        *(is_redundant(provider, item, template=template, settings=settings, threshold=threshold) for item in items)
    )
    return [_filtered(result, redundant, note, scale.low) for result, (redundant, note) in zip(results, checks)]


def _filtered(result: JudgeResult, redundant: bool | None, note: str, minimum: float) -> JudgeResult:
    if not redundant:
        return result.model_copy(update={"notes": [*result.notes, note]})
    note = f"{note}: redundant, score {result.score} -> {minimum:g} (002 §4.4 Filtering)"
    return result.model_copy(update={"score": minimum, "status": "ok", "error": None, "notes": [*result.notes, note]})


def bin_scores(results: Sequence[JudgeResult], width: float = 0.05) -> list[JudgeResult]:
    """002 §4.4 Binning with the rule of the module docstring; results without a score are kept as is.

    ``width`` is in score units: 0.05 merges 1 and 1.01 on a 1-5 scale but keeps 1 and 1.33 apart.
    """
    if not width > 0:
        raise InputError(f"binning width must be positive, got {width}")
    value_of = bin_map([r.score for r in results if r.score is not None], width)
    return [_binned(r, value_of[r.score]) if r.score is not None else r for r in results]


def bin_map(scores: Sequence[float], width: float) -> dict[float, float]:
    """Each distinct score -> the mean score (over ``scores``, with repeats) of its bin."""
    bins: list[list[float]] = []
    for value in sorted(scores):
        if bins and value - bins[-1][0] <= width:
            bins[-1].append(value)
        else:
            bins.append([value])
    return {value: sum(members) / len(members) for members in bins for value in members}


def _binned(result: JudgeResult, value: float) -> JudgeResult:
    if value == result.score:
        return result
    note = f"binned: {result.score} -> {value} (002 §4.4 Binning)"
    return result.model_copy(update={"score": value, "notes": [*result.notes, note]})
