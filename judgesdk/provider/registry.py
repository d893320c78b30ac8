"""The provider registry: which provider kinds exist, and where each one's adapter declares itself.

Each adapter module declares a :class:`ProviderSpec`: its kind, its typed options (a :class:`ProviderOptions`
model: ``[providers.options]`` keys it does not define are refused with the list of those it does), its
default capabilities, how its tokens are priced (:class:`Pricing`, read by :mod:`judgesdk.provider.prices`), its
default model, and how it is built from a config. The registry knows kinds by name only and names each
spec as ``"module:attribute"``; it imports an adapter module the first time its kind is used (config
options checked, a provider built, a price looked up), so importing judgesdk never imports an SDK
(``openai``, ``anthropic``, ``litellm``, ``llama_cpp``).

Where kinds come from, first match wins:

1. :func:`register` in this process (``replace=True`` to replace a kind);
2. the built-in adapters (:data:`BUILT_IN`), with their aliases (``llamacpp`` for ``local``);
3. installed distributions, through entry points of the group ``judgesdk.providers``: the entry point's
   name is the kind, its value the ``"module:attribute"`` of a :class:`ProviderSpec` (or of a function
   returning one)::

       # a third-party package's pyproject.toml
       [project.entry-points."judgesdk.providers"]
       mine = "judgesdk_mine.adapter:PROVIDER"

   Entry points are listed by name (no import) the first time a kind is not found among the others, and
   loaded when their kind is used. One cannot replace a built-in kind.

An unknown kind, or an unknown or ill-typed option, is a :class:`~judgesdk.core.errors.ConfigError` naming the
valid ones.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any, cast

from pydantic import BaseModel, ConfigDict, ValidationError

from judgesdk.core import AuthError, ConfigError, Plugins
from judgesdk.provider.protocol import Capabilities, Provider

__all__ = [
    "ANSWER_NEUTRAL_SETTINGS",
    "BUILT_IN",
    "ENTRY_POINT_GROUP",
    "Pricing",
    "ProviderOptions",
    "ProviderSettings",
    "ProviderSpec",
    "canonical_kind",
    "check_options",
    "pricing",
    "provider_kinds",
    "provider_spec",
    "refresh",
    "register",
    "registered_targets",
    "unregister",
]

ENTRY_POINT_GROUP = "judgesdk.providers"

# kind -> where its spec is declared; imported only when the kind is used
BUILT_IN: dict[str, str] = {
    "openai": "judgesdk.providers.openai:PROVIDER",
    "anthropic": "judgesdk.providers.anthropic:PROVIDER",
    "litellm": "judgesdk.providers.litellm:PROVIDER",
    "systemone": "judgesdk.providers.systemone:PROVIDER",
    "local": "judgesdk.providers.llamacpp:PROVIDER",
    "scripted": "judgesdk.providers.scripted:PROVIDER",
}
BUILT_IN_ALIASES: dict[str, str] = {"llamacpp": "local"}  # other names a config may use for a kind

_KIND_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.\-]{0,63}$")


class ProviderOptions(BaseModel):
    """Base of an adapter's typed options (``[providers.options]``): a key it does not define is refused."""

    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)


@dataclass(frozen=True)
class Pricing:
    """How :func:`judgesdk.provider.prices.price_for` prices a kind's tokens."""

    local: bool = False  # runs on this machine: no per-token price, never a made-up one
    map_prefix: str | None = None  # LiteLLM price-map prefix tried after the bare model name; None: the kind
    # prompt-cache writes and reads as multiples of the input price, where the price source gives none
    cache_write: float | None = None
    cache_read: float | None = None


@dataclass(frozen=True)
class ProviderSettings:
    """What a config sets for one provider besides its options, resolved: the model (the kind's default
    where none is set) and the capabilities (the adapter's defaults with the config's overrides, or None
    for the adapter's own)."""

    kind: str
    model: str
    base_url: str | None = None
    api: str = "chat"  # one of the kind's ProviderSpec.apis (checked when the config is loaded)
    timeout_s: float = 60.0  # bounds each request as a whole, its body's last byte included
    api_key_env: str | None = None
    capabilities: Capabilities | None = None
    # the most bytes an answer's body may decode to (a gzip bomb is refused as it inflates); None: the adapters' default
    max_answer_bytes: int | None = None

    def api_key(self) -> str | None:
        """The key in the variable ``api_key_env`` names, or None: the adapter then reads its vendor's
        variable (``OPENAI_API_KEY``...) for the vendor's own host only, so a key never goes to a host it was
        not configured for; a custom ``base_url`` gets a key only when ``api_key_env`` names it."""
        if not self.api_key_env:
            return None
        key = os.environ.get(self.api_key_env)
        if not key:
            if _looks_like_a_key(self.api_key_env):  # the key pasted where its variable's name goes: never repeated
                raise AuthError(
                    "api_key_env names no variable that is set, and looks like a key rather than a variable's name: "
                    'export MY_SERVER_KEY=<key> and write api_key_env = "MY_SERVER_KEY"',
                    provider=self.kind,
                )
            raise AuthError(
                f"api_key_env names {self.api_key_env}, which is not set: export {self.api_key_env}=<key>, or fix the name",
                provider=self.kind,
            )
        return key


# ProviderSettings fields that cannot change an answer, each with the reason (kind, model, base_url and api are keyed:
# endpoint, model, answer_settings); tests/provider/test_cache_keys.py fails on a new field in neither
ANSWER_NEUTRAL_SETTINGS: dict[str, str] = {
    "timeout_s": "how long the client waits for an answer; a request past it fails and nothing is cached",
    "api_key_env": "which variable holds the key; a key authorises a request, it does not change its answer",
    "max_answer_bytes": (
        "refuses an answer whose body decodes to more bytes (a permanent error, nothing cached); an answer within it is "
        "read whole, byte for byte, so the cap never changes an answer that is used"
    ),
    "capabilities": (
        "declares what the backend can do, which decides which requests a method sends; every request's own fields "
        "(logprobs, labels, grammar...) are in the key"
    ),
}


def _looks_like_a_key(name: str) -> bool:
    """Whether a name no variable has looks like a key (long, mixing lower case with upper case or digits, as
    generated tokens do) rather than a variable's name (``OPENAI_API_KEY``, ``my_server_key``)."""
    lower = any(c.islower() for c in name)
    return len(name) >= 20 and lower and any(c.isupper() or c.isdigit() for c in name)


Builder = Callable[[ProviderSettings, Any], Provider]  # (settings, a validated options model) -> adapter


@dataclass(frozen=True)
class ProviderSpec:
    """One provider kind, as its adapter module declares it (see the module docstring)."""

    kind: str
    options: type[BaseModel] = ProviderOptions
    build: Builder | None = None  # None: built in code only (``built_in_code`` says how)
    capabilities: Capabilities | Callable[[ProviderSettings], Capabilities] = field(default_factory=Capabilities)
    pricing: Pricing = field(default_factory=Pricing)
    default_model: str = ""
    pooled: bool = True  # rate limits may spread requests over several instances (one SDK client each)
    # items a judge keeps in flight when its config sets no ``concurrency``: None follows the provider's pace (the
    # judge's item pace, learnt from latency, 429s and timeouts: a hosted API); a number is what suits a model that
    # computes a few requests at a time in this process (a local model), where more in flight only queues
    default_concurrency: int | None = None
    built_in_code: str = ""  # why a config cannot build it, when ``build`` is None
    # what names the answering model beyond the config's own text, read from the config without building the adapter
    # (a local model file's sha256): part of the question a results row answers, so a file replaced at the same path
    # is judged again on resume; None or "": the config's text says it all (a hosted model's name)
    model_identity: Callable[[ProviderSettings, Any], str] | None = None
    # options that cannot change an answer, each with the reason (a measurement where one was needed): left out of
    # the question a results row answers; every other option is keyed (tests/provider/test_cache_keys.py)
    answer_neutral: Mapping[str, str] = field(default_factory=dict)
    apis: tuple[str, ...] = ("chat",)  # the ``api`` values a config may set for this kind (one it does not take is refused)
    # the detected chain (no providers configured): the kind joins it where ``detect_env`` is set in the environment (None:
    # always, the fallback), in ``detect_order``; None: never detected. Written as literals: read without importing the adapter
    detect_env: str | None = None
    detect_order: int | None = None

    def check_api(self, api: str) -> None:
        """Raise a :class:`ConfigError` naming the ``api`` values this kind takes unless it takes ``api``."""
        if api not in self.apis:
            shown = repr(api) if isinstance(api, str) and _KIND_NAME.match(api) else "this value"  # never echo what may be a secret
            raise ConfigError(f"provider {self.kind} takes api {' or '.join(repr(a) for a in self.apis)}, not {shown}")

    def default_capabilities(self, settings: ProviderSettings) -> Capabilities:
        """The adapter's capabilities for ``settings`` before any override."""
        return self.capabilities(settings) if callable(self.capabilities) else self.capabilities

    def option_names(self) -> list[str]:
        return sorted(self.options.model_fields)

    def parse_options(self, options: Mapping[str, Any]) -> BaseModel:
        """``options`` as this kind's typed options; an unknown or ill-typed key is a :class:`ConfigError`
        naming the valid ones (never the value given: it may be a secret)."""
        names = self.option_names()
        if self.options.model_config.get("extra") != "allow":
            aliases = {f.alias for f in self.options.model_fields.values() if f.alias}
            unknown = sorted(str(key) for key in options if key not in names and key not in aliases)
            if unknown:
                guesses = {key: close[0] for key in unknown if (close := difflib.get_close_matches(key, names, n=1, cutoff=0.75))}
                if len(unknown) == 1:
                    hint = f" (did you mean {guesses[unknown[0]]}?)" if guesses else ""
                else:
                    hint = f" (did you mean {', '.join(f'{g} for {k}' for k, g in guesses.items())}?)" if guesses else ""
                valid = ", ".join(names) or "none (this provider takes no options)"
                word = "option" if len(unknown) == 1 else "options"
                raise ConfigError(f"unknown {word} {', '.join(unknown)} for provider {self.kind}{hint}; valid: {valid}")
        try:
            return self.options.model_validate(dict(options))
        except ValidationError as exc:
            problems = "; ".join(
                f"option {'.'.join(str(part) for part in error['loc']) or '(all)'} of provider {self.kind}: {error['msg']}"
                for error in exc.errors(include_url=False, include_input=False, include_context=False)
            )
            raise ConfigError(problems) from None

    def create(self, settings: ProviderSettings, options: BaseModel) -> Provider:
        """The adapter for ``settings`` and ``options`` (parsed by :meth:`parse_options`)."""
        if self.build is None:
            raise ConfigError(self.built_in_code or f"the {self.kind} provider cannot be built from a config")
        self.check_api(settings.api)
        return self.build(settings, options)


Target = ProviderSpec | str | Callable[[], ProviderSpec]


def _entry_points() -> Iterable[metadata.EntryPoint]:
    """The installed distributions' entry points of :data:`ENTRY_POINT_GROUP` (tests replace this)."""
    return metadata.entry_points(group=ENTRY_POINT_GROUP)


_plugins: Plugins[ProviderSpec] = Plugins(
    what="provider kind", declares="kind", a_name="a provider kind",  # the words of its messages
    group=ENTRY_POINT_GROUP, built_in=BUILT_IN, aliases=BUILT_IN_ALIASES, pattern=_KIND_NAME, expected=ProviderSpec,
    name_of=lambda spec: spec.kind, unknown=lambda kind: ConfigError(_unknown_kind(kind)),
    entry_points=lambda: _entry_points(),  # read when listed, so a test's replacement counts
)


def refresh() -> None:
    """Forget what entry points were found and loaded (after installing a package, or in tests)."""
    _plugins.refresh()


def register(kind: str, spec: Target, *, aliases: Iterable[str] = (), replace: bool = False) -> None:
    """Make ``kind`` a provider kind: ``spec`` is a :class:`ProviderSpec`, its ``"module:attribute"`` (imported
    when the kind is first used), or a function returning one. ``aliases`` are other names configs may use.
    ``replace=True`` replaces a kind of that name (a built-in one included, until :func:`unregister`)."""
    _plugins.register(kind, spec, aliases=aliases, replace=replace)


def unregister(kind: str) -> None:
    """Undo :func:`register` (a built-in kind registered over comes back)."""
    _plugins.unregister(kind)


def registered_targets() -> dict[str, Target]:
    """The kinds :func:`register` added in this process, with what each was registered as (nothing imported)."""
    return cast("dict[str, Target]", _plugins.registered())


def provider_kinds() -> list[str]:
    """Every provider kind: registered, built in, and named by installed packages' entry points."""
    return sorted(_plugins.names())


def canonical_kind(kind: str) -> str:
    """``kind``, or the kind an alias names; an unknown kind is a :class:`ConfigError` naming the valid ones."""
    name = _plugins.canonical(kind)
    if name is None:
        raise ConfigError(_unknown_kind(kind))
    return name


def _unknown_kind(kind: object) -> str:
    kinds = provider_kinds()
    shown = f" {kind!r}" if isinstance(kind, str) and _KIND_NAME.match(kind) else ""  # never echo what may be a secret
    close = difflib.get_close_matches(kind, kinds + list(_plugins.aliases()), n=1, cutoff=0.75) if shown and isinstance(kind, str) else []
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    return f"unknown provider kind{shown}{hint}; valid: {', '.join(kinds)}"


def provider_spec(kind: str) -> ProviderSpec:
    """The spec of ``kind`` (or of the kind an alias names), its adapter module imported on first use."""
    return _plugins.get(kind)


def check_options(kind: str, options: Mapping[str, Any]) -> None:
    """Raise a :class:`ConfigError` naming the valid options unless ``options`` suit ``kind``."""
    provider_spec(kind).parse_options(options)


def pricing(kind: str) -> Pricing:
    """How ``kind``'s tokens are priced; a kind the registry does not know (a provider built in code) is
    priced like any hosted API."""
    try:
        name = canonical_kind(kind)
    except ConfigError:
        return Pricing()
    return provider_spec(name).pricing
