"""The hostile catalogue, ``judgesdk view`` (issue 41, item 5). Class: **view**.

* ``-o`` naming a file the page is read from (the results file, the ``--input`` items file, by another spelling of
  its path or a hard link) is one error line, exit 3, and that file is left as it was;
* a row whose distribution is no label distribution (a negative probability, an infinite one, or one so large that
  its entropy is infinite) is one line: a warning that skips the row in ``view`` and in ``view --serve`` (which
  stays up: the page and ``/healthz`` answer after such a row is appended), an error with exit 3 in ``gate``
  (kind ``review``, which reads the distributions); never a traceback. The check is the row schema's
  (:func:`judgesdk.records.distribution_problem`).

The CSV export's escaping of formula-leading cells (``-2+3+cmd|' /C calc'!A0``) is the page's own code, so its
row is a browser test beside the others: tests/view/test_view_browser.py::test_the_csv_export_escapes_every_formula_leading_cell.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from support.hostile import assert_one_line_error, run
from support.loopback import http_get

ENTRY = "import sys; from judgesdk.cli.app import main; sys.exit(main())"
GOOD_PROBS = {"1": 0.1, "2": 0.2, "3": 0.4, "4": 0.2, "5": 0.1}
# each a row's distribution that is none: the JSON text of its probabilities
BAD_PROBS = {
    "negative": '{"1": -0.5, "2": 1.5, "3": 0, "4": 0, "5": 0}',
    "infinite": '{"1": Infinity, "2": 0.2, "3": 0.4, "4": 0.2, "5": 0.1}',
    "infinite entropy": '{"1": 1e308, "2": 1e308, "3": 0, "4": 0, "5": 0}',
}


def _row(item: str, probs: str | None = None) -> str:
    row = {"id": item, "score": 3, "status": "ok", "criterion": "c", "method": "geval", "distribution": {"probs": GOOD_PROBS, "method": "logprobs", "coverage": 0.9}}
    line = json.dumps(row)
    return line if probs is None else line.replace(json.dumps(GOOD_PROBS), probs)


def _results(tmp_path: Path, bad: str | None = None, n: int = 3) -> Path:
    path = tmp_path / "results.jsonl"
    lines = [_row(str(i)) for i in range(n)] + ([_row("bad", BAD_PROBS[bad])] if bad else [])
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8")
    return path


# -- view: -o never overwrites an input ---------------------------------------------------------------------------


@pytest.mark.parametrize("spelling", ["same", "dotted", "hard link"])
def test_view_o_naming_the_results_file_is_refused_and_leaves_it(spelling, tmp_path, capsys):
    results = _results(tmp_path)
    before = results.read_bytes()
    output = {"same": results, "dotted": tmp_path / "sub" / ".." / results.name, "hard link": tmp_path / "link.jsonl"}[spelling]
    if spelling == "hard link":
        os.link(results, output)
    code, out, err = run(["view", results, "-o", output], capsys)
    assert_one_line_error(code, err, "-o", "RESULTS", "overwrite")
    assert out == "" and results.read_bytes() == before


def test_view_o_naming_the_input_items_file_is_refused_and_leaves_it(tmp_path, capsys):
    results = _results(tmp_path)
    items = tmp_path / "items.jsonl"
    items.write_text("".join(json.dumps({"id": str(i), "output": f"Output {i}."}) + "\n" for i in range(3)), encoding="utf-8")
    before = items.read_bytes()
    code, out, err = run(["view", results, "--input", items, "-o", items], capsys)
    assert_one_line_error(code, err, "-o", "--input", "overwrite")
    assert out == "" and items.read_bytes() == before


def test_view_the_default_output_beside_a_results_file_named_html_is_refused(tmp_path, capsys):
    results = tmp_path / "run.html"
    results.write_text(_row("1") + "\n", encoding="utf-8")
    before = results.read_bytes()
    code, _, err = run(["view", results], capsys)
    assert_one_line_error(code, err, "RESULTS", "overwrite")
    assert results.read_bytes() == before


# -- view, view --serve, gate: a row whose distribution is none is one line ---------------------------------------


@pytest.mark.parametrize("bad", list(BAD_PROBS))
def test_view_a_row_whose_distribution_is_none_is_a_warning_that_skips_it(bad, tmp_path, capsys):
    results = _results(tmp_path, bad)
    code, out, err = run(["view", results, "-o", tmp_path / "page.html"], capsys)
    assert code == 0 and out == "" and "Traceback" not in err, err
    warnings = [line for line in err.splitlines() if "warning" in line]
    assert len(warnings) == 1 and "row 4" in warnings[0] and "distribution.probs" in warnings[0], err
    assert "(3 rows" in err  # the good rows are on the page


@pytest.mark.parametrize("bad", list(BAD_PROBS))
def test_gate_review_a_row_whose_distribution_is_none_is_one_error_line(bad, tmp_path, capsys):
    results = _results(tmp_path, bad)
    config = tmp_path / "gate.toml"
    config.write_text('[[criteria]]\nname = "c"\nscale = "1-5"\n[[gates]]\nname = "r"\nkind = "review"\ncriterion = "c"\nmax_share = 0.5\n', encoding="utf-8")
    code, _, err = run(["gate", "--config", config, "--results", results], capsys)
    assert_one_line_error(code, err, "row 4", "distribution.probs")


@pytest.mark.parametrize("bad", list(BAD_PROBS))
@pytest.mark.parametrize("when", ["at start", "appended"])
def test_view_serve_a_row_whose_distribution_is_none_is_skipped_and_the_server_stays_up(bad, when, tmp_path):
    results = _results(tmp_path, bad if when == "at start" else None)
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-c", ENTRY, "view", str(results), "--serve", "--port", "0"], stderr=subprocess.PIPE, text=True, env=env)
    seen: list[str] = []
    try:
        while True:  # readiness: the server prints its address once it listens (warnings before it)
            line = proc.stderr.readline()
            seen.append(line)
            found = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
            if found or not line:
                break
        assert found, "".join(seen)
        port = int(found.group(1))
        status, headers, body = http_get(port, "/data.json")
        assert status == 200 and len(json.loads(body)["items"]["id"]) == 3
        if when == "appended":
            etag = headers["ETag"]
            with results.open("a", encoding="utf-8") as fh:
                fh.write(_row("bad", BAD_PROBS[bad]) + "\n")
            deadline = time.monotonic() + 60
            while True:  # a file's modification time can be coarse: wait for the change to be seen
                status, _, body = http_get(port, "/data.json", {"If-None-Match": etag})
                if status != 304 or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
                os.utime(results)
            assert status == 200 and len(json.loads(body)["items"]["id"]) == 3, body[:300]
        status, _, page = http_get(port, "/")
        assert status == 200 and b"<html" in page.lower()
        status, _, health = http_get(port, "/healthz")
        assert status == 200 and json.loads(health)["rows"] == 3
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        rest = proc.stderr.read()
        proc.stderr.close()
    err = "".join(seen) + rest
    assert proc.returncode == 0 and "Traceback" not in err, err
    warnings = [line for line in err.splitlines() if "warning" in line]
    assert len(warnings) == 1 and "row 4" in warnings[0] and "distribution.probs" in warnings[0], err
