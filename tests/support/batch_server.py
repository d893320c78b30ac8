"""A loopback server speaking the wire format the official SDKs use for batch work, answering from a script.

Binds 127.0.0.1 on a free port and never contacts anything. Endpoints (paths as the SDKs send them):

OpenAI (``base_url = server.openai_base_url`` = ``http://127.0.0.1:<port>/v1``)
    ``POST /v1/files`` (multipart: ``purpose``, ``file``) -> FileObject; ``GET /v1/files/{id}`` ->
    FileObject; ``GET /v1/files/{id}/content`` -> the bytes; ``POST /v1/batches`` -> Batch
    (``validating``); ``GET /v1/batches/{id}`` -> Batch, ``completed`` with ``output_file_id`` /
    ``error_file_id`` after ``polls`` retrievals; ``POST /v1/batches/{id}/cancel``;
    ``POST /v1/chat/completions`` (a live call, answered by the same script).
    Output lines: ``{"id", "custom_id", "response": {"status_code": 200, "request_id", "body":
    <chat.completion>}, "error": null}``; failed requests go to the error file with their status code.
Anthropic (``base_url = server.origin``)
    ``POST /v1/messages/batches`` -> MessageBatch (``in_progress``); ``GET /v1/messages/batches/{id}``
    -> ``ended`` with an absolute ``results_url`` after ``polls`` retrievals;
    ``GET /v1/messages/batches/{id}/results`` -> JSONL ``{"custom_id", "result": {"type":
    "succeeded", "message": <message>}}`` (or ``errored``); ``POST .../cancel``;
    ``POST /v1/messages`` (a live call). Messages report prompt caching the way the API does: the text
    up to a ``cache_control`` block is a cache write the first time it is seen and a read after that.

``reply(body) -> str | dict`` answers one request body (a chat completion request, or Messages params):
a string is the answer text; a dict may give ``text`` and ``top_logprobs`` ({token: logprob} at the
first answer position, chat only), or ``body``: the JSON sent as it is, with status 200, for a live chat
completion (a broken server: an error object, no choices, NaN). ``fail(body) -> str | None`` makes a request fail with that message.
Token counts are whitespace words. ``requests`` records every request (method, path, headers, body).
"""

from __future__ import annotations

import email.parser
import email.policy
import itertools
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any

from support.loopback import LoopbackServer

Reply = Callable[[dict], "str | dict"]
Fail = Callable[[dict], "str | None"]


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    body: Any = None


@dataclass
class _Batch:
    id: str
    kind: str  # "openai" | "anthropic"
    created_at: int
    lines: list[dict]  # OpenAI: input lines; Anthropic: requests
    polls_left: int
    endpoint: str = ""
    input_file_id: str = ""
    metadata: dict | None = None
    cancelled: bool = False
    results: dict[str, str] = field(default_factory=dict)  # file ids (OpenAI) or the JSONL (Anthropic)


def _words(value: Any) -> int:
    if isinstance(value, str):
        return len(value.split())
    if isinstance(value, list):
        return sum(_words(v) for v in value)
    if isinstance(value, dict):
        return _words(value.get("text") or value.get("content") or "")
    return 0


class BatchServer(LoopbackServer):
    """See the module docstring. ``polls``: retrievals before a batch is done (0: done at once)."""

    def __init__(self, reply: Reply, *, fail: Fail | None = None, polls: int = 1) -> None:
        self.reply = reply
        self.fail = fail or (lambda body: None)
        self.polls = polls
        self.requests: list[Seen] = []
        self._files: dict[str, tuple[dict, bytes]] = {}
        self._batches: dict[str, _Batch] = {}
        self._cached_prefixes: set[str] = set()
        self._ids = itertools.count(1)
        self._lock = threading.Lock()

    @property
    def openai_base_url(self) -> str:
        return f"{self.origin}/v1"

    def seen(self, method: str, path: str) -> list[Seen]:
        """Recorded requests to exactly ``path`` (query string ignored)."""
        return [r for r in self.requests if r.method == method and r.path.split("?")[0] == path]

    def _id(self, prefix: str) -> str:
        return f"{prefix}{next(self._ids):06d}"

    # -- answers ---------------------------------------------------------------------------------

    def chat_completion(self, body: dict) -> dict:
        """A ``chat.completion`` for one chat request body (n choices, logprobs when asked)."""
        answer = self.reply(body)
        if isinstance(answer, dict) and "body" in answer:  # sent as it is
            return answer["body"]
        text, top = (answer, None) if isinstance(answer, str) else (answer.get("text", ""), answer.get("top_logprobs"))
        choices = []
        for index in range(int(body.get("n") or 1)):
            logprobs = None
            if body.get("logprobs") and top:
                first = text.split()[0] if text.split() else text
                alternatives = [{"token": t, "logprob": lp, "bytes": None} for t, lp in top.items()]
                logprobs = {"content": [{"token": first, "logprob": top.get(first, -30.0), "bytes": None, "top_logprobs": alternatives}]}
            choices.append({"index": index, "message": {"role": "assistant", "content": text}, "logprobs": logprobs, "finish_reason": "stop"})
        prompt = _words([m.get("content") for m in body.get("messages", [])])
        completion = _words(text) * len(choices)
        return {
            "id": self._id("chatcmpl-"), "object": "chat.completion", "created": int(time.time()), "model": body.get("model", ""),
            "choices": choices, "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion},
        }  # fmt: skip

    def message(self, params: dict) -> dict:
        """A Messages API ``message`` for one set of params, with prompt-cache accounting."""
        answer = self.reply(params)
        text = answer if isinstance(answer, str) else answer.get("text", "")
        written, read, plain = self._cache_accounting(params)
        return {
            "id": self._id("msg_"), "type": "message", "role": "assistant", "model": params.get("model", ""),
            "content": [{"type": "text", "text": text}], "stop_reason": "end_turn", "stop_sequence": None,
            "usage": {"input_tokens": plain, "output_tokens": _words(text),
                      "cache_creation_input_tokens": written, "cache_read_input_tokens": read},
        }  # fmt: skip

    def _cache_accounting(self, params: dict) -> tuple[int, int, int]:
        """(written, read, uncached) prompt words: text up to the last cache_control block is the cached prefix."""
        blocks = [{"type": "text", "text": params["system"]}] if isinstance(params.get("system"), str) else list(params.get("system") or [])
        for message in params.get("messages", []):
            content = message.get("content")
            blocks.extend([{"type": "text", "text": content}] if isinstance(content, str) else content)
        marked = max((i for i, b in enumerate(blocks) if b.get("cache_control")), default=-1)
        prefix = "\x00".join(b.get("text", "") for b in blocks[: marked + 1])
        cached, total = _words([b.get("text", "") for b in blocks[: marked + 1]]), _words([b.get("text", "") for b in blocks])
        if marked < 0:
            return 0, 0, total
        with self._lock:
            seen = prefix in self._cached_prefixes
            self._cached_prefixes.add(prefix)
        return (0, cached, total - cached) if seen else (cached, 0, total - cached)

    # -- OpenAI batches --------------------------------------------------------------------------

    def upload(self, purpose: str, filename: str, data: bytes) -> dict:
        info = {"id": self._id("file-"), "object": "file", "bytes": len(data), "created_at": int(time.time()),
                "filename": filename, "purpose": purpose, "status": "processed"}  # fmt: skip
        self._files[info["id"]] = (info, data)
        return info

    def create_openai_batch(self, body: dict) -> tuple[int, dict]:
        file_id = body.get("input_file_id", "")
        if file_id not in self._files:
            return 404, {"error": {"message": f"No such File object: {file_id}", "type": "invalid_request_error", "param": "input_file_id", "code": None}}
        lines = [json.loads(line) for line in self._files[file_id][1].decode().splitlines() if line.strip()]
        batch = _Batch(self._id("batch_"), "openai", int(time.time()), lines, self.polls, endpoint=body.get("endpoint", ""),
                       input_file_id=file_id, metadata=body.get("metadata"))  # fmt: skip
        self._batches[batch.id] = batch
        return 200, self._openai_view(batch, "validating")

    def retrieve_openai_batch(self, batch_id: str) -> tuple[int, dict]:
        batch = self._batches.get(batch_id)
        if batch is None or batch.kind != "openai":
            return 404, {"error": {"message": f"No batch {batch_id}", "type": "invalid_request_error", "param": None, "code": None}}
        if batch.polls_left > 0 and not batch.cancelled:
            batch.polls_left -= 1
            return 200, self._openai_view(batch, "in_progress")
        if not batch.results:
            self._finish_openai(batch)
        return 200, self._openai_view(batch, "cancelled" if batch.cancelled else "completed")

    def _finish_openai(self, batch: _Batch) -> None:
        done, failed = [], []
        for line in batch.lines:
            body, custom_id = line.get("body", {}), line.get("custom_id")
            message = "cancelled" if batch.cancelled else self.fail(body)
            if message:
                error = {"error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}}
                failed.append({"id": self._id("batch_req_"), "custom_id": custom_id,
                               "response": {"status_code": 400, "request_id": self._id("req_"), "body": error}, "error": None})  # fmt: skip
            else:
                done.append({"id": self._id("batch_req_"), "custom_id": custom_id,
                             "response": {"status_code": 200, "request_id": self._id("req_"), "body": self.chat_completion(body)}, "error": None})  # fmt: skip
        for name, rows in (("output", done), ("error", failed)):
            if rows:
                data = "".join(json.dumps(r) + "\n" for r in rows).encode()
                batch.results[name] = self.upload("batch_output", f"{batch.id}_{name}.jsonl", data)["id"]
        batch.results.setdefault("counts", json.dumps({"total": len(batch.lines), "completed": len(done), "failed": len(failed)}))

    def _openai_view(self, batch: _Batch, status: str) -> dict:
        counts = json.loads(batch.results.get("counts", "null") or "null") or {"total": len(batch.lines), "completed": 0, "failed": 0}
        return {
            "id": batch.id, "object": "batch", "endpoint": batch.endpoint, "errors": None, "input_file_id": batch.input_file_id,
            "completion_window": "24h", "status": status, "output_file_id": batch.results.get("output"),
            "error_file_id": batch.results.get("error"), "created_at": batch.created_at, "in_progress_at": batch.created_at,
            "expires_at": batch.created_at + 86400, "completed_at": int(time.time()) if status == "completed" else None,
            "request_counts": counts, "metadata": batch.metadata,
        }  # fmt: skip

    # -- Anthropic message batches ---------------------------------------------------------------

    def create_anthropic_batch(self, body: dict) -> tuple[int, dict]:
        requests = body.get("requests") or []
        ids = [r.get("custom_id") for r in requests]
        if not requests or len(set(ids)) != len(ids):
            return 400, _anthropic_error("invalid_request_error", "requests must be a non-empty list with unique custom_id values")
        batch = _Batch(self._id("msgbatch_"), "anthropic", int(time.time()), requests, self.polls)
        self._batches[batch.id] = batch
        return 200, self._anthropic_view(batch, "in_progress")

    def retrieve_anthropic_batch(self, batch_id: str) -> tuple[int, dict]:
        batch = self._batches.get(batch_id)
        if batch is None or batch.kind != "anthropic":
            return 404, _anthropic_error("not_found_error", f"batch {batch_id} not found")
        if batch.polls_left > 0 and not batch.cancelled:
            batch.polls_left -= 1
            return 200, self._anthropic_view(batch, "in_progress")
        if "jsonl" not in batch.results:
            batch.results["jsonl"] = "".join(json.dumps(self._anthropic_result(batch, r)) + "\n" for r in batch.lines)
        return 200, self._anthropic_view(batch, "ended")

    def _anthropic_result(self, batch: _Batch, request: dict) -> dict:
        if batch.cancelled:
            return {"custom_id": request["custom_id"], "result": {"type": "canceled"}}
        message = self.fail(request.get("params", {}))
        if message:
            error = _anthropic_error("invalid_request_error", message)
            return {"custom_id": request["custom_id"], "result": {"type": "errored", "error": error}}
        return {"custom_id": request["custom_id"], "result": {"type": "succeeded", "message": self.message(request["params"])}}

    def _anthropic_view(self, batch: _Batch, status: str) -> dict:
        ended = status == "ended"
        results = [json.loads(line)["result"]["type"] for line in batch.results.get("jsonl", "").splitlines()]
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(batch.created_at))
        return {
            "id": batch.id, "type": "message_batch", "processing_status": status,
            "request_counts": {"processing": 0 if ended else len(batch.lines), "succeeded": results.count("succeeded"),
                               "errored": results.count("errored"), "canceled": results.count("canceled"), "expired": 0},
            "ended_at": stamp if ended else None, "created_at": stamp, "expires_at": stamp, "archived_at": None,
            "cancel_initiated_at": stamp if batch.cancelled else None,
            "results_url": f"{self.origin}/v1/messages/batches/{batch.id}/results" if ended else None,
        }  # fmt: skip

    def cancel(self, batch_id: str, kind: str) -> tuple[int, dict]:
        batch = self._batches.get(batch_id)
        if batch is None or batch.kind != kind:
            return 404, {"error": {"message": f"No batch {batch_id}", "type": "not_found_error"}}
        batch.cancelled = True
        if kind == "openai":
            return 200, self._openai_view(batch, "cancelling")
        return 200, self._anthropic_view(batch, "canceling")


def _anthropic_error(kind: str, message: str) -> dict:
    return {"type": "error", "error": {"type": kind, "message": message}}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    app: BatchServer

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _send(self, status: int, payload: dict | bytes, content_type: str = "application/json") -> None:
        data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _record(self, body: Any) -> None:
        with self.app._lock:
            self.app.requests.append(Seen(self.command, self.path, {k.lower(): v for k, v in self.headers.items()}, body))

    def do_GET(self) -> None:
        path = self.path.split("?")[0]
        self._record(None)
        parts = path.strip("/").split("/")
        if parts[:2] == ["v1", "files"] and len(parts) == 4 and parts[3] == "content":
            found = self.app._files.get(parts[2])
            self._send(200, found[1], "application/octet-stream") if found else self._send(404, {"error": {"message": "no such file"}})
        elif parts[:2] == ["v1", "files"] and len(parts) == 3:
            found = self.app._files.get(parts[2])
            self._send(200, found[0]) if found else self._send(404, {"error": {"message": "no such file"}})
        elif parts[:2] == ["v1", "batches"] and len(parts) == 3:
            self._send(*self.app.retrieve_openai_batch(parts[2]))
        elif parts[:3] == ["v1", "messages", "batches"] and len(parts) == 5 and parts[4] == "results":
            batch = self.app._batches.get(parts[3])
            if batch is None or "jsonl" not in batch.results:
                self._send(404, _anthropic_error("not_found_error", "results are not ready"))
            else:
                self._send(200, batch.results["jsonl"].encode(), "application/binary")
        elif parts[:3] == ["v1", "messages", "batches"] and len(parts) == 4:
            self._send(*self.app.retrieve_anthropic_batch(parts[3]))
        else:
            self._send(404, {"error": {"message": f"unknown path {path}"}})

    def do_POST(self) -> None:
        path = self.path.split("?")[0]
        raw = self._body()
        if path == "/v1/files":
            purpose, filename, data = _multipart(self.headers.get("Content-Type", ""), raw)
            self._record({"purpose": purpose, "filename": filename, "bytes": len(data)})
            self._send(200, self.app.upload(purpose, filename, data))
            return
        body = json.loads(raw or b"{}")
        self._record(body)
        parts = path.strip("/").split("/")
        if path == "/v1/batches":
            self._send(*self.app.create_openai_batch(body))
        elif parts[:2] == ["v1", "batches"] and parts[-1] == "cancel":
            self._send(*self.app.cancel(parts[2], "openai"))
        elif path == "/v1/messages/batches":
            self._send(*self.app.create_anthropic_batch(body))
        elif parts[:3] == ["v1", "messages", "batches"] and parts[-1] == "cancel":
            self._send(*self.app.cancel(parts[3], "anthropic"))
        elif path == "/v1/chat/completions":
            self._send(200, self.app.chat_completion(body))
        elif path == "/v1/messages":
            self._send(200, self.app.message(body))
        else:
            self._send(404, {"error": {"message": f"unknown path {path}"}})


def _multipart(content_type: str, raw: bytes) -> tuple[str, str, bytes]:
    """``purpose``, the file's name and its bytes from a multipart/form-data upload."""
    message = email.parser.BytesParser(policy=email.policy.default).parsebytes(f"Content-Type: {content_type}\r\n\r\n".encode() + raw)
    purpose, filename, data = "", "", b""
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True) or b""
        if name == "purpose":
            purpose = payload.decode()
        elif name == "file":
            filename, data = part.get_filename() or "", payload
    return purpose, filename, data


BatchServer.handler = _Handler  # defined below the server class, which names it for LoopbackServer.start
