"""``judgesdk gate``, ``judgesdk label-slice`` and ``judgesdk calibrate``.

    judgesdk gate --config gate.toml [--results FILE] [--baseline FILE] [--junit FILE] [--markdown FILE] [--json-report FILE] [--json]
    judgesdk gate --config gate.toml --estimate [--json]     (the bill of judging the input; no model called)
    judgesdk label-slice --results FILE --n 50 [--seed 0] [-o slice.jsonl]
    judgesdk label-slice --results FILE --pilot labels.jsonl --half-width 0.1 [--criterion C] [--confidence 0.95]
    judgesdk calibrate --judge-results FILE --human FILE --dimension D [--method isotonic|linear] -o calibration.json

``gate`` exits with the verdict's code: 0 every gate passed, 1 a quality gate failed, 2 inconclusive
(judge unreliable, run incomplete or stopped by its budget, or a gate that could not be evaluated),
3 usage or configuration error. ``label-slice`` draws the random slice of a run's items for people to label
(for the corrected gates), or says how many labels a +-delta interval needs; ``calibrate`` and
``label-slice`` exit 0, or 3 on bad input.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from judgesdk.core import ExitCode, InputError, MissingDependencyError

__all__ = ["register", "run_calibrate", "run_gate", "run_label_slice"]



def register(subparsers: Any) -> None:
    """Add ``gate`` and ``calibrate`` to an ``argparse`` subparsers object."""
    _add_gate(subparsers)
    _add_label_slice(subparsers)
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
    p.add_argument("--json-report", type=Path, metavar="FILE", help="write the verdict as JSON (what judgesdk view --gate reads)")
    p.add_argument("--json", action="store_true", help="print the verdict as JSON instead of text")
    p.add_argument(
        "--estimate", action="store_true",
        help="judge nothing and call no model: print the calls, tokens, cache hits and cost judging the input would make, "
        "per provider, and how they stand against the budget (exit 0)",
    )  # fmt: skip
    p.set_defaults(func=run_gate)


def _add_label_slice(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "label-slice",
        help="draw the random slice of a run's items to label by hand (seeded), or from a labelled pilot say how many "
        "labels a +-delta corrected interval needs",
    )
    p.add_argument("--results", type=Path, required=True, help="the run's results JSONL (judgesdk score -o, or the gate's results file)")
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--n", type=int, help="draw this many item ids; writes {id, label: null} lines to fill in")
    what.add_argument("--pilot", type=Path, help="labels JSONL of a pilot slice (id, label): plan how many labels --half-width needs")
    p.add_argument("--seed", type=int, default=0, help="seed of the draw (default 0); a larger --n with the same seed extends the slice")
    p.add_argument("-o", "--output", type=Path, help="with --n: write the slice here (default stdout)")
    p.add_argument("--half-width", type=float, help="with --pilot: the wanted half-width of the interval of the mean, on the label scale")
    p.add_argument("--confidence", type=float, default=0.95, help="with --pilot: confidence of the interval (default 0.95)")
    p.add_argument("--criterion", help="with --pilot: the criterion whose scores to use (needed when the results hold several)")
    p.set_defaults(func=run_label_slice)


def run_label_slice(args: argparse.Namespace) -> int:
    """Draw the slice (ids to label) or plan its size from a pilot."""
    import json

    from judgesdk.gate import check_output, draw_slice, join_slice, plan_labels, write_output
    from judgesdk.records import read_labels, read_results

    if args.output is not None:
        check_output(args.output, "-o", "slice-labels.jsonl")
    read = read_results(args.results)
    rows = read.rows
    if args.n is not None:
        ids = draw_slice((str(r.id) for r in rows), args.n, args.seed)
        text = "".join(json.dumps({"id": i, "label": None}) + "\n" for i in ids)
        if args.output is None:
            sys.stdout.write(text)
        else:
            write_output(args.output, text, "-o")
        n_items = len({str(r.id) for r in rows})
        where = f" to {args.output}" if args.output else ""
        print(f"drew {len(ids)} of {n_items} items (seed {args.seed}){where}: fill in each label on the human scale", file=sys.stderr)
        return ExitCode.OK
    if args.half_width is None:
        raise InputError("--pilot plans a slice size for an interval: give its half-width with --half-width (e.g. 0.1)")
    criteria = sorted({r.criterion for r in rows if r.criterion is not None})
    if args.criterion is None and len(criteria) > 1:
        raise InputError(f"{args.results} holds results for {', '.join(criteria)}: choose one with --criterion")
    scores = {key: r.score for key, r in read.latest(None, args.criterion).items() if r.score is not None}
    pilot = join_slice(read_labels(args.pilot), scores, list(scores), min_labels=1)
    plan = plan_labels(pilot.human, pilot.judge, list(scores.values()), args.half_width, confidence=args.confidence)
    print(plan.model_dump_json(indent=2))
    reach = (
        f"about {plan.n_ppi} labels with the judge (PPI++, lambda {plan.lam:.2f})" if plan.n_ppi is not None
        else "more labels than the run has items, even with the judge"
    )  # fmt: skip
    human = f"{plan.n_human_only}" + (" (more than the run has)" if plan.n_human_only > plan.n_total else "")
    print(
        f"+-{args.half_width:g} at {args.confidence:.0%} over {plan.n_total} scored items: {reach}; {human} with labels alone "
        f"(pilot of {plan.n_pilot}: label sd {plan.sd_human:.3f}, judge-human correlation {plan.correlation:.2f})",
        file=sys.stderr,
    )
    return ExitCode.OK


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
        "signals come from --config's first provider (the local model, or a server whose file the config names by "
        "model_sha256); writes a fit to use as method_options.fused_model",
    )  # fmt: skip
    p.add_argument("--scale", help="with --fused: LOW,HIGH of the human scale (default: the labels' range)")
    p.add_argument(
        "--domain", choices=["news", "dialogue", "story"], default="news",
        help="with --fused: the task's signal prompts (news: summaries of a source; dialogue: responses with a grounding "
        "fact in 'context'; story: stories after a writing prompt)",
    )  # fmt: skip
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
    from judgesdk.gate import check_output, evaluate_gates, load_gate_config, render_json, render_text, write_reports

    config = load_gate_config(args.config)
    for path, flag, example in ((args.junit, "--junit", "gate.xml"), (args.markdown, "--markdown", "gate.md"), (args.json_report, "--json-report", "gate.json")):
        if path is not None:  # before judging: a bad output path must not cost a finished run
            check_output(path, flag, example)
    if args.estimate:
        return _estimate_gate(args, config)
    try:
        verdict = evaluate_gates(config, results=args.results, baseline=args.baseline)
    except MissingDependencyError as exc:
        print(f"judgesdk: {exc}", file=sys.stderr)
        return ExitCode.USAGE
    write_reports(verdict, junit=args.junit, markdown=args.markdown, json_report=args.json_report)
    print(render_json(verdict) if args.json else render_text(verdict))
    return verdict.exit_code


def _estimate_gate(args: argparse.Namespace, config: Any) -> int:
    """``gate --estimate``: the bill of judging the gate's input (judgesdk.forecast.job), as text or JSON."""
    from rich.console import Console

    from judgesdk.forecast import table
    from judgesdk.gate import estimate

    found = estimate(config, results=args.results)
    if args.json:
        print(found.model_dump_json(indent=2))
    else:
        Console(soft_wrap=False).print(table(found, title="judgesdk gate --estimate (no model called)"))
    return ExitCode.OK


def run_calibrate(args: argparse.Namespace) -> int:
    from judgesdk.meta import default_path, fit_calibration
    from judgesdk.records import load_labelled

    if args.fused:
        return _run_fused_refit(args)
    if args.judge_results is None:
        raise InputError("calibrate needs --judge-results FILE (the judge's scores to map), or --fused to refit the fused judge")
    output = args.output or (default_path(args.config, args.dimension) if args.config else None)
    if output is None:
        raise InputError("say where to save the calibration: -o FILE, or --config JUDGE.toml to save it beside the judge config")
    from judgesdk.gate import check_output

    check_output(Path(output), "-o", "calibration.json")  # before fitting: a bad path must not cost the fit
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
    return ExitCode.OK


def _run_fused_refit(args: argparse.Namespace) -> int:
    """Signals for the labelled outputs, nested CV by document, a fit file; agreement beside each signal's."""
    from judgesdk.fused import refit, save
    from judgesdk.judging import Judge
    from judgesdk.records import dimension_labels

    scale = None
    if args.scale:
        try:
            low, high = (float(v) for v in args.scale.split(","))
        except ValueError as exc:
            raise InputError(f"--scale takes LOW,HIGH (e.g. 1,5), got {args.scale!r}") from exc
        scale = (low, high)
    dimension_labels(args.human, args.dimension, scale=scale, what="labelled outputs")  # before the model loads: bad labels or scale cost nothing
    output = args.output or (args.config.with_name(f"{args.config.stem}.{args.dimension}.fused.json") if args.config else None)
    if output is None:
        raise InputError("say where to save the fit: -o FILE, or --config JUDGE.toml to save it beside the judge config")
    from judgesdk.gate import check_output

    check_output(Path(output), "-o", "fused.json")  # before the model runs: a bad path must not cost the refit
    with Judge.from_config(args.config) as judge:  # its first provider's whole stack: signals go through the cache
        provider = judge.provider(0)
        done = judge.run(refit(provider, args.human, args.dimension, scale=scale, min_items=args.min_items, seed=args.seed, domain=args.domain))
    save(done.fitted, output)
    for model in done.fitted.criteria[args.dimension]:
        print(f"fused ({model.variant}): cross-validated {model.cv} using {model.choice}")
    print("each signal alone: " + ", ".join(f"{k} {v:+.3f}" for k, v in sorted(done.signals.items(), key=lambda kv: -abs(kv[1]))))
    print(f"saved {output}: set method_options.fused_model = \"{output}\" in the judge config", file=sys.stderr)
    return ExitCode.OK
