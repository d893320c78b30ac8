"""What the llama.cpp build computes with is in every local answer's cache key and provenance (issue 40, item 6): the
README example's fused scores moved by up to 0.07 between a llama-cpp-python built for AVX-512 and one built for AVX2
only, so a cache filled by one build (a Ray node's, merged with another's) must not answer the other, and a row must
say which build answered it. The other build is emulated by making ``compat.system_info`` (llama.cpp's
``llama_print_system_info()``) report AVX-512 too."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from conftest import need

need("llama_cpp")

from judgesdk.providers.llamacpp import compat  # noqa: E402
from judgesdk.providers.llamacpp.build import UNKNOWN, build_features, sections  # noqa: E402

AVX2 = "CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX2 = 1 | F16C = 1 | FMA = 1 | BMI2 = 1 | LLAMAFILE = 1 | OPENMP = 1 | REPACK = 1 | "
AVX512 = AVX2.replace("BMI2 = 1 |", "BMI2 = 1 | AVX512 = 1 | AVX512_VNNI = 1 |")
CUDA = "CUDA : ARCHS = 890 | FORCE_MMQ = 1 | USE_GRAPHS = 1 | PEER_MAX_BATCH_SIZE = 128 | "
REPO = Path(__file__).resolve().parents[2]


def _other_build(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process's llama.cpp, as a build for AVX-512 would report itself (AVX2 builds for one that has it too)."""
    here = compat.system_info()
    other = here.replace("AVX2 = 1 |", "AVX2 = 1 | AVX512 = 1 |") if "AVX512 = 1" not in here else here.replace("AVX512 = 1 |", "")
    assert other != here
    monkeypatch.setattr(compat, "system_info", lambda: other)


# -- the key's part, as text ------------------------------------------------------------------


def test_the_instruction_sets_are_named_and_an_avx512_build_is_another_build():
    assert build_features(AVX2, gpu=False) == "cpu:AVX+AVX2+BMI2+F16C+FMA+LLAMAFILE+REPACK+SSE3+SSSE3"  # OPENMP: no number moves
    assert build_features(AVX512, gpu=False) == "cpu:AVX+AVX2+AVX512+AVX512_VNNI+BMI2+F16C+FMA+LLAMAFILE+REPACK+SSE3+SSSE3"


def test_the_same_features_in_another_order_or_spacing_are_the_same_build():
    shuffled = "CPU:REPACK=1|OPENMP=1|LLAMAFILE=1|BMI2=1|FMA=1|F16C=1|AVX2=1|AVX=1|SSSE3=1|SSE3=1|"
    assert build_features(shuffled, gpu=False) == build_features(AVX2, gpu=False)
    assert build_features(AVX2.replace("AVX2 = 1", "AVX2 = 0"), gpu=False) == build_features(AVX2.replace("AVX2 = 1 | ", ""), gpu=False)


def test_a_gpu_backend_counts_only_where_a_gpu_computes():
    """A CUDA build run on the CPU alone (the adapter's device "") keys as its CPU build; offloaded, its GPU backend's
    options that move numbers follow (the compiled architectures, forced kernels), not those that move only data."""
    assert build_features(AVX2 + CUDA, gpu=False) == build_features(AVX2, gpu=False)
    assert build_features(AVX2 + CUDA, gpu=True) == build_features(AVX2, gpu=False) + " cuda:ARCHS=890+FORCE_MMQ"


def test_sections_survive_a_backend_without_features_and_a_build_without_any_is_unknown():
    assert sections("METAL : CPU : AVX = 1 | NEON = 1 | ") == {"METAL": {}, "CPU": {"AVX": "1", "NEON": "1"}}
    assert build_features("", gpu=False) == build_features("CUDA : ARCHS = 890 | ", gpu=True) == UNKNOWN


def test_this_processs_build_is_read_from_llama_cpp():
    info = compat.system_info()
    assert "CPU" in sections(info), info
    assert build_features(info, gpu=False).startswith("cpu:")


# -- the cache key and the provenance ---------------------------------------------------------


def _model(tmp_path: Path) -> Path:
    path = tmp_path / "judge.gguf"
    path.write_bytes(b"GGUF" + bytes(64))  # checked when built, loaded only on first use
    return path


def test_another_build_keys_apart_and_the_same_build_keys_alike(tmp_path, monkeypatch):
    from judgesdk.provider import GenerateRequest, Message, cache_key
    from judgesdk.providers.llamacpp import LlamaCppProvider

    model = _model(tmp_path)
    request = GenerateRequest(messages=[Message(role="user", content="Rate it.")], labels=("1", "2"), max_tokens=0)
    here = LlamaCppProvider(model)
    assert cache_key(LlamaCppProvider(model), request) == cache_key(here, request)  # the same build: the same key
    _other_build(monkeypatch)
    other = LlamaCppProvider(model)
    assert other.build != here.build and other.model_sha256 == here.model_sha256
    assert cache_key(other, request) != cache_key(here, request)


@pytest.mark.integration
def test_a_cache_filled_by_one_build_does_not_answer_the_other(tiny_gguf, tmp_path, monkeypatch):
    """A real llama.cpp model behind the disk cache: the same build's second run is served from disk (the model is not
    asked); the other build's run asks the model again, and its answer's provenance names its own build."""
    from judgesdk.provider import CachedProvider, GenerateRequest, Message, open_cache
    from judgesdk.providers.llamacpp import LlamaCppProvider

    request = GenerateRequest(messages=[Message(role="user", content="The council met.")], continuation=" It voted.", max_tokens=0)
    cache = open_cache(tmp_path / "cache")

    def run() -> tuple[int, dict[str, str]]:
        provider = LlamaCppProvider(tiny_gguf, n_threads=1)
        try:
            response = asyncio.run(CachedProvider(provider, cache).generate(request))
        finally:
            asyncio.run(provider.aclose())
        return provider.counters.requests, response.provenance

    asked, first = run()
    assert asked == 1 and first["build"] == build_features(compat.system_info(), gpu=False)
    asked, again = run()
    assert asked == 0 and again == first  # the same build: from disk
    _other_build(monkeypatch)
    asked, other = run()
    assert asked == 1 and other["build"] != first["build"] and other["model_sha256"] == first["model_sha256"]


@pytest.mark.slow
@pytest.mark.integration
def test_the_readme_examples_fused_score_is_not_served_to_another_build(gguf_path, tmp_path, monkeypatch):
    """The README's first command's judge (the fused judge on the embedded model, its config) on one of its items, with
    a disk cache: run again on the same build, every answer comes from disk; on another build, every signal is asked of
    the model again, and the result's provenance names the build that answered."""
    from judgesdk import Judge
    from judgesdk.provider import unwrap

    item = json.loads((REPO / "examples" / "summaries.jsonl").read_text().splitlines()[0])
    config = {"method": "auto", "providers": [{"kind": "local"}], "cache": {"directory": str(tmp_path / "cache")}}

    def run() -> tuple[int, dict[str, str], float | None]:
        judge = Judge.from_config(config)
        try:
            result = judge.score(item["output"], source=item["source"], criterion="consistency")
            asked = unwrap(judge.provider(0)).counters.requests
        finally:
            judge.close()
        assert result.status == "ok" and result.method.startswith("fused") and result.provenance is not None, result
        return asked, dict(result.provenance.served), result.score

    asked, served, score = run()
    assert asked >= 2 and served["build"] == build_features(compat.system_info(), gpu=False)  # with and without the source
    assert run() == (0, served, score)  # the same build: every answer from disk
    _other_build(monkeypatch)
    asked_again, other, _ = run()
    assert asked_again == asked and other["build"] != served["build"]
