"""002's direct-scoring variants: fine/coarse-grained, demonstrations, rationale generation."""

from __future__ import annotations

import pytest

from judgesdk.core.errors import InputError
from judgesdk.core.types import Criterion, JudgeItem, Scale
from judgesdk.estimation.estimator import EstimationSettings
from judgesdk.prompting.templates import load_template
from judgesdk.provider.protocol import Capabilities, GenerateRequest, as_text
from judgesdk.providers.scripted import ScriptedProvider, ScriptedReply
from judgesdk.scorers.common import ScorerOptions
from judgesdk.scorers.multi import (
    Demonstration,
    bind,
    demonstration_template,
    format_criteria,
    format_demonstration,
    pick_demonstration,
    score_coarse_grained,
    score_fine_grained,
    score_with_rationale,
)

ITEM = JudgeItem(output="Floods closed the road.", source="Heavy rain flooded the road on Tuesday.", id="i1")
COH = Criterion(name="coherence", description="Well-structured and well-organized.")
FLU = Criterion(name="fluency", description="Quality of individual sentences.")
REL = Criterion(name="relevance", description="Selection of important content.")
PROBS = {"coherence": {"4": 1.0}, "fluency": {"2": 0.5, "4": 0.5}, "relevance": {"5": 0.8, "1": 0.2}}


def per_criterion(request: GenerateRequest) -> ScriptedReply:
    """Each criterion's prompt gets its own label distribution (keyed by the criterion's name)."""
    prompt = as_text(request.messages)
    name = next(n for n in PROBS if f"by its {n}" in prompt or f"{n} - " in prompt)
    return ScriptedReply(label_probs=PROBS[name])


# -- fine-grained --------------------------------------------------------------------------------


async def test_fine_grained_averages_the_per_criterion_scores_and_keeps_them():
    options = ScorerOptions(template=load_template("direct.human_guideline"))
    result = await score_fine_grained(ScriptedProvider(per_criterion), ITEM, [COH, FLU, REL], options, "geval")
    expected = {"coherence": 4.0, "fluency": 3.0, "relevance": 4.2}
    assert result.parts is not None and result.status == "ok"
    assert {k: r.score for k, r in result.parts.items()} == pytest.approx(expected)
    assert result.score == pytest.approx(sum(expected.values()) / 3)
    assert result.method == "geval/fine-grained" and result.criterion == "coherence+fluency+relevance"
    assert result.usage.calls == 3 and result.item_id == "i1"
    assert any(n.startswith("fluency: 3.0") for n in result.notes)


async def test_fine_grained_with_model_guideline_template():
    options = ScorerOptions(template=load_template("direct.model_guideline"))
    provider = ScriptedProvider(per_criterion)
    result = await score_fine_grained(provider, ITEM, [COH, FLU], options, "geval")
    assert result.score == pytest.approx(3.5)
    assert as_text(provider.calls[0].messages).endswith("- coherence:")


async def test_fine_grained_part_without_score_gives_no_mean():
    provider = ScriptedProvider(
        lambda r: "4" if "coherence" in as_text(r.messages) else "no idea", capabilities=Capabilities()
    )
    result = await score_fine_grained(provider, ITEM, [COH, FLU], ScorerOptions(), "direct")
    assert result.status == "unparsed" and result.score is None
    assert result.parts["coherence"].score == 4.0 and result.parts["fluency"].status == "unparsed"


async def test_criteria_on_different_scales_are_refused():
    other = Criterion(name="groundedness", scale=Scale.likert(0, 1))
    with pytest.raises(InputError, match="need one scale"):
        await score_fine_grained(ScriptedProvider(per_criterion), ITEM, [COH, other], ScorerOptions(), "geval")
    with pytest.raises(InputError, match="at least one criterion"):
        await score_fine_grained(ScriptedProvider(per_criterion), ITEM, [], ScorerOptions(), "geval")


# -- coarse-grained ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("guideline", "line", "prefix"),
    [("human", "Coherence: Well-structured", "\nScore:"), ("model", "Coherence - Well-structured", "\n- Overall:")],
)
async def test_coarse_grained_is_one_holistic_call(guideline, line, prefix):
    provider = ScriptedProvider(lambda r: ScriptedReply(label_probs={"3": 0.5, "5": 0.5}))
    result = await score_coarse_grained(provider, ITEM, [COH, FLU, REL], ScorerOptions(), "geval", guideline=guideline)
    assert len(provider.calls) == 1 and result.score == pytest.approx(4.0)
    assert result.criterion == "overall" and result.method == "geval/exact/coarse-grained"
    prompt = as_text(provider.calls[0].messages)
    assert line in prompt and "Fluency" in prompt and "Relevance" in prompt and prompt.endswith(prefix)
    assert dict(provider.calls[0].tags)["template_id"] == f"direct.{guideline}_guideline.coarse"


def test_format_criteria():
    assert (
        format_criteria([COH, FLU], "human")
        == "Coherence: Well-structured and well-organized.\nFluency: Quality of individual sentences."
    )
    assert format_criteria([COH], "model") == "Coherence - Well-structured and well-organized."


# -- demonstrations ------------------------------------------------------------------------------

POOL = [
    Demonstration(source="S1", output="O1", score=3.0),
    Demonstration(source="S2", output="O2", score=1.0, rationale="It repeats itself."),
    Demonstration(source="S3", output="O3", score=5.0),
    Demonstration(source="S4", output="O4", score=1.0),
]


def test_pick_worst_and_best():
    assert pick_demonstration(POOL, "worst").output == "O2"  # first of the ties
    assert pick_demonstration(POOL, "best").output == "O3"
    with pytest.raises(InputError):
        pick_demonstration([], "best")


def test_demonstration_layouts_follow_the_templates():
    assert format_demonstration(POOL[2], COH) == "Source text: S3\n\nSummary: O3\n\nScore: 5"
    assert (
        format_demonstration(POOL[1], COH)
        == "Source text: S2\n\nSummary: O2\n\nScore: 1\n\nRationale: It repeats itself."
    )
    assert format_demonstration(POOL[2], COH, "model") == "Source Text:\n\nS3\n\nSummary:\n\nO3\n\n- coherence: 5"


@pytest.mark.parametrize("guideline", ["human", "model", "rationale"])
async def test_demonstration_template_goes_through_the_likert_path(guideline):
    template = demonstration_template([pick_demonstration(POOL, "worst")], COH, guideline)
    assert (
        "demonstrations" not in template.variables and template.content_hash != load_template(template.id).content_hash
    )
    provider = ScriptedProvider(lambda r: ScriptedReply(label_probs={"2": 1.0}))
    from judgesdk.scorers.likert import score

    result = await score(provider, ITEM, COH, ScorerOptions(template=template), "geval")
    prompt = as_text(provider.calls[0].messages)
    assert result.score == 2.0 and "S2" in prompt and "Rationale: It repeats itself." in prompt
    assert prompt.index("S2") < prompt.index(ITEM.source)  # demonstration in the shared prefix, before the item


def test_bind_fills_only_the_named_placeholders():
    template = bind(load_template("direct.human_guideline.demo"), demonstrations="EXAMPLE")
    assert template.variables == {"criterion", "definition", "output", "scale_high", "scale_low", "source"}
    assert "EXAMPLE" in template.user
    with pytest.raises(InputError, match="placeholder"):
        bind(template, criterion="{{source}}")


# -- rationale generation ------------------------------------------------------------------------


async def test_rationale_generation_returns_score_and_explanation():
    reply = ScriptedReply(text=" 4\nRationale: captures the key event.", label_probs={"4": 0.5, "5": 0.5})
    provider = ScriptedProvider(lambda r: reply)
    result = await score_with_rationale(provider, ITEM, COH, ScorerOptions(), "geval")
    assert result.score == pytest.approx(4.5) and result.status == "ok"
    assert result.rationale == "4\nRationale: captures the key event." and result.method == "geval/exact/rationale"
    assert result.usage.calls == 2
    score_call, text_call = provider.calls
    assert score_call.labels is not None and text_call.max_tokens == 256 and text_call.temperature == 0.0
    assert score_call.messages == text_call.messages and as_text(text_call.messages).endswith("\nScore:")


async def test_rationale_with_direct_aggregation():
    provider = ScriptedProvider(["3", "3. The summary is fine."], capabilities=Capabilities())
    result = await score_with_rationale(provider, ITEM, COH, ScorerOptions(extra={"max_tokens": 40}), "direct")
    assert result.score == 3.0 and result.rationale == "3. The summary is fine." and provider.calls[1].max_tokens == 40


# -- integration ---------------------------------------------------------------------------------

ARTICLE = "Heavy rain flooded the main road into the village of Alder on Tuesday. No one was hurt."
SUMMARY = "Floods closed the road into Alder on Tuesday; no one was hurt."


@pytest.mark.integration
async def test_local_fine_coarse_demo_and_rationale(local):
    item = JudgeItem(output=SUMMARY, source=ARTICLE)
    fine = await score_fine_grained(
        local, item, [COH, FLU], ScorerOptions(template=load_template("direct.human_guideline")), "geval"
    )
    coarse = await score_coarse_grained(local, item, [COH, FLU], ScorerOptions(), "geval", guideline="model")
    demo = demonstration_template([Demonstration(source=ARTICLE, output="Rain.", score=1)], COH, "rationale")
    explained = await score_with_rationale(
        local, item, COH, ScorerOptions(template=demo, extra={"max_tokens": 24}), "geval"
    )
    for result in (fine, coarse, explained):
        assert result.provider == "local" and result.status in {"ok", "low_coverage"} and 1 <= result.score <= 5
    assert set(fine.parts) == {"coherence", "fluency"} and explained.raw[-1] is not None


@pytest.mark.integration
async def test_llama_server_fine_and_coarse(llama_server):
    """Through the OpenAI-compatible provider, Direct aggregation (greedy text: the server's logprobs
    cost ~1 s per token on 2 CPU threads)."""
    from judgesdk.providers.openai import OpenAIProvider

    caps = Capabilities(multiple_samples=True, seed=True)
    provider = OpenAIProvider(
        model=llama_server.model, base_url=llama_server.base_url, api="completions", capabilities=caps
    )
    item = JudgeItem(output=SUMMARY, source=ARTICLE)
    options = ScorerOptions(settings=EstimationSettings(max_tokens=2))
    try:
        fine = await score_fine_grained(provider, item, [COH, FLU], options, "direct")
        coarse = await score_coarse_grained(provider, item, [COH, FLU], options, "direct")
    finally:
        await provider.aclose()
    assert fine.provider == coarse.provider == "openai" and set(fine.parts) == {"coherence", "fluency"}
    for result in (fine, coarse):
        assert (result.score is None) == (result.status == "unparsed")


# -- shared criteria: one prompt prefix for every criterion of an output ---------------------------


def by_answer_prefix(request: GenerateRequest) -> ScriptedReply:
    """The judged criterion is named only at the very end (the answer prefix)."""
    last_line = as_text(request.messages).rstrip().splitlines()[-1]
    name = next(n for n in PROBS if f"- {n} (" in last_line)
    return ScriptedReply(label_probs=PROBS[name])


async def test_shared_criteria_prompts_differ_only_in_the_answer_prefix():
    provider = ScriptedProvider(by_answer_prefix)
    options = ScorerOptions(template=load_template("direct.likert.shared_criteria"))
    result = await score_fine_grained(provider, ITEM, [COH, FLU, REL], options, "geval")
    assert {k: r.score for k, r in result.parts.items()} == pytest.approx({"coherence": 4.0, "fluency": 3.0, "relevance": 4.2})
    prompts = [as_text(c.messages) for c in provider.calls]
    heads = {p.rsplit("\n", 1)[0] for p in prompts}
    assert len(heads) == 1  # everything before the answer prefix is shared
    head = heads.pop()
    assert "Coherence - Well-structured" in head and "Relevance - Selection" in head and ITEM.output in head
    assert sorted(p.rsplit("\n", 1)[1] for p in prompts) == ["- coherence (1-5):", "- fluency (1-5):", "- relevance (1-5):"]


def test_a_judge_scores_several_criteria_as_fine_grained():
    from judgesdk.judging.judge import Judge

    judge = Judge(ScriptedProvider(by_answer_prefix), template="direct.likert.shared_criteria")
    result = judge.score(ITEM.output, source=ITEM.source, criterion=[COH, FLU, REL])
    many = judge.score_many([ITEM, ITEM], criterion=[COH, FLU])
    single = judge.score_many([ITEM], criterion=[COH])
    judge.close()
    assert result.method == "geval/fine-grained" and result.score == pytest.approx((4.0 + 3.0 + 4.2) / 3)
    assert [r.score for r in many] == pytest.approx([3.5, 3.5]) and set(many[0].parts) == {"coherence", "fluency"}
    assert single[0].parts is None and single[0].score == pytest.approx(4.0)  # one criterion: the plain result
    with pytest.raises(InputError, match="at least one criterion"):
        Judge(ScriptedProvider(by_answer_prefix)).score("x", criterion=[])


@pytest.mark.integration
async def test_local_model_evaluates_a_shared_criteria_prompt_once_per_output(gguf_path):
    """Counters, not timings: after the first criterion, each further one decodes only its answer prefix."""
    from judgesdk.providers.llamacpp import LlamaCppProvider

    provider = LlamaCppProvider(gguf_path, n_ctx=2048)
    options = ScorerOptions(template=load_template("direct.likert.shared_criteria"))
    item = JudgeItem(output=SUMMARY, source=ARTICLE)
    try:
        fine = await score_fine_grained(provider, item, [COH, FLU, REL], options, "geval")
    finally:
        await provider.aclose()
    counters = provider.counters
    assert fine.status in {"ok", "low_coverage"} and set(fine.parts) == {"coherence", "fluency", "relevance"}
    assert counters.requests == 3
    one_prompt = counters.prompt_tokens / 3
    # the whole prompt once, then two answer prefixes (about 10 tokens each, label paths included)
    assert counters.tokens_evaluated < one_prompt + 2 * 30, counters
    assert counters.tokens_reused > 2 * (one_prompt - 30), counters
