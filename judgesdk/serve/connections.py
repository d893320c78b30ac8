"""The connections of ``judgesdk serve``: a bounded number, each given a deadline to send its request's header.

uvicorn (0.54) bounds a header's size (``h11_max_incomplete_event_size``) and an idle keep-alive connection's
life (``timeout_keep_alive``), but nothing bounds how long a client may take to send its header, nor how many
connections are held at once: 1,100 clients that send half a header and stop hold 1,100 file descriptors for
ever, and past the process's ``ulimit -n`` every ``accept()`` fails ("Too many open files", a traceback each
time) and ``/health`` is never answered (issue 41). :func:`guarded_protocol` is uvicorn's own h11 protocol with:

* a **header deadline**: a connection that has not sent a whole request header ``header_timeout_s`` after it
  opened (or after its last answer, on a kept-alive connection) is closed;
* a **connection limit** (:func:`connection_limit`: below the file-descriptor limit by the descriptors already
  open, three accept bursts (:func:`listen_backlog`: how many connections one wake-up of the event loop may
  accept) and a reserve for the judge's files and upstream connections), so ``accept()`` never runs out of
  descriptors. A connection past the limit
  closes the oldest connection still waiting for its header (an attacker's half-open connections go first; a
  client that sends its request at once is never waiting long), or, when every connection is busy with a
  request (bounded by ``--concurrency`` and ``--queue``), is itself closed.

Request bodies are bounded by the app (:mod:`judgesdk.serve.app`: admitted before they are read, read within
``body_timeout_s``).
"""

from __future__ import annotations

import asyncio
import logging
import os
import resource
from collections import OrderedDict
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["KERNEL_QUEUE", "ConnectionGuard", "connection_limit", "fds_in_use", "guarded_protocol", "listen_backlog"]

log = logging.getLogger("judgesdk.serve")

RESERVED_FDS = 32  # beyond those open at start: the record recreated, the log, a few in passing
KERNEL_QUEUE = 2048  # connections the kernel holds for accept() (capped by net.core.somaxconn)


def _soft_limit() -> int:
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


def listen_backlog(fd_limit: int | None = None) -> int:
    """How many connections the event loop accepts in one wake-up (asyncio's accept loop takes the listen backlog
    as its burst), so the headroom a connection limit keeps below ``ulimit -n``; the kernel's queue is set apart
    (:data:`KERNEL_QUEUE`). ``fd_limit``: the soft RLIMIT_NOFILE (None: this process's)."""
    limit = fd_limit if fd_limit is not None else _soft_limit()
    if limit == resource.RLIM_INFINITY:
        return 2048
    return max(16, min(2048, limit // 16))


def fds_in_use() -> int:
    """File descriptors this process holds now (Linux and macOS; 64 where it cannot tell)."""
    for folder in ("/proc/self/fd", "/dev/fd"):
        try:
            return len(os.listdir(folder))
        except OSError:
            continue
    return 64


def connection_limit(concurrency: int, fd_limit: int | None = None, in_use: int | None = None) -> int:
    """The most connections held at once under a soft descriptor limit ``fd_limit`` (None: this process's), for a
    server judging ``concurrency`` requests at once (each may hold upstream connections) that holds ``in_use``
    descriptors already (None: counted now): the limit less those, three accept bursts (the event loop may accept
    again before it has closed the connections it evicts), and a reserve; at least 8."""
    limit = fd_limit if fd_limit is not None else _soft_limit()
    if limit == resource.RLIM_INFINITY:
        return 65536
    used = in_use if in_use is not None else fds_in_use()
    return max(8, limit - used - 3 * listen_backlog(limit) - RESERVED_FDS - 4 * concurrency)


class ConnectionGuard:
    """The connections a server holds: how many (``limit``) and which are waiting for a request header, oldest first,
    each closed ``header_timeout_s`` after it began waiting."""

    def __init__(self, limit: int, header_timeout_s: float) -> None:
        self.limit = limit
        self.header_timeout_s = header_timeout_s
        self.waiting: OrderedDict[Any, asyncio.TimerHandle] = OrderedDict()
        self.open = 0
        self.closed_waiting = 0  # closed for a header that never came (deadline or eviction), for /health
        self.refused = 0  # closed on arrival: every connection busy

    def wait(self, protocol: Any, loop: asyncio.AbstractEventLoop) -> None:
        """``protocol`` now waits for a request header (a new connection, or one kept alive after an answer)."""
        self.done_waiting(protocol)
        self.waiting[protocol] = loop.call_later(self.header_timeout_s, self._expire, protocol)

    def done_waiting(self, protocol: Any) -> None:
        """``protocol`` has its header (or is gone): no deadline and no eviction for it."""
        timer = self.waiting.pop(protocol, None)
        if timer is not None:
            timer.cancel()

    def make_room(self, newcomer: Any) -> bool:
        """Whether ``newcomer`` may stay: at the limit, the oldest connection waiting for a header is closed for it."""
        if self.open <= self.limit:
            return True
        for protocol in self.waiting:
            if protocol is not newcomer:
                self._expire(protocol)
                return True
        self.refused += 1
        return False

    def _expire(self, protocol: Any) -> None:
        self.done_waiting(protocol)
        self.closed_waiting += 1
        protocol.transport.abort()  # no answer owed: the request never began


def guarded_protocol(guard: ConnectionGuard) -> type[H11Protocol]:
    """uvicorn's h11 protocol under ``guard`` (module docstring); given to ``uvicorn.Config(http=...)``."""

    class Guarded(H11Protocol):
        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            guard.open += 1
            guard.wait(self, self.loop)
            if not guard.make_room(self):
                guard.done_waiting(self)
                transport.abort()

        def connection_lost(self, exc: Exception | None) -> None:
            guard.open -= 1
            guard.done_waiting(self)
            super().connection_lost(exc)

        def handle_events(self) -> None:
            super().handle_events()
            if self.cycle is not None and not self.cycle.response_complete:
                guard.done_waiting(self)  # a whole header came: the request is the app's to bound

        def on_response_complete(self) -> None:
            if not self.transport.is_closing():
                guard.wait(self, self.loop)  # before uvicorn reads a pipelined request (which ends the wait again)
            super().on_response_complete()

    return Guarded
