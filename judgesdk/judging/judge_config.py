"""Configuration as pydantic models, from a TOML/YAML file, a mapping, and ``JUDGESDK_*`` variables.

Switching the model behind a judge is a config change only::

    [[providers]]            # tried in order: a fallback chain
    kind = "openai"
    model = "gpt-4o-mini"

    [[providers]]
    kind = "local"           # the embedded Gemma 3 270M, or model_path = "any.gguf"

With no providers configured, the chain is detected: OpenAI if ``OPENAI_API_KEY`` is set, then Anthropic
if ``ANTHROPIC_API_KEY`` is set, then the embedded local model. API keys are read from the environment
(``api_key_env``), never stored in config files or the cache.

Provider kinds, their typed ``[providers.options]``, default models and capabilities come from the provider
registry (:mod:`judgesdk.provider.registry`): an unknown kind or option is a :class:`ConfigError` naming the valid
ones, found when the config is loaded; an adapter's module is imported only for the kinds in use.

A ``[jury]`` section (:class:`JuryConfig`, run by :mod:`judgesdk.jury`) asks several judges instead of one::

    [jury]
    aggregate = "mean"        # mean | median | majority | weights (with weights_from = "labels.jsonl")
    min_judges = 2            # fewer judges with a score: the item is an error saying so (default: every judge)
    disagreement = 1.5        # flag an item when its judges' scores spread by more (default: 1/4 of the scale)

    [[jury.judges]]
    name = "geval-local"
    method = "geval"
    provider = { kind = "local" }   # a [[providers]] entry, or a list of them: this judge's own fallback chain

A judge's unset ``provider``, ``method``, ``template`` are the top-level ones; its ``method_options`` add to them.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from judgesdk.core import ConfigError, Criterion
from judgesdk.estimation import EstimationSettings
from judgesdk.fused import bundled_labels, file_sha256, ladder_label
from judgesdk.provider import (
    BUILT_IN,
    NO_KEY_IN_CONFIG,
    CacheConfig,
    OverloadConfig,
    ProviderConfig,
    RetryPolicy,
    StackPlan,
    detected_kinds,
    model_identity,
    provider_spec,
)
from judgesdk.records import Ask
from judgesdk.scorers import is_method, method_names, method_spec
from judgesdk.scorers import problem as method_options_problem

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib



class JudgeConfig(BaseModel):
    """A judge's whole configuration, as read from a TOML/YAML file, a mapping and ``JUDGESDK_*`` variables
    (:func:`load_config`; module docstring): the provider chain, the method and its options, the template,
    retries, overload handling, the cache, estimation settings and, optionally, a jury. Unknown keys are refused
    (:func:`validation_summary` names the field they are closest to)."""

    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)

    providers: list[ProviderConfig] = Field(default_factory=list)
    template: str | None = None  # None: each method's own default template
    method: str = "auto"  # the fused judge where fitted (local model, summaries), else geval
    dataset: str | None = None  # selects dataset-specific prompt variants where a paper prints them
    method_options: dict[str, Any] = Field(default_factory=dict)  # per-method settings: rungs, k, normalization...
    # items in flight; unset, the judge follows the provider's pace (its ``default_concurrency`` where the adapter
    # declares one, e.g. the local model's 4): :meth:`fixed_concurrency`. The 4 is what readers that need a number
    # (a jury, a forecast) use when it is unset
    concurrency: int = Field(default=4, ge=1)
    retry: RetryPolicy = Field(default_factory=RetryPolicy)
    overload: OverloadConfig = Field(default_factory=OverloadConfig)  # adaptive concurrency, circuit breaker
    cache: CacheConfig = Field(default_factory=CacheConfig)
    estimation: EstimationSettings = Field(default_factory=EstimationSettings)
    jury: JuryConfig | None = None  # several judges instead of one (judgesdk.jury); None: this judge alone

    def fixed_concurrency(self) -> int | None:
        """The items in flight the config (or ``JUDGESDK_CONCURRENCY``) sets, a fixed limit; None where it sets none,
        so the judge follows the provider's pace (:class:`judgesdk.judging.pace.Pace`)."""
        return self.concurrency if "concurrency" in self.model_fields_set else None

    @field_validator("method_options")
    @classmethod
    def _known_method_options(cls, value: dict[str, Any]) -> dict[str, Any]:
        """Settings of several methods may share one config, but a key that no method reads is a typo."""
        found = method_options_problem(value)
        if found is not None:
            raise ValueError(found)
        return value

    @model_validator(mode="after")
    def _jury_judges(self) -> JudgeConfig:
        """Each judge as it will run (its unset fields the top-level ones): a method whose scores are on the
        criterion's scale, its options read by that method, and no two judges the same."""
        if self.jury is None:
            return self
        seen: dict[str, str] = {}
        for judge in self.jury.judges:
            member = jury_member_config(self, judge)
            where = f"jury judge {judge.name!r}"
            if not is_method(member.method):  # the top-level method, inherited
                raise ValueError(f"{where} inherits method {member.method!r}, which is unknown; choose one of {', '.join(method_names())}")
            spec = method_spec(member.method)
            if spec.off_scale is not None:
                on_scale = [name for name in method_names() if method_spec(name).off_scale is None]
                raise ValueError(
                    f"{where} uses method {member.method!r}, whose score is {spec.off_scale}, not a value on the "
                    "criterion's scale: a jury averages and compares its judges' scores on one scale; choose a method "
                    f"that answers on it ({', '.join(on_scale)})"
                )
            found = method_options_problem(judge.method_options, spec.options, f" for method {member.method!r}")
            if found is not None:
                raise ValueError(f"{where}: method_options: {found}")
            same = json.dumps(member.model_dump(mode="json", include=_ANSWERING), sort_keys=True)
            if same in seen:
                raise ValueError(
                    f"jury judges {seen[same]!r} and {judge.name!r} are the same judge (provider, method, template and "
                    "options): a jury's agreement means something only between different judges; change one of them"
                )
            seen[same] = judge.name
        return self


    def stack_plan(self) -> StackPlan:
        """The layers this config stacks over each provider (:func:`judgesdk.provider.stack.assemble`)."""
        return StackPlan(retry=self.retry, overload=self.overload, cache=self.cache)

_ANSWERING = {"providers", "method", "template", "dataset", "method_options", "estimation"}  # what makes two judges differ


class JuryJudgeConfig(BaseModel):
    """One judge of a jury: a name, a provider (or its own fallback chain) and a method. Unset fields are the
    top-level config's: ``provider`` its ``[[providers]]`` chain (or the detected one), ``method`` and
    ``template`` its own; ``method_options`` are added to the top-level ones."""

    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)

    name: str
    provider: list[ProviderConfig] | None = None
    method: str | None = None
    template: str | None = None
    method_options: dict[str, Any] = Field(default_factory=dict)

    @field_validator("name")
    @classmethod
    def _named(cls, value: str) -> str:
        if not value.strip():
            raise ValueError('a jury judge needs a non-empty name, e.g. name = "geval-local"')
        return value.strip()

    @field_validator("provider", mode="before")
    @classmethod
    def _one_or_a_chain(cls, value: Any) -> Any:
        """``provider = {kind = ...}`` (one) or an array of them (a fallback chain)."""
        if isinstance(value, Mapping):
            return [value]
        if isinstance(value, list) and not value:
            raise ValueError("an empty list names no provider: give one (or a list), or leave provider out to use [[providers]]")
        return value

    @field_validator("method")
    @classmethod
    def _known_method(cls, value: str | None) -> str | None:
        if value is not None and not is_method(value):
            close = difflib.get_close_matches(value, method_names(), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ValueError(f"unknown method {value!r}{hint}; choose one of {', '.join(method_names())}")
        return value


class JuryConfig(BaseModel):
    """The ``[jury]`` section: its judges, how their scores become one, and when an item goes to a person."""

    model_config = ConfigDict(extra="forbid", hide_input_in_errors=True)

    judges: list[JuryJudgeConfig]
    aggregate: Literal["mean", "median", "majority", "weights"] = "mean"
    min_judges: int | None = Field(default=None, ge=1)  # judges with a score an item needs; None: every judge
    disagreement: float | None = Field(default=None, gt=0)  # max - min of the judges' scores that flags an item
    weights_from: Path | None = None  # labels JSONL ({"id", "label"}) of items of the run: aggregate = "weights"

    @model_validator(mode="after")
    def _coherent(self) -> JuryConfig:
        if len(self.judges) < 2:
            raise ValueError(f"a jury needs at least two judges ([[jury.judges]] entries), got {len(self.judges)}")
        names = [judge.name for judge in self.judges]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise ValueError(f"jury judges need distinct names: {', '.join(map(repr, repeated))} is used twice")
        if self.min_judges is not None and self.min_judges > len(self.judges):
            raise ValueError(f"min_judges = {self.min_judges} is more than the jury's {len(self.judges)} judges")
        if self.aggregate == "weights" and self.weights_from is None:
            raise ValueError(
                'aggregate = "weights" fits each judge\'s weight on human labels: set weights_from = "labels.jsonl" '
                '(one {"id": ..., "label": number} per line, ids of items in the run)'
            )
        if self.aggregate != "weights" and self.weights_from is not None:
            raise ValueError(f'weights_from is read only with aggregate = "weights" (aggregate is {self.aggregate!r})')
        if self.weights_from is not None and not self.weights_from.is_file():
            raise ValueError(f"weights_from: labels file {self.weights_from} does not exist (a path from the working directory)")
        return self

    @property
    def needed(self) -> int:
        """Judges with a score an item needs (``min_judges``, or every judge)."""
        return self.min_judges or len(self.judges)

    def every_judge_sets(self, field: str) -> bool:
        """Whether every judge sets ``field`` itself, so that the top-level value (or a flag) reaches none."""
        return all(getattr(judge, field) is not None for judge in self.judges)


JudgeConfig.model_rebuild()  # its jury field names JuryConfig, defined after it


def jury_member_config(config: JudgeConfig, judge: JuryJudgeConfig) -> JudgeConfig:
    """The config of one jury judge: the top-level one (without its jury) with the judge's own fields."""
    data = config.model_dump(exclude={"jury"})
    if judge.provider is not None:
        data["providers"] = [provider.model_dump() for provider in judge.provider]
    data["method"] = judge.method or config.method
    data["template"] = judge.template or config.template
    data["method_options"] = {**config.method_options, **judge.method_options}
    return JudgeConfig.model_validate(data)


def load_config(source: str | Path | Mapping[str, Any] | JudgeConfig | None = None) -> JudgeConfig:
    """A validated config from ``source``: a file path (``.toml``, ``.yaml`` or ``.yml``), a mapping, a config
    object or None (defaults only), then ``JUDGESDK_*`` overrides. A missing or unreadable file, or a config that
    does not validate, is a :class:`~judgesdk.core.errors.ConfigError` naming what is wrong."""
    if isinstance(source, JudgeConfig):
        data: dict[str, Any] = source.model_dump()
        if "concurrency" not in source.model_fields_set:  # unset stays unset: the judge follows the provider's pace
            data.pop("concurrency")
    elif isinstance(source, Mapping):
        data = dict(source)
    elif source is None:
        data = {}
    else:
        data = _read_file(Path(source))
    data = _apply_env(data, os.environ)
    try:
        return JudgeConfig.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(f"invalid judgesdk config: {validation_summary(exc)}") from None


def validation_summary(exc: ValidationError, model: type[BaseModel] | None = None) -> str:
    """One line naming each bad field of ``exc`` and what is wrong, never the value given (it may be a secret).
    An unknown key of any section of ``model`` (default :class:`JudgeConfig`) is named with the field it is
    closest to."""
    parts = []
    for error in exc.errors(include_url=False, include_input=False, include_context=False):
        where = ".".join(str(part) for part in error["loc"])
        message = str(error["msg"]).removeprefix("Value error, ")
        if error["type"] == "extra_forbidden":
            message = "unknown field"
            if "key" in where.rsplit(".", 1)[-1].lower():
                message += f" ({NO_KEY_IN_CONFIG})"
            elif len(error["loc"]) >= 3 and error["loc"][-3] in ("providers", "provider"):  # [[providers]] or a jury judge's
                close = difflib.get_close_matches(str(error["loc"][-1]), list(ProviderConfig.model_fields), n=1, cutoff=0.75)
                message += f" (did you mean {close[0]!r}?)" if close else (
                    " (adapter options such as model_path or n_gpu_layers go under [providers.options])"
                )
            elif len(error["loc"]) == 1 and _belongs_elsewhere(str(error["loc"][0])):
                message += _belongs_elsewhere(str(error["loc"][0]))
            else:
                message += _did_you_mean(str(error["loc"][-1]), fields_at(model or JudgeConfig, error["loc"][:-1]))
        parts.append(f"{where}: {message}" if where else message)
    return "; ".join(parts)


def _did_you_mean(key: str, fields: Sequence[str]) -> str:
    """`` (did you mean 'max_attempts'?)`` for the field closest to ``key``, else the valid ones; "" without any."""
    if not fields:
        return ""
    close = difflib.get_close_matches(key, fields, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else f" (valid: {', '.join(sorted(fields))})"


def fields_at(model: type[BaseModel], loc: Sequence[int | str]) -> list[str]:
    """The field names of the section at ``loc`` (a validation error's path, list indices included) under ``model``:
    ``("retry",)`` gives RetryPolicy's, ``("gates", 0, "mean")`` MeanGate's (``mean``: the tag pydantic puts in the
    path of a member of a discriminated union). Empty where the path leads to no model (a free-form table)."""
    current = [model]
    for part in loc:
        if isinstance(part, int):
            continue
        found = [inner for m in current if part in m.model_fields for inner in _models_in(m.model_fields[part].annotation)]
        if not found:  # a union member's tag: the member whose literal kind it is
            found = [m for m in current if part in get_args(getattr(m.model_fields.get("kind"), "annotation", None))]
        if not found:
            return []
        current = found
    return sorted({name for m in current for name in m.model_fields})


def _models_in(annotation: Any) -> list[type[BaseModel]]:
    """The pydantic models an annotation holds (``list[X]``, ``X | None``, ``Annotated[A | B, ...]``)."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return [annotation]
    return [model for arg in get_args(annotation) for model in _models_in(arg)]


def _belongs_elsewhere(key: str) -> str:
    """Where a top-level key that is no field of the config belongs, when it is a provider's field or a
    built-in provider's option (``model_path`` written above ``[[providers]]``); "" otherwise."""
    if key in ProviderConfig.model_fields:
        return f" ({key} is set for each provider: write it under [[providers]])"
    kinds = []
    for kind in BUILT_IN:
        try:
            if key in provider_spec(kind).option_names():
                kinds.append(kind)
        except Exception:  # noqa: BLE001 - an adapter that cannot be imported here names no options
            continue
    if kinds:
        return f" ({key} is an option of provider {' and '.join(kinds)}: write it under [[providers]], in its [providers.options] table)"
    return ""


def _read_file(path: Path) -> dict[str, Any]:
    if not path.exists():
        raise ConfigError(f"config file {path} does not exist")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(f"config {path} is not UTF-8 text (byte {exc.start}): save it as UTF-8") from None
    except OSError as exc:
        raise ConfigError(f"cannot read config {path}: {exc.strerror or exc}") from None
    if path.suffix == ".toml":
        try:
            return tomllib.loads(text)
        except tomllib.TOMLDecodeError as exc:  # names the line and column, never quotes the line
            raise ConfigError(f"cannot read config {path}: {exc}") from None
    if path.suffix not in (".yaml", ".yml"):
        raise ConfigError(f"config {path} must be .toml, .yaml or .yml")
    import yaml

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"cannot read config {path}: {_yaml_problem(exc)}") from None
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        found = {list: "a list", str: "a string", bool: "true/false"}.get(type(data), "a number")
        raise ConfigError(f"config {path} must hold settings as keys (providers:, method:, ...) at its top level, not {found}")
    return dict(data)


def _yaml_problem(exc: Exception) -> str:
    """One line: what the YAML parser found and where, without the snippet of the line it quotes (which may
    hold a secret)."""
    problem = getattr(exc, "problem", None) or getattr(exc, "context", None)
    mark = getattr(exc, "problem_mark", None) or getattr(exc, "context_mark", None)
    if not problem:
        return "not valid YAML"
    where = f" (at line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
    return f"not valid YAML: {problem}{where}"


_TRUE, _FALSE = ("1", "true", "yes", "on", "y", "t"), ("0", "false", "no", "off", "n", "f", "")
PROVIDER_VARIABLES = ("JUDGESDK_MODEL", "JUDGESDK_BASE_URL", "JUDGESDK_API")  # what JUDGESDK_PROVIDER's one provider takes


def env_flag(env: Mapping[str, str], name: str) -> bool:
    """A yes/no variable: 1/true/yes/on (any case) is yes, 0/false/no/off or empty is no, anything else a
    ConfigError (``JUDGESDK_NO_CACHE=TRUE`` must turn the cache off, ``=maybe`` must not pass unnoticed)."""
    value = env.get(name, "").strip().lower()
    if value in _TRUE or value in _FALSE:
        return value in _TRUE
    raise ConfigError(f"{name} must be 1, true, yes or on (or 0, false, no, off), got {env[name][:20]!r}")


def _apply_env(data: dict[str, Any], env: Mapping[str, str]) -> dict[str, Any]:
    """``JUDGESDK_PROVIDER`` (with ``_MODEL``, ``_BASE_URL``, ``_API``) replaces the chain with one provider;
    ``JUDGESDK_CACHE_DIR``, ``JUDGESDK_CACHE_SIZE_MB``, ``JUDGESDK_NO_CACHE=1``, ``JUDGESDK_CONCURRENCY``,
    ``JUDGESDK_METHOD`` override. ``JUDGESDK_MODEL`` or ``_BASE_URL`` without ``JUDGESDK_PROVIDER`` is a
    ConfigError: which provider of a chain (or of the detected one) it would change is a guess, and a base URL
    guessed onto a provider would pair its key with a host the config did not name."""
    data = dict(data)
    stray = [name for name in PROVIDER_VARIABLES if env.get(name)]
    if stray and not env.get("JUDGESDK_PROVIDER"):
        raise ConfigError(
            f"{' and '.join(stray)} {'is' if len(stray) == 1 else 'are'} set but JUDGESDK_PROVIDER is not: they describe the one "
            "provider JUDGESDK_PROVIDER names (e.g. JUDGESDK_PROVIDER=openai); set it too, or unset them and set model and "
            "base_url under [[providers]] in the config"
        )
    if env.get("JUDGESDK_PROVIDER"):
        provider: dict[str, Any] = {"kind": env["JUDGESDK_PROVIDER"]}
        for key, name in (("model", "JUDGESDK_MODEL"), ("base_url", "JUDGESDK_BASE_URL"), ("api", "JUDGESDK_API")):
            if env.get(name):
                provider[key] = env[name]
        data["providers"] = [provider]
    cache = dict(data.get("cache") or {})
    if env.get("JUDGESDK_CACHE_DIR"):
        cache["directory"] = env["JUDGESDK_CACHE_DIR"]
    if env.get("JUDGESDK_CACHE_SIZE_MB"):
        cache["size_limit_mb"] = env["JUDGESDK_CACHE_SIZE_MB"]
    if env_flag(env, "JUDGESDK_NO_CACHE"):
        cache["enabled"] = False
    data["cache"] = cache
    if env.get("JUDGESDK_CONCURRENCY"):
        data["concurrency"] = env["JUDGESDK_CONCURRENCY"]
    if env.get("JUDGESDK_METHOD"):
        data["method"] = env["JUDGESDK_METHOD"]
    return data


def detect_chain(env: Mapping[str, str]) -> list[ProviderConfig]:
    """The default fallback chain (no providers configured): the kinds whose adapters declare they are detected
    (``ProviderSpec.detect_env``/``detect_order``): hosted providers whose keys are set in ``env``, then the embedded
    local model. Read without importing an adapter (:mod:`judgesdk.provider.detection`)."""
    return [ProviderConfig(kind=kind) for kind in detected_kinds(env)]


# -- the question a results row answers --------------------------------------------------------------


def _answer_neutral(provider: ProviderConfig) -> Mapping[str, str]:
    """The options ``provider``'s kind declares answer-neutral; its adapter is read only where options are set (they
    were checked against it when the config was loaded, so it is imported already)."""
    return provider_spec(provider.kind).answer_neutral if provider.options else {}


def ask_for(config: JudgeConfig, criteria: Criterion | Sequence[Criterion], method: str | None = None) -> Ask:
    """The :class:`Ask` of judging ``criteria`` with ``method`` (default: the config's) under ``config``.

    A provider's answer-neutral options (its adapter's ``ProviderSpec.answer_neutral``: threads, batch size,
    prefix reuse...) are left out: they cannot change an answer, so setting one (as the Ray engine does with each
    actor's ``n_threads``) asks the same question and resumes the same rows."""
    chosen = (criteria,) if isinstance(criteria, Criterion) else tuple(criteria)
    method = method or config.method
    answers_depend_on: dict[str, Any] = {
        "criteria": [c.model_dump(mode="json") for c in chosen],
        "method": method,
        "template": config.template,
        "dataset": config.dataset,
        "method_options": config.method_options,
        "estimation": config.estimation.model_dump(mode="json"),
        "providers": [
            {"kind": p.kind, "model": p.model, "base_url": p.base_url, "api": p.api, "capabilities": p.capabilities,
             "options": {k: v for k, v in p.options.items() if k not in _answer_neutral(p)}}  # fmt: skip
            | ({"model_identity": identity} if (identity := model_identity(p)) else {})  # a GGUF's content: replaced, asked again
            for p in config.providers
        ],
    }
    if is_method(method) and method_spec(method).reads_fits:  # its answers come from a fused fit file
        answers_depend_on["fits"] = fit_identities(config.method_options.get("fused_model"))
    digest = hashlib.sha256(json.dumps(answers_depend_on, sort_keys=True, default=str).encode()).hexdigest()[:10]
    return Ask(criterion="+".join(c.name for c in chosen), method=method, config=digest)


def fit_identities(fused_model: object = None) -> list[str]:
    """What the fused fits that can answer are, by content: every fit the package ships (a new release's fits, or
    a story fit where stories went to ``geval`` before, change answers for the same config) and the user's own
    fit file named in ``method_options`` (refitted in place, it answers differently under the same name). A
    resumed run keeps only rows asked of the same fits. A missing user file is named by its path: the run itself
    reports it. The overlap rung's measured data (:func:`judgesdk.fused.ladder_label`) is named too: a re-measured
    rung answers differently."""
    names = [*bundled_labels(), ladder_label()]  # the rung below the fits answers for `auto` too (issue 45)
    if fused_model:
        path = Path(str(fused_model)).expanduser()
        names.append(f"file sha256:{file_sha256(path)}" if path.is_file() else f"file {path}")
    return names
