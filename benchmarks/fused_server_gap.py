"""The fused judge through ``python -m llama_cpp.server`` (the ``openai`` provider, ``api = "completions"``, echo)
against the same judge in process, on the same GGUF (issue 30, item 6): the gap per token and per score.

    python benchmarks/fused_server_gap.py [--items 0] [--shortest] [--threads 2]

Starts the server on 127.0.0.1 serving the embedded model (tests/support/servers.py), then for the README example
and the first (``--shortest``: the shortest) N SummEval items (natural text, ../shared/data) asks both providers for the same continuation
requests the fused judge makes (output given the source, output alone) and compares the token log-probabilities,
then scores each item with ``method = "fused"`` both ways (coherence and consistency). Prints one JSON object:
tokens compared, token count mismatches, mean and max |Δ log p| per token, seconds per token each way, and the
largest score difference. The figures in benchmarks/README.md ("The fused judge through a server") came from it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

README_SOURCE = (
    "The city council of Marlow voted on Tuesday to turn the disused rail yard into a public park "
    "with a playground and a community garden."
)
README_OUTPUT = "The council approved a park on the old rail yard, with a playground and a garden."


def items(count: int, shortest: bool = False) -> list[tuple[str, str | None, str]]:
    """The README example, then ``count`` SummEval items: the first in file order, or the shortest (article and
    summary together, as tests/integration/test_fused_server_llama.py picks them)."""
    from judgesdk.meta import load_dataset, natural
    from judgesdk.meta import shortest as fewest_characters

    records = [natural(r) for r in load_dataset("summeval")]
    chosen = fewest_characters(records, count) if shortest else records[:count]
    return [("readme", README_SOURCE, README_OUTPUT)] + [(f"{r.doc_id}::{r.system_id}", r.source, r.output) for r in chosen]


def server_config(server, sha: str) -> dict:
    return {
        "method": "fused", "cache": {"enabled": False}, "retry": {"max_attempts": 1},
        "providers": [{"kind": "openai", "model": server.model, "base_url": server.base_url, "api": "completions",
                       "timeout_s": 3600, "options": {"model_sha256": sha}}],
    }  # fmt: skip


def local_config(path: Path, threads: int) -> dict:
    return {"method": "fused", "cache": {"enabled": False}, "providers": [{"kind": "local", "options": {"model_path": str(path), "n_threads": threads}}]}


async def token_gap(path: Path, server, threads: int, pairs) -> dict:
    from judgesdk.fused import JOIN, templates
    from judgesdk.provider import GenerateRequest
    from judgesdk.providers import LlamaCppProvider, OpenAIProvider

    tpl = templates()
    local = LlamaCppProvider(path, n_threads=threads)
    remote = OpenAIProvider(server.model, base_url=server.base_url, api="completions", timeout_s=3600)
    try:
        return await _compare(local, remote, tpl, pairs, JOIN, GenerateRequest)
    finally:
        await local.aclose()
        await remote.aclose()


async def _compare(local, remote, tpl, pairs, JOIN, GenerateRequest) -> dict:  # noqa: N803
    diffs, mismatched, n_local, n_remote, t_local, t_remote = [], 0, 0, 0, 0.0, 0.0
    for _, source, output in pairs:
        for template, values in ((tpl["signals.conditional"], {"source": source}), (tpl["signals.unconditional"], {})):
            request = GenerateRequest(messages=template.render(**values), continuation=JOIN + output, max_tokens=0, tags=template.tags())
            started = time.perf_counter()
            a = (await local.generate(request)).continuation_tokens or []
            t_local += time.perf_counter() - started
            started = time.perf_counter()
            b = (await remote.generate(request)).continuation_tokens or []
            t_remote += time.perf_counter() - started
            n_local, n_remote = n_local + len(a), n_remote + len(b)
            if [t.token for t in a] != [t.token for t in b]:
                mismatched += 1
                continue
            diffs += [abs(x.logprob - y.logprob) for x, y in zip(a, b)]
    return {
        "requests": 2 * len(pairs), "requests_tokenized_differently": mismatched, "tokens_compared": len(diffs),
        "mean_abs_logprob_diff": statistics.fmean(diffs) if diffs else None, "max_abs_logprob_diff": max(diffs) if diffs else None,
        "local_s_per_token": t_local / max(n_local, 1), "server_s_per_token": t_remote / max(n_remote, 1),
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--items", type=int, default=0, help="SummEval items besides the README example (default 0: minutes each)")
    parser.add_argument("--shortest", action="store_true", help="the shortest SummEval items instead of the first")
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()

    from judgesdk import Judge
    from judgesdk.fused import file_sha256

    from support.servers import LlamaServer, embedded_gguf_path

    path = embedded_gguf_path()
    sha = file_sha256(path)
    pairs = items(args.items, args.shortest)
    server = LlamaServer(path, n_threads=args.threads)
    server.start()
    try:
        gap = asyncio.run(token_gap(path, server, args.threads, pairs))
        with Judge.from_config(local_config(path, args.threads)) as here, Judge.from_config(server_config(server, sha)) as there:
            scores = {}
            for criterion in ("coherence", "consistency"):
                for name, judge in (("local", here), ("server", there)):
                    results = judge.score_many([{"id": i, "source": s, "output": o} for i, s, o in pairs], criterion=criterion)
                    scores[(criterion, name)] = [r.score for r in results]
                    assert all(r.status == "ok" for r in results), [(r.status, r.notes) for r in results]
            worst = max(abs(a - b) for c in ("coherence", "consistency") for a, b in zip(scores[(c, "local")], scores[(c, "server")]) if a is not None and b is not None)
            readme = {c: (scores[(c, "local")][0], scores[(c, "server")][0]) for c in ("coherence", "consistency")}
    finally:
        server.cleanup()
    print(json.dumps({"items": len(pairs), "model_sha256": sha, **gap, "max_abs_score_diff": worst, "readme_local_vs_server": readme}, indent=2))


if __name__ == "__main__":
    main()
