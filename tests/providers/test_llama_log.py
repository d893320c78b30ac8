"""llama.cpp's log goes through Python logging (issue 12, item 13): a local run prints none of it by default,
``judgesdk -v`` shows it, and its levels are kept (info chatter at DEBUG, errors as errors)."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from judgesdk.provider.protocol import GenerateRequest, Message

SWA = "llama_kv_cache_iswa: using full-size SWA cache"
LABELS = GenerateRequest(messages=(Message(role="user", content="Is the sky blue? Answer:"),), labels=(" yes", " no"), max_tokens=0)


def score_with_the_local_model(tmp_path: Path, gguf_path: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    """``judgesdk score`` in a fresh process (llama.cpp's log hook is per process), judging one item with
    the real model and no cache, so the model is loaded."""
    config = tmp_path / "local.toml"
    config.write_text(f'[[providers]]\nkind = "local"\n[providers.options]\nmodel_path = "{gguf_path}"\nn_ctx = 512\n\n[cache]\nenabled = false\n')
    items = tmp_path / "items.jsonl"
    items.write_text(json.dumps({"id": "a", "output": "The cat sat on the mat.", "source": "A cat sat on a mat."}) + "\n")
    command = [sys.executable, "-m", "judgesdk.cli.app", *flags, "score", str(items), "--config", str(config), "--method", "direct", "--quiet"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("JUDGESDK_")}
    return subprocess.run(command, capture_output=True, text=True, timeout=300, env=env)


@pytest.mark.integration
@pytest.mark.slow
def test_a_local_run_prints_none_of_llama_cpps_log_and_minus_v_shows_it(tmp_path, gguf_path):
    quiet = score_with_the_local_model(tmp_path, gguf_path)
    row = json.loads(quiet.stdout)
    assert quiet.returncode == 0 and row["provider"] == "local" and row["status"] == "ok"  # the model did load and answer
    assert SWA not in quiet.stderr and "llama_" not in quiet.stderr, quiet.stderr[-2000:]
    verbose = score_with_the_local_model(tmp_path, gguf_path, "-v")
    assert verbose.returncode == 0 and json.loads(verbose.stdout)["status"] == "ok"
    assert SWA in verbose.stderr
    # what llama.cpp says while llama-cpp-python has pointed stderr at /dev/null (loading the model) shows too
    assert "llama_model_loader:" in verbose.stderr
    assert "Traceback" not in verbose.stderr


@pytest.mark.integration
async def test_llama_cpp_log_records_keep_their_levels(gguf_path, tmp_path, caplog):
    from judgesdk.providers.llamacpp import LlamaCppProvider

    caplog.set_level(logging.DEBUG, logger="judgesdk.llamacpp")
    provider = LlamaCppProvider(gguf_path, n_ctx=256, parallel_suffixes=1)
    try:
        await provider.generate(LABELS)
    finally:
        await provider.aclose()
    records = [r for r in caplog.records if r.name == "judgesdk.llamacpp"]
    swa = [r for r in records if r.getMessage().startswith(SWA)]
    assert swa and all(r.levelno == logging.DEBUG for r in swa)  # a setting chosen on purpose, not a problem
    assert sum(r.levelno == logging.DEBUG for r in records) > 20  # the context's info chatter, one record a line
    assert all("\n" not in r.getMessage() for r in records)

    caplog.clear()
    truncated = tmp_path / "truncated.gguf"
    with open(gguf_path, "rb") as whole:
        truncated.write_bytes(whole.read(3_000_000))  # the header's start: llama.cpp gives up reading it
    broken = LlamaCppProvider(truncated, n_ctx=256, parallel_suffixes=1)
    try:
        with pytest.raises(Exception):
            await broken.generate(LABELS)
    finally:
        await broken.aclose()
    errors = [r for r in caplog.records if r.name == "judgesdk.llamacpp" and r.levelno == logging.ERROR]
    assert any("error loading model" in r.getMessage() for r in errors), [r.getMessage() for r in caplog.records]
