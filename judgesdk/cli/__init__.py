"""Floor 13, the command line: ``judgesdk COMMAND``, one module per command.

:mod:`~judgesdk.cli.app` assembles the parser and turns typed input and configuration errors into exit 3;
:mod:`~judgesdk.cli.exits` is the one table of exit codes; :mod:`~judgesdk.cli.flags` holds what several
commands share (the flags that build a judge, progress, the console). Each command module registers its
parser and imports what it runs only when it runs, so that ``judgesdk --help`` starts quickly.

May import: every floor below.
"""

from __future__ import annotations

from judgesdk.cli.app import build_parser, main

__all__ = ["build_parser", "main"]
