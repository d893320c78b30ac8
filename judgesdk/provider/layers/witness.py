"""The witness layer: outermost on a judge's provider stack, it sees every answer the stack gives.

A result's provenance names what answered it (:class:`judgesdk.core.provenance.Provenance`): the model id
the API reports, the system fingerprint, the GGUF file's sha256, the client library, and the templates the
requests came from. Those facts are in the responses, cached or not, so the judge collects the calls made
while an item is judged (:func:`collecting`, a context variable, so concurrent items never see each
other's calls) and :func:`served_by` condenses them.

Being the judge's boundary with the stack, it also keeps two things from crossing it:

* an exception that is no ``Exception`` (``SystemExit``, ``GeneratorExit``, a stray ``CancelledError`` or
  ``KeyboardInterrupt``: :func:`judgesdk.core.errors.stray`) raised by a provider becomes a
  :class:`~judgesdk.core.errors.ProviderError`, so it fails that call's item like any provider failure instead of
  ending the judge's event loop (a hang) or the process (a traceback);
* a server that answers as another model than the one asked for (``model = "m"``, answered by ``llama-3-8b``)
  is warned about once per pair, on the ``judgesdk.provider`` logger: the name it gave is recorded in each
  row's ``provenance.served`` either way. A dated snapshot of the name asked for (``gpt-4o-mini`` answered by
  ``gpt-4o-mini-2024-07-18``) or a route's bare name (``openai/gpt-4o`` by ``gpt-4o``) is no other model.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections.abc import Iterator

from judgesdk.core import ProviderError, stray, stray_message
from judgesdk.provider.protocol import GenerateRequest, GenerateResponse, Provider, WrapperProvider

log = logging.getLogger("judgesdk.provider")

__all__ = ["Witness", "collecting", "same_model", "served_by"]

_CALLS: contextvars.ContextVar[list[tuple[GenerateRequest, GenerateResponse]] | None] = contextvars.ContextVar("judgesdk_calls", default=None)


class Witness(WrapperProvider):
    """Outermost on a judge's provider stack: records each call of the item being judged (module docstring)."""

    def __init__(self, inner: Provider) -> None:
        super().__init__(inner)
        self._warned: set[tuple[str, str]] = set()

    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        try:
            response = await self.inner.generate(request)
        except BaseException as exc:
            if isinstance(exc, Exception) or not stray(exc):
                raise
            raise ProviderError(f"{self.kind}: {stray_message(exc)}", provider=self.kind) from exc
        self._check_served(response)
        calls = _CALLS.get()
        if calls is not None:
            calls.append((request, response))
        return response

    def _check_served(self, response: GenerateResponse) -> None:
        """Warn once per (asked, served) pair when the server answered as another model (module docstring)."""
        served, asked = response.provenance.get("model"), response.model
        if not served or not asked or (asked, served) in self._warned or same_model(asked, served):
            return
        self._warned.add((asked, served))
        log.warning(
            "judgesdk: %s was asked for model %r and answered as %r; each row records the name it gave (provenance.served)",
            self.kind, asked, served,
        )  # fmt: skip


def same_model(asked: str, served: str) -> bool:
    """Whether ``served`` (what a server says answered) names the model ``asked`` for: the same name, a dated
    snapshot of it, or a route's bare name (case ignored); each of several names joined by " | "."""
    a = asked.lower()
    for name in (part.strip().lower() for part in served.split("|")):
        bare = a.rsplit("/", 1)[-1]
        if not (name == a or name.startswith(a) or name.startswith(bare) or a.endswith("/" + name)):
            return False
    return True


@contextlib.contextmanager
def collecting() -> Iterator[list[tuple[GenerateRequest, GenerateResponse]]]:
    """A fresh collector for the calls made inside the block (by this task and the tasks it starts)."""
    calls: list[tuple[GenerateRequest, GenerateResponse]] = []
    token = _CALLS.set(calls)
    try:
        yield calls
    finally:
        _CALLS.reset(token)


def served_by(calls: list[tuple[GenerateRequest, GenerateResponse]]) -> tuple[dict[str, str], tuple[str, ...]]:
    """What the responses said about who answered (values that differ between calls joined by " | ") and
    the templates the requests came from."""
    served: dict[str, set[str]] = {}
    templates: set[str] = set()
    for request, response in calls:
        for key, value in response.provenance.items():
            if value:
                served.setdefault(key, set()).add(value)
        tags = dict(request.tags)
        if "template_id" in tags:
            templates.add(f"{tags['template_id']}@{tags.get('template_version', '')}#{tags.get('template_hash', '')}")
    return {k: " | ".join(sorted(v)) for k, v in sorted(served.items())}, tuple(sorted(templates))
