"""The openai adapter's live chat call sends what ``chat.completions.create`` would, without its cost.

The adapter posts its body with the SDK's documented direct ``post`` and reads the answer as JSON (see
``OpenAIProvider._chat``): ``create`` runs a TypedDict transform over every body, the largest share of a
hosted judgement's CPU, which is the identity on the plain JSON the adapter builds. These tests hold that:
the transform leaves every body shape the adapter makes unchanged, and a loopback server receives the same
path, body and authorization from the adapter as from ``create``, and its status errors stay typed.
"""

from __future__ import annotations

import asyncio
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from conftest import need

from judgesdk.core.errors import AuthError, RateLimitError, TransientError
from judgesdk.provider.protocol import Capabilities, GenerateRequest, Message

openai = need("openai")

from openai._utils import async_maybe_transform  # noqa: E402
from openai.types.chat import completion_create_params  # noqa: E402

from judgesdk.providers.openai import OpenAIProvider  # noqa: E402

ANSWER = {
    "id": "c1", "object": "chat.completion", "created": 0, "model": "served-model", "system_fingerprint": "fp_1",
    "choices": [{
        "index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "4"},
        "logprobs": {"content": [{"token": "4", "logprob": -0.2, "bytes": None, "top_logprobs": [
            {"token": "4", "logprob": -0.2, "bytes": None}, {"token": "5", "logprob": -1.9, "bytes": None},
        ]}]},
    }],
    "usage": {"prompt_tokens": 31, "completion_tokens": 1, "total_tokens": 32},
}  # fmt: skip

REQUESTS = [
    GenerateRequest(messages=(Message(role="user", content="Rate it."),), max_tokens=1, top_logprobs=20, seed=0),
    GenerateRequest(
        messages=(Message(role="system", content="You judge."), Message(role="user", content="Ünïcode ✓ \"quotes\"\n")),
        max_tokens=64, temperature=0.7, top_p=0.9, n=5, stop=("\n\n", "###"),
    ),
    GenerateRequest(  # an answer prefix: folded into the user turn where the API takes no prefill
        messages=(Message(role="user", content="Rate it."), Message(role="assistant", content="Score:")), max_tokens=4, top_logprobs=3
    ),
]


class Recorder(BaseHTTPRequestHandler):
    """Keeps each request's path, authorization and JSON body; answers with ``status`` and its body."""

    seen: list[tuple[str, str, dict[str, Any]]] = []
    status = 200
    body: bytes | None = None  # answered instead of the completion when set

    def do_POST(self) -> None:  # noqa: N802 - the http.server hook's name
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        Recorder.seen.append((self.path, self.headers.get("Authorization", ""), body))
        payload = Recorder.body or json.dumps(ANSWER if Recorder.status == 200 else {"error": {"message": "no", "type": "x"}}).encode()
        self.send_response(Recorder.status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Any:
    Recorder.seen, Recorder.status, Recorder.body = [], 200, None
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/v1"
    httpd.shutdown()
    httpd.server_close()


@pytest.mark.parametrize("request_", REQUESTS)
def test_the_sdk_transform_leaves_every_chat_body_unchanged(request_: GenerateRequest) -> None:
    provider = OpenAIProvider("m", base_url="http://127.0.0.1:9/v1", api_key="k")
    body = provider.chat_body(request_)
    transformed = asyncio.run(async_maybe_transform(body, completion_create_params.CompletionCreateParamsNonStreaming))
    assert transformed == body


@pytest.mark.parametrize("request_", REQUESTS)
def test_a_live_call_sends_what_create_sends(server: str, request_: GenerateRequest) -> None:
    provider = OpenAIProvider("m", base_url=server, api_key="secret", capabilities=Capabilities(logprobs=True, max_top_logprobs=20, multiple_samples=True, seed=True))

    async def both() -> Any:
        try:
            response = await provider.generate(request_)
            await provider.client.chat.completions.create(**provider.chat_body(request_))
            return response
        finally:
            await provider.aclose()

    response = asyncio.run(both())
    (path, auth, sent), (create_path, create_auth, create_sent) = Recorder.seen
    assert (path, auth, sent) == (create_path, create_auth, create_sent)
    assert path == "/v1/chat/completions" and auth == "Bearer secret"
    assert response.choices[0].text == "4"
    assert response.usage.input_tokens == 31 and response.usage.output_tokens == 1
    assert response.provenance["model"] == "served-model" and response.provenance["system_fingerprint"] == "fp_1"
    if request_.top_logprobs:
        top = {alt.token: alt.logprob for alt in response.choices[0].tokens[0].top}  # type: ignore[index]
        assert top == {"4": -0.2, "5": -1.9}
    else:
        assert response.choices[0].tokens is None


def generate_once(server: str) -> None:
    """One request from a fresh adapter, closed afterwards whatever it raised."""
    provider = OpenAIProvider("m", base_url=server, api_key="k")

    async def call() -> None:
        try:
            await provider.generate(REQUESTS[0])
        finally:
            await provider.aclose()

    asyncio.run(call())


@pytest.mark.parametrize(("status", "error"), [(401, AuthError), (429, RateLimitError), (503, TransientError)])
def test_status_errors_stay_typed(server: str, status: int, error: type[Exception]) -> None:
    Recorder.status = status
    with pytest.raises(error):
        generate_once(server)


def test_a_body_that_is_not_json_is_a_transient_error_that_names_it(server: str) -> None:
    Recorder.body = b"<html>gateway says hello</html>"
    with pytest.raises(TransientError, match="not JSON: '<html>gateway says hello</html>'"):
        generate_once(server)
