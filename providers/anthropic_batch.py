"""Anthropic's Message Batches API as a :class:`judgesdk.provider.layers.batch.BatchBackend` for an :class:`AnthropicProvider`.

Wire flow (the official SDK's calls): ``messages.batches.create(requests=[{"custom_id", "params"}])``,
poll ``messages.batches.retrieve`` until ``processing_status == "ended"``, then stream
``messages.batches.results`` (JSONL at the batch's ``results_url``). ``params`` are exactly what the live
adapter passes to ``messages.create`` (prompt-cache marks included), so an answer is turned into the same
:class:`GenerateResponse`. The Messages API returns one sample per call: a request with ``n > 1`` becomes
``n`` batch entries, ``<key prefix>_<sample>``, gathered back into one response.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import AsyncIterator, Sequence
from typing import Any

from judgesdk.core import InputError
from judgesdk.provider import BatchResult, BatchStatus, GenerateRequest

from ._sdk import classify
from .anthropic import AnthropicProvider, anthropic

_PREFIX = 58  # custom_id is at most 64 characters of [A-Za-z0-9_-]: 58 of the key, "_", 5 digits


def sample_id(key: str, index: int, n: int) -> str:
    """The batch entry id of sample ``index`` of the request with cache key ``key``."""
    return key if n == 1 else f"{key[:_PREFIX]}_{index:05d}"


class AnthropicBatchBackend:
    """Submit, poll and read Message Batches for one :class:`AnthropicProvider`."""

    max_requests = 100_000  # the API's limit per batch (also 256 MB)

    def __init__(self, provider: AnthropicProvider) -> None:
        if not isinstance(provider, AnthropicProvider):
            raise InputError("the Anthropic batch backend needs an AnthropicProvider")
        self.provider = provider
        self._client = provider.client

    def params(self, request: GenerateRequest) -> dict[str, Any]:
        """The live adapter's ``messages.create`` arguments, with its ``extra_body`` merged in (a batch has no kwargs)."""
        params = self.provider.message_params(request)
        extra = params.pop("extra_body", {})
        return {**params, **extra}

    async def submit(self, items: Sequence[tuple[str, GenerateRequest]]) -> str:
        entries = [
            {"custom_id": sample_id(key, i, request.n), "params": self.params(request)}
            for key, request in items
            for i in range(request.n)
        ]
        try:
            batch = await self._client.messages.batches.create(requests=entries)
        except anthropic.APIError as exc:
            raise classify(exc, self.provider.kind) from exc
        return batch.id

    async def status(self, batch_id: str) -> BatchStatus:
        try:
            batch = await self._client.messages.batches.retrieve(batch_id)
        except anthropic.APIError as exc:
            raise classify(exc, self.provider.kind) from exc
        return "ended" if batch.processing_status == "ended" else "pending"

    async def results(self, batch_id: str, requests: dict[str, GenerateRequest]) -> AsyncIterator[BatchResult]:
        owner = {sample_id(key, i, r.n): key for key, r in requests.items() for i in range(r.n)}
        messages: dict[str, list[Any]] = defaultdict(list)
        errors: dict[str, str] = {}
        try:
            async for line in await self._client.messages.batches.results(batch_id):
                key = owner.get(line.custom_id)
                if key is None:
                    yield BatchResult(custom_id=line.custom_id)  # not this run's: the runner counts it
                elif line.result.type == "succeeded":
                    messages[key].append(line.result.message)
                else:
                    errors[key] = _why(line.result)
        except anthropic.APIError as exc:
            raise classify(exc, self.provider.kind) from exc
        for key, request in requests.items():
            if key in errors or len(messages[key]) < request.n:
                yield BatchResult(custom_id=key, error=errors.get(key, f"no result in batch {batch_id}"))
                continue
            response = self.provider.response_from(messages[key], request)
            response.notes.append(f"answered by the Anthropic Message Batches API ({batch_id})")
            yield BatchResult(custom_id=key, response=response)

    async def cancel(self, batch_id: str) -> None:
        try:
            await self._client.messages.batches.cancel(batch_id)
        except anthropic.APIError as exc:
            raise classify(exc, self.provider.kind) from exc


def _why(result: Any) -> str:
    """A readable reason for an entry that did not succeed (errored, canceled, expired)."""
    error = getattr(result, "error", None)
    inner = getattr(error, "error", None)
    message = getattr(inner, "message", None) or getattr(error, "message", None)
    return f"{result.type}: {message}" if message else str(result.type)
