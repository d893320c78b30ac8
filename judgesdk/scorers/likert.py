"""Direct Likert scoring of one criterion (002 §3): the judge states a score on the criterion's scale.

The three aggregations of 002 (eq. 1-3) differ only in how the answer's distribution is read:

* ``geval`` (002's Logprob, G-Eval): expected value of the label distribution, from exact label
  probabilities or top-k logprobs (sampling when the provider has neither);
* ``direct``: the single greedy answer, parsed; on providers that honour a grammar the answer is
  constrained to one label of the scale (:mod:`judgesdk.estimation.grammars`; method option ``grammar = false``
  lets it run free);
* ``sampling`` (002's Approximation): mean of n answers sampled at temperature T.
"""

from __future__ import annotations

from judgesdk.core import Criterion, JudgeItem, JudgeResult, MissingItemField
from judgesdk.estimation import estimate, format_for
from judgesdk.prompting import Template, bundled_template_ids, load_template
from judgesdk.provider import Provider
from judgesdk.scorers import decision
from judgesdk.scorers.common import ScorerOptions, result_from_estimate, template_values
from judgesdk.scorers.spec import MethodSpec

_METHOD_OF = {"direct": "parsed", "sampling": "sampling"}
DEFAULT_TEMPLATE = "direct.likert"


async def score(
    provider: Provider, item: JudgeItem, criterion: Criterion, options: ScorerOptions, method: str = "geval"
) -> JudgeResult:
    """Score ``item`` on ``criterion`` with aggregation ``method`` (geval, direct or sampling); geval on a
    provider that answers decision questions asks one (:mod:`judgesdk.scorers.decision`)."""
    if method == "geval" and decision.chosen(provider, method, options.settings)[0]:
        return await decision.score(provider, item, criterion, options, method)
    settings = options.settings
    if method in _METHOD_OF:
        settings = settings.model_copy(update={"method": _METHOD_OF[method]})
    template = options.template_or(DEFAULT_TEMPLATE)
    template = without_source_variant(template) if item.source is None else template
    messages = template.render(**template_values(item, criterion))
    fmt = format_for("direct", provider, criterion.scale, options.extra) if method == "direct" else None
    found = await estimate(provider, messages, criterion.scale, settings, tags=template.tags(), answer_format=fmt)
    return result_from_estimate(found, criterion, method, item)


def without_source_variant(template: Template) -> Template:
    """The ``<id>.no_source`` variant of a template that needs a source, for items judged without one."""
    if "source" not in template.variables:
        return template
    variant = f"{template.id}.no_source"
    if variant not in bundled_template_ids():
        raise MissingItemField(f"it has no 'source', which template {template.id!r} needs (it has no {variant!r} variant): pass source=...")
    return load_template(variant)


GEVAL = MethodSpec(name="geval", score=score, decisions="chosen")
DIRECT = MethodSpec(name="direct", score=score, options={"grammar": "boolean"})
SAMPLING = MethodSpec(name="sampling", score=score, samples=True)
