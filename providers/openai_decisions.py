"""OpenAI Decisions (``kind = "openai"``, ``api = "decisions"``): ``POST /v1/decisions`` through the openai package.

The request carries the judged input and one typed question per criterion (:mod:`judgesdk.provider.decisions`);
the body is built and the answer read by :mod:`judgesdk.providers.decisions_wire`, the one mapping of this
schema (``judgesdk serve`` reads and writes it too). The call goes through the SDK's documented direct
``post`` (its auth, headers, timeouts and typed errors), as the chat path does, rather than
``client.decisions.create``, whose per-call TypedDict transform is the identity on this plain JSON
(``tests/providers/test_decisions_wire.py`` holds it to that on every body this adapter makes) and would only cost
CPU. A request with more questions than OpenAI takes in one call (400) is sent in parts and answered as one.

The Decisions resource arrived in openai 3.26: an older package is a :class:`~judgesdk.core.errors.ConfigError`
naming that version, raised when the provider is built.
"""

from __future__ import annotations

import time
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from judgesdk.core import CapabilityError, ConfigError, PermanentError, TransientError
from judgesdk.provider import Capabilities, DecisionRequest, GenerateRequest, GenerateResponse, answer_settings, ask_in_parts, redact_url, runtime

from . import decisions_wire
from ._sdk import classify, no_redirects, own_endpoint, vendor_key, within

try:
    import httpx
    import openai
except ImportError:  # pragma: no cover - exercised only without the extra
    openai = None  # type: ignore[assignment]

FIRST_VERSION = "3.26"  # the first openai package with client.decisions (3.25.0 has none; checked on the wheels)


def capabilities() -> Capabilities:
    return Capabilities(decisions=True, max_questions=decisions_wire.MAX_QUESTIONS)


class OpenAIDecisionsProvider:
    """The openai adapter for ``api = "decisions"``: decision requests only (a chat request is refused). Keys
    as the chat adapter's: ``OPENAI_API_KEY`` goes to api.openai.com only, another base_url gets the key its
    ``api_key_env`` names."""

    kind = "openai"
    api = "decisions"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        capabilities: Capabilities | None = None,
        max_answer_bytes: int | None = None,
    ) -> None:
        if openai is None:
            raise PermanentError("the openai provider needs the 'openai' extra: pip install 'judgesdk[openai]'")
        key = vendor_key(api_key, base_url, "api.openai.com", "OPENAI_API_KEY", self.kind)
        self.model = model
        target = own_endpoint(base_url, "https://api.openai.com/v1", "openai")  # never OPENAI_BASE_URL, as the chat adapter
        self.endpoint = redact_url(target)  # shown, keyed: no credentials
        self.capabilities = capabilities or globals()["capabilities"]()
        # redirects never followed: another host would get the request (and an answer cached as this endpoint's)
        http_client = no_redirects(openai.DefaultAsyncHttpxClient, timeout_s)  # answers' decoded size capped too
        self.timeout_s = timeout_s
        self.max_answer_bytes = max_answer_bytes  # None: providers._sdk.DEFAULT_MAX_ANSWER_BYTES
        self._client = openai.AsyncOpenAI(api_key=key, base_url=target, timeout=timeout_s, max_retries=0, http_client=http_client)
        if not hasattr(self._client, "decisions"):
            raise ConfigError(
                f"api = 'decisions' needs openai >= {FIRST_VERSION} (client.decisions); installed: {_installed()}: "
                f"pip install -U 'openai>={FIRST_VERSION}'"
            )

    @property
    def answer_settings(self) -> str:
        """The questions per call when not the API's 400 (cache keys and provenance: a question may be answered
        differently beside other questions)."""
        return answer_settings({"max_questions": self.capabilities.max_questions}, {"max_questions": decisions_wire.MAX_QUESTIONS})

    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        if request.decision is None:
            raise CapabilityError(
                "api = 'decisions' answers decision questions only: use method 'decision' (or 'auto'), or api = 'chat' for prompted methods",
                provider=self.kind,
            )
        started = time.perf_counter()
        limit = self.capabilities.max_questions or decisions_wire.MAX_QUESTIONS
        answers, usage, served = await ask_in_parts(request.decision, limit, self._bounded)
        provenance = {"runtime": runtime("openai"), **({"model": served} if served else {})}
        return GenerateResponse(
            decisions=answers, usage=usage, latency_s=time.perf_counter() - started, provider=self.kind, model=self.model, provenance=provenance
        )

    async def _bounded(self, part: DecisionRequest) -> Any:
        """:meth:`_ask` bounded as a whole by ``timeout_s``, its answer's decoded size by ``max_answer_bytes``
        (:func:`judgesdk.providers._sdk.within`)."""
        return await within(self.timeout_s, self._ask(part), self.kind, self.max_answer_bytes)

    async def _ask(self, part: DecisionRequest) -> Any:
        """One call of at most ``limit`` questions: its answers, usage and the model the server names."""
        try:
            answer = await self._client.post(decisions_wire.PATH, body=decisions_wire.request_body(part, self.model), cast_to=httpx.Response)
        except openai.APIError as exc:
            raise classify(exc, self.kind) from exc
        if 300 <= answer.status_code < 400:  # a redirect's body is never an answer
            raise PermanentError(
                f"{self.kind}: {self.endpoint} answered {answer.status_code}, a redirect to "
                f"{redact_url(answer.headers.get('location', '(no location)'))}: set base_url to the server's own address",
                provider=self.kind,
            )
        try:
            payload = answer.json()
        except ValueError:
            raise TransientError(
                f"{self.kind}: {self.endpoint} answered {answer.status_code} with a body that is not JSON: {answer.text[:200]!r}", provider=self.kind
            ) from None
        return decisions_wire.read_response(payload, part)

    @property
    def client(self) -> Any:
        """The ``openai.AsyncOpenAI`` client this provider calls (SDK retries off)."""
        return self._client

    async def aclose(self) -> None:
        await self._client.close()


def _installed() -> str:
    try:
        return version("openai")
    except PackageNotFoundError:
        return "none"
