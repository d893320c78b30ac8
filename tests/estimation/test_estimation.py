import pytest

from judgesdk.core.errors import CapabilityError
from judgesdk.core.types import Scale
from judgesdk.estimation.estimator import EstimationSettings, choose_method, estimate
from judgesdk.provider.protocol import Capabilities, Message
from judgesdk.providers.scripted import FULL, ScriptedProvider, ScriptedReply

LIKERT = Scale.likert(1, 5)
MESSAGES = (Message(role="user", content="Rate this."), Message(role="assistant", content="Score:"))
PROBS = {"1": 0.1, "2": 0.1, "3": 0.2, "4": 0.4, "5": 0.2}


def test_method_follows_capabilities():
    assert choose_method(FULL, "auto")[0] == "exact"
    assert choose_method(Capabilities(logprobs=True, max_top_logprobs=5), "auto")[0] == "logprobs"
    method, reason = choose_method(Capabilities(), "auto")
    assert method == "sampling" and "no logprobs" in reason
    with pytest.raises(CapabilityError):
        choose_method(Capabilities(), "exact")


async def test_exact_expected_value():
    provider = ScriptedProvider(lambda r: ScriptedReply(label_probs=PROBS))
    est = await estimate(provider, MESSAGES, LIKERT)
    assert est.method == "exact" and est.status == "ok"
    assert est.distribution.expected == pytest.approx(1 * 0.1 + 2 * 0.1 + 3 * 0.2 + 4 * 0.4 + 5 * 0.2)
    assert provider.calls[0].labels == ("1", " 1", "2", " 2", "3", " 3", "4", " 4", "5", " 5")


async def test_logprobs_path_on_a_logprob_provider():
    provider = ScriptedProvider(
        lambda r: ScriptedReply(label_probs=PROBS), capabilities=Capabilities(logprobs=True, max_top_logprobs=5)
    )
    est = await estimate(provider, MESSAGES, LIKERT)
    assert est.method == "logprobs"
    assert est.distribution.coverage == pytest.approx(1.0)
    assert provider.calls[0].top_logprobs == 5


async def test_low_coverage_logprobs_fall_back_to_sampling_and_say_why():
    low = {"3": 0.2, "The": 0.8}
    provider = ScriptedProvider(
        lambda r: ScriptedReply(label_probs=low), capabilities=Capabilities(logprobs=True, max_top_logprobs=5, multiple_samples=True)
    )
    est = await estimate(provider, MESSAGES, LIKERT, EstimationSettings(samples=40))
    assert est.method == "sampling"
    assert "coverage 0.20 below floor 0.5" in est.reason and "fell back to sampling" in est.reason
    assert est.distribution.n_samples == 40
    assert 0 < est.distribution.n_unparsed < 40  # "The" does not parse


async def test_low_coverage_flag_policy_keeps_the_estimate():
    provider = ScriptedProvider(lambda r: ScriptedReply(label_probs={"3": 0.2, "The": 0.8}))
    est = await estimate(provider, MESSAGES, LIKERT, EstimationSettings(on_low_coverage="flag"))
    assert est.status == "low_coverage" and est.distribution.expected == pytest.approx(3.0)


async def test_dropped_logprobs_fall_back_to_sampling():
    caps = Capabilities(logprobs=True, max_top_logprobs=5, multiple_samples=True)

    class Dropping(ScriptedProvider):
        async def generate(self, request):
            response = await super().generate(request)
            for choice in response.choices:
                choice.tokens = None
            return response

    est = await estimate(Dropping(lambda r: ScriptedReply(label_probs=PROBS), capabilities=caps), MESSAGES, LIKERT)
    assert est.method == "sampling" and "backend returned no logprobs" in est.reason


async def test_sampling_without_n_uses_distinct_indices_and_seeds():
    provider = ScriptedProvider(lambda r: ScriptedReply(label_probs=PROBS), capabilities=Capabilities())
    est = await estimate(provider, MESSAGES, LIKERT, EstimationSettings(samples=6, seed=7))
    assert [c.sample_index for c in provider.calls] == list(range(6))
    assert [c.seed for c in provider.calls] == list(range(7, 13))
    assert all(c.temperature == 1.0 for c in provider.calls)
    assert est.distribution.n_samples == 6 and est.distribution.stderr is not None


async def test_sampling_tops_up_when_backend_ignores_n():
    class IgnoresN(ScriptedProvider):
        async def generate(self, request):
            return await super().generate(request.model_copy(update={"n": 1}))

    provider = IgnoresN(lambda r: "4", capabilities=Capabilities(multiple_samples=True))
    est = await estimate(provider, MESSAGES, LIKERT, EstimationSettings(samples=5))
    assert est.distribution.n_samples == 5 and len(provider.calls) == 5


async def test_unparseable_answer_is_a_status_not_a_number():
    provider = ScriptedProvider(lambda r: "I cannot judge this.", capabilities=Capabilities())
    est = await estimate(provider, MESSAGES, LIKERT, EstimationSettings(method="parsed"))
    assert est.status == "unparsed" and est.distribution is None
    assert est.texts == ["I cannot judge this."]


async def test_word_labels():
    scale = Scale(labels=("Yes", "No"), values=(1.0, 0.0))
    provider = ScriptedProvider(lambda r: ScriptedReply(label_probs={"Yes": 0.75, "No": 0.25}))
    est = await estimate(provider, MESSAGES, scale)
    assert est.distribution.expected == pytest.approx(0.75)
