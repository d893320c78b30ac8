"""Prompt templates as data: TOML files under ``prompts/`` with an id, a version and a content hash.

A template file looks like::

    id = "direct.human_guideline"
    version = "1"
    source = "002 App. D"            # where the wording comes from
    description = "..."
    system = "..."                    # optional
    user = "... {{source}} ... {{output}} ..."
    answer_prefix = "Score:"          # optional; continued by the model (prefill / completion text)

Placeholders are ``{{name}}``. The shared, long part (instructions, criterion, source) comes before
the per-output part so that providers can reuse a cached prefix. Rendering fails with a typed error
when a placeholder has no value. Values are inserted as given, except judged text (``output``,
``source`` ... :data:`judgesdk.prompting.fences.JUDGED`): it cannot close the template's fence or forge its answer
line (:func:`judgesdk.prompting.fences.neutralize`, deterministic, a no-op on ordinary text; the fused judge's
``signals.*`` templates are rendered verbatim).
The content hash of the file enters the cache key, so editing a template never serves stale answers.
"""

from __future__ import annotations

import difflib
import hashlib
import re
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from functools import cache
from importlib import resources
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from judgesdk.core import InputError, MissingItemField
from judgesdk.prompting.fences import JUDGED, Fences, fences_of, neutralize, neutralized_by
from judgesdk.provider import Message

_VERBATIM: ContextVar[bool] = ContextVar("judgesdk_verbatim_values", default=False)


@contextmanager
def verbatim_values() -> Iterator[None]:
    """Inside this block, templates insert judged values verbatim, as judgesdk did before fences: for measuring
    what neutralization changes (``benchmarks/injection_shift.py``), never for judging. The prompts differ, so
    their answers are cached under other keys; the setting follows the context into tasks started inside it."""
    token = _VERBATIM.set(True)
    try:
        yield
    finally:
        _VERBATIM.reset(token)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

TEMPLATE_KEYS = ("id", "version", "user", "system", "answer_prefix", "source", "description")
# What shows a judge the text it judges: one output, or the two outputs of a comparison.
SHOWN_OUTPUTS = (frozenset({"output"}), frozenset({"output_a", "output_b"}))

ITEM_FIELDS = ("source", "reference", "context")  # an item's optional texts: a template may need one the item lacks
_PLACEHOLDER = re.compile(r"\{\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*\}\}")


class Template(BaseModel):
    """One prompt template (module docstring), frozen: its id, version and content hash (what enters the cache key,
    :meth:`tags`), the system, user and answer-prefix texts with their ``{{name}}`` placeholders, and where the
    wording comes from. :meth:`render` fills it into the messages a provider is sent."""

    model_config = ConfigDict(frozen=True)

    id: str
    version: str
    content_hash: str
    system: str | None = None
    user: str
    answer_prefix: str = ""
    source: str = ""
    description: str = ""

    @property
    def variables(self) -> set[str]:
        text = "".join([self.system or "", self.user, self.answer_prefix])
        return set(_PLACEHOLDER.findall(text))

    def shows_the_output(self) -> bool:
        """Whether the prompt shows the judged text (``{{output}}``, or ``{{output_a}}`` and ``{{output_b}}``): a
        judge asked without it still answers, with a score of nothing."""
        return any(shown <= self.variables for shown in SHOWN_OUTPUTS)

    def tags(self) -> tuple[tuple[str, str], ...]:
        """Provenance that enters the cache key."""
        return (("template_id", self.id), ("template_version", self.version), ("template_hash", self.content_hash))

    def render(self, **values: object) -> tuple[Message, ...]:
        missing = sorted(self.variables - {k for k, v in values.items() if v is not None})
        absent = [name for name in missing if name in ITEM_FIELDS]
        if missing and absent == missing:  # the item's fault, not the template's or the caller's
            raise MissingItemField(
                f"it has no {' or '.join(map(repr, absent))}, which template {self.id!r} shows the judge: add "
                f"{'it' if len(absent) == 1 else 'them'} to the item (its input line), or choose a method or template that does without",
                fields=absent,
            )
        if missing:
            raise InputError(f"template {self.id!r} needs values for {missing}; pass them to render()")
        fences = None
        if neutralized_by(self.id) and not _VERBATIM.get():
            answer_line = _fill(self.answer_prefix, {**values, **dict.fromkeys(JUDGED & self.variables, "")})
            fences = fences_of(self.system or "", self.user, self.answer_prefix, answer_line)
        messages = []
        if self.system:
            messages.append(Message(role="system", content=_fill(self.system, values, fences)))
        messages.append(Message(role="user", content=_fill(self.user, values, fences)))
        if self.answer_prefix:
            messages.append(Message(role="assistant", content=_fill(self.answer_prefix, values, fences)))
        return tuple(messages)


def _fill(text: str, values: dict[str, object], fences: Fences | None = None) -> str:
    """``text`` with its placeholders filled; judged values neutralized against ``fences`` (None: verbatim)."""

    def value(m: re.Match[str]) -> str:
        filled = str(values[m.group(1)])
        if fences is None or m.group(1) not in JUDGED:
            return filled
        before = text[: m.start()]
        line_start = before.rstrip(" \t").endswith("\n") or not before.strip(" \t")
        return neutralize(filled, fences, line_start=line_start)

    return _PLACEHOLDER.sub(value, text)


def parse_template(data: bytes, origin: str = "<bytes>") -> Template:
    try:
        raw = tomllib.loads(data.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"template {origin} is not valid UTF-8 TOML: {exc}") from exc
    for key in ("id", "version", "user"):
        if key not in raw:
            raise InputError(f"template {origin} lacks the required key {key!r}")
    for key in raw:  # a typo (answer_prefx, sytem) would be a template silently without that part
        if key not in TEMPLATE_KEYS:
            close = difflib.get_close_matches(key, TEMPLATE_KEYS, n=1)
            hint = f"did you mean {close[0]!r}? " if close else ""
            raise InputError(f"template {origin} has an unknown key {key!r} ({hint}keys: {', '.join(TEMPLATE_KEYS)})")
    fields = {k: str(v) for k, v in raw.items()}
    return Template(content_hash=hashlib.sha256(data).hexdigest()[:16], **fields)


@cache
def _bundled_index() -> dict[str, Path]:
    root = resources.files("judgesdk.prompts")
    index: dict[str, Path] = {}
    for path in _walk(Path(str(root))):
        template = parse_template(path.read_bytes(), str(path))
        if template.id in index:
            raise InputError(f"two bundled templates share the id {template.id!r}: {index[template.id]} and {path}")
        index[template.id] = path
    return index


def _walk(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*.toml") if p.is_file())


def bundled_template_ids() -> list[str]:
    """The ids of the templates bundled with judgesdk (``prompts/``), sorted: what :func:`load_template` takes by
    id. An :class:`InputError` when two bundled files share an id."""
    return sorted(_bundled_index())


def load_template(ref: str | Path) -> Template:
    """Load a bundled template by id (``"direct.human_guideline"``) or any TOML file by path.

    ``ref``: an existing ``.toml`` path, else a bundled id. An :class:`InputError` when it is neither (naming the
    bundled ids) or the file is not a valid template."""
    path = Path(ref)
    if path.suffix == ".toml" and path.exists():
        return parse_template(path.read_bytes(), str(path))
    index = _bundled_index()
    if str(ref) not in index:
        raise InputError(f"no template with id {ref!r}; bundled ids: {', '.join(sorted(index)) or '(none)'}")
    return _bundled_template(str(ref))


@cache
def _bundled_template(template_id: str) -> Template:
    """A bundled template, parsed once: package data does not change while the process runs, templates are
    frozen, and scorers load their default template on every judgement (a TOML parse each time)."""
    path = _bundled_index()[template_id]
    return parse_template(path.read_bytes(), str(path))
