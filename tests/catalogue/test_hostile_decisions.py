"""The hostile catalogue, decision half (issue 41, item 1): a decision server answering what no answer is.

Two classes of rows, each run through a real route (the openai package's ``api = "decisions"``, the systemone
client, LiteLLM's ``adecisions`` and ``asystemone``) against a loopback server that answers exactly as the row
scripts it (tests/support/raw_server.py):

* ``decision answers``: a malformed answer (a sum of probabilities off 1, below as above, a negative or NaN or
  infinite value, a number sent as text, an answer under another question's name or copied to a second question,
  no ``answers`` at all, an error object in a 200, an answer left out) is never a verdict and never cached: the
  item is an ``error``, and a second run on the same cache asks the server again.
* ``redirects``: a 3xx is never followed to another host and its body never an answer.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest
from conftest import need

from judgesdk.core.types import Criterion, Scale
from judgesdk.judging.judge import Judge
from judgesdk.provider.decisions import DecisionAnswer
from judgesdk.provider.protocol import Usage
from judgesdk.providers import decisions_wire, systemone_wire

from support.raw_server import RawRequest, RawServer, Reply

COHERENCE = Criterion(name="coherence", description="Well organised.", scale=Scale.likert(1, 5))
FLUENCY = Criterion(name="fluency", description="Well written.", scale=Scale.likert(1, 5))
P5 = (0.1, 0.2, 0.4, 0.2, 0.1)

ROUTES: dict[str, Callable[[RawServer], dict[str, Any]]] = {
    "openai-decisions": lambda s: {"kind": "openai", "api": "decisions", "model": "m", "base_url": s.base_url},
    "systemone": lambda s: {"kind": "systemone", "model": "jev", "base_url": s.base_url},
    "litellm-decisions": lambda s: {"kind": "litellm", "api": "decisions", "model": "openai/m", "base_url": s.base_url},
    "litellm-systemone": lambda s: {"kind": "litellm", "api": "systemone", "model": "hosted_vllm/jev", "base_url": s.origin},
}


def _good(request: RawRequest) -> dict[str, Any]:
    wire = systemone_wire if request.path.endswith("systemone") else decisions_wire
    _, asked, _ = wire.read_request(request.body, max_questions=100)
    answers = [DecisionAnswer(name=q.name, status="ok", probabilities=P5) for q in asked.questions]
    return wire.response_body(asked, answers, "stub", Usage(input_tokens=5))


# Each row: how it changes a good body, in the System One format (answers keyed by name) and the OpenAI one (a list).
def _level(value: Any) -> tuple[Callable[[dict[str, Any]], Any], Callable[[dict[str, Any]], Any]]:
    """Level 2 of the first question's answer set to ``value`` (the others as in a good answer)."""

    def so(body: dict[str, Any]) -> None:
        body["answers"]["coherence"]["probabilities"]["2"] = value

    def oa(body: dict[str, Any]) -> None:
        body["answers"][0]["probabilities"][2]["probability"] = value

    return so, oa


def _drop_answers(body: dict[str, Any]) -> dict[str, Any]:
    return {"model": "stub"}


def _error_object(body: dict[str, Any]) -> dict[str, Any]:
    return {"error": {"message": "upstream overloaded", "type": "server_error"}}


def _so_renamed(body: dict[str, Any]) -> None:
    body["answers"]["fluency"] = copy.deepcopy(body["answers"]["coherence"])  # one answer copied to a second question
    body["answers"]["fluency"]["probabilities"] = {"0": 0.5, "1": 0.5, "2": 0.0, "3": 0.0, "4": 0.0, "5": 0.0}


def _oa_renamed(body: dict[str, Any]) -> None:
    body["answers"][1] = copy.deepcopy(body["answers"][0])  # the first question's answer, under its name, for the second


def _so_missing(body: dict[str, Any]) -> None:
    del body["answers"]["fluency"]


def _oa_missing(body: dict[str, Any]) -> None:
    del body["answers"][1]


def _predicate_text(body: dict[str, Any]) -> None:  # a score sent as text: "0.7"-style coercion
    answers = body["answers"]
    if isinstance(answers, dict):
        answers["coherence"]["probabilities"] = {k: str(v) for k, v in answers["coherence"]["probabilities"].items()}
    else:
        for item in answers[0]["probabilities"]:
            item["probability"] = str(item["probability"])


MALFORMED: dict[str, tuple[Callable[[dict[str, Any]], Any], Callable[[dict[str, Any]], Any]]] = {
    "sum-below-one": _level(0.1),  # 0.1 + 0.2 + 0.1 + 0.2 + 0.1 = 0.7
    "sum-above-one": _level(0.9),
    "negative": _level(-0.2),
    "nan": _level(float("nan")),
    "infinity": _level(float("inf")),
    "number-as-text": _level("0.4"),
    "all-as-text": (_predicate_text, _predicate_text),
    "another-questions-answer": (_so_renamed, _oa_renamed),
    "no-answers": (_drop_answers, _drop_answers),
    "error-object-in-a-200": (_error_object, _error_object),
    "answer-left-out": (_so_missing, _oa_missing),
}


def _route_or_skip(route: str) -> None:
    need("openai")
    if route.startswith("litellm"):
        need("litellm")


def _body(request: RawRequest, row: str) -> bytes:
    body = _good(request)
    so, oa = MALFORMED[row]
    changed = (so if request.path.endswith("systemone") else oa)(body)
    return json.dumps(body if changed is None else changed).encode()  # NaN and Infinity as Python writes them


def _judge(server: RawServer, route: str, cache: Any) -> Any:
    config = {
        "providers": [{**ROUTES[route](server), "timeout_s": 10}],
        "cache": {"enabled": True, "directory": str(cache)},
        "retry": {"max_attempts": 2, "initial_wait_s": 0},
        "method": "decision",
    }
    with Judge.from_config(config) as judge:
        return judge.score("The park opens in May.", source="A park will open in May.", criterion=[COHERENCE, FLUENCY])


@pytest.mark.parametrize("row", list(MALFORMED))
@pytest.mark.parametrize("route", list(ROUTES))
def test_decision_answers_a_malformed_answer_is_never_a_verdict_nor_cached(route, row, tmp_path):
    """Class: decision answers."""
    _route_or_skip(route)
    with RawServer(lambda request: Reply(200, body=_body(request, row))) as server:
        first = _judge(server, route, tmp_path / "cache")
        asked = len(server.requests)
        assert asked >= 2, asked  # retried as the chat path retries a malformed answer
        assert first.status == "error" and first.score is None, (first.status, first.error)
        second = _judge(server, route, tmp_path / "cache")
        assert len(server.requests) > asked, "the malformed answer was cached"  # nothing cached: asked again
        assert not second.cached


@pytest.mark.parametrize("route", list(ROUTES))
def test_decision_answers_a_good_answer_is_cached(route, tmp_path):
    """Class: decision answers (the control: a valid answer is a verdict, served from the cache the second time)."""
    _route_or_skip(route)
    with RawServer(lambda request: Reply(200, json_body=_good(request))) as server:
        first = _judge(server, route, tmp_path / "cache")
        assert first.status == "ok" and {part.status for part in first.parts.values()} == {"ok"}, (first.status, first.error)
        asked = len(server.requests)
        second = _judge(server, route, tmp_path / "cache")
        assert len(server.requests) == asked and second.cached


@pytest.mark.parametrize("status", [302, 307])
@pytest.mark.parametrize("route", ["openai-decisions", "systemone"])
def test_redirects_to_another_host_are_not_followed_nor_their_body_an_answer(route, status, tmp_path):
    """Class: redirects. The redirect's own body is a valid answer, and so is the other host's."""
    _route_or_skip(route)
    with RawServer(lambda request: Reply(200, json_body=_good(request))) as other:
        target = other.origin.replace("127.0.0.1", "localhost")

        def redirect(request: RawRequest) -> Reply:
            return Reply(status, json_body=_good(request), headers={"location": f"{target}{request.path}"})

        with RawServer(redirect) as server:
            first = _judge(server, route, tmp_path / "cache")
            assert other.requests == [], [r.path for r in other.requests]  # never sent to the other host
            assert first.status == "error" and "redirect" in (first.error or ""), (first.status, first.error)
            asked = len(server.requests)
            _judge(server, route, tmp_path / "cache")
            assert len(server.requests) > asked  # nothing of it cached
