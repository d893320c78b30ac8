"""``judgesdk compare`` and ``judgesdk rank``: outputs judged against each other, not each on a scale.

    judgesdk compare --a TEXT|FILE --b TEXT|FILE --source TEXT|FILE [--protocol pairwise|h2h]
    judgesdk rank OUTPUTS.jsonl [--source TEXT|FILE] [--strategy S] [--budget R] [--selection SEL]

``compare`` asks which of two outputs is better, in both orders (004's pairwise comparative assessment, or
001's head-to-head with ties); ``rank`` orders the outputs of one source by such comparisons, over a chosen
comparison set or a Bradley-Terry fit. Both print their result as JSON and exit 0, or 2 where some
comparison got no answer. A text flag takes the text itself or the path of a file holding it; a value that
looks like a path but names no file is an error, never judged as text. The judge is built from the same
flags as ``score``'s (:func:`judgesdk.cli.score.add_judge_flags`).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from judgesdk.cli.flags import add_judge_flags, config_mapping
from judgesdk.core import Criterion, ExitCode, InputError, JudgeItem, ProviderError
from judgesdk.records import read_items

__all__ = ["register", "run_compare", "run_rank"]


def register(commands: Any) -> None:
    """Add ``compare`` and ``rank`` to an ``argparse`` subparsers object."""
    _add_compare(commands)
    _add_rank(commands)


def _add_comparison_flags(p: Any) -> None:
    p.add_argument("--criterion", default="overall quality", help="criterion name (default: overall quality)")
    p.add_argument("--definition", help="criterion definition")
    p.add_argument("--protocol", choices=["pairwise", "h2h"], default="pairwise", help="pairwise (004, default) or h2h (001: A/B/tie)")
    p.add_argument("--dataset", help="dataset-specific prompt variant, e.g. summeval")
    add_judge_flags(p, template_help="comparison template id or TOML path (default: pairwise.compare / h2h.<criterion>)")
    p.set_defaults(method=None)


def _add_compare(commands: Any) -> None:
    p = commands.add_parser("compare", help="which of two outputs is better, asked in both orders; prints JSON")
    p.add_argument("--a", required=True, help="first output: the text, or the path of a file holding it (a value that looks like a file name, e.g. a.txt, must name an existing file)")
    p.add_argument("--b", required=True, help="second output: the text, or the path of a file holding it (as --a)")
    p.add_argument("--source", required=True, help="the source both outputs were written for: text or file path (as --a)")
    _add_comparison_flags(p)
    p.set_defaults(func=run_compare)


def _add_rank(commands: Any) -> None:
    from judgesdk.scorers import SELECTIONS, STRATEGIES

    p = commands.add_parser("rank", help="rank the outputs of one source by pairwise comparisons; prints JSON")
    p.add_argument("input", type=Path, help="JSONL: one object per line with 'output' (and optional 'id', 'source')")
    p.add_argument("--source", help="source text or file path (default: the 'source' all lines share)")
    p.add_argument("--strategy", choices=STRATEGIES, default="full", help="004 §3.4 comparison set, or bradley-terry")
    p.add_argument("--budget", type=int, help="number of comparisons R for random, no-repeat, symmetric (and bradley-terry)")
    p.add_argument("--selection", choices=SELECTIONS, help="comparisons bradley-terry is fitted to")
    p.add_argument("--seed", type=int, default=0, help="seed of random comparison sets (default 0)")
    _add_comparison_flags(p)
    p.set_defaults(func=run_rank)


def _text_or_file(value: str, flag: str) -> str:
    """The file ``value`` names, read as UTF-8; else ``value`` itself, unless it looks like a file path
    (one word ending in a text file extension such as ``.txt``, starting with ``/``, ``./``, ``../``, ``~/``,
    or naming a file in an existing folder): then the file is missing, and judging the path's own characters
    would be a silent wrong answer."""
    path = Path(value).expanduser()
    try:
        is_file = path.is_file()
    except (OSError, ValueError):  # e.g. a text too long to be a file name, or one with a NUL
        return value
    if is_file:
        try:
            return path.read_text(encoding="utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"{flag} {value}: the file is not UTF-8 text (byte {exc.start}); save it as UTF-8") from None
        except OSError as exc:
            raise InputError(f"{flag} {value}: cannot read the file ({exc.strerror or exc})") from None
    if _looks_like_path(value):
        what = "is a directory" if path.is_dir() else "no such file"
        raise InputError(f"{flag} {value}: {what}; pass the path of an existing file, or the text itself")
    return value


_PATH_START = ("/", "./", "../", "~/")
_TEXT_SUFFIXES = {".txt", ".text", ".md", ".rst", ".json", ".jsonl", ".html", ".htm", ".xml", ".csv", ".tsv", ".log", ".yaml", ".yml", ".toml"}


def _looks_like_path(value: str) -> bool:
    if not value or any(c.isspace() for c in value):
        return False
    path = Path(value).expanduser()
    return (
        value.startswith(_PATH_START)
        or path.suffix.lower() in _TEXT_SUFFIXES
        or ("/" in value.strip("/") and path.parent.is_dir())
    )


def _comparison_judge(args: argparse.Namespace) -> Any:
    from judgesdk.judging import Judge

    config = config_mapping(args)
    if args.dataset:
        config["dataset"] = args.dataset
    return Judge.from_config(config)


def _criterion_of(args: argparse.Namespace) -> Criterion:
    return Criterion(name=args.criterion, description=args.definition or args.criterion)


def run_compare(args: argparse.Namespace) -> int:
    a, b, source = _text_or_file(args.a, "--a"), _text_or_file(args.b, "--b"), _text_or_file(args.source, "--source")
    with _comparison_judge(args) as judge:
        try:
            result = judge.compare(a, b, source=source, criterion=_criterion_of(args), protocol=args.protocol)
        except ProviderError as exc:
            print(f"judgesdk: {exc}", file=sys.stderr)
            return ExitCode.INCOMPLETE
    print(result.model_dump_json(indent=2))
    return ExitCode.OK if result.p_a_better is not None else ExitCode.INCOMPLETE


def run_rank(args: argparse.Namespace) -> int:
    items = [item for item, _ in read_items(args.input)]
    source = _text_or_file(args.source, "--source") if args.source else _shared_source(items, args.input)
    with _comparison_judge(args) as judge:
        try:
            result = judge.rank(
                [item.output for item in items],
                source=source,
                criterion=_criterion_of(args),
                strategy=args.strategy,
                budget=args.budget,
                protocol=args.protocol,
                selection=args.selection,
                seed=args.seed,
                ids=[item.id for item in items],
            )
        except ProviderError as exc:
            print(f"judgesdk: {exc}", file=sys.stderr)
            return ExitCode.INCOMPLETE
    print(result.model_dump_json(indent=2))
    return ExitCode.OK if all(s is not None for s in result.scores) else ExitCode.INCOMPLETE


def _shared_source(items: list[JudgeItem], path: Path) -> str:
    sources = {item.source for item in items if item.source}
    if len(sources) != 1:
        found = "no 'source'" if not sources else f"{len(sources)} different sources"
        raise InputError(f"{path}: rank compares outputs of one source, and the lines have {found}; pass --source")
    return sources.pop()
