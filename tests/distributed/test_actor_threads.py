"""Each Ray actor's local model gets its share of the node's CPUs (issue 30, item 7), not every CPU."""

from __future__ import annotations

import pytest

from judgesdk.distributed.engine import threads_per_actor
from judgesdk.judging.judge_config import load_config


def _config(options: dict) -> dict:
    return {"providers": [{"kind": "llamacpp", "options": options}, {"kind": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1"}]}


@pytest.mark.parametrize("num_cpus, threads", [(1.0, 1), (2.0, 2), (0.5, 1), (4.0, 4)])
def test_a_local_provider_without_n_threads_gets_the_actors_cpus(num_cpus, threads):
    config = threads_per_actor(load_config(_config({"model_path": "m.gguf"})), num_cpus)
    assert config.providers[0].options == {"model_path": "m.gguf", "n_threads": threads}
    assert config.providers[1].options == {}  # a hosted provider has no threads to set


def test_an_explicit_n_threads_is_kept():
    config = threads_per_actor(load_config(_config({"model_path": "m.gguf", "n_threads": 6})), 2.0)
    assert config.providers[0].options["n_threads"] == 6


def test_the_threads_given_to_an_actor_leave_the_question_asked_unchanged():
    """The driver asks with the config as given, each actor with its n_threads added: an actor compares the two and
    refuses to judge when they differ, so an answer-neutral option must not change the question."""
    from judgesdk.core.types import Criterion
    from judgesdk.judging.judge_config import ask_for

    criterion = Criterion(name="coherence", description="d")
    given = load_config(_config({"model_path": "m.gguf"}))
    assert ask_for(threads_per_actor(given, 2.0), criterion) == ask_for(given, criterion)
    moved = load_config(_config({"model_path": "m.gguf", "n_ctx": 2048}))  # keyed: it may change an answer
    assert ask_for(moved, criterion) != ask_for(given, criterion)
