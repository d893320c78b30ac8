"""``judgesdk`` command line: ``score``, ``compare``, ``rank``, ``bench``, ``meta-eval``, ``gate``,
``calibrate``, ``cache``, ``card``, ``diff``, ``view``, ``serve``.

Exit codes: one table, :class:`judgesdk.core.exits.ExitCode` (0 done, 1 a gate failed or ``diff`` found a change,
2 some items could not be judged or a gate is inconclusive, 3 usage or configuration error, 130 interrupted with
the finished results kept).

This module is the entry point (:func:`main`): it assembles the parser (a :class:`judgesdk.cli.usage.CommandParser`,
whose usage errors are one line and exit 3), turns input and configuration errors into exit code 3, sets up ``-v``, and holds the two small commands, ``bench`` and ``cache``. The others
live with their kin and register themselves: ``score`` (:mod:`judgesdk.cli.score`), ``compare`` and
``rank`` (:mod:`judgesdk.cli.compare`), ``meta-eval`` (:mod:`judgesdk.cli.meta_eval`), ``gate``,
``label-slice`` and ``calibrate`` (:mod:`judgesdk.cli.gate`), ``card`` (:mod:`judgesdk.cli.card`), ``diff`` (:mod:`judgesdk.cli.diff`), ``view`` (:mod:`judgesdk.cli.view`), ``serve`` (:mod:`judgesdk.cli.serve`). Each command imports what it runs only when
it runs, so that ``judgesdk --help`` starts quickly.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from judgesdk.cli import compare as compare_cli
from judgesdk.cli import diff as diff_cli
from judgesdk.cli import score as score_cli
from judgesdk.cli.usage import CommandParser, UsageExit
from judgesdk.core import ConfigError, ExitCode, InputError, JudgeSDKError
from judgesdk.judging import Interrupted


def main(argv: Sequence[str] | None = None) -> int:
    """Run one ``judgesdk`` command, as the console script does; the exit code is returned, not exited with, so
    that tests and other programs can call it.

    ``argv``: the arguments after the program name, or None for ``sys.argv[1:]``. Returns the exit code
    (:class:`judgesdk.core.exits.ExitCode`): the command's own; 3 for a usage error, no command, or an input or
    configuration error (printed as one ``judgesdk: ...`` line on stderr, no traceback); 130 for Ctrl-C."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except UsageExit:  # an unknown option, a missing argument, a bad value: said in one line (judgesdk.cli.usage)
        return ExitCode.USAGE
    if not hasattr(args, "func"):
        parser.print_help()
        return ExitCode.USAGE
    with _verbose_logging(args.verbose), _reader_may_leave() as stdout:
        try:
            code = int(args.func(args))
            stdout.flush()  # here, not at interpreter exit, where a closed pipe would turn the code into 120
            return code
        except (InputError, ConfigError) as exc:
            print(f"judgesdk: {exc}", file=sys.stderr)
            return ExitCode.USAGE
        except Interrupted as exc:  # Ctrl-C in a judging run (judgesdk.judging.runner): what was kept, in one line
            print(f"judgesdk: {exc}", file=sys.stderr)
            return ExitCode.INTERRUPTED
        except KeyboardInterrupt:  # Ctrl-C outside a judging run: one line, no traceback
            print("judgesdk: interrupted", file=sys.stderr)
            return ExitCode.INTERRUPTED


class _ReaderMayLeave:
    """``sys.stdout`` for one command, whose reader may stop reading (``judgesdk gate ... | head -1``).

    A closed pipe must not change the verdict: a failing gate piped into ``head`` exits 1 under ``pipefail``,
    as it does unpiped, and a passing one 0. So the first write that finds the pipe closed points the
    process's stdout at ``/dev/null`` (the output the reader no longer wants is dropped, quietly) and the
    command goes on to its own exit code, instead of ending on a ``BrokenPipeError`` with whatever code the
    handler chose. Everything but ``write`` and ``flush`` is the stream's own."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self.reader_left = False

    def write(self, text: str) -> int:
        if not self.reader_left:
            try:
                return int(self._stream.write(text))
            except BrokenPipeError:
                self._drop_the_rest()
        return len(text)

    def flush(self) -> None:
        if not self.reader_left:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._drop_the_rest()

    def _drop_the_rest(self) -> None:
        self.reader_left = True
        try:  # what the stream still buffers is written to /dev/null when it is flushed, at exit at the latest
            devnull = os.open(os.devnull, os.O_WRONLY)
            try:
                os.dup2(devnull, self._stream.fileno())
            finally:
                os.close(devnull)
        except (AttributeError, OSError, ValueError):  # not a file (a caller's or a test's stand-in): nothing to drop
            pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextmanager
def _reader_may_leave() -> Iterator[_ReaderMayLeave]:
    stream = sys.stdout
    guarded = _ReaderMayLeave(stream)
    sys.stdout = guarded
    try:
        yield guarded
    finally:
        if sys.stdout is guarded:
            sys.stdout = stream


VERBOSE_HELP = "log judgesdk's debug messages, and llama.cpp's own log, to stderr"


class _Stderr(logging.StreamHandler):
    """Writes to a copy of the process's stderr taken when ``-v`` was set up: llama-cpp-python points stderr
    (the file descriptor and ``sys.stderr``) at /dev/null while it loads a model, and that is when llama.cpp
    says why a file will not load. Where stderr is no file (a caller's or a test's stand-in), to
    ``sys.stderr`` as it is when each record comes."""

    def __init__(self) -> None:
        super().__init__()
        try:
            self._copy: Any = open(os.dup(sys.stderr.fileno()), "w", encoding="utf-8", errors="backslashreplace")
        except (AttributeError, OSError, ValueError):
            self._copy = None

    def emit(self, record: logging.LogRecord) -> None:
        self.stream = self._copy or sys.stderr
        super().emit(record)

    def close(self) -> None:
        if self._copy is not None:
            self._copy.close()
            self._copy = None
        super().close()


@contextmanager
def _verbose_logging(verbose: bool) -> Iterator[None]:
    """With ``-v``, every ``judgesdk`` logger at DEBUG on stderr for the command's duration (llama.cpp's log
    is ``judgesdk.llamacpp``). Without, nothing is configured: warnings reach stderr through Python's
    last-resort handler, and llama.cpp's chatter, which has a handler that drops it, stays quiet."""
    if not verbose:
        yield
        return
    logger, handler = logging.getLogger("judgesdk"), _Stderr()
    level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)
        handler.close()


def _accept_verbose(parser: argparse.ArgumentParser) -> None:
    """``-v`` after any command too (``judgesdk score -v ...``), not only before it."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                if not {"-v", "--verbose"} & set(sub._option_string_actions):
                    sub.add_argument("-v", "--verbose", action="store_true", default=argparse.SUPPRESS, help=VERBOSE_HELP)
                _accept_verbose(sub)


def build_parser() -> argparse.ArgumentParser:
    """The ``judgesdk`` parser with every command registered (each imports what it runs only when it runs), and
    ``-v`` accepted before or after the command. Takes nothing; returns a :class:`judgesdk.cli.usage.CommandParser`,
    whose parsed arguments carry the chosen command's handler as ``func``."""
    parser = CommandParser(prog="judgesdk", description="Judge generated text with language models.")
    parser.add_argument("-v", "--verbose", action="store_true", help=VERBOSE_HELP)
    commands = parser.add_subparsers(metavar="COMMAND")
    score_cli.register(commands)
    _add_cache(commands)
    _add_bench(commands)
    compare_cli.register(commands)
    try:
        from judgesdk.cli.meta_eval import register as register_meta
    except ImportError:  # pragma: no cover - meta-evaluation ships with the package
        pass
    else:
        register_meta(commands)
    from judgesdk.cli.card import register as register_card  # judge cards (judgesdk.meta.card)

    register_card(commands)
    from judgesdk.cli.gate import register as register_gate

    register_gate(commands)
    diff_cli.register(commands)
    from judgesdk.cli.view import register as register_view  # judgesdk view (judgesdk.view)

    register_view(commands)
    from judgesdk.cli.serve import register as register_serve  # judgesdk serve (judgesdk.serve)

    register_serve(commands)
    _accept_verbose(parser)
    return parser


# -- bench --------------------------------------------------------------------------------------------


def _add_bench(commands: Any) -> None:
    p = commands.add_parser("bench", help="run a judge over a benchmark subset, then meta-evaluate it")
    p.add_argument("--dataset", required=True, help="summeval, topicalchat, newsroom or hanna")
    p.add_argument("--data-dir", type=Path, help="folder with <dataset>.jsonl (default: ../shared/data or $JUDGESDK_SHARED_DATA)")
    p.add_argument("--docs", type=int, help="only the first N documents")
    p.add_argument("--systems", help="comma list of system ids (default: all)")
    p.add_argument("--criteria", help="comma list (default: every criterion of the dataset preset)")
    p.add_argument("--method", default="auto", help="scoring method (default auto: fused where fitted, else geval)")
    p.add_argument("--config", type=Path, help="judge config (TOML/YAML)")
    p.add_argument("--out", type=Path, default=Path("bench-out"), help="predictions folder (default ./bench-out)")
    p.add_argument("--bootstrap", type=int, default=0, metavar="N", help="bootstrap CIs with N document resamples")
    p.add_argument("--json", action="store_true", help="print one JSON object per criterion")
    p.add_argument(
        "--text", choices=["natural", "published"], default="natural",
        help="natural (default): untokenized, recased text as users write it (judgesdk.meta.naturalize; what the fused "
        "judge was fitted on); published: the tokenized text the papers evaluated",
    )  # fmt: skip
    p.set_defaults(func=run_bench)


def run_bench(args: argparse.Namespace) -> int:
    from judgesdk.cli.meta_eval import print_result
    from judgesdk.judging import Judge
    from judgesdk.meta import evaluate, load_dataset, natural, predictions_path, run_criterion, select
    from judgesdk.prompting import criteria_for, criterion
    from judgesdk.scorers import NOT_SUMMARIES

    blocking = next((path for path in (args.out, *args.out.parents) if path.exists()), None)
    if blocking is not None and not blocking.is_dir():  # before any model runs: predictions go into a folder
        raise InputError(f"--out {args.out}: {blocking} is a file, not a folder: --out names the folder predictions are written to")
    records = select(
        load_dataset(args.dataset, args.data_dir), docs=args.docs, systems=args.systems.split(",") if args.systems else None
    )
    if args.text == "natural":
        records = [natural(r) for r in records]
    wanted = [criterion(args.dataset, name) for name in args.criteria.split(",")] if args.criteria else criteria_for(args.dataset)
    with Judge.from_config(args.config) as judge:
        if args.dataset in NOT_SUMMARIES and judge.options.dataset is None:  # auto: stories and dialogues are no summaries
            judge.options = judge.options.model_copy(update={"dataset": args.dataset})
        for crit in wanted:
            path = predictions_path(args.out, args.dataset, crit.name, args.method)
            judged = run_criterion(judge, records, crit, args.method, path)
            result = evaluate(records, crit, path, bootstrap=args.bootstrap)
            if args.json:
                print(result.model_dump_json())
            else:
                print(f"{crit.name}: judged {judged} now, {len(records) - judged} from earlier runs ({path})", file=sys.stderr)
                print_result(result)
    return ExitCode.OK


# -- cache --------------------------------------------------------------------------------------------


def _add_cache(commands: Any) -> None:
    p = commands.add_parser("cache", help="inspect, clear or merge response caches")
    p.add_argument("action", choices=["stats", "clear", "merge"])
    p.add_argument("folders", nargs="*", type=Path, metavar="DST SRC", help="merge: the cache folder DST, then the folders merged into it (one per node)")
    p.add_argument("--dir", type=Path, help="cache directory (default: the configured one)")
    p.add_argument("--namespace", help="clear only this namespace")
    p.add_argument("--config", type=Path)
    p.set_defaults(func=run_cache)


def run_cache(args: argparse.Namespace) -> int:
    from judgesdk.judging import load_config
    from judgesdk.provider import cache_stats, clear_cache

    if args.action == "merge" or args.folders:  # one SQLite cache per node, merged after a cluster run
        if args.action != "merge":
            raise InputError(f"cache {args.action} takes no folder arguments (use --dir)")
        if len(args.folders) < 2:
            raise InputError("cache merge takes the destination folder, then one or more cache folders: judgesdk cache merge DST SRC...")
        from judgesdk.distributed import merge_caches

        print(merge_caches(args.folders[0], args.folders[1:]).model_dump_json())
        return ExitCode.OK
    directory = args.dir or load_config(args.config).cache.directory
    if args.action == "stats":
        print(json.dumps({"directory": str(directory), **cache_stats(directory)}))
    else:
        print(json.dumps({"directory": str(directory), "removed": clear_cache(directory, args.namespace)}))
    return ExitCode.OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())


__all__ = ["main", "build_parser", "JudgeSDKError"]
