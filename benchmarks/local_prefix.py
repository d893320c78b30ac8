"""Local prefix reuse on a fixed SummEval subset (issue 6, benchmark 1), all phases in one process.

Every summary of the first ``--docs`` SummEval documents (16 systems each) is judged on one criterion
(or, with several ``--criterion``, fine-grained on all of them: 002 §4.1.2, one request per criterion)
with ``geval`` (exact label probabilities) by the embedded model, three ways:

* ``raw``: llama-cpp-python's own ``Llama.eval`` of the first item's full prompt on a fresh context
  (no judgesdk), the machine's prompt-evaluation rate, median of ``--repeats``;
* ``reuse_on``: the provider with prefix reuse (document order, as ``judgesdk bench`` judges);
* ``reuse_off``: the same items with ``prefix_reuse=False`` (every prompt evaluated from scratch);
* ``reuse_on_one_at_a_time`` (``--compare-parallel``): reuse on with ``parallel_suffixes=1``, so label
  requests that differ only in a short suffix are not decoded together.

Then ``interleaved``: two documents' summaries alternating (A1 B1 A2 B2 ...), one request at a time,
with the saved-state LRU (``prefix_states=4``) and without it (``prefix_states=0``, the live KV only).

    .venv/bin/python benchmarks/local_prefix.py --docs 2 --criterion consistency
    .venv/bin/python benchmarks/local_prefix.py --docs 2 --criterion coherence consistency fluency relevance \
        --template direct.likert.shared_criteria --skip-interleaved
    .venv/bin/python benchmarks/local_prefix.py --probes --docs 4 --contend 2

Prints one JSON object (wall times, token counters, ratios, the load average before and after).

``--probes`` instead measures the llama.cpp mechanisms the provider's design rests on (medians):

* the OpenMP wait policy: prefill rate and a 22-token decode after a 400-token prefix, in child
  processes with ``OMP_WAIT_POLICY=ACTIVE`` and ``PASSIVE`` (libgomp reads it once, at load), alone and
  beside ``--contend`` busy-looping processes (what other work on the same cores looks like);
* saving prefixes: ``llama_state_seq_get_data``/``set_data`` of sequence 0 vs ``Llama.save_state``/
  ``load_state`` vs a sequence copy in a unified KV cache, and what stored copies cost later decodes;
* parallel sequences: K outputs of one source in one decode vs one decode each, and the same for K
  criteria's ~10-token answer prefixes after one output's shared-criteria prompt.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any

from judgesdk.core import Criterion, JudgeItem
from judgesdk.judging import Judge
from judgesdk.meta import HumanRecord, load_dataset, select
from judgesdk.prompting import criterion as preset
from judgesdk.prompting import load_template
from judgesdk.provider import GenerateRequest, Message, as_text
from judgesdk.providers import LlamaCppProvider, default_gpu_layers, embedded_model_path
from judgesdk.scorers import DEFAULT_TEMPLATE, criteria_block, template_values


def subset(docs: int) -> list[HumanRecord]:
    """Every summary of the first ``docs`` SummEval documents (file order)."""
    return select(load_dataset("summeval"), docs=docs)


def items_of(records: Sequence[HumanRecord]) -> list[JudgeItem]:
    return [JudgeItem(output=r.output, source=r.source, id=f"{r.doc_id}::{r.system_id}") for r in records]


def load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def first_prompt(item: JudgeItem, crits: Sequence[Criterion], template_id: str) -> str:
    """The first request's prompt text, as the scorers render it (``{{criteria}}`` lists every criterion)."""
    values = {**template_values(item, crits[0]), "criteria": criteria_block(crits)}
    return as_text(load_template(template_id).render(**values))


def raw_rate(prompt: str, repeats: int, n_gpu_layers: int) -> dict[str, float]:
    """Tokens per second of llama-cpp-python's own prompt evaluation of one full judging prompt."""
    import llama_cpp

    llm = llama_cpp.Llama(
        model_path=str(embedded_model_path()), n_ctx=4096, n_batch=512, n_threads=os.cpu_count(), n_gpu_layers=n_gpu_layers, verbose=False
    )
    tokens = llm.tokenize(prompt.encode(), add_bos=True, special=False)
    times = []
    for _ in range(repeats):
        llm.reset()
        llm._ctx.kv_cache_clear()
        started = time.perf_counter()
        llm.eval(tokens)
        times.append(time.perf_counter() - started)
    llm.close()
    median = statistics.median(times)
    return {"tokens": len(tokens), "median_s": round(median, 3), "tokens_per_s": round(len(tokens) / median, 1)}


def judged(items: list[JudgeItem], crits: list[Criterion], concurrency: int, template: str, **options: object) -> dict[str, object]:
    """Judge ``items`` once with a fresh provider (model load excluded); wall time, counters and scores
    (one per criterion and item)."""
    provider = LlamaCppProvider.from_options(track_unique_tokens=True, **options)
    judge = Judge(provider, concurrency=concurrency, template=template)
    warm_up = GenerateRequest(messages=(Message(role="user", content="Hello"),), labels=("1",), max_tokens=0)
    asyncio.run(provider.generate(warm_up))  # loads the model outside the timing, shares only BOS with the prompts
    provider.reset_counters()
    started = time.perf_counter()
    results = judge.score_many(items, criterion=crits)
    wall = time.perf_counter() - started
    judge.close()
    asyncio.run(provider.aclose())
    counters = provider.counters
    return {
        "wall_s": round(wall, 2),
        "load": load(),
        "errors": sum(r.status == "error" for r in results),
        "counters": counters.model_dump(),
        "evaluated_per_unique": round(counters.tokens_evaluated / counters.unique_tokens, 3) if counters.unique_tokens else None,
        "evaluated_tokens_per_s": round(counters.tokens_evaluated / wall, 1),
        "unique_tokens_per_s": round((counters.unique_tokens or 0) / wall, 1),
        "scores": [p.score for r in results for p in (r.parts or {"": r}).values()],
    }


def interleave(records: list[HumanRecord]) -> list[HumanRecord]:
    docs = list(dict.fromkeys(r.doc_id for r in records))[:2]
    a, b = ([r for r in records if r.doc_id == d] for d in docs)
    return [r for pair in zip(a, b) for r in pair]


# -- probes of the mechanisms (--probes) -----------------------------------------------------------


def _llama(**context: object) -> Any:  # a llama_cpp.Llama (llama_cpp has no type information)
    """A raw Llama over the embedded model; ``context`` overrides context parameters (rebuilds the context)."""
    import llama_cpp
    from llama_cpp import _internals

    llm = llama_cpp.Llama(model_path=str(embedded_model_path()), n_ctx=4096, n_batch=512, verbose=False)
    if context:
        for key, value in context.items():
            setattr(llm.context_params, key, value)
        llm._ctx.close()
        llm._ctx = _internals.LlamaContext(model=llm._model, params=llm.context_params, verbose=False)
    return llm


def _decode(llm: Any, chunks: list[tuple[int, list[int], int]]) -> float:
    """One decode of (sequence, tokens, first position) chunks, logits at each chunk's last token; seconds."""
    batch = llm._batch.batch
    n = 0
    for seq, tokens, pos in chunks:
        for i, token in enumerate(tokens):
            batch.token[n], batch.pos[n], batch.seq_id[n][0], batch.n_seq_id[n] = token, pos + i, seq, 1
            batch.logits[n] = i == len(tokens) - 1
            n += 1
    batch.n_tokens = n
    started = time.perf_counter()
    llm._ctx.decode(llm._batch)
    return time.perf_counter() - started


def _median_ms(fn: Callable[[], object], repeats: int = 5) -> float:
    times: list[float] = []
    for _ in range(repeats):
        started = time.perf_counter()
        fn()
        times.append(time.perf_counter() - started)
    return round(statistics.median(times) * 1000, 2)


def _source(record: HumanRecord) -> str:
    """The record's source document (every SummEval record has one)."""
    if record.source is None:
        raise ValueError(f"{record.doc_id}/{record.system_id}: no source")
    return record.source


def _texts(records: list[HumanRecord]) -> tuple[str, list[str]]:
    return "Rate the output.\n<source>\n" + _source(records[0]) + "\n</source>\n<output>\n", [
        r.output + "\n</output>\nScore (1-5): " for r in records[:16]
    ]


def probe_decode(records: list[HumanRecord]) -> dict[str, float]:
    """(child process) prefill rate of 400 tokens and a 22-token decode after them, medians of 5."""
    llm = _llama()
    prefix = llm.tokenize(_texts(records)[0].encode(), add_bos=True, special=False)[:400]
    prefill = []
    for _ in range(5):
        llm._ctx.kv_cache_clear()
        prefill.append(_decode(llm, [(0, prefix, 0)]))
    tail = []
    for _ in range(5):
        llm._ctx.kv_cache_seq_rm(0, 400, -1)
        tail.append(_decode(llm, [(0, prefix[:22], 400)]))
    return {"prefill_tokens_per_s": round(400 / statistics.median(prefill), 1), "decode_22_after_400_ms": round(statistics.median(tail) * 1000, 1)}


def probe_wait_policy(contend: int) -> dict[str, object]:
    """Both policies, each alone and beside ``contend`` busy-looping processes (other work on the cores)."""
    import subprocess
    import sys

    out: dict[str, object] = {}
    for busy in sorted({0, contend}):
        hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(busy)]
        try:
            for policy in ("ACTIVE", "PASSIVE"):
                env = {**os.environ, "OMP_WAIT_POLICY": policy}
                child = subprocess.run([sys.executable, __file__, "--probe-decode"], env=env, capture_output=True, text=True, check=True)
                out[f"{policy}, {busy} busy processes"] = json.loads(child.stdout.strip().splitlines()[-1])
        finally:
            for hog in hogs:
                hog.kill()
                hog.wait()
    return out


def probe_states(records: list[HumanRecord]) -> dict[str, object]:
    import ctypes

    import llama_cpp

    llm = _llama(n_seq_max=5, kv_unified=True)
    prefix_text, outputs = _texts(records)
    prefixes = [llm.tokenize((prefix_text.replace(_source(records[0]), _source(r))).encode(), add_bos=True, special=False)[:500]
                for r in records[::16][:4]]  # fmt: skip
    suffix = llm.tokenize(outputs[0].encode(), add_bos=False, special=False)
    base = prefixes[0]
    _decode(llm, [(0, base, 0)])
    ctx = llm._ctx.ctx
    size = llama_cpp.llama_state_seq_get_size(ctx, 0)
    data = (ctypes.c_uint8 * size)()
    written = llama_cpp.llama_state_seq_get_data(ctx, data, size, 0)

    def restore() -> None:
        llm._ctx.kv_cache_seq_rm(0, 0, -1)
        llama_cpp.llama_state_seq_set_data(ctx, data, written, 0)

    saved = llm.save_state()
    result: dict[str, object] = {
        "prefix_tokens": len(base),
        "seq_state_bytes": int(written),
        "seq_state_save_ms": _median_ms(lambda: llama_cpp.llama_state_seq_get_data(ctx, data, size, 0)),
        "seq_state_restore_ms": _median_ms(restore),
        "llama_save_state_ms": _median_ms(llm.save_state, 3),
        "llama_load_state_ms": _median_ms(lambda: llm.load_state(saved), 3),
        "seq_cp_ms": _median_ms(lambda: (llm._ctx.kv_cache_seq_rm(1, 0, -1), llm._ctx.kv_cache_seq_cp(0, 1, 0, -1))),
    }
    llm._ctx.kv_cache_seq_rm(1, 0, -1)

    def output_decode() -> None:
        llm._ctx.kv_cache_seq_rm(0, len(base), -1)
        _decode(llm, [(0, suffix, len(base))])

    decode_ms = {}
    for stored in range(4):
        if stored:
            _decode(llm, [(stored, prefixes[stored], 0)])
        decode_ms[f"{stored}_other_prefixes_stored"] = _median_ms(output_decode, 7)
    result[f"decode_{len(suffix)}_token_output_ms"] = decode_ms
    return result


def probe_parallel(records: list[HumanRecord], sizes: tuple[int, ...] = (2, 4)) -> dict[str, object]:
    """k outputs (~90 tokens each) after one source: k decodes in sequence 0 vs k parallel sequences in one."""
    llm = _llama(n_seq_max=max(sizes) + 1, kv_unified=True)
    prefix_text, outputs = _texts(records)
    prefix = llm.tokenize(prefix_text.encode(), add_bos=True, special=False)
    tails = [llm.tokenize(o.encode(), add_bos=False, special=False) for o in outputs]
    return _sequential_vs_parallel(llm, prefix, tails, sizes)


def probe_parallel_suffixes(records: list[HumanRecord], sizes: tuple[int, ...] = (2, 4)) -> dict[str, object]:
    """The four-criteria workload's short decodes: after one output's shared-criteria prompt, each
    criterion's answer prefix (~10 tokens) in its own decode vs all of them as parallel sequences."""
    llm = _llama(n_seq_max=max(sizes) + 1, kv_unified=True)
    prefix_text, outputs = _texts(records)
    prefix = llm.tokenize((prefix_text + outputs[0].split("\n</output>")[0] + "\n</output>\n").encode(), add_bos=True, special=False)
    names = ("coherence", "consistency", "fluency", "relevance")
    tails = [llm.tokenize(f"Scores:\n- {name} (1-5): ".encode(), add_bos=False, special=False) for name in names]
    return {"suffix_tokens": [len(t) for t in tails], **_sequential_vs_parallel(llm, prefix, tails, sizes)}


def _sequential_vs_parallel(llm: Any, prefix: list[int], tails: list[list[int]], sizes: tuple[int, ...]) -> dict[str, object]:
    """Median ms of the first k ``tails`` after ``prefix``: one decode each in sequence 0, or one decode of k
    sequences that share the prefix's cells (``kv_cache_seq_cp``), the copies removed afterwards."""
    for start in range(0, len(prefix), llm.n_batch):
        _decode(llm, [(0, prefix[start : start + llm.n_batch], start)])
    n = len(prefix)

    def sequential(k: int) -> None:
        for tail in tails[:k]:
            llm._ctx.kv_cache_seq_rm(0, n, -1)
            _decode(llm, [(0, tail, n)])
        llm._ctx.kv_cache_seq_rm(0, n, -1)

    def parallel(k: int) -> None:
        for seq in range(1, k):
            llm._ctx.kv_cache_seq_cp(0, seq, 0, n)
        _decode(llm, [(seq, tail, n) for seq, tail in enumerate(tails[:k])])
        for seq in range(1, k):
            llm._ctx.kv_cache_seq_rm(seq, 0, -1)
        llm._ctx.kv_cache_seq_rm(0, n, -1)

    out: dict[str, object] = {"prefix_tokens": n}
    for k in sizes:
        seq_ms, par_ms = _median_ms(partial(sequential, k)), _median_ms(partial(parallel, k))
        out[str(k)] = {"sequential_ms": seq_ms, "parallel_ms": par_ms, "speedup": round(seq_ms / par_ms, 2)}
    return out


def probes(records: list[HumanRecord], contend: int) -> dict[str, object]:
    return {
        "omp_wait_policy_in_parent": os.environ.get("OMP_WAIT_POLICY"),
        "load_start": load(),
        "wait_policy": probe_wait_policy(contend),
        "states": probe_states(records),
        "parallel_sequences": probe_parallel(records),
        "parallel_short_suffixes": probe_parallel_suffixes(records),
        "load_end": load(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=2)
    parser.add_argument("--criterion", nargs="+", default=["consistency"], help="several: fine-grained, one request each")
    parser.add_argument("--template", default=DEFAULT_TEMPLATE, help="e.g. direct.likert.shared_criteria for several criteria")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--skip-off", action="store_true", help="skip the (slow) reuse-off phase")
    parser.add_argument(
        "--compare-parallel", action="store_true", help="also judge with parallel_suffixes=1 (one request per decode)"
    )
    parser.add_argument("--skip-interleaved", action="store_true")
    parser.add_argument("--n-gpu-layers", type=int, default=None, help="layers offloaded (default: all where llama.cpp has GPU offload)")
    parser.add_argument("--probes", action="store_true", help="measure the llama.cpp mechanisms instead (see above)")
    parser.add_argument("--contend", type=int, default=2, help="busy-looping processes beside the wait-policy probe")
    parser.add_argument("--probe-decode", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe_decode:
        print(json.dumps(probe_decode(subset(1))))
        return
    if args.probes:
        print(json.dumps(probes(subset(args.docs), args.contend), indent=2))
        return
    layers = default_gpu_layers() if args.n_gpu_layers is None else args.n_gpu_layers
    crits = [preset("summeval", name) for name in args.criterion]
    records = subset(args.docs)
    items = items_of(records)
    report: dict[str, object] = {
        "workload": f"{len(items)} SummEval items ({args.docs} documents x 16 systems) x {len(crits)} criteria "
        f"({', '.join(c.name for c in crits)}), geval (exact), template {args.template}",
        "cpu_count": os.cpu_count(),
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY"),
        "load_start": load(),
    }
    report["n_gpu_layers"] = layers
    report["raw"] = raw_rate(first_prompt(items[0], crits, args.template), args.repeats, layers)
    report["reuse_on"] = judged(items, crits, args.concurrency, args.template, n_gpu_layers=layers)
    if args.compare_parallel:
        report["reuse_on_one_at_a_time"] = judged(items, crits, args.concurrency, args.template, parallel_suffixes=1, n_gpu_layers=layers)
        report["one_at_a_time_over_parallel_wall"] = round(report["reuse_on_one_at_a_time"]["wall_s"] / report["reuse_on"]["wall_s"], 3)  # type: ignore[index]
    if not args.skip_off:
        report["reuse_off"] = judged(items, crits, args.concurrency, args.template, prefix_reuse=False, n_gpu_layers=layers)
        on_s, off_s = report["reuse_on"]["scores"], report["reuse_off"]["scores"]  # type: ignore[index]
        report["off_over_on_wall"] = round(report["reuse_off"]["wall_s"] / report["reuse_on"]["wall_s"], 2)  # type: ignore[index]
        report["max_score_difference_on_vs_off"] = round(max(abs(a - b) for a, b in zip(on_s, off_s) if a is not None and b is not None), 4)
    rate = report["raw"]["tokens_per_s"]  # type: ignore[index]
    report["throughput_vs_raw"] = round(report["reuse_on"]["evaluated_tokens_per_s"] / rate, 3)  # type: ignore[index]
    if not args.skip_interleaved:
        mixed = items_of(interleave(records))
        report["interleaved_lru"] = judged(mixed, crits, 1, args.template, n_gpu_layers=layers)
        report["interleaved_no_lru"] = judged(mixed, crits, 1, args.template, prefix_states=0, n_gpu_layers=layers)
    for phase in ("reuse_on", "reuse_on_one_at_a_time", "reuse_off", "interleaved_lru", "interleaved_no_lru"):
        if isinstance(entry := report.get(phase), dict):  # judged()'s row
            entry.pop("scores")
    report["load_end"] = load()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
