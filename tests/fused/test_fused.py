"""The fused local judge's logic: text features, natural text, nested CV, the fit file, the scorer and auto."""

from __future__ import annotations

import asyncio
import json
import math

import numpy as np
import pytest
from conftest import need

from judgesdk.core.errors import ConfigError, InputError
from judgesdk.core.types import Criterion, JudgeItem, Scale
from judgesdk.fused import model as fused_model
from judgesdk.fused.fit import fit_criterion, folds, group_codes, mean_group_spearman, monotone_map
from judgesdk.fused.model import ModelIdentity
from judgesdk.fused.signals import QUESTIONS, Evidence, extract, features, low_mean
from judgesdk.fused.text import precision, repetition, text_features, words
from judgesdk.fused.train import fit_file, signal_table
from judgesdk.provider.protocol import Capabilities
from judgesdk.providers.scripted import ScriptedProvider, ScriptedReply
from judgesdk.scorers import auto, fused
from judgesdk.scorers.common import ScorerOptions

COHERENCE = Criterion(name="coherence", description="well organised", scale=Scale.likert(1, 5))


# -- text features ------------------------------------------------------------------------------------


def test_ptb_and_natural_text_give_the_same_words_and_features():
    ptb = "the team 's coach did n't ( really ) win ."
    plain = "The team's coach didn't (really) win."
    assert words(ptb) == ["the", "team", "s", "coach", "did", "n", "t", "really", "win"]
    assert text_features(ptb, "The team's coach", None)["src_prec_1"] == pytest.approx(
        text_features(plain, "The team's coach", None)["src_prec_1"], abs=0.12
    )


def test_precision_repetition_and_empty_sides():
    assert precision(["a", "b", "c"], ["a", "b"], 1) == pytest.approx(2 / 3)
    assert precision([], ["a"], 1) == 0.0
    assert repetition(["a", "b", "c", "a", "b", "c", "a", "b", "c"], 3) == pytest.approx(4 / 7)
    assert repetition(["a", "b"], 3) == 0.0
    features_ = text_features("x", "source text", "reference")
    assert all(math.isfinite(v) for v in features_.values())
    assert {"ref_f1_1", "ref_f1_2", "src_prec_2", "lead_recall_2"} <= set(features_)


def test_natural_view_joins_ptb_tokens_and_recases_names_from_the_source():
    need("nltk")
    from judgesdk.meta.datasets import HumanRecord
    from judgesdk.meta.naturalize import natural

    record = HumanRecord(
        doc_id="d", system_id="s", scores={"coherence": 3.0},
        source="Paul Merson was at Burnley 's ground .", output="paul merson was at burnley 's ground .",
        source_untokenized="Paul Merson was at Burnley's ground.",
    )  # fmt: skip
    out = natural(record)
    assert out.source == "Paul Merson was at Burnley's ground."
    assert out.output == "Paul Merson was at Burnley's ground."
    assert out.scores == record.scores


# -- nested cross-validation --------------------------------------------------------------------------


def _synthetic(n_docs=30, per_doc=8, seed=0):
    rng = np.random.default_rng(seed)
    rows, y, docs = [], [], []
    for d in range(n_docs):
        level = rng.normal()
        for _ in range(per_doc):
            good, noise = rng.normal(), rng.normal()
            row = {name: rng.normal() for name in ("cond_low", "uncond_mean", "pmi_low", "log_tokens")}
            row.update(cond_mean=good + 0.3 * level, pmi_mean=noise)
            rows.append(row)
            y.append(float(np.clip(3 + good + 0.2 * rng.normal() + level, 1, 5)))
            docs.append(f"doc{d}")
    return rows, y, docs


def test_folds_never_split_a_document():
    codes = group_codes([f"d{i // 5}" for i in range(100)])
    masks = folds(codes, 5, seed=3)
    assert sum(m.sum() for m in masks) == 100
    for mask in masks:
        assert not set(codes[mask]) & set(codes[~mask])


def test_nested_cv_recovers_a_planted_signal_and_ships_a_monotone_calibration():
    rows, y, docs = _synthetic()
    fitted = fit_criterion(rows, y, docs, criterion="coherence", variant="source", low=1, high=5)
    model = fitted.model
    assert model.cv["per_doc_spearman"] > 0.8
    assert model.features[0] == "cond_mean" and "cond_mean" in model.features
    assert model.coef[model.features.index("cond_mean")] > 0
    assert all(b > a for a, b in zip(model.calibration_x, model.calibration_x[1:]))
    assert all(b >= a for a, b in zip(model.calibration_y, model.calibration_y[1:]))
    assert model.interval[0] < 0 < model.interval[1]
    low, high = model.calibrate(-1e9), model.calibrate(1e9)
    assert (low, high) == (1, 5)
    assert len(fitted.predictions) == len(y)


def test_monotone_map_keeps_distinct_scores_distinct():
    x = np.array([0.0, 1.0, 2.0, 3.0, 4.0])
    xs, ys = monotone_map(x, np.array([1.0, 3.0, 2.0, 4.0, 5.0]))
    assert ys == [1.0, 2.5, 4.0, 5.0]
    assert xs == [0.0, 1.5, 3.0, 4.0]


def test_per_document_spearman_counts_a_tied_prediction_as_zero_skips_tied_humans_and_pools_without_documents():
    pred = np.array([1.0, 2, 3, 1, 1, 1])
    y = np.array([1.0, 2, 3, 3, 2, 1])
    # the second document: the prediction ties all three outputs, the humans do not -> it ranks nothing there
    assert mean_group_spearman(pred, y, np.array([0, 0, 0, 1, 1, 1])) == pytest.approx(0.5)
    # humans tied in the second document: nothing to rank, so it is left out
    assert mean_group_spearman(pred, np.array([1.0, 2, 3, 2, 2, 2]), np.array([0, 0, 0, 1, 1, 1])) == pytest.approx(1.0)
    assert not math.isnan(mean_group_spearman(pred, y, np.arange(6)))


def test_a_signal_that_varies_in_one_document_is_not_the_best_single_signal():
    """A signal zero in all but one document, perfect there, once won the comparison the ship rule makes
    (HANNA's prompt-name recall: 0.70 over the 1 of 19 prompts where it varied)."""
    from judgesdk.fused.fit import best_single

    codes = np.repeat(np.arange(10), 5)
    y = np.tile([1.0, 2, 3, 4, 5], 10)
    sparse = np.where(codes == 0, y, 0.0)
    weak = y + np.random.default_rng(0).normal(0, 3, len(y))
    name, value = best_single({"sparse": sparse, "weak": weak}, y, codes)
    assert mean_group_spearman(sparse, y, codes) == pytest.approx(0.1)
    assert name == "weak" and value > 0.1


def test_fit_file_refuses_too_few_or_constant_labels(tmp_path):
    rows, y, docs = _synthetic(n_docs=4, per_doc=4)
    identity = ModelIdentity(name="m", sha256="abc")
    with pytest.raises(InputError, match="at least 10"):
        fit_file(rows[:5], {"coherence": y[:5]}, docs[:5], model=identity, scales={"coherence": (1, 5)}, data={})
    with pytest.raises(InputError, match="constant"):
        fit_file(rows, {"coherence": [3.0] * len(rows)}, docs, model=identity, scales={"coherence": (1, 5)}, data={})


def test_signal_table_reports_each_signal():
    rows, y, docs = _synthetic()
    table = signal_table(rows, y, docs)
    assert table["cond_mean"] > 0.5 and abs(table["pmi_mean"]) < 0.3


# -- the fit file and the scorer ------------------------------------------------------------------------


def _fit_file(tmp_path, sha="abc123"):
    rows, y, docs = _synthetic()
    fitted = fit_file(
        rows, {"coherence": y, "consistency": y}, docs, model=ModelIdentity(name="m", sha256=sha),
        scales={"coherence": (1, 5), "consistency": (1, 5)}, data={"dataset": "synthetic"},
    )  # fmt: skip
    return fused_model.save(fitted, tmp_path / "fit.json")


def _provider(sha: str | None = "abc123", **caps):
    def answer(request):
        if request.labels is not None:
            return ScriptedReply(label_probs={" yes": 0.6, " no": 0.4})
        good = "faithful" in (request.continuation or "")
        return ScriptedReply(continuation_logprobs=[-0.5 if good else -3.0] * 40)

    provider = ScriptedProvider(answer, capabilities=Capabilities(**caps) if caps else ScriptedProvider(answer).capabilities)
    if sha is not None:
        provider.model_sha256 = sha  # type: ignore[attr-defined]
    return provider


def test_fit_file_round_trips_and_refuses_another_format(tmp_path):
    path = _fit_file(tmp_path)
    loaded = fused_model.load(path)
    assert loaded.for_criterion("faithfulness", has_reference=False).criterion == "consistency"
    raw = json.loads(path.read_text())
    raw["format"] = "judgesdk.fused/99"
    path.write_text(json.dumps(raw))
    with pytest.raises(ConfigError, match="format"):
        fused_model.load(path)


def test_fused_scorer_scores_on_the_human_scale_with_interval_and_provenance(tmp_path):
    options = ScorerOptions(extra={"fused_model": str(_fit_file(tmp_path))})
    provider = _provider()
    good = asyncio.run(fused.score(provider, JudgeItem(output="a faithful summary", source="the article"), COHERENCE, options))
    bad = asyncio.run(fused.score(provider, JudgeItem(output="an invented summary", source="the article"), COHERENCE, options))
    assert good.status == "ok" and 1 <= bad.score < good.score <= 5
    low, high = good.details["interval"]
    assert low <= good.score <= high
    assert good.method == "fused/source" and good.details["fit"]["model_sha256"] == "abc123"
    assert set(good.details["signals"]) <= set(good.details["contributions"]) | set(good.details["signals"])


def test_fused_scorer_refuses_a_fit_made_for_another_model_file(tmp_path):
    options = ScorerOptions(extra={"fused_model": str(_fit_file(tmp_path, sha="other"))})
    with pytest.raises(ConfigError, match="refit it"):
        asyncio.run(fused.score(_provider(), JudgeItem(output="x", source="y"), COHERENCE, options))


def test_signals_need_a_source_and_a_local_model():
    with pytest.raises(InputError, match="source"):
        asyncio.run(extract(_provider(), JudgeItem(output="x")))
    with pytest.raises(Exception, match="local provider"):
        asyncio.run(extract(_provider(logprobs=True), JudgeItem(output="x", source="y")))


def test_evidence_features_are_derived_from_raw_token_logprobs():
    evidence = Evidence(conditional=[-1.0, -2.0, -9.0, -0.5, -1.5], unconditional=[-3.0] * 5, questions={"coherence": 0.4})
    values = features(evidence)
    assert values["cond_mean"] == pytest.approx(-2.8)
    assert values["cond_low"] == pytest.approx(-9.0) == low_mean(evidence.conditional)
    assert values["pmi_mean"] == pytest.approx(0.2)
    assert values["yes_coherence"] == 0.4 and "ref_mean" not in values
    assert set(QUESTIONS) == {"coherence", "consistency", "fluency", "relevance"}


# -- auto ------------------------------------------------------------------------------------------------


def _auto(provider, item, criterion=COHERENCE, **extra):
    return asyncio.run(auto.score(provider, item, criterion, ScorerOptions(extra=extra)))


def test_auto_uses_the_fit_where_it_applies_and_says_why_not_elsewhere(tmp_path):
    fit = str(_fit_file(tmp_path))
    item = JudgeItem(output="a faithful summary", source="the article")
    assert _auto(_provider(), item, fused_model=fit).method == "fused/source"

    hosted = _auto(_provider(logprobs=True, max_top_logprobs=5, exact_labels=False), item, fused_model=fit)
    assert hosted.method.startswith("geval/") and "no token likelihoods" in hosted.notes[0]

    no_source = _auto(_provider(), JudgeItem(output="x"), fused_model=fit)
    assert no_source.method.startswith("geval/") and "no source" in no_source.notes[0]

    other = _auto(_provider(), item, Criterion(name="engagingness", scale=Scale.likert(1, 5)), fused_model=fit)
    assert "no model for criterion 'engagingness'" in other.notes[0]

    dialogue = _auto(_provider(), JudgeItem(output="x", source="y", context="a fact"), fused_model=fit)
    assert "grounding fact" in dialogue.notes[0] and dialogue.details["auto"]["outside_domain"]


def test_auto_without_any_fit_for_the_model_falls_back_with_a_note():
    result = _auto(_provider(sha="no-such-model"), JudgeItem(output="x", source="y"))
    assert result.method.startswith("geval/") and "no fused fit" in result.notes[0]


def test_a_fused_score_outside_the_fitted_range_is_flagged_for_review(tmp_path):
    from judgesdk.meta.reliability import ItemSignals, review_flags

    options = ScorerOptions(extra={"fused_model": str(_fit_file(tmp_path))})
    # every token at -3 nats: below the 0.5 % quantile of the synthetic fit's cond_mean (about -2.7)
    result = asyncio.run(fused.score(_provider(), JudgeItem(output="unrelated words " * 20, source="the article"), COHERENCE, options))
    assert result.details["outside_fitted_range"], result.details
    flag = review_flags([ItemSignals.from_result("x", result)])[0]
    assert flag.needs_review is result.details["outside_fit"]
    assert any("needs review" in note for note in result.notes) is result.details["outside_fit"]
    result = result.model_copy(update={"details": {**result.details, "outside_fit": True}})
    flag = review_flags([ItemSignals.from_result("x", result)])[0]
    assert flag.needs_review and flag.reasons == ["outside_fit"]


def test_only_an_excursion_that_would_move_the_score_beyond_its_interval_needs_review():
    model = fused_model.CriterionModel(
        criterion="coherence", features=["a", "b"], center=[0.0, 0.0], spread=[1.0, 1.0], coef=[1.0, 0.0],
        intercept=3.0, calibration_x=[0.0, 6.0], calibration_y=[0.0, 6.0], low=1.0, high=5.0,
        interval=(-0.5, 0.5), fitted_range=[(-1.0, 1.0), (-1.0, 1.0)],
    )  # fmt: skip
    assert model.predict({"a": 3.0, "b": 0.0})[0] == pytest.approx(4.0)  # clipped to the edge of the fit
    assert model.extrapolation({"a": 3.0, "b": 0.0}) == pytest.approx(1.0)
    assert model.needs_review({"a": 3.0, "b": 0.0})  # 1.0 beyond: more than half the interval (0.5)
    assert model.outside({"a": 1.2, "b": 0.0}) == ["a"] and not model.needs_review({"a": 1.2, "b": 0.0})
    assert model.outside({"a": 0.0, "b": 50.0}) == ["b"] and not model.needs_review({"a": 0.0, "b": 50.0})  # weight 0


def test_auto_runs_the_prompted_method_when_a_template_is_configured(tmp_path):
    from judgesdk.prompting.templates import load_template

    options = ScorerOptions(extra={"fused_model": str(_fit_file(tmp_path))}, template=load_template("direct.likert"))
    result = asyncio.run(auto.score(_provider(), JudgeItem(output="a faithful summary", source="x"), COHERENCE, options))
    assert result.method.startswith("geval/") and "template" in result.notes[0]


# -- refit on the user's own labels (judgesdk calibrate --fused) -------------------------------------------


def _labelled(tmp_path, n=24, constant=False):
    lines = []
    for i in range(n):
        good = i % 3 != 0
        lines.append({
            "id": f"i{i}", "doc_id": f"d{i // 4}", "source": f"article {i // 4}",
            "output": ("a faithful summary " if good else "an invented summary ") + "x" * (i % 5),
            "scores": {"faithfulness": 3.0 if constant else (4.0 + 0.1 * (i % 4) if good else 1.5)},
        })  # fmt: skip
    path = tmp_path / "labels.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_refit_on_user_labels_gives_a_fit_for_this_model_and_each_signals_agreement(tmp_path):
    from judgesdk.fused.refitting import refit

    done = asyncio.run(refit(_provider(), _labelled(tmp_path), "faithfulness"))
    model = done.fitted.criteria["faithfulness"][0]
    assert done.fitted.model.sha256 == "abc123" and done.n_items == 24 and done.n_groups == 6
    assert model.cv["per_doc_spearman"] > 0.5 and model.low == 1.5 and model.high == 4.3
    assert done.signals["cond_mean"] > 0.5
    path = fused_model.save(done.fitted, tmp_path / "mine.json")
    result = asyncio.run(fused.score(_provider(), JudgeItem(output="a faithful summary", source="s"), Criterion(name="faithfulness"), ScorerOptions(extra={"fused_model": str(path)})))
    assert result.status == "ok" and result.score > 3


def test_refit_refuses_constant_labels_too_few_items_and_hosted_providers(tmp_path):
    from judgesdk.fused.refitting import refit

    with pytest.raises(InputError, match="constant"):
        asyncio.run(refit(_provider(), _labelled(tmp_path, constant=True), "faithfulness"))
    with pytest.raises(InputError, match="at least 10"):
        asyncio.run(refit(_provider(), _labelled(tmp_path, n=6), "faithfulness"))
    with pytest.raises(ConfigError, match="names by model_sha256"):
        asyncio.run(refit(_provider(sha=None), _labelled(tmp_path), "faithfulness"))


def test_calibrate_cli_needs_judge_results_or_fused(tmp_path, capsys):
    from judgesdk.cli import app as cli

    code = cli.main(["calibrate", "--human", str(_labelled(tmp_path)), "--dimension", "faithfulness", "-o", str(tmp_path / "c.json")])
    assert code == 3 and "--fused" in capsys.readouterr().err


def test_known_criteria_keep_the_prior_signs_and_drop_signals_without_one():
    """A signal planted with the wrong sign for coherence (more repeated trigrams = better) gets no weight
    against its prior; the same labels under a criterion we know nothing about are fitted free."""
    from judgesdk.fused.fit import PRIOR_SIGNS

    rows, y, docs = _synthetic()
    for row, label in zip(rows, y):
        row["repeat_3"] = label + np.random.default_rng(int(label * 1000)).normal() * 0.1
    signed = fit_criterion(rows, y, docs, criterion="coherence", variant="source", low=1, high=5).model
    weights = dict(zip(signed.features, signed.coef))
    assert weights.get("repeat_3", 0.0) == 0.0 and weights["cond_mean"] > 0
    assert "log_tokens" not in signed.features and "uncond_mean" not in signed.features
    assert all(w * PRIOR_SIGNS[f] >= 0 for f, w in weights.items()) and signed.choice["signs"] == "prior"
    free = fit_criterion(rows, y, docs, criterion="anything", variant="source", low=1, high=5, signs=None).model
    assert dict(zip(free.features, free.coef))["repeat_3"] > 0 and free.choice["signs"] == "free"
    identity = ModelIdentity(name="m", sha256="abc")
    fitted = fit_file(rows, {"faithfulness": y, "humour": y}, docs, model=identity, scales={"faithfulness": (1, 5), "humour": (1, 5)}, data={})
    assert fitted.criteria["faithfulness"][0].choice["signs"] == "prior" and fitted.criteria["humour"][0].choice["signs"] == "free"


def test_a_signed_model_extrapolates_monotonically_and_a_free_one_clips():
    """Beyond the fitted range a signed model keeps ranking (clipping tied every such output) and continues
    the calibration with the tail slope; a free model clips its signals to the range."""
    rows, y, docs = _synthetic()
    # a wide scale, so that what is tested is the extrapolation, not the clip to the scale
    signed = fit_criterion(rows, y, docs, criterion="coherence", variant="source", low=-10, high=10).model
    free = fit_criterion(rows, y, docs, criterion="anything", variant="source", low=-10, high=10, signs=None).model
    assert signed.extrapolate and not free.extrapolate and signed.tail_slope and signed.tail_slope > 0
    base = {name: 0.0 for name in signed.features}
    lowest = signed.fitted_range[signed.features.index("cond_mean")][0]
    worse, worst = ({**base, "cond_mean": lowest - 0.05}, {**base, "cond_mean": lowest - 0.1})
    assert signed.predict(worse)[0] > signed.predict(worst)[0] > -10
    first = signed.calibration_x[0]
    step = signed.calibrate(first - 0.1) - signed.calibrate(first - 0.2)
    assert step == pytest.approx(signed.tail_slope * 0.1)
    free_base = {name: 0.0 for name in free.features}
    low_free = free.fitted_range[free.features.index("cond_mean")][0]
    assert free.predict({**free_base, "cond_mean": low_free - 0.5})[0] == free.predict({**free_base, "cond_mean": low_free - 1.0})[0]


def test_only_the_named_criteria_read_the_pass_without_the_source():
    from judgesdk.fused.signals import UNCONDITIONAL_FEATURES

    rows, y, docs = _synthetic(n_docs=12)
    identity = ModelIdentity(name="m", sha256="abc")
    fitted = fit_file(rows, {"coherence": y, "consistency": y}, docs, model=identity, scales={"coherence": (1, 5), "consistency": (1, 5)},
                      data={}, without_source_for={"consistency"})  # fmt: skip
    assert not set(fitted.criteria["coherence"][0].features) & set(UNCONDITIONAL_FEATURES)
    assert "pmi_mean" in fitted.criteria["consistency"][0].features  # offered there (its weight is the fit's business)
