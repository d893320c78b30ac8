"""``auto``'s ladder below the fused fits (issue 45): on a model file where ``geval`` was measured at chance, an item
no fit holds gets the overlap rung or ``refused``, each saying which and why, never a ``geval`` number; hosted
providers, other model files and a configured template keep ``geval``."""

from __future__ import annotations

import asyncio

from conftest import need

from judgesdk.core.types import Criterion, JudgeItem, Scale
from judgesdk.prompting import load_template
from judgesdk.provider import Capabilities
from judgesdk.providers.llamacpp import embedded_sha256
from judgesdk.providers.scripted import ScriptedProvider, ScriptedReply
from judgesdk.scorers import auto
from judgesdk.scorers.common import ScorerOptions

SHORT = JudgeItem(output="Paris is the capital of France.", source="What is the capital of France? Paris is its capital.")


def _criterion(name: str) -> Criterion:
    return Criterion(name=name, scale=Scale.likert(1, 5))


def _provider(sha: str | None, capabilities: Capabilities | None = None) -> ScriptedProvider:
    def answer(request):
        if request.labels is not None:
            return ScriptedReply(label_probs={"1": 0.1, "2": 0.1, "3": 0.2, "4": 0.3, "5": 0.3})
        return ScriptedReply(continuation_logprobs=[-1.0] * 30)

    provider = ScriptedProvider(answer, capabilities=capabilities) if capabilities else ScriptedProvider(answer)
    if sha:
        provider.model_sha256 = sha  # type: ignore[attr-defined]
    return provider


def _auto(provider, item: JudgeItem, criterion: str, options: ScorerOptions | None = None):
    return asyncio.run(auto.score(provider, item, _criterion(criterion), options or ScorerOptions()))


def test_on_the_embedded_model_file_a_short_item_gets_the_overlap_rung_with_its_figure_and_no_model_call():
    provider = _provider(embedded_sha256())
    result = _auto(provider, SHORT, "consistency")
    assert result.status == "ok" and result.method == "overlap/source" and 1.0 <= (result.score or 0) <= 5.0
    chosen = result.details["auto"]
    assert chosen["chose"] == "overlap" and chosen["fit"] is None and chosen["outside_domain"]
    assert chosen["rung"]["signal"] == "src_unigram_precision" and chosen["rung"]["shape"] == "short"
    assert chosen["rung"]["figure"]["ci"][0] > 0 and "geval" in chosen["not_chosen"]
    assert "geval is at chance" in result.notes[0] and "no fused fit holds" in result.notes[0] and "rho" in result.notes[0]
    assert "not calibrated" in result.notes[1] and result.details["calibration"].startswith("overlap ")
    assert provider.calls == []  # the fit search and the rung read the text only


def test_with_a_reference_relevance_reads_rouge1_recall_and_more_overlap_scores_higher():
    provider = _provider(embedded_sha256())
    good = _auto(provider, SHORT.model_copy(update={"reference": "Paris is the capital of France."}), "relevance")
    poor = _auto(provider, SHORT.model_copy(update={"reference": "Lyon hosts a large silk museum."}), "relevance")
    assert good.method == poor.method == "overlap/reference" and good.details["auto"]["rung"]["signal"] == "rouge1_recall"
    assert (good.score or 0) > (poor.score or 0)


def test_a_criterion_with_no_measured_rung_or_an_item_without_source_is_refused_saying_why():
    provider = _provider(embedded_sha256())
    for item, criterion, why in ((SHORT, "coherence", "no overlap signal was fixed"), (JudgeItem(output="Paris."), "relevance", "no source")):
        result = _auto(provider, item, criterion)
        assert result.status == "refused" and result.score is None and result.method == "auto/refused"
        assert result.details["auto"]["chose"] == "refused" and why in result.notes[0] and "geval is at chance" in result.notes[0]
    rows = auto.summary_rows([_auto(provider, SHORT, "coherence"), _auto(provider, SHORT, "consistency")])
    assert rows[1][0].startswith("outside every fit") and "refused 1" in rows[1][1] and "overlap (src_unigram_precision) 1" in rows[1][1]


def test_other_model_files_hosted_providers_and_a_chosen_template_keep_geval():
    hosted = Capabilities(loglikelihood=False, logprobs=True, exact_labels=True)
    template = ScorerOptions(template=load_template("direct.human_guideline"))
    for provider, options in ((_provider("d" * 64), None), (_provider(None), None), (_provider(embedded_sha256(), hosted), None),
                              (_provider(embedded_sha256()), template)):  # fmt: skip
        result = _auto(provider, SHORT, "coherence", options)
        assert result.method.startswith("geval/") and result.details["auto"]["chose"] == "geval", result.notes


def test_the_embedded_model_gives_a_short_item_outside_every_fit_the_rung_or_refused_never_geval(gguf_path):
    """With the real embedded model through ``Judge`` (no model call is needed to decide, so this is quick)."""
    need("llama_cpp")
    from judgesdk.judging.judge import Judge

    with Judge.from_config({"providers": [{"kind": "local"}], "cache": {"enabled": False}}) as judge:
        results = judge.score_many([SHORT.model_dump(exclude_none=True)], criterion=["consistency", "coherence"])
    parts = [p for r in results for p in (r.parts.values() if r.parts else [r])]
    assert {p.details["auto"]["chose"] for p in parts} == {"overlap", "refused"}
    for part in parts:
        assert not part.method.startswith("geval") and "geval is at chance" in part.notes[0], part
        assert part.details["auto"]["rung"]["why"] and part.details["auto"]["why"]
