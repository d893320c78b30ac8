"""The HTTP side of ``judgesdk serve`` (starlette): routes, admission, errors, the access log.

Every answer is JSON. A request that cannot be served gets the status and body the schemas define (OpenAI's
error envelope ``{"error": {"message", "type", "param", "code"}}``, which LiteLLM's proxy also answers on its
System One route), never a traceback and never a hang:

=====  ======================  ===================================================================
 400   ``invalid_request`` ... body not JSON or not the schema; a box question, an image, audio, video, assets,
                               a tool-call input item (``unsupported_*``); more questions than the server
                               takes (``too_many_questions``); more than 10 levels (``too_many_levels``);
                               JSON nested too deep (``too_deep``) or a lone surrogate (``invalid_text``),
                               the ``input`` text included (:mod:`judgesdk.serve.edge`)
 401   ``invalid_api_key``     a key is set (``--api-key-env``) and the request's bearer key is missing or wrong
 404   ``model_not_found``     a model other than the served judge's name; ``not_found`` for another path
 405   ``method_not_allowed``  e.g. GET on a POST route
 408   ``body_timeout``        the body did not arrive within ``--body-timeout-s`` (read only once admitted)
 413   ``body_too_large``      a body above ``--max-body-bytes`` (read no further than the limit)
 429   ``queue_full``          ``concurrency`` requests judging and ``queue`` waiting (or reading their bodies,
                               which are read only once admitted): ``Retry-After`` says when
 500   ``internal_error``      anything unexpected, named by its type only (the traceback goes to the log at DEBUG)
 503   ``shutting_down``       after SIGTERM, while what is in flight finishes, and to what is still in flight
                               when ``--grace-s`` ends; ``judge_unavailable`` once the budget (``--max-tokens``,
                               ``--max-usd``) is spent; ``record_unavailable`` when ``--record`` refuses the row
                               (a full disk: :mod:`judgesdk.serve.record`)
 504   ``timeout``             judging took longer than ``--timeout-s``
=====  ======================  ===================================================================

The access log (logger ``judgesdk.serve.access``, one line a request) has the method, path, status, latency and
question count: never the judged text, never a key.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
import math
import os
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from judgesdk.core import ConfigError, InputError, JudgeSDKError
from judgesdk.provider import RequestError, ServedWire, remember_secret, scrub_credentials, scrub_exception, scrub_json
from judgesdk.providers import DECISIONS_WIRE, SYSTEMONE_WIRE
from judgesdk.serve.backend import Backend, total_usage
from judgesdk.serve.edge import MAX_DEPTH, check_texts, parse_body
from judgesdk.serve.record import Recorder, RecordUnavailable, item_id
from judgesdk.serve.settings import ServeSettings

__all__ = ["Answer", "Service", "ShuttingDown", "api_key", "build_app", "error"]

T = TypeVar("T")

access = logging.getLogger("judgesdk.serve.access")
log = logging.getLogger("judgesdk.serve")

WIRES: dict[str, ServedWire] = {"/v1/decisions": DECISIONS_WIRE, "/v1/systemone": SYSTEMONE_WIRE}


class Answer(JSONResponse):
    """Every answer the server sends, as JSON with no credential in it: each text passes
    :func:`judgesdk.provider.scrub_credentials` (the upstream's keys, this server's own client key, any bearer value),
    so that an upstream error that echoes its key never reaches a client (issue 41)."""

    def render(self, content: Any) -> bytes:
        return super().render(scrub_json(content))


def error(status: int, message: str, code: str, *, param: str | None = None, headers: dict[str, str] | None = None) -> JSONResponse:
    """An error answer in the schemas' envelope."""
    body = RequestError(message, param=param, code=code, status=status).body()
    return Answer(body, status_code=status, headers=headers)


class ShuttingDown(Exception):
    """The server's grace period after SIGTERM ended before this request did (answered 503, in the schemas' body)."""


class Service:
    """What a server holds while it runs: its settings, the judge, the record, the admission counters."""

    def __init__(self, settings: ServeSettings, backend: Backend, recorder: Recorder | None = None) -> None:
        self.settings = settings
        self.backend = backend
        self.recorder = recorder
        self.key = api_key(settings.api_key_env)
        remember_secret(self.key)  # never in an answer, the record or the log (judgesdk.provider.urls)
        self.slots = asyncio.Semaphore(settings.concurrency)
        self.pending = 0  # admitted: reading its body, judging or waiting for a slot
        self.in_flight = 0
        self.served: dict[str, int] = {route: 0 for route in WIRES}
        self.turned_away = 0
        self.draining = False
        self.stopped: asyncio.Event | None = None  # set once SIGTERM's grace is over (made in the server's loop: start)
        self.loop: asyncio.AbstractEventLoop | None = None
        self.connections: Any = None  # the server's ConnectionGuard, for /health (judgesdk.serve.connections)
        self._seconds = 1.0  # a running mean of one request's judging time, for Retry-After

    def retry_after(self) -> int:
        """Seconds until a slot is likely free: the queue ahead of a newcomer, at the recent pace."""
        waves = self.pending / self.settings.concurrency
        return max(1, math.ceil(self._seconds * max(waves, 1.0)))

    def health(self) -> dict[str, Any]:
        meter = self.backend.meter
        spent = {} if meter is None else {"budget": meter.state().model_dump(mode="json", exclude={"budget"})}
        guard = self.connections
        held = {} if guard is None else {"connections": {"open": guard.open, "limit": guard.limit, "closed_waiting": guard.closed_waiting}}
        recorder = {} if self.recorder is None else {"not_recorded": self.recorder.failures}
        return {**spent, **held, **recorder,
            "status": "draining" if self.draining else "ok",
            "in_flight": self.in_flight,
            "queued": self.pending - self.in_flight,
            "served": dict(self.served),
            "turned_away": self.turned_away,
            "concurrency": self.settings.concurrency,
            "queue": self.settings.queue,
        }  # fmt: skip

    def start(self) -> None:
        """Called in the server's event loop before it serves: what :meth:`stop_after` needs."""
        self.loop = asyncio.get_running_loop()
        self.stopped = asyncio.Event()

    def stop_after(self, grace_s: float) -> None:
        """SIGTERM: answer 503 to new requests now, and to those still in flight once ``grace_s`` seconds have passed.
        Safe to call from a signal handler."""
        self.draining = True
        loop, stopped = self.loop, self.stopped
        if loop is not None and stopped is not None:
            loop.call_soon_threadsafe(loop.call_later, grace_s, stopped.set)

    async def bounded(self, work: Awaitable[T], timeout: float) -> T:
        """``work``'s result, within ``timeout`` seconds (:class:`asyncio.TimeoutError` past it) and before the end of
        SIGTERM's grace (:class:`ShuttingDown`); ``work`` is cancelled when it loses."""
        task = asyncio.ensure_future(work)
        stop = asyncio.ensure_future(self.stopped.wait()) if self.stopped is not None else None
        try:
            await asyncio.wait([t for t in (task, stop) if t is not None], timeout=timeout, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if stop is not None:
                stop.cancel()
            if not task.done():
                task.cancel()
        if not task.done() or task.cancelled():
            raise ShuttingDown() if stop is not None and stop.done() and not stop.cancelled() else asyncio.TimeoutError()
        return task.result()

    async def judged(self, call: Callable[[], Awaitable[Any]]) -> Any:
        """``call`` once a slot is free (the caller was admitted), bounded by ``timeout_s`` and SIGTERM's grace."""
        return await self.bounded(self._in_slot(call), self.settings.timeout_s)

    async def _in_slot(self, call: Callable[[], Awaitable[Any]]) -> Any:
        async with self.slots:
            self.in_flight += 1
            started = time.perf_counter()
            try:
                return await call()
            finally:
                self.in_flight -= 1
                self._seconds = 0.8 * self._seconds + 0.2 * (time.perf_counter() - started)


def api_key(variable: str | None) -> str | None:
    """The bearer key callers must send, read from ``variable`` (None: no key); a :class:`ConfigError` when it is
    unset, empty, or has surrounding whitespace (which a client never sends: every call would fail 401 unexplained)."""
    if not variable:
        return None
    key = os.environ.get(variable)
    if not key:
        raise ConfigError(f"--api-key-env names {variable}, which is not set: export {variable}=<key>")
    if key != key.strip():
        raise ConfigError(
            f"${variable} has whitespace around the key (a trailing newline?): clients send the key without it and every call "
            f"would fail 401; set it again without the whitespace"
        )  # fmt: skip
    return key


UNAUTHORIZED = "missing or wrong API key: send Authorization: Bearer <key>"


class Routes:
    """The routes of a server over ``service`` (module docstring): each answer JSON, every failure in the schemas'
    envelope."""

    def __init__(self, service: Service) -> None:
        self.service = service
        self.settings = service.settings

    def authorized(self, request: Request) -> bool:
        if self.service.key is None:
            return True
        given = request.headers.get("authorization", "")
        scheme, _, token = given.partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(token.strip().encode(), self.service.key.encode())

    async def body_of(self, request: Request) -> bytes | None:
        """The body, or None once it passes the limit (read no further); read within ``body_timeout_s``."""
        limit = self.settings.max_body_bytes
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            return None

        async def read() -> bytes | None:
            chunks, size = [], 0
            async for chunk in request.stream():
                size += len(chunk)
                if size > limit:
                    return None
                chunks.append(chunk)
            return b"".join(chunks)

        return await self.service.bounded(read(), self.settings.body_timeout_s)

    async def decide(self, request: Request) -> Response:
        route = request.url.path
        started = time.perf_counter()
        questions = 0
        response: Response
        try:
            response, questions = await self.admitted(request, route, WIRES[route])
        except ShuttingDown:
            response = error(503, "the server shut down before this request was answered: retry on another instance", "shutting_down", headers={"Retry-After": "5"})
        except Exception as exc:  # noqa: BLE001 - an unexpected failure is a 500 named by its type, never a traceback
            log.warning("judgesdk serve: %s on %s: %s", type(exc).__name__, route, scrub_credentials(str(scrub_exception(exc))))
            log.debug("traceback", exc_info=exc)
            response = error(500, f"internal error ({type(exc).__name__}); the server log says more", "internal_error")
        access.info("%s %s %d %.0fms questions=%d", request.method, route, response.status_code, 1000 * (time.perf_counter() - started), questions)
        return response

    async def admitted(self, request: Request, route: str, wire: ServedWire) -> tuple[Response, int]:
        """The answer to a decision request: turned away before its body is read (draining, no key, the server full),
        else admitted (a queue slot held while its body is read and it is judged)."""
        service, settings = self.service, self.settings
        if service.draining:
            return error(503, "the server is shutting down: retry on another instance", "shutting_down", headers={"Retry-After": "5"}), 0
        if not self.authorized(request):
            return error(401, UNAUTHORIZED, "invalid_api_key"), 0
        if service.pending >= settings.concurrency + settings.queue:
            service.turned_away += 1
            return error(
                429, f"the server is full ({settings.concurrency} judging, {settings.queue} waiting): retry later", "queue_full",
                headers={"Retry-After": str(service.retry_after())},
            ), 0  # fmt: skip
        service.pending += 1
        try:
            return await self.answered(request, route, wire)
        finally:
            service.pending -= 1

    async def answered(self, request: Request, route: str, wire: ServedWire) -> tuple[Response, int]:
        """An admitted request: its body read and checked, its questions judged, the answer recorded."""
        settings = self.settings
        try:
            raw = await self.body_of(request)
        except asyncio.TimeoutError:
            return error(408, f"the body did not arrive within {settings.body_timeout_s:g} s", "body_timeout"), 0
        if raw is None:
            return error(413, f"the body is larger than this server takes ({settings.max_body_bytes} bytes)", "body_too_large"), 0
        try:
            model, decision, ids = read_checked(wire, parse_body(raw), settings.max_questions)
        except RequestError as exc:
            return Answer(exc.body(), status_code=exc.status), 0
        count = len(decision.questions)
        if model != settings.name:
            return error(404, f"model {model!r} is not served here: this server serves {settings.name!r} (GET /v1/models)", "model_not_found", param="model"), count
        return await self.judge(route, wire, model, decision, ids), count

    async def judge(self, route: str, wire: ServedWire, model: str, decision: Any, ids: dict[str, str]) -> Response:
        service, settings = self.service, self.settings
        the_id = item_id(decision.input, ids)
        try:
            answered = await service.judged(lambda: service.backend.answer(decision.input, decision.questions, the_id))
        except asyncio.TimeoutError:
            return error(504, f"judging took longer than {settings.timeout_s:g} s", "timeout")
        except (InputError, ConfigError) as exc:
            return error(400, str(exc), "invalid_request")
        except JudgeSDKError as exc:  # e.g. a budget stop of the judge behind the server
            return error(503, f"the judge cannot answer now: {exc}", "judge_unavailable", headers={"Retry-After": "60"})
        payload = wire.response_body(decision, [one.answer for one in answered], settings.name, total_usage(answered))
        if service.recorder is not None:
            try:
                service.recorder.write(route, model, decision.input, ids, answered, decision.questions)
            except RecordUnavailable as exc:
                return error(503, f"the judgement could not be recorded ({exc}); retry later", "record_unavailable", headers={"Retry-After": "60"})
        service.served[route] += 1
        return Answer(payload)

    async def models(self, request: Request) -> Response:
        if not self.authorized(request):
            return error(401, UNAUTHORIZED, "invalid_api_key")
        judge = self.service.backend.describe()
        return Answer({"object": "list", "data": [{"id": self.settings.name, "object": "model", "created": 0, "owned_by": "judgesdk", "judge": judge}]})

    async def health(self, request: Request) -> Response:
        return Answer(self.service.health(), status_code=503 if self.service.draining else 200)


def read_checked(wire: ServedWire, body: Any, max_questions: int) -> tuple[str, Any, dict[str, str]]:
    """``wire.read_request`` of a checked body, and what it read checked again (the ``input`` text is itself parsed as
    JSON: its depth and texts): a :class:`RequestError` for anything :mod:`judgesdk.serve.edge` refuses."""
    try:
        model, decision, ids = wire.read_request(body, max_questions=max_questions)
    except RecursionError:
        raise RequestError(f"the input nests deeper than {MAX_DEPTH} levels", param="input", code="too_deep") from None
    check_texts(decision.input.state(), "input")
    check_texts([question.model_dump(mode="python") for question in decision.questions], "questions")
    check_texts(ids, "input")
    return model, decision, ids


async def http_error(request: Request, exc: Exception) -> Response:
    """A route or method that does not exist, in the schemas' envelope."""
    status = getattr(exc, "status_code", 500)
    code = {404: "not_found", 405: "method_not_allowed"}.get(status, "invalid_request")
    what = {404: f"no route {request.url.path}: POST /v1/decisions, POST /v1/systemone, GET /v1/models, GET /health"}.get(
        status, f"{request.method} is not allowed on {request.url.path}"
    )
    access.info("%s %s %d 0ms questions=0", request.method, request.url.path, status)
    return error(status, what, code)


def build_app(service: Service) -> Starlette:
    """The server's ASGI app over ``service``."""
    routes = Routes(service)
    table = [
        Route("/v1/decisions", routes.decide, methods=["POST"]),
        Route("/v1/systemone", routes.decide, methods=["POST"]),
        Route("/v1/models", routes.models, methods=["GET"]),
        Route("/health", routes.health, methods=["GET"]),
    ]
    return Starlette(routes=table, exception_handlers={HTTPException: http_error})
