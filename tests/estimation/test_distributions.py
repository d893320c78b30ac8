import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from judgesdk.core.types import Scale
from judgesdk.estimation.distributions import (
    from_answer,
    from_label_logprobs,
    from_samples,
    from_top_logprobs,
    label_keys,
    match_label,
    normalize_token,
)
from judgesdk.provider.protocol import TokenLogprob, TopLogprob

LIKERT = Scale.likert(1, 5)


def tok(token, logprob, top):
    return TokenLogprob(token=token, logprob=logprob, top=[TopLogprob(token=t, logprob=math.log(p)) for t, p in top])


@pytest.mark.parametrize(
    "token,label",
    [("5", "5"), (" 5", "5"), ("▁5", "5"), ("Ġ5", "5"), ("five", "5"), ("Five", "5"), ("(5", "5"), ("5.", "5"), ("**4**", "4")],
)
def test_token_variants_merge_into_one_label(token, label):
    assert match_label(token, LIKERT) == label


@pytest.mark.parametrize("token", ["50", "15", "score", "", " ", "\n", "5th"])
def test_tokens_that_are_not_labels(token):
    assert match_label(token, LIKERT) is None


SCALES = [LIKERT, Scale.likert(0, 10), Scale.letters(), Scale(labels=("Yes", "No", "yes!"), values=(1.0, 0.0, 0.5))]
SURFACES = st.sampled_from(["1", "5", "10", "0", "one", "Ten", "A", "e", "yes", "No", "▁3", "Ġfive", "**B**", "(yes)", "x", ""])


@given(st.sampled_from(SCALES), st.one_of(SURFACES, st.text(max_size=6)))
def test_the_label_table_answers_as_the_first_label_with_that_surface_form(scale, token):
    """``match_label`` looks labels up in a table built once per scale; it must answer as scanning the
    scale's labels in order did (the first label whose surface forms hold the token's normalized form)."""
    key = normalize_token(token)
    scanned = next((label for label in scale.labels if key in label_keys(label)), None) if key else None
    assert match_label(token, scale) == scanned


def test_normalize_strips_markers_and_case():
    assert normalize_token("▁Better") == "better"


def test_top_logprobs_merge_variants_and_report_coverage():
    # answer position 1: "Score" then ":" has no label; position 1 holds the score alternatives
    tokens = [
        tok("Score", -0.01, [("Score", 0.99)]),
        tok(" 4", math.log(0.4), [(" 4", 0.4), ("4", 0.1), (" 5", 0.2), ("five", 0.1), (" The", 0.2)]),
    ]
    dist = from_top_logprobs(tokens, LIKERT, coverage_floor=0.5)
    assert dist.method == "logprobs"
    assert dist.coverage == pytest.approx(0.8)
    assert dist.as_dict() == pytest.approx({"1": 0, "2": 0, "3": 0, "4": 0.5 / 0.8, "5": 0.3 / 0.8})
    assert dist.expected == pytest.approx(4 * 0.625 + 5 * 0.375)
    assert not dist.low_coverage


def test_top_logprobs_low_coverage_is_flagged():
    tokens = [tok("The", math.log(0.7), [("The", 0.7), ("3", 0.1)])]
    dist = from_top_logprobs(tokens, LIKERT, coverage_floor=0.5)
    assert dist.low_coverage and dist.coverage == pytest.approx(0.1)
    assert dist.expected == pytest.approx(3.0)


def test_top_logprobs_without_any_label_gives_none():
    assert from_top_logprobs([tok("The", -0.1, [("The", 0.9)])], LIKERT) is None


def test_label_logprobs_sum_surface_variants():
    lp = {"1": math.log(0.05), " 1": math.log(0.05), " 3": math.log(0.3), " 5": math.log(0.1)}
    dist = from_label_logprobs(lp, LIKERT, coverage_floor=0.6)
    assert dist.method == "exact"
    assert dist.coverage == pytest.approx(0.5)
    assert dist.low_coverage
    assert dist.prob("1") == pytest.approx(0.2)
    assert dist.mode == "3"


def test_samples_give_empirical_distribution_and_standard_error():
    labels = ["4", "4", "5", None, "3"]
    dist = from_samples(labels, LIKERT)
    assert dist.n_samples == 5 and dist.n_unparsed == 1
    assert dist.expected == pytest.approx(4.0)
    sd = math.sqrt(((0) ** 2 + 0 + 1 + 1) / 3)
    assert dist.stderr == pytest.approx(sd / 2)
    assert dist.coverage == pytest.approx(0.8)


def test_samples_all_unparsed_give_none():
    assert from_samples([None, None], LIKERT) is None


def test_answer_is_one_hot():
    dist = from_answer("2", LIKERT)
    assert dist.expected == 2.0 and dist.entropy == 0.0 and dist.variance == 0.0
    assert from_answer(None, LIKERT) is None


def test_distribution_statistics():
    dist = from_label_logprobs({"1": math.log(0.5), "5": math.log(0.5)}, LIKERT)
    assert dist.expected == pytest.approx(3.0)
    assert dist.variance == pytest.approx(4.0)
    assert dist.entropy == pytest.approx(math.log(2))
