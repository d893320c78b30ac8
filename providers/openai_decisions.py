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

from judgesdk.core.errors import AuthError, CapabilityError, ConfigError, PermanentError, TransientError
from judgesdk.provider.decisions import DecisionAnswer, chunks
from judgesdk.provider.protocol import Capabilities, GenerateRequest, GenerateResponse, Usage, runtime

from . import decisions_wire
from ._sdk import PLACEHOLDER_KEY, classify, is_default_host, key_for_host

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
        self, model: str, *, base_url: str | None = None, api_key: str | None = None, timeout_s: float = 60.0, capabilities: Capabilities | None = None
    ) -> None:
        if openai is None:
            raise PermanentError("the openai provider needs the 'openai' extra: pip install 'judgesdk[openai]'")
        key = key_for_host(api_key, base_url, "api.openai.com", "OPENAI_API_KEY")
        if not key and is_default_host(base_url, "api.openai.com"):
            raise AuthError("the openai provider needs OPENAI_API_KEY (or api_key=...) for api.openai.com", provider=self.kind)
        self.model = model
        self.endpoint = base_url or "https://api.openai.com/v1"
        self.capabilities = capabilities or globals()["capabilities"]()
        self._client = openai.AsyncOpenAI(api_key=key or PLACEHOLDER_KEY, base_url=base_url, timeout=timeout_s, max_retries=0)
        if not hasattr(self._client, "decisions"):
            raise ConfigError(
                f"api = 'decisions' needs openai >= {FIRST_VERSION} (client.decisions); installed: {_installed()}: "
                f"pip install -U 'openai>={FIRST_VERSION}'"
            )

    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        if request.decision is None:
            raise CapabilityError(
                "api = 'decisions' answers decision questions only: use method 'decision' (or 'auto'), or api = 'chat' for prompted methods",
                provider=self.kind,
            )
        started = time.perf_counter()
        answers: list[DecisionAnswer] = []
        usage = Usage()
        served: str | None = None
        limit = self.capabilities.max_questions or decisions_wire.MAX_QUESTIONS
        for part in chunks(request.decision, limit):
            try:
                answer = await self._client.post(decisions_wire.PATH, body=decisions_wire.request_body(part, self.model), cast_to=httpx.Response)
            except openai.APIError as exc:
                raise classify(exc, self.kind) from exc
            try:
                payload = answer.json()
            except ValueError:
                raise TransientError(
                    f"{self.kind}: {self.endpoint} answered {answer.status_code} with a body that is not JSON: {answer.text[:200]!r}", provider=self.kind
                ) from None
            found, spent, model = decisions_wire.read_response(payload, part)
            answers += found
            usage = usage + spent
            served = served or model
        provenance = {"runtime": runtime("openai"), **({"model": served} if served else {})}
        return GenerateResponse(
            decisions=answers, usage=usage, latency_s=time.perf_counter() - started, provider=self.kind, model=self.model, provenance=provenance
        )

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
