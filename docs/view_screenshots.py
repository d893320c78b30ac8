"""The screenshots of `judgesdk view` in README.md (docs/view-*.png), remade from scratch:

    .venv/bin/python docs/view_screenshots.py

* the run header and an item's detail come from a real run: examples/summaries.jsonl judged for consistency
  by the embedded local model (`judgesdk score --config examples/local.toml`, the fused judge);
* the item table and the two-run diff come from synthetic runs written by the SDK's row writer
  (tests/view/view_rows.py: 1,600 items, two criteria; the second run with a shifted judge and another SDK
  version recorded in its provenance).

No ../shared data is used. Pages are opened in Debian's chromium (/usr/bin/chromium) through Playwright.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ENTRY = "import sys; from judgesdk.cli.app import main; sys.exit(main())"  # the installed command, run by this Python
sys.path.insert(0, str(REPO / "tests"))  # support/: what the tests share

from support import view_rows  # noqa: E402

OUT = REPO / "benchmarks" / "out" / "view-screens"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync"]  # fmt: skip


def judgesdk(*args: str) -> None:
    env = {**os.environ, "JUDGESDK_CACHE_DIR": str(OUT / "cache")}
    subprocess.run([sys.executable, "-c", ENTRY, *args], check=True, env=env)


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    examples = REPO / "examples" / "summaries.jsonl"
    real = OUT / "examples-consistency.jsonl"
    if not real.exists():
        judgesdk("score", str(examples), "--config", str(REPO / "examples" / "local.toml"), "--preset", "summeval",
                 "--criterion", "consistency", "--quiet", "-o", str(real))  # fmt: skip
    judgesdk("view", str(real), "--input", str(examples), "-o", str(OUT / "real.html"), "--title", "judgesdk view: examples/summaries.jsonl, consistency")

    items = view_rows.items(100, 16, seed=21)
    a = view_rows.write_jsonl(OUT / "tonight.jsonl", list(view_rows.rows(items, ("coherence", "relevance"), seed=21)))
    b = view_rows.write_jsonl(OUT / "candidate.jsonl", list(view_rows.rows(items, ("coherence", "relevance"), seed=21, shift=0.3, sdk="0.2.0")))
    inputs = view_rows.write_jsonl(OUT / "items.jsonl", items)
    judgesdk("view", str(a), str(b), "--input", str(inputs), "-o", str(OUT / "synthetic.html"), "--title", "judgesdk view: synthetic run (1,600 items)")

    from playwright.sync_api import sync_playwright

    first_id = next(line for line in examples.read_text().splitlines()).split('"id": "')[1].split('"')[0]
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=FLAGS, headless=True)
        page = browser.new_page(viewport={"width": 1600, "height": 900})

        def shoot(path: Path, anchor: str, name: str, before=None) -> None:
            page.goto(path.as_uri() + anchor)
            page.wait_for_function("() => document.documentElement.dataset.ready === '1'")
            if before:
                before()
            page.screenshot(path=str(REPO / "docs" / name))
            print(f"docs/{name}")

        shoot(OUT / "real.html", "#run", "view-run.png")
        shoot(OUT / "real.html", f"#item/consistency/{first_id.replace(':', '%3A')}", "view-item.png")

        def needs_review() -> None:
            page.select_option("select[aria-label=flag]", "needs_review")
            page.click(".vt-row >> nth=2")
            page.wait_for_selector("#item-detail h2")

        shoot(OUT / "synthetic.html", "#items", "view-items.png", needs_review)
        shoot(OUT / "synthetic.html", "#compare", "view-diff.png")
        browser.close()


if __name__ == "__main__":
    main()
