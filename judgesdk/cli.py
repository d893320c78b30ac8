"""``judgesdk`` command line: ``score``, ``cache``, ``meta-eval``.

Exit codes: 0 every item has a score (some may carry a warning status such as ``low_coverage``);
2 some items could not be judged (results written, statuses say which);
3 usage or configuration error.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from judgesdk.errors import ConfigError, InputError, JudgeSDKError
from judgesdk.types import Criterion, JudgeItem, JudgeResult, Scale

EXIT_OK, EXIT_INCOMPLETE, EXIT_USAGE = 0, 2, 3


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "func"):
        parser.print_help()
        return EXIT_USAGE
    try:
        return int(args.func(args))
    except (InputError, ConfigError) as exc:
        print(f"judgesdk: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except BrokenPipeError:  # e.g. piped into `head`: stop quietly
        sys.stderr.close()
        return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="judgesdk", description="Judge generated text with language models.")
    commands = parser.add_subparsers(metavar="COMMAND")
    _add_score(commands)
    _add_cache(commands)
    try:
        from judgesdk.meta.cli import register as register_meta
    except ImportError:  # pragma: no cover - meta-evaluation ships with the package
        pass
    else:
        register_meta(commands)
    return parser


# -- score -----------------------------------------------------------------------------------------


def _add_score(commands: Any) -> None:
    p = commands.add_parser("score", help="judge every line of a JSONL file")
    p.add_argument("input", type=Path, help="JSONL: one object per line with 'output' and optional 'source', 'reference', 'context', 'id'")
    p.add_argument("-o", "--output", type=Path, help="JSONL results (appended; items already there are skipped)")
    p.add_argument("--config", type=Path, help="TOML or YAML judge config")
    p.add_argument("--criterion", default="overall quality", help="criterion name (default: overall quality)")
    p.add_argument("--definition", help="criterion definition shown to the judge")
    p.add_argument("--scale", default="1-5", help="Likert scale LOW-HIGH (default 1-5)")
    p.add_argument("--method", help="geval (002 Logprob, default), direct, sampling (002 Approximation), rts, mcq, likelihood, synthetic, fusion")
    p.add_argument("--provider", choices=["openai", "anthropic", "litellm", "local"], help="use one provider instead of the config's chain")
    p.add_argument("--model")
    p.add_argument("--base-url")
    p.add_argument("--api", choices=["chat", "completions"])
    p.add_argument("--template", help="template id or TOML path (default: the method's own)")
    p.add_argument("--no-cache", action="store_true")
    p.add_argument("--quiet", action="store_true", help="no progress bar or table")
    p.set_defaults(func=run_score)


def parse_scale(text: str) -> Scale:
    try:
        low, high = (int(part) for part in text.split("-", 1))
    except ValueError as exc:
        raise InputError(f"--scale must look like 1-5, got {text!r}") from exc
    return Scale.likert(low, high)


_TEXT_FIELDS = ("output", "source", "context", "reference", "id")


def read_items(path: Path) -> list[tuple[JudgeItem, dict[str, Any]]]:
    """Items of a JSONL file, each with the line's other fields (``doc_id``, ``system_id``...) to carry
    into its result line, so that results join back to their inputs (e.g. in ``meta-eval``)."""
    if not path.exists():
        raise InputError(f"input file {path} does not exist")
    items = []
    for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            raise InputError(f"{path}:{number}: not valid JSON ({exc.msg})") from exc
        if not isinstance(raw, dict) or "output" not in raw:
            raise InputError(f"{path}:{number}: each line must be an object with an 'output' field")
        raw["id"] = str(raw.get("id") or f"{raw.get('doc_id', '')}:{raw.get('system_id', '')}".strip(":") or number)
        try:
            item = JudgeItem(**{k: raw.get(k) for k in _TEXT_FIELDS})
        except InputError as exc:
            raise InputError(f"{path}:{number}: {exc}") from exc
        items.append((item, {k: v for k, v in raw.items() if k not in _TEXT_FIELDS and k != "scores"}))
    if not items:
        raise InputError(f"{path} has no items to judge")
    return items


def _config_mapping(args: argparse.Namespace) -> dict[str, Any]:
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
    return config


def run_score(args: argparse.Namespace) -> int:
    from judgesdk.judge import Judge

    items = read_items(args.input)
    criterion = Criterion(name=args.criterion, description=args.definition or args.criterion, scale=parse_scale(args.scale))
    done = _done_ids(args.output)
    todo = [(item, extra) for item, extra in items if item.id not in done]
    judge = Judge.from_config(_config_mapping(args))
    sink = args.output.open("a", encoding="utf-8") if args.output else None
    results: list[JudgeResult] = []
    try:
        with _progress(len(todo), args.quiet) as advance:

            def on_result(index: int, result: JudgeResult) -> None:
                results.append(result)
                line = json.dumps(_record(*todo[index], result), ensure_ascii=False)
                if sink is not None:
                    sink.write(line + "\n")
                    sink.flush()
                else:
                    print(line)
                advance()

            judge.score_many([item for item, _ in todo], criterion=criterion, on_result=on_result)
    finally:
        if sink is not None:
            sink.close()
        judge.close()
    if not args.quiet:
        _summary(results, skipped=len(items) - len(todo))
    return EXIT_OK if all(r.score is not None for r in results) else EXIT_INCOMPLETE


def _record(item: JudgeItem, extra: dict[str, Any], result: JudgeResult) -> dict[str, Any]:
    record = {**extra, **result.model_dump(mode="json", exclude={"distribution"})}
    record["id"] = item.id
    distribution = result.distribution
    if distribution is not None:
        record["distribution"] = {
            "method": distribution.method,
            "probs": distribution.as_dict(),
            "expected": distribution.expected,
            "mode": distribution.mode,
            "entropy": distribution.entropy,
            "coverage": distribution.coverage,
            "low_coverage": distribution.low_coverage,
            "n_samples": distribution.n_samples,
            "n_unparsed": distribution.n_unparsed,
            "stderr": distribution.stderr,
        }
    return record


def _done_ids(path: Path | None) -> set[str]:
    if path is None or not path.exists():
        return set()
    done = set()
    for line in path.read_text(encoding="utf-8").splitlines():
        try:
            done.add(str(json.loads(line)["id"]))
        except (json.JSONDecodeError, KeyError, TypeError):
            continue
    return done


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


def _summary(results: list[JudgeResult], skipped: int) -> None:
    from rich.table import Table

    scores = [r.score for r in results if r.score is not None]
    statuses = {status: sum(r.status == status for r in results) for status in ("ok", "low_coverage", "unparsed", "error")}
    table = Table(title="judgesdk score", show_header=False)
    rows = [
        ("items judged", str(len(results))),
        ("already done (skipped)", str(skipped)),
        *((f"status {status}", str(count)) for status, count in statuses.items() if count),
        ("mean score", f"{sum(scores) / len(scores):.3f}" if scores else "-"),
        ("methods", ", ".join(sorted({r.method for r in results}))),
        ("providers", ", ".join(sorted({f"{r.provider}/{r.model}" for r in results if r.provider}))),
        ("served from cache", str(sum(r.cached for r in results))),
    ]
    for name, value in rows:
        table.add_row(name, value)
    _console().print(table)


# -- cache -----------------------------------------------------------------------------------------


def _add_cache(commands: Any) -> None:
    p = commands.add_parser("cache", help="inspect or clear the response cache")
    p.add_argument("action", choices=["stats", "clear"])
    p.add_argument("--dir", type=Path, help="cache directory (default: the configured one)")
    p.add_argument("--namespace", help="clear only this namespace")
    p.add_argument("--config", type=Path)
    p.set_defaults(func=run_cache)


def run_cache(args: argparse.Namespace) -> int:
    from judgesdk.cache import cache_stats, clear_cache
    from judgesdk.config import load_config

    directory = args.dir or load_config(args.config).cache.directory
    if args.action == "stats":
        print(json.dumps({"directory": str(directory), **cache_stats(directory)}))
    else:
        print(json.dumps({"directory": str(directory), "removed": clear_cache(directory, args.namespace)}))
    return EXIT_OK


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())


__all__ = ["main", "build_parser", "JudgeSDKError"]
