"""Synthetic-reference scoring (000 §2): ladder order, the weighted sum on known probabilities, ladder cache and
JSONL round trip on a scripted judge; then end to end on the embedded model and through the llama.cpp server."""

import asyncio
import re

import pytest

from judgesdk.core.errors import InputError
from judgesdk.core.types import Criterion, JudgeItem
from judgesdk.estimation.estimator import EstimationSettings
from judgesdk.provider.protocol import Capabilities, as_text
from judgesdk.providers.scripted import ScriptedProvider, ScriptedReply
from judgesdk.scorers import scorer_for
from judgesdk.scorers.common import ScorerOptions
from judgesdk.scorers.synthetic import LadderStore, generation_order, ladder_store, score, weighted_sum

CRIT = Criterion(name="coherence", description="The summary flows well.")
ITEM = JudgeItem(output="TARGET summary", source="SOURCE article text", id="x1")


def flat(n):
    return [rung for level in generation_order(n) for rung, _, _ in level]


@pytest.mark.parametrize(
    ("n", "expected"),
    [
        (2, [[(1, None, None), (2, None, None)]]),
        (3, [[(1, None, None), (3, None, None)], [(2, 1, 3)]]),
        (5, [[(1, None, None), (5, None, None)], [(3, 1, 5)], [(2, 1, 3), (4, 3, 5)]]),
        (
            9,
            [
                [(1, None, None), (9, None, None)],
                [(5, 1, 9)],
                [(3, 1, 5), (7, 5, 9)],
                [(2, 1, 3), (4, 3, 5), (6, 5, 7), (8, 7, 9)],
            ],
        ),
    ],
)
def test_ladder_generation_order(n, expected):
    assert generation_order(n) == expected
    assert sorted(flat(n)) == list(range(1, n + 1))


def test_weighted_sum_is_000_formula():
    # s = sum_i [i, -i, 0] . [p(Better|i), p(Worse|i), p(Similar|i)]
    probs = [(0.1, 0.7, 0.2), (0.3, 0.3, 0.4), (0.6, 0.1, 0.3)]
    assert weighted_sum(probs) == pytest.approx(1 * (0.1 - 0.7) + 2 * (0.3 - 0.3) + 3 * (0.6 - 0.1))


class LadderJudge:
    """Writes rung k as "RUNG<k>" and answers comparisons with per-rung probabilities."""

    def __init__(self, rung_probs, n, labels=("Better", "Worse", "Similar"), empty=False):
        self.rung_probs, self.n, self.labels, self.empty = rung_probs, n, labels, empty
        self.generated: list[int] = []
        self.provider = ScriptedProvider(self.rule)

    def rule(self, request):
        text = as_text(request.messages)
        if request.labels is not None:  # a comparison with one rung
            rung = int(re.search(r"RUNG(\d+)", text).group(1))
            return ScriptedReply(label_probs=dict(zip(self.labels, self.rung_probs[rung - 1])))
        if "the worst possible" in text or "the best possible" in text:
            rung = 1 if "the worst possible" in text else self.n
        else:  # intermediate: between the Bad and the Good rung
            worse, better = (int(x) for x in re.findall(r"RUNG(\d+)", text))
            rung = (worse + better) // 2
        self.generated.append(rung)
        return "" if self.empty else f"RUNG{rung}"


async def test_score_is_weighted_sum_over_generated_ladder():
    probs = [(0.1, 0.7, 0.2), (0.2, 0.5, 0.3), (0.3, 0.3, 0.4), (0.5, 0.2, 0.3), (0.6, 0.1, 0.3)]
    judge = LadderJudge(probs, 5)
    options = ScorerOptions()
    result = await score(judge.provider, ITEM, CRIT, options)
    assert judge.generated == [1, 5, 3, 2, 4]  # extremes, then recursive intermediates (000 §2.1)
    assert result.score == pytest.approx(weighted_sum(probs))
    assert result.score == pytest.approx(sum(i * (b - w) for i, (b, w, _) in enumerate(probs, start=1)))
    assert result.status == "ok" and result.method == "synthetic/exact" and result.item_id == "x1"
    assert result.notes[0].endswith("generated") and "rung 3: p(Better)=0.3000" in result.notes[3]
    ladder = next(iter(ladder_store(options)))
    assert ladder.texts == [f"RUNG{i}" for i in range(1, 6)] and ladder.generation_order == [1, 5, 3, 2, 4]
    # prompts: source, then rung, then the judged output (shared prefix first)
    compare_prompt = as_text(judge.provider.calls[-1].messages)
    assert compare_prompt.index("SOURCE") < compare_prompt.index("RUNG") < compare_prompt.index("TARGET")
    # the intermediate rung 2 was written between rungs 1 and 3
    intermediate = [as_text(c.messages) for c in judge.provider.calls if "Bad Summary" in as_text(c.messages)]
    assert re.findall(r"RUNG\d", intermediate[1]) == ["RUNG1", "RUNG3"]


@pytest.mark.parametrize("n", [2, 3, 9])
async def test_ladder_size_from_options(n):
    judge = LadderJudge([(0.5, 0.25, 0.25)] * n, n)
    result = await score(judge.provider, ITEM, CRIT, ScorerOptions(extra={"rungs": n}))
    assert judge.generated == flat(n)
    assert result.score == pytest.approx(0.25 * n * (n + 1) / 2)


async def test_ladder_is_reused_across_outputs_and_built_once_when_concurrent():
    judge = LadderJudge([(0.2, 0.2, 0.6)] * 3, 3)
    options = ScorerOptions(extra={"rungs": 3})
    items = [JudgeItem(output=f"TARGET {i}", source="SOURCE") for i in range(3)]
    results = await asyncio.gather(*(score(judge.provider, item, CRIT, options) for item in items))
    assert judge.generated == [1, 3, 2] and len(ladder_store(options)) == 1
    assert sum(r.notes[0].endswith("generated") for r in results) == 1
    other = Criterion(name="fluency", description="Well written.")
    await score(judge.provider, items[0], other, options)
    assert len(ladder_store(options)) == 2 and judge.generated == [1, 3, 2, 1, 3, 2]


async def test_ladders_export_and_import_as_jsonl(tmp_path):
    judge = LadderJudge([(0.2, 0.2, 0.6)] * 3, 3)
    options = ScorerOptions(extra={"rungs": 3})
    first = await score(judge.provider, ITEM, CRIT, options)
    path = tmp_path / "ladders.jsonl"
    assert ladder_store(options).export_ladders(path) == 1
    fresh = ScorerOptions(extra={"rungs": 3, "ladders": LadderStore()})
    assert fresh.extra["ladders"].import_ladders(path) == 1
    again = LadderJudge([(0.2, 0.2, 0.6)] * 3, 3)
    second = await score(again.provider, ITEM, CRIT, fresh)
    assert again.generated == [] and second.score == pytest.approx(first.score) and second.notes[0].endswith("reused")


def test_import_of_a_bad_file_names_the_line(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text('{"key": "k"}\n')
    with pytest.raises(InputError, match="bad.jsonl:1"):
        LadderStore().import_ladders(path)
    with pytest.raises(InputError, match="no file"):
        LadderStore().import_ladders(tmp_path / "missing.jsonl")


async def test_yes_no_variant():
    probs = [(0.2, 0.8), (0.5, 0.5), (0.9, 0.1)]
    judge = LadderJudge(probs, 3, labels=("Yes", "No"))
    result = await score(judge.provider, ITEM, CRIT, ScorerOptions(extra={"rungs": 3, "prediction": "yesno"}))
    assert result.score == pytest.approx(sum(i * (y - n) for i, (y, n) in enumerate(probs, start=1)))
    last = judge.provider.calls[-1]
    assert dict(last.tags)["template_id"] == "synthetic.compare_yesno"
    assert "Does Summary 1 have better coherence than Summary 2?" in as_text(last.messages)


async def test_dataset_variants_are_selected():
    judge = LadderJudge([(0.2, 0.2, 0.6)] * 2, 2)
    await score(judge.provider, ITEM, CRIT, ScorerOptions(dataset="hanna", extra={"rungs": 2}))
    ids = [dict(c.tags)["template_id"] for c in judge.provider.calls]
    assert ids == ["synthetic.generate_extreme.hanna"] * 2 + ["synthetic.compare_bws.hanna"] * 2


async def test_empty_rung_is_unparsed_and_not_cached():
    judge = LadderJudge([(0.2, 0.2, 0.6)] * 2, 2, empty=True)
    options = ScorerOptions(extra={"rungs": 2})
    result = await score(judge.provider, ITEM, CRIT, options)
    assert result.status == "unparsed" and result.score is None and "empty" in result.error
    assert len(ladder_store(options)) == 0


async def test_unreadable_comparison_gives_no_score():
    def rule(request):
        text = as_text(request.messages)
        return "Maybe." if "Target Summary" in text else "some rung"

    provider = ScriptedProvider(rule, capabilities=Capabilities())
    options = ScorerOptions(settings=EstimationSettings(samples=2), extra={"rungs": 2})
    result = await score(provider, ITEM, CRIT, options)
    assert result.status == "unparsed" and result.score is None


async def test_bad_input():
    judge = LadderJudge([(0.2, 0.2, 0.6)] * 2, 2)
    with pytest.raises(InputError, match="source"):
        await score(judge.provider, JudgeItem(output="x"), CRIT, ScorerOptions())
    with pytest.raises(InputError, match="rungs"):
        await score(judge.provider, ITEM, CRIT, ScorerOptions(extra={"rungs": 1}))
    with pytest.raises(InputError, match="prediction"):
        await score(judge.provider, ITEM, CRIT, ScorerOptions(extra={"prediction": "stars"}))
    assert judge.generated == []


def test_registry_finds_the_scorer():
    assert scorer_for("synthetic") is score


# -- end to end on the embedded model -------------------------------------------------------------

TINY = JudgeItem(output="Tom fed the cat.", source="Tom fed the cat at noon.")
SMALL = {"rungs": 2, "rung_max_tokens": 8}


def check(result, n):
    assert result.status in ("ok", "low_coverage", "unparsed")
    if result.score is not None:
        assert abs(result.score) <= n * (n + 1) / 2
    else:
        assert result.status == "unparsed"


@pytest.mark.integration
async def test_local_synthetic_end_to_end(local):
    options = ScorerOptions(extra=dict(SMALL))
    result = await score(local, TINY, CRIT, options)
    check(result, 2)
    assert result.provider == "local"
    if result.error is None:
        assert result.method == "synthetic/exact" and len(ladder_store(options)) == 1


@pytest.mark.integration
async def test_server_synthetic_through_openai_completions(llama_server):
    from judgesdk.providers.openai import OpenAIProvider

    provider = OpenAIProvider(model=llama_server.model, base_url=llama_server.base_url, api="completions")
    settings = EstimationSettings(max_tokens=1, samples=2, on_low_coverage="flag")  # one answer token: cheap server logprobs
    options = ScorerOptions(settings=settings, extra={"rungs": 2, "rung_max_tokens": 4, "prediction": "yesno"})
    result = await score(provider, TINY, CRIT, options)
    check(result, 2)
    assert result.provider == "openai"
