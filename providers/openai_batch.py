"""OpenAI's Batch API as a :class:`judgesdk.provider.layers.batch.BatchBackend` for an :class:`OpenAIProvider` (``api="chat"``).

Wire flow (the official SDK's calls): upload a JSONL of ``{"custom_id", "method": "POST", "url":
"/v1/chat/completions", "body"}`` lines with ``files.create(purpose="batch")``, ``batches.create(
input_file_id, endpoint, completion_window="24h")``, poll ``batches.retrieve`` until a terminal status,
then read ``files.content`` of ``output_file_id`` (answers) and ``error_file_id`` (failures). Bodies are
the ones the live adapter sends, so a batch answer is the answer the live call would have given, and it
is turned into the same :class:`GenerateResponse`.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

from judgesdk.core import CapabilityError, InputError, MalformedAnswerError
from judgesdk.provider import BatchResult, BatchStatus, GenerateRequest, GenerateResponse

from ._sdk import classify
from .openai import OpenAIProvider, openai

ENDPOINT = "/v1/chat/completions"
TERMINAL = {"completed", "failed", "expired", "cancelled"}


class OpenAIBatchBackend:
    """Submit, poll and read OpenAI batches for one :class:`OpenAIProvider`."""

    max_requests = 50_000  # the Batch API's limit per batch

    def __init__(self, provider: OpenAIProvider, *, completion_window: str = "24h") -> None:
        if not isinstance(provider, OpenAIProvider) or provider.api != "chat":
            raise InputError("the OpenAI batch backend needs an OpenAIProvider with api='chat'")
        self.provider = provider
        self.completion_window = completion_window
        self._client = provider.client

    def body(self, request: GenerateRequest) -> dict[str, Any]:
        """The ``/v1/chat/completions`` body the live adapter would send for ``request`` (its :meth:`chat_body`)."""
        if request.labels is not None or request.continuation is not None:
            raise CapabilityError("batch mode sends chat completions: no exact labels or log-likelihoods", provider=self.provider.kind)
        return self.provider.chat_body(request)

    async def submit(self, items: Sequence[tuple[str, GenerateRequest]]) -> str:
        lines = [json.dumps({"custom_id": cid, "method": "POST", "url": ENDPOINT, "body": self.body(r)}) for cid, r in items]
        try:
            upload = await self._client.files.create(file=("judgesdk-batch.jsonl", "\n".join(lines).encode()), purpose="batch")
            batch = await self._client.batches.create(
                input_file_id=upload.id, endpoint=ENDPOINT, completion_window=self.completion_window,
                metadata={"created_by": "judgesdk"},
            )  # fmt: skip
        except openai.APIError as exc:
            raise classify(exc, self.provider.kind) from exc
        return batch.id

    async def status(self, batch_id: str) -> BatchStatus:
        try:
            batch = await self._client.batches.retrieve(batch_id)
        except openai.APIError as exc:
            raise classify(exc, self.provider.kind) from exc
        return "ended" if batch.status in TERMINAL else "pending"

    async def results(self, batch_id: str, requests: dict[str, GenerateRequest]) -> AsyncIterator[BatchResult]:
        try:
            batch = await self._client.batches.retrieve(batch_id)
            files = [f for f in (batch.output_file_id, batch.error_file_id) if f]
            texts = [(await self._client.files.content(f)).text for f in files]
        except openai.APIError as exc:
            raise classify(exc, self.provider.kind) from exc
        seen: set[str] = set()
        for text in texts:
            for line in text.splitlines():
                if line.strip():
                    result = self._result(json.loads(line), requests, batch_id)
                    seen.add(result.custom_id)
                    yield result
        for custom_id in requests.keys() - seen:  # expired or cancelled before it ran: no line at all
            yield BatchResult(custom_id=custom_id, error=f"no result in batch {batch_id} (status {batch.status})")

    def _result(self, line: dict[str, Any], requests: dict[str, GenerateRequest], batch_id: str) -> BatchResult:
        custom_id = line.get("custom_id", "")
        response = line.get("response") or {}
        if line.get("error") or response.get("status_code") != 200:
            detail = line.get("error") or (response.get("body") or {}).get("error") or response
            return BatchResult(custom_id=custom_id, error=f"HTTP {response.get('status_code')}: {detail}")
        request = requests.get(custom_id)
        if request is None:
            return BatchResult(custom_id=custom_id)
        try:
            return BatchResult(custom_id=custom_id, response=self.response(response["body"], request, batch_id))
        except MalformedAnswerError as exc:  # an error body sent with 200: this request failed, the batch goes on
            return BatchResult(custom_id=custom_id, error=str(exc))

    def response(self, body: dict[str, Any], request: GenerateRequest, batch_id: str) -> GenerateResponse:
        """The :class:`GenerateResponse` the live adapter builds from the same chat completion (its :meth:`chat_response`)."""
        response = self.provider.chat_response(body, request)
        response.notes.append(f"answered by the OpenAI Batch API ({batch_id})")
        if len(response.choices) < request.n:
            response.notes.append(f"backend returned {len(response.choices)} of n={request.n} choices")
        return response

    async def cancel(self, batch_id: str) -> None:
        try:
            await self._client.batches.cancel(batch_id)
        except openai.APIError as exc:
            raise classify(exc, self.provider.kind) from exc
