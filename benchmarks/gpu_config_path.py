"""On a machine with a GPU and a CUDA build of llama-cpp-python: does the local provider load a model?

    python benchmarks/gpu_config_path.py [--model ../shared/gpu-check/tiny.gguf] [--out benchmarks/out/gpu_config_path.json]

Run it from a folder where the checkout's own ``judgesdk/`` does not shadow the installed judgesdk (gpu-check's
``run.sh`` assembles one under /tmp/site). Issue 30, item 8: on one H200 every start that loaded a model first on
the provider's worker thread died with SIGSEGV inside ``Llama()``; the start that held opened a vocabulary-only
``Llama`` on the building thread first, which the provider now does on GPU builds
(``providers/_llama_compat.py``, ``open_vocabulary``; figures in benchmarks/README.md, "The local provider on a
CUDA build"). Each case runs in a fresh process and scores one item with geval, with ``faulthandler`` writing
to a file of its own (llama-cpp-python swaps stderr for /dev/null while it loads):

* the start as it is now: ``config`` (``Judge.from_config`` with ``model_path`` and ``n_gpu_layers = -1``),
  ``direct`` (``LlamaCppProvider(path, n_gpu_layers=-1)`` under ``Judge``), ``cpu_hidden`` (``n_gpu_layers =
  0`` with ``CUDA_VISIBLE_DEVICES=""``) and ``cpu_op_offload_off`` (``n_gpu_layers = 0``, ``op_offload =
  false``): each must exit 0, and the two CPU cases' label probabilities should be identical;
* ``plain_*``: the start before the fix (no vocabulary opened first) under each setting once suspected
  (``init_backends`` deferred, OpenMP's wait policy, judgesdk's log callback off), and ``vocab_first``: the
  plain start after a ``Vocab`` (``judgesdk.forecast.tokens``) opened on the main thread. On the H200 every
  ``plain_*`` case crashed and ``vocab_first`` scored. Exit 0 when every case but the ``plain_*`` ones did.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent

CASE = r"""
import faulthandler, json, os, sys
_fault = open(os.environ["FAULT_FILE"], "w") if os.environ.get("FAULT_FILE") else None
if _fault:  # llama-cpp-python swaps stderr for /dev/null while it loads: the fault log goes to a file of its own
    faulthandler.enable(file=_fault)
how, path = sys.argv[1], sys.argv[2]
if os.environ.get("PLAIN_START"):  # the start before the fix: no vocabulary opened on the building thread
    import judgesdk.providers._llama_compat as _compat
    _compat.gpu_build = lambda: False
if os.environ.get("NO_LOG_CALLBACK"):
    import judgesdk.providers.llamacpp as _local
    _local.route_llama_log = lambda: None
if how == "config_deferred":
    import judgesdk.providers._llama_compat as compat
    real, loading = compat.init_backends, {"now": False}
    compat.init_backends = lambda: real() if loading["now"] else None
    real_new = compat.new_llama
    def new_llama(settings):
        loading["now"] = True
        return real_new(settings)
    compat.new_llama = new_llama
if how == "vocab_first":  # what `judgesdk score` does before judging: its forecast loads the vocabulary alone
    from judgesdk.forecast.tokens import Vocab
    vocab = Vocab(path)
from judgesdk import Judge
from judgesdk.providers.llamacpp import LlamaCppProvider
from judgesdk.types import Criterion

criterion = Criterion(name="coherence", description="The summary is well structured and reads as a coherent whole.")
options = {"model_path": path, "n_gpu_layers": -1}
if how == "cpu_op_offload_off":
    options = {"model_path": path, "n_gpu_layers": 0, "op_offload": False}
elif how == "cpu_hidden":
    options = {"model_path": path, "n_gpu_layers": 0}
if how == "direct":
    provider = LlamaCppProvider(path, n_gpu_layers=-1)
    judge = Judge(provider, method="geval")
else:
    judge = Judge.from_config({"method": "geval", "cache": {"enabled": False}, "providers": [{"kind": "local", "options": options}]})
with judge:
    result = judge.score("The council will turn the rail yard into a park.", source="The council voted to turn the old rail yard into a park.", criterion=criterion)
    used = judge.provider(0)
    while hasattr(used, "inner"):
        used = used.inner
    if how == "direct":
        judge.run(provider.aclose())
print(json.dumps({"status": result.status, "score": result.score, "probs": list(result.distribution.probs) if result.distribution else None,
                  "device": used.device}))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=str(HERE.parent.parent / "shared" / "gpu-check" / "tiny.gguf"))
    parser.add_argument("--out", default=str(HERE / "out" / "gpu_config_path.json"))
    parser.add_argument("--timeout", type=float, default=300)
    args = parser.parse_args()
    import llama_cpp

    report: dict = {"llama_cpp": llama_cpp.__version__, "supports_gpu_offload": None, "cases": {}}
    probe = subprocess.run([sys.executable, "-c", "import llama_cpp; print(bool(llama_cpp.llama_supports_gpu_offload()))"],
                           capture_output=True, text=True, timeout=120)  # fmt: skip
    report["supports_gpu_offload"] = probe.stdout.strip()
    plain = {"PLAIN_START": "1"}
    cases = [  # name, case, environment: the fixed start, then the plain start under each setting suspected before
        ("config", "config", {}), ("direct", "direct", {}), ("cpu_hidden", "cpu_hidden", {"CUDA_VISIBLE_DEVICES": ""}),
        ("cpu_op_offload_off", "cpu_op_offload_off", {}), ("vocab_first", "vocab_first", plain),
        ("plain_config", "config", plain), ("plain_config_deferred", "config_deferred", plain),
        ("plain_config_passive", "config", {**plain, "OMP_WAIT_POLICY": "PASSIVE"}),
        ("plain_config_active", "config", {**plain, "OMP_WAIT_POLICY": "ACTIVE"}),
        ("plain_config_no_log_callback", "config", {**plain, "NO_LOG_CALLBACK": "1"}),
        ("plain_direct", "direct", plain), ("plain_cpu_hidden", "cpu_hidden", {**plain, "CUDA_VISIBLE_DEVICES": ""}),
    ]
    for name, how, extra in cases:
        fault = tempfile.mktemp(prefix="fault-")
        env = {**{k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}, **extra, "FAULT_FILE": fault}
        try:
            done = subprocess.run([sys.executable, "-c", CASE, how, args.model], capture_output=True, text=True, env=env, timeout=args.timeout)
            case: dict = {"exit": done.returncode}  # -11: SIGSEGV
        except subprocess.TimeoutExpired:
            done, case = None, {"exit": "timeout"}
        if done is not None and done.returncode == 0:
            case.update(json.loads(done.stdout.strip().splitlines()[-1]))
        elif done is not None:
            case["stderr_tail"] = done.stderr[-2000:]
        if os.path.exists(fault) and case["exit"] != 0:
            case["fault"] = Path(fault).read_text()[:6000]  # the crashing thread's stack comes first
        report["cases"][name] = case
        print(name, json.dumps(case)[:300], flush=True)
    cpu = [report["cases"][c].get("probs") for c in ("cpu_op_offload_off", "cpu_hidden")]
    report["pure_cpu_identical"] = cpu[0] is not None and cpu[0] == cpu[1]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=1))
    print(json.dumps({k: v for k, v in report.items() if k != "cases"}))
    return 0 if all(c["exit"] == 0 for name, c in report["cases"].items() if not name.startswith("plain_")) else 1


if __name__ == "__main__":
    sys.exit(main())
