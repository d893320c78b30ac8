import pytest

from judgesdk import Criterion, InputError, Scale
from judgesdk.core.errors import AuthError, RetriesExhaustedError, TransientError
from judgesdk.core.types import JudgeItem
from judgesdk.judging.judge import Judge
from judgesdk.providers.scripted import ScriptedProvider, ScriptedReply

PROBS = {"1": 0.0, "2": 0.1, "3": 0.2, "4": 0.3, "5": 0.4}
EXPECTED = 2 * 0.1 + 3 * 0.2 + 4 * 0.3 + 5 * 0.4


def scripted():
    return ScriptedProvider(lambda r: ScriptedReply(label_probs=PROBS))


def test_score_geval_is_the_expected_value():
    with Judge(scripted()) as judge:
        result = judge.score("The cat sat.", source="A cat sat on the mat.", criterion="coherence")
    assert result.status == "ok"
    assert result.score == pytest.approx(EXPECTED)
    assert result.method == "geval/exact"
    assert result.provider == "scripted"
    assert result.distribution.as_dict() == pytest.approx(PROBS)


def test_direct_and_sampling_aggregations():
    with Judge(scripted()) as judge:
        direct = judge.score("x", source="y", method="direct")
        sampled = judge.score("x", source="y", method="sampling")
    assert direct.score == 5.0 and direct.method == "direct/parsed"
    assert sampled.method == "sampling/sampling" and sampled.distribution.n_samples == 20
    assert 3.0 < sampled.score < 5.0


def test_prompt_contains_criterion_source_and_output_in_order():
    provider = scripted()
    crit = Criterion(name="relevance", description="Selection of important content.", scale=Scale.likert(1, 5))
    with Judge(provider) as judge:
        judge.score("THE OUTPUT", source="THE SOURCE", criterion=crit)
    text = "\n".join(m.content for m in provider.calls[0].messages)
    assert "Selection of important content." in text
    assert text.index("THE SOURCE") < text.index("THE OUTPUT")
    assert dict(provider.calls[0].tags)["template_id"] == "direct.likert"


def test_item_without_source_uses_the_no_source_template():
    provider = scripted()
    with Judge(provider) as judge:
        result = judge.score("Just a sentence.", criterion="fluency")
    assert result.status == "ok"
    assert dict(provider.calls[0].tags)["template_id"] == "direct.likert.no_source"


async def test_async_api_matches_sync():
    judge = Judge(scripted())
    result = await judge.ascore("x", source="y")
    assert result.score == pytest.approx(EXPECTED)
    await judge.aclose()


def test_fallback_chain_moves_on_and_names_the_provider():
    class Down(ScriptedProvider):
        kind = "down"

        async def generate(self, request):
            raise RetriesExhaustedError("gave up", attempts=3, last=TransientError("503"))

    def no_credentials():
        raise AuthError("no key")

    with Judge([no_credentials, Down(lambda r: ""), scripted()]) as judge:
        result = judge.score("x", source="y")
    assert result.status == "ok" and result.provider == "scripted"
    assert any("unavailable" in n for n in result.notes) and any("down/scripted failed" in n for n in result.notes)


def test_all_providers_failing_is_an_error_result_not_an_exception():
    def no_credentials():
        raise AuthError("no key")

    with Judge([no_credentials]) as judge:
        result = judge.score("x", source="y")
    assert result.status == "error" and result.score is None and "no key" in result.error


def test_score_many_keeps_order_bounds_concurrency_and_reports_progress():
    in_flight, peak = 0, 0

    class Counting(ScriptedProvider):
        async def generate(self, request):
            nonlocal in_flight, peak
            import asyncio

            in_flight += 1
            peak = max(peak, in_flight)
            await asyncio.sleep(0.01)
            in_flight -= 1
            return await super().generate(request)

    provider = Counting(lambda r: ScriptedReply(label_probs={"1": 1.0} if "bad" in r.messages[0].content else {"5": 1.0}))
    seen = []
    items = [JudgeItem(output="bad" if i % 2 else "good", source="s", id=str(i)) for i in range(10)]
    with Judge(provider, concurrency=3) as judge:
        results = judge.score_many(items, on_result=lambda i, r: seen.append(i))
    assert [r.score for r in results] == [5.0 if i % 2 == 0 else 1.0 for i in range(10)]
    assert [r.item_id for r in results] == [str(i) for i in range(10)]
    assert peak <= 3 and sorted(seen) == list(range(10))


def test_bad_input_is_a_typed_error():
    with Judge(scripted()) as judge:
        with pytest.raises(InputError, match="empty output"):
            judge.score("   ", source="y")
        with pytest.raises(InputError):
            judge.score("x", criterion="")
    with pytest.raises(InputError):
        Judge([])
    with pytest.raises(InputError, match="no template"):
        Judge(scripted(), template="no.such.template")


def test_unknown_method_is_rejected_up_front():
    with pytest.raises(InputError, match="unknown method"):
        Judge(scripted(), method="vibes")
    with Judge(scripted()) as judge, pytest.raises(InputError, match="unknown method"):
        judge.score("x", source="y", method="vibes")


def test_result_lines_have_the_same_keys_with_or_without_a_distribution():
    from judgesdk.records import result_line

    with Judge(ScriptedProvider(lambda r: "no idea")) as judge:
        unparsed = judge.score("x", source="y", method="direct")
    with Judge(scripted()) as judge:
        scored = judge.score("x", source="y")
    assert unparsed.status == "unparsed" and result_line(unparsed)["distribution"] is None
    assert set(result_line(unparsed)) == set(result_line(scored))
