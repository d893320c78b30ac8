"""What a config sets for one provider (``[[providers]]``) and for the response cache (``[cache]``), typed.

:class:`ProviderConfig` is checked against the provider registry when it is loaded: an unknown kind or option
is a :class:`~judgesdk.core.errors.ConfigError` naming the valid ones, and a key written into a config is
refused by name (keys come from the environment, ``api_key_env``). :mod:`judgesdk.provider.stack` builds an
adapter from it and stacks the layers on it; :class:`judgesdk.judging.judge_config.JudgeConfig` holds a chain of
them with the rest of a judge's config.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from judgesdk.core import ConfigError
from judgesdk.provider.layers.ratelimit import RateLimitConfig
from judgesdk.provider.protocol import Capabilities
from judgesdk.provider.registry import ProviderSettings, ProviderSpec, canonical_kind, check_options, provider_spec
from judgesdk.provider.urls import check_base_url

__all__ = ["NO_KEY_IN_CONFIG", "CacheConfig", "ProviderConfig", "ProviderKind", "capability_problems", "default_cache_dir", "model_name"]


ProviderKind = str  # a kind the provider registry knows: judgesdk.provider.registry.provider_kinds()

NO_KEY_IN_CONFIG = (
    "API keys are never read from config files: put the key in an environment variable and name it with "
    'api_key_env = "VARIABLE"'
)
_TOP_LEVEL = {"model", "base_url", "api", "timeout_s", "max_answer_bytes", "capabilities"}  # adapter arguments set as fields, never as options
_VARIABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")  # what an environment variable's name can be


class ProviderConfig(BaseModel):
    """One provider as a config sets it (a ``[[providers]]`` entry): its kind, model and address, the name of the
    variable holding its key (never the key: module docstring), the API its adapter calls, its timeout, declared
    capabilities overridden, the kind's typed options and its rate limit. Checked at load against the registry."""

    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)  # a misplaced key is never echoed

    kind: ProviderKind  # checked against the provider registry; an alias becomes its kind
    model: str | None = None
    base_url: str | None = None
    api_key_env: str | None = None  # name of the environment variable holding the key
    api: str = "chat"  # which of its APIs the adapter calls: one of the kind's ProviderSpec.apis
    timeout_s: float = Field(default=60.0, gt=0)  # seconds per request, as a whole: the body's last byte included
    max_answer_bytes: int | None = Field(default=None, gt=0)  # an answer's decoded size at most (None: 64 MiB); past it, refused
    capabilities: dict[str, Any] = Field(default_factory=dict)  # overrides of declared capabilities
    options: dict[str, Any] = Field(default_factory=dict)  # the kind's typed options (local: model_path, n_gpu_layers...)
    rate_limit: RateLimitConfig | None = None  # in flight, RPM/TPM buckets, back-off on 429s; None: unlimited

    @field_validator("kind")
    @classmethod
    def _registered_kind(cls, value: str) -> str:
        return canonical_kind(value)  # ConfigError (a ValueError) naming the valid kinds

    @field_validator("base_url")
    @classmethod
    def _http_address(cls, value: str | None) -> str | None:
        return None if value is None else check_base_url(value)

    @field_validator("api_key_env")
    @classmethod
    def _variable_name(cls, value: str | None) -> str | None:
        """The name of a variable, never the key itself: a value no variable can be named is refused without
        being repeated (it is most likely the key, pasted where its variable's name goes)."""
        if value is not None and not _VARIABLE.match(value):
            raise ValueError(
                "must be the name of an environment variable (letters, digits and _, e.g. MY_SERVER_KEY), not the key "
                "itself: export MY_SERVER_KEY=<key> and write api_key_env = \"MY_SERVER_KEY\""
            )
        return value

    @field_validator("api")
    @classmethod
    def _api_the_kind_takes(cls, value: str, info: ValidationInfo) -> str:
        """An ``api`` the kind's adapter does not declare (:attr:`ProviderSpec.apis`) is refused at load, naming the
        ones it takes. Checked only where a config sets it: the default imports no adapter."""
        kind = info.data.get("kind")
        if kind is not None:  # an unknown kind is reported by itself
            provider_spec(kind).check_api(value)
        return value

    @field_validator("capabilities")
    @classmethod
    def _known_capabilities(cls, value: dict[str, Any]) -> dict[str, Any]:
        """Each override names a capability and has its type, checked at load; the error names the fields and
        never the values."""
        if value:
            try:
                Capabilities.model_validate({**Capabilities().model_dump(), **value})
            except ValidationError as exc:
                raise ValueError(capability_problems(exc, prefix="")) from None
        return value

    @field_validator("options")
    @classmethod
    def _typed_options(cls, value: dict[str, Any], info: ValidationInfo) -> dict[str, Any]:
        """Checked against the kind's options model when any are given, so a typo is found at load; none
        given imports no adapter (the detected chain names kinds it may never build)."""
        kind = info.data.get("kind")
        if value and kind is not None:  # an unknown kind is reported by itself
            check_options(kind, value)
        return value

    @model_validator(mode="before")
    @classmethod
    def _no_key_in_config(cls, data: Any) -> Any:
        """A key written in a config is refused, by name only: its value is never repeated in the error."""
        if isinstance(data, Mapping):
            options = data.get("options")
            for where, mapping in (("api_key", data), ("options.api_key", options if isinstance(options, Mapping) else {})):
                if "api_key" in mapping:
                    raise ValueError(f"{where} is refused: {NO_KEY_IN_CONFIG}")
            reserved = sorted(set(options or {}) & _TOP_LEVEL) if isinstance(options, Mapping) else []
            if reserved:
                raise ValueError(f"options.{reserved[0]} is refused: set {reserved[0]} directly under [[providers]], not in its options")
        return data


class CacheConfig(BaseModel):
    """The response cache. Its directory is checked when the cache is opened (a provider is built), not
    here: ``--no-cache`` must rescue a run whose configured directory is unusable."""

    model_config = ConfigDict(extra="forbid")

    enabled: bool = True
    directory: Path = Field(default_factory=lambda: default_cache_dir())
    namespace: str = "default"
    ttl_s: float | None = Field(default=None, gt=0)
    size_limit_mb: float = Field(default=1024.0, gt=0)  # least recently stored entries are evicted past it


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "judgesdk"


def model_name(config: ProviderConfig) -> str:
    """The model ``config`` names, or its kind's default model (``""`` where the kind has none)."""
    return config.model or provider_spec(config.kind).default_model


def _capabilities(config: ProviderConfig, spec: ProviderSpec, settings: ProviderSettings) -> Capabilities | None:
    """The adapter's default capabilities with the config's overrides, or None (the adapter's own) without any."""
    if not config.capabilities:
        return None
    base = spec.default_capabilities(settings)
    try:
        return Capabilities.model_validate({**base.model_dump(), **config.capabilities})
    except ValidationError as exc:
        raise ConfigError(f"invalid capabilities override: {capability_problems(exc)}") from None


def capability_problems(exc: ValidationError, prefix: str = "capabilities.") -> str:
    """One line naming each bad ``capabilities`` override and what is wrong with it, never its value."""
    valid = ", ".join(Capabilities.model_fields)
    problems = []
    for error in exc.errors(include_url=False, include_input=False, include_context=False):
        name = ".".join(str(part) for part in error["loc"])
        if error["type"] == "extra_forbidden":
            problems.append(f"{prefix}{name}: unknown capability (valid: {valid})")
        else:
            problems.append(f"{prefix}{name}: {error['msg']}")
    return "; ".join(problems)
