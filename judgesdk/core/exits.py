"""The process exit codes, one table for every command (and for the release gate's verdict, which a library caller
reads as ``Verdict.exit_code``).

=====  ==================  ===============================================================================
code   name                when
=====  ==================  ===============================================================================
0      ``OK``              done: every item has a score (some may carry a warning status such as
                           ``low_coverage``); a gate passed; ``diff`` found nothing moved
1      ``FAILED``          a quality gate failed; ``diff``: some item moved beyond the tolerance
2      ``INCOMPLETE``      some items could not be judged (results written, statuses say which); a gate
                           is inconclusive; ``diff`` compared nothing (no item and criterion in both
                           files: an empty file, other criteria, other items; one line says which)
3      ``USAGE``           bad input, usage or configuration: one line says what to fix; nothing was judged
                           unless the line says otherwise (a results file with a line that is not a
                           whole JSON row, for every command that compares or decides on it); also
                           every command-line usage error (an unknown option, with the nearest real
                           one; a missing argument; a value of the wrong type or not among the choices;
                           an unknown command), where argparse alone would exit 2
130    ``INTERRUPTED``     Ctrl-C: finished results were kept, and the same command resumes
=====  ==================  ===============================================================================

Scripts (CI) read these numbers, so they never change; a command returns a member of :class:`ExitCode`, never a
literal number (tests/cli/test_cli_returns.py).
"""

from __future__ import annotations

from enum import IntEnum

__all__ = ["ExitCode"]


class ExitCode(IntEnum):
    """A process exit code of the table above (an :class:`int`, so ``sys.exit`` and ``==`` take it as one)."""

    OK = 0
    FAILED = 1
    INCOMPLETE = 2
    USAGE = 3
    INTERRUPTED = 130
