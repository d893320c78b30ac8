"""``judgesdk view``'s page in a real browser: Debian's chromium (/usr/bin/chromium) driven by Playwright.

They load results files written by ``judgesdk score`` with the embedded local model on examples/summaries.jsonl
(fused and geval, so the page shows real signals, intervals and label distributions), and synthetic runs written by
the SDK's row writer (tests/view/view_rows.py) for what a six-item run cannot show: items flagged for review, a jury,
hostile texts, 20,000 rows. Skipped, saying what to install, where playwright or chromium is missing; under
JUDGESDK_REQUIRE_INTEGRATION=1 (.ci/run) that fails instead. Waits are readiness waits (the page sets
``data-ready`` once laid out), never sleeps on a clock.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
from pathlib import Path
from urllib.parse import quote

import pytest
from conftest import REQUIRE_INTEGRATION

from judgesdk.meta.diff import diff_files

from support import view_rows
from support.hostile import HOSTILE_TEXTS, run

pytestmark = pytest.mark.integration

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]  # fmt: skip
TIMEOUT_MS = 120_000  # generous: the machine may be busy; these are readiness waits, not timings


def _missing(message: str) -> None:
    (pytest.fail if REQUIRE_INTEGRATION else pytest.skip)(message)


@pytest.fixture(scope="module")
def browser():
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        _missing("the browser tests need playwright (pip install 'judgesdk[dev]'; never `playwright install`: they use Debian's chromium)")
    if not CHROMIUM.exists():
        _missing("the browser tests need Debian's chromium at /usr/bin/chromium (apt-get install -y chromium)")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS, headless=True)
        try:
            yield browser
        finally:
            browser.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1400, "height": 900}, accept_downloads=True)
    page = context.new_page()
    page.set_default_timeout(TIMEOUT_MS)
    page.requests = []  # type: ignore[attr-defined]
    page.on("request", lambda request: page.requests.append(request.url))  # type: ignore[attr-defined]
    page.errors = []  # type: ignore[attr-defined]
    page.on("pageerror", lambda error: page.errors.append(str(error)))  # type: ignore[attr-defined]
    yield page
    context.close()


def open_page(page, path: Path, anchor: str = "") -> None:
    page.goto(path.resolve().as_uri() + anchor)
    page.wait_for_function("() => document.documentElement.dataset.ready === '1'")


def write_page(tmp_path: Path, capsys, *args) -> Path:
    out = tmp_path / f"page-{len(list(tmp_path.glob('page-*.html')))}.html"
    code, _, err = run(["view", *args, "-o", out], capsys)
    assert code == 0, err
    return out


def shown(page) -> int:
    return int(page.get_attribute("#item-count", "data-shown"))


def bars(page) -> dict[str, float]:
    page.wait_for_selector("#dist-bars .dist-row")
    return dict(page.eval_on_selector_all("#dist-bars .dist-row", "els => els.map(e => [e.dataset.label, Number(e.dataset.p)])"))


# -- a real run: judgesdk score with the embedded model on examples/ ------------------------------------------------


@pytest.fixture(scope="module")
def real_runs(gguf_path, tmp_path_factory):
    """examples/summaries.jsonl judged for consistency with the embedded model, twice: fused (the default method
    on this model: intervals, signals, contributions) and geval (label distributions from logprobs)."""
    folder = tmp_path_factory.mktemp("real")
    env = {**os.environ, "JUDGESDK_CACHE_DIR": str(folder / "cache")}
    found = {}
    for method in ("fused", "geval"):
        out = folder / f"{method}.jsonl"
        done = subprocess.run(
            [sys.executable, "-c", "import sys; from judgesdk.cli.app import main; sys.exit(main())", "score", str(REPO / "examples" / "summaries.jsonl"), "--config", str(REPO / "examples" / "local.toml"),
             "--preset", "summeval", "--criterion", "consistency", "--method", method, "--quiet", "-o", str(out)],
            capture_output=True, text=True, env=env, timeout=1800,
        )  # fmt: skip
        assert done.returncode in (0, 2), done.stderr
        found[method] = out
    return found


def test_a_real_run_shows_its_texts_interval_signals_and_distribution(page, real_runs, tmp_path, capsys):
    inputs = REPO / "examples" / "summaries.jsonl"
    items = {json.loads(line)["id"]: json.loads(line) for line in inputs.read_text().splitlines()}
    fused = [json.loads(line) for line in real_runs["fused"].read_text().splitlines()]
    open_page(page, write_page(tmp_path, capsys, real_runs["fused"], "--input", inputs))
    assert page.get_attribute("html", "data-rows") == str(len(fused))
    sha = fused[0]["provenance"]["served"]["model_sha256"]
    assert sha in page.inner_text("#run-view")  # the model file's identity in the header
    page.click("nav a[data-tab=items]")
    page.click(".vt-row[data-index='0']")
    page.wait_for_selector("#item-detail [data-index='0'][data-loaded='1']")
    row = fused[0]
    assert page.inner_text("#item-detail h2") == row["id"]
    assert page.text_content("#item-detail [data-field=output]") == items[row["id"]]["output"]
    assert page.text_content("#item-detail [data-field=source]") == items[row["id"]]["source"]
    low, high = row["details"]["interval"]
    assert float(page.get_attribute("#interval", "data-low")) == low and float(page.get_attribute("#interval", "data-high")) == high
    assert page.locator("#item-detail table.grid tbody tr").count() >= len(row["details"]["contributions"])

    geval = [json.loads(line) for line in real_runs["geval"].read_text().splitlines()]
    open_page(page, write_page(tmp_path, capsys, real_runs["geval"], "--input", inputs), "#items")
    scored = next(i for i, r in enumerate(geval) if r["distribution"])
    page.click(f".vt-row[data-index='{scored}']")
    assert bars(page) == pytest.approx(geval[scored]["distribution"]["probs"])
    assert not page.errors, page.errors


def test_two_real_runs_compare_and_name_what_changed(page, real_runs, tmp_path, capsys):
    report = diff_files(real_runs["fused"], real_runs["geval"])
    open_page(page, write_page(tmp_path, capsys, real_runs["fused"], real_runs["geval"]), "#compare")
    summary = page.inner_text("#compare-summary")
    assert f"{report.paired}\n" in summary + "\n"
    assert page.locator("#compare-view .vt-row").count() == len(report.changed)
    if report.changed:
        assert "method" in page.inner_text("#compare-view")  # fused -> geval: the judge's record says so
        page.click("#compare-view .vt-row >> nth=0")
        page.wait_for_selector("#item-detail h2")
        assert "Second run" in page.inner_text("#item-detail")


# -- synthetic runs: flags, juries, hostile text, many rows -------------------------------------------------------------


@pytest.fixture
def synthetic(tmp_path):
    items = view_rows.items(20, 8, seed=11)
    results = view_rows.write_jsonl(tmp_path / "results.jsonl", list(view_rows.rows(items, ("coherence", "relevance"))))
    inputs = view_rows.write_jsonl(tmp_path / "items.jsonl", items)
    return results, inputs


def test_filter_to_needs_review_then_open_an_item_and_read_its_bars(page, synthetic, tmp_path, capsys):
    from judgesdk.view import load
    from judgesdk.view.data import FLAGS, page_data

    results, inputs = synthetic
    data = page_data(load.read_run(results))
    flagged = [i for i, f in enumerate(data["items"]["f"]) if f & (1 << FLAGS.index("needs_review"))]
    open_page(page, write_page(tmp_path, capsys, results, "--input", inputs), "#items")
    assert shown(page) == len(data["items"]["id"])
    page.select_option("select[aria-label=flag]", "needs_review")
    assert shown(page) == len(flagged) > 0
    geval = next(s for s, name in enumerate(data["strings"]) if name == "geval")
    page.select_option("select[aria-label=method]", str(geval))
    wanted = [i for i in flagged if data["items"]["m"][i] == geval]
    assert shown(page) == len(wanted) > 0
    first = page.locator(".vt-row").first
    index = int(first.get_attribute("data-index"))
    assert index in wanted
    first.click()
    rows = list(load.read_run(results).rows.values())
    assert bars(page) == pytest.approx(rows[index]["distribution"]["probs"])
    assert "Needs review" in page.inner_text("#item-detail")
    assert page.evaluate("location.hash") == "#item/" + rows[index]["criterion"] + "/" + rows[index]["id"].replace(":", "%3A")


def test_every_item_has_its_own_anchor(page, synthetic, tmp_path, capsys):
    results, inputs = synthetic
    target = view_rows.items(20, 8, seed=11)[37]["id"]
    path = write_page(tmp_path, capsys, results, "--input", inputs)
    open_page(page, path, f"#item/relevance/{quote(target, safe='')}")
    assert page.inner_text("#item-detail h2") == target and "relevance" in page.inner_text("#item-detail")
    open_page(page, path, "#item/relevance/no-such-item")
    assert "No item" in page.inner_text("#item-detail")


def test_a_jury_shows_its_members_and_alpha(page, synthetic, tmp_path, capsys):
    results, inputs = synthetic
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    jury = next(i for i, r in enumerate(rows) if r["method"] == "jury")
    open_page(page, write_page(tmp_path, capsys, results, "--input", inputs), f"#item/{rows[jury]['criterion']}/{quote(rows[jury]['id'], safe='')}")
    page.wait_for_selector(f"#item-detail [data-index='{jury}'][data-loaded='1']")
    detail = page.inner_text("#item-detail")
    assert "Jury" in detail and "Krippendorff" in detail
    for name in ("small", "medium", "large"):
        assert name in detail


def test_planted_scripts_never_run(page, tmp_path, capsys):
    """Outputs, a source, ids, notes and a criterion holding the hostile catalogue's strings: every item opened,
    every tab shown, the flag a planted script would set stays unset and the texts read back as written."""
    items = view_rows.items(3, 8, hostile=HOSTILE_TEXTS)
    items[1]["id"] = HOSTILE_TEXTS[2]
    rows = list(view_rows.rows(items))
    rows[0]["notes"] = list(HOSTILE_TEXTS)
    rows[3]["criterion"] = HOSTILE_TEXTS[0]
    results = view_rows.write_jsonl(tmp_path / "results.jsonl", rows)
    inputs = view_rows.write_jsonl(tmp_path / "items.jsonl", items)
    other = view_rows.write_jsonl(tmp_path / "b.jsonl", list(view_rows.rows(items, shift=1.0, sdk="<script>window.__judgesdk_pwned=1</script>")))
    path = write_page(tmp_path, capsys, results, other, "--input", inputs, "--title", HOSTILE_TEXTS[1])
    open_page(page, path)
    for tab in ("items", "compare", "run"):
        page.click(f"nav a[data-tab={tab}]")
    page.click("nav a[data-tab=items]")
    n = int(page.get_attribute("html", "data-rows"))
    for index in range(n):
        row = page.locator(f".vt-row[data-index='{index}']")
        if row.count():
            row.click()
            page.wait_for_selector(f"#item-detail [data-index='{index}'][data-loaded='1']")
            page.hover("#item-detail h2")
    page.click("#item-detail summary >> nth=-1")
    assert page.evaluate("typeof window.__judgesdk_pwned") == "undefined"
    assert page.evaluate("document.querySelectorAll('img, svg, iframe, textarea').length") == 0
    page.goto(path.resolve().as_uri() + "#item/coherence/d0%3As0")
    page.wait_for_selector("#item-detail [data-field=output]")
    assert page.text_content("#item-detail [data-field=output]").startswith(HOSTILE_TEXTS[0])
    assert page.title() == HOSTILE_TEXTS[1]
    assert page.evaluate("typeof window.__judgesdk_pwned") == "undefined"
    assert all(url.startswith("file://") for url in page.requests), page.requests
    assert not page.errors, page.errors


def test_bidi_and_invisible_characters_show_as_marks(page, tmp_path, capsys):
    items = view_rows.items(1, 2, hostile=["\u202eevil\u202c gnp.exe"])
    results = view_rows.write_jsonl(tmp_path / "results.jsonl", list(view_rows.rows(items)))
    inputs = view_rows.write_jsonl(tmp_path / "items.jsonl", items)
    open_page(page, write_page(tmp_path, capsys, results, "--input", inputs), "#item/coherence/d0%3As0")
    page.wait_for_selector("#item-detail [data-field=output] .ctl")
    marks = page.eval_on_selector_all("#item-detail [data-field=output] .ctl", "els => els.map(e => e.textContent)")
    assert marks == ["U+202E", "U+202C"]


def test_the_filtered_rows_export_as_csv_and_jsonl(page, synthetic, tmp_path, capsys):
    results, inputs = synthetic
    open_page(page, write_page(tmp_path, capsys, results, "--input", inputs), "#items")
    page.select_option("select[aria-label=status]", label="low_coverage")
    n = shown(page)
    assert n > 0
    with page.expect_download() as info:
        page.click("text=Export CSV")
    lines = Path(info.value.path()).read_text(encoding="utf-8").splitlines()
    assert len(lines) == n + 1 and lines[0].startswith("id,criterion,score,status")
    assert all(",low_coverage," in line for line in lines[1:])
    with page.expect_download() as info:
        page.click("text=Export JSONL")
    exported = [json.loads(line) for line in Path(info.value.path()).read_text(encoding="utf-8").splitlines()]
    originals = {(r["id"], r["criterion"]): r for r in map(json.loads, results.read_text().splitlines())}
    assert len(exported) == n
    for row in exported:
        original = originals[(row["id"], row["criterion"])]
        assert row["score"] == original["score"] and row["provenance"] == original["provenance"] and row["distribution"] == original["distribution"]


# ids a spreadsheet would run as formulas (OWASP's CSV injection: a cell starting with =, +, -, @, tab or CR), and
# the catalogue's row (issue 41, class view): "-2+3+..." starts with a minus and a digit, and was left as it was
FORMULA_IDS = ("-2+3+cmd|' /C calc'!A0", "=1+1", "+1+cmd|' /C calc'!A0", "@SUM(1+1)*cmd|' /C calc'!A0", "\t=1+1", "\r=1+1", "-1+1", "-A1")


def test_the_csv_export_escapes_every_formula_leading_cell(page, tmp_path, capsys):
    import csv

    ids = (*FORMULA_IDS, "-2", "plain")
    rows = [{"id": item, "score": score, "status": "ok", "criterion": "c", "method": "direct"} for item, score in zip(ids, range(len(ids)))]
    rows.append({"id": "negative", "score": -2.5, "status": "ok", "criterion": "c", "method": "direct"})
    results = view_rows.write_jsonl(tmp_path / "results.jsonl", rows)
    open_page(page, write_page(tmp_path, capsys, results), "#items")
    with page.expect_download() as info:
        page.click("text=Export CSV")
    with open(info.value.path(), encoding="utf-8", newline="") as fh:
        table = list(csv.DictReader(fh))
    cells = {row["id"]: row for row in table}
    assert len(table) == len(rows)
    for item in FORMULA_IDS:
        assert "'" + item in cells, (item, sorted(cells))  # the quote makes it text
    assert "-2" in cells and "plain" in cells  # a plain number, and a word, stay as they are
    assert cells["negative"]["score"] == "-2.5" and cells["'-2+3+cmd|' /C calc'!A0"]["score"] == "0"


def test_twenty_thousand_rows_stay_a_few_dozen_in_the_dom(page, tmp_path, capsys):
    items = view_rows.items(1250, 8, seed=3)
    results = view_rows.write_jsonl(tmp_path / "results.jsonl", list(view_rows.rows(items, ("coherence", "relevance"))))
    open_page(page, write_page(tmp_path, capsys, results), "#items")
    assert shown(page) == 20_000
    assert page.locator(".vt-row").count() < 100  # virtualised: only the rows in view exist
    page.click(".vt-head button[data-key=score]")  # highest first
    top = float(page.text_content(".vt-row[style*='top: 0px'] .c-score"))
    scores = [json.loads(line)["score"] for line in results.read_text().splitlines()]
    assert top == pytest.approx(max(s for s in scores if s is not None), abs=5e-4)
    page.eval_on_selector(".vt-body", "b => { b.scrollTop = b.scrollHeight; b.dispatchEvent(new Event('scroll')); }")
    page.wait_for_selector(f".vt-row[style*='top: {(20_000 - 1) * 28}px']")
    page.fill("input[aria-label=search]", "d1249:s7")
    page.wait_for_function("() => document.getElementById('item-count').dataset.shown === '2'")


def test_serve_refreshes_the_open_page_as_rows_are_appended(page, tmp_path):
    items = view_rows.items(4, 5)
    rows = list(view_rows.rows(items))
    results = view_rows.write_jsonl(tmp_path / "results.jsonl", rows[:3])
    entry = "import sys; from judgesdk.cli.app import main; sys.exit(main())"
    proc = subprocess.Popen([sys.executable, "-c", entry, "view", str(results), "--serve"], stderr=subprocess.PIPE, text=True)
    try:
        url = re.search(r"http://\S+/", proc.stderr.readline()).group(0)
        page.goto(url + "#items")
        page.wait_for_function("() => document.documentElement.dataset.ready === '1'")
        assert shown(page) == 3
        with results.open("a", encoding="utf-8") as fh:
            for row in rows[3:]:
                fh.write(json.dumps(row) + "\n")
        page.wait_for_function(f"() => document.documentElement.dataset.rows === '{len(rows)}'")
        page.wait_for_function(f"() => document.getElementById('item-count').dataset.shown === '{len(rows)}'")
        assert "live" in page.inner_text("#live")
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
        proc.stderr.close()
