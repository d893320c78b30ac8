"""Gate test helpers, shared by the gate, cost and calibration tests: a scripted judge whose answers the items
dictate, items and results files written for a gate config, and ``judgesdk gate`` run in process."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from judgesdk.core.errors import ConfigError, InputError, PermanentError
from judgesdk.gate import GateResult, Verdict, load_gate_config
from judgesdk.provider.protocol import as_text
from judgesdk.providers.scripted import ScriptedReply


def scripted_rule(request):
    """Score Q<n> (1-5) with probability mass C<pct>% (default 100); ERR fails the call."""
    text = as_text(request.messages)
    if "ERR" in text:
        raise PermanentError("scripted failure", provider="scripted")
    score = re.search(r"Q(\d)", text)
    mass = re.search(r"C(\d+)", text)
    return ScriptedReply(label_probs={score.group(1) if score else "3": int(mass.group(1)) / 100 if mass else 1.0})


def write_items(path: Path, outputs: dict[str, str]) -> Path:
    path.write_text("".join(json.dumps({"id": i, "output": o, "source": "the source"}) + "\n" for i, o in outputs.items()))
    return path


def gate(verdict: Verdict, check: str) -> GateResult:
    return next(g for g in verdict.gates if g.check == check)


def run_cli(argv: list[str]) -> int:
    """``judgesdk <argv>`` through :func:`judgesdk.cli.app.main` once ``gate_cli.register`` is wired into it; until
    then through a parser with ``register`` and main's error mapping (InputError/ConfigError -> exit 3)."""
    import sys

    from judgesdk.cli import app as cli
    from judgesdk.cli.gate import register

    commands = [a for a in cli.build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    if any("gate" in a.choices for a in commands):
        return cli.main(argv)
    parser = argparse.ArgumentParser(prog="judgesdk")
    register(parser.add_subparsers())
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except (InputError, ConfigError) as exc:
        print(f"judgesdk: {exc}", file=sys.stderr)
        return 3


def judged_config(tmp_path: Path, outputs: dict[str, str], gates: list[dict], **extra):
    write_items(tmp_path / "items.jsonl", outputs)
    data = {
        "judge": {"cache": {"directory": str(tmp_path / "cache")}, "concurrency": 1},
        "input": str(tmp_path / "items.jsonl"), "results": str(tmp_path / "results.jsonl"),
        "criteria": [{"name": "quality"}], "gates": [{"criterion": "quality", **g} for g in gates], **extra,
    }  # fmt: skip
    return load_gate_config(data)


def results_file(path: Path, scores: dict[str, float | None], coverage: float = 0.9) -> Path:
    rows = []
    for i, score in scores.items():
        dist = None if score is None else {"method": "exact", "probs": {str(v): float(v == round(score)) for v in range(1, 6)}, "coverage": coverage}
        rows.append({"id": i, "score": score, "status": "ok" if score is not None else "error", "criterion": "quality", "method": "geval/exact", "distribution": dist})
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path
