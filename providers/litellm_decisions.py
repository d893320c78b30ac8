"""LiteLLM's decision routes (``kind = "litellm"`` with ``api = "decisions"`` or ``api = "systemone"``).

``api = "decisions"`` calls ``litellm.adecisions`` (the OpenAI Decisions format), ``api = "systemone"`` calls
``litellm.asystemone`` (the System One format), across the backends LiteLLM routes decisions to (``openai/``,
``openrouter/``, ``typesafe/``, ``hosted_vllm/`` for any System One server at ``base_url``...). The arguments
are the bodies :mod:`judgesdk.providers.decisions_wire` / :mod:`judgesdk.providers.systemone_wire` build, and
LiteLLM's answer (its pydantic response, dumped to JSON) is read by the same module, so the field mapping of
each schema is written once.

LiteLLM caps both formats at 128 questions a request (its proxy answers 400 above that): a larger request is
sent in parts of 128 and answered as one. LiteLLM reads an answer of the wrong type as a refusal, so through
this path such an answer shows as ``missing``/``refused`` rather than as an ``error``. The routes arrived in
litellm 1.105 (1.104.0 has neither): an older package is a :class:`~judgesdk.core.errors.ConfigError` naming it.
"""

from __future__ import annotations

import os
import time
from contextvars import ContextVar
from importlib.metadata import PackageNotFoundError, version
from typing import Any, Literal

from judgesdk.core import CapabilityError, ConfigError, PermanentError
from judgesdk.provider import Capabilities, DecisionRequest, GenerateRequest, GenerateResponse, answer_settings, ask_in_parts, runtime

from . import decisions_wire, systemone_wire
from ._sdk import PLACEHOLDER_KEY, cap_litellm, classify, within

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # never fetch the price map at import

try:
    import litellm
except ImportError:  # pragma: no cover - exercised only without the extra
    litellm = None  # type: ignore[assignment]

FIRST_VERSION = "1.105"  # litellm.adecisions and litellm.asystemone (1.104.0 has neither; checked on the wheels)
MAX_QUESTIONS = 128  # litellm.types.decisions.MAX_DECISION_QUESTIONS


def capabilities() -> Capabilities:
    return Capabilities(decisions=True, max_questions=MAX_QUESTIONS)


class LiteLLMDecisionsProvider:
    """Decision requests through ``litellm.adecisions`` / ``litellm.asystemone`` (module docstring)."""

    kind = "litellm"

    def __init__(
        self,
        model: str,
        *,
        api: Literal["decisions", "systemone"],
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        capabilities: Capabilities | None = None,
        max_answer_bytes: int | None = None,
    ) -> None:
        if litellm is None:
            raise PermanentError("the litellm provider needs the 'litellm' extra: pip install 'judgesdk[litellm]'")
        call = "adecisions" if api == "decisions" else "asystemone"
        if not hasattr(litellm, call):
            raise ConfigError(
                f"api = '{api}' needs litellm >= {FIRST_VERSION} (litellm.{call}); installed: {_installed()}: pip install -U 'litellm>={FIRST_VERSION}'"
            )
        self.model = model
        self.api = api
        self.endpoint = base_url or f"litellm:{model.split('/')[0]}"
        self.capabilities = capabilities or globals()["capabilities"]()
        self._call = getattr(litellm, call)
        self._wire: Any = decisions_wire if api == "decisions" else systemone_wire
        self._base_url = base_url
        # as the chat adapter: at a custom base_url only a key given here is sent, never the route's environment key
        self._api_key = api_key or (PLACEHOLDER_KEY if base_url else None)
        self._timeout_s = timeout_s
        self._max_answer_bytes = max_answer_bytes  # None: providers._sdk.DEFAULT_MAX_ANSWER_BYTES
        _record_bodies()
        cap_litellm()  # LiteLLM's own HTTP clients: the answer's decoded size capped inside within()

    @property
    def answer_settings(self) -> str:
        """The route, and the questions per call when not LiteLLM's 128 (cache keys and provenance: one decision
        request sent to ``adecisions`` or ``asystemone`` is two questions; a question may be answered differently
        beside other questions)."""
        return answer_settings({"api": self.api, "max_questions": self.capabilities.max_questions}, {"max_questions": MAX_QUESTIONS})

    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        if request.decision is None:
            raise CapabilityError(
                f"api = '{self.api}' answers decision questions only: use method 'decision' (or 'auto'), or api = 'chat' for prompted methods",
                provider=self.kind,
            )
        started = time.perf_counter()
        answers, usage, served = await ask_in_parts(request.decision, self.capabilities.max_questions or MAX_QUESTIONS, self._bounded)
        provenance = {"runtime": runtime("litellm"), **({"model": served} if served else {})}
        return GenerateResponse(
            decisions=answers, usage=usage, latency_s=time.perf_counter() - started, provider=self.kind, model=self.model, provenance=provenance
        )

    async def _bounded(self, part: DecisionRequest) -> Any:
        """:meth:`_ask` bounded as a whole by ``timeout_s``, its answer's decoded size by ``max_answer_bytes``
        (:func:`judgesdk.providers._sdk.within`)."""
        return await within(self._timeout_s, self._ask(part), self.kind, self._max_answer_bytes)

    async def _ask(self, part: DecisionRequest) -> Any:
        """One call of at most the route's questions: its answers, usage and the model the server names."""
        body = self._wire.request_body(part, self.model)
        arguments = {key: value for key, value in body.items() if key != "model"}  # input or state, and questions
        connection = {"api_base": self._base_url, "api_key": self._api_key}
        bodies: list[Any] = []
        recording = _received.set(bodies)
        try:
            raw = await self._call(
                model=self.model, timeout=self._timeout_s, num_retries=0, **arguments, **{k: v for k, v in connection.items() if v is not None}
            )
        except Exception as exc:  # litellm maps backend errors to OpenAI-style exceptions with status_code
            if isinstance(exc, (TypeError, ValueError)) and getattr(exc, "status_code", None) is None:
                raise PermanentError(f"{self.kind}: {exc}", provider=self.kind) from exc
            raise classify(exc, self.kind) from exc
        finally:
            _received.reset(recording)
        if bodies and bodies[-1] is not None:  # the server's own JSON, read before LiteLLM's coercion ("0.2" is no probability)
            return raw_wire(bodies[-1], self._wire).read_response(bodies[-1], part)
        payload = raw.model_dump(mode="json") if hasattr(raw, "model_dump") else raw
        return self._wire.read_response(payload, part)

    async def aclose(self) -> None:
        return None


# The raw answer of a decision call: LiteLLM parses the server's body into typed models that coerce ("0.2" becomes
# 0.2, a missing answer a refusal), so the body is read here, as the openai and systemone routes read it, by the wire
# module of its format. Recorded only inside a decision call of this adapter (the context variable is set there).
_received: ContextVar[list[Any] | None] = ContextVar("judgesdk_litellm_decision_bodies", default=None)


def raw_wire(body: Any, asked: Any) -> Any:
    """The wire module that reads ``body``: the System One format's ``answers`` is an object, OpenAI's an array (a
    backend LiteLLM translates from the other format); a body of neither shape is read by the route's own, ``asked``."""
    answers = body.get("answers") if isinstance(body, dict) else None
    if isinstance(answers, dict):
        return systemone_wire
    return decisions_wire if isinstance(answers, list) else asked


def _record_bodies() -> None:
    """Wrap LiteLLM's async HTTP post once: inside this adapter's decision call, the response's JSON is kept."""
    try:
        from litellm.llms.custom_httpx.http_handler import AsyncHTTPHandler as cls
    except ImportError:  # pragma: no cover - another layout: LiteLLM's parsed answer is read instead
        return
    if getattr(cls.post, "_judgesdk_records", False):
        return
    post = cls.post

    async def recording_post(self: Any, *args: Any, **kwargs: Any) -> Any:
        response = await post(self, *args, **kwargs)
        bodies = _received.get()
        if bodies is not None:
            try:
                bodies.append(response.json())
            except ValueError:  # not JSON: LiteLLM says what it makes of it
                bodies.append(None)
        return response

    recording_post._judgesdk_records = True  # type: ignore[attr-defined]
    cls.post = recording_post  # type: ignore[method-assign]


def _installed() -> str:
    try:
        return version("litellm")
    except PackageNotFoundError:
        return "none"
