"""Floor 13, the command line: ``judgesdk COMMAND``, one module per command.

:mod:`~judgesdk.cli.app` assembles the parser and turns typed input and configuration errors into exit 3;
:mod:`~judgesdk.cli.usage` is that parser, whose usage errors (an unknown option, a missing argument, a bad value)
are one line and exit 3 too; every command returns a code of the one table, :mod:`judgesdk.core.exits`;
:mod:`~judgesdk.cli.flags` holds what several commands share (the flags that build a judge, progress, the
console). Each command module registers its parser and imports what it runs only when it runs, so that
``judgesdk --help`` starts quickly:

* :mod:`~judgesdk.cli.score`: ``score`` (and :mod:`~judgesdk.cli.ray_engine`, its ``--engine ray``);
* :mod:`~judgesdk.cli.compare`: ``compare`` and ``rank``; :mod:`~judgesdk.cli.meta_eval`: ``meta-eval``;
* :mod:`~judgesdk.cli.gate`: ``gate``, ``label-slice`` and ``calibrate``; :mod:`~judgesdk.cli.card`: ``card``;
* :mod:`~judgesdk.cli.diff`: ``diff``; :mod:`~judgesdk.cli.view`: ``view``; :mod:`~judgesdk.cli.serve`: ``serve``;
  ``bench`` and ``cache`` live in :mod:`~judgesdk.cli.app`.

May import: every floor below.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from judgesdk.core import lazy as _lazy

if TYPE_CHECKING:
    from judgesdk.cli.app import build_parser, main

__all__ = [
    "build_parser",
    "main",
]

__getattr__, __dir__ = _lazy(
    __name__,
    {
        **dict.fromkeys(("build_parser", "main",), "judgesdk.cli.app"),
    },
    globals(),
)
