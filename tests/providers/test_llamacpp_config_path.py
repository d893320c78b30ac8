"""The local provider built from a config starts llama.cpp as the direct provider does (issue 30, item 8).

On one H200 (benchmarks/README.md, "The local provider on a CUDA build") every start that loaded a model first on
the provider's worker thread died with SIGSEGV inside ``Llama()``, the config path and the direct provider alike;
the one start that held opened a vocabulary-only ``Llama`` on the main thread first, which the provider now does
on GPU builds (``_llama_compat.open_vocabulary``). Each path runs here in a fresh process, on CPU, with the kwargs
of the failing GPU run (n_ctx=4096, n_batch=512, n_threads=16, logits_all=False, n_gpu_layers=-1): the two paths
build the same ``Llama``, initialise the backends on the building thread, and, with the build taken for a GPU
build, open the vocabulary there before the model loads on the worker thread."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("llama_cpp")

pytestmark = pytest.mark.integration

SCRIPT = r"""
import json, sys, threading
import llama_cpp, llama_cpp.llama_cpp as low

events = []
for module in (llama_cpp, low):  # Llama() calls the low-level name, the provider the package's
    real = module.llama_backend_init
    def spy(real=real):
        events.append(["backend_init", threading.current_thread().name])
        return real()
    module.llama_backend_init = spy
real_init = llama_cpp.Llama.__init__
def llama_init(self, *args, **kwargs):
    events.append(["Llama", threading.current_thread().name, kwargs])
    return real_init(self, *args, **kwargs)
llama_cpp.Llama.__init__ = llama_init

from judgesdk import Judge
from judgesdk.providers.llamacpp import LlamaCppProvider
from judgesdk.types import Criterion

path, how = sys.argv[1], sys.argv[2]
if sys.argv[3:] == ["gpu_build"]:  # what the provider does on a CUDA build, here on CPU
    import judgesdk.providers._llama_compat as compat
    compat.gpu_build = lambda: True
options = {"model_path": path, "n_gpu_layers": -1, "n_ctx": 4096, "n_batch": 512, "n_threads": 16}
criterion = Criterion(name="coherence", description="The summary is well structured and reads as a coherent whole.")
if how == "config":
    judge = Judge.from_config({"method": "geval", "cache": {"enabled": False}, "providers": [{"kind": "local", "options": options}]})
else:
    provider = LlamaCppProvider(path, n_gpu_layers=-1, n_ctx=4096, n_batch=512, n_threads=16)
    judge = Judge(provider, method="geval")
with judge:
    result = judge.score("The council will turn the rail yard into a park.", source="The council voted to turn the old rail yard into a park.", criterion=criterion)
    if how == "direct":
        judge.run(provider.aclose())
print(json.dumps({"events": events, "score": result.score, "probs": list(result.distribution.probs), "status": result.status}))
"""


def _run(path: Path, how: str, *extra: str) -> dict:
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(path), how, *extra], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_config_path_builds_llama_as_the_direct_provider_does(gguf_path):
    config, direct = _run(gguf_path, "config"), _run(gguf_path, "direct")
    for run in (config, direct):
        loads = [e for e in run["events"] if e[0] == "Llama"]
        assert len(loads) == 1, run["events"]  # one model, loaded once
        (_, thread, kwargs) = loads[0]
        assert thread.startswith("judgesdk-llama")  # the model loads on the provider's worker thread
        assert kwargs == {
            "model_path": str(gguf_path), "n_ctx": 4096, "n_batch": 512, "n_gpu_layers": -1,
            "n_threads": 16, "n_threads_batch": 16, "logits_all": False, "verbose": False,
        }  # fmt: skip
        first = run["events"][0]
        # llama.cpp's backends (on a CUDA build: the devices) are initialised before the model loads, on the thread
        # that built the provider, not inside the load on the worker thread
        assert first[0] == "backend_init" and not first[1].startswith("judgesdk-llama"), run["events"]
    assert config["status"] == direct["status"] and config["probs"] == direct["probs"] and config["score"] == direct["score"]


def test_on_a_gpu_build_the_vocabulary_opens_on_the_building_thread_before_the_model_loads(gguf_path):
    """The start that held on an H200 where every other crashed (``_llama_compat.open_vocabulary``): a
    vocabulary-only ``Llama`` on the thread that builds the provider, then the model on the worker thread.
    Run on CPU with the build taken for a GPU build; the scores are those of the plain start."""
    for how in ("config", "direct"):
        run = _run(gguf_path, how, "gpu_build")
        loads = [e for e in run["events"] if e[0] == "Llama"]
        assert len(loads) == 2, run["events"]
        (_, vocab_thread, vocab_kwargs), (_, model_thread, model_kwargs) = loads
        assert vocab_kwargs.get("vocab_only") is True and not vocab_thread.startswith("judgesdk-llama"), run["events"]
        assert not model_kwargs.get("vocab_only") and model_thread.startswith("judgesdk-llama"), run["events"]
        plain = _run(gguf_path, how)
        assert (run["status"], run["score"], run["probs"]) == (plain["status"], plain["score"], plain["probs"])


@pytest.mark.parametrize("given, passed", [({}, None), ({"op_offload": False}, False), ({"op_offload": True}, True)])
def test_op_offload_reaches_llama_only_when_set(tmp_path, given, passed):
    """``op_offload = false`` is how a CUDA build gives pure-CPU results with the GPU visible; unset, the kwargs
    are those every llama-cpp-python release takes. On a build without GPU offload the device is "" and the cache
    identity is the file's alone, so CPU caches keep their keys."""
    from judgesdk.provider.settings import ProviderConfig
    from judgesdk.provider.stack import build_adapter
    from judgesdk.providers import _llama_compat as compat
    from judgesdk.providers.llamacpp import content_sha256

    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF" + bytes(64))  # checked when built, loaded only on first use
    adapter = build_adapter(ProviderConfig(kind="local", options={"model_path": str(model), **given}))
    assert adapter._settings.get("op_offload") == passed and ("op_offload" in adapter._settings) == (passed is not None)
    if not compat.supports_gpu_offload():
        assert adapter.device == "" and adapter.identity == f"sha256:{content_sha256(model)}"
