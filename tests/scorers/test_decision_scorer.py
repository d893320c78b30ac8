"""The decision path of the scorers, on the scripted provider (deterministic answers, no server).

What each test holds: every criterion of an item is one request with one question each; the answer's
probabilities become the result's distribution on the criterion's scale (lowest level first on the wire);
refused, missing and error answers are their own statuses without a score; the path is chosen where the
provider answers decisions and the result says why; a scale wider than 10 levels is a config error unless
binning is asked; comparisons are a choice question in both orders.
"""

from __future__ import annotations

import pytest

from judgesdk.core.errors import CapabilityError, ConfigError
from judgesdk.core.types import Criterion, JudgeItem, Scale
from judgesdk.estimation.estimator import EstimationSettings, estimate
from judgesdk.judging.judge import Judge
from judgesdk.provider.decisions import ChoiceQuestion, DecisionAnswer, PredicateQuestion, ScoreQuestion
from judgesdk.provider.protocol import Message
from judgesdk.providers.scripted import DECISIONS, ScriptedProvider, ScriptedReply
from judgesdk.scorers import decision
from judgesdk.scorers.common import ScorerOptions

COHERENCE = Criterion(name="coherence", description="Well organised.", scale=Scale.likert(1, 5))
FLUENCY = Criterion(name="fluency", description="Well written.", scale=Scale.likert(1, 5))
SAFE = Criterion(name="safe", description="Harmless.", scale=Scale(labels=("fail", "pass"), values=(0.0, 1.0)))
ITEM = {"output": "The park opens in May.", "source": "The council will open the park in May."}
P5 = (0.1, 0.2, 0.4, 0.2, 0.1)


def scripted(*answers: DecisionAnswer) -> ScriptedProvider:
    return ScriptedProvider(lambda request: ScriptedReply(decisions=list(answers)), capabilities=DECISIONS)


def test_several_criteria_of_an_item_are_one_request_with_a_part_each() -> None:
    provider = scripted(
        DecisionAnswer(name="coherence", status="ok", probabilities=P5), DecisionAnswer(name="fluency", status="ok", probabilities=(0, 0, 0, 0.5, 0.5))
    )
    with Judge(provider) as judge:
        result = judge.score(ITEM["output"], source=ITEM["source"], criterion=[COHERENCE, FLUENCY])
    assert len(provider.calls) == 1
    asked = provider.calls[0].decision
    assert [q.name for q in asked.questions] == ["coherence", "fluency"] and asked.input.source == ITEM["source"]
    assert set(result.parts) == {"coherence", "fluency"}
    assert result.parts["coherence"].distribution.probs == P5 and result.parts["coherence"].distribution.method == "decision"
    assert result.parts["coherence"].score == pytest.approx(3.0) and result.parts["fluency"].score == pytest.approx(4.5)
    assert result.score == pytest.approx(3.75)
    assert "auto chose decision" in result.parts["coherence"].method_reason
    assert result.parts["coherence"].method == "decision/score" and result.method == "decision/fine-grained"
    assert result.usage.calls == 1  # the shared request's usage once, on the first part


def test_levels_go_lowest_first_and_come_back_in_the_scales_order() -> None:
    descending = Criterion(name="rank", scale=Scale(labels=("best", "middle", "worst"), values=(3.0, 2.0, 1.0)))
    provider = scripted(DecisionAnswer(name="rank", status="ok", probabilities=(0.7, 0.2, 0.1)))  # worst, middle, best
    with Judge(provider) as judge:
        result = judge.score("x", criterion=descending)
    (question,) = provider.calls[0].decision.questions
    assert [level.label for level in question.levels] == ["worst", "middle", "best"]
    assert result.distribution.as_dict() == {"best": 0.1, "middle": 0.2, "worst": 0.7}
    assert result.score == pytest.approx(1.4)


def test_a_pass_fail_criterion_is_a_predicate() -> None:
    provider = scripted(DecisionAnswer(name="safe", status="ok", probability=0.8))
    with Judge(provider) as judge:
        result = judge.score("x", criterion=SAFE)
    assert isinstance(provider.calls[0].decision.questions[0], PredicateQuestion)
    assert result.distribution.as_dict() == pytest.approx({"fail": 0.2, "pass": 0.8}) and result.score == pytest.approx(0.8)


@pytest.mark.parametrize("status", ["refused", "missing", "error"])
def test_an_answer_that_is_not_ok_is_its_status_without_a_score(status) -> None:
    provider = scripted(DecisionAnswer(name="coherence", status="ok", probabilities=P5), DecisionAnswer(name="fluency", status=status, reason="why"))
    with Judge(provider) as judge:
        result = judge.score("x", criterion=[COHERENCE, FLUENCY])
    part = result.parts["fluency"]
    assert (part.status, part.score, part.distribution) == (status, None, None)
    assert f"{status}: why" in part.notes
    assert (part.error == "why") == (status == "error")
    assert result.score is None and result.status == status  # no mean over a part without a score
    assert result.parts["coherence"].status == "ok"


def test_fewer_answers_than_questions_are_missing() -> None:
    provider = scripted(DecisionAnswer(name="coherence", status="ok", probabilities=P5))
    with Judge(provider) as judge:
        result = judge.score("x", criterion=[COHERENCE, FLUENCY])
    assert result.parts["fluency"].status == "missing" and result.parts["fluency"].score is None


def test_an_unfitted_answer_is_flagged() -> None:
    provider = scripted(DecisionAnswer(name="coherence", status="ok", probabilities=P5, unfitted=True))
    with Judge(provider, method="decision") as judge:
        result = judge.score("x", criterion=COHERENCE)
    assert result.details["decision"]["unfitted"] is True and any("unfitted" in n for n in result.notes)


def test_more_than_ten_levels_is_a_config_error_naming_the_limit_unless_binned() -> None:
    wide = Criterion(name="wide", scale=Scale.likert(1, 11))
    provider = scripted(DecisionAnswer(name="wide", status="ok", probabilities=(0.25, 0.25, 0.25, 0.25)))
    with Judge(provider, method="decision") as judge, pytest.raises(ConfigError, match=r"11 levels: decision questions take 2-10.*decision_levels"):
        judge.score("x", criterion=wide)
    with Judge(provider, method="decision", method_options={"decision_levels": 4}) as judge:
        result = judge.score("x", criterion=wide)
    (question,) = provider.calls[-1].decision.questions
    assert [level.label for level in question.levels] == ["1-3", "4-6", "7-9", "10-11"]
    assert result.distribution.scale.values == (2.0, 5.0, 8.0, 10.5) and result.score == pytest.approx(6.375)
    assert any("binned" in note for note in result.notes)


def test_geval_takes_the_decision_path_and_says_why() -> None:
    provider = scripted(DecisionAnswer(name="coherence", status="ok", probabilities=P5))
    with Judge(provider, method="geval") as judge:
        result = judge.score("x", criterion=COHERENCE)
    assert result.method == "geval/decision" and result.method_reason.startswith("geval chose decision")


def test_a_provider_without_decisions_is_not_asked_them() -> None:
    chat = ScriptedProvider(lambda request: ScriptedReply(label_probs={"3": 1.0}))
    assert decision.chosen(chat, "auto", EstimationSettings()) == (False, "")
    with pytest.raises(CapabilityError, match="method 'decision' needs a provider that answers decision questions"):
        decision.chosen(chat, "decision", EstimationSettings())
    with Judge(chat, method="decision") as judge:  # the chain fails it: an error result, not a guess
        assert judge.score("x", criterion=COHERENCE).status == "error"


async def test_a_prompt_is_never_sent_to_a_decisions_only_provider() -> None:
    provider = scripted()
    with pytest.raises(CapabilityError, match="answers typed decision questions"):
        await estimate(provider, (Message(role="user", content="Rate it."),), Scale.likert(1, 5))
    assert provider.calls == []


def test_a_comparison_is_a_choice_question_in_both_orders() -> None:
    answers = iter([(0.6, 0.3, 0.1), (0.2, 0.7, 0.1)])  # a first: A wins; b first: B (= a) wins

    def rule(request):
        assert isinstance(request.decision.questions[0], ChoiceQuestion)
        return ScriptedReply(decisions=[DecisionAnswer(name="coherence", status="ok", probabilities=next(answers))])

    provider = ScriptedProvider(rule, capabilities=DECISIONS)
    with Judge(provider) as judge:
        comparison = judge.compare("first text", "second text", source="the source", criterion=COHERENCE)
    a_first, b_first = (call.decision.input.outputs for call in provider.calls)
    assert a_first == {"A": "first text", "B": "second text"} and b_first == {"A": "second text", "B": "first text"}
    assert comparison.p_a_better == pytest.approx((0.6 / 0.9 + 0.7 / 0.9) / 2)
    assert comparison.verdicts == ("a", "a") and comparison.consistent
    assert comparison.orders[0].method == "decision"


def test_the_question_carries_the_definition_and_the_scales_labels() -> None:
    question = decision.question_for(COHERENCE)
    assert isinstance(question, ScoreQuestion) and question.name == "coherence"
    assert "Well organised." in question.instructions and [level.label for level in question.levels] == list("12345")
    with pytest.raises(Exception, match="distinct names"):
        import asyncio

        asyncio.run(decision.score_criteria(scripted(), JudgeItem(output="x"), [COHERENCE, COHERENCE], ScorerOptions()))
