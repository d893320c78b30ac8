"""``judgesdk gate`` and ``judgesdk calibrate``.

    judgesdk gate --config gate.toml [--results FILE] [--baseline FILE] [--junit FILE] [--markdown FILE] [--json]
    judgesdk calibrate --judge-results FILE --human FILE --dimension D [--method isotonic|linear] -o calibration.json

``gate`` exits with the verdict's code: 0 every gate passed, 1 a quality gate failed, 2 inconclusive
(judge unreliable, run incomplete or stopped by its budget, or a gate that could not be evaluated),
3 usage or configuration error. ``calibrate`` exits 0, or 3 on bad input.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from judgesdk.errors import InputError, MissingDependencyError

__all__ = ["register", "run_calibrate", "run_gate"]

EXIT_USAGE = 3


def register(subparsers: Any) -> None:
    """Add ``gate`` and ``calibrate`` to an ``argparse`` subparsers object."""
    _add_gate(subparsers)
    _add_calibrate(subparsers)


def _add_gate(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "gate",
        help="check release gates on judge scores; exit 0 pass, 1 quality fail, 2 inconclusive, 3 config error",
        description=__doc__.split("\n\n")[0],
    )
    p.add_argument("--config", type=Path, required=True, help="gate config (TOML): judge, input or results, criteria, gates")
    p.add_argument("--results", type=Path, help="gate this results JSONL (e.g. from `judgesdk score -o`) instead of judging the input")
    p.add_argument("--baseline", type=Path, help="baseline results JSONL for regression gates (overrides the config's)")
    p.add_argument("--junit", type=Path, metavar="FILE", help="write JUnit XML: one testcase per gate")
    p.add_argument("--markdown", type=Path, metavar="FILE", help="write a Markdown summary (also appended to $GITHUB_STEP_SUMMARY when set)")
    p.add_argument("--json", action="store_true", help="print the verdict as JSON instead of text")
    p.set_defaults(func=run_gate)


def _add_calibrate(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "calibrate",
        help="fit a monotone map from judge scores to a human scale (isotonic or linear), or with --fused refit the "
        "fused local judge on your own labelled outputs",
    )
    p.add_argument("--judge-results", type=Path, help="judge results JSONL (judgesdk score -o); not used with --fused")
    p.add_argument(
        "--fused", action="store_true",
        help="refit the fused local judge: --human holds output, source (reference, doc_id optional) and the label; the "
        "signals come from --config's local model; writes a fit to use as method_options.fused_model",
    )  # fmt: skip
    p.add_argument("--scale", help="with --fused: LOW,HIGH of the human scale (default: the labels' range)")
    p.add_argument("--human", type=Path, required=True, help="human labels JSONL: doc_id/system_id or id, and scores.<dimension> or <dimension>")
    p.add_argument("--dimension", required=True, help="the human dimension to map onto, e.g. coherence")
    p.add_argument("--criterion", help="the judge criterion to take scores of (needed when the results hold several)")
    p.add_argument("--method", choices=["isotonic", "linear"], default="isotonic", help="isotonic (default) or linear")
    p.add_argument("--min-items", type=int, default=10, help="refuse to fit on fewer labelled items (default 10)")
    p.add_argument("--folds", type=int, default=5, help="k of the k-fold held-out report (default 5)")
    p.add_argument("--seed", type=int, default=0, help="seed of the fold split (default 0)")
    p.add_argument("--config", type=Path, help="judge config: by default the calibration is saved beside it")
    p.add_argument("-o", "--output", type=Path, help="calibration JSON to write (default: beside --config)")
    p.set_defaults(func=run_calibrate)


def run_gate(args: argparse.Namespace) -> int:
    """Collect, decide, render: the exit code is the verdict's."""
    from judgesdk.gate import evaluate_gates, load_gate_config, render_json, render_text, write_reports

    config = load_gate_config(args.config)
    try:
        verdict = evaluate_gates(config, results=args.results, baseline=args.baseline)
    except MissingDependencyError as exc:
        print(f"judgesdk: {exc}", file=sys.stderr)
        return EXIT_USAGE
    write_reports(verdict, junit=args.junit, markdown=args.markdown)
    print(render_json(verdict) if args.json else render_text(verdict))
    return verdict.exit_code


def run_calibrate(args: argparse.Namespace) -> int:
    from judgesdk.calibration import default_path, fit_calibration, load_labelled

    if args.fused:
        return _run_fused_refit(args)
    if args.judge_results is None:
        raise InputError("calibrate needs --judge-results FILE (the judge's scores to map), or --fused to refit the fused judge")
    output = args.output or (default_path(args.config, args.dimension) if args.config else None)
    if output is None:
        raise InputError("say where to save the calibration: -o FILE, or --config JUDGE.toml to save it beside the judge config")
    data = load_labelled(args.judge_results, args.human, args.dimension, args.criterion)
    calibration = fit_calibration(
        data.scores, data.labels, dimension=args.dimension, criterion=args.criterion, method=args.method,
        min_items=args.min_items, folds=args.folds, seed=args.seed,
    )  # fmt: skip
    calibration.save(output)
    fit = calibration.fit
    print(
        f"calibration ({calibration.method}) of {data.n_results} results: {len(data.scores)} joined to {args.dimension!r} labels, "
        f"{data.n_unscored} without a score, {data.n_unmatched} without a label",
        file=sys.stderr,
    )
    print(fit.model_dump_json(indent=2))
    print(f"saved {output}", file=sys.stderr)
    return 0


def _run_fused_refit(args: argparse.Namespace) -> int:
    """Signals for the labelled outputs, nested CV by document, a fit file; agreement beside each signal's."""
    from judgesdk.fused import model as fused_model
    from judgesdk.fused.refit import refit
    from judgesdk.judge import Judge

    scale = None
    if args.scale:
        try:
            low, high = (float(v) for v in args.scale.split(","))
        except ValueError as exc:
            raise InputError(f"--scale takes LOW,HIGH (e.g. 1,5), got {args.scale!r}") from exc
        scale = (low, high)
    output = args.output or (args.config.with_name(f"{args.config.stem}.{args.dimension}.fused.json") if args.config else None)
    if output is None:
        raise InputError("say where to save the fit: -o FILE, or --config JUDGE.toml to save it beside the judge config")
    with Judge.from_config(args.config) as judge:  # its first provider's whole stack: signals go through the cache
        provider = judge.provider(0)
        done = judge.run(refit(provider, args.human, args.dimension, scale=scale, min_items=args.min_items, seed=args.seed))
    fused_model.save(done.fitted, output)
    for model in done.fitted.criteria[args.dimension]:
        print(f"fused ({model.variant}): cross-validated {model.cv} using {model.choice}")
    print("each signal alone: " + ", ".join(f"{k} {v:+.3f}" for k, v in sorted(done.signals.items(), key=lambda kv: -abs(kv[1]))))
    print(f"saved {output}: set method_options.fused_model = \"{output}\" in the judge config", file=sys.stderr)
    return 0
