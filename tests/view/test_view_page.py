"""``judgesdk view`` without a browser: what the page's data holds (flags, intervals, histograms, the header's
totals, the two-run diff, the card, the gate's failures), that each text is stored once, and that no text of a
run can become markup in the page (the property test over the hostile catalogue's strings)."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from judgesdk.meta.diff import diff_files
from judgesdk.view import load
from judgesdk.view.data import FLAGS, histogram, page_data
from judgesdk.view.html import asset, content_security_policy, render_page

from support import view_rows
from support.hostile import HOSTILE_TEXTS, run
from support.view_rows import embedded

REPO = Path(__file__).resolve().parents[2]


def bit(name: str) -> int:
    return 1 << FLAGS.index(name)


@pytest.fixture
def small_run(tmp_path):
    items = view_rows.items(4, 5, seed=1)
    results = view_rows.write_jsonl(tmp_path / "results.jsonl", list(view_rows.rows(items, ("coherence", "relevance"))))
    inputs = view_rows.write_jsonl(tmp_path / "items.jsonl", items)
    return results, inputs, items


# -- what the page's data holds ---------------------------------------------------------------------------------


def test_items_flags_intervals_and_texts_come_from_the_rows(small_run):
    results, inputs, items = small_run
    run_ = load.read_run(results)
    data = page_data(run_, inputs=load.read_inputs(inputs))
    it = data["items"]
    assert len(it["id"]) == len(run_.rows) == 2 * len(items)
    rows = list(run_.rows.values())
    for i, row in enumerate(rows):
        assert it["id"][i] == row["id"] and data["criteria"][it["c"][i]]["name"] == row["criterion"]
        assert it["s"][i] == row["score"] and data["strings"][it["st"][i]] == row["status"] and data["strings"][it["m"][i]] == row["method"]
        details = row.get("details") or {}
        assert [it["lo"][i], it["hi"][i]] == (details.get("interval") or [None, None])
        assert bool(it["f"][i] & bit("outside_fit")) == bool(details.get("outside_fit"))
        assert bool(it["f"][i] & bit("jury_disagreement")) == bool(row["method"] == "jury" and details.get("flagged"))
        assert bool(it["f"][i] & bit("unscored")) == (row["score"] is None)
        assert bool(it["f"][i] & bit("low_coverage")) == (row["status"] == "low_coverage")
        source = next(x for x in items if x["id"] == row["id"])
        assert data["texts"][it["out"][i]] == source["output"] and data["texts"][it["src"][i]] == source["source"]
        assert it["d"][i].get("distribution") == row["distribution"]
        if row.get("provenance"):
            assert data["provenance"][it["d"][i]["provenance_ref"]] == row["provenance"]


def test_needs_review_is_the_review_gates_flag(small_run):
    """The flag is meta.reliability's default policy on the row, as the review gate reads it: a low-coverage
    distribution and a fused score outside its fit are flagged, with the reason."""
    from judgesdk.core.types import Scale
    from judgesdk.meta.reliability import ItemSignals, review_flags
    from judgesdk.records import to_result

    results, _, _ = small_run
    run_ = load.read_run(results)
    data = page_data(run_)
    flagged = 0
    for i, ((item, criterion), row) in enumerate(run_.rows.items()):
        expected = False
        if row["score"] is not None:
            result = to_result(row, Scale.likert(1, 5), criterion)
            expected = review_flags([ItemSignals.from_result(item, result)])[0].needs_review
        assert bool(data["items"]["f"][i] & bit("needs_review")) == expected, (item, criterion)
        flagged += expected
        if expected:
            assert data["items"]["d"][i]["review"]["reasons"]
    assert flagged > 0  # the synthetic run has low-coverage and outside-fit rows


def test_each_text_is_stored_once(small_run):
    results, inputs, items = small_run
    data = page_data(load.read_run(results), inputs=load.read_inputs(inputs))
    sources = {x["source"] for x in items}
    outputs = {x["output"] for x in items}
    assert sorted(data["texts"]) == sorted(sources | outputs)  # 4 sources for 20 items, two criteria each
    page = render_page(data)
    one_source = next(iter(sources))
    assert page.count(json.dumps(one_source, ensure_ascii=False)[1:-1][:200]) == 1


def test_the_header_totals_are_the_rows_sums(small_run):
    results, _, _ = small_run
    run_ = load.read_run(results)
    header = page_data(run_)["run"]
    rows = list(run_.rows.values())
    assert header["usage"]["input_tokens"] == sum(r["usage"]["input_tokens"] for r in rows)
    assert header["usage"]["output_tokens"] == sum(r["usage"]["output_tokens"] for r in rows)
    assert header["usage"]["latency_sum_s"] == pytest.approx(sum(r["latency_s"] for r in rows))
    assert sum(header["statuses"].values()) == len(rows) and sum(header["methods"].values()) == len(rows)
    assert view_rows.SHA in header["identity"]["served.model_sha256"]
    assert header["usage"]["usd"] is None or header["usage"]["usd"] == 0  # a local model has no per-token price
    assert any("locally" in note for note in header["usage"]["cost_notes"] + [g["price"] for g in header["usage"]["groups"]])


def test_histograms_count_every_scored_item(small_run):
    results, _, _ = small_run
    data = page_data(load.read_run(results))
    for crit in data["criteria"]:
        assert sum(crit["scores"]["counts"]) == crit["scored"]
        assert sum(crit["widths"]["counts"]) == sum(1 for i, c in enumerate(data["items"]["c"]) if data["criteria"][c] is crit and data["items"]["lo"][i] is not None)
        assert crit["jury"] is not None and crit["jury"]["judges"] == ["small", "medium", "large"]


def test_histogram_bins():
    assert histogram([1, 2, 2, 5]) == {"discrete": True, "values": [1.0, 2.0, 5.0], "counts": [1, 2, 1], "n": 4, "mean": 2.5, "median": 2.0, "min": 1.0, "max": 5.0}
    continuous = histogram([i / 100 for i in range(100)], bins=10)
    assert not continuous["discrete"] and continuous["counts"] == [10] * 10 and len(continuous["edges"]) == 11
    assert not histogram([1.5, 2.25, 3.0])["discrete"]  # few values, but not a label scale's: binned
    assert histogram([]) is None


def test_two_runs_hold_the_diffs_deltas_and_causes(tmp_path):
    items = view_rows.items(5, 4, seed=2)
    a = view_rows.write_jsonl(tmp_path / "a.jsonl", list(view_rows.rows(items, seed=3)))
    b = view_rows.write_jsonl(tmp_path / "b.jsonl", list(view_rows.rows(items, seed=3, shift=0.5, sdk="0.2.0")))
    data = page_data(load.read_run(a), compare=load.read_run(b))
    report = diff_files(a, b)
    it, c = data["items"], data["compare"]
    assert c["n_changed"] == len(report.changed) > 0 and c["paired"] == report.paired
    moved = {(it["id"][i], data["criteria"][it["c"][i]]["name"]) for i in c["changed"]}
    assert moved == {(x.id, x.criterion) for x in report.changed}
    for change in report.changed:
        i = next(i for i in c["changed"] if it["id"][i] == change.id)
        assert it["ch"][i] == {k: list(v) for k, v in change.causes.items()}
        assert any(k.endswith("sdk") for k in it["ch"][i])  # the judge's record says what changed (a jury: its judges')
        assert it["f"][i] & bit("changed")
        if change.shift is not None:
            assert it["dl"][i] == pytest.approx(change.shift)
    assert c["causes"] == report.causes and list(c["header"]["identity"]["sdk"]) == ["0.2.0"] and list(data["run"]["identity"]["sdk"]) == ["0.1.0"]


def test_a_second_run_with_no_item_in_common_is_said_to_compare_nothing(tmp_path):
    items = view_rows.items(3, 2, seed=2)
    a = view_rows.write_jsonl(tmp_path / "a.jsonl", list(view_rows.rows(items, ("coherence",), seed=3)))
    b = view_rows.write_jsonl(tmp_path / "b.jsonl", list(view_rows.rows(items, ("relevance",), seed=3)))
    data = page_data(load.read_run(a), compare=load.read_run(b))
    assert data["compare"]["paired"] == 0 and any(n.startswith(f"nothing to compare with {b}: the files judge different criteria") for n in data["notes"])


def test_an_empty_run_is_an_input_error_unless_served(tmp_path):
    from judgesdk.core.errors import InputError

    empty = tmp_path / "results.jsonl"
    empty.write_text("")
    with pytest.raises(InputError, match="no result rows"):
        page_data(load.read_run(empty))
    assert page_data(load.read_run(empty), live=True)["items"]["id"] == []


def test_a_ray_folder_and_card_files_read_as_one_run(tmp_path):
    items = view_rows.items(3, 3)
    rows = list(view_rows.rows(items, ("coherence", "relevance")))
    folder = tmp_path / "ray-out"
    folder.mkdir()
    view_rows.write_jsonl(folder / "RUN1_000000_000000.jsonl", rows[:7])
    view_rows.write_jsonl(folder / "RUN1_000000_000001.jsonl", rows[7:])
    (folder / ".RUN1_000000_000001.jsonl.tmp").write_text("not json\n")
    assert len(load.read_run(folder).rows) == len(rows)
    # judgesdk card with several criteria: RESULTS.<criterion>.jsonl beside each other, found from RESULTS
    view_rows.write_jsonl(tmp_path / "card.coherence.jsonl", [r for r in rows if r["criterion"] == "coherence"])
    view_rows.write_jsonl(tmp_path / "card.relevance.jsonl", [r for r in rows if r["criterion"] == "relevance"])
    found = load.read_run(tmp_path / "card.jsonl")
    assert len(found.rows) == len(rows) and len(found.files) == 2


def test_the_latest_row_per_item_and_criterion_stands(tmp_path):
    items = view_rows.items(1, 2)
    first = list(view_rows.rows(items))
    retried = dict(first[0], score=1.0, status="ok")
    path = view_rows.write_jsonl(tmp_path / "r.jsonl", [*first, retried])
    with path.open("a") as fh:
        fh.write('{"id": "cut')  # a line cut by a crash
    run_ = load.read_run(path)
    assert run_.rows[(first[0]["id"], "coherence")]["score"] == 1.0 and run_.skipped == 1 and run_.n_lines == 3
    assert any("not JSON" in note for note in page_data(run_)["notes"])


# -- the card and the gate ----------------------------------------------------------------------------------------


def human_file(tmp_path, items) -> Path:
    import random

    rng = random.Random(5)
    lines = []
    for x in items:
        votes = [rng.randint(1, 5) for _ in range(3)]
        lines.append({"doc_id": x["doc_id"], "system_id": x["system_id"], "output": x["output"], "source": x["source"],
                      "scores": {"coherence": sum(votes) / 3}, "annotator_scores": {"coherence": votes}})  # fmt: skip
    return view_rows.write_jsonl(tmp_path / "human.jsonl", lines)


def test_a_card_and_a_gate_report_reach_the_page(tmp_path, capsys):
    items = view_rows.items(6, 4, seed=4)
    results = view_rows.write_jsonl(tmp_path / "results.jsonl", list(view_rows.rows(items)))
    human = human_file(tmp_path, items)
    code, _, err = run(["card", "--human", human, "--results", results, "--criteria", "coherence", "--card", tmp_path / "card", "--bootstrap", "50"], capsys)
    assert code == 0, err
    gate = tmp_path / "gate.toml"
    gate.write_text(
        f'results = "{results}"\n[judge]\nmethod = "geval"\n[[criteria]]\nname = "coherence"\nscale = "1-5"\n'
        '[[gates]]\nname = "most acceptable"\nkind = "pass_rate"\ncriterion = "coherence"\nitem_min = 3.5\nmin = 0.9\n'
        '[[gates]]\nname = "review"\nkind = "review"\ncriterion = "coherence"\nmax_share = 0.01\n'
    )  # fmt: skip
    code, out, err = run(["gate", "--config", gate, "--results", results, "--json-report", tmp_path / "gate.json"], capsys)
    assert code in (1, 2), err
    verdict = json.loads((tmp_path / "gate.json").read_text())
    g = next(k for k, x in enumerate(verdict["gates"]) if x["name"] == "most acceptable")
    assert verdict["status"] in ("fail", "inconclusive") and verdict["gates"][g]["details"]["below"]

    data = page_data(load.read_run(results), card=load.read_card(tmp_path / "card.json"), verdict=load.read_verdict(tmp_path / "gate.json"))
    card = json.loads((tmp_path / "card.json").read_text())
    assert data["card"]["criteria"][0]["agreement"] == card["criteria"][0]["agreement"]
    assert data["card"]["criteria"][0]["ceiling"]["available"] is True
    ids = data["items"]["id"]
    below = verdict["gates"][g]["details"]["below"]
    assert sorted(ids[i] for i in data["gate"]["item_lists"][g]["items"]) == sorted(below)
    for i in data["gate"]["item_lists"][g]["items"]:
        assert data["items"]["f"][i] & bit("gate_failed") and g in data["items"]["d"][i]["gates"]
    unscored = next(k for k, x in enumerate(verdict["gates"]) if x["check"] == "completeness")
    assert sorted(ids[i] for i in data["gate"]["item_lists"][unscored]["items"]) == sorted(verdict["gates"][unscored]["details"]["unscored"])


def test_the_gate_writes_its_json_report(tmp_path, capsys):
    """`judgesdk gate --json-report FILE` writes the verdict the text and exit code come from."""
    items = view_rows.items(2, 3)
    results = view_rows.write_jsonl(tmp_path / "results.jsonl", list(view_rows.rows(items)))
    gate = tmp_path / "gate.toml"
    gate.write_text(f'results = "{results}"\n[judge]\nmethod = "geval"\n[[criteria]]\nname = "coherence"\nscale = "1-5"\n'
                    '[[gates]]\nname = "m"\nkind = "mean"\ncriterion = "coherence"\nmin = 1\n')  # fmt: skip
    code, out, _ = run(["gate", "--config", gate, "--results", results, "--json-report", tmp_path / "out" / "gate.json", "--json"], capsys)
    assert json.loads((tmp_path / "out" / "gate.json").read_text()) == json.loads(out)
    assert json.loads(out)["exit_code"] == code == 0


# -- the page itself ----------------------------------------------------------------------------------------------


def test_the_page_is_self_contained_under_its_policy(small_run):
    results, inputs, _ = small_run
    page = render_page(page_data(load.read_run(results), inputs=load.read_inputs(inputs)))
    assert not re.search(r"(src|href)\s*=\s*[\"']?(https?:)?//", page)  # nothing fetched from anywhere
    assert "@import" not in page and "url(" not in asset("view.css")
    policy = content_security_policy()
    assert f'content="{policy}"' in page and "default-src 'none'" in policy and "connect-src 'self'" in policy
    for name in ("view.js", "view.css"):
        assert asset(name) in page
        assert "</script" not in asset(name).lower() and "</style" not in asset(name).lower()


class _Elements(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def _structure(page: str) -> list[tuple[str, dict]]:
    parser = _Elements()
    parser.feed(page)
    return [(tag, attrs) for tag, attrs in parser.tags if tag != "meta" or "content" not in attrs or "Content-Security-Policy" not in attrs.get("http-equiv", "")]


def _page_with(tmp_path: Path, text: str) -> tuple[str, dict]:
    items = view_rows.items(1, 2, hostile=[text])
    items[1]["id"] = text if text.strip() else "blank"  # a hostile id too
    rows = list(view_rows.rows(items))
    rows[0]["notes"] = [text]
    rows[0]["criterion"] = text or "c"
    path = view_rows.write_jsonl(tmp_path / "r.jsonl", rows)
    inputs = view_rows.write_jsonl(tmp_path / "i.jsonl", items)
    data = page_data(load.read_run(path), inputs=load.read_inputs(inputs), title=text)
    return render_page(data), data


_FRAGMENTS = st.sampled_from(HOSTILE_TEXTS) | st.text(alphabet=st.sampled_from('<>&"\'/=:;()`\\ \n!-[]{}sScriptIMGonerrorjavascript\u202e\u200b\u2066\u2069'), max_size=30)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_FRAGMENTS, min_size=1, max_size=4).map("".join).filter(lambda s: s.strip()))
def test_no_text_of_a_run_becomes_markup(tmp_path, text):
    """Property: whatever an output, source, id, note, criterion or title holds, the page has the same elements
    as a page built from plain text, and the embedded data gives the text back exactly."""
    page, data = _page_with(tmp_path, text)
    plain_page, _ = _page_with(tmp_path, "plain words")
    assert _structure(page) == _structure(plain_page)
    assert page.lower().count("<script") == 2 and page.lower().count("</script") == 2
    back = embedded(page)
    assert text in back["texts"][back["items"]["out"][0]] and back["items"]["d"][0]["notes"] == [text]
    assert back["title"] == text and text in back["items"]["id"]


def test_lone_surrogates_and_non_finite_numbers_do_not_break_the_page(tmp_path):
    path = tmp_path / "r.jsonl"
    path.write_text('{"id": "bad \\udcff", "score": 3, "status": "ok", "criterion": "c", "method": "direct", "latency_s": NaN, "notes": ["x \\ud800"]}\n')
    page = render_page(page_data(load.read_run(path)))
    page.encode("utf-8")
    back = embedded(page)
    assert back["items"]["id"] == ["bad \ufffd"] and back["items"]["d"][0]["latency_s"] is None


def test_1600_items_with_sources_stay_under_5_mb(tmp_path):
    """The size bound of issue 31 on SummEval's 1,600 items (their texts, where ../shared is present) or on
    synthetic ones with sources of SummEval's length: each source is stored once per document."""
    data_file = REPO.parent / "shared" / "data" / "summeval.jsonl"
    if data_file.exists():
        items = [json.loads(line) for line in data_file.read_text(encoding="utf-8").splitlines()]
        items = [{"id": f"{x['doc_id']}:{x['system_id']}", "doc_id": x["doc_id"], "system_id": x["system_id"], "source": x["source"], "output": x["output"]} for x in items]
    else:
        items = view_rows.items(100, 16, seed=7)
        for x in items:
            x["source"] = (x["source"] + " ") * 3  # SummEval's sources average about 2,300 characters
    assert len(items) == 1600
    results = view_rows.write_jsonl(tmp_path / "r.jsonl", list(view_rows.rows(items)))
    inputs = view_rows.write_jsonl(tmp_path / "i.jsonl", items)
    size = len(render_page(page_data(load.read_run(results), inputs=load.read_inputs(inputs))).encode("utf-8"))
    assert size <= 5_000_000, size
