"""Command-line usage errors exit 3 (the exit table's usage code, judgesdk.core.exits), never argparse's 2, which the
table gives to "incomplete / inconclusive": ``judgesdk gate --confg x`` in CI must read as a usage error. Each is one
line on stderr naming the command and what to fix; an unknown option names the nearest real one (judgesdk.cli.usage)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from judgesdk.cli.app import build_parser, main
from judgesdk.cli.usage import UsageExit
from judgesdk.core.exits import ExitCode

from support.hostile import assert_one_line_error

JUDGESDK = Path(sys.executable).with_name("judgesdk")


def usage(argv: list[str], capsys) -> str:
    """What ``judgesdk ARGV`` says on stderr, having checked it exits 3 with one line and printed nothing else."""
    code = main(argv)
    out, err = capsys.readouterr()
    assert_one_line_error(code, err, status=ExitCode.USAGE)
    assert out == "", out
    return err.strip()


@pytest.mark.parametrize(
    "argv,says",
    [
        (["gate", "--confg", "x"], "judgesdk gate: unknown option --confg; did you mean --config?"),
        (["gate", "--confg=x"], "judgesdk gate: unknown option --confg; did you mean --config?"),
        (["gate", "--config", "g.toml", "--jsn"], "judgesdk gate: unknown option --jsn; did you mean --json?"),
        (["score", "in.jsonl", "--critrion", "coherence"], "judgesdk score: unknown option --critrion; did you mean --criterion?"),
        (["--verbse", "diff", "a", "b"], "judgesdk: unknown option --verbse; did you mean --verbose?"),
        (["diff", "a", "b", "--zzzzzz"], "judgesdk diff: unknown option --zzzzzz (judgesdk diff --help lists the options)"),
    ],
)
def test_an_unknown_option_is_named_with_the_nearest_one_of_its_command(capsys, argv, says):
    assert usage(argv, capsys) == says


def test_an_unknown_option_is_named_before_a_missing_required_one(capsys):
    says = usage(["calibrate", "--humn", "h.jsonl", "--dimension", "coherence"], capsys)
    assert says == "judgesdk calibrate: unknown option --humn; did you mean --human?"


@pytest.mark.parametrize(
    "argv,needles",
    [
        (["scroe", "in.jsonl"], ["judgesdk: unknown command 'scroe'; did you mean score?"]),
        (["frobnicate"], ["judgesdk: unknown command 'frobnicate' (commands: score, ", "gate"]),
        (["gate"], ["judgesdk gate: the following arguments are required: --config"]),
        (["label-slice", "--results", "r.jsonl"], ["judgesdk label-slice: ", "required", "--n", "--pilot"]),
        (["calibrate", "--human", "h", "--dimension", "d", "--method", "isotonc"],
         ["judgesdk calibrate: argument --method: invalid choice 'isotonc'; did you mean isotonic? (choose from isotonic, linear)"]),
        (["score", "in.jsonl", "--engine", "spark"], ["judgesdk score: argument --engine: invalid choice 'spark' (choose from local, ray)"]),
        (["label-slice", "--results", "r.jsonl", "--n", "many"], ["judgesdk label-slice: argument --n: invalid int value: 'many'"]),
        (["label-slice", "--results", "r", "--n", "3", "--pilot", "p"], ["judgesdk label-slice: argument --pilot: not allowed with argument --n"]),
        (["diff", "a", "b", "c"], ["judgesdk diff: unexpected argument c"]),
        (["gate", "--config", "g.toml", "--j", "x"], ["judgesdk gate: ", "ambiguous option: --j could match", "--junit", "--json"]),
    ],
)  # fmt: skip
def test_every_other_usage_error_exits_3_in_one_line(capsys, argv, needles):
    says = usage(argv, capsys)
    for needle in needles:
        assert needle in says, (needle, says)


def test_what_ran_before_still_runs():
    parser = build_parser()
    assert parser.parse_args(["gate", "--conf", "g.toml"]).config == Path("g.toml")  # an abbreviation argparse reads
    assert parser.parse_args(["gate", "--config=g.toml", "-v"]).verbose is True
    assert parser.parse_args(["label-slice", "--results", "r", "--n", "3", "-oslice.jsonl"]).output == Path("slice.jsonl")
    assert parser.parse_args(["diff", "a.jsonl", "-", "--tolerance", "-0.5"]).tolerance == -0.5  # a negative number is a value
    assert parser.parse_args(["diff", "--", "-a.jsonl", "b.jsonl"]).old == Path("-a.jsonl")  # after --, no option


def test_help_still_exits_0(capsys):
    with pytest.raises(SystemExit) as done:
        main(["gate", "--help"])
    assert done.value.code == 0 and "--config" in capsys.readouterr().out
    with pytest.raises(UsageExit) as refused:  # a caller of parse_args gets a SystemExit, as from argparse
        build_parser().parse_args(["gate", "--confg", "x"])
    assert refused.value.code == ExitCode.USAGE and isinstance(refused.value, SystemExit)


def test_the_installed_command_exits_3_naming_the_option():
    assert JUDGESDK.exists(), JUDGESDK
    env = {**os.environ, "NO_COLOR": "1"}
    done = subprocess.run([str(JUDGESDK), "gate", "--confg", "x"], capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == ExitCode.USAGE, (done.returncode, done.stderr)
    assert done.stderr == "judgesdk gate: unknown option --confg; did you mean --config?\n" and done.stdout == ""
