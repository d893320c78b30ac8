"""Floor 12 (services). ``judgesdk view``: a run as a page to look at, instead of a JSONL file to read.

One self-contained HTML file (scripts, styles and data inline: no network, no CDN, so it opens from a CI
artifact or an e-mail) or, with ``--serve``, the same page from a loopback HTTP server that refreshes as a
run in progress appends rows. The page shows the run's header (judge, provider and model identity, methods,
statuses, cost, tokens, time), a histogram of scores and of interval widths per criterion, a sortable,
filterable item table that stays usable at 100,000 rows (virtualised: only the visible rows are in the DOM),
each item's texts, label distribution, interval, fused signals, jury, notes and provenance under its own URL
anchor, CSV/JSONL export of the filtered rows, and, when given, a second run's deltas (:mod:`judgesdk.meta.diff`),
a judge card's agreement table (:mod:`judgesdk.meta.card`) and a gate report's failures (:mod:`judgesdk.gate`).

* :mod:`~judgesdk.view.load`: the one reading function, :func:`~judgesdk.view.load.read_run` (a results file,
  a Ray results folder, ``judgesdk card``'s per-criterion files), and the side files (inputs for the texts, a
  card, a gate report);
* :mod:`~judgesdk.view.data`: what the page shows, computed once in Python (flags, review reasons,
  histograms, the header's totals, the two-run diff), as one JSON-ready dict; each text stored once;
* :mod:`~judgesdk.view.html`: the page: the data as inert JSON (``<`` escaped, so no text in it can end its
  script element; each item's details deflated in chunks the page inflates when an item is opened, so a
  large run's page stays small and parses fast) beside the script and styles of ``assets/``, under a
  Content-Security-Policy that lets only that script run;
* :mod:`~judgesdk.view.server`: ``--serve``: the page and its data from ``http.server`` on 127.0.0.1.

Text from a run (outputs, sources, ids, notes) reaches the page only as data and the DOM only through
``textContent``: it is shown, never parsed as HTML, and bidirectional or zero-width control characters are
shown as visible marks.

May import: every floor below it (:mod:`judgesdk.gate`, :mod:`judgesdk.distributed`, :mod:`judgesdk.meta`,
:mod:`judgesdk.jury`, :mod:`judgesdk.records`, :mod:`judgesdk.core`...).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from judgesdk.core import lazy as _lazy

if TYPE_CHECKING:
    from judgesdk.view.data import page_data
    from judgesdk.view.html import render_page
    from judgesdk.view.load import Run, read_card, read_inputs, read_run, read_verdict, refuse_an_input_as_output, stamp
    from judgesdk.view.server import LiveData, make_server

__all__ = [
    "LiveData",
    "make_server",
    "page_data",
    "read_card",
    "read_inputs",
    "read_run",
    "read_verdict",
    "refuse_an_input_as_output",
    "render_page",
    "Run",
    "stamp",
]

__getattr__, __dir__ = _lazy(
    __name__,
    {
        "page_data": "judgesdk.view.data",
        "render_page": "judgesdk.view.html",
        **dict.fromkeys(("Run", "read_card", "read_inputs", "read_run", "read_verdict", "refuse_an_input_as_output", "stamp",), "judgesdk.view.load"),
        **dict.fromkeys(("LiveData", "make_server",), "judgesdk.view.server"),
    },
    globals(),
)
