"""On a machine with a GPU and a CUDA build of llama-cpp-python: does the config path load the model now?

    python benchmarks/gpu_config_path.py [--model ../shared/gpu-check/tiny.gguf] [--out benchmarks/out/gpu_config_path.json]

Issue 30, item 8: ``Judge.from_config`` with ``n_gpu_layers = -1`` died with a segmentation fault loading the
model where ``LlamaCppProvider(path, n_gpu_layers=-1)`` worked. The only difference found on CPU was when and
where llama.cpp's backends (CUDA's device registry) were initialised: before the model, on the main thread, in
the run that worked; inside the first ``Llama()``, on the provider's worker thread, in the one that crashed.
The provider now initialises them when it is built (``providers/_llama_compat.py``, ``init_backends``).

Each case runs in a fresh process (a process initialises the backends once) and scores one item with geval:

* ``config``: ``Judge.from_config`` with ``model_path`` and ``n_gpu_layers = -1`` (the fixed path);
* ``config_deferred``: the same with ``init_backends`` made a no-op until the model loads (the path as it
  was before the fix: if this one crashes and ``config`` does not, the cause is confirmed);
* ``vocab_first``: the config path after loading the model's vocabulary alone (``vocab_only``), as
  ``judgesdk score``'s forecast does before judging;
* ``direct``: ``LlamaCppProvider(path, n_gpu_layers=-1)`` under ``Judge``;
* ``cpu_op_offload_off``: the config path with ``n_gpu_layers = 0`` and ``op_offload = false`` (pure CPU
  on a CUDA build), and ``cpu_hidden``: ``n_gpu_layers = 0`` with ``CUDA_VISIBLE_DEVICES=""``: their label
  probabilities should be identical to each other.

Written, not run: no GPU machine was lent to the session that wrote it (CPU runs of the same script finish,
with every case on the CPU).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

CASE = r"""
import json, sys
how, path = sys.argv[1], sys.argv[2]
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
    for how in ("config", "config_deferred", "vocab_first", "direct", "cpu_op_offload_off", "cpu_hidden"):
        env = {**os.environ, **({"CUDA_VISIBLE_DEVICES": ""} if how == "cpu_hidden" else {})}
        done = subprocess.run([sys.executable, "-c", CASE, how, args.model], capture_output=True, text=True, env=env, timeout=args.timeout)
        case: dict = {"exit": done.returncode}  # -11: SIGSEGV
        if done.returncode == 0:
            case.update(json.loads(done.stdout.strip().splitlines()[-1]))
        else:
            case["stderr_tail"] = done.stderr[-2000:]
        report["cases"][how] = case
        print(how, json.dumps(case)[:300], flush=True)
    cpu = [report["cases"][c].get("probs") for c in ("cpu_op_offload_off", "cpu_hidden")]
    report["pure_cpu_identical"] = cpu[0] is not None and cpu[0] == cpu[1]
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(report, indent=1))
    print(json.dumps({k: v for k, v in report.items() if k != "cases"}))
    return 0 if all(c["exit"] == 0 for name, c in report["cases"].items() if name != "config_deferred") else 1


if __name__ == "__main__":
    sys.exit(main())
