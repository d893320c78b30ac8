"""One probe body in a fresh process: ``python body.py BODY MODEL`` (run by probe.sh).

``pure_main`` / ``pure_thread`` / ``pure_pool``: a bare ``llama_cpp.Llama`` with the local provider's kwargs, loaded
on the main thread, a thread, or a one-worker pool as the provider does; ``config``: ``Judge.from_config`` with
``model_path`` and ``n_gpu_layers`` (``NGL``, default -1) scoring one item. Prints one JSON line; a crash leaves
its Python stack in ``$FAULT_FILE``."""

import faulthandler
import json
import os
import sys
import threading

faulthandler.enable(file=open(os.environ["FAULT_FILE"], "w"), all_threads=True)
body, path = sys.argv[1], sys.argv[2]
ngl = int(os.environ.get("NGL", "-1"))
settings = dict(
    model_path=path, n_ctx=4096, n_batch=512, n_gpu_layers=ngl, n_threads=os.cpu_count(), n_threads_batch=os.cpu_count(), logits_all=False, verbose=False
)
if body.startswith("pure"):
    import llama_cpp

    out: dict[str, int] = {}

    def load():
        llm = llama_cpp.Llama(**settings)
        out["n_vocab"] = llm.n_vocab()
        llm.close()

    if body == "pure_main":
        load()
    elif body == "pure_thread":
        thread = threading.Thread(target=load)
        thread.start()
        thread.join()
    elif body == "pure_pool":
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(1) as pool:
            pool.submit(load).result()
    print(json.dumps({"ok": True, **out}))
else:
    from judgesdk import Criterion, Judge

    crit = Criterion(name="coherence", description="The summary is well structured and reads as a coherent whole.")
    judge = Judge.from_config(
        {"method": "geval", "cache": {"enabled": False}, "providers": [{"kind": "local", "options": {"model_path": path, "n_gpu_layers": ngl}}]}
    )
    with judge:
        r = judge.score("The council will turn the rail yard into a park.", source="The council voted to turn the old rail yard into a park.", criterion=crit)
        used = judge.provider(0)
        while hasattr(used, "inner"):
            used = used.inner
        assert hasattr(used, "device"), used  # the local adapter at the bottom of the stack
    print(json.dumps({"ok": r.status == "ok", "status": r.status, "score": r.score, "device": used.device}))
