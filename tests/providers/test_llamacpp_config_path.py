"""The local provider built from a config starts llama.cpp as the direct provider does, and on a GPU build
llama.cpp's libraries load before numpy's C++ runtime (issue 30, item 8).

On one H200 (benchmarks/README.md, "The local provider on a CUDA build") loading a model crashed the process in
every start where numpy had been imported before ``llama_cpp`` and in none where ``llama_cpp`` came first
(``providers/llamacpp/load_order.py``); ``judgesdk score`` and ``Judge.from_config`` crashed because judgesdk imports numpy
itself. Each case runs here in a fresh process, on CPU, with the kwargs of the failing GPU run (n_ctx=4096,
n_batch=512, n_threads=16, logits_all=False, n_gpu_layers=-1), the GPU build simulated where it matters."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import need

need("llama_cpp")

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
from judgesdk import Criterion

path, how = sys.argv[1], sys.argv[2]
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


LOAD_ORDER = r"""
import importlib.util, json, sys
path, numpy_first = sys.argv[1], sys.argv[2] == "numpy_first"
if numpy_first:
    import numpy  # what a script that imports numpy before judgesdk does
spec = importlib.util.find_spec("judgesdk")
import pathlib
root = pathlib.Path(spec.origin).parent
candidates = [root / "providers" / "llamacpp" / "load_order.py", root.parent / "providers" / "llamacpp" / "load_order.py"]
source = next(c for c in candidates if c.exists())
module_spec = importlib.util.spec_from_file_location("judgesdk.providers.llamacpp.load_order", source)
order = importlib.util.module_from_spec(module_spec)
module_spec.loader.exec_module(order)
order.gpu_build = lambda: True  # a CUDA build, here on CPU
sys.modules["judgesdk.providers.llamacpp.load_order"] = order
import judgesdk  # its __init__ calls load_llama_first() before anything imports numpy
libraries = order.loaded_libraries()  # in load order
first = lambda prefix: next(i for i, name in enumerate(libraries) if name.startswith(prefix))
out = {"llama_cpp_before_numpy": first("libllama.") < first("_multiarray_umath"),
       "cxx_runtime_loaded_first": order.cxx_runtime_loaded_first()}
from judgesdk import Judge, PermanentError
from judgesdk.providers.llamacpp import LlamaCppProvider
try:
    provider = LlamaCppProvider(path, n_gpu_layers=0)
except PermanentError as exc:
    out["refused"] = str(exc)
else:
    from judgesdk import Criterion
    criterion = Criterion(name="coherence", description="The summary is well structured and reads as a coherent whole.")
    with Judge(provider, method="geval") as judge:
        result = judge.score("The council will turn the rail yard into a park.", source="The council voted to turn the old rail yard into a park.", criterion=criterion)
        judge.run(provider.aclose())
    out["status"] = result.status
print(json.dumps(out))
"""


def _order(path: Path, how: str) -> dict:
    done = subprocess.run([sys.executable, "-c", LOAD_ORDER, str(path), how], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_on_a_gpu_build_import_judgesdk_loads_llama_cpp_before_numpy_and_the_model_loads(gguf_path):
    """The order that held in 22 of 22 processes on an H200 (``providers/llamacpp/load_order.py``): ``import judgesdk``
    on a GPU build brings ``llama_cpp`` (and the C++ runtime, as its dependency) in before numpy, so the local
    provider starts and scores. Run on CPU with the build taken for a GPU build."""
    run = _order(gguf_path, "judgesdk_first")
    assert run["llama_cpp_before_numpy"] and not run["cxx_runtime_loaded_first"], run
    assert "refused" not in run and run["status"] in {"ok", "low_coverage"}, run


def test_on_a_gpu_build_numpy_imported_first_is_a_typed_refusal_not_a_crash(gguf_path):
    """numpy imported before judgesdk: the order that crashed every model load on a CUDA build. The provider
    refuses to start, saying what to change, before llama.cpp loads anything."""
    run = _order(gguf_path, "numpy_first")
    assert run["cxx_runtime_loaded_first"], run
    assert "Import judgesdk (or llama_cpp) before numpy" in run["refused"], run


def test_the_load_order_reads_the_dynamic_linker_and_imports_nothing_on_cpu_builds():
    """``cxx_runtime_loaded_first`` follows the real load order (numpy first: True; llama_cpp first: False), and
    on a CPU build ``import judgesdk`` imports neither llama_cpp nor numpy (CPU builds never crashed)."""
    probe = (
        "import sys\n{first}\nfrom judgesdk.providers.llamacpp.load_order import cxx_runtime_loaded_first, gpu_build\n"
        "print(cxx_runtime_loaded_first(), gpu_build())"
    )
    seen = {}
    for name, first in (("numpy", "import numpy, llama_cpp"), ("llama", "import llama_cpp, numpy")):
        done = subprocess.run([sys.executable, "-c", probe.format(first=first)], capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-2000:]
        seen[name] = done.stdout.split()
    if seen["numpy"][1] == "True":
        pytest.skip("llama_cpp here is a GPU build")
    assert seen == {"numpy": ["True", "False"], "llama": ["False", "False"]}
    done = subprocess.run([sys.executable, "-c", "import sys, judgesdk; print('llama_cpp' in sys.modules, 'numpy' in sys.modules)"],
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    assert done.stdout.split() == ["False", "False"], done.stderr[-2000:]


@pytest.mark.parametrize("given, passed", [({}, None), ({"op_offload": False}, False), ({"op_offload": True}, True)])
def test_op_offload_reaches_llama_only_when_set(tmp_path, given, passed):
    """``op_offload = false`` is how a CUDA build gives pure-CPU results with the GPU visible; unset, the kwargs
    are those every llama-cpp-python release takes. On a build without GPU offload the device is "" and the cache
    identity is the file's and its CPU build's alone, so CPU caches keep their keys."""
    from judgesdk.provider.settings import ProviderConfig
    from judgesdk.provider.stack import build_adapter
    from judgesdk.providers.llamacpp import compat, content_sha256

    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF" + bytes(64))  # checked when built, loaded only on first use
    adapter = build_adapter(ProviderConfig(kind="local", options={"model_path": str(model), **given}))
    assert adapter._settings.get("op_offload") == passed and ("op_offload" in adapter._settings) == (passed is not None)
    if not compat.supports_gpu_offload():
        assert adapter.device == "" and adapter.identity == f"sha256:{content_sha256(model)};build={adapter.build}"
