"""Grammar-constrained answers (issue 11 item 5): grammars built from the scale, sent only to providers that
declare the capability, one repair of an answer that still does not parse, and ``unparsed`` (never a
number) when the repair fails too. Scripted providers for the logic; the embedded model at the end."""

from __future__ import annotations

import pytest

from judgesdk.core.errors import InputError
from judgesdk.core.types import Criterion, JudgeItem, Scale
from judgesdk.estimation.estimator import EstimationSettings
from judgesdk.estimation.grammars import (
    RTS_CLOSING,
    answer_format,
    format_for,
    literal,
    repair_request,
    rts_grammar,
    score_grammar,
)
from judgesdk.estimation.parsing import parse_score
from judgesdk.prompting.presets import criterion as preset
from judgesdk.provider.protocol import GenerateRequest, Message, as_text
from judgesdk.providers.scripted import FULL, ScriptedProvider
from judgesdk.scorers import fusion, likert, rts_mcq
from judgesdk.scorers.common import ScorerOptions
from judgesdk.scorers.method_options import check_method_options

GRAMMAR = FULL.model_copy(update={"grammar": True})
ITEM = JudgeItem(output="Floods closed the road.", source="Heavy rain flooded the road on Tuesday.", id="d1-M8")
COHERENCE = preset("summeval", "coherence")
LIKERT = Scale.likert(1, 5)
DIRECT = ScorerOptions(settings=EstimationSettings(method="parsed"))


# -- grammars built from the scale -----------------------------------------------------------------


def test_score_grammar_lists_every_label_longest_first_and_escapes_them():
    assert score_grammar(LIKERT) == 'root ::= " "? score\nscore ::= ("1" | "2" | "3" | "4" | "5")\n'
    ten = score_grammar(Scale.likert(1, 10))
    assert '("10" | "1" | "2"' in ten and '"9")' in ten  # every label, "10" whose prefix "1" is a label too
    words = Scale(labels=('Say "yes"', "No\\way"), values=(1.0, 0.0))
    assert '"Say \\"yes\\""' in score_grammar(words) and '"No\\\\way"' in score_grammar(words)
    assert literal("a\nb\t") == '"a\\nb\\t"'


@pytest.mark.parametrize("max_tokens", [24, 96, 256])
def test_rts_reasoning_leaves_room_for_the_score_line_within_max_tokens(max_tokens):
    grammar = rts_grammar(LIKERT, max_tokens)
    room = int(grammar.split("{1,")[1].split("}")[0])
    longest = " " + "x" * room + "." + RTS_CLOSING + " 5"  # one character per token is the worst case for ASCII
    assert len(longest) <= max_tokens
    assert '"\\nFinal score: " score' in grammar and "[^\\n.!?]" in grammar


def test_rts_without_room_for_reasoning_asks_for_the_score_line_only():
    assert rts_grammar(LIKERT, 10) == 'root ::= "Final score: " score\nscore ::= ("1" | "2" | "3" | "4" | "5")\n'


@pytest.mark.parametrize("scale", [LIKERT, Scale.likert(0, 10), Scale.letters((1.0, 2.0, 3.0, 4.0, 5.0)),
                                   Scale(labels=("Yes", "No"), values=(1.0, 0.0))])  # fmt: skip
def test_every_answer_the_formats_allow_parses_to_its_label(scale):
    """What the grammars admit is what the parser reads: the bare label after a prefix, a reasoning
    sentence (numbers and all) followed by the final score line, and a repaired answer."""
    rts, direct = answer_format("rts", scale, max_tokens=96), answer_format("direct", scale)
    assert literal(rts.closing + " ") + " score" in rts.grammar  # the line the grammar writes is the repair's
    for label in scale.labels:
        texts = [label, " " + label, " The summary is a 2 out of 5 at first, then it flows!" + rts.closing + " " + label]
        texts += [" It is" + fmt.closing + " " + label for fmt in (rts, direct)]  # repaired: prefilled line, then the label
        for text in texts:
            parsed = parse_score(text, scale)
            assert parsed.ok and parsed.label == label, (text, parsed)


def test_format_is_given_only_when_the_provider_honours_grammars_and_the_option_allows():
    assert format_for("direct", ScriptedProvider([]), LIKERT, {}) is None  # FULL declares no grammar
    with_grammar = ScriptedProvider([], capabilities=GRAMMAR)
    assert format_for("direct", with_grammar, LIKERT, {}) == answer_format("direct", LIKERT)
    assert format_for("rts", with_grammar, LIKERT, {"grammar": False}) is None
    with pytest.raises(InputError, match="true or false"):
        format_for("rts", with_grammar, LIKERT, {"grammar": "yes"})
    with pytest.raises(InputError, match="no answer format"):
        answer_format("mcq", LIKERT)  # type: ignore[arg-type]
    check_method_options({"grammar": False}, "fusion")
    with pytest.raises(InputError, match="true or false"):
        check_method_options({"grammar": 1}, "direct")


def test_the_repair_prefills_the_answer_and_the_score_line_after_the_template_prefix():
    fmt = answer_format("rts", LIKERT, max_tokens=64)
    request = GenerateRequest(messages=(Message(role="user", content="Rate it."), Message(role="assistant", content="Reason:")),
                              max_tokens=64, n=3, grammar=fmt.grammar)  # fmt: skip
    repaired, prefilled = repair_request(request, " It flows but  \n", fmt)
    assert prefilled == " It flows but" + RTS_CLOSING
    assert repaired.messages[-1] == Message(role="assistant", content="Reason: It flows but\nFinal score:")
    assert repaired.grammar == fmt.repair_grammar == score_grammar(LIKERT)
    assert repaired.max_tokens == fmt.repair_max_tokens and repaired.n == 1
    blank, prefilled = repair_request(request, "  ", fmt)  # nothing to continue: asked again, prefix kept
    assert prefilled == "" and blank.messages == request.messages
    bare = GenerateRequest(messages=(Message(role="user", content="Rate it."),), grammar=fmt.grammar)
    assert repair_request(bare, "", fmt)[0].messages == bare.messages


def test_cache_keys_of_requests_without_a_grammar_are_unchanged():
    """The key of a request that sets no grammar is the one computed before the field existed, so caches
    written earlier stay valid; a grammar changes the key."""
    request = GenerateRequest(messages=(Message(role="user", content="Rate it."), Message(role="assistant", content="Score:")),
                              max_tokens=8, seed=0, tags=(("template_id", "direct.likert"),))  # fmt: skip
    assert request.fingerprint() == "d26c4ea0fdfa9d72e14f90bc879ff7044c11f3dffc5634d10d7327274e0a2348"
    assert request.model_copy(update={"grammar": score_grammar(LIKERT)}).fingerprint() != request.fingerprint()


# -- direct ------------------------------------------------------------------------------------------


async def test_direct_sends_no_grammar_to_a_provider_without_the_capability():
    provider = ScriptedProvider([" 4"])
    result = await likert.score(provider, ITEM, COHERENCE, DIRECT, "direct")
    assert result.score == 4.0 and provider.calls[0].grammar is None
    assert "answer_format" not in result.details and not any("grammar" in n for n in result.notes)


async def test_direct_constrains_the_answer_where_the_provider_honours_grammars():
    provider = ScriptedProvider([" 4"], capabilities=GRAMMAR)
    result = await likert.score(provider, ITEM, COHERENCE, DIRECT, "direct")
    assert result.status == "ok" and result.score == 4.0 and len(provider.calls) == 1
    assert provider.calls[0].grammar == score_grammar(COHERENCE.scale)
    assert result.details["answer_format"] == {"format": "direct", "answers": 1, "repairs": 0, "repaired": 0}
    assert result.notes[0] == "answers constrained by the direct grammar (GBNF): 1"
    off = ScriptedProvider([" 4"], capabilities=GRAMMAR)
    await likert.score(off, ITEM, COHERENCE, ScorerOptions(settings=DIRECT.settings, extra={"grammar": False}), "direct")
    assert off.calls[0].grammar is None


async def test_geval_and_sampling_are_not_constrained():
    provider = ScriptedProvider(lambda r: "3", capabilities=GRAMMAR)
    await likert.score(provider, ITEM, COHERENCE, ScorerOptions(settings=EstimationSettings(samples=2)), "sampling")
    await likert.score(provider, ITEM, COHERENCE, ScorerOptions(), "geval")
    assert all(call.grammar is None for call in provider.calls)


async def test_direct_answer_cut_short_is_repaired_once():
    provider = ScriptedProvider(["", " 2"], capabilities=GRAMMAR)  # e.g. max_tokens ran out after the space
    result = await likert.score(provider, ITEM, COHERENCE, DIRECT, "direct")
    assert result.status == "ok" and result.score == 2.0 and result.raw == [" 2"]
    first, second = provider.calls
    assert as_text(second.messages) == as_text(first.messages)  # nothing to continue: the same prompt, again
    assert second.grammar == score_grammar(COHERENCE.scale) and second.max_tokens == 3
    assert result.details["answer_format"] == {"format": "direct", "answers": 1, "repairs": 1, "repaired": 1}
    assert "1 failed to parse and were asked once more, 1 then parsed" in result.notes[0]


async def test_direct_is_unparsed_when_the_repair_fails_too_never_a_number():
    provider = ScriptedProvider(["great summary", "still no"], capabilities=GRAMMAR)  # a backend ignoring the grammar
    result = await likert.score(provider, ITEM, COHERENCE, DIRECT, "direct")
    assert result.status == "unparsed" and result.score is None and result.distribution is None
    assert len(provider.calls) == 2  # exactly one repair
    assert provider.calls[1].messages[-1].content == "Score (1-5):great summary\nScore:"
    assert result.details["answer_format"] == {"format": "direct", "answers": 1, "repairs": 1, "repaired": 0}


# -- RTS -----------------------------------------------------------------------------------------------


async def test_rts_constrains_reason_then_final_score_within_max_tokens():
    answer = " The summary flows well.\nFinal score: 4"
    provider = ScriptedProvider([answer], capabilities=GRAMMAR)
    result = await rts_mcq.score(provider, ITEM, COHERENCE, ScorerOptions(extra={"max_tokens": 64}), "rts")
    assert result.status == "ok" and result.score == 4.0 and result.rationale == answer.strip()
    assert provider.calls[0].grammar == rts_grammar(COHERENCE.scale, 64) and provider.calls[0].max_tokens == 64
    assert result.details["answer_format"]["repairs"] == 0 and "grammar-constrained" in result.method_reason
    plain = ScriptedProvider([answer])
    result = await rts_mcq.score(plain, ITEM, COHERENCE, ScorerOptions(), "rts")
    assert plain.calls[0].grammar is None and result.details == {} and "free-text" in result.method_reason


async def test_rts_cut_by_max_tokens_continues_with_the_score_line_prefilled():
    provider = ScriptedProvider([" The summary jumps between", " 2"], capabilities=GRAMMAR)
    result = await rts_mcq.score(provider, ITEM, COHERENCE, ScorerOptions(), "rts")
    assert result.status == "ok" and result.score == 2.0
    assert result.raw == [" The summary jumps between\nFinal score: 2"]
    repair = provider.calls[1]
    assert repair.messages[-1] == Message(role="assistant", content=" The summary jumps between\nFinal score:")
    assert as_text(repair.messages).startswith(as_text(provider.calls[0].messages))
    assert repair.grammar == score_grammar(COHERENCE.scale) and repair.temperature == 0.0
    assert result.details["answer_format"] == {"format": "rts", "answers": 1, "repairs": 1, "repaired": 1}
    assert result.usage.calls == 2


async def test_rts_is_unparsed_when_the_repair_fails_too():
    provider = ScriptedProvider(["no idea", "none"], capabilities=GRAMMAR)
    result = await rts_mcq.score(provider, ITEM, COHERENCE, ScorerOptions(), "rts")
    assert result.status == "unparsed" and result.score is None and len(provider.calls) == 2
    assert result.details["answer_format"] == {"format": "rts", "answers": 1, "repairs": 1, "repaired": 0}


# -- Fusion-Eval -------------------------------------------------------------------------------------


def fusion_options(**extra):
    return ScorerOptions(extra={"k": 3, "plan": "Use ROUGE-1.", "assistants": ["ROUGE-1"], **extra})


async def test_fusion_predictions_are_constrained_and_each_failed_one_repaired():
    def rule(request: GenerateRequest) -> str:
        # the k sampled predictions say nothing readable; a repair (score line prefilled) gives 3
        return " 3" if request.messages[-1].content.endswith("bad\nScore:") else " bad"

    provider = ScriptedProvider(rule, capabilities=GRAMMAR)
    result = await fusion.score(provider, ITEM, COHERENCE, fusion_options())
    sampled, *repairs = provider.calls
    assert sampled.grammar == score_grammar(COHERENCE.scale) and sampled.n == 3
    assert len(repairs) == 3 and sorted(r.sample_index for r in repairs) == [0, 1, 2]
    assert all(r.grammar == score_grammar(COHERENCE.scale) and r.temperature == sampled.temperature for r in repairs)
    assert result.status == "ok" and result.score == 3.0
    assert result.details["answer_format"] == {"format": "fusion", "answers": 3, "repairs": 3, "repaired": 3}
    assert result.details["assistant_scores"].keys() == {"ROUGE-1"}


async def test_fusion_keeps_only_what_parses_and_is_unparsed_when_nothing_does():
    provider = ScriptedProvider(lambda request: " bad", capabilities=GRAMMAR)
    result = await fusion.score(provider, ITEM, COHERENCE, fusion_options())
    assert result.status == "unparsed" and result.score is None
    assert result.details["answer_format"] == {"format": "fusion", "answers": 3, "repairs": 3, "repaired": 0}
    free = ScriptedProvider(lambda request: " 4", capabilities=GRAMMAR)
    result = await fusion.score(free, ITEM, COHERENCE, fusion_options(grammar=False))
    assert result.score == 4.0 and all(c.grammar is None for c in free.calls) and "answer_format" not in result.details


# -- the embedded model --------------------------------------------------------------------------------

SOURCE = (
    "The city council of Marlow voted on Tuesday to turn the disused rail yard into a public park with a "
    "playground, a community garden and a cycle path. Construction starts next spring, and the council "
    "expects the park to open the following summer."
)
OUTPUTS = ["Marlow will turn its old rail yard into a park with a playground and a garden.",
           "park council. rail yard Tuesday the, spring cycle."]  # fmt: skip


@pytest.mark.integration
@pytest.mark.parametrize("method,extra", [("direct", {}), ("rts", {"max_tokens": 48}),
                                          ("fusion", {"k": 2, "plan_max_tokens": 32, "assistants": ["ROUGE-1", "CHRF"]})])  # fmt: skip
async def test_local_generative_methods_parse_under_the_grammar(local, method, extra):
    assert local.capabilities.grammar
    settings = EstimationSettings(method="parsed") if method == "direct" else EstimationSettings()
    options = ScorerOptions(settings=settings, extra=extra)
    module = {"direct": likert, "rts": rts_mcq, "fusion": fusion}[method]
    for output in OUTPUTS:
        result = await module.score(local, JudgeItem(output=output, source=SOURCE), COHERENCE, options, method)
        assert result.status == "ok" and 1 <= result.score <= 5, (result.raw, result.notes)
        assert result.details["answer_format"]["format"] == method
        if method == "rts":
            assert "\nFinal score: " in result.raw[0]


@pytest.mark.integration
async def test_local_grammar_of_a_word_scale_and_a_malformed_grammar(local):
    yes_no = Scale(labels=("Yes", "No"), values=(1.0, 0.0))
    messages = (Message(role="user", content=f"Source: {SOURCE}\nSummary: {OUTPUTS[0]}\nIs the summary faithful?"),
                Message(role="assistant", content="Answer:"))  # fmt: skip
    response = await local.generate(GenerateRequest(messages=messages, max_tokens=4, grammar=score_grammar(yes_no)))
    assert response.choices[0].text.strip() in ("Yes", "No")
    with pytest.raises(InputError, match="could not parse"):
        await local.generate(GenerateRequest(messages=messages, max_tokens=4, grammar='root ::= "a" | ('))


def test_a_criterion_on_another_scale_gets_a_grammar_of_its_own_labels():
    """A criterion on a 0-10 scale gets a grammar of its own labels (no 1-5 assumption)."""
    scale = Scale.likert(0, 10)
    crit = Criterion(name="quality", description="Overall quality.", scale=scale)
    fmt = format_for("direct", ScriptedProvider([], capabilities=GRAMMAR), crit.scale, {})
    assert fmt is not None and '"10" | "0" | "1"' in fmt.grammar and '"5"' in fmt.grammar
