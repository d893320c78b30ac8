"""The public data types (judgesdk.core.types): what a scale, a criterion and an item refuse, each with an
:class:`InputError` saying what to fix, and what a label distribution and a usage add up to."""

from __future__ import annotations

import math

import pytest

from judgesdk.core.errors import InputError
from judgesdk.core.types import (
    Criterion,
    JudgeItem,
    LabelDistribution,
    Scale,
    Usage,
    as_criteria,
    as_criterion,
    method_family,
)


@pytest.mark.parametrize(
    "labels,values,message",
    [(("1",), (1.0,), "at least two labels"), (("1", "2"), (1.0,), "one value per label"), (("a", "a"), (1.0, 2.0), "distinct")],
)
def test_a_scale_refuses_what_cannot_be_a_scale(labels, values, message):
    with pytest.raises(InputError, match=message):
        Scale(labels=labels, values=values)


def test_likert_and_letter_scales():
    likert = Scale.likert(0, 3)
    assert likert.labels == ("0", "1", "2", "3") and likert.values == (0.0, 1.0, 2.0, 3.0)
    assert (likert.low, likert.high, likert.value_of("2")) == (0.0, 3.0, 2.0)
    with pytest.raises(InputError, match="low < high"):
        Scale.likert(5, 5)
    letters = Scale.letters((5, 4, 3))
    assert letters.labels == ("A", "B", "C") and letters.value_of("A") == 5.0 and letters.low == 3.0


def test_a_criterion_needs_a_name_and_a_bare_name_is_judged_on_one_to_five():
    with pytest.raises(InputError, match="non-empty name"):
        Criterion(name="  ")
    named = as_criterion("coherence")
    assert named == Criterion(name="coherence", description="coherence", scale=Scale.likert(1, 5))
    given = Criterion(name="fluency", scale=Scale.likert(1, 3))
    assert as_criterion(given) is given and as_criteria(given) == (given,)
    assert [c.name for c in as_criteria(["a", given])] == ["a", "fluency"]
    for bad in ("", [], 3):
        with pytest.raises(InputError):
            as_criteria(bad)  # type: ignore[arg-type]


def test_an_item_needs_an_output():
    with pytest.raises(InputError, match="item x has an empty output"):
        JudgeItem(output="   ", id="x")
    assert JudgeItem(output="fine", source="src").source == "src"


@pytest.mark.parametrize("field", ["output", "source", "reference", "context", "id"])
def test_an_item_with_a_lone_surrogate_is_refused_where_it_is_made(field):
    fields = {"output": "fine", field: "bad \udcff text"}
    with pytest.raises(InputError, match=f"'{field}' holds '\\\\udcff' at character 4, a lone surrogate"):
        JudgeItem(**fields)


def test_a_label_distribution_reads_its_mean_mode_spread_and_entropy():
    dist = LabelDistribution(scale=Scale.likert(1, 3), probs=(0.25, 0.5, 0.25), method="exact")
    assert dist.expected == pytest.approx(2.0) and dist.mode == "2" and dist.variance == pytest.approx(0.5)
    assert dist.entropy == pytest.approx(-(0.5 * math.log(0.25) + 0.5 * math.log(0.5)))
    assert dist.prob("3") == 0.25 and dist.as_dict() == {"1": 0.25, "2": 0.5, "3": 0.25}


def test_usage_adds_field_by_field_and_a_method_family_is_its_first_part():
    total = Usage(input_tokens=3, output_tokens=1, calls=1) + Usage(input_tokens=2, cached_input_tokens=2, cache_write_input_tokens=1, calls=1)
    assert total == Usage(input_tokens=5, output_tokens=1, cached_input_tokens=2, cache_write_input_tokens=1, calls=2)
    assert method_family("fused/source+reference") == "fused" and method_family("geval") == "geval"
