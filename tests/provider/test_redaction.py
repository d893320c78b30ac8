"""The one redaction of credentials (issue 41, item 2): :func:`judgesdk.provider.scrub_credentials`, and the answer
check that applies it to everything leaving a provider. The rows that show it end to end (a real server echoing
the key, real SDKs, ``judgesdk serve``) are in tests/catalogue/test_hostile_secrets.py."""

from __future__ import annotations

import asyncio
import json
from urllib.parse import quote

import pytest

from judgesdk.core.errors import AuthError
from judgesdk.provider import GenerateRequest, GenerateResponse, remember_secret, scrub_credentials, scrub_exception, scrub_json
from judgesdk.provider.decisions import DecisionAnswer, DecisionInput, DecisionRequest, Level, ScoreQuestion
from judgesdk.provider.protocol import Capabilities
from judgesdk.provider.stack import StackPlan, assemble

KEY = "sk-redact-test-5c2e9a71b0"


@pytest.fixture(autouse=True)
def known_key():
    remember_secret(KEY)


def test_a_bearer_value_is_removed_whatever_it_is():
    text = "401: invalid header 'Authorization: Bearer abcDEF0123456789._~+/=' sent"
    assert scrub_credentials(text) == "401: invalid header 'Authorization: Bearer ***' sent"


def test_an_x_api_key_value_is_removed_as_a_header_a_json_member_or_a_parameter():
    assert scrub_credentials("x-api-key: zz-unknown-value-42") == "x-api-key: ***"
    assert scrub_credentials('{"x-api-key": "zz-unknown-value-42"}') == '{"x-api-key": "***"}'
    assert scrub_credentials("GET /v1?api_key=zz-unknown-value-42&x=1") == "GET /v1?api_key=***&x=1"


def test_prose_that_names_a_header_stays_readable():
    for text in ("missing or wrong API key: send Authorization: Bearer <key>", "needs OPENAI_API_KEY (or api_key=...) for api.openai.com"):
        assert scrub_credentials(text) == text


def test_a_known_key_inside_json_is_removed():
    body = json.dumps({"error": {"message": "revoked", "key": KEY, "nested": [KEY]}})
    cleaned = scrub_credentials(body)
    assert KEY not in cleaned and json.loads(cleaned) == {"error": {"message": "revoked", "key": "***", "nested": ["***"]}}


def test_a_key_inside_a_url_is_removed_as_written_and_percent_encoded():
    odd = "k/ey+with=chars&more"
    remember_secret(odd)
    text = f"http://judge:{KEY}@proxy/v1 then https://h/v1?key={KEY} and https://h/v1?k={quote(odd, safe='')}"
    cleaned = scrub_credentials(text)
    assert KEY not in cleaned and quote(odd, safe="") not in cleaned and "http://***@proxy/v1" in cleaned


def test_a_repeated_key_is_removed_everywhere():
    assert scrub_credentials(f"{KEY} {KEY}{KEY} ({KEY})") == "*** ****** (***)"


def test_a_key_that_begins_another_never_leaves_the_longer_ones_tail():
    remember_secret("sk-prefix-0000")
    remember_secret("sk-prefix-0000-and-more")
    assert scrub_credentials("a sk-prefix-0000-and-more b sk-prefix-0000 c") == "a *** b *** c"


def test_a_short_key_is_removed_where_it_stands_alone():
    remember_secret("q7z")
    assert scrub_credentials("key q7z revoked; 'q7z'; aq7z and q7zz stay") == "key *** revoked; '***'; aq7z and q7zz stay"


def test_a_key_given_with_the_call_or_in_an_api_key_variable_is_removed(monkeypatch):
    assert scrub_credentials("echo per-call-secret-998877", "per-call-secret-998877") == "echo ***"
    monkeypatch.setenv("SOMEVENDOR_API_KEY", "vendor-env-secret-123456")
    assert scrub_credentials("echo vendor-env-secret-123456") == "echo ***"


def test_url_credentials_are_removed_as_before():
    assert scrub_credentials("see http://user:pw@host/v1") == "see http://***@host/v1"


def test_scrub_json_and_scrub_exception_reach_every_text():
    assert scrub_json({"a": [KEY, 1, None], KEY: {"b": (KEY,)}}) == {"a": ["***", 1, None], "***": {"b": ("***",)}}
    try:
        try:
            raise ValueError(f"inner {KEY}")
        except ValueError as inner:
            raise AuthError(f"outer {KEY}", status=401, provider="p") from inner
    except AuthError as exc:
        caught = exc
    assert scrub_exception(caught) is caught
    assert str(caught) == "outer ***" and caught.status == 401 and str(caught.__cause__) == "inner ***"


# -- the answer check: what leaves a provider ---------------------------------------------------------------------

QUESTION = ScoreQuestion(name="coherence", instructions="Rate it.", levels=tuple(Level(label=str(i)) for i in range(1, 6)))
DECISION = GenerateRequest(messages=(), decision=DecisionRequest(input=DecisionInput(output="o", source="s"), questions=(QUESTION,)))


class Echoing:
    """An adapter whose server echoes the key in everything it says."""

    kind, model, endpoint = "echo", "m", "http://127.0.0.1:9"
    capabilities = Capabilities(decisions=True)

    def __init__(self, fail: bool) -> None:
        self.fail = fail

    async def generate(self, request: GenerateRequest) -> GenerateResponse:
        if self.fail:
            raise AuthError(f"echo: HTTP 401: bad key {KEY}", status=401, provider="echo")
        refused = DecisionAnswer(name="coherence", status="refused", reason=f"no fit (Bearer {KEY})")
        return GenerateResponse(decisions=[refused], notes=[f"note {KEY}"], provenance={"model": f"m-{KEY}"})

    async def aclose(self) -> None:
        return None


def test_the_answer_check_scrubs_errors_notes_reasons_and_provenance():
    bare = StackPlan(retry=None, overload=None, cache=None, coalesce=False)
    with pytest.raises(AuthError) as caught:
        asyncio.run(assemble(Echoing(fail=True), bare).generate(DECISION))
    assert KEY not in str(caught.value) and caught.value.status == 401
    response = asyncio.run(assemble(Echoing(fail=False), bare).generate(DECISION))
    assert KEY not in response.model_dump_json()
    assert response.decisions[0].reason == "no fit (Bearer ***)" and response.notes == ["note ***"]


def test_an_answer_with_nothing_to_scrub_is_passed_on_as_it_is():
    from judgesdk.provider.layers.answers import scrubbed

    response = GenerateResponse(choices=[], notes=["logprobs dropped"], provenance={"model": "m"})
    assert scrubbed(response) is response
