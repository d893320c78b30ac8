"""How much small numeric differences in the model's log-probabilities move the README example's fused scores, and
through which signals (issue 40, item 6).

A llama-cpp-python built for AVX-512 and one built for AVX2 only moved the README's first command's fused consistency
scores by up to 0.07 (measured by the maintainers on a machine with AVX-512). That comparison needs such a machine; this
script measures what can be measured on any: (1) the README example's signals and scores on the embedded model under
llama.cpp options that change how the CPU reduces (threads, batch size, prefix reuse), against the defaults; (2) each
signal's amplification, d score / d signal at each item (the fit's weight over its spread, times the calibration
map's slope); (3) emulated build jitter: Gaussian noise of a few sizes added to every token log-probability, the
signals and the score recomputed (no model call), and which signal carries the score's move.

    python benchmarks/cpu_jitter.py                       # all three parts (about 3-6 minutes on 2 cores)
    python benchmarks/cpu_jitter.py --no-variants         # parts 2 and 3 only (one model pass)
    python benchmarks/cpu_jitter.py --no-variants --save avx2.json            # on one build ...
    PYTHONPATH=/path/to/other/llama_cpp python benchmarks/cpu_jitter.py --no-variants --against avx2.json
                                                          # ... and on another: (4) what moved between the two builds

(3) also adds a constant to every token log-probability (a systematic shift, as kernels that round otherwise give),
of the conditional pass alone and of both passes.
"""

from __future__ import annotations

import asyncio
import json
import random
import statistics
import sys
import time
from pathlib import Path

from judgesdk.core import JudgeItem
from judgesdk.fused import CriterionModel, Evidence, bundled_for, extract, features
from judgesdk.providers import LlamaCppProvider, embedded_model_path, embedded_sha256

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "summaries.jsonl"
CRITERION = "consistency"  # the README's first command's
VARIANTS: dict[str, dict[str, object]] = {
    "defaults (n_threads every CPU, n_batch 512, reuse on)": {},
    "n_threads 1 (prompt and generation)": {"n_threads": 1},
    "n_threads_batch 1": {"n_threads_batch": 1},
    "n_batch 64": {"n_batch": 64},
    "prefix_reuse off": {"prefix_reuse": False},
}
NOISE = (1e-4, 1e-3, 1e-2)  # nats, per token
DRAWS = 200


def _items() -> list[JudgeItem]:
    rows = [json.loads(line) for line in EXAMPLE.read_text().splitlines() if line.strip()]
    return [JudgeItem(id=r["id"], output=r["output"], source=r["source"]) for r in rows]


def _model() -> CriterionModel:
    fitted = bundled_for(embedded_sha256())[0]  # the news fit, which the README example uses
    model = fitted.for_criterion(CRITERION, has_reference=False)
    assert model is not None
    return model


async def _evidence(options: dict[str, object], items: list[JudgeItem]) -> tuple[list[Evidence], float, str]:
    """Each item's evidence, the seconds it took and the llama.cpp build that computed it (as cache keys name it)."""
    provider = LlamaCppProvider(embedded_model_path(), model_name="gemma3-270m-q4_k_m", model_sha256=embedded_sha256(), **options)
    started = time.perf_counter()
    try:
        found = [await extract(provider, item, unconditional=True) for item in items]
    finally:
        await provider.aclose()
    return found, time.perf_counter() - started, provider.build


def _score(model: CriterionModel, values: dict[str, float]) -> float:
    return model.predict(values)[0]


def _slope(model: CriterionModel, values: dict[str, float], name: str, h: float = 1e-4) -> float:
    """d score / d signal at ``values`` (central difference)."""
    up, down = dict(values), dict(values)
    up[name] += h
    down[name] -= h
    return (_score(model, up) - _score(model, down)) / (2 * h)


def _jittered(evidence: Evidence, sigma: float, rng: random.Random) -> Evidence:
    noisy = evidence.model_copy()
    noisy.conditional = [v + rng.gauss(0.0, sigma) for v in evidence.conditional]
    if evidence.unconditional is not None:
        noisy.unconditional = [v + rng.gauss(0.0, sigma) for v in evidence.unconditional]
    return noisy


def _argument(name: str) -> str | None:
    args = sys.argv[1:]
    return args[args.index(name) + 1] if name in args else None


def _shifted(evidence: Evidence, delta: float, both: bool) -> Evidence:
    moved = evidence.model_copy()
    moved.conditional = [v + delta for v in evidence.conditional]
    if both and evidence.unconditional is not None:
        moved.unconditional = [v + delta for v in evidence.unconditional]
    return moved


def main() -> None:
    variants = "--no-variants" not in sys.argv[1:]
    save, against = _argument("--save"), _argument("--against")
    items, model = _items(), _model()
    print(f"{CRITERION} fit reads {model.features}")
    base, seconds, build = asyncio.run(_evidence({}, items))
    base_values = [features(e) for e in base]
    base_scores = [_score(model, v) for v in base_values]
    print(f"\n== scores on this build (defaults, {seconds:.0f} s) ==")
    print(f"  build: {build}")
    for item, score in zip(items, base_scores):
        print(f"  {item.id:<24} {score:.4f}")
    if save:
        Path(save).write_text(json.dumps({"build": build, "evidence": [e.model_dump(mode="json") for e in base]}))

    if variants:
        print("\n== (1) llama.cpp options against the defaults: largest |difference| over the 6 items ==")
        print(f"  {'variant':<48} {'score':>8}  " + "  ".join(f"{f:>10}" for f in model.features))
        for name, options in list(VARIANTS.items())[1:]:
            found, took, _ = asyncio.run(_evidence(options, items))
            values = [features(e) for e in found]
            d_score = max(abs(_score(model, v) - s) for v, s in zip(values, base_scores))
            d_feat = [max(abs(v[f] - b[f]) for v, b in zip(values, base_values)) for f in model.features]
            print(f"  {name:<48} {d_score:8.2g}  " + "  ".join(f"{d:10.2g}" for d in d_feat) + f"   ({took:.0f} s)")

    print("\n== (2) amplification: d score / d signal (score points per unit of the signal), per item ==")
    print(f"  {'item':<24} " + "  ".join(f"{f:>10}" for f in model.features))
    slopes = {f: [_slope(model, v, f) for v in base_values] for f in model.features}
    for i, item in enumerate(items):
        print(f"  {item.id:<24} " + "  ".join(f"{slopes[f][i]:10.3f}" for f in model.features))
    print("  weight / spread       " + "  ".join(f"{c / s:10.3f}" for c, s in zip(model.coef, model.spread)))

    print(f"\n== (3) emulated build jitter: N(0, sigma) nats on every token log-probability, {DRAWS} draws per item ==")
    rng = random.Random(40)
    for sigma in NOISE:
        moves: list[float] = []
        carried = {f: 0.0 for f in model.features}
        for i, (evidence, here, score) in enumerate(zip(base, base_values, base_scores)):
            for _ in range(DRAWS):
                noisy = features(_jittered(evidence, sigma, rng))
                moves.append(abs(_score(model, noisy) - score))
                for f in model.features:  # each signal's own share: its move times its amplification
                    carried[f] += abs((noisy[f] - here[f]) * slopes[f][i])
        total = sum(carried.values()) or 1.0
        moves.sort()
        share = "  ".join(f"{f} {100 * carried[f] / total:.0f} %" for f in sorted(carried, key=lambda name: carried[name], reverse=True))
        print(
            f"  sigma {sigma:g}: |score move| median {statistics.median(moves):.2g}, 95th {moves[int(0.95 * len(moves))]:.2g},"
            f" max {moves[-1]:.2g}; carried by {share}"
        )
    for delta in (0.01, 0.05):
        for both in (False, True):
            moved = [abs(_score(model, features(_shifted(e, delta, both))) - s) for e, s in zip(base, base_scores)]
            where = "both passes" if both else "the conditional pass"
            print(f"  every token of {where} +{delta:g} nats: |score move| {min(moved):.3f}-{max(moved):.3f}")

    if against:
        other = json.loads(Path(against).read_text())
        print(f"\n== (4) this build ({build}) against {other['build']} ==")
        print(f"  {'item':<24} {'score':>8} {'max|dlp|':>9} {'mean dlp':>9}  " + "  ".join(f"{f:>10}" for f in model.features))
        for i, (item, evidence, saved) in enumerate(zip(items, base, other["evidence"])):
            theirs = Evidence.model_validate(saved)
            deltas = [a - b for a, b in zip(evidence.conditional + (evidence.unconditional or []), theirs.conditional + (theirs.unconditional or []))]
            mine, old = base_values[i], features(theirs)
            d_score = base_scores[i] - _score(model, old)
            print(
                f"  {item.id:<24} {d_score:+8.4f} {max(abs(d) for d in deltas):9.2g} {statistics.mean(deltas):+9.2g}  "
                + "  ".join(f"{mine[f] - old[f]:+10.2g}" for f in model.features)
            )


if __name__ == "__main__":
    main()
