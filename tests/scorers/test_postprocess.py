"""002 §4.4 Filtering and Binning over lists of results."""

from __future__ import annotations

import pytest

from judgesdk.core.errors import InputError
from judgesdk.core.types import JudgeItem, JudgeResult, Scale
from judgesdk.estimation.estimator import EstimationSettings
from judgesdk.provider.protocol import Capabilities, GenerateRequest, as_text
from judgesdk.providers.scripted import ScriptedProvider, ScriptedReply
from judgesdk.scorers.postprocess import bin_map, bin_scores, filter_redundant, is_redundant

LIKERT = Scale.likert(1, 5)
REPEATS = "A family of four members, including a first member, a second member, a third member."
CLEAN = "Floods closed the road into Alder on Tuesday."


def result(score: float | None, status: str = "ok") -> JudgeResult:
    return JudgeResult(score=score, status=status, criterion="relevance", method="direct/parsed")


def redundancy_judge(request: GenerateRequest) -> ScriptedReply:
    redundant = REPEATS in as_text(request.messages)
    return ScriptedReply(label_probs={"Yes": 0.9, "No": 0.1} if redundant else {"Yes": 0.2, "No": 0.8})


# -- Filtering -----------------------------------------------------------------------------------


async def test_redundant_outputs_get_the_scale_minimum():
    items = [JudgeItem(output=REPEATS), JudgeItem(output=CLEAN)]
    provider = ScriptedProvider(redundancy_judge)
    filtered = await filter_redundant(provider, items, [result(4.0), result(3.5)], LIKERT)
    assert [r.score for r in filtered] == [1.0, 3.5]
    assert "redundant, score 4.0 -> 1" in filtered[0].notes[-1] and "P(Yes)=0.900" in filtered[0].notes[-1]
    assert "P(Yes)=0.200" in filtered[1].notes[-1]
    prompt = as_text(provider.calls[0].messages)
    assert prompt.endswith("\nAnswer:") and provider.calls[0].labels == ("Yes", " Yes", "No", " No")


async def test_filter_decides_the_score_of_an_unparsed_result():
    filtered = await filter_redundant(
        ScriptedProvider(redundancy_judge),
        [JudgeItem(output=REPEATS)],
        [result(None, "unparsed")],
        Scale.likert(0, 100),
    )
    assert filtered[0].score == 0.0 and filtered[0].status == "ok"


async def test_inputs_are_not_changed():
    original = [result(4.0)]
    await filter_redundant(ScriptedProvider(redundancy_judge), [JudgeItem(output=REPEATS)], original, LIKERT)
    assert original[0].score == 4.0 and original[0].notes == []


async def test_text_only_provider_reads_the_greedy_answer():
    provider = ScriptedProvider(["Yes. The summary repeats 'member'.", "Maybe"], capabilities=Capabilities())
    items = [JudgeItem(output=REPEATS), JudgeItem(output=CLEAN)]
    filtered = await filter_redundant(provider, items, [result(4.0), result(3.0)], LIKERT)
    assert filtered[0].score == 1.0
    assert filtered[1].score == 3.0 and "unreadable" in filtered[1].notes[-1]  # an unclear check keeps the score
    assert all(c.temperature == 0.0 for c in provider.calls)


async def test_threshold():
    redundant, note = await is_redundant(ScriptedProvider(redundancy_judge), JudgeItem(output=CLEAN), threshold=0.1)
    assert redundant is True and "P(Yes)=0.200" in note


async def test_one_item_per_result():
    with pytest.raises(InputError, match="one item per result"):
        await filter_redundant(ScriptedProvider(redundancy_judge), [JudgeItem(output=CLEAN)], [], LIKERT)


# -- Binning -------------------------------------------------------------------------------------


def test_binning_rule_anchored_at_each_bins_first_score():
    scores = [1.0, 1.01, 1.33, 3.0, 3.04, 3.09, 3.04]
    # bins: {1.0, 1.01} {1.33} {3.0, 3.04, 3.04} {3.09}: 3.09 is 0.09 above its bin's first score 3.0
    assert bin_map(scores, 0.05) == pytest.approx(
        {1.0: 1.005, 1.01: 1.005, 1.33: 1.33, 3.0: (3.0 + 3.04 + 3.04) / 3, 3.04: (3.0 + 3.04 + 3.04) / 3, 3.09: 3.09}
    )


def test_bin_scores_keeps_order_and_unscored_results():
    results = [result(s) for s in (3.04, 1.0, 3.0, 1.01, 3.09)] + [result(None, "unparsed")]
    binned = bin_scores(results, width=0.05)
    scores = [r.score for r in binned]
    assert scores[:5] == pytest.approx([3.02, 1.005, 3.02, 1.005, 3.09])
    assert binned[5] is results[5]
    assert len(set(scores[:5])) == 3  # five distinct scores -> three
    originals = [r.score for r in results[:5]]
    for i in range(5):
        for j in range(5):
            if originals[i] < originals[j]:
                assert scores[i] <= scores[j]  # ties may appear, order never reverses
    assert binned[4] is results[4] and "binned: 3.04 -> 3.02" in binned[0].notes[0]


def test_binning_width_must_be_positive():
    with pytest.raises(InputError, match="positive"):
        bin_scores([result(1.0)], width=0)


# -- integration ---------------------------------------------------------------------------------


@pytest.mark.integration
async def test_local_filtering_reads_yes_no_probabilities(local):
    items = [JudgeItem(output=REPEATS), JudgeItem(output=CLEAN)]
    filtered = await filter_redundant(local, items, [result(4.0), result(3.0)], LIKERT)
    for before, after in zip((4.0, 3.0), filtered):
        assert after.score in {before, 1.0} and "redundancy check (exact): P(Yes)=" in after.notes[-1]


@pytest.mark.integration
async def test_llama_server_filtering(llama_server):
    from judgesdk.providers.openai import OpenAIProvider

    provider = OpenAIProvider(
        model=llama_server.model,
        base_url=llama_server.base_url,
        api="completions",
        capabilities=Capabilities(seed=True),
    )
    try:
        filtered = await filter_redundant(
            provider, [JudgeItem(output=REPEATS)], [result(4.0)], LIKERT, settings=EstimationSettings(max_tokens=2)
        )
    finally:
        await provider.aclose()
    assert filtered[0].score in {4.0, 1.0} and "redundancy check (parsed)" in filtered[0].notes[-1]
