"""Reason-then-score and multiple-choice (001 §3.1): scripted arithmetic and parsing, then end to end."""

from __future__ import annotations

import pytest

from judgesdk.core.errors import InputError
from judgesdk.core.types import Criterion, JudgeItem, Scale
from judgesdk.estimation.estimator import EstimationSettings
from judgesdk.judging.judge import Judge
from judgesdk.prompting.presets import criterion as preset
from judgesdk.prompting.templates import parse_template
from judgesdk.provider.protocol import Capabilities, as_text
from judgesdk.providers.scripted import ScriptedProvider, ScriptedReply
from judgesdk.scorers import scorer_for
from judgesdk.scorers.common import ScorerOptions
from judgesdk.scorers.rts_mcq import PAPER_CRITERIA, score

ITEM = JudgeItem(output="Floods closed the road.", source="Heavy rain flooded the road on Tuesday.", id="d1-M8")
COHERENCE = preset("summeval", "coherence")
LETTERS = {"A": 0.1, "B": 0.2, "C": 0.3, "D": 0.2, "E": 0.2}
OPTS = ScorerOptions()


# -- RTS -----------------------------------------------------------------------------------------


async def test_rts_parses_the_final_score_and_keeps_the_reason():
    answer = "The summary flows well but misses one detail, not a 2. Final score: 4"
    provider = ScriptedProvider([answer])
    result = await score(provider, ITEM, COHERENCE, OPTS, "rts")
    assert result.status == "ok" and result.score == 4.0
    assert result.rationale == answer and result.raw == [answer]
    assert result.method == "rts/parsed" and result.distribution is None and result.item_id == "d1-M8"
    request = provider.calls[0]
    assert request.max_tokens == 256 and request.temperature == 0.0
    assert ("template_id", "rts.coherence") in request.tags
    assert as_text(request.messages).endswith("Provide your reason in one sentence, then give a final score:")


async def test_rts_keeps_decimal_scores():
    provider = ScriptedProvider(["Some repetition, resulting in a score of 2.5 out of 5."])
    assert (await score(provider, ITEM, COHERENCE, OPTS, "rts")).score == 2.5


@pytest.mark.parametrize("answer", ["", "Summary: the road was closed by floods", "I would give it 8/10."])
async def test_rts_without_a_readable_score_is_unparsed_never_a_number(answer):
    result = await score(ScriptedProvider([answer]), ITEM, COHERENCE, OPTS, "rts")
    assert result.status == "unparsed" and result.score is None
    assert "parsed from the free-text answer" in result.method_reason


async def test_rts_max_tokens_from_options():
    provider = ScriptedProvider(["Score: 3"])
    await score(provider, ITEM, COHERENCE, ScorerOptions(extra={"max_tokens": 32}), "rts")
    assert provider.calls[0].max_tokens == 32


# -- MCQ -----------------------------------------------------------------------------------------


async def test_mcq_exact_letter_probabilities_give_the_expected_value():
    provider = ScriptedProvider(lambda r: ScriptedReply(label_probs=LETTERS))
    result = await score(provider, ITEM, COHERENCE, OPTS, "mcq")
    assert result.score == pytest.approx(1 * 0.1 + 2 * 0.2 + 3 * 0.3 + 4 * 0.2 + 5 * 0.2)  # 3.2
    assert result.method == "mcq/exact" and result.status == "ok"
    assert result.distribution.scale.labels == ("A", "B", "C", "D", "E")
    assert result.distribution.as_dict() == pytest.approx(LETTERS)
    assert provider.calls[0].labels == ("A", " A", "B", " B", "C", " C", "D", " D", "E", " E")
    assert as_text(provider.calls[0].messages).endswith(
        "E: The Summary is completely coherent. Score: Five.\nYour Answer (enter 1 letter from A to E):"
    )


async def test_mcq_top_logprobs_on_an_api_provider():
    caps = Capabilities(logprobs=True, max_top_logprobs=5)
    result = await score(
        ScriptedProvider(lambda r: ScriptedReply(label_probs=LETTERS), capabilities=caps), ITEM, COHERENCE, OPTS, "mcq"
    )
    assert result.method == "mcq/logprobs" and result.score == pytest.approx(3.2)


async def test_mcq_without_probabilities_uses_the_greedy_letter_not_sampling():
    provider = ScriptedProvider(["D: The Summary is mostly coherent."], capabilities=Capabilities())
    result = await score(provider, ITEM, COHERENCE, OPTS, "mcq")
    assert result.method == "mcq/parsed" and result.score == 4.0 and len(provider.calls) == 1
    assert provider.calls[0].temperature == 0.0


async def test_mcq_explicit_sampling_is_respected():
    provider = ScriptedProvider(
        lambda r: ScriptedReply(label_probs={"B": 0.5, "D": 0.5}), capabilities=Capabilities(multiple_samples=True)
    )
    options = ScorerOptions(settings=EstimationSettings(method="sampling", samples=10))
    result = await score(provider, ITEM, COHERENCE, options, "mcq")
    assert result.method == "mcq/sampling" and 2.0 <= result.score <= 4.0


async def test_mcq_unreadable_answer_is_unparsed():
    result = await score(
        ScriptedProvider(["I am not sure."], capabilities=Capabilities()), ITEM, COHERENCE, OPTS, "mcq"
    )
    assert result.status == "unparsed" and result.score is None


# -- templates and inputs -------------------------------------------------------------------------


@pytest.mark.parametrize("name", PAPER_CRITERIA)
async def test_every_summeval_criterion_has_both_prompts(name):
    provider = ScriptedProvider(lambda r: ScriptedReply(text="Score: 3", label_probs={"C": 1.0}))
    crit = Criterion(name=name.capitalize())
    for method in ("rts", "mcq"):
        result = await score(provider, ITEM, crit, OPTS, method)
        assert result.score == 3.0
    assert [dict(c.tags)["template_id"] for c in provider.calls] == [f"rts.{name}", f"mcq.{name}"]


async def test_other_methods_are_refused():
    with pytest.raises(InputError, match="'rts' and 'mcq'"):
        await score(ScriptedProvider(["3"]), ITEM, COHERENCE, OPTS, "geval")


async def test_unknown_criterion_names_the_available_ones():
    with pytest.raises(InputError, match="coherence, consistency, fluency, relevance"):
        await score(ScriptedProvider(["3"]), ITEM, Criterion(name="engagingness"), OPTS, "rts")


async def test_paper_prompts_need_a_one_to_five_scale():
    crit = Criterion(name="coherence", scale=Scale.likert(1, 3))
    with pytest.raises(InputError, match="one to five"):
        await score(ScriptedProvider(["3"]), ITEM, crit, OPTS, "mcq")


async def test_custom_template_for_any_criterion_and_scale():
    template = parse_template(
        b'id = "my.mcq"\nversion = "1"\nuser = "Rate {{output}}: A bad, B ok, C good."\nanswer_prefix = "Answer:"'
    )
    crit = Criterion(name="engagingness", scale=Scale.likert(1, 3))
    provider = ScriptedProvider(lambda r: ScriptedReply(label_probs={"A": 0.5, "C": 0.5}))
    result = await score(provider, ITEM, crit, ScorerOptions(template=template), "mcq")
    assert result.score == pytest.approx(2.0) and result.distribution.scale.labels == ("A", "B", "C")


def test_registry_and_judge_dispatch_both_methods():
    assert scorer_for("rts") is score and scorer_for("mcq") is score
    provider = ScriptedProvider(lambda r: ScriptedReply(text="Reason. Score: 5", label_probs={"E": 1.0}))
    with Judge(provider) as judge:
        rts = judge.score(ITEM.output, source=ITEM.source, criterion=COHERENCE, method="rts")
        mcq = judge.score(ITEM.output, source=ITEM.source, criterion=COHERENCE, method="mcq")
    assert (rts.score, mcq.score) == (5.0, 5.0)


# -- integration ---------------------------------------------------------------------------------

ARTICLE = (
    "Heavy rain flooded the main road into the village of Alder on Tuesday. The fire service pumped "
    "water from twelve houses and the road reopened in the evening. No one was hurt."
)
SUMMARY = "Floods closed the road into Alder on Tuesday; twelve houses were pumped out and no one was hurt."


@pytest.mark.integration
async def test_local_rts_gives_a_score_or_unparsed_with_its_text(local):
    item = JudgeItem(output=SUMMARY, source=ARTICLE)
    result = await score(local, item, COHERENCE, ScorerOptions(extra={"max_tokens": 48}), "rts")
    assert result.provider == "local" and result.method == "rts/parsed" and result.raw
    # The 270M base model often writes no score: then the status says so and there is no number.
    assert (result.status, result.score is None) in {("ok", False), ("unparsed", True)}
    if result.status == "ok":
        assert 1 <= result.score <= 5


@pytest.mark.integration
async def test_local_mcq_reads_exact_letter_probabilities(local):
    result = await score(local, JudgeItem(output=SUMMARY, source=ARTICLE), COHERENCE, OPTS, "mcq")
    assert result.method == "mcq/exact" and result.status in {"ok", "low_coverage"}
    assert 1.0 <= result.score <= 5.0 and sum(result.distribution.probs) == pytest.approx(1.0)
    assert 0.0 < result.distribution.coverage <= 1.0


TINY_MCQ = b'id = "test.mcq"\nversion = "1"\nuser = "{{output}}\\nA bad B poor C fair D good E great"\nanswer_prefix = "Answer:"'
TINY_RTS = b'id = "test.rts"\nversion = "1"\nuser = "Rate 1-5 with a reason: {{output}}"'


@pytest.mark.integration
async def test_llama_server_rts_and_mcq(llama_server):
    """Both methods through the OpenAI-compatible provider. The server's logprobs cost ~1 s per token
    on 2 CPU threads (a full-vocabulary sort), so prompts are tiny and the MCQ answer is one token."""
    from judgesdk.providers.openai import OpenAIProvider, default_capabilities

    provider = OpenAIProvider(
        model=llama_server.model,
        base_url=llama_server.base_url,
        api="completions",
        capabilities=default_capabilities("completions"),
    )
    item = JudgeItem(output="Rain closed the road.")
    try:
        mcq = await score(
            provider,
            item,
            COHERENCE,
            ScorerOptions(template=parse_template(TINY_MCQ), settings=EstimationSettings(max_tokens=1)),
            "mcq",
        )
        rts = await score(
            provider, item, COHERENCE, ScorerOptions(template=parse_template(TINY_RTS), extra={"max_tokens": 16}), "rts"
        )
    finally:
        await provider.aclose()
    assert mcq.provider == "openai" and mcq.method.startswith("mcq/")
    assert (mcq.status == "unparsed") == (mcq.score is None)
    assert rts.method == "rts/parsed" and rts.status in {"ok", "unparsed"} and rts.raw
