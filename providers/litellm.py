"""LiteLLM's ``acompletion``: one adapter for the hundred backends LiteLLM routes to.

Logprobs are passed through where the backend returns them. LiteLLM's ``drop_params`` can silently remove
``logprobs`` for a backend that does not take it; this adapter asks LiteLLM up front which parameters the
backend supports, and checks every response, so a missing distribution is recorded, never hidden.

For Claude backends the shared leading part of judging prompts is marked for Anthropic's prompt cache,
as the Anthropic adapter does (``providers/_prompt_cache.py``); LiteLLM carries the ``cache_control`` blocks
through, and the usage's cache reads and writes are reported (``prompt_cache=False`` turns this off).
"""

from __future__ import annotations

import os
import time
from typing import Any

from judgesdk.core import CapabilityError, PermanentError, ProviderError
from judgesdk.provider import (
    Capabilities,
    Choice,
    GenerateRequest,
    GenerateResponse,
    ProviderOptions,
    ProviderSettings,
    ProviderSpec,
    fold_prefill,
    redact_url,
    runtime,
)

from ._prompt_cache import ANSWER_NEUTRAL, PromptCachePlanner, cache_marked
from ._sdk import PLACEHOLDER_KEY, answer_choices, cap_litellm, chat_logprob_tokens, chat_usage, check_length, classify, field, own_endpoint, within
from .litellm_decisions import LiteLLMDecisionsProvider

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # never fetch the price map at import

try:
    import litellm
except ImportError:  # pragma: no cover - exercised only without the extra
    litellm = None  # type: ignore[assignment]

LOGPROBS_DROPPED = "logprobs requested but the backend returned none (dropped by litellm or unsupported)"


def detect_capabilities(model: str) -> Capabilities:
    """Ask LiteLLM which OpenAI parameters the backend of ``model`` supports."""
    try:
        supported = set(litellm.get_supported_openai_params(model=model) or [])
    except Exception:  # litellm raises for unknown providers; then assume the plain minimum
        supported = set()
    logprobs = "logprobs" in supported
    return Capabilities(
        logprobs=logprobs,
        max_top_logprobs=20 if "top_logprobs" in supported else 0,
        multiple_samples="n" in supported,
        seed="seed" in supported,
    )


def routes_to_claude(model: str) -> bool:
    """Whether LiteLLM sends ``model`` to a Claude model (Anthropic's API, or Claude on Bedrock / Vertex AI),
    the backends that take ``cache_control`` blocks."""
    try:
        backend = litellm.get_llm_provider(model)[1]
    except Exception:  # unknown provider prefix: LiteLLM will say so on the first call
        return False
    return backend == "anthropic" or (backend in ("bedrock", "vertex_ai") and "claude" in model.lower())


# The vendors' own endpoints, as LiteLLM's routes default to them: passed explicitly when no base_url is configured,
# so that OPENAI_BASE_URL / ANTHROPIC_API_BASE... never choose the host the vendor's key goes to.
ROUTE_DEFAULTS = {"openai": "https://api.openai.com/v1", "anthropic": "https://api.anthropic.com/v1/messages"}


def route_default_base(model: str) -> str | None:
    """The base URL to give LiteLLM for ``model`` when the config names none: the vendor's own for the openai and
    anthropic routes; None for other routes, unless the environment holds a base URL for the route
    (``<ROUTE>_API_BASE``, ``<ROUTE>_BASE_URL``), which LiteLLM would send the route's key to: refused."""
    try:
        route = litellm.get_llm_provider(model)[1]
    except Exception:  # unknown provider prefix: LiteLLM says so on the first call
        return None
    if route in ROUTE_DEFAULTS:
        return own_endpoint(None, ROUTE_DEFAULTS[route], route)
    prefix = route.upper().replace("-", "_")
    found = [name for name in (f"{prefix}_API_BASE", f"{prefix}_BASE_URL") if os.environ.get(name)]
    if found:
        raise PermanentError(
            f"litellm: {found[0]} is set in the environment, and LiteLLM would send model {model!r} (and its route's key) "
            "there, a host the config does not name: set base_url under [[providers]] to the host meant (it then gets only "
            f"the key api_key_env names), or unset {found[0]}",
            provider="litellm",
        )
    return None


class LiteLLMProvider:
    kind = "litellm"

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        timeout_s: float = 60.0,
        drop_params: bool = True,
        prompt_cache: bool | None = None,
        prompt_cache_min_chars: int = 4096,
        capabilities: Capabilities | None = None,
        max_answer_bytes: int | None = None,
    ) -> None:
        if litellm is None:
            raise PermanentError("the litellm provider needs the 'litellm' extra: pip install 'judgesdk[litellm]'")
        self.model = model
        self.endpoint = redact_url(base_url) if base_url else f"litellm:{model.split('/')[0]}"  # shown, keyed: no credentials
        self.capabilities = capabilities or detect_capabilities(model)
        self._base_url = base_url or route_default_base(model)
        # LiteLLM falls back to the route's environment key (OPENAI_API_KEY...) when given none: at a custom
        # base_url that would send the vendor's key to another host, so only a key given here is sent there
        self._api_key = api_key or (PLACEHOLDER_KEY if base_url else None)
        self._timeout_s = timeout_s
        self._max_answer_bytes = max_answer_bytes  # None: providers._sdk.DEFAULT_MAX_ANSWER_BYTES
        cap_litellm()  # LiteLLM's own HTTP clients: the answer's decoded size capped inside within()
        self._drop_params = drop_params
        cache = routes_to_claude(model) if prompt_cache is None else prompt_cache
        self.cache_planner = PromptCachePlanner(prompt_cache_min_chars) if cache else None

    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        if request.labels is not None or request.continuation is not None:
            raise CapabilityError("litellm gives no exact label or prompt probabilities; use logprobs", provider=self.kind)
        params = self._params(request)
        started = time.perf_counter()
        try:
            raw = await within(self._timeout_s, litellm.acompletion(**params), self.kind, self._max_answer_bytes)
        except ProviderError:  # within's timeout: typed already
            raise
        except Exception as exc:  # litellm maps backend errors to OpenAI-style exceptions with status_code
            if isinstance(exc, (TypeError, ValueError)) and getattr(exc, "status_code", None) is None:
                raise PermanentError(f"{self.kind}: {exc}", provider=self.kind) from exc
            raise classify(exc, self.kind) from exc
        choices = [
            Choice(
                text=field(field(c, "message"), "content") or "",
                tokens=chat_logprob_tokens(field(c, "logprobs"), self.kind, self.endpoint) if request.top_logprobs else None,
                finish_reason=field(c, "finish_reason"),
            )
            for c in answer_choices(raw, self.kind)
        ]
        check_length((c.text for c in choices), request, self.kind, self.endpoint)
        notes = []
        if request.top_logprobs and any(c.tokens is None for c in choices):
            notes.append(LOGPROBS_DROPPED)
        return GenerateResponse(
            choices=choices,
            usage=chat_usage(field(raw, "usage")),
            latency_s=time.perf_counter() - started,
            provider=self.kind,
            model=self.model,
            notes=notes,
            provenance={"runtime": runtime("litellm"), **({"model": served} if isinstance(served := field(raw, "model"), str) and served else {})},
        )

    def _params(self, request: GenerateRequest) -> dict[str, Any]:
        messages = fold_prefill(request.messages)
        params: dict[str, Any] = {
            "model": self.model,
            "messages": [
                {"role": m.role, "content": c}
                for m, c in zip(messages, cache_marked([m.content for m in messages], self.cache_planner))
            ],
            "max_tokens": request.max_tokens,
            "temperature": request.temperature,
            "timeout": self._timeout_s,
            "num_retries": 0,
            "drop_params": self._drop_params,
        }
        optional = {
            "top_p": request.top_p,
            "n": request.n if request.n > 1 else None,
            "seed": request.seed,
            "stop": list(request.stop) or None,
            "api_base": self._base_url,
            "api_key": self._api_key,
        }
        params.update({k: v for k, v in optional.items() if v is not None})
        if request.top_logprobs:
            params["logprobs"] = True
            params["top_logprobs"] = min(request.top_logprobs, self.capabilities.max_top_logprobs or 20)
        return params

    async def aclose(self) -> None:
        return None


class LiteLLMOptions(ProviderOptions):
    """``[providers.options]`` of ``kind = "litellm"`` (``model``, ``base_url``... are set directly under
    ``[[providers]]``)."""

    drop_params: bool = True  # LiteLLM drops parameters the backend does not take (a dropped logprobs is noted)
    prompt_cache: bool | None = None  # mark the shared prompt block for Anthropic's cache; None: on for Claude routes
    prompt_cache_min_chars: int = 4096  # shortest shared block worth marking


def _build(settings: ProviderSettings, options: LiteLLMOptions) -> LiteLLMProvider:
    if settings.api in ("decisions", "systemone"):  # litellm.adecisions / litellm.asystemone (providers/litellm_decisions.py)
        return LiteLLMDecisionsProvider(  # type: ignore[return-value]
            settings.model, api="systemone" if settings.api == "systemone" else "decisions", base_url=settings.base_url,
            api_key=settings.api_key(), timeout_s=settings.timeout_s,
            capabilities=settings.capabilities, max_answer_bytes=settings.max_answer_bytes,
        )  # fmt: skip
    return LiteLLMProvider(
        settings.model, base_url=settings.base_url, api_key=settings.api_key(), timeout_s=settings.timeout_s,
        capabilities=settings.capabilities, max_answer_bytes=settings.max_answer_bytes, **options.model_dump(exclude_unset=True),
    )  # fmt: skip


PROVIDER = ProviderSpec(
    kind=LiteLLMProvider.kind,
    options=LiteLLMOptions,
    build=_build,
    capabilities=lambda settings: (
        Capabilities(decisions=True, max_questions=128) if settings.api in ("decisions", "systemone") else detect_capabilities(settings.model)
    ),
    apis=("chat", "decisions", "systemone"),  # completion, litellm.adecisions, litellm.asystemone
    answer_neutral={
        **ANSWER_NEUTRAL,
        "drop_params": (
            "decides only whether a parameter the backend does not take is dropped or refused: refused, the request fails "
            "(nothing is cached); dropped, the answer is the one the backend gives anyway (a dropped logprobs is noted)"
        ),
    },
)
