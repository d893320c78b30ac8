"""Where a fused fit holds (issue 27): domains and their envelopes, the fit chosen per item, the reference
variant, declined criteria, intervals recalibrated on out-of-fold residuals, and format 1 still read."""

from __future__ import annotations

import asyncio
import json
import math

import numpy as np
import pytest

from judgesdk.core.errors import ConfigError, InputError
from judgesdk.core.types import Criterion, JudgeItem, Scale
from judgesdk.fused import model as fused_model
from judgesdk.fused.domains import envelope, shape
from judgesdk.fused.fit import conformal_bins, cross_calibrated, fit_criterion, group_codes, interval_of, monotone_map
from judgesdk.fused.model import ModelIdentity
from judgesdk.fused.signals import extract
from judgesdk.fused.train import fit_file
from judgesdk.meta.datasets import shared_data_dir
from judgesdk.provider.protocol import as_text
from judgesdk.providers.scripted import ScriptedProvider, ScriptedReply
from judgesdk.scorers import auto, fused
from judgesdk.scorers.common import ScorerOptions

SHA = "d" * 64
ARTICLE = " ".join(f"Word{i % 97} sentence {i} of the long article about the harbour and its boats." for i in range(40))
SUMMARY = "Word1 sentence of the article about the harbour and its boats, Word2 and Word3."
PROMPT = "A dragon wakes up in a library and must find the book that tells how it ends."
STORY = " ".join(f"The dragon walked past shelf {i} and read a page about knights, rain and old songs." for i in range(14))
HISTORY = "do you like jazz?\ni do, especially the old records from new orleans.\nme too, have you been there?"
FACT = "New Orleans is known as the birthplace of jazz and hosts a large festival every spring."
RESPONSE = "yes, i went to the jazz festival in new orleans last spring, it was great."


def _criterion(name: str) -> Criterion:
    return Criterion(name=name, scale=Scale.likert(1, 5))


# -- shapes and envelopes ----------------------------------------------------------------------------------


def _shapes(output: str, source: str, n: int = 40) -> list[dict[str, float]]:
    """Shapes around one item's: lengths spread by dropping words, so the fitted ranges have some width."""
    out, src = output.split(), source.split()
    return [shape(" ".join(out[: max(3, len(out) - i)]), " ".join(src[: max(3, len(src) - 2 * i)])) for i in range(n)]


def test_an_envelope_holds_its_own_kind_and_says_why_another_lies_outside():
    news = envelope(_shapes(SUMMARY, ARTICLE), context="absent")
    assert news.outside(shape(SUMMARY, ARTICLE), has_context=False) == []
    story = news.outside(shape(STORY, PROMPT), has_context=False)
    assert any("source of" in r for r in story) and any("output/source length ratio" in r for r in story)
    assert "grounding fact" in news.outside(shape(SUMMARY, ARTICLE), has_context=True)[0]
    # a much longer article is still news (margins), a 3-word answer to a question is not
    assert news.outside(shape(SUMMARY, ARTICLE + " " + ARTICLE), has_context=False) == []
    assert news.outside(shape("Paris.", "What is the capital of France?"), has_context=False)
    dialogue = envelope(_shapes(RESPONSE, HISTORY), context="required")
    assert dialogue.outside(shape(RESPONSE, HISTORY), has_context=True) == []
    assert "no grounding fact" in dialogue.outside(shape(RESPONSE, HISTORY), has_context=False)[0]


# -- a fit per domain, chosen per item ---------------------------------------------------------------------


def _rows(n_docs: int = 16, per_doc: int = 6, seed: int = 0, reference_signal: float = 0.0):
    """Synthetic signals whose label follows cond_mean (and, with ``reference_signal``, ref_f1_1 too)."""
    rng = np.random.default_rng(seed)
    rows, y, docs = [], [], []
    for d in range(n_docs):
        for _ in range(per_doc):
            good, extra = rng.normal(), rng.normal()
            row = {name: float(rng.normal()) for name in ("cond_low", "uncond_mean", "pmi_low", "log_tokens", "pmi_mean", "nofact_mean", "hist_pmi")}
            row.update(cond_mean=good, ref_f1_1=extra, ref_f1_2=float(rng.normal()), log_words=3.0, repeat_3=0.0)
            rows.append(row)
            y.append(float(np.clip(3 + good + reference_signal * extra + 0.3 * rng.normal(), 1, 5)))
            docs.append(f"doc{d}")
    return rows, y, docs


def _fit(tmp_path, domain: str, shapes, criteria=("coherence", "relevance"), name=None, **kwargs):
    rows, y, docs = _rows()
    fitted = fit_file(
        rows, {c: y for c in criteria}, docs, model=ModelIdentity(name="m", sha256=SHA), scales={c: (1, 5) for c in criteria},
        data={"dataset": f"synthetic-{domain}"}, domain=domain, shapes=shapes, **kwargs,
    )  # fmt: skip
    return fused_model.save(fitted, tmp_path / (name or f"{domain}.json"))


def _provider():
    def answer(request):
        if request.labels is not None:
            return ScriptedReply(label_probs={"1": 0.2, "2": 0.2, "3": 0.2, "4": 0.2, "5": 0.2})
        return ScriptedReply(continuation_logprobs=[-1.0] * 30)

    provider = ScriptedProvider(answer)
    provider.model_sha256 = SHA  # type: ignore[attr-defined]
    return provider


@pytest.fixture(scope="module")
def fit_files(tmp_path_factory):
    """News, dialogue and story fits for the scripted model (fitted once for the module)."""
    folder = tmp_path_factory.mktemp("fits")
    return [
        _fit(folder, "news", _shapes(SUMMARY, ARTICLE)),
        _fit(folder, "dialogue", _shapes(RESPONSE, HISTORY), criteria=("coherence", "engagingness")),
        _fit(folder, "story", _shapes(STORY, PROMPT)),
    ]


@pytest.fixture
def three_fits(fit_files, monkeypatch):
    """The three fits, as if bundled for the scripted model."""
    fits = [fused_model.load(p) for p in fit_files]
    monkeypatch.setattr("judgesdk.scorers.fused.bundled_for", lambda sha: fits if sha == SHA else [])  # where the scorer reads it
    return fits


def _auto(item: JudgeItem, criterion: str, provider=None):
    return asyncio.run(auto.score(provider or _provider(), item, _criterion(criterion), ScorerOptions()))


def test_auto_gives_each_task_its_own_fit_and_falls_back_outside_every_domain(three_fits):
    news = _auto(JudgeItem(output=SUMMARY, source=ARTICLE), "coherence")
    story = _auto(JudgeItem(output=STORY, source=PROMPT), "coherence")
    dialogue = _auto(JudgeItem(output=RESPONSE, source=HISTORY, context=FACT), "engagingness")
    answer = _auto(JudgeItem(output="Paris.", source="What is the capital of France?"), "relevance")
    assert [r.details["auto"]["domain"] for r in (news, story, dialogue)] == ["news", "story", "dialogue"]
    assert story.method == "fused/source" and story.details["fit"]["domain"] == "story"
    assert story.details["auto"]["fit"] == three_fits[2].label and "news" in story.details["auto"]["reasons"]
    assert answer.method.startswith("geval/") and answer.details["auto"] == {**answer.details["auto"], "chose": "geval", "fit": None, "outside_domain": True}
    assert "no fused fit applies to this item" in answer.notes[0] and "news fit:" in answer.notes[0] and "story fit:" in answer.notes[0]


def test_a_criterion_the_domain_fit_lacks_falls_back_without_borrowing_another_domains(three_fits):
    # relevance is in the news and story fits, not the dialogue fit: a dialogue response is never judged by those
    result = _auto(JudgeItem(output=RESPONSE, source=HISTORY, context=FACT), "relevance")
    assert result.method.startswith("geval/") and result.details["auto"]["outside_domain"] is False
    assert "no model for criterion 'relevance'" in result.notes[0]


def test_method_fused_outside_every_domain_scores_but_marks_it_for_review(three_fits):
    item = JudgeItem(output="Paris.", source="What is the capital of France?")
    result = asyncio.run(fused.score(_provider(), item, _criterion("coherence"), ScorerOptions()))
    assert result.details["outside_domain"] and result.details["outside_fit"]
    assert result.details["domain_reasons"] and any("outside the domain of the news fit" in n for n in result.notes)


@pytest.mark.skipif(shared_data_dir() is None, reason="needs ../shared/data (HANNA, TopicalChat)")
def test_hanna_stories_topicalchat_responses_and_another_task_never_get_the_news_fit():
    """With the fits shipped for the embedded model: every HANNA story and TopicalChat response either gets its
    own domain's fit or falls back, saying which, and so does a task that is none of them (issue 27)."""
    from judgesdk.meta.datasets import load_dataset
    from judgesdk.meta.naturalize import natural
    from judgesdk.providers.llamacpp import embedded_sha256

    fits = fused_model.bundled_for(embedded_sha256())
    assert fits and fits[0].domain == "news" and fits[0].envelope is not None
    other = [JudgeItem(output="Die Katze schläft auf dem Sofa.", source="The cat sleeps on the sofa."),
             JudgeItem(output="Paris.", source="What is the capital of France?")]  # fmt: skip
    for dataset, criteria, allowed in (("hanna", ("coherence", "relevance"), {"story"}), ("topicalchat", ("coherence", "naturalness"), {"dialogue"})):
        items = [JudgeItem(output=r.output, source=r.source, context=r.context) for r in map(natural, load_dataset(dataset))]
        for criterion in criteria:
            chosen = [fused.choose(fits, item, _criterion(criterion)) for item in items]
            domains = {c.fitted.domain if c.fitted else "fallback" for c in chosen}
            assert domains <= allowed | {"fallback"}, (dataset, criterion, domains)
            assert all(c.fitted is not None or c.reasons for c in chosen)  # a fallback says why
    for item in other:
        assert fused.choose(fits, item, _criterion("relevance")).fitted is None


@pytest.mark.skipif(shared_data_dir() is None, reason="needs ../shared/data (HANNA, TopicalChat)")
def test_auto_rows_on_real_stories_dialogue_and_another_task_name_their_fit_or_fallback_and_never_news(tmp_path, monkeypatch):
    """Under ``auto`` with the fits shipped for the embedded model (served here by a scripted provider that states
    the embedded file's sha256): every results row written for HANNA stories (coherence, relevance), TopicalChat
    responses (coherence, naturalness) and a task that is none of them names the fit or the rung it used, and
    none names the news fit (issue 27). ``geval`` is at chance on that model, so a row no fit holds comes from the
    overlap rung or is ``refused``, saying why, never from ``geval`` (issue 45)."""
    from judgesdk.meta.datasets import load_dataset
    from judgesdk.meta.naturalize import natural
    from judgesdk.providers.llamacpp import embedded_sha256
    from judgesdk.records import row_for
    from judgesdk.records.results import read_results

    sha = embedded_sha256()
    fits = fused_model.bundled_for(sha)
    assert fits and fits[0].domain == "news"
    provider = _provider()
    provider.model_sha256 = sha  # type: ignore[attr-defined]
    cases = [("hanna", c) for c in ("coherence", "relevance")] + [("topicalchat", c) for c in ("coherence", "naturalness")]
    lines, expected = [], {}
    for dataset, criterion in cases:
        records = [natural(r) for r in load_dataset(dataset)[:12]]  # the first one or two prompts/conversations, every system
        for r in records:
            result = _auto(JudgeItem(output=r.output, source=r.source, context=r.context), criterion, provider)
            key = f"{dataset}:{r.doc_id}:{r.system_id}:{criterion}"
            lines.append(json.dumps(row_for(result, key, extra={"dataset": dataset})) + "\n")
            expected[key] = {"hanna": "story", "topicalchat": "dialogue"}[dataset]
    for n, (output, source) in enumerate([("Die Katze schläft auf dem Sofa.", "The cat sleeps on the sofa."), ("Paris.", "What is the capital of France?")]):
        result = _auto(JudgeItem(output=output, source=source), "relevance", provider)
        lines.append(json.dumps(row_for(result, f"other:{n}", extra={"dataset": "other"})) + "\n")
        expected[f"other:{n}"] = None
    path = tmp_path / "results.jsonl"
    path.write_text("".join(lines))
    rows = read_results(path).rows
    assert len(rows) == len(expected) == 4 * 12 + 2
    for row in rows:
        chosen = row.details["auto"]
        assert chosen["chose"] in ("fused", "overlap", "refused"), row.id
        assert chosen["domain"] != "news" and (row.details.get("fit") or {}).get("domain") != "news", row.id
        if chosen["chose"] == "fused":
            assert chosen["fit"] and chosen["domain"] == expected[row.id] and row.details["fit"]["domain"] == expected[row.id], row.id
        else:
            assert chosen["fit"] is None and chosen["why"] and "geval is at chance" in row.notes[0] and chosen["rung"]["why"], row.id
            assert (row.method.startswith("overlap/") and row.status == "ok") or (row.method == "auto/refused" and row.score is None), row.id
    assert all(row.details["auto"]["chose"] in ("overlap", "refused") for row in rows if row.id.startswith("other:"))


def test_every_row_names_its_fit_or_fallback_on_real_stories_under_auto(three_fits):
    provider = _provider()
    for item in (JudgeItem(output=STORY, source=PROMPT), JudgeItem(output="x y z", source=PROMPT)):
        for criterion in ("coherence", "relevance"):
            result = _auto(item, criterion, provider)
            chosen = result.details["auto"]
            assert chosen["chose"] in ("fused", "geval") and (chosen["fit"] or chosen["why"])
            assert chosen["domain"] != "news"


# -- signals per domain ------------------------------------------------------------------------------------


def test_each_domain_reads_its_own_prompts_and_dialogue_needs_its_fact():
    provider = _provider()
    asyncio.run(extract(provider, JudgeItem(output=STORY, source=PROMPT), domain="story"))
    assert as_text(provider.calls[0].messages).startswith("Writing prompt: ") and as_text(provider.calls[0].messages).endswith("Story:")
    provider.calls.clear()
    evidence = asyncio.run(extract(provider, JudgeItem(output=RESPONSE, source=HISTORY, context=FACT), domain="dialogue", without_context=True))
    texts = [as_text(c.messages) for c in provider.calls]
    assert FACT in texts[0] and FACT not in texts[1] and HISTORY in texts[1] and texts[2] == "Response:"
    assert evidence.domain == "dialogue" and evidence.without_context is not None
    with pytest.raises(InputError, match="grounding fact"):
        asyncio.run(extract(provider, JudgeItem(output=RESPONSE, source=HISTORY), domain="dialogue"))


# -- the reference variant ---------------------------------------------------------------------------------


def test_the_reference_variant_ships_where_it_beats_source_only_and_is_chosen_when_an_item_has_a_reference(tmp_path):
    rows, y, docs = _rows(n_docs=20, reference_signal=1.0)
    identity = ModelIdentity(name="m", sha256=SHA)
    fitted = fit_file(rows, {"relevance": y}, docs, model=identity, scales={"relevance": (1, 5)}, data={}, reference_variant=True)
    variants = [m.variant for m in fitted.criteria["relevance"]]
    assert variants == ["source", "source+reference"]
    assert fitted.criteria["relevance"][1].cv["per_doc_spearman"] > fitted.criteria["relevance"][0].cv["per_doc_spearman"]
    assert fitted.for_criterion("relevance", has_reference=True).variant == "source+reference"
    assert fitted.for_criterion("relevance", has_reference=False).variant == "source"
    # where the reference carries nothing, the variant is measured, declined, and items with a reference get source-only
    rows, y, docs = _rows(n_docs=20, reference_signal=0.0)
    for row in rows:
        row["ref_f1_1"] = row["ref_f1_2"] = 0.5
    plain = fit_file(rows, {"relevance": y}, docs, model=identity, scales={"relevance": (1, 5)}, data={}, reference_variant=True)
    assert [m.variant for m in plain.criteria["relevance"]] == ["source"]
    assert plain.declined[0].variant == "source+reference" and "not above source-only" in plain.declined[0].reason
    assert plain.for_criterion("relevance", has_reference=True).variant == "source"


def test_criteria_about_how_the_text_reads_never_read_the_reference_however_well_it_fits():
    """A reference says what to cover, not whether this summary reads well: coherence and fluency get no
    source+reference variant even where the labels follow the reference's overlap (on SummEval coherence gained
    0.017 from it, on NewsRoom it lost 0.093: priors.READS_ALONE). Relevance, with the same labels, gets it;
    the declined variant keeps its figures."""
    rows, y, docs = _rows(n_docs=20, reference_signal=1.0)
    fitted = fit_file(rows, {"coherence": y, "fluency": y, "relevance": y}, docs, model=ModelIdentity(name="m", sha256=SHA),
                      scales={c: (1, 5) for c in ("coherence", "fluency", "relevance")}, data={}, reference_variant=True)  # fmt: skip
    assert [m.variant for m in fitted.criteria["relevance"]] == ["source", "source+reference"]
    for name in ("coherence", "fluency"):
        assert [m.variant for m in fitted.criteria[name]] == ["source"]
        assert fitted.for_criterion(name, has_reference=True).variant == "source"
        (declined,) = [d for d in fitted.declined if d.criterion == name]
        assert declined.variant == "source+reference" and "how the text reads" in declined.reason
        assert declined.cv["per_doc_spearman"] > fitted.criteria[name][0].cv["per_doc_spearman"]  # it would have won on these labels


def test_auto_picks_the_reference_variant_for_an_item_with_a_reference(tmp_path):
    rows, y, docs = _rows(n_docs=20, reference_signal=1.0)
    fitted = fit_file(rows, {"relevance": y}, docs, model=ModelIdentity(name="m", sha256=SHA), scales={"relevance": (1, 5)}, data={},
                      reference_variant=True, shapes=_shapes(SUMMARY, ARTICLE))  # fmt: skip
    options = ScorerOptions(extra={"fused_model": str(fused_model.save(fitted, tmp_path / "fit.json"))})
    with_ref = asyncio.run(auto.score(_provider(), JudgeItem(output=SUMMARY, source=ARTICLE, reference="Word1 sentence about boats."), _criterion("relevance"), options))
    without = asyncio.run(auto.score(_provider(), JudgeItem(output=SUMMARY, source=ARTICLE), _criterion("relevance"), options))
    assert with_ref.method == "fused/source+reference" and "ref_f1_1" in with_ref.details["signals"]
    assert without.method == "fused/source"


# -- declined criteria -------------------------------------------------------------------------------------


def test_a_criterion_without_usable_signal_is_declined_and_auto_says_so(tmp_path, monkeypatch):
    rows, y, docs = _rows(n_docs=20)
    noise = list(np.random.default_rng(5).uniform(1, 5, len(y)))
    fitted = fit_file(rows, {"coherence": y, "surprise": noise}, docs, model=ModelIdentity(name="m", sha256=SHA),
                      scales={"coherence": (1, 5), "surprise": (1, 5)}, data={}, domain="story", shapes=_shapes(STORY, PROMPT),
                      ship="beats-single")  # fmt: skip
    assert set(fitted.criteria) == {"coherence"}
    assert fitted.declined[0].criterion == "surprise" and fitted.declined[0].cv["per_doc_spearman"] is not None
    monkeypatch.setattr("judgesdk.scorers.fused.bundled_for", lambda sha: [fitted])
    result = _auto(JudgeItem(output=STORY, source=PROMPT), "surprise")
    assert result.method.startswith("geval/") and "surprise:" in result.notes[0] and ("no usable signal" in result.notes[0] or "does not beat" in result.notes[0])


def test_prior_signs_of_zero_leave_that_weight_free():
    rng = np.random.default_rng(1)
    rows, y, docs = [], [], []
    for d in range(20):
        for _ in range(6):
            a, b = rng.normal(), rng.normal()
            rows.append({"a": a, "b": b})
            y.append(float(np.clip(3 + a - b, 1, 5)))
            docs.append(f"d{d}")
    groups = {"both": ("a", "b")}
    free = fit_criterion(rows, y, docs, criterion="x", variant="source", low=1, high=5, signs={"a": 1, "b": 0}, feature_groups=groups)
    held = fit_criterion(rows, y, docs, criterion="x", variant="source", low=1, high=5, signs={"a": 1, "b": 1}, feature_groups=groups)
    assert free.model.coef[1] < 0 and held.model.coef[1] == 0
    assert free.model.cv["per_doc_spearman"] > held.model.cv["per_doc_spearman"]


# -- intervals ---------------------------------------------------------------------------------------------


def test_conformal_bins_cover_new_exchangeable_items_at_the_level_and_widen_where_humans_disagree():
    rng = np.random.default_rng(0)

    def draw(n):
        pred = rng.uniform(1, 5, n)
        noise = np.where(pred < 3, 1.0, 0.2)  # low scores: more disagreement
        return pred, pred + noise * rng.normal(size=n)

    pred, y = draw(3000)
    edges, bounds = conformal_bins(pred, y, 0.8, 3)
    new_pred, new_y = draw(20000)
    intervals = np.array([interval_of(p, edges, bounds, -np.inf, np.inf) for p in new_pred])
    covered = (intervals[:, 0] <= new_y) & (new_y <= intervals[:, 1])
    assert 0.78 < covered.mean() < 0.83
    widths = [hi - lo for lo, hi in bounds]
    assert widths[0] > 2 * widths[-1]


def test_calibrating_out_of_fold_gives_residuals_as_wide_as_on_new_items():
    """A monotone map fitted on the items it is applied to has learnt their noise: its residuals are narrower
    than a new item's. Fitted on the other folds, they are not."""
    rng = np.random.default_rng(2)
    linear = rng.normal(size=400)
    y = np.clip(3 + linear + rng.normal(size=400), 1, 5)
    codes = group_codes([f"d{i // 4}" for i in range(400)])
    xs, ys = monotone_map(linear, y)
    in_sample = np.interp(linear, xs, ys)
    out_of_fold = cross_calibrated(linear, y, codes, 4, 0, 1.0, 5.0)
    assert np.mean(np.abs(out_of_fold - y)) > np.mean(np.abs(in_sample - y))


def test_nested_cv_reports_how_often_the_interval_held_and_the_model_uses_its_bins():
    rows, y, docs = _rows(n_docs=40)
    fitted = fit_criterion(rows, y, docs, criterion="coherence", variant="source", low=1, high=5, interval_bins=2)
    cv = fitted.model.cv
    assert cv["interval_items"] == len(y) and 0.6 < cv["interval_coverage"] < 0.95
    inside = (fitted.intervals[:, 0] <= np.array(y)) & (np.array(y) <= fitted.intervals[:, 1])
    assert cv["interval_coverage"] == pytest.approx(inside.mean(), abs=1e-4)
    model = fitted.model
    assert len(model.interval_bounds) == len(model.interval_edges) + 1 == 2
    score, (lo, hi) = model.predict(rows[0])
    assert lo <= score <= hi and (lo, hi) == model.interval_at(score)


# -- the file format ---------------------------------------------------------------------------------------


def test_format_1_files_still_load_as_unchecked_news_fits_and_unknown_ones_fail_clearly(tmp_path):
    path = _fit(tmp_path, "news", None)
    raw = json.loads(path.read_text())
    for key in ("domain", "envelope", "declined"):
        raw.pop(key)
    for variants in raw["criteria"].values():
        for model in variants:
            model.pop("interval_edges"), model.pop("interval_bounds")
    raw["format"] = "judgesdk.fused/1"
    path.write_text(json.dumps(raw))
    old = fused_model.load(path)
    assert old.domain == "news" and old.envelope is None
    model = old.criteria["coherence"][0]
    score, (lo, hi) = model.predict({**_rows()[0][0]})
    assert (lo, hi) == (max(1, score - model.interval[1]), min(5, score - model.interval[0]))
    raw["format"] = "judgesdk.fused/3"
    path.write_text(json.dumps(raw))
    with pytest.raises(ConfigError, match="judgesdk.fused/2"):
        fused_model.load(path)
    raw["format"], raw["domain"] = "judgesdk.fused/2", "poetry"
    path.write_text(json.dumps(raw))
    with pytest.raises(ConfigError, match="domain 'poetry'"):
        fused_model.load(path)


def test_a_provider_that_states_the_files_hash_as_its_identity_gets_the_fit():
    provider = ScriptedProvider(lambda r: "x")
    assert fused_model.model_sha256(provider) is None
    provider.identity = f"sha256:{SHA}"  # type: ignore[attr-defined]
    assert fused_model.model_sha256(provider) == SHA
    provider.identity = "file:abc"  # type: ignore[attr-defined]
    assert fused_model.model_sha256(provider) is None


def test_shape_is_measured_in_words():
    values = shape("one two three", "a b c d e f g")
    assert values["output_words"] == pytest.approx(math.log1p(3)) and values["source_words"] == pytest.approx(math.log1p(7))
    assert values["novel_words"] == 1.0 and shape("", "a")["novel_words"] == 0.0


# -- the run summary and the judge card --------------------------------------------------------------------


def test_the_run_summary_and_the_card_count_fits_fallbacks_and_items_outside_the_domain(three_fits, tmp_path):
    from judgesdk.meta.card import JudgeIdentity, LabelledSet, build_card, criterion_card
    from judgesdk.meta.card_files import render_markdown
    from judgesdk.meta.datasets import HumanRecord
    from judgesdk.records import row_for
    from judgesdk.scorers.auto import summary_rows

    items = {
        ("d1", "news"): JudgeItem(output=SUMMARY, source=ARTICLE), ("d1", "story"): JudgeItem(output=STORY, source=PROMPT),
        ("d1", "answer"): JudgeItem(output="Paris.", source="What is the capital of France?"),
        ("d2", "news"): JudgeItem(output=SUMMARY + " More.", source=ARTICLE), ("d2", "story"): JudgeItem(output=STORY + " End.", source=PROMPT),
        ("d2", "answer"): JudgeItem(output="Rome.", source="What is the capital of Italy?"),
    }  # fmt: skip
    results = {key: _auto(item, "coherence") for key, item in items.items()}
    rows = dict(summary_rows(list(results.values())))
    assert rows["fused fits used"] == "news/source 2, story/source 2"
    assert rows["auto fell back to geval"].startswith("2 (outside every fit's domain: 2")
    path = tmp_path / "results.jsonl"
    path.write_text("".join(json.dumps(row_for(r, f"{d}:{s}", extra={"doc_id": d, "system_id": s})) + "\n" for (d, s), r in results.items()))
    human = [HumanRecord(doc_id=d, system_id=s, output=i.output, source=i.source, scores={"coherence": float(n % 5 + 1)}) for n, ((d, s), i) in enumerate(items.items())]
    section = criterion_card(human, "coherence", path, bootstrap=0)
    assert section.fits is not None and section.fits.fallback == 2 and section.fits.outside_domain == 2
    assert sorted(k.split(" ")[0] for k in section.fits.fits) == ["news/source", "story/source"]
    card = build_card("t", JudgeIdentity(method="auto"), LabelledSet(human_file="h", subset="all", n_items=6, n_documents=2, n_systems=3), [section])
    md = render_markdown(card)
    assert "### Fused fit and domain" in md and "outside every fit's domain 2" in md and "story/source" in md


def test_a_tokenized_dialogue_is_joined_turn_by_turn_with_its_fact():
    from judgesdk.meta.datasets import HumanRecord
    from judgesdk.meta.naturalize import natural

    record = HumanRecord(
        dataset="topicalchat", doc_id="t", system_id="s", source="i do n't know .\nhave you seen it ?\n\n", context="it 's ( mostly ) true .",
        output="i 'd like to .", scores={"overall": 3.0},
    )  # fmt: skip
    out = natural(record)
    assert out.source == "i don't know.\nhave you seen it?" and out.context == "it's (mostly) true." and out.output == "i'd like to."
