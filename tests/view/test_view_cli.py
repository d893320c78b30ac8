"""``judgesdk view`` on the command line: the page it writes, and ``--serve`` in a child process (the loopback
server, its refresh as rows are appended, its Host check, Ctrl-C)."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from support import view_rows
from support.hostile import run
from support.loopback import http_get
from support.view_rows import embedded


def test_view_writes_one_page_beside_the_results(tmp_path, capsys):
    items = view_rows.items(3, 3)
    results = view_rows.write_jsonl(tmp_path / "results.jsonl", list(view_rows.rows(items)))
    inputs = view_rows.write_jsonl(tmp_path / "items.jsonl", items)
    code, out, err = run(["view", results, "--input", inputs], capsys)
    assert code == 0 and out == "", err
    page = (tmp_path / "results.html").read_text(encoding="utf-8")
    assert "wrote" in err and str(tmp_path / "results.html") in err
    data = embedded(page)
    assert len(data["items"]["id"]) == 9 and data["live"] is False and data["compare"] is None


def test_view_compares_two_runs_and_names_the_output(tmp_path, capsys):
    items = view_rows.items(3, 3)
    a = view_rows.write_jsonl(tmp_path / "a.jsonl", list(view_rows.rows(items)))
    b = view_rows.write_jsonl(tmp_path / "b.jsonl", list(view_rows.rows(items, shift=1.0)))
    code, _, err = run(["view", a, b, "-o", tmp_path / "out" / "page.html", "--title", "A against B", "--tolerance", "0.5"], capsys)
    assert code == 0, err
    data = embedded((tmp_path / "out" / "page.html").read_text(encoding="utf-8"))
    assert data["title"] == "A against B" and data["compare"]["tolerance"] == 0.5 and data["compare"]["new"] == str(b)


# -- --serve ------------------------------------------------------------------------------------------------------


@pytest.fixture
def served(tmp_path):
    """``judgesdk view RESULTS --serve`` in a child process on a free port: (port, results path, process)."""
    items = view_rows.items(4, 5)
    rows = list(view_rows.rows(items))
    results = view_rows.write_jsonl(tmp_path / "results.jsonl", rows[:5])
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    entry = "import sys; from judgesdk.cli.app import main; sys.exit(main())"
    proc = subprocess.Popen([sys.executable, "-c", entry, "view", str(results), "--serve", "--port", "0"], stderr=subprocess.PIPE, text=True, env=env)
    try:
        line = proc.stderr.readline()  # readiness: the server prints its address once it listens
        found = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        assert found, line
        yield int(found.group(1)), results, rows, proc
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
        proc.stderr.close()


def test_serve_answers_on_loopback_and_refreshes_as_rows_are_appended(served):
    port, results, rows, proc = served
    status, headers, body = http_get(port, "/")
    assert status == 200 and headers["Content-Type"].startswith("text/html")
    assert "default-src 'none'" in headers["Content-Security-Policy"] and headers["X-Content-Type-Options"] == "nosniff"
    data = embedded(body.decode("utf-8"))
    assert data["live"] is True and len(data["items"]["id"]) == 5
    status, headers, body = http_get(port, "/data.json")
    etag = headers["ETag"]
    assert status == 200 and json.loads(body)["version"] == data["version"]
    assert http_get(port, "/data.json", {"If-None-Match": etag})[0] == 304
    with results.open("a", encoding="utf-8") as fh:  # the run goes on
        for row in rows[5:]:
            fh.write(json.dumps(row) + "\n")
    deadline = time.monotonic() + 60
    while True:  # a file's modification time can be coarse: wait for the change to be seen
        status, headers, body = http_get(port, "/data.json", {"If-None-Match": etag})
        if status == 200 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
        os.utime(results)
    assert status == 200 and len(json.loads(body)["items"]["id"]) == len(rows)
    assert http_get(port, "/nothing")[0] == 404


def test_serve_refuses_requests_for_another_host(served):
    """A page elsewhere that rebinds its own name to 127.0.0.1 sends its own Host: it gets nothing."""
    port, *_ = served
    status, _, body = http_get(port, "/data.json", {"Host": f"attacker.example:{port}"})
    assert status == 421 and b"items" not in body
    assert http_get(port, "/", {"Host": f"localhost:{port}"})[0] == 200


def test_serve_stops_on_ctrl_c(served):
    port, _, _, proc = served
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=30) == 0
    assert "stopped" in proc.stderr.read()
