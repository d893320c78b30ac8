"""Steps every scorer shares: the template's variables for an item, and an estimate turned into a result."""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from judgesdk.errors import InputError
from judgesdk.estimation import Estimate, EstimationSettings
from judgesdk.templates import Template, load_template
from judgesdk.types import Criterion, JudgeItem, JudgeResult

S = TypeVar("S")


class ScorerOptions(BaseModel):
    """What a scorer may be told beyond the item and criterion.

    ``template`` overrides the scorer's default template; ``dataset`` selects dataset-specific prompt
    variants where a paper prints them (``<id>.<dataset>``); ``extra`` holds method-specific settings
    (e.g. ladder size, number of Fusion-Eval predictions), documented by each scorer.
    """

    model_config = ConfigDict(arbitrary_types_allowed=True)

    settings: EstimationSettings = Field(default_factory=EstimationSettings)
    template: Template | None = None
    dataset: str | None = None
    extra: dict[str, Any] = Field(default_factory=dict)

    def store(self, key: str, kind: type[S]) -> S:
        """The per-judge store ``extra[key]`` (ladders, plans), created on first use; kept with the judge's
        options so nothing is global and a judge's artefacts can be exported, reviewed and imported."""
        store = self.extra.setdefault(key, kind())
        if not isinstance(store, kind):
            raise InputError(f"options.extra[{key!r}] must be a {kind.__name__}, got {type(store).__name__}")
        return store

    def template_or(self, default_id: str | Path) -> Template:
        return self.template if self.template is not None else load_template(default_id)


def template_values(item: JudgeItem, criterion: Criterion) -> dict[str, object]:
    """Values for the documented placeholder names (see prompts/README.md). Absent fields stay None, so a
    template that needs one fails with a typed error naming it."""
    return {
        "output": item.output,
        "source": item.source,
        "context": item.context,
        "reference": item.reference,
        "criterion": criterion.name,
        "definition": criterion.description or criterion.name,
        "scale_low": _number(criterion.scale.low),
        "scale_high": _number(criterion.scale.high),
    }


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else str(value)


def result_from_estimate(estimate: Estimate, criterion: Criterion, method: str, item: JudgeItem) -> JudgeResult:
    """A score only where there is a distribution; a low-coverage estimate keeps its score and its status."""
    distribution = estimate.distribution
    return JudgeResult(
        score=distribution.expected if distribution is not None else None,
        status=estimate.status,
        criterion=criterion.name,
        method=f"{method}/{estimate.method}",
        method_reason=estimate.reason,
        distribution=distribution,
        raw=estimate.texts,
        provider=estimate.provider,
        model=estimate.model,
        cached=estimate.cached,
        usage=estimate.usage,
        latency_s=estimate.latency_s,
        notes=estimate.notes,
        item_id=item.id,
    )
