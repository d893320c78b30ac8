"""What several commands share: the flags that build a judge and how they become its config, the progress bar,
the console (stderr)."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from judgesdk.core import InputError, Scale
from judgesdk.judging import Outcome, RowSink, Task, run

__all__ = ["add_judge_flags", "config_mapping", "console", "judge_rows", "model_work", "parse_options", "parse_scale", "progress"]


def add_judge_flags(p: Any, template_help: str) -> None:
    """Flags that build the judge, shared by every command that judges."""
    p.add_argument("--config", type=Path, help="TOML or YAML judge config")
    from judgesdk.provider import provider_kinds  # kinds by name only: no adapter is imported

    # checked with the config (an unknown kind: exit 3, naming the valid ones), not by argparse
    p.add_argument("--provider", metavar="KIND", help=f"use one provider instead of the config's chain: {', '.join(provider_kinds())}")
    p.add_argument("--model")
    p.add_argument("--base-url")
    p.add_argument("--api", choices=["chat", "completions", "decisions", "systemone"])
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
    from judgesdk.judging import load_config

    config = load_config(args.config).model_dump()
    stray = [flag for flag, value in (("--model", args.model), ("--base-url", args.base_url), ("--api", args.api)) if value]
    if stray and not args.provider:
        raise InputError(
            f"{' and '.join(stray)} {'goes' if len(stray) == 1 else 'go'} with --provider KIND (the one provider judging instead of "
            "the config's chain): add --provider, or set model and base_url under [[providers]] in --config"
        )
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
        from judgesdk.scorers import check_method_options

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


class progress:
    """A rich progress bar on stderr, or nothing when quiet."""

    def __init__(self, total: int, quiet: bool) -> None:
        self.total, self.quiet = total, quiet

    def __enter__(self):
        if self.quiet:
            return lambda: None
        from rich.progress import Progress

        self._bar = Progress(transient=True, console=console())
        self._bar.start()
        task = self._bar.add_task("judging", total=self.total)
        return lambda: self._bar.advance(task)

    def __exit__(self, *exc: object) -> None:
        if not self.quiet:
            self._bar.stop()


def console() -> Any:
    from rich.console import Console

    return Console(stderr=True)


def judge_rows(
    judge: Any, task: Task, sink: RowSink, *, quiet: bool, more_work: Callable[[Any], list[tuple[str, str]]] | None = None
) -> tuple[Outcome, list[tuple[str, str]]]:
    """``task`` judged into ``sink`` by the one runner (:func:`judgesdk.judging.runner.run`) behind a progress bar,
    and the model's work summary (with ``more_work(judge)``'s rows), read before the judge is closed. Closes
    ``judge``: ``score`` and ``card`` judge through it, so a card's results file is a ``score`` results file."""
    try:
        with progress(len(task.items), quiet) as advance:
            outcome = run(judge, [task], sink, progress=advance)
        work = [] if outcome.interrupted else model_work(judge) + (more_work(judge) if more_work is not None else [])
    finally:
        judge.close()
    return outcome, work


def model_work(judge: Any) -> list[tuple[str, str]]:
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
