"""Provider addresses: what a ``base_url`` must look like, and how one is shown without its credentials.

A ``base_url`` may carry credentials (``http://user:KEY@proxy/v1``, for a proxy that takes basic auth). They
are sent to that host and nowhere else, and never shown: an adapter's ``endpoint`` (what errors, rows, cache
keys and provenance name) is the address without them (:func:`redact_url`), and provider error texts pass
through :func:`scrub_credentials` in case a client library quotes a URL. An address without ``http://`` or
``https://`` and a host is a configuration error (:func:`check_base_url`), found when the config is loaded,
not a "connection error" retried for every item.

A key is never shown either, whoever repeats it (issue 41): a server that answers 401 with the request's
``Authorization`` header in its body, a refusal whose reason quotes the key. :func:`scrub_credentials` is the one
redaction: it knows the keys in play (those :func:`remember_secret` was told of: each provider's configured key as
its adapter is built, the key an adapter sends, ``judgesdk serve``'s own client key; and the value of every
``*_API_KEY`` variable in the environment, the vendor variables an adapter or LiteLLM reads), and removes any
``Authorization: Bearer`` / ``x-api-key`` value whatever it is. It is applied where text leaves a provider (the
answer check directly above every adapter: errors, notes, refusal reasons, provenance) and to everything ``judgesdk
serve`` answers or records. The keys are held in this process's memory only: never logged, written or hashed.
"""

from __future__ import annotations

import json
import os
import re
import threading
from typing import Any, TypeVar
from urllib.parse import quote, urlsplit, urlunsplit

__all__ = ["check_base_url", "redact_url", "remember_secret", "scrub_credentials", "scrub_exception", "scrub_json"]

E = TypeVar("E", bound=BaseException)

REDACTED = "***"
SHORT_KEY = 8  # a key shorter than this is redacted only where it stands alone (scrub_credentials)

_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://)[^/\s@'\"]*@")
# a bearer value as sent (RFC 6750's token68 characters; 8 or more, so prose such as "bearer <key>" stays readable)
_BEARER = re.compile(r"(?i)\b(bearer\s+)[A-Za-z0-9\-._~+/]{8,}=*")
# an x-api-key (or api-key, api_key) value, as a header line, a JSON member or a query parameter
_API_KEY_VALUE = re.compile(r"""(?i)\b((?:x-)?api[-_]?key["']?\s*[:=]\s*["']?)[A-Za-z0-9][^\s'"<>,;&(){}\[\]\\]*""")
_SECRETS: set[str] = set()
_LOCK = threading.Lock()


def redact_url(url: str) -> str:
    """``url`` without the ``user:password@`` part of its address (unchanged when it has none)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return scrub_credentials(url)
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rsplit("@", 1)[1]))


def remember_secret(value: str | None) -> None:
    """Add ``value`` (a key about to be sent, or one a server will check) to the keys :func:`scrub_credentials`
    removes, for the rest of this process. None, an empty or blank value is ignored. The key is held in memory
    only: never logged, written or hashed."""
    if value and value.strip():
        with _LOCK:
            _SECRETS.update({value, value.strip()})


def _secrets(extra: tuple[str | None, ...]) -> list[str]:
    """Every key in play, longest first (a key that begins another is removed after it, never leaving its tail)."""
    found = {value for value in extra if value and value.strip()}
    with _LOCK:
        found.update(_SECRETS)
    found.update(value for name, value in os.environ.items() if name.upper().endswith("API_KEY") and value.strip())
    forms = set()
    for key in found:  # as written, and as JSON or a URL would quote it
        forms.update({key, key.strip(), json.dumps(key)[1:-1], quote(key, safe="")})
    return sorted((form for form in forms if form.strip()), key=len, reverse=True)


def scrub_credentials(text: str, *secrets: str | None) -> str:
    """``text`` without a credential in it: every URL's ``user:password@`` part, every ``Authorization: Bearer``
    and ``x-api-key`` value, and every key in play (the module docstring; ``secrets`` adds more) wherever it
    appears (in JSON, in a URL, repeated), each replaced by ``***``.

    A key of :data:`SHORT_KEY` (8) characters or more is removed wherever it appears, inside a longer word too. A
    shorter key is removed where it appears verbatim as a whole word (not touching a letter or digit on either
    side): removing every occurrence of a key such as ``k7`` inside other words would make a message unreadable
    without hiding anything more, while the key itself, as a server would echo it, is still removed."""
    if not text:
        return text
    text = _USERINFO.sub(r"\1***@", text)
    text = _BEARER.sub(r"\1***", text)
    text = _API_KEY_VALUE.sub(r"\1***", text)
    for key in _secrets(secrets):
        if key not in text:
            continue
        if len(key) >= SHORT_KEY:
            text = text.replace(key, REDACTED)
        else:
            text = re.sub(rf"(?<![A-Za-z0-9]){re.escape(key)}(?![A-Za-z0-9])", REDACTED, text)
    return text


def scrub_json(value: Any) -> Any:
    """``value`` (JSON: a dict, list, text...) with :func:`scrub_credentials` applied to every text in it, keys
    included; other values as they are (a value with nothing to remove is returned as it is)."""
    if isinstance(value, str):
        return scrub_credentials(value)
    if isinstance(value, dict):
        return {scrub_json(key): scrub_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(scrub_json(item) for item in value)
    return value


def scrub_exception(exc: E) -> E:
    """``exc``, its texts scrubbed in place (:func:`scrub_credentials` on every text in its ``args``, and in those of
    the exceptions it was raised from, which a traceback would show), type and attributes kept; returned."""
    seen: BaseException | None = exc
    for _ in range(8):
        if seen is None:
            break
        if any(isinstance(arg, str) for arg in seen.args):
            try:
                seen.args = tuple(scrub_credentials(arg) if isinstance(arg, str) else arg for arg in seen.args)
            except (AttributeError, TypeError):  # an exception type whose args cannot be set
                pass
        seen = seen.__cause__ or seen.__context__
    return exc


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
