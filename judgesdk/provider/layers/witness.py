"""The witness layer: outermost on a judge's provider stack, it sees every answer the stack gives.

A result's provenance names what answered it (:class:`judgesdk.core.provenance.Provenance`): the model id
the API reports, the system fingerprint, the GGUF file's sha256, the client library, and the templates the
requests came from. Those facts are in the responses, cached or not, so the judge collects the calls made
while an item is judged (:func:`collecting`, a context variable, so concurrent items never see each
other's calls) and :func:`served_by` condenses them.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

from judgesdk.provider.protocol import GenerateRequest, GenerateResponse, WrapperProvider

__all__ = ["Witness", "collecting", "served_by"]

_CALLS: contextvars.ContextVar[list[tuple[GenerateRequest, GenerateResponse]] | None] = contextvars.ContextVar("judgesdk_calls", default=None)


class Witness(WrapperProvider):
    """Outermost on a judge's provider stack: records each call of the item being judged (module docstring)."""

    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        response = await self.inner.generate(request)
        calls = _CALLS.get()
        if calls is not None:
            calls.append((request, response))
        return response


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
