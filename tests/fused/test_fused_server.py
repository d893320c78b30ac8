"""The fused judge through a server (issue 30, item 6): token log-likelihoods from an OpenAI-compatible server's
``echo`` are enough for a fit that asks no yes/no question, and a fit applies only when the config names the
served model file's sha256. The real server is in tests/integration/test_fused_server_llama.py."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from conftest import need
from fused.test_fused import _synthetic

from judgesdk.core.errors import CapabilityError, ConfigError, InputError
from judgesdk.core.types import Criterion, JudgeItem, Scale
from judgesdk.fused import model as fused_model
from judgesdk.fused.model import ModelIdentity
from judgesdk.fused.signals import extract
from judgesdk.fused.train import fit_file
from judgesdk.provider.protocol import Capabilities
from judgesdk.providers.scripted import ScriptedProvider, ScriptedReply
from judgesdk.scorers import fused
from judgesdk.scorers.common import ScorerOptions

COHERENCE = Criterion(name="coherence", description="well organised", scale=Scale.likert(1, 5))
SHA = "ab" * 32
SERVER = Capabilities(logprobs=True, max_top_logprobs=5, loglikelihood=True, exact_labels=False)  # an echo server


def _server(sha: str | None = SHA) -> ScriptedProvider:
    def answer(request):
        good = "faithful" in (request.continuation or "")
        return ScriptedReply(continuation_logprobs=[-0.5 if good else -3.0] * 40)

    provider = ScriptedProvider(answer, capabilities=SERVER)
    if sha is not None:
        provider.model_sha256 = sha  # type: ignore[attr-defined]
    return provider


def _fit(tmp_path, questions: bool = False):
    rows, y, docs = _synthetic()
    if questions:
        rows = [{**row, "yes_coherence": row["cond_mean"]} for row in rows]
    fitted = fit_file(rows, {"coherence": y}, docs, model=ModelIdentity(name="m", sha256=SHA), scales={"coherence": (1, 5)}, data={"dataset": "synthetic"})
    return fused_model.save(fitted, tmp_path / "fit.json")


def test_a_fit_without_questions_scores_through_log_likelihoods_alone(tmp_path):
    options = ScorerOptions(extra={"fused_model": str(_fit(tmp_path))})
    good = asyncio.run(fused.score(_server(), JudgeItem(output="a faithful summary", source="the article"), COHERENCE, options))
    bad = asyncio.run(fused.score(_server(), JudgeItem(output="an invented summary", source="the article"), COHERENCE, options))
    assert good.status == bad.status == "ok" and 1 <= bad.score < good.score <= 5
    assert good.details["fit"]["model_sha256"] == SHA


def test_a_fit_that_asks_questions_still_needs_exact_label_probabilities():
    with pytest.raises(CapabilityError, match="exact label probabilities"):
        asyncio.run(extract(_server(), JudgeItem(output="x", source="y"), questions=["coherence"]))
    evidence = asyncio.run(extract(_server(), JudgeItem(output="a faithful summary", source="y")))  # no question: fine
    assert evidence.conditional and set(evidence.conditional) == {-0.5} and evidence.unconditional


def test_a_server_whose_model_file_is_not_named_gets_no_fit(tmp_path):
    options = ScorerOptions(extra={"fused_model": str(_fit(tmp_path))})
    with pytest.raises(ConfigError, match="no model file"):
        asyncio.run(fused.score(_server(sha=None), JudgeItem(output="x", source="y"), COHERENCE, options))
    with pytest.raises(InputError, match="needs a fit"):  # no configured fit, and none shipped for an unnamed model
        asyncio.run(fused.score(_server(sha=None), JudgeItem(output="x", source="y"), COHERENCE, ScorerOptions()))


def test_the_openai_provider_carries_the_configured_model_sha256_into_fits_keys_and_provenance():
    need("openai")
    from judgesdk.judging.judge_config import load_config
    from judgesdk.provider.protocol import identity_of
    from judgesdk.provider.stack import bottom

    config = load_config({"providers": [{"kind": "openai", "model": "gemma", "api": "completions", "base_url": "http://127.0.0.1:9/v1",
                                         "options": {"model_sha256": SHA.upper()}}]})  # fmt: skip
    provider = bottom(config.providers[0])
    assert fused_model.model_sha256(provider) == SHA  # lower-cased, as file hashes are written
    assert SHA in identity_of(provider)  # another file behind the same name and URL keys other cache entries
    assert provider._response([], None).provenance["model_sha256"] == SHA
    plain = bottom(load_config({"providers": [{"kind": "openai", "model": "gemma", "api": "completions", "base_url": "http://127.0.0.1:9/v1"}]}).providers[0])
    assert fused_model.model_sha256(plain) is None and identity_of(plain) == ""
    with pytest.raises(ConfigError, match="sha256"):
        load_config({"providers": [{"kind": "openai", "model": "gemma", "options": {"model_sha256": "not-a-hash"}}]}).providers[0].options


def test_auto_chooses_fused_on_a_server_only_when_the_fit_applies(tmp_path):
    from judgesdk.scorers.auto import fused_unavailable

    item, fit = JudgeItem(output="a faithful summary", source="the article"), str(_fit(tmp_path))
    reason, found = fused_unavailable(_server(), item, COHERENCE, ScorerOptions(extra={"fused_model": fit}))
    assert reason is None and found is not None  # likelihoods from echo, the file named, a fit without questions
    reason, _ = fused_unavailable(_server(sha=None), item, COHERENCE, ScorerOptions())
    assert reason == "no fused fit for the model file of scripted"
    asking = json.loads(Path(fit).read_text())  # a fit that reads a yes/no margin (none shipped does)
    for model in (m for models in asking["criteria"].values() for m in models):
        model["features"].append("yes_coherence")
    (tmp_path / "asking.json").write_text(json.dumps(asking))
    reason, _ = fused_unavailable(_server(), item, COHERENCE, ScorerOptions(extra={"fused_model": str(tmp_path / "asking.json")}))
    assert reason is not None and "exact label probabilities" in reason
