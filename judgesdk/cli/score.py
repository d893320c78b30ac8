"""``judgesdk score``: judge every line of a JSONL file, and the judge flags every judging command shares.

    judgesdk score ITEMS.jsonl [-o RESULTS.jsonl] [--criterion C | --preset DATASET] [--method M] [--config FILE]
    judgesdk score ITEMS.jsonl --estimate [-o RESULTS.jsonl]     (the bill of the run; no model called)

Each result is written to ``-o`` (through :class:`judgesdk.records.Ledger`) or printed as it exists; a re-run
judges only the items not yet final for the same question, and Ctrl-C keeps what finished. The summary
table on stderr counts statuses, methods, cache hits and the local model's work, and, where
``--estimate -o`` saved an estimate for the same run, sets it beside what was spent
(:mod:`judgesdk.forecast.job`). A config with a ``[jury]`` section has each item judged by every judge of the jury
(:mod:`judgesdk.jury`): one row per item with each judge's result in ``parts`` and ``details.flagged``, and the
summary adds the judges' Krippendorff's alpha and the flagged count. :func:`add_judge_flags` and
:func:`config_mapping` turn the flags that build a
judge (``--config``, ``--provider``, ``--template``, ``--option``...) into its config; ``compare`` and ``rank``
(:mod:`judgesdk.cli.compare`) use them too.

A line with a ``kind`` is a typed item (a conversation, grounded answer or agent run: :mod:`judgesdk.items`),
judged through :func:`judgesdk.judging.items.judge_item`; one that cannot be read is reported on stderr as one
line naming the file, line and field, and its row has the status ``error``: the other lines are judged. Without
``--preset``, criteria named in the ``agents`` preset (``task_completion``, ``tool_correctness``) take its
definitions and scale.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from judgesdk.cli.flags import add_judge_flags, config_mapping, console, judge_rows, parse_scale
from judgesdk.core import Criterion, ExitCode, InputError, JudgeItem, JudgeResult, method_family
from judgesdk.judging import Task, ask_for, pending, print_rows
from judgesdk.records import Ledger, read_entries

__all__ = ["register", "run_score"]



def register(commands: Any) -> None:
    """Add ``score`` to an ``argparse`` subparsers object."""
    p = commands.add_parser("score", help="judge every line of a JSONL file")
    p.add_argument("input", type=Path, help="JSONL: one object per line with 'output' and optional 'source', 'reference', 'context', 'id', or a typed item with a 'kind' (conversation, grounded_answer, agent_run: docs/items.md)")
    p.add_argument("-o", "--output", type=Path, help="JSONL results, appended; a re-run skips items already judged on the same question and retries errors (see judgesdk.records)")
    p.add_argument("--criterion", default="overall quality",
                   help="criterion name (default: overall quality); with --preset, a comma list (several: fine-grained, 002)")
    p.add_argument("--definition", help="criterion definition shown to the judge")
    p.add_argument("--scale", default="1-5", help="Likert scale LOW-HIGH (default 1-5)")
    p.add_argument("--preset", help="take the criteria (definitions, scales) from a dataset preset: summeval, topicalchat, hanna, newsroom")
    p.add_argument("--method", help="auto (default: fused on a fitted local model, else geval), fused, geval (002 Logprob), direct, sampling (002 Approximation), rts, mcq, likelihood, synthetic, fusion")
    p.add_argument("--quiet", action="store_true", help="no progress bar or table")
    p.add_argument(
        "--estimate", action="store_true",
        help="call no model: print (JSON on stdout, a table on stderr) the calls, prompt and output tokens, cache hits and "
        "cost the run would make, per provider; with -o it is saved beside the results, and the run into them reports it "
        "beside what it spent",
    )  # fmt: skip
    p.add_argument("--engine", choices=["local", "ray"], default="local",
                   help="ray: the same job on a Ray cluster, one Judge per actor, -o a results folder (pip install 'judgesdk[ray]')")
    p.add_argument("--address", help="with --engine ray: the cluster (auto: the one this node is in; default: start a local one)")
    add_judge_flags(p, template_help="template id or TOML path (default: the method's own)")
    p.set_defaults(func=run_score)






def run_score(args: argparse.Namespace) -> int:
    """Judge the items not yet final in ``-o`` for this question (see :mod:`judgesdk.records`)."""
    from judgesdk.judging import Judge, load_config
    from judgesdk.provider import Extras

    items: Any = read_entries(args.input)  # JudgeItems, typed items and unreadable lines (the runner reads their ids)
    criterion = _score_criteria(args)
    _check_typed(args, items)
    if getattr(args, "engine", "local") == "ray":  # the same job on a Ray cluster; -o names a folder (judgesdk.distributed)
        from judgesdk.cli.ray_engine import run_on_ray

        return ExitCode.OK if run_on_ray(args, items, criterion, load_config(config_mapping(args))).complete else ExitCode.INCOMPLETE
    _check_results_path(args.output, args.input)
    config = load_config(config_mapping(args))
    if config.jury is not None and any(not isinstance(entry, JudgeItem) for entry, _ in items):
        raise InputError(f"{args.input} holds typed items (lines with a 'kind'): a jury does not judge them yet; use one judge")
    ask = _jury_ask(args, config, criterion) if config.jury is not None else ask_for(config, criterion)
    if args.estimate:
        return _estimate_score(args, items, criterion, config, ask)
    from judgesdk.forecast import Beside

    beside = Beside.open(args.output) if config.jury is None else None  # an estimate saved for -o: set beside the spend
    if config.jury is not None:  # several judges answer each item (judgesdk.jury)
        from judgesdk.jury import Jury

        judge: Judge | Jury = Jury.from_config(config, slice_items=[item for item, _ in items])
    else:
        judge = Judge.from_config(config, extras=Extras(meter=beside.meter) if beside is not None else None)
    try:
        for reason in judge.check_providers():  # no usable provider at all: one error now, not one per item
            print(f"judgesdk: skipping {reason}", file=sys.stderr)
        ledger = Ledger.open(args.output, what="-o") if args.output else None
        if ledger is not None and ledger.notice:
            print(f"judgesdk: {ledger.notice}", file=sys.stderr)
    except BaseException:
        judge.close()
        raise
    try:
        task, done = pending(Task(criterion, items, ask), ledger)
        more: Callable[[Any], list[tuple[str, str]]] | None  # called with the judge (a Judge, or a Jury for its summary)
        more = beside.rows(config, [(criterion, [item for item, _ in task.items])]) if beside is not None else None
        if config.jury is not None:  # the jury's summary lines (alpha, flags) cover the resumed rows too
            more = lambda jury: jury.summary_rows(done)  # noqa: E731
        outcome, work = judge_rows(judge, task, ledger or print_rows(), quiet=args.quiet, more_work=more)  # closes the judge
    finally:
        if ledger is not None:
            ledger.close()
    judge.require_usable()  # e.g. a model file whose damage showed only when it was loaded
    if outcome.interrupted:
        raise outcome.interruption(args.output)
    results = outcome.results
    unscored_before = sum(row.get("score") is None for row in done)  # final verdicts without a score (unparsed)
    if not args.quiet:
        _summary(results, skipped=len(done), unscored=unscored_before, work=work)
    return ExitCode.OK if unscored_before == 0 and all(r.score is not None for r in results) else ExitCode.INCOMPLETE


def _estimate_score(args: argparse.Namespace, items: Any, criterion: Any, config: Any, ask: Any) -> int:
    """``score --estimate``: what the run would ask of each provider, found without a model call
    (:mod:`judgesdk.forecast.job`); saved beside ``-o`` for the run's report."""
    from judgesdk.forecast import forecast as forecast_forecast
    from judgesdk.forecast import save, todo_items
    from judgesdk.forecast import table as forecast_table

    found = forecast_forecast(config, [(criterion, todo_items(items, args.output, ask))])
    saved = save(found, args.output) if args.output is not None else None
    print(found.model_dump_json(), flush=True)
    if not args.quiet:
        console().print(forecast_table(found, saved=saved))
    return ExitCode.OK


def _jury_ask(args: argparse.Namespace, config: Any, criterion: Any) -> Any:
    """The question a ``[jury]`` answers (:func:`judgesdk.jury.jury_ask`), once the flags are known to reach its
    judges: a flag that sets what every judge sets itself would change nothing, so it is an error."""
    if args.estimate:
        raise InputError("--estimate does not cover a [jury] yet: estimate each judge's config on its own")
    for flag, field in (("provider", "provider"), ("method", "method"), ("template", "template")):
        if getattr(args, flag) and config.jury.every_judge_sets(field):
            raise InputError(f"--{flag} reaches no judge: every judge of [jury] sets its own {field}; change it in the config")
    from judgesdk.jury import jury_ask

    return jury_ask(config, criterion)


def _check_results_path(path: Path | None, source: Path) -> None:
    """``-o`` names a results file that can be read back (to resume) and appended to, and is not the input (the
    ledger refuses any file whose rows are not results: :class:`judgesdk.records.Ledger`)."""
    if path is None:
        return
    if path.exists() and source.exists() and path.samefile(source):
        raise InputError(f"-o {path} is the input file: results would be appended to the items; give -o another file, e.g. -o {path.with_suffix('.results.jsonl')}")
    if path.is_dir():
        raise InputError(f"-o {path} is a directory: give the path of a results file, e.g. -o {path / 'results.jsonl'}")
    if not path.parent.is_dir():
        raise InputError(f"-o {path}: folder {path.parent} does not exist; create it or choose another path")


def _check_typed(args: argparse.Namespace, items: list[tuple[Any, dict[str, Any]]]) -> None:
    """Report each unreadable line on stderr (one line each; its row will say it too), and refuse what typed items
    cannot go through yet (the Ray engine, a jury, ``--estimate``), before any model is loaded."""
    from judgesdk.items import Unreadable

    typed = [entry for entry, _ in items if not isinstance(entry, JudgeItem)]
    if not typed:
        return
    if getattr(args, "engine", "local") == "ray" or args.estimate:
        flag = "--engine ray" if getattr(args, "engine", "local") == "ray" else "--estimate"
        raise InputError(f"{args.input} holds typed items (lines with a 'kind'): {flag} does not judge them yet; run without it")
    for entry in typed:  # printed under --quiet too, as a provider skipped is
        if isinstance(entry, Unreadable):
            print(f"judgesdk: skipping {entry.error}", file=sys.stderr)


ITEM_PRESET = "agents"  # the preset whose criteria a bare --criterion list may name without --preset


def _score_criteria(args: argparse.Namespace) -> Criterion | list[Criterion]:
    """The criterion of ``score``: from the flags, or the preset's named criteria (all of them when
    ``--criterion`` is left at its default); several are judged fine-grained, their mean with parts."""
    if args.preset is None and not args.definition:
        from judgesdk.prompting import criteria_for

        known = {c.name: c for c in criteria_for(ITEM_PRESET)}
        names = [name.strip() for name in args.criterion.split(",") if name.strip()]
        if names and all(name in known for name in names):  # the item kinds' own criteria, by their exact names
            chosen = [known[name] for name in names]
            return chosen[0] if len(chosen) == 1 else chosen
    if args.preset is None:
        if "," in args.criterion and not args.definition:
            raise InputError(
                f"--criterion {args.criterion!r} lists several criteria: add --preset DATASET to take their definitions "
                "from a dataset preset, or judge one criterion with --definition"
            )
        return Criterion(name=args.criterion, description=args.definition or args.criterion, scale=parse_scale(args.scale))
    from judgesdk.prompting import criteria_for
    from judgesdk.prompting import criterion as presets_criterion

    if args.definition:
        raise InputError("--definition and --preset both define the criterion: use one")
    if args.criterion == "overall quality":
        return criteria_for(args.preset)
    names = [name.strip() for name in args.criterion.split(",") if name.strip()]
    chosen = [presets_criterion(args.preset, name) for name in names]
    return chosen[0] if len(chosen) == 1 else chosen




def _methods_line(results: list[JudgeResult]) -> str:
    """The methods used, with a warning when scores of different methods (and so scales) are mixed."""
    methods = sorted({r.method for r in results if r.score is not None})
    families = {method_family(m) for m in methods}
    line = ", ".join(methods) or "-"
    return f"{line} (MIXED: scores on different scales)" if len(families) > 1 else line


def _summary(results: list[JudgeResult], skipped: int, unscored: int = 0, work: Sequence[tuple[str, str]] = ()) -> None:
    from rich.table import Table

    from judgesdk.scorers import summary_rows as auto_summary_rows

    scores = [r.score for r in results if r.score is not None]
    statuses = {status: sum(r.status == status for r in results) for status in ("ok", "low_coverage", "unparsed", "refused", "missing", "error")}
    table = Table(title="judgesdk score", show_header=False)
    rows = [
        ("items judged", str(len(results))),
        ("already done (skipped)", str(skipped)),
        *((("of those, without a score", str(unscored)),) if unscored else ()),
        *((f"status {status}", str(count)) for status, count in statuses.items() if count),
        ("mean score", f"{sum(scores) / len(scores):.3f}" if scores else "-"),
        ("methods", _methods_line(results)),
        ("providers", ", ".join(sorted({f"{r.provider}/{r.model}" for r in results if r.provider}))),
        ("served from cache", str(sum(r.cached for r in results))),
        *auto_summary_rows(results),
        *work,
    ]
    for name, value in rows:
        table.add_row(name, value)
    console().print(table)
