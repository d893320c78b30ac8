"""``judgesdk view``: a run as one self-contained HTML page, or served live while it runs (:mod:`judgesdk.view`).

    judgesdk view RESULTS [RESULTS_B] [--input ITEMS.jsonl] [--card CARD.json] [--gate GATE.json] [-o report.html]
    judgesdk view RESULTS --input ITEMS.jsonl --serve [--host 127.0.0.1] [--port 8000]

RESULTS is a results file (``judgesdk score -o``), a folder of them (a Ray run's output) or the stem of the
per-criterion files ``judgesdk card`` writes. RESULTS_B, a second run, is compared with the first as
``judgesdk diff RESULTS RESULTS_B`` compares them (deltas are B - A). Results files hold no texts: ``--input``
(the items file the run judged) adds each item's output and source. Exit codes: 0 page written (or server
stopped), 3 bad input.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from judgesdk.core import ExitCode, InputError

LOOPBACK = "127.0.0.1"


def register(commands: Any) -> None:
    p = commands.add_parser(
        "view", help="look at a run: one self-contained HTML page (histograms, item table, each item's distribution and "
        "provenance, two-run deltas, card, gate failures), or --serve it live while the run appends rows",
        description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter,
    )  # fmt: skip
    p.add_argument("results", help="results JSONL (judgesdk score -o), a Ray results folder, or judgesdk card's RESULTS stem")
    p.add_argument("results_b", nargs="?", help="a second run to compare with the first (as judgesdk diff RESULTS RESULTS_B)")
    p.add_argument("--input", type=Path, metavar="ITEMS.jsonl", help="the items the run judged: shows each item's output and source")
    p.add_argument("--card", type=Path, metavar="CARD.json", help="a judge card (judgesdk card's STEM.json): its agreement table and human ceiling")
    p.add_argument("--gate", type=Path, metavar="GATE.json", help="a gate report (judgesdk gate --json-report FILE): which checks and items failed")
    p.add_argument("--tolerance", type=float, default=0.01, help="with RESULTS_B: an item moved when |B - A| exceeds this (default 0.01)")
    p.add_argument("--title", help="the page's title (default: judgesdk view: RESULTS)")
    where = p.add_mutually_exclusive_group()
    where.add_argument("-o", "--output", type=Path, metavar="report.html", help="write the page here (default: RESULTS with .html)")
    where.add_argument("--serve", action="store_true", help="serve the page on a loopback port, refreshing as rows are appended (Ctrl-C stops)")
    p.add_argument("--host", default=LOOPBACK, help=f"with --serve: address to bind (default {LOOPBACK}; anything else exposes the run)")
    p.add_argument("--port", type=int, default=0, help="with --serve: port (default 0: any free port, printed)")
    p.set_defaults(func=run_view)


def run_view(args: argparse.Namespace) -> int:
    from judgesdk.gate import check_output, write_output
    from judgesdk.view import page_data, read_card, read_inputs, read_run, read_verdict, refuse_an_input_as_output, render_page

    if not args.serve and (args.host != LOOPBACK or args.port):
        raise InputError("--host and --port go with --serve: add --serve, or drop them to write a page")
    if args.tolerance < 0 or args.tolerance != args.tolerance:
        raise InputError(f"--tolerance must be a number >= 0, got {args.tolerance}")
    output = args.output
    if not args.serve:
        if output is None:
            if "://" in args.results:
                raise InputError("give -o report.html: the results are not on this machine's filesystem")
            output = Path(args.results.rstrip("/")).with_suffix(".html")
        check_output(output, "-o", "report.html")
        named = [("RESULTS", args.results), ("RESULTS_B", args.results_b), ("--input", args.input), ("--card", args.card), ("--gate", args.gate)]
        refuse_an_input_as_output(output, named, "-o")  # before anything is read or written
    inputs = read_inputs(args.input) if args.input else None
    card = read_card(args.card) if args.card else None
    verdict = read_verdict(args.gate) if args.gate else None

    def build(live: bool = False) -> dict[str, Any]:
        run = read_run(args.results)
        other = read_run(args.results_b) if args.results_b else None
        for each in (run, other):
            _warn_dropped(each.dropped if each is not None else [])
        return page_data(run, compare=other, inputs=inputs, card=card, verdict=verdict, tolerance=args.tolerance, title=args.title, live=live)

    if args.serve:
        return _serve(args, lambda: build(live=True))
    data = build()
    text = render_page(data)
    write_output(output, text, "-o")
    n = len(data["items"]["id"])
    print(f"judgesdk view: wrote {output} ({n} rows, {len(text.encode('utf-8')) / 1e6:.1f} MB): open it in a browser", file=sys.stderr)
    return ExitCode.OK


def _warn_dropped(dropped: list[str], shown: int = 5) -> None:
    """One warning line per row the viewer left out (the first ``shown``, then how many more)."""
    for line in dropped[:shown]:
        print(f"judgesdk view: warning: skipped a row: {line}", file=sys.stderr)
    if len(dropped) > shown:
        print(f"judgesdk view: warning: skipped {len(dropped) - shown} more row(s) whose distribution is no label distribution", file=sys.stderr)


def _serve(args: argparse.Namespace, build: Any) -> int:
    from judgesdk.view import LiveData, make_server, stamp

    live = LiveData(build, lambda: (stamp(args.results), stamp(args.results_b) if args.results_b else ()))
    server = make_server(live, args.host, args.port)
    host, port = server.server_address[:2]
    host = host if isinstance(host, str) else bytes(host).decode()  # typeshed allows bytes; an IP server's host is a str
    shown = f"[{host}]" if ":" in str(host) else host
    try:  # from here on Ctrl-C is how the server is stopped: exit 0
        if args.host not in (LOOPBACK, "localhost", "::1"):
            print(f"judgesdk view: serving on {args.host}: anyone who can reach this machine can read the run", file=sys.stderr)
        print(f"judgesdk view: serving http://{shown}:{port}/ (refreshes as rows are appended; Ctrl-C stops)", file=sys.stderr, flush=True)
        server.serve_forever(poll_interval=0.2)
    except KeyboardInterrupt:
        print("judgesdk view: stopped", file=sys.stderr)
    finally:
        server.server_close()
    return ExitCode.OK
