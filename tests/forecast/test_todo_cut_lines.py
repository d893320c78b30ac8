"""The estimate of what is left to judge reads a results file as the resume will (issue 28, item 4): a cut line is
skipped and its item counted as left to judge, never an error that the run itself would not raise."""

from __future__ import annotations

import json

from judgesdk.core.types import JudgeItem
from judgesdk.forecast.job import todo_items
from judgesdk.records import Ask, Ledger

ASK = Ask("quality", "geval", "cfg0000001")


def test_the_estimate_skips_a_cut_line_as_the_resume_does(tmp_path):
    path = tmp_path / "r.jsonl"
    rows = [{"id": i, "criterion": "quality", "asked": ASK.key, "score": 3.0, "status": "ok"} for i in "abc"]
    path.write_text(json.dumps(rows[0]) + "\n" + "{cut\n" + json.dumps(rows[1]) + "\n" + json.dumps(rows[2])[:20])
    items = [(JudgeItem(id=i, output=f"out {i}"), {}) for i in "abcd"]
    left = [item.id for item in todo_items(items, path, ASK)]
    with Ledger.open(path) as ledger:  # what the run resumes from
        assert sorted(ledger.final_ids(ASK)) == ["a", "b"]
    assert left == ["c", "d"]
