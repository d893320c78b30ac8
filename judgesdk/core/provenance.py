"""What produced a verdict, recorded with it, so a changed score can be traced to a changed judge.

A score moves when the model behind a name is updated at the provider, when a template is edited, when a
method option or a calibration changes, or when the SDK changes how it asks. A results file that only names
``provider`` and ``model`` cannot tell these apart, and a release gate that compares two runs would credit
(or blame) the outputs for what the judge did. So every result carries a :class:`Provenance`:

* **from the responses that produced it** (cached or not: the cache stores the response whole, so a cached
  answer names the model that gave it, not the one configured today): the model id the API reports, the
  system fingerprint, the GGUF file's sha256, the client library and its version (``served``), and the
  templates the requests were rendered from (``templates``, from their tags);
* **from the judge**: provider kind and configured model, the method asked for, a hash of its options and
  estimation settings, the calibration the scorer mapped with, and the SDK version.

The responses are seen by the witness layer (:mod:`judgesdk.provider.layers.witness`), outermost on each
provider stack: it appends every (request, response) of the item being judged to a collector held in a
context variable, which asyncio copies into the tasks a scorer spawns, so parallel calls of one item land in
that item's collector and no other. :func:`changes` names the fields in which two provenances
differ (``judgesdk diff``, the ``provenance`` gate kind).
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Mapping
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


@functools.cache
def sdk_version() -> str:
    """The installed judgesdk's version ("unknown" when run from a tree without package metadata)."""
    try:
        return version("judgesdk")
    except PackageNotFoundError:  # pragma: no cover - a source tree that was never installed
        return "unknown"


class Provenance(BaseModel):
    """What produced one result (module docstring). Fields are plain strings so that two can be compared
    field by field (:func:`changes`) and read back from a results file unchanged."""

    model_config = ConfigDict(frozen=True)

    sdk: str
    provider: str
    model: str
    method: str
    options: str  # short hash of the method options and estimation settings
    served: dict[str, str] = Field(default_factory=dict)  # as the responses said: model, system_fingerprint, model_sha256, runtime
    templates: tuple[str, ...] = ()  # "id@version#hash" of every template the requests were rendered from
    calibration: str | None = None  # the fitted map the scorer applied (e.g. a fused fit file's hash)

    def flat(self) -> dict[str, str]:
        """Every field as ``name -> text`` (``served.<key>`` for each served value), the unit :func:`changes` compares."""
        out = {
            "sdk": self.sdk,
            "provider": self.provider,
            "model": self.model,
            "method": self.method,
            "options": self.options,
            "templates": ", ".join(self.templates),
            "calibration": self.calibration or "",
        }
        out.update({f"served.{key}": value for key, value in self.served.items()})
        return out


Record = dict[str, str]  # a result's provenance as field -> text (Provenance.flat), what is compared


def record_of(own: Provenance | None, parts: Mapping[str, Provenance | None] | None = None) -> Record | None:
    """A result's :data:`Record`: its own provenance (``own``), else (a jury's result, made by several judges) the
    provenance of each of its ``parts`` (part name -> provenance or None), every field under ``<part name>.``; None
    when nothing was recorded (rows written before provenance existed)."""
    if own is not None:
        return own.flat()
    found = {f"{name}.{key}": value for name, part in (parts or {}).items() if part is not None for key, value in part.flat().items()}
    return found or None


def changes(old: Record | None, new: Record | None) -> dict[str, tuple[str, str]]:
    """The fields in which ``new`` differs from ``old``: ``name -> (old, new)`` (missing values are "").
    Either side None (a row written before provenance existed) gives ``{"provenance": ...}``."""
    if old is None or new is None:
        if old is None and new is None:
            return {}
        return {"provenance": ("" if old is None else "recorded", "" if new is None else "recorded")}
    return {k: (old.get(k, ""), new.get(k, "")) for k in sorted(old.keys() | new.keys()) if old.get(k, "") != new.get(k, "")}


def options_hash(method_options: Mapping[str, Any], estimation: Mapping[str, Any]) -> str:
    """A short hash of what configures a method beyond its name (what :attr:`Provenance.options` holds).

    ``method_options``: the method's options; ``estimation``: the estimation settings. Returns the first 12 hex
    digits of the SHA-256 of both as sorted JSON, so equal settings give equal hashes whatever their order."""
    payload = json.dumps({"method_options": dict(method_options), "estimation": dict(estimation)}, sort_keys=True, default=str)
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()[:12]
