"""Criteria presets: the human-rated criteria of the meta-evaluation benchmarks, with the papers' definitions.

>>> from judgesdk import presets
>>> presets.datasets()
['agents', 'hanna', 'newsroom', 'summeval', 'topicalchat']
>>> presets.criterion("summeval", "coherence").scale.labels
('1', '2', '3', '4', '5')

The data lives in ``judgesdk/prompting/presets_data/<dataset>.toml``, one file per benchmark::

    dataset = "summeval"
    title = "..."
    source = "..."                 # where the definitions come from

    [[criteria]]
    name = "coherence"
    low = 1                        # integer Likert scale low..high
    high = 5
    description = "..."            # the definition shown to the judge
    source = "001 App. A"

These files are not prompt templates, so they sit outside ``prompts/`` (which the template loader scans).
Names are matched case-insensitively, ignoring spaces, ``-`` and ``_`` ("Topical-Chat" -> "topicalchat").
"""

from __future__ import annotations

import difflib
import re
import sys
from functools import cache
from importlib import resources

from judgesdk.core import ConfigError, Criterion, InputError, Scale

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

__all__ = ["criteria_for", "criterion", "datasets"]

_DATA_DIR = "presets_data"


def datasets() -> list[str]:
    """Names of the datasets that have a criteria preset."""
    return sorted(_presets())


def criteria_for(dataset: str) -> list[Criterion]:
    """All criteria of ``dataset``, in the order of its preset file."""
    return list(_presets()[_dataset_key(dataset)])


def criterion(dataset: str, name: str) -> Criterion:
    """One criterion of ``dataset`` by name, e.g. ``criterion("topicalchat", "groundedness")``."""
    key = _dataset_key(dataset)
    found = {_norm(c.name): c for c in _presets()[key]}
    if _norm(name) in found:
        return found[_norm(name)]
    raise InputError(f"unknown criterion {name!r} for dataset {key!r}{_hint(name, [c.name for c in _presets()[key]])}")


def _dataset_key(dataset: str) -> str:
    presets = _presets()
    if _norm(dataset) in presets:
        return _norm(dataset)
    raise InputError(f"unknown dataset {dataset!r} for criteria presets{_hint(dataset, sorted(presets))}")


def _norm(name: str) -> str:
    return re.sub(r"[\s_-]+", "", str(name).lower())


def _hint(given: str, known: list[str]) -> str:
    close = difflib.get_close_matches(_norm(given), [_norm(k) for k in known], n=1)
    guess = f" (did you mean {next(k for k in known if _norm(k) == close[0])!r}?)" if close else ""
    return f"{guess}; known: {', '.join(known)}"


@cache
def _presets() -> dict[str, tuple[Criterion, ...]]:
    root = resources.files("judgesdk.prompting").joinpath(_DATA_DIR)
    presets: dict[str, tuple[Criterion, ...]] = {}
    for entry in sorted(root.iterdir(), key=lambda e: e.name):
        if entry.name.endswith(".toml"):
            key, criteria = _parse(entry.read_bytes(), entry.name)
            presets[key] = criteria
    if not presets:
        raise ConfigError(f"no criteria presets found in judgesdk/{_DATA_DIR}/; the package data is missing")
    return presets


def _parse(data: bytes, origin: str) -> tuple[str, tuple[Criterion, ...]]:
    try:
        raw = tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"criteria preset {origin} is not valid UTF-8 TOML: {exc}") from exc
    key = _norm(raw.get("dataset", ""))
    if not key or f"{key}.toml" != origin:
        raise ConfigError(f"criteria preset {origin} must set dataset = {origin.removesuffix('.toml')!r}")
    criteria: list[Criterion] = []
    for i, item in enumerate(raw.get("criteria", [])):
        missing = [k for k in ("name", "description", "low", "high") if k not in item]
        if missing:
            raise ConfigError(f"criteria preset {origin}, criterion #{i + 1} lacks {missing}")
        if not all(isinstance(item[k], int) for k in ("low", "high")):
            raise ConfigError(f"criteria preset {origin}, {item['name']!r}: low and high must be integers")
        criteria.append(
            Criterion(name=item["name"], description=item["description"], scale=Scale.likert(item["low"], item["high"]))
        )
    names = [_norm(c.name) for c in criteria]
    if not criteria or len(set(names)) != len(names):
        raise ConfigError(f"criteria preset {origin} needs at least one criterion and unique names")
    return key, tuple(criteria)
