"""The HTTP side of ``judgesdk serve`` (starlette): routes, admission, errors, the access log.

Every answer is JSON. A request that cannot be served gets the status and body the schemas define (OpenAI's
error envelope ``{"error": {"message", "type", "param", "code"}}``, which LiteLLM's proxy also answers on its
System One route), never a traceback and never a hang:

=====  ======================  ===================================================================
 400   ``invalid_request`` ... body not JSON or not the schema; a box question, an image, audio, video, assets,
                               a tool-call input item (``unsupported_*``); more questions than the server
                               takes (``too_many_questions``); more than 10 levels (``too_many_levels``)
 401   ``invalid_api_key``     a key is set (``--api-key-env``) and the request's bearer key is missing or wrong
 404   ``model_not_found``     a model other than the served judge's name; ``not_found`` for another path
 405   ``method_not_allowed``  e.g. GET on a POST route
 413   ``body_too_large``      a body above ``--max-body-bytes`` (read no further than the limit)
 429   ``queue_full``          ``concurrency`` requests judging and ``queue`` waiting: ``Retry-After`` says when
 500   ``internal_error``      anything unexpected, named by its type only (the traceback goes to the log at DEBUG)
 503   ``shutting_down``       after SIGTERM, while what is in flight finishes; ``judge_unavailable`` once the
                               budget (``--max-tokens``, ``--max-usd``) is spent
 504   ``timeout``             judging took longer than ``--timeout-s``
=====  ======================  ===================================================================

The access log (logger ``judgesdk.serve.access``, one line a request) has the method, path, status, latency and
question count: never the judged text, never a key.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging
import math
import os
import time
from collections.abc import Awaitable, Callable
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from judgesdk.core import ConfigError, InputError, JudgeSDKError
from judgesdk.provider import RequestError, ServedWire, remember_secret, scrub_credentials, scrub_exception, scrub_json
from judgesdk.providers import DECISIONS_WIRE, SYSTEMONE_WIRE
from judgesdk.serve.backend import Backend, total_usage
from judgesdk.serve.record import Recorder, item_id
from judgesdk.serve.settings import ServeSettings

__all__ = ["Answer", "Service", "build_app", "error"]

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


class Service:
    """What a server holds while it runs: its settings, the judge, the record, the admission counters."""

    def __init__(self, settings: ServeSettings, backend: Backend, recorder: Recorder | None = None) -> None:
        self.settings = settings
        self.backend = backend
        self.recorder = recorder
        self.key = os.environ.get(settings.api_key_env) if settings.api_key_env else None
        remember_secret(self.key)  # never in an answer, the record or the log (judgesdk.provider.urls)
        if settings.api_key_env and not self.key:
            raise ConfigError(f"--api-key-env names {settings.api_key_env}, which is not set: export {settings.api_key_env}=<key>")
        self.slots = asyncio.Semaphore(settings.concurrency)
        self.pending = 0  # admitted: judging or waiting for a slot
        self.in_flight = 0
        self.served: dict[str, int] = {route: 0 for route in WIRES}
        self.turned_away = 0
        self.draining = False
        self._seconds = 1.0  # a running mean of one request's judging time, for Retry-After

    def retry_after(self) -> int:
        """Seconds until a slot is likely free: the queue ahead of a newcomer, at the recent pace."""
        waves = self.pending / self.settings.concurrency
        return max(1, math.ceil(self._seconds * max(waves, 1.0)))

    def health(self) -> dict[str, Any]:
        meter = self.backend.meter
        spent = {} if meter is None else {"budget": meter.state().model_dump(mode="json", exclude={"budget"})}
        return {**spent,
            "status": "draining" if self.draining else "ok",
            "in_flight": self.in_flight,
            "queued": self.pending - self.in_flight,
            "served": dict(self.served),
            "turned_away": self.turned_away,
            "concurrency": self.settings.concurrency,
            "queue": self.settings.queue,
        }

    async def judged(self, call: Callable[[], Awaitable[Any]]) -> Any:
        """``call`` once a slot is free (the caller was admitted), bounded by ``timeout_s``."""
        async with self.slots:
            self.in_flight += 1
            started = time.perf_counter()
            try:
                return await asyncio.wait_for(call(), timeout=self.settings.timeout_s)
            finally:
                self.in_flight -= 1
                self._seconds = 0.8 * self._seconds + 0.2 * (time.perf_counter() - started)


def build_app(service: Service) -> Starlette:
    """The server's ASGI app over ``service``."""
    settings = service.settings

    def authorized(request: Request) -> bool:
        if service.key is None:
            return True
        given = request.headers.get("authorization", "")
        scheme, _, token = given.partition(" ")
        return scheme.lower() == "bearer" and hmac.compare_digest(token.strip().encode(), service.key.encode())

    async def body_of(request: Request) -> bytes | None:
        """The body, or None once it passes the limit (read no further)."""
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > settings.max_body_bytes:
            return None
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > settings.max_body_bytes:
                return None
            chunks.append(chunk)
        return b"".join(chunks)

    async def decide(request: Request) -> Response:
        route = request.url.path
        wire = WIRES[route]
        started = time.perf_counter()
        questions = 0
        response: Response
        try:
            response, questions = await _decide(request, route, wire)
        except Exception as exc:  # noqa: BLE001 - an unexpected failure is a 500 named by its type, never a traceback
            log.warning("judgesdk serve: %s on %s: %s", type(exc).__name__, route, scrub_credentials(str(scrub_exception(exc))))
            log.debug("traceback", exc_info=exc)
            response = error(500, f"internal error ({type(exc).__name__}); the server log says more", "internal_error")
        access.info("%s %s %d %.0fms questions=%d", request.method, route, response.status_code, 1000 * (time.perf_counter() - started), questions)
        return response

    async def _decide(request: Request, route: str, wire: ServedWire) -> tuple[Response, int]:
        if service.draining:
            return error(503, "the server is shutting down: retry on another instance", "shutting_down", headers={"Retry-After": "5"}), 0
        if not authorized(request):
            return error(401, "missing or wrong API key: send Authorization: Bearer <key>", "invalid_api_key"), 0
        raw = await body_of(request)
        if raw is None:
            return error(413, f"the body is larger than this server takes ({settings.max_body_bytes} bytes)", "body_too_large"), 0
        try:
            body = json.loads(raw)
        except (UnicodeDecodeError, ValueError):
            return error(400, "the body is not JSON", "invalid_json"), 0
        try:
            model, decision, ids = wire.read_request(body, max_questions=settings.max_questions)
        except RequestError as exc:
            return Answer(exc.body(), status_code=exc.status), 0
        count = len(decision.questions)
        if model != settings.name:
            return error(404, f"model {model!r} is not served here: this server serves {settings.name!r} (GET /v1/models)", "model_not_found", param="model"), count
        if service.pending >= settings.concurrency + settings.queue:
            service.turned_away += 1
            return error(
                429, f"the server is full ({settings.concurrency} judging, {settings.queue} waiting): retry later", "queue_full",
                headers={"Retry-After": str(service.retry_after())},
            ), count  # fmt: skip
        the_id = item_id(decision.input, ids)
        service.pending += 1
        try:
            answered = await service.judged(lambda: service.backend.answer(decision.input, decision.questions, the_id))
        except asyncio.TimeoutError:
            return error(504, f"judging took longer than {settings.timeout_s:g} s", "timeout"), count
        except (InputError, ConfigError) as exc:
            return error(400, str(exc), "invalid_request"), count
        except JudgeSDKError as exc:  # e.g. a budget stop of the judge behind the server
            return error(503, f"the judge cannot answer now: {exc}", "judge_unavailable", headers={"Retry-After": "60"}), count
        finally:
            service.pending -= 1
        answers = [one.answer for one in answered]
        payload = wire.response_body(decision, answers, settings.name, total_usage(answered))
        if service.recorder is not None:
            service.recorder.write(route, model, decision.input, ids, answered, decision.questions)
        service.served[route] += 1
        return Answer(payload), count

    async def models(request: Request) -> Response:
        if not authorized(request):
            return error(401, "missing or wrong API key: send Authorization: Bearer <key>", "invalid_api_key")
        judge = service.backend.describe()
        return Answer({"object": "list", "data": [{"id": settings.name, "object": "model", "created": 0, "owned_by": "judgesdk", "judge": judge}]})

    async def health(request: Request) -> Response:
        return Answer(service.health(), status_code=503 if service.draining else 200)

    async def http_error(request: Request, exc: Exception) -> Response:
        status = getattr(exc, "status_code", 500)
        code = {404: "not_found", 405: "method_not_allowed"}.get(status, "invalid_request")
        what = {404: f"no route {request.url.path}: POST /v1/decisions, POST /v1/systemone, GET /v1/models, GET /health"}.get(
            status, f"{request.method} is not allowed on {request.url.path}"
        )
        access.info("%s %s %d 0ms questions=0", request.method, request.url.path, status)
        return error(status, what, code)

    routes = [
        Route("/v1/decisions", decide, methods=["POST"]),
        Route("/v1/systemone", decide, methods=["POST"]),
        Route("/v1/models", models, methods=["GET"]),
        Route("/health", health, methods=["GET"]),
    ]
    return Starlette(routes=routes, exception_handlers={HTTPException: http_error})
