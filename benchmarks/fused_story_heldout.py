"""The shipped story fit on HANNA prompts it never saw (issue 27, item 2): the check nested CV cannot give.

    python benchmarks/fused_signals.py --dataset hanna --no-reference --no-unconditional --sample-docs 96 --seed 27 \\
        --out benchmarks/out/signals-heldout        # after copying the fit's signals there: only new prompts are judged
    python benchmarks/fused_story_heldout.py [--signals benchmarks/out/signals-heldout/hanna.jsonl]

The story fit lists the prompts it was fitted on (``data.groups``: 39 of HANNA's 96). Every other prompt in the
signal file is scored by the shipped file exactly as ``auto`` scores it (no refit, no choice made on these
prompts), then compared with HANNA's human scores: per-prompt Spearman with a 95 % bootstrap CI over prompts,
pooled Spearman, system-level Kendall, the 80 % interval coverage with its Clopper-Pearson CI and item count, the
share of stories inside the fit's envelope, and the best single signal chosen on these held-out prompts themselves
(the optimistic comparison: it sees the answers). HANNA's ``reference`` is the Human system's own story, so no
reference signal competes. Model-free once the signals exist.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fused_domains import apply, fmt, load  # noqa: E402

from judgesdk.fused import bundled  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--signals", type=Path, default=Path("benchmarks/out/signals-heldout/hanna.jsonl"))
    parser.add_argument("--json", type=Path, default=Path("benchmarks/out/fused_story_heldout.json"))
    args = parser.parse_args()
    if not args.signals.exists():
        print(f"{args.signals} not found: see this script's docstring", file=sys.stderr)
        return 0
    story = next(f for f in bundled() if f.domain == "story")
    seen = set(story.data["groups"])  # type: ignore[call-overload]
    rows = [r for r in load(args.signals, "hanna") if r["doc_id"] not in seen]
    prompts = sorted({r["doc_id"] for r in rows})
    if len(prompts) < 3:
        print(f"{len(prompts)} unseen prompts in {args.signals}: nothing to measure", file=sys.stderr)
        return 0
    report = apply(story, rows, reference=False)
    report["prompts"] = prompts
    print(f"The shipped story fit on {len(prompts)} HANNA prompts it never saw ({len(rows)} stories; "
          f"{report['inside_envelope']} inside its envelope)\n")  # fmt: skip
    print("| criterion | per-prompt Spearman [95 % CI] | pooled | system Kendall | best single signal on these prompts | "
          "80 % interval coverage [95 % CI], items | nested-CV figure on the fitted prompts |")  # fmt: skip
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, variants in story.criteria.items():
        part = report.get(name)
        if not isinstance(part, dict):
            continue
        cov, best = part["coverage"], part["best_single"]
        cv = variants[0].cv
        print(f"| {name} | {fmt(part['per_group'])} [{fmt(part['ci'][0])}, {fmt(part['ci'][1])}] | {fmt(part['pooled'])} | "
              f"{fmt(part['system_kendall'])} | `{best['signal']}` {fmt(best['per_group'])} | {fmt(cov['share'])} "
              f"[{fmt(cov['ci_low'])}, {fmt(cov['ci_high'])}], {cov['items']} | {fmt(cv.get('per_doc_spearman'))} |")  # fmt: skip
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=1))
    print(f"\nreport: {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
