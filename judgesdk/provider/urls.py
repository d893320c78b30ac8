"""Provider addresses: what a ``base_url`` must look like, and how one is shown without its credentials.

A ``base_url`` may carry credentials (``http://user:KEY@proxy/v1``, for a proxy that takes basic auth). They
are sent to that host and nowhere else, and never shown: an adapter's ``endpoint`` (what errors, rows, cache
keys and provenance name) is the address without them (:func:`redact_url`), and provider error texts pass
through :func:`scrub_credentials` in case a client library quotes a URL. An address without ``http://`` or
``https://`` and a host is a configuration error (:func:`check_base_url`), found when the config is loaded,
not a "connection error" retried for every item.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

__all__ = ["check_base_url", "redact_url", "scrub_credentials"]

_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/\s@'\"]*@")


def redact_url(url: str) -> str:
    """``url`` without the ``user:password@`` part of its address (unchanged when it has none)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return scrub_credentials(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


def scrub_credentials(text: str) -> str:
    """``text`` with the credentials of every URL in it replaced by ``***`` (``http://***@host/...``)."""
    return _USERINFO.sub(r"\1***@", text)


def check_base_url(url: str) -> str:
    """``url`` when it is an ``http://`` or ``https://`` address with a host; else a ``ValueError`` saying what
    to write (its text is the config loader's one line; the address itself is not repeated: it may hold a key)."""
    try:
        parts = urlsplit(url.strip())
        host = parts.hostname
    except ValueError:
        parts, host = None, None
    if parts is None or parts.scheme.lower() not in ("http", "https"):
        raise ValueError("must start with http:// or https:// (e.g. http://127.0.0.1:8080/v1)")
    if not host:
        raise ValueError("names no host: write it as http://HOST:PORT/v1")
    return url.strip()
