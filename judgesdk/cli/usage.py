"""The command line's parser: argparse's, with its usage errors on judgesdk's exit table.

argparse ends a usage error (an unknown option, a missing argument, a value it cannot read, an unknown command)
with its usage text and exit 2. judgesdk's exit table (:class:`judgesdk.core.exits.ExitCode`) gives 2 to "some
items could not be judged, a gate is inconclusive", so in CI ``judgesdk gate --confg gate.toml`` read as an
inconclusive gate. :class:`CommandParser` says such an error in one line on stderr, starting with the command
(``judgesdk gate: unknown option --confg; did you mean --config?``), and exits 3 (``ExitCode.USAGE``), the code
of every other input or configuration error. ``--help`` still prints the help and exits 0.

An unknown option is named before argparse checks what is required, so a misspelt required option is reported
as itself, with the nearest option of that command (:mod:`difflib`), not as the option that is missing.
Abbreviations are argparse's (``--conf`` reads as ``--config`` where no other option starts so; an ambiguous
one is refused, naming the options it could be), as they were before: a command line that ran keeps running.
The top-level parser and every command's parser are this class (``add_subparsers`` makes its parsers of its
parent's class), so each command gets it by being registered.
"""

from __future__ import annotations

import argparse
import difflib
import re
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from judgesdk.core import ExitCode

__all__ = ["CommandParser", "UsageExit"]

# what argparse reads as a negative number rather than an option (argparse's own pattern)
_NEGATIVE_NUMBER = re.compile(r"^-\d+$|^-\d*\.\d+$")


class UsageExit(SystemExit):
    """A usage error, already said in one line on stderr; its code is ``ExitCode.USAGE`` (3).

    A :class:`SystemExit`, as argparse's ``error`` ends in one, so a caller of ``parse_args`` that expects one
    still gets it; :func:`judgesdk.cli.app.main` returns its code instead of raising."""

    def __init__(self) -> None:
        super().__init__(ExitCode.USAGE)


class CommandParser(argparse.ArgumentParser):
    """An :class:`argparse.ArgumentParser` whose usage errors are one line and exit 3 (module docstring).

    Every judgesdk command takes all of its arguments, so a command's parser refuses what it does not know
    in ``parse_known_args`` too (an option before argparse's own checks, a stray argument after them) rather
    than handing it back: the error then names the command it was given to."""

    def error(self, message: str) -> NoReturn:
        """Say ``message`` (argparse's, or one of this class's) in one line on stderr and exit 3.

        ``message``: what is wrong, without the command's name, which is put in front of it."""
        print(f"{self.prog}: {message}", file=sys.stderr)
        raise UsageExit

    def parse_args(self, args: Sequence[str] | None = None, namespace: Any = None) -> Any:  # type: ignore[override]
        """argparse's ``parse_args``, with a leftover option named (and its nearest real one) instead of argparse's
        ``unrecognized arguments``. ``args``: the command line without the program (default ``sys.argv[1:]``);
        ``namespace``: the object to set the values on (default a new :class:`argparse.Namespace`)."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            self.error(self._leftover(extras))
        return parsed

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: Any = None
    ) -> tuple[Any, list[str]]:
        """argparse's ``parse_known_args``, refusing an unknown option before argparse reads the line (where a
        missing required option would be reported first) and, for a command (a parser without commands of its
        own), a stray argument after. ``args`` and ``namespace``: as :meth:`parse_args` takes them."""
        strings = list(sys.argv[1:] if args is None else args)
        commands = self._has_commands()
        for string in strings:
            if string == "--" or (commands and not self._looks_like_option(string)):
                break  # after "--" everything is an argument; with commands, what follows the command is its own
            unknown = self._unknown_option(string)
            if unknown is not None:
                self.error(self._unknown_message(unknown))
        parsed, extras = super().parse_known_args(strings, namespace)
        if extras and not commands:
            self.error(self._leftover(extras))
        return parsed, extras

    def _check_value(self, action: argparse.Action, value: Any) -> None:
        """argparse's check of a value against ``action``'s choices, naming the nearest choice when one is close.
        ``action``: the argument (or the commands) being read; ``value``: the value given to it."""
        choices = action.choices
        if choices is not None and value not in choices:
            names = [str(choice) for choice in choices]
            listed = ", ".join(names)
            close = difflib.get_close_matches(str(value), names, n=1)
            hint = f"; did you mean {close[0]}?" if close else ""
            if isinstance(action, argparse._SubParsersAction):  # no "argument COMMAND:" in front: say what it is
                raise argparse.ArgumentError(None, f"unknown command {value!r}{hint or f' (commands: {listed})'}")
            raise argparse.ArgumentError(action, f"invalid choice {value!r}{hint} (choose from {listed})")
        super()._check_value(action, value)

    def _has_commands(self) -> bool:
        return any(isinstance(action, argparse._SubParsersAction) for action in self._actions)

    def _looks_like_option(self, string: str) -> bool:
        return len(string) > 1 and string[0] in self.prefix_chars

    def _unknown_option(self, string: str) -> str | None:
        """The option ``string`` names when this parser has no such option (its name without any ``=value``),
        None when argparse will read ``string`` as one of its options (exactly, with ``=value``, as an
        abbreviation or a short option with its value attached) or as an argument (a negative number, text
        with a space). ``string``: one word of the command line."""
        if not self._looks_like_option(string) or " " in string:
            return None
        known = self._option_string_actions
        name = string.split("=", 1)[0] if "=" in string else string
        if name in known:
            return None
        if string[1] in self.prefix_chars:  # --long: argparse matches a prefix of a long option (allow_abbrev)
            if self.allow_abbrev and any(option.startswith(name) for option in known):
                return None
        elif string[:2] in known or (self.allow_abbrev and any(option.startswith(string) for option in known)):
            return None  # -ofile, -vq: a short option with its value or more short options attached
        if _NEGATIVE_NUMBER.match(string) and not any(_NEGATIVE_NUMBER.match(option) for option in known):
            return None
        return name

    def _unknown_message(self, name: str) -> str:
        """``unknown option NAME``, with the nearest option of this parser (of the same kind: long or short).
        ``name``: the option as given, without its ``=value``."""
        long_form = name[:2] == name[0] * 2
        options = [option for option in self._option_string_actions if (option[:2] == option[0] * 2) == long_form]
        close = difflib.get_close_matches(name, options, n=1, cutoff=0.6)
        if close:
            return f"unknown option {name}; did you mean {close[0]}?"
        return f"unknown option {name} ({self.prog} --help lists the options)"

    def _leftover(self, extras: list[str]) -> str:
        """What to say of the words argparse could not place. ``extras``: those words, in order."""
        for string in extras:
            unknown = self._unknown_option(string) if self._looks_like_option(string) else None
            if unknown is not None:
                return self._unknown_message(unknown)
        options = [string for string in extras if self._looks_like_option(string)]
        if options:  # an option argparse refused after all, e.g. one whose abbreviation fits several
            return f"unknown option {options[0]} ({self.prog} --help lists the options)"
        return f"unexpected argument{'s' if len(extras) > 1 else ''} {' '.join(extras)} ({self.prog} --help says what it takes)"
