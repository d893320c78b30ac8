"""The one exit table (judgesdk.core.exits.ExitCode): its codes are distinct, each is documented in the module's
table, and each kind of error a command raises ends in the code the table gives it (what ``judgesdk`` exits)."""

from __future__ import annotations

import re

import pytest

import judgesdk.cli.app as app
from judgesdk.core import exits
from judgesdk.core.errors import ConfigError, InputError, MissingItemField
from judgesdk.core.exits import ExitCode
from judgesdk.gate import EXIT_CODES
from judgesdk.judging.runner import Interrupted


def test_the_codes_are_distinct_and_as_scripts_read_them():
    assert len({member.value for member in ExitCode.__members__.values()}) == len(ExitCode.__members__)  # no alias
    assert {m.name: m.value for m in ExitCode} == {"OK": 0, "FAILED": 1, "INCOMPLETE": 2, "USAGE": 3, "INTERRUPTED": 130}


def test_every_code_is_documented_in_the_table_and_nothing_else_is():
    rows = re.findall(r"^(\d+)\s+``([A-Z_]+)``\s+\S", exits.__doc__ or "", flags=re.MULTILINE)
    assert {name: int(code) for code, name in rows} == {m.name: m.value for m in ExitCode}


def test_a_gates_verdict_exits_with_the_tables_codes():
    assert EXIT_CODES == {"pass": ExitCode.OK, "fail": ExitCode.FAILED, "inconclusive": ExitCode.INCOMPLETE}


@pytest.mark.parametrize(
    "raised,code,says",
    [
        (InputError("--scale must look like 1-5"), ExitCode.USAGE, "judgesdk: --scale must look like 1-5"),
        (MissingItemField("item a lacks a source"), ExitCode.USAGE, "judgesdk: item a lacks a source"),
        (ConfigError("invalid judgesdk config"), ExitCode.USAGE, "judgesdk: invalid judgesdk config"),
        (Interrupted("kept 3 of 5 results"), ExitCode.INTERRUPTED, "judgesdk: kept 3 of 5 results"),
        (KeyboardInterrupt(), ExitCode.INTERRUPTED, "judgesdk: interrupted"),
    ],
)
def test_each_error_a_command_raises_exits_with_its_code_and_one_line(monkeypatch, capsys, raised, code, says):
    def command(args):
        raise raised

    monkeypatch.setattr(app, "run_cache", command)  # `judgesdk cache` runs whatever run_cache is when the parser is built
    assert app.main(["cache", "stats"]) == code
    err = capsys.readouterr().err
    assert err == says + "\n"


@pytest.mark.parametrize("returned", list(ExitCode))
def test_a_commands_code_is_what_judgesdk_exits(monkeypatch, returned):
    monkeypatch.setattr(app, "run_cache", lambda args: returned)
    assert app.main(["cache", "stats"]) == returned
