"""``judgesdk score``: judge every line of a JSONL file, and the judge flags every judging command shares.

    judgesdk score ITEMS.jsonl [-o RESULTS.jsonl] [--criterion C | --preset DATASET] [--method M] [--config FILE]
    judgesdk score ITEMS.jsonl --estimate [-o RESULTS.jsonl]     (the bill of the run; no model called)

Each result is written to ``-o`` (through :class:`judgesdk.records.Ledger`) or printed as it exists; a re-run
judges only the items not yet final for the same question, and Ctrl-C keeps what finished. The summary
table on stderr counts statuses, methods, cache hits and the local model's work, and, where
``--estimate -o`` saved an estimate for the same run, sets it beside what was spent
(:mod:`judgesdk.forecast`). A config with a ``[jury]`` section has each item judged by every judge of the jury
(:mod:`judgesdk.jury`): one row per item with each judge's result in ``parts`` and ``details.flagged``, and the
summary adds the judges' Krippendorff's alpha and the flagged count. :func:`add_judge_flags` and
:func:`config_mapping` turn the flags that build a
judge (``--config``, ``--provider``, ``--template``, ``--option``...) into its config; ``compare`` and ``rank``
(:mod:`judgesdk.compare_cli`) use them too.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from judgesdk.errors import InputError
from judgesdk.records import Ledger, ask_for, is_final, read_items, row_for
from judgesdk.types import Criterion, JudgeItem, JudgeResult, Scale, method_family

__all__ = ["add_judge_flags", "config_mapping", "parse_options", "parse_scale", "register", "run_score"]

# the command line's exit codes (judgesdk.cli says when each is given), defined below every command that gives them
EXIT_OK, EXIT_INCOMPLETE, EXIT_USAGE, EXIT_INTERRUPTED = 0, 2, 3, 130


def register(commands: Any) -> None:
    """Add ``score`` to an ``argparse`` subparsers object."""
    p = commands.add_parser("score", help="judge every line of a JSONL file")
    p.add_argument("input", type=Path, help="JSONL: one object per line with 'output' and optional 'source', 'reference', 'context', 'id'")
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


def add_judge_flags(p: Any, template_help: str) -> None:
    """Flags that build the judge, shared by every command that judges."""
    p.add_argument("--config", type=Path, help="TOML or YAML judge config")
    from judgesdk.registry import provider_kinds  # kinds by name only: no adapter is imported

    # checked with the config (an unknown kind: exit 3, naming the valid ones), not by argparse
    p.add_argument("--provider", metavar="KIND", help=f"use one provider instead of the config's chain: {', '.join(provider_kinds())}")
    p.add_argument("--model")
    p.add_argument("--base-url")
    p.add_argument("--api", choices=["chat", "completions"])
    p.add_argument("--template", help=template_help)
    p.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                   help="a method option (JSON value or text), e.g. rungs=3, k=4, normalization=ratio; repeatable")
    p.add_argument("--no-cache", action="store_true")


def parse_scale(text: str) -> Scale:
    try:
        low, high = (int(part) for part in text.split("-", 1))
    except ValueError as exc:
        raise InputError(f"--scale must look like 1-5, got {text!r}") from exc
    return Scale.likert(low, high)


def config_mapping(args: argparse.Namespace) -> dict[str, Any]:
    from judgesdk.config import load_config

    config = load_config(args.config).model_dump()
    if args.provider:
        provider = {"kind": args.provider, "model": args.model, "base_url": args.base_url}
        if args.api:
            provider["api"] = args.api
        config["providers"] = [provider]
    if args.method:
        config["method"] = args.method
    if args.template:
        config["template"] = args.template
    if args.no_cache:
        config["cache"]["enabled"] = False
    options = parse_options(args.option)
    if options:  # each --option is checked against what this command's method reads: a typo is an error
        from judgesdk.method_options import check_method_options

        command = getattr(args.func, "__name__", "").removeprefix("run_")
        check_method_options(options, command if command in ("compare", "rank") else config["method"])
    config["method_options"] = {**config.get("method_options", {}), **options}
    return config


def parse_options(pairs: Sequence[str]) -> dict[str, Any]:
    """``KEY=VALUE`` pairs; a value that reads as JSON (numbers, lists, true) is taken as such, else as text."""
    options: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise InputError(f"--option takes KEY=VALUE, got {pair!r}")
        try:
            options[key.strip()] = json.loads(value)
        except json.JSONDecodeError:
            options[key.strip()] = value
    return options


def run_score(args: argparse.Namespace) -> int:
    """Judge the items not yet final in ``-o`` for this question (see :mod:`judgesdk.records`)."""
    from judgesdk.config import load_config
    from judgesdk.judge import Judge

    items = read_items(args.input)
    criterion = _score_criteria(args)
    if getattr(args, "engine", "local") == "ray":  # the same job on a Ray cluster; -o names a folder (judgesdk.distributed)
        from judgesdk.distributed.cli import run_on_ray

        return EXIT_OK if run_on_ray(args, items, criterion, load_config(config_mapping(args))).complete else EXIT_INCOMPLETE
    _check_results_path(args.output)
    config = load_config(config_mapping(args))
    ask = _jury_ask(args, config, criterion) if config.jury is not None else ask_for(config, criterion)
    if args.estimate:
        return _estimate_score(args, items, criterion, config, ask)
    from judgesdk.forecast import Beside

    beside = Beside.open(args.output) if config.jury is None else None  # an estimate saved for -o: set beside the spend
    if config.jury is not None:  # several judges answer each item (judgesdk.jury)
        from judgesdk.jury import Jury

        judge = Jury.from_config(config, slice_items=[item for item, _ in items])
    else:
        judge = Judge.from_config(config, wrap=beside.meter.wrap if beside is not None else None)
    try:
        for reason in judge.check_providers():  # no usable provider at all: one error now, not one per item
            print(f"judgesdk: skipping {reason}", file=sys.stderr)
        ledger = Ledger.open(args.output, what="-o") if args.output else None
    except BaseException:
        judge.close()
        raise
    try:
        earlier = ledger.latest(ask) if ledger is not None else {}
        done = [earlier[item.id or ""] for item, _ in items if is_final(earlier.get(item.id or ""))]
        todo = [(item, extra) for item, extra in items if not is_final(earlier.get(item.id or ""))]
        more = beside.rows(config, [(criterion, [item for item, _ in todo])]) if beside is not None else None
        if config.jury is not None:  # the jury's summary lines (alpha, flags) cover the resumed rows too
            more = lambda jury: jury.summary_rows(done)  # noqa: E731
        results, work, interrupted = judge_into(judge, todo, criterion, ask, ledger, args.quiet, more)
    finally:
        if ledger is not None:
            ledger.close()
    judge.require_usable()  # e.g. a model file whose damage showed only when it was loaded
    if interrupted:
        kept = f"written to {args.output}; run the same command again to resume" if args.output else "printed; use -o FILE to keep results and resume"
        print(f"judgesdk: interrupted: {len(results)} finished result(s) {kept}", file=sys.stderr)
        return EXIT_INTERRUPTED
    unscored_before = sum(row.get("score") is None for row in done)  # final verdicts without a score (unparsed)
    if not args.quiet:
        _summary(results, skipped=len(done), unscored=unscored_before, work=work)
    return EXIT_OK if unscored_before == 0 and all(r.score is not None for r in results) else EXIT_INCOMPLETE


def judge_into(
    judge: Any, todo: list[tuple[JudgeItem, dict[str, Any]]], criterion: Any, ask: Any, ledger: Ledger | None, quiet: bool,
    more_work: Any = None,
) -> tuple[list[JudgeResult], list[tuple[str, str]], bool]:
    """Judge ``todo``, each result written (``ledger``) or printed as it exists. Returns the results in input
    order (in finishing order when interrupted), the model's work summary (with ``more_work(judge)``'s rows,
    read before the judge closes), and whether Ctrl-C stopped it. Closes ``judge``. ``judgesdk card`` judges
    through it too, so a card's results file is a ``judgesdk score`` results file."""
    finished: dict[int, JudgeResult] = {}
    interrupted = False
    try:
        with _progress(len(todo), quiet) as advance:

            def on_result(index: int, result: JudgeResult) -> None:
                finished[index] = result
                item, extra = todo[index]
                row = row_for(result, item.id or "", ask, extra)
                if ledger is not None:
                    ledger.write(row)
                else:
                    print(json.dumps(row, ensure_ascii=False), flush=True)
                advance()

            try:
                judge.score_many([item for item, _ in todo], criterion=criterion, on_result=on_result)
            except KeyboardInterrupt:  # score_many has stopped its calls: every finished result is written
                interrupted = True
        work = [] if interrupted else _model_work(judge) + (more_work(judge) if more_work is not None else [])
    finally:
        judge.close()
    results = list(finished.values()) if interrupted else [finished[i] for i in range(len(todo))]
    return results, work, interrupted


def _estimate_score(args: argparse.Namespace, items: Any, criterion: Any, config: Any, ask: Any) -> int:
    """``score --estimate``: what the run would ask of each provider, found without a model call
    (:mod:`judgesdk.forecast`); saved beside ``-o`` for the run's report."""
    from judgesdk import forecast

    found = forecast.forecast(config, [(criterion, forecast.todo_items(items, args.output, ask))])
    saved = forecast.save(found, args.output) if args.output is not None else None
    print(found.model_dump_json(), flush=True)
    if not args.quiet:
        _console().print(forecast.table(found, saved=saved))
    return EXIT_OK


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


def _check_results_path(path: Path | None) -> None:
    """``-o`` names a results file that can be read back (to resume) and appended to."""
    if path is None:
        return
    if path.is_dir():
        raise InputError(f"-o {path} is a directory: give the path of a results file, e.g. -o {path / 'results.jsonl'}")
    if not path.parent.is_dir():
        raise InputError(f"-o {path}: folder {path.parent} does not exist; create it or choose another path")


def _score_criteria(args: argparse.Namespace) -> Criterion | list[Criterion]:
    """The criterion of ``score``: from the flags, or the preset's named criteria (all of them when
    ``--criterion`` is left at its default); several are judged fine-grained, their mean with parts."""
    if args.preset is None:
        if "," in args.criterion and not args.definition:
            raise InputError(
                f"--criterion {args.criterion!r} lists several criteria: add --preset DATASET to take their definitions "
                "from a dataset preset, or judge one criterion with --definition"
            )
        return Criterion(name=args.criterion, description=args.definition or args.criterion, scale=parse_scale(args.scale))
    from judgesdk import presets

    if args.definition:
        raise InputError("--definition and --preset both define the criterion: use one")
    if args.criterion == "overall quality":
        return presets.criteria_for(args.preset)
    names = [name.strip() for name in args.criterion.split(",") if name.strip()]
    chosen = [presets.criterion(args.preset, name) for name in names]
    return chosen[0] if len(chosen) == 1 else chosen


class _progress:
    """A rich progress bar on stderr, or nothing when quiet."""

    def __init__(self, total: int, quiet: bool) -> None:
        self.total, self.quiet = total, quiet

    def __enter__(self):
        if self.quiet:
            return lambda: None
        from rich.progress import Progress

        self._bar = Progress(transient=True, console=_console())
        self._bar.start()
        task = self._bar.add_task("judging", total=self.total)
        return lambda: self._bar.advance(task)

    def __exit__(self, *exc: object) -> None:
        if not self.quiet:
            self._bar.stop()


def _console():
    from rich.console import Console

    return Console(stderr=True)


def _model_work(judge: Any) -> list[tuple[str, str]]:
    """Summary rows for what an in-process model evaluated (its prefix counters), if one was used."""
    from judgesdk.provider import unwrap

    rows: list[tuple[str, str]] = []
    for provider in judge.providers_in_use:
        counters = getattr(unwrap(provider), "counters", None)
        if counters is None or not counters.requests:
            continue
        rows.append(("model prompt tokens", f"{counters.prompt_tokens:,} in {counters.requests} requests"))
        evaluated = f"{counters.tokens_evaluated:,} (reused {counters.tokens_reused:,} from the KV cache)"
        if counters.unique_tokens:
            evaluated += f"; {counters.tokens_evaluated / counters.unique_tokens:.2f} x the {counters.unique_tokens:,} unique"
        rows.append(("model tokens evaluated", evaluated))
    return rows


def _methods_line(results: list[JudgeResult]) -> str:
    """The methods used, with a warning when scores of different methods (and so scales) are mixed."""
    methods = sorted({r.method for r in results if r.score is not None})
    families = {method_family(m) for m in methods}
    line = ", ".join(methods) or "-"
    return f"{line} (MIXED: scores on different scales)" if len(families) > 1 else line


def _summary(results: list[JudgeResult], skipped: int, unscored: int = 0, work: Sequence[tuple[str, str]] = ()) -> None:
    from rich.table import Table

    from judgesdk.scorers.auto import summary_rows as auto_summary_rows

    scores = [r.score for r in results if r.score is not None]
    statuses = {status: sum(r.status == status for r in results) for status in ("ok", "low_coverage", "unparsed", "error")}
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
    _console().print(table)
