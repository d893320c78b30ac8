"""A local model file is named by its whole content (issue 29 item 9): in the cache key, in the question a results row
answers (so a resume after replacing the GGUF at the same path judges every item again), and in provenance, whose
sha256 is the file's own, never a stale or a mistyped one."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import pytest
from conftest import need

from judgesdk.core.errors import ConfigError
from judgesdk.core.types import Criterion
from judgesdk.judging.judge_config import ask_for, load_config

need("llama_cpp")

MIB = 1 << 20


def _model(path: Path, fill: int = 0) -> Path:
    path.write_bytes(b"GGUF" + bytes([fill]) * (3 * MIB))  # checked when built, loaded only on first use
    return path


def _rewrite_middle_keeping_size_inode_and_time(path: Path) -> None:
    """The swap the old fingerprint (size, mtime, inode, first and last MiB) could not see."""
    stat = path.stat()
    with path.open("r+b") as fh:
        fh.seek(stat.st_size // 2)
        fh.write(b"\x01")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert path.stat().st_ino == stat.st_ino and path.stat().st_size == stat.st_size


def _sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_identity_and_the_provenance_sha256_are_the_whole_files(tmp_path):
    from judgesdk.providers.llamacpp import LlamaCppProvider

    model = _model(tmp_path / "judge.gguf")
    first = LlamaCppProvider(model)
    build = f";build={first.build}"  # what the llama.cpp build computes with (test_llamacpp_build_features.py)
    assert first.identity == f"sha256:{_sha(model)}{build}" and first.model_sha256 == _sha(model)
    _rewrite_middle_keeping_size_inode_and_time(model)
    second = LlamaCppProvider(model)  # the next run, or a provider built again in this process
    assert second.identity == f"sha256:{_sha(model)}{build}" != first.identity
    assert second.model_sha256 == _sha(model)


def test_a_model_sha256_that_is_not_the_files_is_refused(tmp_path):
    from judgesdk.providers.llamacpp import LlamaCppProvider

    model = _model(tmp_path / "judge.gguf")
    wrong = LlamaCppProvider(model, model_sha256="ab" * 32)
    with pytest.raises(ConfigError, match="model_sha256"):
        _ = wrong.identity
    right = LlamaCppProvider(model, model_sha256=_sha(model).upper())
    assert right.identity == f"sha256:{_sha(model)};build={right.build}"


CRITERION = Criterion(name="fluency", description="Is it fluent?")


@pytest.mark.parametrize("named_by", ["model_path", "model"])
def test_a_gguf_replaced_at_the_same_path_is_another_question(tmp_path, named_by):
    """A results row answers a question that names the model file's content: after the file is replaced (by a
    rename, or rewritten in place with its old size, inode and time) a resume judges every item again."""
    model = _model(tmp_path / "judge.gguf")
    provider = {"kind": "local", "options": {"model_path": str(model)}} if named_by == "model_path" else {"kind": "local", "model": str(model)}
    config = {"method": "geval", "providers": [provider]}
    before = ask_for(load_config(config), CRITERION)
    assert ask_for(load_config(config), CRITERION) == before  # the same file: the same question, a resume skips done items

    replacement = _model(tmp_path / "new.gguf", fill=7)
    os.replace(replacement, model)
    replaced = ask_for(load_config(config), CRITERION)
    assert replaced != before

    _rewrite_middle_keeping_size_inode_and_time(model)
    assert ask_for(load_config(config), CRITERION) not in (before, replaced)


def test_the_embedded_model_and_hosted_models_ask_as_before():
    """No file to read: the question is the one it was before model files entered it (results files keep resuming)."""
    import json

    for data in ({"method": "geval"}, {"method": "geval", "providers": [{"kind": "local"}]}, {"method": "geval", "providers": [{"kind": "openai"}]}):
        config = load_config(data)
        before = {
            "criteria": [CRITERION.model_dump(mode="json")], "method": "geval", "template": config.template, "dataset": config.dataset,
            "method_options": config.method_options, "estimation": config.estimation.model_dump(mode="json"),
            "providers": [
                {"kind": p.kind, "model": p.model, "base_url": p.base_url, "api": p.api, "capabilities": p.capabilities, "options": p.options}
                for p in config.providers
            ],
        }  # fmt: skip
        digest = hashlib.sha256(json.dumps(before, sort_keys=True, default=str).encode()).hexdigest()[:10]
        assert ask_for(config, CRITERION).config == digest


def test_a_missing_model_file_leaves_the_question_to_the_provider_error(tmp_path):
    """ask_for never raises for a file that is not there: building the provider says what is wrong, once."""
    config = {"method": "geval", "providers": [{"kind": "local", "options": {"model_path": str(tmp_path / "missing.gguf")}}]}
    assert ask_for(load_config(config), CRITERION).config
