"""Pairwise ranking cost vs quality at N = 12 (issue 6, benchmark 4): full matrix, merge sort on calibrated
both-order probabilities, and Bradley-Terry with active pair selection.

Real model: for each of the first ``--docs`` SummEval documents, its 12 abstractive summaries (M8..M23)
are ranked on ``--criterion`` by the embedded model (exact label probabilities, 004's summarisation
prompt ``pairwise.compare.summeval``). The full matrix runs first through a disk cache; ``sort`` and
``active`` then ask for subsets of the same ordered comparisons, so they are answered from the cache and
cost no model time, while ``comparisons_planned`` still counts every comparison they asked for.

Simulated judge (``--simulate-docs``, clearly not the model): the same strategies on every SummEval
document with a scripted comparator whose P(first wins) = sigmoid((h_i - h_j) / tau + gamma + noise),
h the mean expert score, to show the algorithms' cost/quality trade-off with a stable sample.

Sample-level correlation (000 App. B): Spearman between a ranking's scores and the human scores within
each document, averaged over documents. "kept" = that mean over the full matrix's; "agreement" = mean
Spearman between a strategy's scores and the full matrix's win ratios.

    .venv/bin/python benchmarks/pairwise_sort.py --docs 2 --simulate-docs 100
"""

from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import statistics
import tempfile
import time
from collections.abc import Sequence

import numpy as np
from scipy.stats import bootstrap, spearmanr

from judgesdk.core import Criterion
from judgesdk.meta import HumanRecord, load_dataset
from judgesdk.prompting import criterion as preset
from judgesdk.provider import CachedProvider, Provider, as_text, open_cache
from judgesdk.providers import ScriptedProvider, ScriptedReply
from judgesdk.scorers import ScorerOptions, rank

ABSTRACTIVE = ("M8", "M9", "M10", "M11", "M12", "M13", "M14", "M15", "M17", "M20", "M22", "M23")
FULL = 12 * 11


def strategies(active_budget: int) -> dict[str, dict[str, object]]:
    return {
        "full": {"strategy": "full"},
        "sort": {"strategy": "sort"},
        "active_bt": {"strategy": "bradley-terry", "selection": "active", "budget": active_budget},
        "symmetric_bt": {"strategy": "bradley-terry", "selection": "symmetric", "budget": active_budget},
    }


def documents(records: Sequence[HumanRecord], n: int | None) -> list[list[HumanRecord]]:
    by_doc: dict[str, list[HumanRecord]] = {}
    for record in records:
        if record.system_id in ABSTRACTIVE:
            by_doc.setdefault(record.doc_id, []).append(record)
    groups = [sorted(g, key=lambda r: ABSTRACTIVE.index(r.system_id)) for g in by_doc.values() if len(g) == 12]
    return groups[:n] if n else groups


def spearman(a: Sequence[float | None], b: Sequence[float]) -> float | None:
    pairs = [(x, y) for x, y in zip(a, b) if x is not None]
    if len(pairs) < 3 or len({x for x, _ in pairs}) < 2 or len({y for _, y in pairs}) < 2:
        return None  # a constant group has no correlation (skipped and counted, never scored 0)
    return float(spearmanr([x for x, _ in pairs], [y for _, y in pairs]).statistic)


KEYS = ("calls", "human", "agreement", "wall")


async def rank_group(
    provider: Provider, group: list[HumanRecord], crit: Criterion, plans: dict[str, dict[str, object]], options: ScorerOptions
) -> dict[str, dict[str, list]]:
    """Every strategy on one document's 12 outputs: calls, correlation with humans and with the full matrix."""
    rows: dict[str, dict[str, list]] = {name: {key: [] for key in KEYS} for name in plans}
    human = [r.scores[crit.name] for r in group]
    full_ratios: list[float] = []
    for name, plan in plans.items():  # "full" first: the others are compared with it
        started = time.perf_counter()
        result = await rank(provider, [r.output for r in group], source=group[0].source, criterion=crit, options=options, seed=0, **plan)  # type: ignore[arg-type]
        rows[name]["wall"].append(time.perf_counter() - started)
        full_ratios = [x or 0.0 for x in result.win_ratios] if name == "full" else full_ratios
        rows[name]["calls"].append(result.comparisons_planned)
        rows[name]["human"].append(spearman(result.scores, human))
        rows[name]["agreement"].append(spearman(result.scores, full_ratios))
    return rows


def merged(parts: list[dict[str, dict[str, list]]]) -> dict[str, dict[str, list]]:
    return {name: {key: [v for part in parts for v in part[name][key]] for key in KEYS} for name in parts[0]}


async def rank_documents(
    provider: Provider, docs: list[list[HumanRecord]], crit: Criterion, plans: dict[str, dict[str, object]], options: ScorerOptions
) -> dict[str, object]:
    return summarise(merged([await rank_group(provider, group, crit, plans, options) for group in docs]))


def summarise(rows: dict[str, dict[str, list]]) -> dict[str, object]:
    def mean(values: list) -> float | None:
        kept = [v for v in values if v is not None]
        return round(statistics.fmean(kept), 4) if kept else None

    full_rho = mean(rows["full"]["human"])
    out: dict[str, object] = {}
    for name, row in rows.items():
        rho = mean(row["human"])
        out[name] = {
            "calls_mean": round(statistics.fmean(row["calls"]), 1),
            "calls_vs_full": round(statistics.fmean(row["calls"]) / FULL, 3),
            "sample_spearman": rho,
            "kept_vs_full": round(rho / full_rho, 3) if rho is not None and full_rho else None,
            "kept_ci95": kept_interval(rows["full"]["human"], row["human"]) if name != "full" else None,
            "agreement_with_full": mean(row["agreement"]),
            "constant_groups_skipped": sum(v is None for v in row["human"]),
            "wall_s": round(sum(row["wall"]), 2),
        }
    return out


def kept_interval(full: list[float | None], strategy: list[float | None]) -> list[float] | None:
    """95 % bootstrap interval (BCa, 2,000 resamples of documents) of mean(strategy) / mean(full), the
    documents' two correlations resampled together; None with fewer than 3 documents where both exist."""
    pairs = [(f, s) for f, s in zip(full, strategy) if f is not None and s is not None]
    if len(pairs) < 3:
        return None
    res = bootstrap(
        ([f for f, _ in pairs], [s for _, s in pairs]), lambda f, s: np.mean(s) / np.mean(f), paired=True,
        vectorized=False, n_resamples=2000, confidence_level=0.95, random_state=0,
    )  # fmt: skip
    return [round(float(res.confidence_interval.low), 3), round(float(res.confidence_interval.high), 3)]


def simulated_judge(group_scores: dict[str, float], tau: float, gamma: float, noise: float, seed: int) -> ScriptedProvider:
    """P(first wins) = sigmoid((h_first - h_second) / tau + gamma + e), e ~ N(0, noise) fixed per ordered pair."""
    rng = random.Random(seed)
    table: dict[tuple[str, str], float] = {}

    def rule(request):
        text = as_text(request.messages)
        first, second = sorted((o for o in group_scores if o in text), key=text.index)
        if (first, second) not in table:
            logit = (group_scores[first] - group_scores[second]) / tau + gamma + rng.gauss(0, noise)
            table[(first, second)] = 1 / (1 + math.exp(-logit))
        p = table[(first, second)]
        return ScriptedReply(label_probs={"A": p, "B": 1 - p})

    return ScriptedProvider(rule)


async def simulate(docs: list[list[HumanRecord]], crit: Criterion, plans: dict[str, dict[str, object]], args: argparse.Namespace) -> dict[str, object]:
    """The strategies with a scripted comparator built from each document's human scores (one per document)."""
    parts = []
    for k, group in enumerate(docs):
        tagged = [r.model_copy(update={"output": f"[S{i:02d}] {r.output}"}) for i, r in enumerate(group)]  # findable markers
        judge = simulated_judge({r.output: r.scores[crit.name] for r in tagged}, args.tau, args.gamma, args.noise, seed=k)
        parts.append(await rank_group(judge, tagged, crit, plans, ScorerOptions(dataset="summeval")))
    return summarise(merged(parts))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--docs", type=int, default=2, help="documents ranked by the real model (0: none)")
    parser.add_argument("--simulate-docs", type=int, default=100, help="documents ranked by the simulated judge (0: none)")
    parser.add_argument("--criterion", default="coherence")
    parser.add_argument("--active-budget", type=int, default=38, help="ordered comparisons for the Bradley-Terry strategies")
    parser.add_argument("--tau", type=float, default=1.0)
    parser.add_argument("--gamma", type=float, default=0.5)
    parser.add_argument("--noise", type=float, default=1.0)
    parser.add_argument("--cache", default=None, help="cache directory for the real-model comparisons (default: a temporary one)")
    args = parser.parse_args()
    crit = preset("summeval", args.criterion)
    plans = strategies(args.active_budget)
    records = load_dataset("summeval")
    report: dict[str, object] = {"n_outputs": 12, "full_matrix_calls": FULL, "criterion": crit.name, "load_start": os.getloadavg()}
    if args.simulate_docs:
        report["simulated"] = {"docs": args.simulate_docs, "tau": args.tau, "gamma": args.gamma, "noise": args.noise,
                               **asyncio.run(simulate(documents(records, args.simulate_docs), crit, plans, args))}  # fmt: skip
    if args.docs:
        from judgesdk.providers import LlamaCppProvider

        with tempfile.TemporaryDirectory() as scratch:
            provider = CachedProvider(LlamaCppProvider.from_options(), open_cache(args.cache or scratch))
            options = ScorerOptions(dataset="summeval")
            report["model"] = {"docs": args.docs, **asyncio.run(rank_documents(provider, documents(records, args.docs), crit, plans, options))}
            asyncio.run(provider.aclose())
    report["load_end"] = os.getloadavg()
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
