"""Where local judging's throughput goes against the raw prompt-evaluation rate (issue 15, item 3).

"Throughput vs raw" (``benchmarks/local_prefix.py``) divides the tokens a judging run evaluates per second
by llama-cpp-python's rate on one whole judging prompt evaluated from scratch. Judging with prefix reuse
evaluates something else: each request is one short decode (an output's ~110 tokens with one criterion,
~10 with four) at the end of a long cached context, with logits at two positions. This script times the
pieces on the first SummEval item's one-criterion prompt (``--criterion``, default template), each a
median of ``--repeats`` interleaved runs on one raw ``Llama`` with the provider's settings:

* ``raw``: the whole prompt from an empty KV cache, logits at the last token (the benchmark's "raw");
* ``tail_long``: only the request's own part (the output onwards, what judging evaluates) after the
  shared prefix is cached, one logits row; ``tail_long_2rows``: the same with two rows (the label path);
  ``tail_long_4rows``: four (the provider pads a decode's rows of logits to four, for reproducibility);
* ``tail_short``: the same tokens from an empty cache (no long context to attend over);
* ``tail_halves``: the request's part in two decodes (the fixed cost of a decode);
* with ``--flash-attn``, ``raw`` and ``tail_long`` again on a context with flash attention.

Then, in a judging run of ``--docs`` documents through ``LlamaCppProvider`` (prefix reuse, the default),
the share of wall time spent inside ``llama_decode`` (the rest is Python: tokenising, the prefix trie,
label maths, state saves, the event loop).

    .venv/bin/python benchmarks/decode_split.py --repeats 7 --docs 2 --flash-attn
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from typing import Any

import local_prefix as lp

from judgesdk.prompting import criterion as preset
from judgesdk.providers import embedded_model_path


def _llama(flash_attn: bool = False) -> Any:  # a llama_cpp.Llama (llama_cpp has no type information)
    import llama_cpp

    threads = os.cpu_count() or 1
    return llama_cpp.Llama(
        model_path=str(embedded_model_path()), n_ctx=4096, n_batch=512, n_threads=threads, n_threads_batch=threads,
        logits_all=False, flash_attn=flash_attn, verbose=False,
    )  # fmt: skip


def _decode(llm: Any, tokens: list[int], start: int, rows: int = 1) -> float:
    """One decode of ``tokens`` at positions ``start``.. in sequence 0, logits at the last ``rows``; seconds."""
    batch = llm._batch.batch
    for i, token in enumerate(tokens):
        batch.token[i], batch.pos[i], batch.seq_id[i][0], batch.n_seq_id[i] = token, start + i, 0, 1
        batch.logits[i] = i >= len(tokens) - rows
    batch.n_tokens = len(tokens)
    started = time.perf_counter()
    llm._ctx.decode(llm._batch)
    return time.perf_counter() - started


def split(prompt: str, own: str, repeats: int, flash_attn: bool) -> dict[str, object]:
    """The pieces above, in ms (medians), for ``prompt`` whose request-specific part starts at ``own``."""
    llm = _llama()
    tokens = llm.tokenize(prompt.encode(), add_bos=True, special=False)
    before = llm.tokenize(prompt[: prompt.index(own)].encode(), add_bos=True, special=False)
    shared = next((i for i, (a, b) in enumerate(zip(before, tokens)) if a != b), len(before))
    head, tail = tokens[:shared], tokens[shared:]
    chunks = [tokens[i : i + 512] for i in range(0, len(tokens), 512)]
    half = len(tail) // 2

    def clear(keep: int = 0) -> None:
        llm._ctx.kv_cache_seq_rm(0, keep, -1)

    def raw(model: Any) -> float:
        model._ctx.kv_cache_seq_rm(0, 0, -1)
        spent, at = 0.0, 0
        for piece in chunks:  # as Llama.eval does: n_batch tokens per decode, logits at the very end
            spent += _decode(model, piece, at, rows=1 if at + len(piece) == len(tokens) else 0)
            at += len(piece)
        return spent

    def cached_head(model: Any) -> None:
        model._ctx.kv_cache_seq_rm(0, 0, -1)
        at = 0
        for start in range(0, len(head), 512):
            _decode(model, head[start : start + 512], at, rows=0)
            at += len(head[start : start + 512])

    times: dict[str, list[float]] = {k: [] for k in ("raw", "tail_long", "tail_long_2rows", "tail_long_4rows", "tail_short", "tail_halves")}
    fa = _llama(flash_attn=True) if flash_attn else None
    if fa is not None:
        times.update({"raw_flash_attn": [], "tail_long_flash_attn": []})
    for _ in range(repeats):
        times["raw"].append(raw(llm))
        cached_head(llm)
        for name, rows in (("tail_long", 1), ("tail_long_2rows", 2), ("tail_long_4rows", 4)):
            clear(len(head))
            times[name].append(_decode(llm, tail, len(head), rows))
        clear(len(head))
        times["tail_halves"].append(_decode(llm, tail[:half], len(head), 0) + _decode(llm, tail[half:], len(head) + half, 1))
        clear(0)
        times["tail_short"].append(_decode(llm, tail, 0, 1))
        if fa is not None:
            times["raw_flash_attn"].append(raw(fa))
            cached_head(fa)
            times["tail_long_flash_attn"].append(_decode(fa, tail, len(head), 1))
    llm.close()
    if fa is not None:
        fa.close()
    ms = {k: round(statistics.median(v) * 1000, 2) for k, v in times.items()}
    out: dict[str, object] = {"prompt_tokens": len(tokens), "shared_tokens": len(head), "own_tokens": len(tail), "ms": ms}
    rate = len(tokens) / ms["raw"] * 1000
    out["tokens_per_s"] = {
        "raw": round(rate, 1),
        "tail_long": round(len(tail) / ms["tail_long"] * 1000, 1),
        "tail_short": round(len(tail) / ms["tail_short"] * 1000, 1),
    }
    out["tail_long_vs_raw"] = round(out["tokens_per_s"]["tail_long"] / rate, 3)  # type: ignore[index]
    out["extra_ms"] = {
        "long_context": round(ms["tail_long"] - ms["tail_short"], 2),
        "second_logits_row": round(ms["tail_long_2rows"] - ms["tail_long"], 2),
        "rows_3_and_4": round(ms["tail_long_4rows"] - ms["tail_long_2rows"], 2),
        "second_decode": round(ms["tail_halves"] - ms["tail_long"], 2),
    }
    if fa is not None:
        out["flash_attn_speedup"] = {"raw": round(ms["raw"] / ms["raw_flash_attn"], 3), "tail_long": round(ms["tail_long"] / ms["tail_long_flash_attn"], 3)}
    return out


def decode_share(docs: int, criterion: str) -> dict[str, object]:
    """A judging run's wall time and the part of it inside ``llama_decode``."""
    import llama_cpp._internals as internals

    spent = [0.0, 0]
    original = internals.LlamaContext.decode

    def timed(self: Any, batch: Any) -> Any:  # LlamaContext.decode, timed
        started = time.perf_counter()
        try:
            return original(self, batch)
        finally:
            spent[0] += time.perf_counter() - started
            spent[1] += 1

    items = lp.items_of(lp.subset(docs))
    internals.LlamaContext.decode = timed  # type: ignore[method-assign]
    try:
        run = lp.judged(items, [preset("summeval", criterion)], 4, lp.DEFAULT_TEMPLATE)
    finally:
        internals.LlamaContext.decode = original  # type: ignore[method-assign]
    wall = float(run["wall_s"])  # type: ignore[arg-type]
    return {
        "wall_s": wall, "decode_s": round(spent[0], 2), "decodes": spent[1], "decode_share": round(spent[0] / wall, 3),
        "tokens_evaluated": run["counters"]["tokens_evaluated"], "load": run["load"],  # type: ignore[index]
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--docs", type=int, default=2, help="documents of the judging run (0: skip it)")
    parser.add_argument("--criterion", default="consistency")
    parser.add_argument("--flash-attn", action="store_true", help="also time raw and tail_long with flash attention")
    args = parser.parse_args()
    item = lp.items_of(lp.subset(1))[0]
    crit = preset("summeval", args.criterion)
    prompt = lp.first_prompt(item, [crit], lp.DEFAULT_TEMPLATE)
    report: dict[str, object] = {"load_start": lp.load(), "split": split(prompt, item.output[:40], args.repeats, args.flash_attn)}
    if args.docs:
        report["judging"] = decode_share(args.docs, args.criterion)
    report["load_end"] = lp.load()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
