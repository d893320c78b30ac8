"""The overlap rung (issue 45): model-free overlap signals on hand-computed cases, the per-document figure, the
score map, the rule for when the rung answers, and the measured data files (no row of the default comes from a
method measured at chance on its model)."""

from __future__ import annotations

import json
from importlib import resources

import numpy as np
import pytest

from judgesdk.fused import OVERLAP_SIGNS, RUNG_SIGNALS, at_chance, decide, figure, item_shape, overlap_signals, to_scale
from judgesdk.fused import model as fused_model
from judgesdk.fused.overlap import LONG_SHAPES, REFERENCE_OVERLAP_SIGNALS, SOURCE_OVERLAP_SIGNALS, group_rhos, holds, names_and_numbers, rungs, sentences
from judgesdk.providers.llamacpp import embedded_sha256


def _data(name: str) -> dict:
    return json.loads(resources.files("judgesdk.fused.data").joinpath(name).read_text())


# -- signals, hand-computed --------------------------------------------------------------------------------------


def test_source_signals_count_shared_words_content_words_and_novel_names():
    # output words: the cat sat on a mat (3 of 6 in the source); content words cat sat mat (2 of 3)
    values = overlap_signals("The cat sat on a mat.", "the cat sat", None)
    assert values == {"src_unigram_precision": 0.5, "src_content_precision": pytest.approx(2 / 3), "src_novel_names": 0.0}
    # names and numbers: Paris (in the source) and 2024 (not): half are novel; "The" opening a sentence is no name
    assert names_and_numbers("The games in Paris began in 2024.") == ["paris", "2024"]
    assert overlap_signals("The games in Paris began in 2024.", "Paris hosted the games.", None)["src_novel_names"] == 0.5


def test_reference_signals_are_clipped_rouge_and_distinct_recalls():
    values = overlap_signals("the cat sat on the mat", None, "the cat lay on the mat")
    assert set(values) == set(REFERENCE_OVERLAP_SIGNALS)
    # clipped unigrams shared: the x2, cat, on, mat = 5 of 6 on either side
    assert values["rouge1_recall"] == pytest.approx(5 / 6) and values["ref_unigram_precision"] == pytest.approx(5 / 6)
    assert values["ref_unigram_recall"] == pytest.approx(4 / 5)  # distinct reference words: the cat lay on mat
    assert values["ref_bigram_precision"] == pytest.approx(3 / 5) and values["ref_bigram_recall"] == pytest.approx(3 / 5)
    assert values["ref_content_recall"] == pytest.approx(2 / 3)  # cat, mat of cat, lay, mat


def test_empty_sides_give_no_signal_or_zero_never_nan():
    assert overlap_signals("Anything at all.", None, "  ") == {}
    values = overlap_signals("of the a", "the source", "the reference")  # no content words, no names
    assert values["src_content_precision"] == 0.0 and values["src_novel_names"] == 0.0 and values["ref_content_recall"] == 0.0
    assert all(np.isfinite(v) for v in values.values())


def test_signs_are_fixed_for_every_signal_and_the_rung_reads_only_those():
    assert set(OVERLAP_SIGNS) == set(SOURCE_OVERLAP_SIGNALS) | set(REFERENCE_OVERLAP_SIGNALS)
    assert all(sign in (-1, 1) for sign in OVERLAP_SIGNS.values()) and OVERLAP_SIGNS["src_novel_names"] == -1
    assert set(RUNG_SIGNALS.values()) <= set(OVERLAP_SIGNS)
    assert all(signal in SOURCE_OVERLAP_SIGNALS for (_, variant), signal in RUNG_SIGNALS.items() if variant == "source")
    assert RUNG_SIGNALS[("relevance", "reference")] == "rouge1_recall"


# -- the figure, the shapes, the score map -----------------------------------------------------------------------


def test_the_figure_averages_per_document_spearman_and_a_tied_signal_counts_zero():
    codes = np.array([0, 0, 0, 1, 1, 1, 2, 2])  # group 2 has 2 items: left out
    y = np.array([1, 2, 3, 3, 2, 1, 1, 2], dtype=float)
    assert list(group_rhos(np.array([1, 2, 3, 5, 5, 5, 0, 1.0]), y, codes)) == [1.0, 0.0]
    row = figure(np.array([1, 2, 3, 1, 2, 3, 0, 1.0]), y, codes, n_boot=200)
    assert row["n_docs"] == 2 and row["n_items"] == 8 and row["rho"] == 0.0 and row["ci"] == [-1.0, 1.0]
    assert figure(np.array([1.0, 2, 3]), np.array([1.0, 2, 3]), np.array([0, 0, 0]))["rho"] is None  # one group: no interval


def test_shapes_and_the_score_map():
    assert sentences("One. Two! Three? four") == ["One.", "Two!", "Three?", "four"]
    assert item_shape("Paris.", "What is the capital of France?") == "short"
    assert item_shape("A. B. C.", "What is the capital of France?") == "long"
    grid = rungs()["quantiles"]["src_unigram_precision"]
    low, mid, high = (to_scale("src_unigram_precision", v, 1, 5) for v in (0.0, grid[len(grid) // 2], 1.0))
    assert 1 <= low <= mid <= high <= 5 and low < high
    # a signal whose sign is -1 runs the other way: more novel names, a lower score
    assert to_scale("src_novel_names", 0.0, 1, 5) >= to_scale("src_novel_names", 1.0, 1, 5)


def test_the_rung_answers_only_where_its_measured_interval_lies_above_zero():
    answered = decide("faithfulness", "Paris is the capital.", "Paris is the capital of France.", None)
    assert answered.criterion == "consistency" and answered.signal == "src_unigram_precision" and answered.shape == "short"
    assert answered.figure is not None and answered.figure["ci"][0] > 0
    assert decide("coherence", "Paris.", "What is the capital of France?", None).signal is None  # no signal fixed for it
    assert "no source" in decide("relevance", "Paris.", None, "Paris.").why
    assert "grounding fact" in decide("relevance", "Paris.", "Where to?", None, context="Paris is in France.").why  # never measured
    row = {"ci": [-0.1, 0.2]}
    assert not holds(row) and not holds({"ci": [0.1, 0.2], "contradicted_by": ["hanna"]}) and holds({"ci": [0.01, 0.2]})


# -- the data files ----------------------------------------------------------------------------------------------


def test_the_rung_file_is_versioned_with_its_command_and_a_figure_per_rung_and_shape():
    data = _data("overlap_rungs.json")
    assert data["format"] == "judgesdk.overlap-rungs/1" and "benchmarks/overlap_rungs.py" in data["command"]
    assert data["signs"] == OVERLAP_SIGNS
    for criterion, variant in RUNG_SIGNALS:
        for shape in ("short", *LONG_SHAPES):
            row = data["rungs"][f"{criterion}/{variant}/{shape}"]
            assert row["signal"] == RUNG_SIGNALS[(criterion, variant)] and row["n_docs"] >= 2 and len(row["ci"]) == 2
    for row in data["rows"]:
        if row["rung"] == "lodo":  # chosen on the other datasets, never on the one it is reported on
            assert row["dataset"] not in row["chosen_on"] and row["chosen_on"]
    assert fused_model.bundled() and all(f.domain for f in fused_model.bundled())  # the data files are no fits


def test_no_answer_of_the_default_comes_from_a_method_measured_at_chance_on_its_model():
    """Over the ladder's data (issue 45): every method a fallbacks entry marks at chance was measured so (its
    figures near 0), and the rung ``auto`` answers with instead holds wherever it is allowed to answer."""
    entries = _data("fallbacks.json")["entries"]
    assert entries and entries[0]["model_sha256"] == embedded_sha256() and entries[0]["method"] == "geval"
    for entry in entries:
        if entry["at_chance"]:
            assert at_chance(entry["model_sha256"], entry["method"]) is not None and entry["source"]
            assert all(abs(rho) < 0.05 for rho in entry["figures"]["per_doc_spearman"].values())
    assert at_chance(None, "geval") is None and at_chance("0" * 64, "geval") is None
    for key in _data("overlap_rungs.json")["rungs"]:
        criterion, variant, shape = key.split("/")
        output = "Paris is the capital." if shape == "short" else "Paris is. The capital. Of France."
        found = decide(criterion, output, "Paris is the capital of France.", "Paris." if variant == "reference" else None)
        if found.signal is not None:
            assert found.figure is not None and found.figure["ci"][0] > 0 and not found.figure.get("contradicted_by"), key
