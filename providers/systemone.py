"""System One servers (``kind = "systemone"``): ``POST /v1/systemone`` at any ``base_url``.

TypeSafe and OpenRouter (hosted Jev), llama.cpp's ``llama-server`` with a decision model, LM Studio, the small
open decision models' own servers, LiteLLM's proxy and ``judgesdk serve`` all answer the System One format.
The body is built and the answer read by :mod:`judgesdk.providers.systemone_wire` (the one mapping of this
schema); the call is a plain JSON POST with httpx, each failure classified as the SDK adapters' are (a
timeout, a status error with its ``Retry-After``, a dropped connection), so retries, rate limits and the
overload guard treat it like any other backend.

``[providers.options]``: ``path`` (default ``/v1/systemone``; OpenRouter serves the format at
``/alpha/decisions`` under ``https://openrouter.ai/api``), ``max_questions`` (questions one call may carry;
128, LiteLLM's cap, by default: a larger request is sent in parts). A key is sent only where
``api_key_env`` names one.
"""

from __future__ import annotations

import time
from typing import Any

from pydantic import Field

from judgesdk.core import CapabilityError, ConfigError, PermanentError, TransientError, error_from_status
from judgesdk.provider import (
    Capabilities,
    DecisionRequest,
    GenerateRequest,
    GenerateResponse,
    ProviderOptions,
    ProviderSettings,
    ProviderSpec,
    answer_settings,
    ask_in_parts,
    redact_url,
    runtime,
)

from . import systemone_wire
from ._sdk import capped_client, classify, within

try:
    import httpx
except ImportError:  # pragma: no cover - exercised only without the extra
    httpx = None  # type: ignore[assignment]

DEFAULT_MAX_QUESTIONS = 128


def default_capabilities(max_questions: int = DEFAULT_MAX_QUESTIONS) -> Capabilities:
    return Capabilities(decisions=True, max_questions=max_questions)


class SystemOneProvider:
    kind = "systemone"
    api = "systemone"  # decision calls only: priced on the decision route

    def __init__(
        self,
        model: str,
        *,
        base_url: str,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        path: str = systemone_wire.PATH,
        max_questions: int = DEFAULT_MAX_QUESTIONS,
        capabilities: Capabilities | None = None,
        max_answer_bytes: int | None = None,
    ) -> None:
        if httpx is None:
            raise PermanentError("the systemone provider needs httpx: pip install 'judgesdk[systemone]'")
        if not base_url:
            raise ConfigError("the systemone provider needs base_url: the server's address, e.g. http://127.0.0.1:8080")
        if not model:
            raise ConfigError("the systemone provider needs model: the name the server gives its decision model (GET /v1/models)")
        self.model = model
        self.endpoint = redact_url(base_url)  # shown, keyed: no credentials
        self.capabilities = capabilities or default_capabilities(max_questions)
        # LiteLLM's rule for System One servers: the path goes under the origin, a trailing /v1 of base_url dropped
        self.url = f"{base_url.rstrip('/').removesuffix('/v1')}{path}"
        self.path = path
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = capped_client(httpx.AsyncClient(timeout=timeout_s, headers=headers, trust_env=False))  # answers' size capped
        self.timeout_s = timeout_s
        self.max_answer_bytes = max_answer_bytes  # None: providers._sdk.DEFAULT_MAX_ANSWER_BYTES

    @property
    def answer_settings(self) -> str:
        """The path and the questions per call when not the defaults (cache keys and provenance: another path of
        one origin is another server; a question may be answered differently beside other questions)."""
        return answer_settings(
            {"path": self.path, "max_questions": self.capabilities.max_questions}, {"path": systemone_wire.PATH, "max_questions": DEFAULT_MAX_QUESTIONS}
        )

    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        if request.decision is None:
            raise CapabilityError("a System One server answers decision questions only: use method 'decision' (or 'auto')", provider=self.kind)
        started = time.perf_counter()
        answers, usage, served = await ask_in_parts(request.decision, self.capabilities.max_questions or DEFAULT_MAX_QUESTIONS, self._ask)
        provenance = {"runtime": runtime("httpx"), **({"model": served} if served else {})}
        return GenerateResponse(
            decisions=answers, usage=usage, latency_s=time.perf_counter() - started, provider=self.kind, model=self.model, provenance=provenance
        )

    async def _ask(self, part: DecisionRequest) -> Any:
        """One call of at most ``max_questions`` questions, bounded as a whole by ``timeout_s`` and its answer's decoded
        size by ``max_answer_bytes`` (:func:`judgesdk.providers._sdk.within`)."""
        body = await within(self.timeout_s, self._post(systemone_wire.request_body(part, self.model)), self.kind, self.max_answer_bytes)
        return systemone_wire.read_response(body, part)

    async def _post(self, body: dict[str, Any]) -> Any:
        try:
            answer = await self._client.post(self.url, json=body)
        except httpx.HTTPError as exc:
            raise classify(exc, self.kind) from exc
        if answer.status_code >= 400:
            raise error_from_status(answer.status_code, _message(answer), provider=self.kind, headers=answer.headers, body=answer.text[:500])
        if answer.status_code >= 300:  # never followed (httpx's default), and a redirect's body is never an answer
            raise PermanentError(
                f"{self.kind}: {redact_url(self.url)} answered {answer.status_code}, a redirect to "
                f"{redact_url(answer.headers.get('location', '(no location)'))}: set base_url to the server's own address",
                provider=self.kind,
            )
        try:
            return answer.json()
        except ValueError:  # a proxy's page, a cut body: worth asking again, and named if it persists
            raise TransientError(
                f"{self.kind}: {self.url} answered {answer.status_code} with a body that is not JSON: {answer.text[:200]!r}", provider=self.kind
            ) from None

    async def aclose(self) -> None:
        await self._client.aclose()


def _message(answer: Any) -> str:
    """The error body's message (``{"error": {"message": ...}}``, as LiteLLM and judgesdk serve write it), else its text."""
    try:
        error = answer.json().get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return error["message"]
    except (ValueError, AttributeError):
        pass
    return answer.text[:200]


class SystemOneOptions(ProviderOptions):
    """``[providers.options]`` of ``kind = "systemone"`` (``model`` and ``base_url`` are set under ``[[providers]]``)."""

    path: str = systemone_wire.PATH  # where the server answers, under its origin
    max_questions: int = Field(default=DEFAULT_MAX_QUESTIONS, ge=1)  # questions per call; larger requests are split


def _build(settings: ProviderSettings, options: SystemOneOptions) -> SystemOneProvider:
    return SystemOneProvider(
        settings.model, base_url=settings.base_url or "", api_key=settings.api_key(), timeout_s=settings.timeout_s,
        path=options.path, max_questions=options.max_questions, capabilities=settings.capabilities,
        max_answer_bytes=settings.max_answer_bytes,
    )  # fmt: skip


PROVIDER = ProviderSpec(
    kind=SystemOneProvider.kind,
    options=SystemOneOptions,
    build=_build,
    capabilities=lambda settings: default_capabilities(),
    default_model="",  # a System One server names its models (GET /v1/models): set model =
)
