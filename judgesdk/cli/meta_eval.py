"""``judgesdk meta-eval``: how well does a judge agree with humans on a benchmark, and can it be trusted?

    judgesdk meta-eval --human ../shared/data/summeval.jsonl --predictions preds.jsonl \\
        --dimension coherence [--parse rts|mcq] [--level sample,summary,system] \\
        [--method spearman,pearson,kendall] [--convention skip-and-count] \\
        [--predictions-b mcq.jsonl --parse-b mcq] [--pairwise h2h.jsonl] \\
        [--duplicates last|first] [--challenge-order average|dimension] \\
        [--bootstrap 1000] [--json] [--report DIR]

Prints correlations at each level with the definition computed (000 App. B), counts of joined,
unmatched and unparsed items, per-system correlations P_i and their spread (001 eq. 2),
the meta-correlation M (001 eq. 3), #CP (001 §4.2.1), and with ``--predictions-b`` the agreement
R_i of two methods (001 eq. 4, Table 7); with ``--pairwise`` (added to a run with ``--predictions``)
positional bias (004 §3.5) and head-to-head #CP. A doc_id/system_id written twice keeps its last
line (``--duplicates first`` keeps the first); #CP's challenge set orders systems by the human score
averaged over every dimension, as 001 does (``--challenge-order dimension``: the evaluated one).
``--json`` prints one JSON object instead of tables. Exit codes: 0 done, 3 bad input or a bad flag
value (the message says what to fix).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from judgesdk.core import ExitCode, InputError
from judgesdk.meta import (
    CHALLENGE_ORDERS,
    CONVENTIONS,
    KEEP,
    LEVEL_DEFINITIONS,
    LEVELS,
    JudgeReport,
    MetaEvalResult,
    MissingDependencyError,
    check_challenge_order,
    check_keep,
    check_parse_mode,
    load_jsonl,
    load_predictions,
    meta_evaluate,
    read_pairwise,
    require_matplotlib,
    scale_for,
    write_report,
)
from judgesdk.provider import CostModel
from judgesdk.stats import METHODS

__all__ = ["register", "run_meta_eval"]



def register(subparsers: Any) -> None:
    """Add the ``meta-eval`` subcommand to an ``argparse`` subparsers object."""
    p = subparsers.add_parser(
        "meta-eval",
        help="correlate a judge's predictions with human scores (levels, P_i, M, #CP, R_i)",
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--human", type=Path, required=True, help="normalized human JSONL (../shared/data/<dataset>.jsonl)")
    # flag values are checked in evaluate_args, not by argparse, so that a bad one exits 3 with the fix
    p.add_argument("--predictions", type=Path, help="JSONL: doc_id, system_id and a numeric score or a raw response (required)")
    p.add_argument("--dimension", required=True, help="human score dimension, e.g. coherence")
    p.add_argument("--parse", type=str.lower, default="rts", help="how to read 'response' text: rts numbers (default) or mcq letters")
    p.add_argument("--scale", help="scale LOW-HIGH for parsing (default: the dataset preset, else inferred from the human scores)")
    p.add_argument("--level", default="sample,summary,system", help=f"comma list of {', '.join(LEVELS)} or 'all' (default sample,summary,system)")
    p.add_argument("--method", default="all", help=f"comma list of {', '.join(METHODS)} or 'all' (default)")
    p.add_argument("--convention", default="skip-and-count", choices=list(CONVENTIONS), help="how undefined correlations and parse failures count")
    p.add_argument("--predictions-b", type=Path, help="a second method's predictions: R_i agreement per system (001 eq. 4)")
    p.add_argument("--parse-b", type=str.lower, help="how to read --predictions-b responses: rts or mcq (default: --parse)")
    p.add_argument("--tolerance", type=float, help="reliability tolerance r: list systems with R_i <= r (001 §5)")
    p.add_argument("--pairwise", type=Path, help="JSONL head-to-head verdicts: doc_id, first, second, winner|response (with --predictions)")
    p.add_argument("--duplicates", type=str.lower, default="last", help=f"which line of a repeated doc_id/system_id counts: {' or '.join(KEEP)} (default last, as a results ledger and 001's scripts)")
    p.add_argument("--challenge-order", type=str.lower, default="average", help="order of systems for #CP's challenge set: " + "; ".join(f"{k}: {v}" for k, v in CHALLENGE_ORDERS.items()) + " (default average)")
    p.add_argument("--bootstrap", type=int, default=0, metavar="N", help="bootstrap CIs with N document resamples (default 0: none)")
    p.add_argument("--seed", type=int, default=0, help="seed of the bootstrap (default 0)")
    p.add_argument("--review-threshold", type=float, default=0.5, help="risk at which an item needs human review (default 0.5)")
    p.add_argument("--usd-per-million-input", type=float, help="price of input tokens, for cost per 1,000 judgements")
    p.add_argument("--usd-per-million-output", type=float, help="price of output tokens")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument("--report", type=Path, metavar="DIR", help="write PNG/HTML plots (001 Figs. 1 and 3; needs matplotlib)")
    p.set_defaults(func=run_meta_eval)


def _split(text: str, known: tuple[str, ...], what: str) -> list[str]:
    if text.strip().lower() == "all":
        return list(known)
    parts = [p.strip().lower() for p in text.split(",") if p.strip()]
    if not parts:
        raise InputError(f"--{what} is empty: give a comma list of {', '.join(known)}")
    return parts


def _check_flags(args: argparse.Namespace) -> None:
    """Flag combinations and values argparse cannot check, as InputErrors that name the fix."""
    if args.predictions is None:
        extra = " (--pairwise adds head-to-head indicators to a run over pointwise predictions)" if args.pairwise else ""
        raise InputError(f"--predictions is required: the JSONL of the judge's scores or responses to correlate with --human{extra}")
    check_parse_mode(args.parse, "--parse")
    if args.parse_b is not None:
        if args.predictions_b is None:
            raise InputError("--parse-b says how to read --predictions-b, which is not given: add --predictions-b FILE or drop --parse-b")
        check_parse_mode(args.parse_b, "--parse-b")
    check_keep(args.duplicates)
    check_challenge_order(args.challenge_order)


def evaluate_args(args: argparse.Namespace) -> MetaEvalResult:
    """Run the meta-evaluation described by parsed ``meta-eval`` arguments."""
    _check_flags(args)
    if args.report is not None and args.report.exists() and not args.report.is_dir():
        raise InputError(f"--report {args.report} is a file: give a folder for the plots and pages (it is created if missing)")
    if args.bootstrap < 0:
        raise InputError(f"--bootstrap must be 0 or more resamples, got {args.bootstrap}")
    if not 0 < args.review_threshold <= 1:
        raise InputError(f"--review-threshold must lie in (0, 1], got {args.review_threshold}")
    records = load_jsonl(args.human)
    scale, scale_source = scale_for(records, args.dimension, args.scale)
    parse_b = args.parse_b or args.parse
    preds = load_predictions(args.predictions, scale, args.parse, dimension=args.dimension)
    preds_b = load_predictions(args.predictions_b, scale, parse_b, flag="--parse-b", dimension=args.dimension) if args.predictions_b else None
    pairwise, unclear = read_pairwise(args.pairwise) if args.pairwise else (None, 0)
    cost = None
    if args.usd_per_million_input is not None or args.usd_per_million_output is not None:
        cost = CostModel(usd_per_million_input=args.usd_per_million_input or 0.0, usd_per_million_output=args.usd_per_million_output or 0.0)
    return meta_evaluate(
        records,
        preds,
        args.dimension,
        levels=_split(args.level, LEVELS, "level"),
        methods=_split(args.method, METHODS, "method"),
        convention=args.convention,
        predictions_b=preds_b,
        pairwise=pairwise,
        pairwise_unclear=unclear,
        duplicates=args.duplicates,
        challenge_order=args.challenge_order,
        bootstrap=args.bootstrap,
        seed=args.seed,
        tolerance=args.tolerance,
        review_threshold=args.review_threshold,
        cost=cost,
        scale=scale,
        labels={
            "human_file": str(args.human),
            "predictions_file": str(args.predictions),
            "predictions_b_file": str(args.predictions_b or ""),
            "parse": args.parse,
            "parse_b": parse_b,
            "scale_source": scale_source,
        },
    )


def run_meta_eval(args: argparse.Namespace) -> int:
    """The ``meta-eval`` command: 0 on success, 3 on bad input (message on stderr)."""
    try:
        if args.report:
            require_matplotlib()  # fail before the work when plots cannot be drawn
        result = evaluate_args(args)
        if args.json:
            print(result.model_dump_json())
        else:
            print_result(result)
        if args.report:
            files = write_report(_as_report(result), args.report, title=f"meta-eval: {args.dimension}")
            print(f"report written: {', '.join(str(f) for f in files)}", file=sys.stderr)
    except (InputError, MissingDependencyError) as exc:
        print(f"judgesdk meta-eval: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    return ExitCode.OK


def _as_report(result: MetaEvalResult) -> JudgeReport:
    join = result.counts.join
    parsed = join.n_joined - join.n_unparsed
    return JudgeReport(
        n_items=join.n_joined,
        n_parsed=parsed,
        share_parsed=parsed / join.n_joined if join.n_joined else 0.0,
        agreement=[lv.correlation for lv in result.levels],
        per_system=result.per_system,
        meta=result.meta_correlation,
        positional=result.positional,
        length=result.length,
        repeats=result.repeats,
        throughput=result.throughput,
    )


# -------------------------------------------------------------------------------------------------
# Tables
# -------------------------------------------------------------------------------------------------


def _f(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def print_result(result: MetaEvalResult) -> None:
    """Rich tables of a :class:`MetaEvalResult` on stdout."""
    from rich.console import Console
    from rich.table import Table

    console = Console(soft_wrap=True)
    j = result.counts.join
    console.print(
        f"[bold]meta-eval[/bold] {result.dimension}: {result.predictions_file} vs {result.human_file}\n"
        f"joined {j.n_joined}, unparsed {j.n_unparsed} (out of range {result.counts.out_of_range}), "
        f"unmatched predictions {j.n_predictions_unmatched}, human items without prediction "
        f"{j.n_human_without_prediction}, duplicate lines {j.n_duplicate_predictions} ({result.duplicates} kept)\n"
        f"scale {result.scale[0]:g}-{result.scale[-1]:g} ({result.scale_source}); convention {result.convention}: "
        f"{result.convention_description}"
    )
    table = Table(title="Correlation with human scores")
    confidence = next((lv.ci.confidence for lv in result.levels if lv.ci is not None), None)
    columns = ["level", "method", "value"] + ([] if confidence is None else [f"{confidence:.0%} CI"]) + ["p", "items", "groups", "skipped"]
    for col in columns:
        table.add_column(col, no_wrap=col.endswith("CI"))
    for lv in result.levels:
        c, ci = lv.correlation, lv.ci
        ci_cells = [] if confidence is None else ["-" if ci is None else f"{_f(ci.low)}..{_f(ci.high)}"]
        skipped = str(sum(c.skipped.values())) if c.skipped else (c.undefined_reason or "")
        table.add_row(c.level, c.method, _f(c.value), *ci_cells, _f(c.p_value, 4), str(c.n_items), str(c.n_groups), skipped)
    console.print(table)
    for lv in result.levels:
        c = lv.correlation
        if c.skipped:
            reasons = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in c.skipped.items())
            console.print(f"  {c.level}/{c.method}: documents skipped and counted: {reasons}")
    for level in dict.fromkeys(lv.correlation.level for lv in result.levels):
        console.print(f"  {level}: {LEVEL_DEFINITIONS[level]}")
    for note in dict.fromkeys(n for lv in result.levels for n in lv.correlation.notes):
        console.print(f"  note: {note}")
    _print_systems(console, result)
    _print_extras(console, result)


def _print_systems(console: Any, result: MetaEvalResult) -> None:
    from rich.table import Table

    table = Table(title="Per-system correlations P_i (001 eq. 2) and quality Q_i (eq. 1)")
    table.add_column("system")
    table.add_column("Q_i")
    table.add_column("n")
    for s in result.per_system:
        table.add_column(s.method)
    quality = result.meta_correlation[0].quality if result.meta_correlation else {}
    rows = {g.group: [g] for g in result.per_system[0].systems} if result.per_system else {}
    for s in result.per_system[1:]:
        for g in s.systems:
            rows[g.group].append(g)
    for name, groups in rows.items():
        table.add_row(name, _f(quality.get(name)), str(groups[0].n), *[_f(g.value) if g.value is not None else (g.undefined_reason or "-") for g in groups])
    console.print(table)
    for s, m in zip(result.per_system, result.meta_correlation):
        console.print(
            f"  {s.method}: P_i median {_f(s.spread.median)}, range {_f(s.spread.min)}..{_f(s.spread.max)} "
            f"({s.n_undefined} undefined); meta-correlation M = {_f(m.value)} (p {_f(m.p_value, 4)}, {m.n_systems} systems)"
        )
    for name, cp in result.correct_preferences.items():
        console.print(f"  #CP {name} pairs: {cp.n_correct}/{cp.n_pairs}" + (f" ({cp.accuracy:.1%})" if cp.accuracy is not None else "") + _skipped(cp))
    console.print(f"  challenge set: {result.challenge_order_description}")


def _skipped(cp: Any, why: str = "no document scored for both") -> str:
    """The pairs a #CP left out, named, so that a short count is never silent."""
    if not cp.skipped_pairs:
        return ""
    names = ", ".join(f"{a}-{b}" for a, b in cp.skipped_pairs[:6]) + (", ..." if len(cp.skipped_pairs) > 6 else "")
    return f"; {len(cp.skipped_pairs)} pairs left out, {why}: {names}"


def _print_extras(console: Any, result: MetaEvalResult) -> None:
    for a in result.agreement:
        r = ", ".join(f"{g.group} {_f(g.value)}" for g in a.agreement)
        console.print(
            f"R_i ({a.method}, 001 eq. 4) {r}\n  rho(R_i, P_i^A) = {_f(a.rho_r_pa)}, rho(R_i, P_i^B) = {_f(a.rho_r_pb)}"
            + (f"; R_i <= {a.tolerance}: {', '.join(a.needs_human) or 'none'}" if a.tolerance is not None else "")
        )
    if result.positional is not None:
        pb = result.positional
        console.print(
            f"positional bias (004 §3.5): first wins {_f(pb.first_win_rate)}, ties {_f(pb.tie_rate)}, "
            f"flip on swap {_f(pb.flip_rate)} over {pb.n_swapped_pairs} swapped pairs"
        )
    for name, cp in result.correct_preferences_h2h.items():
        console.print(f"  H2H #CP {name} pairs: {cp.n_correct}/{cp.n_pairs}" + _skipped(cp, "no verdict on them"))
    if result.pairwise_counts is not None and (result.pairwise_counts.n_unclear or result.pairwise_counts.n_unmatched):
        pc = result.pairwise_counts
        console.print(f"  verdicts: {pc.n_verdicts} read, {pc.n_unclear} unclear (left out), {pc.n_unmatched} naming outputs without a human score")
    if result.length is not None:
        lb = result.length
        console.print(
            f"length: Spearman with words judge {_f(lb.judge_vs_length)} vs humans {_f(lb.human_vs_length)}; "
            f"prefers longer judge {_f(lb.judge_prefers_longer)} vs humans {_f(lb.human_prefers_longer)}"
        )
    if result.repeats is not None:
        console.print(f"repeats: mean sd {_f(result.repeats.mean_sd)}, share changed {_f(result.repeats.share_changed)} ({result.repeats.n_items} items)")
    if result.throughput is not None:
        t = result.throughput
        console.print(f"per 1,000 judgements: {_f(t.seconds_per_1000, 1)} s, USD {_f(t.usd_per_1000, 4)}")
    if result.review is not None:
        console.print(f"needs human review: {result.review['n_flagged']} of {result.review['n_items']} items (risk >= {result.review['threshold']}) {result.review['reasons']}")
