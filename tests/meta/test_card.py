"""Judge cards (issue 14, item 2): ``judgesdk card`` and :mod:`judgesdk.meta.card`.

The card's agreement figures must be ``judgesdk meta-eval``'s on the same files, its human ceiling must be
leave-one-annotator-out agreement computed from the annotator scores (checked against a hand computation),
and bad input must be a typed error (exit 3), never a traceback.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

from judgesdk.cli.app import build_parser, main
from judgesdk.cli.card import run_card
from judgesdk.meta.card import Card, human_ceiling
from judgesdk.meta.datasets import load_jsonl
from judgesdk.meta.items import ScoredItem
from judgesdk.provider.protocol import as_text
from judgesdk.providers.scripted import ScriptedProvider, ScriptedReply

# 3 documents x 4 systems, 3 annotators per item; the items' mean is the human score
ANNOTATORS = {
    ("d1", "A"): [1, 2, 1], ("d1", "B"): [3, 3, 4], ("d1", "C"): [4, 5, 5], ("d1", "D"): [2, 1, 3],
    ("d2", "A"): [2, 2, 3], ("d2", "B"): [5, 4, 4], ("d2", "C"): [3, 3, 2], ("d2", "D"): [1, 2, 2],
    ("d3", "A"): [4, 4, 5], ("d3", "B"): [2, 3, 3], ("d3", "C"): [1, 1, 2], ("d3", "D"): [5, 3, 4],
}  # fmt: skip
JUDGE = {
    ("d1", "A"): 1.5, ("d1", "B"): 3.2, ("d1", "C"): 4.1, ("d1", "D"): 3.0,
    ("d2", "A"): 2.2, ("d2", "B"): 3.9, ("d2", "C"): 3.1, ("d2", "D"): 1.0,
    ("d3", "A"): 3.5, ("d3", "B"): 3.4, ("d3", "C"): 1.2, ("d3", "D"): 4.8,
}  # fmt: skip


def _human(path: Path, annotators: bool = True) -> Path:
    lines = []
    for (doc, system), scores in ANNOTATORS.items():
        record = {
            "doc_id": doc, "system_id": system, "source": f"source of {doc}",
            "output": " ".join(["word"] * (3 + len(system) + int(sum(scores)))),  # lengths differ across items
            "scores": {"quality": sum(scores) / 3},
            "annotator_scores": {"quality": scores} if annotators else None,
        }  # fmt: skip
        lines.append(json.dumps(record))
    path.write_text("\n".join(lines) + "\n")
    return path


def _results(path: Path, **extra_by_key) -> Path:
    rows = []
    for (doc, system), score in JUDGE.items():
        rows.append(
            {
                "id": f"{doc}:{system}", "doc_id": doc, "system_id": system, "criterion": "quality", "method": "geval",
                "score": score, "status": "ok", "latency_s": 0.5, "usage": {"input_tokens": 100, "output_tokens": 2, "calls": 1},
                "provider": "scripted", "model": "scripted",
                **extra_by_key.get(f"{doc}:{system}", {}),
            }
        )  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _card_json(stem: Path) -> dict:
    return json.loads(stem.with_name(stem.name + ".json").read_text())


# -- the card's figures are meta-eval's --------------------------------------------------------------------


def test_card_agreement_equals_meta_eval_exactly(tmp_path, capsys):
    human, results, stem = _human(tmp_path / "human.jsonl"), _results(tmp_path / "results.jsonl"), tmp_path / "card"
    code = main(["card", "--human", str(human), "--results", str(results), "--criteria", "quality", "--card", str(stem), "--bootstrap", "300", "--seed", "7"])
    assert code == 0
    capsys.readouterr()
    assert main(["meta-eval", "--human", str(human), "--predictions", str(results), "--dimension", "quality", "--bootstrap", "300", "--seed", "7", "--json"]) == 0
    meta = json.loads(capsys.readouterr().out)
    section = _card_json(stem)["criteria"][0]
    assert section["agreement"] == meta["levels"]  # every value, CI bound and count, exactly
    assert [(lv["correlation"]["level"], lv["correlation"]["method"]) for lv in section["agreement"]] == [
        (lv, m) for lv in ("sample", "summary", "system") for m in ("spearman", "pearson", "kendall")
    ]
    assert all(lv["ci"]["n_resamples"] == 300 and lv["ci"]["seed"] == 7 for lv in section["agreement"])
    assert section["length"] == meta["length"] and section["throughput"] == meta["throughput"]
    # the section names the command that reproduces its figures
    assert section["meta_eval_command"].endswith("--bootstrap 300 --seed 7")


def test_throughput_and_parse_figures_come_from_the_rows(tmp_path):
    human = _human(tmp_path / "human.jsonl")
    results = _results(
        tmp_path / "results.jsonl",
        **{"d1:A": {"score": None, "status": "unparsed"}, "d2:B": {"status": "low_coverage", "distribution": {"probs": {"1": 1.0}, "coverage": 0.3}}},
    )
    stem = tmp_path / "card"
    assert main(["card", "--human", str(human), "--results", str(results), "--criteria", "quality", "--card", str(stem), "--bootstrap", "0"]) == 0
    section = _card_json(stem)["criteria"][0]
    parse = section["parse"]
    assert parse["n_selected"] == 12 and parse["n_rows"] == 12 and parse["n_scored"] == 11
    assert parse["status"] == {"low_coverage": 1, "ok": 10, "unparsed": 1}
    assert parse["n_with_distribution"] == 1 and parse["mean_coverage"] == pytest.approx(0.3)
    assert parse["share_low_coverage"] == pytest.approx(1 / 12)
    t = section["throughput"]
    assert t["input_tokens_per_1000"] == pytest.approx(100_000) and t["seconds_per_1000"] == pytest.approx(500)
    assert section["positional"] is None and section["positional_note"].startswith("n/a")
    assert section["self_consistency"]["applicable"] is False and "no repeated samples" in section["self_consistency"]["reason"]


# -- the human ceiling, by hand ----------------------------------------------------------------------------


def _hand_ceiling(level: str) -> list[float]:
    """Each annotator vs the mean of the other two, Spearman at ``level``, computed directly with scipy."""
    keys = list(ANNOTATORS)
    out = []
    for a in range(3):
        mine = {k: float(v[a]) for k, v in ANNOTATORS.items()}
        others = {k: (sum(v) - v[a]) / 2 for k, v in ANNOTATORS.items()}
        if level == "summary":
            out.append(stats.spearmanr([others[k] for k in keys], [mine[k] for k in keys]).statistic)
        elif level == "sample":
            per_doc = []
            for doc in ("d1", "d2", "d3"):
                ks = [k for k in keys if k[0] == doc]
                per_doc.append(stats.spearmanr([others[k] for k in ks], [mine[k] for k in ks]).statistic)
            out.append(float(np.mean(per_doc)))
        else:  # system: per-system means, then across the 4 systems
            systems = ("A", "B", "C", "D")
            h = [np.mean([others[k] for k in keys if k[1] == s]) for s in systems]
            p = [np.mean([mine[k] for k in keys if k[1] == s]) for s in systems]
            out.append(stats.spearmanr(h, p).statistic)
    return out


def test_the_ceiling_is_leave_one_annotator_out_as_computed_by_hand(tmp_path):
    records = load_jsonl(_human(tmp_path / "human.jsonl"))
    judge_items = [ScoredItem(doc_id=d, system_id=s, human=sum(ANNOTATORS[(d, s)]) / 3, prediction=v) for (d, s), v in JUDGE.items()]
    ceiling = human_ceiling(records, "quality", set(ANNOTATORS), judge_items, levels=["sample", "summary", "system"], methods=["spearman"])
    assert ceiling.available and ceiling.n_annotators == 3 and ceiling.n_items == 12 and ceiling.n_documents == 3
    assert ceiling.systems == ["A", "B", "C", "D"] and "12 items with 3 annotator scores" in ceiling.rests_on
    for found in ceiling.levels:
        hand = _hand_ceiling(found.level)
        assert found.per_annotator == pytest.approx(hand, abs=1e-12), found.level
        assert found.value == pytest.approx(sum(hand) / 3, abs=1e-12)
    pooled = next(c for c in ceiling.levels if c.level == "summary")
    keys = list(JUDGE)
    assert pooled.judge == pytest.approx(stats.spearmanr([JUDGE[k] for k in keys], [sum(ANNOTATORS[k]) / 3 for k in keys]).statistic, abs=1e-12)


def test_the_ceiling_rests_only_on_items_with_annotator_scores(tmp_path):
    path = _human(tmp_path / "human.jsonl")
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    for line in lines:
        if line["doc_id"] == "d3":
            line["annotator_scores"] = None  # like SummEval's extractive systems: means only
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    records = load_jsonl(path)
    ceiling = human_ceiling(records, "quality", set(ANNOTATORS), [], levels=["summary"], methods=["spearman"])
    assert ceiling.n_items == 8 and ceiling.n_documents == 2
    mine = [[float(ANNOTATORS[k][a]) for k in ANNOTATORS if k[0] != "d3"] for a in range(3)]
    others = [[(sum(ANNOTATORS[k]) - ANNOTATORS[k][a]) / 2 for k in ANNOTATORS if k[0] != "d3"] for a in range(3)]
    hand = [stats.spearmanr(others[a], mine[a]).statistic for a in range(3)]
    assert ceiling.levels[0].per_annotator == pytest.approx(hand, abs=1e-12)
    none = human_ceiling(load_jsonl(_human(tmp_path / "plain.jsonl", annotators=False)), "quality", set(ANNOTATORS), [], levels=["summary"], methods=["spearman"])
    assert not none.available and "per-annotator scores" in none.reason


# -- files written -----------------------------------------------------------------------------------------


def test_card_writes_markdown_and_json(tmp_path):
    human, results, stem = _human(tmp_path / "human.jsonl"), _results(tmp_path / "results.jsonl"), tmp_path / "out" / "card"
    stem.parent.mkdir()
    assert main(["card", "--human", str(human), "--results", str(results), "--criteria", "quality", "--card", str(stem) + ".md", "--bootstrap", "50", "--title", "tiny"]) == 0
    card = Card.model_validate_json((tmp_path / "out" / "card.json").read_text())
    assert card.title == "tiny" and card.format == "judgesdk.card/1" and card.judge.providers == ["scripted/scripted"]
    assert card.data.n_items == 12 and card.data.n_documents == 3 and card.data.text == "published"
    assert card.judge.sdk_version and card.judge.model_identity == "scripted"  # no hash recorded: the model id the rows name
    md = (tmp_path / "out" / "card.md").read_text()
    section = card.criteria[0]
    sample = next(lv for lv in section.agreement if lv.correlation.level == "sample" and lv.correlation.method == "spearman")
    assert "# Judge card: tiny" in md and "## quality" in md and "Human ceiling (leave one annotator out)" in md
    assert f"| sample | spearman | {sample.correlation.value:.3f} | [{sample.ci.low:.3f}, {sample.ci.high:.3f}] |" in md
    assert "Positional bias" in md and "Self-consistency" in md and "Length bias" in md and "per 1,000 items" in md


# -- running a judge: the score path, resumable; pairwise; sampling ------------------------------------------


def _rule(request):
    """Score each output by the number of 'word' tokens it holds, mod 5 (deterministic); pairwise: A."""
    text = as_text(request.messages)
    if request.labels and {label.strip() for label in request.labels} <= {"A", "B", "C"}:
        return ScriptedReply(label_probs={"A": 0.7, "B": 0.3})
    tail = text.split("word", 1)
    n = text.count("word")
    return ScriptedReply(label_probs={str(1 + n % 5): 0.8, str(1 + (n + 1) % 5): 0.2} if len(tail) > 1 else {"3": 1.0})


def _args(*argv: str):
    return build_parser().parse_args(["card", *argv])


def test_card_runs_the_judge_into_a_resumable_ledger(tmp_path):
    human, out, stem = _human(tmp_path / "human.jsonl"), tmp_path / "r.jsonl", tmp_path / "card"
    provider = ScriptedProvider(_rule)
    argv = ["--human", str(human), "--criteria", "quality", "--method", "geval", "-o", str(out), "--card", str(stem), "--bootstrap", "20", "--quiet"]
    config = ["--config", str(_config(tmp_path))]
    assert run_card(_args(*argv, *config), adapters=[provider]) == 0
    calls = len(provider.calls)
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 12 and all(r["asked"].startswith("quality/geval/") for r in rows)
    assert {r["id"] for r in rows} == {f"{d}:{s}" for d, s in ANNOTATORS}  # judgesdk score's ids for doc_id/system_id lines
    card = _card_json(stem)
    assert card["criteria"][0]["run_items_judged"] == 12 and card["criteria"][0]["run_wall_seconds"] > 0
    # a re-run judges nothing again, and the card is the same
    assert run_card(_args(*argv, *config), adapters=[provider]) == 0
    assert len(provider.calls) == calls and len(out.read_text().splitlines()) == 12
    again = _card_json(stem)["criteria"][0]
    assert again["agreement"] == card["criteria"][0]["agreement"]
    assert again["run_items_judged"] == 12 and again["run_wall_seconds"] == card["criteria"][0]["run_wall_seconds"]  # the clock of the run that judged
    # another judge configuration into the same file is refused: meta-eval would mix the two
    with pytest.raises(Exception, match="another question"):
        run_card(_args(*argv[:5], "direct", *argv[6:], *config), adapters=[provider])


def test_card_resumes_a_ledger_whose_last_line_a_stopped_run_cut(tmp_path, capsys):
    human, out, stem = _human(tmp_path / "human.jsonl"), tmp_path / "r.jsonl", tmp_path / "card"
    argv = ["--human", str(human), "--criteria", "quality", "--method", "geval", "-o", str(out), "--card", str(stem), "--bootstrap", "20", "--quiet",
            "--config", str(_config(tmp_path))]  # fmt: skip
    assert run_card(_args(*argv), adapters=[ScriptedProvider(_rule)]) == 0
    first = _card_json(stem)["criteria"][0]["agreement"]
    lines = out.read_text().splitlines()
    out.write_text("\n".join(lines[:-1]) + "\n" + lines[-1][:30])  # the run stopped while writing its last row
    capsys.readouterr()
    assert run_card(_args(*argv), adapters=[ScriptedProvider(_rule)]) == 0  # resumed: the cut row dropped, its item judged again
    assert f"-o {out}: its last line (12) was cut" in capsys.readouterr().err
    assert len(out.read_text().splitlines()) == 12 and _card_json(stem)["criteria"][0]["agreement"] == first


def _config(tmp_path: Path) -> Path:
    path = tmp_path / "judge.toml"
    path.write_text(f'[cache]\ndirectory = "{tmp_path / "cache"}"\n')
    return path


def test_pairwise_cards_carry_positional_bias_from_the_verdicts(tmp_path):
    human, out, stem = _human(tmp_path / "human.jsonl"), tmp_path / "p.jsonl", tmp_path / "card"
    argv = ["--human", str(human), "--criteria", "quality", "--method", "pairwise", "--strategy", "full", "-o", str(out), "--card", str(stem), "--bootstrap", "0", "--config", str(_config(tmp_path))]
    assert run_card(_args(*argv), adapters=[ScriptedProvider(_rule)]) == 0
    card = _card_json(stem)
    section = card["criteria"][0]
    assert any("win ratios" in note for note in card["notes"])  # only the sample level compares like with like
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 12 and all(len(r["comparisons"]) == 3 for r in rows)  # 4 outputs: 3 comparisons shown first each
    pos = section["positional"]
    assert pos["n_judgements"] == 36 and pos["first_win_rate"] == 1.0 and pos["flip_rate"] == 1.0  # the script always answers A
    assert section["positional_mean_p_first"] == pytest.approx(0.7)  # P(A) / (P(A) + P(B)) of the script's reply
    # the same verdicts through meta-eval's reader and positional_bias give the same figures
    verdicts = tmp_path / "verdicts.jsonl"
    verdicts.write_text("".join(json.dumps({"doc_id": r["doc_id"], **c}) + "\n" for r in rows for c in r["comparisons"]))
    from judgesdk.meta.readers import read_pairwise
    from judgesdk.meta.reliability import positional_bias

    assert positional_bias(read_pairwise(verdicts)[0]).model_dump() == pos
    assert section["self_consistency"]["applicable"] is False
    tokens = sum(r["usage"]["input_tokens"] for r in rows)
    assert tokens > 0 and section["throughput"]["input_tokens_per_1000"] == pytest.approx(tokens / 12 * 1000)


def test_sampling_cards_measure_self_consistency(tmp_path):
    human, out, stem = _human(tmp_path / "human.jsonl"), tmp_path / "s.jsonl", tmp_path / "card"
    argv = ["--human", str(human), "--criteria", "quality", "--method", "sampling", "--samples", "10", "-o", str(out), "--card", str(stem), "--bootstrap", "0", "--config", str(_config(tmp_path)), "--quiet"]
    assert run_card(_args(*argv), adapters=[ScriptedProvider(_rule)]) == 0
    sc = _card_json(stem)["criteria"][0]["self_consistency"]
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    sds, changed, modal = [], 0, []
    for row in rows:  # by hand from each row's sampled distribution
        probs = row["distribution"]["probs"]
        values = [float(label) for label, p in probs.items() for _ in range(round(p * 10))]
        sds.append(float(np.std(values, ddof=1)))
        changed += len(set(values)) > 1
        modal.append(max(probs.values()))
    assert sc["applicable"] and sc["source"] == "sampled distributions" and sc["samples_per_item"] == 10
    assert sc["variance"]["mean_sd"] == pytest.approx(np.mean(sds), abs=1e-12) and sc["variance"]["share_changed"] == changed / 12
    assert sc["mean_modal_share"] == pytest.approx(np.mean(modal), abs=1e-12)


# -- bad input: typed errors, exit 3 -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--results", "{results}", "--card", "{stem}"], "--dataset NAME"),
        (["--human", "{human}", "--card", "{stem}"], "-o RESULTS.jsonl"),
        (["--human", "{human}", "--results", "{results}", "-o", "{results}", "--card", "{stem}"], "one of them"),
        (["--human", "{human}", "--results", "{missing}", "--card", "{stem}", "--criteria", "quality"], "does not exist"),
        (["--human", "{human}", "--results", "{results}", "--card", "{stem}", "--criteria", "nope"], "dimension 'nope'"),
        (["--human", "{human}", "--results", "{results}", "--card", "{tmp}/no/such/card", "--criteria", "quality"], "does not exist"),
        (["--human", "{human}", "--results", "{results}", "--card", "{stem}", "--criteria", "quality", "--docs", "0"], "--docs"),
        (["--human", "{human}", "--results", "{results}", "--card", "{stem}", "--criteria", "quality", "--bootstrap", "-1"], "--bootstrap"),
        (["--human", "{missing}", "--results", "{results}", "--card", "{stem}"], "does not exist"),
        (["--human", "{human}", "--results", "{twoq}", "--card", "{stem}", "--criteria", "quality"], "2 questions"),
        (["--human", "{human}", "--results", "{badcmp}", "--card", "{stem}", "--criteria", "quality"], "comparisons"),
        (["--human", "{human}", "--results", "{notjson}", "--card", "{stem}", "--criteria", "quality"], "not valid JSON"),
        (["--human", "{human}", "--results", "{empty}", "--card", "{stem}", "--criteria", "quality"], "holds no"),  # a folder is read (Ray's)
    ],
)
def test_bad_input_is_a_typed_error_with_exit_3(tmp_path, capsys, argv, message):
    results = _results(tmp_path / "results.jsonl")
    twoq = tmp_path / "twoq.jsonl"
    twoq.write_text(results.read_text() + json.dumps({"id": "x", "doc_id": "d1", "system_id": "A", "criterion": "other", "score": 1}) + "\n")
    badcmp = _results(tmp_path / "badcmp.jsonl", **{"d1:A": {"comparisons": [{"first": "A", "winner": "first"}]}})
    notjson = tmp_path / "notjson.jsonl"
    notjson.write_text("{not json\n")
    names = {"results": results, "human": _human(tmp_path / "human.jsonl"), "stem": tmp_path / "card", "missing": tmp_path / "missing.jsonl",
             "twoq": twoq, "badcmp": badcmp, "notjson": notjson, "tmp": tmp_path, "empty": tmp_path / "empty"}  # fmt: skip
    (tmp_path / "empty").mkdir()
    filled = [re.sub(r"\{(\w+)\}", lambda m: str(names[m.group(1)]), a) for a in argv]
    assert main(["card", *filled]) == 3
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not (tmp_path / "card.json").exists()


# -- the embedded model, end to end ---------------------------------------------------------------------------


@pytest.mark.integration
def test_card_on_summeval_with_the_embedded_model(gguf_path, tmp_path, capsys, monkeypatch):
    from judgesdk.meta.datasets import shared_data_dir

    data = shared_data_dir()
    if data is None:
        pytest.skip("../shared/data not found (set JUDGESDK_SHARED_DATA)")
    monkeypatch.setenv("JUDGESDK_CACHE_DIR", str(tmp_path / "cache"))
    out, stem = tmp_path / "r.jsonl", tmp_path / "card"
    argv = ["card", "--dataset", "summeval", "--docs", "1", "--systems", "M0,M8,M9,M10,M11", "--criteria", "coherence",
            "--provider", "local", "-o", str(out), "--card", str(stem), "--bootstrap", "50", "--quiet"]  # fmt: skip
    assert main(argv) == 0
    card = Card.model_validate_json(stem.with_name("card.json").read_text())
    section = card.criteria[0]
    assert card.judge.model_identity.startswith("sha256:") and card.judge.methods_in_rows == {"fused/source": 5}  # coherence never reads SummEval's references (priors.READS_ALONE)
    assert section.parse.n_scored == 5 and section.throughput is not None and section.throughput.input_tokens_per_1000 > 0
    # the ceiling rests on the abstractive systems only (SummEval's experts did not rate M0)
    assert section.ceiling.available and section.ceiling.n_items == 4 and "M0" not in section.ceiling.systems
    capsys.readouterr()
    human = str(data / "summeval.jsonl")
    assert main(["meta-eval", "--human", human, "--predictions", str(out), "--dimension", "coherence", "--bootstrap", "50", "--json"]) == 0
    meta = json.loads(capsys.readouterr().out)
    assert [lv.model_dump(mode="json") for lv in section.agreement] == meta["levels"]


def test_identity_runtime_and_templates_come_from_the_rows_provenance(tmp_path):
    provenance = {"sdk": "0.1.0", "provider": "local", "model": "m", "method": "geval", "options": "x",
                  "served": {"model_sha256": "ab" * 32, "runtime": "llama-cpp-python 9.9"}, "templates": ["geval.likert@1#abc"]}  # fmt: skip
    human = _human(tmp_path / "human.jsonl")
    results = _results(tmp_path / "results.jsonl", **{f"{d}:{s}": {"provenance": provenance} for d, s in JUDGE})
    stem = tmp_path / "card"
    assert main(["card", "--human", str(human), "--results", str(results), "--criteria", "quality", "--card", str(stem), "--bootstrap", "0"]) == 0
    judge = _card_json(stem)["judge"]
    assert judge["model_identity"] == "ab" * 32 and "provenance" in judge["identity_source"]
    assert judge["runtimes"] == ["llama-cpp-python 9.9"] and judge["templates"] == ["geval.likert@1#abc"]
