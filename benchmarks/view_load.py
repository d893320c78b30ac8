"""How fast `judgesdk view`'s page becomes usable on a 100,000-row run, in headless Chromium.

    .venv/bin/python benchmarks/view_load.py [--rows 100000] [--loads 5] [--out benchmarks/out/view]

Writes a synthetic run of ``--rows`` results rows (tests/view/view_rows.py: rows made by the SDK's own row writer,
two criteria; methods geval with label distributions, fused with intervals and signals, jury with three judges'
parts, some unparsed) and its items file (one source per document, shared by 20 systems' outputs), then builds two
pages with ``judgesdk view``: the rows alone, and the rows with their texts (``--input``). Each page is opened
``--loads`` times, each in a fresh browser context of Debian's chromium (/usr/bin/chromium, Playwright), and timed:

* **interactive**: ``performance.now()`` when the page, opened at ``#items``, has parsed its data, built the item
  table over every row (drawn the rows in view, counted the rows shown) and attached its handlers (the script
  sets ``window.judgesdkView.readyAt``): milliseconds since navigation start;
* **longest task**: the longest main-thread task during the load (a ``longtask`` PerformanceObserver set up
  before the page's own script), i.e. the longest the page could not answer input;
* **filter / sort / scroll**: after load, the synchronous time of a filter to ``needs_review`` and of sorting the
  whole run by score (each re-draws the visible rows), and of a jump to the bottom of the table until its last
  row is drawn (the scroll event, then the animation frame that draws).

Prints a Markdown table for benchmarks/README.md and writes the numbers to ``OUT/view_load.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ENTRY = "import sys; from judgesdk.cli.app import main; sys.exit(main())"  # the installed command, run by this Python
sys.path.insert(0, str(REPO / "tests"))  # support/: what the tests share

from support import view_rows  # noqa: E402  (the tests' synthetic runs)

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]  # fmt: skip
LONGTASKS = """
window.__longtasks = [];
new PerformanceObserver(list => { for (const e of list.getEntries()) window.__longtasks.push(e.duration); }).observe({type: 'longtask', buffered: true});
"""
AFTER_LOAD = """
async () => {
  const t = {};
  const time = (name, fn) => { const t0 = performance.now(); fn(); t[name] = performance.now() - t0; };
  const flag = document.querySelector('select[aria-label=flag]');
  time('filter_ms', () => { flag.value = 'needs_review'; flag.dispatchEvent(new Event('change')); });
  t.shown = Number(document.getElementById('item-count').dataset.shown);
  flag.value = ''; flag.dispatchEvent(new Event('change'));
  time('sort_ms', () => document.querySelector('.vt-head button[data-key=score]').click());
  const body = document.querySelector('.vt-body');
  const bottom = () => Array.from(document.querySelectorAll('.vt-row')).some(r => r.style.display !== 'none' && r.offsetTop + r.offsetHeight >= body.scrollHeight - 1);
  const t0 = performance.now();
  body.scrollTop = body.scrollHeight;  // the table draws the rows now in view on an animation frame after the scroll event
  let frames = 0;
  while (!bottom() && frames < 600) { await new Promise(resolve => requestAnimationFrame(resolve)); frames++; }
  t.scroll_ms = performance.now() - t0;
  t.bottom_drawn = bottom();
  t.dom_rows = document.querySelectorAll('.vt-row').length;
  return t;
}
"""


def make_run(out: Path, n_rows: int) -> tuple[Path, Path]:
    systems, criteria = 20, ("coherence", "relevance")
    docs = n_rows // (systems * len(criteria))
    items = view_rows.items(docs, systems, seed=0)
    results = view_rows.write_jsonl(out / "results.jsonl", view_rows.rows(items, criteria))
    inputs = view_rows.write_jsonl(out / "items.jsonl", items)
    return results, inputs


def build(results: Path, page: Path, *extra: str) -> dict[str, float]:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-c", ENTRY, "view", str(results), *extra, "-o", str(page)], check=True, capture_output=True, text=True)
    return {"build_s": time.perf_counter() - start, "mb": page.stat().st_size / 1e6}


def measure(browser, page_path: Path) -> dict[str, float]:
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    page = context.new_page()
    page.set_default_timeout(300_000)
    page.add_init_script(LONGTASKS)
    page.goto(page_path.resolve().as_uri() + "#items")  # straight to the item table: all 100,000 rows filterable
    page.wait_for_function("window.judgesdkView && window.judgesdkView.ready")
    ready = page.evaluate("window.judgesdkView.readyAt")
    longest = page.evaluate("Math.max(0, ...window.__longtasks)")
    after = page.evaluate(AFTER_LOAD)
    context.close()
    return {"interactive_ms": ready, "longest_task_ms": longest, **after}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--loads", type=int, default=5)
    parser.add_argument("--out", type=Path, default=REPO / "benchmarks" / "out" / "view")
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    args.out.mkdir(parents=True, exist_ok=True)
    load_before = os.getloadavg()  # the machine is shared: its load says how far these times are from an idle one's
    results, inputs = make_run(args.out, args.rows)
    pages = {"rows only": (args.out / "rows.html", ()), "rows + texts (--input)": (args.out / "texts.html", ("--input", str(inputs)))}
    found: dict[str, dict] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS, headless=True)
        version = browser.version
        for name, (path, extra) in pages.items():
            made = build(results, path, *extra)
            loads = [measure(browser, path) for _ in range(args.loads)]
            assert all(x["bottom_drawn"] for x in loads), "the table did not draw its last row after a jump to the bottom"
            found[name] = {**made, "loads": loads}
            print(f"{name}: built in {made['build_s']:.1f} s, {made['mb']:.1f} MB; interactive " + ", ".join(f"{x['interactive_ms']:.0f}" for x in loads) + " ms", file=sys.stderr)
        browser.close()
    summary = {"rows": args.rows, "chromium": version, "cpus": os.cpu_count(), "loadavg_before": load_before, "loadavg_after": os.getloadavg(), "pages": found}
    (args.out / "view_load.json").write_text(json.dumps(summary, indent=2))
    print(f"| page ({args.rows:,} rows) | HTML | `judgesdk view` | interactive, median [min, max] of {args.loads} loads | longest task | filter to needs_review | sort by score | jump to the bottom | rows in the DOM |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- | --- |")
    for name, f in found.items():
        loads = f["loads"]

        def med(key: str, loads: list = loads) -> str:
            values = [x[key] for x in loads]
            return f"{statistics.median(values):,.0f} ms [{min(values):,.0f}, {max(values):,.0f}]"

        print(f"| {name} | {f['mb']:.1f} MB | {f['build_s']:.1f} s | {med('interactive_ms')} | {med('longest_task_ms')} | {med('filter_ms')} "
              f"({loads[0]['shown']:,} shown) | {med('sort_ms')} | {med('scroll_ms')} | {loads[0]['dom_rows']} |")


if __name__ == "__main__":
    main()
