"""The page: one HTML document holding its styles, its script and its data, and nothing it must fetch.

The data (:func:`judgesdk.view.data.page_data`, its bulky per-item details compressed by :func:`packed`)
is embedded as a JSON data block
(``<script type="application/json">``), which a browser never runs. Inside it ``<``, ``>`` and ``&`` are
written as ``\\u003c``, ``\\u003e``, ``\\u0026`` (and U+2028/U+2029 escaped too), so no text from a run, however
it is spelled (``</script>``, ``<!--``), can close the block or open markup: it stays a JSON string, which
the script puts into the page with ``textContent`` only. A Content-Security-Policy (a ``<meta>`` here, and a
header from ``--serve``) lets only the page's own script and styles run (by their sha256) and forbids every
request but those to the serving origin, so even markup that did get in could neither run nor call out.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import math
import re
import zlib
from functools import cache
from importlib import resources
from typing import Any

SCRIPT_ID = "judgesdk-data"
CHUNK = 500  # rows per compressed chunk of details: opening an item inflates about 0.3 MB
_SURROGATE = re.compile("[\ud800-\udfff]")
_ESCAPES = {ord("<"): "\\u003c", ord(">"): "\\u003e", ord("&"): "\\u0026", 0x2028: "\\u2028", 0x2029: "\\u2029"}


@cache
def asset(name: str) -> str:
    """A file of ``judgesdk/view/assets`` (the page's script and styles)."""
    return resources.files("judgesdk.view").joinpath("assets").joinpath(name).read_text(encoding="utf-8")  # one name per joinpath: 3.10's takes one


def _sha256(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode("ascii")


def packed(data: dict[str, Any]) -> dict[str, Any]:
    """``data`` with its items' details (``items.d``, the bulk of a large run) as raw-deflate chunks of
    :data:`CHUNK` rows, base64-encoded: one JSON line per row. The page inflates a chunk (the browser's
    ``DecompressionStream``) when one of its items is opened or exported, so a 100,000-row page parses only
    the table's columns before it can be used, and its file is several times smaller."""
    items = dict(data["items"])
    details = items.pop("d")
    chunks = []
    for start in range(0, len(details), CHUNK):
        lines = "\n".join(data_json(d) for d in details[start : start + CHUNK]).encode("utf-8")
        deflate = zlib.compressobj(6, zlib.DEFLATED, -15)
        chunks.append(base64.b64encode(deflate.compress(lines) + deflate.flush()).decode("ascii"))
    items["details"] = {"chunk": CHUNK, "encoding": "deflate-raw, base64, one JSON line per row", "n": len(details), "chunks": chunks}
    return {**data, "items": items}


def unpacked(data: dict[str, Any]) -> dict[str, Any]:
    """:func:`packed` undone (for tests and scripts that read a page's data back)."""
    items = dict(data["items"])
    found = items.pop("details")
    rows: list[Any] = []
    for chunk in found["chunks"]:
        text = zlib.decompress(base64.b64decode(chunk), -15).decode("utf-8")
        rows.extend(json.loads(line) for line in text.split("\n") if line)
    items["d"] = rows
    return {**data, "items": items}


def data_json(data: Any) -> str:
    """``data`` as JSON that is inert inside an HTML script element (module docstring). Numbers that JSON cannot
    hold (NaN, infinities: a file's ``NaN`` token) become null, and lone surrogates (a file's ``\\udcff`` escape,
    which UTF-8 cannot encode) U+FFFD."""
    try:
        text = json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    except ValueError:  # a non-finite number somewhere: the slow, thorough pass
        text = json.dumps(_finite(data), ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    if not text.isascii():
        text = _SURROGATE.sub("\ufffd", text)  # only inside strings: JSON's own syntax is ASCII
    return text.translate(_ESCAPES)


def _finite(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    return value


def content_security_policy() -> str:
    """Only the page's own script and styles run; requests only to the origin that served it (``--serve``'s
    refresh); no plugins, frames, forms or base URL."""
    return (
        f"default-src 'none'; script-src '{_sha256(asset('view.js'))}'; style-src '{_sha256(asset('view.css'))}'; "
        "img-src data: blob:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    )


def render_page(data: dict[str, Any]) -> str:
    """The whole page as HTML text (UTF-8 when written): one self-contained file, its style, script and data
    inline, that requests nothing but ``--serve``'s refresh. ``data``: what :func:`judgesdk.view.data.page_data`
    returned (its ``title`` names the page); its item details are packed into compressed chunks (:func:`packed`)."""
    title = html.escape(str(data.get("title") or "judgesdk view"), quote=True)
    return (
        "<!doctype html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{content_security_policy()}">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        '<meta name="generator" content="judgesdk view">\n'
        f"<title>{title}</title>\n"
        f"<style>{asset('view.css')}</style>\n"
        "</head>\n<body>\n"
        "<noscript>This report needs JavaScript to lay out its data (it makes no network request).</noscript>\n"
        '<div id="app"></div>\n'
        f'<script type="application/json" id="{SCRIPT_ID}">{data_json(packed(data))}</script>\n'
        f"<script>{asset('view.js')}</script>\n"
        "</body>\n</html>\n"
    )
