"""Floor 12, services: ``judgesdk serve``, the decisions server.

A local HTTP server that answers decision requests in both wire formats with any configured judge behind it:

* ``POST /v1/decisions`` (OpenAI Decisions) and ``POST /v1/systemone`` (System One), read and written by the
  same wire modules the decision adapters use (:mod:`judgesdk.providers.decisions_wire`,
  :mod:`judgesdk.providers.systemone_wire`); ``GET /v1/models`` (the judge, and the criteria it has fits for)
  and ``GET /health`` (in flight, queued, served).
* :mod:`~judgesdk.serve.backend`: the judge behind it and how a question becomes a judgement: the embedded
  local judge by default (the fused judge where a question names a criterion it has a fit for, with its
  predictive distribution over the question's levels; any other question refused with the reason, or with
  ``--allow-unfitted`` answered by the prompted method and flagged unfitted), or a configured chain (a hosted
  model with judgesdk's cache, fallback, budget and rate limits in front), which answers every question.
* :mod:`~judgesdk.serve.app`: the HTTP side (starlette): bearer key, body size limit, a bounded queue (429 with
  ``Retry-After`` when full) that admits a request before its body is read, the schemas' error bodies and status
  codes, never a traceback or a hang; an access log without the judged text or any key.
* :mod:`~judgesdk.serve.edge`: what a body must be before anything reads it further: JSON nested at most 64
  levels, no lone surrogate in any text (400s, never a RecursionError or an unencodable answer).
* :mod:`~judgesdk.serve.connections`: uvicorn's connections bounded: a deadline for a request's header, a
  connection limit below ``ulimit -n`` (the oldest half-open connection closed for a newcomer).
* :mod:`~judgesdk.serve.record`: every served judgement appended to a results file (``--record``), in the rows
  ``judgesdk score -o`` writes, so ``meta-eval``, ``card``, ``gate`` and ``diff`` read it unchanged.
* :mod:`~judgesdk.serve.run`: uvicorn on 127.0.0.1 unless told otherwise (the address bound first: a port in use
  is one line); SIGTERM finishes what is in flight, and answers 503 to what outlives ``--grace-s``.
* :mod:`~judgesdk.serve.settings`: the server's settings (:class:`ServeSettings`).

Needs the ``serve`` extra (starlette, uvicorn): ``pip install 'judgesdk[serve]'``.

May import: every floor below the command line: :mod:`judgesdk.core`, :mod:`judgesdk.provider`,
:mod:`judgesdk.stats`, :mod:`judgesdk.providers`, :mod:`judgesdk.prompting`, :mod:`judgesdk.estimation`,
:mod:`judgesdk.records`, :mod:`judgesdk.fused`, :mod:`judgesdk.scorers`, :mod:`judgesdk.judging`,
:mod:`judgesdk.meta`, :mod:`judgesdk.forecast`, :mod:`judgesdk.jury`, :mod:`judgesdk.gate`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from judgesdk.core import lazy as _lazy

if TYPE_CHECKING:
    from judgesdk.serve.run import serve
    from judgesdk.serve.settings import DEFAULT_PORT, ServeSettings

__all__ = [
    "DEFAULT_PORT",
    "serve",
    "ServeSettings",
]

__getattr__, __dir__ = _lazy(
    __name__,
    {
        "serve": "judgesdk.serve.run",
        **dict.fromkeys(("DEFAULT_PORT", "ServeSettings",), "judgesdk.serve.settings"),
    },
    globals(),
)
