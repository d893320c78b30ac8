"""``judgesdk diff OLD NEW``: which verdicts moved between two results files, and why (:mod:`judgesdk.meta.diff`).

    judgesdk diff last-week.jsonl tonight.jsonl [--criterion C] [--tolerance 0.01] [--show 20] [--json]

Exit codes as ``diff(1)``: 0 no item moved beyond the tolerance, 1 some did, 2 nothing could be compared (no item
and criterion in both files: one line on stderr says why), 3 bad input (a line that is not a whole JSON row included).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from judgesdk.core import ExitCode


def register(commands: Any) -> None:
    p = commands.add_parser("diff", help="compare two results files item by item, naming what changed in the judge")
    p.add_argument("old", type=Path, help="the earlier results JSONL (judgesdk score -o)")
    p.add_argument("new", type=Path, help="the later results JSONL")
    p.add_argument("--criterion", action="append", help="only this criterion (repeatable; default: all)")
    p.add_argument("--tolerance", type=float, default=0.01, help="a score moved when |new - old| exceeds this (default 0.01)")
    p.add_argument("--show", type=int, default=20, metavar="N", help="list at most N changed items (default 20; the JSON has all)")
    p.add_argument("--json", action="store_true", help="print the whole report as JSON")
    p.set_defaults(func=run_diff)


def run_diff(args: argparse.Namespace) -> int:
    from judgesdk.meta import diff_files

    report = diff_files(args.old, args.new, tolerance=args.tolerance, criteria=args.criterion)
    if args.json:
        print(report.model_dump_json(indent=2))
    elif not report.nothing_compared:
        _print(report, max(args.show, 0))
    if report.nothing_compared:
        print(f"judgesdk diff: nothing to compare: {report.nothing_compared}", file=sys.stderr)
        return ExitCode.INCOMPLETE
    return ExitCode.FAILED if report.changed else ExitCode.OK


def _print(report: Any, show: int) -> None:
    print(f"{report.paired} items in both files ({report.only_old} only in {report.old}, {report.only_new} only in {report.new})")
    print(f"{len(report.changed)} moved beyond {report.tolerance:g} or changed status; {report.provenance_changed} paired items were judged by a different judge record")
    for field, count in report.causes.items():
        print(f"  {count} moved with a change in {field}")
    if report.unexplained:
        print(f"  {report.unexplained} moved with the same judge record: unexplained (a nondeterministic backend, or a change the record does not capture)")
    shift = report.shift
    if shift.n:
        p = "n/a (fewer than 2 non-zero shifts)" if shift.p_value is None else f"{shift.p_value:.4g}"
        print(f"shift over {shift.n} items scored in both: mean {shift.mean:+.4f}, median {shift.median:+.4f}, p = {p} ({shift.test})")
    for change in report.changed[:show]:
        scores = f"{_fmt(change.old_score)} -> {_fmt(change.new_score)}"
        status = "" if change.old_status == change.new_status else f" [{change.old_status} -> {change.new_status}]"
        why = "; ".join(f"{k}: {a or '-'} -> {b or '-'}" for k, (a, b) in change.causes.items()) or "unexplained"
        print(f"  {change.id} {change.criterion}: {scores}{status} ({why})")
    if len(report.changed) > show:
        print(f"  ... {len(report.changed) - show} more (--show N, or --json)")


def _fmt(value: float | None) -> str:
    return "null" if value is None else f"{value:.3f}"
