"""How the default local judge scores degenerate outputs next to the summaries humans rated best.

    python benchmarks/fused_degenerate.py [--docs 5] [--config examples/local.toml]

For each of the first ``--docs`` SummEval documents (natural text), three degenerate outputs are judged on
all four criteria with the configured judge (method auto: the fused judge on the embedded model):
the source's first three sentences copied, a one-word output, and one sentence repeated four times (the
first sentence of the summary humans rated most coherent). An empty output is refused by the SDK
(InputError), so it has no score to compare. Printed per criterion: each degenerate kind's mean score,
the mean score of the document's human-top-3 summaries, and in how many documents the degenerate output
scored above the best of them.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

from judgesdk.core import InputError, JudgeItem
from judgesdk.judging import Judge
from judgesdk.meta import item_of, load_dataset, natural, select, shared_data_dir
from judgesdk.prompting import criteria_for

CRITERIA = ("coherence", "consistency", "fluency", "relevance")


def degenerate(source: str, best: str) -> dict[str, str]:
    sentences = re.split(r"(?<=[.!?])\s+", source.strip())
    first = re.split(r"(?<=[.!?])\s+", best.strip())[0]
    word = re.findall(r"[A-Za-z]+", source)[0]
    return {"lead-3 copy": " ".join(sentences[:3]), "one word": word, "one sentence x4": " ".join([first] * 4)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=5)
    parser.add_argument("--config", type=Path, default=Path("examples/local.toml"))
    args = parser.parse_args()
    if shared_data_dir() is None:
        print("shared data not found (../shared/data): nothing to measure", file=sys.stderr)
        return 0
    records = [natural(r) for r in select(load_dataset("summeval"), docs=args.docs)]
    criteria = [c for c in criteria_for("summeval") if c.name in CRITERIA]
    try:
        JudgeItem(output="", source="x")
    except InputError as exc:
        print(f"empty output: refused ({exc})")
    by_doc: dict[str, list] = {}
    for record in records:
        by_doc.setdefault(record.doc_id, []).append(record)
    table: dict[tuple[str, str], list[float]] = {}
    above: dict[tuple[str, str], int] = {}
    with Judge.from_config(args.config) as judge:
        for doc, group in by_doc.items():
            best_coherent = max(group, key=lambda r: r.scores["coherence"])
            fakes = degenerate(group[0].source or "", best_coherent.output)
            for crit in criteria:
                top = sorted(group, key=lambda r: -r.scores[crit.name])[:3]
                top_scores = [r.score for r in judge.score_many([item_of(r) for r in top], criterion=crit)]
                table.setdefault((crit.name, "human top-3"), []).extend(s for s in top_scores if s is not None)
                for kind, text in fakes.items():
                    result = judge.score(text, source=group[0].source, criterion=crit)
                    table.setdefault((crit.name, kind), []).append(result.score if result.score is not None else float("nan"))
                    if result.score is not None and result.score > max(s for s in top_scores if s is not None):
                        above[(crit.name, kind)] = above.get((crit.name, kind), 0) + 1
            print(f"{doc}: done", file=sys.stderr)
    print(f"| criterion | output | mean score | docs where it beat the best human-top-3 summary (of {len(by_doc)}) |")
    print("| --- | --- | --- | --- |")
    for (name, kind), values in table.items():
        mark = "" if kind == "human top-3" else str(above.get((name, kind), 0))
        print(f"| {name} | {kind} | {sum(values) / len(values):.2f} | {mark} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
