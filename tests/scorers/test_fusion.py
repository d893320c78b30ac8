"""Fusion-Eval (003): pure-Python ROUGE/chrF on hand-computed strings, assistants, the stored plan and the mean
of k predictions on a scripted judge; then end to end on the embedded model and through the llama.cpp server."""

import math

import pytest

from judgesdk.core.errors import InputError
from judgesdk.core.types import Criterion, JudgeItem
from judgesdk.estimation.estimator import EstimationSettings
from judgesdk.provider.protocol import Capabilities, as_text
from judgesdk.providers.scripted import FULL, ScriptedProvider, ScriptedReply
from judgesdk.scorers import scorer_for
from judgesdk.scorers.common import ScorerOptions
from judgesdk.scorers.fusion import (
    LMProbability,
    NLIEntailment,
    PlanStore,
    chrf,
    plan_store,
    rouge_l,
    rouge_n,
    rouge_tokens,
    score,
)

CRIT = Criterion(name="consistency", description="Only facts supported by the source.")
ITEM = JudgeItem(output="the cat sat", source="The cat sat on the mat.")


# -- lexical assistants, by hand ----------------------------------------------------------------------


def test_rouge_on_hand_computed_strings():
    cand, ref = "The cat sat", "the cat sat on the mat"
    assert rouge_tokens("The Cat, sat!") == ["the", "cat", "sat"]
    # ROUGE-1: 3 matches, P = 3/3, R = 3/6 -> F1 = 2/3
    assert rouge_n(cand, ref, 1) == pytest.approx(2 / 3)
    # ROUGE-2: (the cat), (cat sat) match, P = 2/2, R = 2/5 -> F1 = 4/7
    assert rouge_n(cand, ref, 2) == pytest.approx(4 / 7)
    # ROUGE-L: LCS 3 -> same as ROUGE-1 here; non-contiguous: "a b c d" vs "a x c y d": LCS 3, P 3/4, R 3/5
    assert rouge_l(cand, ref) == pytest.approx(2 / 3)
    assert rouge_l("a b c d", "a x c y d") == pytest.approx(2 * 0.75 * 0.6 / 1.35)
    # clipping: "the the the" vs "the cat": 1 match, P 1/3, R 1/2 -> F1 = 0.4
    assert rouge_n("the the the", "the cat", 1) == pytest.approx(0.4)
    assert rouge_n("", "the cat", 1) == 0.0 and rouge_n("a", "a", 2) == 0.0


def test_chrf_on_hand_computed_strings():
    # "ab" vs "abc": n=1 P 1, R 2/3; n=2 P 1, R 1/2; n>=3 absent in "ab"
    # P = 1, R = 7/12, F2 = 5 * P * R / (4P + R) = 7/11
    assert chrf("ab", "abc") == pytest.approx(7 / 11)
    assert chrf("a b", "ab") == pytest.approx(1.0)  # whitespace is removed
    assert chrf("same text", "same text") == pytest.approx(1.0)
    assert chrf("xyz", "abc") == 0.0 and chrf("", "abc") == 0.0


# -- a scripted Fusion-Eval judge --------------------------------------------------------------------

PLAN = "PLAN: use NLI for consistency, ROUGE for coverage."


SAMPLING_ONLY = Capabilities(seed=True, loglikelihood=True)


def fusion_judge(predictions, *, capabilities=SAMPLING_ONLY):
    """Plans with PLAN; the i-th sampled prediction is predictions[i]; NLI says Yes with 0.8."""

    def rule(request):
        text = as_text(request.messages)
        if "evaluation agent" in text:
            return PLAN
        if "Hypothesis:" in text:
            return "Yes" if request.sample_index % 5 != 4 else "No"  # 4 of 5 samples say Yes
        if request.continuation is not None:
            return ScriptedReply(continuation_logprobs=[-1.0, -2.0, -3.0])
        return predictions[request.sample_index] if request.temperature > 0 else predictions[0]

    return ScriptedProvider(rule, capabilities=capabilities)


async def test_score_is_mean_of_k_predictions_with_assistant_scores_in_the_prompt():
    provider = fusion_judge([" 2", " 3", " 5", " 4"])
    options = ScorerOptions(settings=EstimationSettings(samples=5), extra={"k": 4})
    result = await score(provider, ITEM, CRIT, options)
    assert result.score == pytest.approx((2 + 3 + 5 + 4) / 4)
    assert result.status == "ok" and result.method == "fusion/sampling" and result.distribution.n_samples == 4
    execute = [c for c in provider.calls if dict(c.tags).get("template_id") == "fusion.execute"]
    assert len(execute) == 4 and {c.temperature for c in execute} == {0.5}
    prompt = as_text(execute[0].messages)
    assert prompt.startswith(PLAN) and prompt.endswith("consistency\nScore:")
    assert "ROUGE-1 Score:\n0.6667" in prompt and "NLI Score:\n0.8000" in prompt
    assert f"LM_PROB Score:\n{math.exp(-2):.4f}" in prompt
    assert "assistant ROUGE-2 = 0.5714" in result.notes and "assistant NLI = 0.8000" in result.notes
    assert result.usage.calls == len(provider.calls)


async def test_plan_is_written_once_per_task_and_exportable(tmp_path):
    provider = fusion_judge([" 3"])
    options = ScorerOptions(extra={"k": 1, "assistants": ["ROUGE-1", "CHRF"]})
    for output in ("the cat", "a mat"):
        result = await score(provider, JudgeItem(output=output, source="The cat sat on the mat."), CRIT, options)
        assert result.score == 3.0 and result.method == "fusion/parsed"
    plans = [c for c in provider.calls if dict(c.tags).get("template_id") == "fusion.plan"]
    assert len(plans) == 1
    plan_prompt = as_text(plans[0].messages)
    assert "1. ROUGE-1:" in plan_prompt and "2. CHRF:" in plan_prompt and "consistency (1-5): Only facts" in plan_prompt
    path = tmp_path / "plans.jsonl"
    assert plan_store(options).export_plans(path) == 1
    reviewed = PlanStore()
    reviewed.import_plans(path)
    assert next(iter(reviewed)).text == PLAN
    again = fusion_judge([" 4"])
    await score(again, ITEM, CRIT, ScorerOptions(extra={"k": 1, "assistants": ["ROUGE-1", "CHRF"], "plans": reviewed}))
    assert not any(dict(c.tags).get("template_id") == "fusion.plan" for c in again.calls)


async def test_given_plan_and_custom_assistant():
    class Length:
        name = "LENGTH"
        description = "Number of words of the output."

        async def __call__(self, provider, item):
            return float(len(item.output.split()))

    provider = fusion_judge([" 4"])
    options = ScorerOptions(extra={"k": 1, "plan": "MY PLAN", "assistants": [Length(), "rouge-l"]})
    result = await score(provider, ITEM, CRIT, options)
    prompt = as_text(provider.calls[-1].messages)
    assert prompt.startswith("MY PLAN") and "LENGTH Score:\n3.0000" in prompt and "ROUGE-L Score:" in prompt
    assert result.notes[0] == "plan given in options"


async def test_unavailable_assistant_is_said_not_invented():
    provider = fusion_judge([" 3"], capabilities=Capabilities())
    result = await score(provider, ITEM, CRIT, ScorerOptions(extra={"k": 1, "assistants": ["LM_PROB"]}))
    assert "LM_PROB Score:\nunavailable (scripted/scripted gives no log-likelihood" in as_text(provider.calls[-1].messages)
    assert result.score == 3.0


async def test_lm_probability_and_nli_assistants():
    provider = ScriptedProvider(lambda r: ScriptedReply(continuation_logprobs=[-1.0, -2.0, -3.0]))
    assert await LMProbability(criterion=CRIT)(provider, ITEM) == pytest.approx(math.exp(-2.0))
    assert provider.calls[0].continuation == " the cat sat"
    nli = ScriptedProvider(lambda r: ScriptedReply(label_probs={"Yes": 0.7, "No": 0.3}), capabilities=FULL)
    assert await NLIEntailment(settings=EstimationSettings())(nli, ITEM) == pytest.approx(0.7)
    text = as_text(nli.calls[0].messages)
    assert text.index("Premise") < text.index("The cat sat on the mat.") < text.index("Hypothesis") < text.index("the cat sat")


async def test_unreadable_predictions_are_unparsed():
    provider = fusion_judge([" [Your evaluation]", " great"])
    result = await score(provider, ITEM, CRIT, ScorerOptions(extra={"k": 2, "assistants": ["ROUGE-1"]}))
    assert result.status == "unparsed" and result.score is None


async def test_empty_plan_is_unparsed():
    provider = ScriptedProvider(lambda r: "", capabilities=Capabilities())
    result = await score(provider, ITEM, CRIT, ScorerOptions(extra={"k": 1, "assistants": ["ROUGE-1"]}))
    assert result.status == "unparsed" and result.score is None and "planning failed" in result.error


async def test_bad_input():
    provider = fusion_judge([" 3"])
    with pytest.raises(InputError, match="source"):
        await score(provider, JudgeItem(output="x"), CRIT, ScorerOptions())
    with pytest.raises(InputError, match="assistant"):
        await score(provider, ITEM, CRIT, ScorerOptions(extra={"assistants": ["BLEURT"]}))
    with pytest.raises(InputError, match="k"):
        await score(provider, ITEM, CRIT, ScorerOptions(extra={"k": 0}))


def test_registry_finds_the_scorer():
    assert scorer_for("fusion") is score


# -- end to end on the embedded model -------------------------------------------------------------

TINY = JudgeItem(output="Tom fed the cat.", source="Tom fed the cat at noon.")
SMALL = {"k": 2, "plan_max_tokens": 8, "assistants": ["ROUGE-1", "LM_PROB", "NLI"]}


def check(result):
    assert result.status in ("ok", "low_coverage", "unparsed")
    assert (result.score is None) == (result.status == "unparsed")
    assert any(n.startswith("assistant ROUGE-1 = ") for n in result.notes)
    if result.score is not None:
        assert 1 <= result.score <= 5


@pytest.mark.integration
async def test_local_fusion_end_to_end(local):
    options = ScorerOptions(settings=EstimationSettings(max_tokens=2), extra=dict(SMALL))  # " 3" needs two tokens
    result = await score(local, TINY, CRIT, options)
    check(result)
    assert result.provider == "local"
    assert any(n.startswith("assistant LM_PROB = ") for n in result.notes)  # exact log-likelihood in-process


@pytest.mark.integration
async def test_server_fusion_through_openai_completions(llama_server):
    from judgesdk.providers.openai import OpenAIProvider

    provider = OpenAIProvider(model=llama_server.model, base_url=llama_server.base_url, api="completions")
    # LM_PROB through echo and NLI through logprobs are slow on this server (full-vocabulary logprobs per
    # position); they run in-process above. Here: plan, lexical assistant and k sampled predictions.
    settings = EstimationSettings(max_tokens=2, on_low_coverage="flag")
    options = ScorerOptions(settings=settings, extra={"k": 2, "plan_max_tokens": 4, "assistants": ["ROUGE-1"]})
    result = await score(provider, TINY, CRIT, options)
    check(result)
    assert result.provider == "openai" and result.method == "fusion/sampling"
