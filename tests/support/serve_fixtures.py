"""Fixtures of the serve integration tests (imported by them; a conftest.py under tests/ would shadow the top one's name `conftest`): one ``judgesdk serve`` over the embedded local judge for the whole session (its
model loads once), recording what it serves, and the judge it must agree with."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import need

from support.serve_process import JudgesdkServe

EMBEDDED = {"providers": [{"kind": "local"}], "method": "auto", "method_options": {"fused_levels": True}, "cache": {"enabled": False}}


@pytest.fixture(scope="session")
def embedded_serve(gguf_path: Path, tmp_path_factory: pytest.TempPathFactory):
    """``judgesdk serve --record served.jsonl`` over the embedded judge; ``.record`` is the results file."""
    need("starlette")
    need("uvicorn")
    tmp = tmp_path_factory.mktemp("serve-embedded")
    serve = JudgesdkServe("--record", str(tmp / "served.jsonl"), "--concurrency", "2")
    serve.record = tmp / "served.jsonl"  # type: ignore[attr-defined]
    try:
        serve.start()
        yield serve
    finally:
        serve.cleanup()


@pytest.fixture(scope="session")
def same_judge(gguf_path: Path):
    """A judge built from the config the server builds its own from (the embedded model, auto, level
    distributions), in this process: what ``judge.score()`` says of an item."""
    from judgesdk.judging.judge import Judge

    judge = Judge.from_config(EMBEDDED)
    yield judge
    judge.close()
