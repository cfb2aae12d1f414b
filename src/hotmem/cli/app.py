"""The ``hotmem`` command line: add, import, search, explain and inspect a store; snapshot it.

Exit codes come from one table, ``EXIT_CODES`` (documented in ``docs/cli.md``): 0 success;
1 the store or an operation failed; 2 invalid input or usage (a store that does not exist,
for a command that reads one); 130 interrupted. User mistakes print one line per problem on
stderr, never a traceback. A closed output pipe (``hotmem search ... | head``) ends the
command quietly. Long work shows progress on stderr when it is a terminal (``progress.py``).
"""

from __future__ import annotations

import argparse
import difflib
import io
import os
import re
import sys
from collections.abc import Callable, Sequence
from contextlib import suppress

from hotmem import __version__
from hotmem.cli.common import exit_code_of, quiet_stdout
from hotmem.cli.importing import cmd_import, configure_import
from hotmem.cli.listing import (
    cmd_export,
    cmd_get,
    cmd_list,
    configure_export,
    configure_get,
    configure_list,
)
from hotmem.cli.mcp import cmd_mcp, configure_mcp
from hotmem.cli.memories import (
    cmd_add,
    cmd_delete,
    cmd_explain,
    cmd_search,
    cmd_stats,
    cmd_update,
    configure_add,
    configure_delete,
    configure_explain,
    configure_search,
    configure_stats,
    configure_update,
)
from hotmem.cli.packages import (
    cmd_hydrate,
    cmd_snapshot,
    cmd_verify,
    configure_hydrate,
    configure_snapshot,
    configure_verify,
)
from hotmem.cli.profiles import cmd_profiles, configure_profiles
from hotmem.cli.spaces import cmd_reindex, configure_reindex
from hotmem.cli.support import UserInputError, seconds_value, store_path_value
from hotmem.errors import HotmemError, ValidationError
from hotmem.store.setup import BUSY_TIMEOUT

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (hotmem.records)
if TYPE_CHECKING:
    from typing import NoReturn

__all__ = ["COMMANDS", "EXIT_CODES", "build_parser", "exit_code", "main"]

EXIT_OK, EXIT_FAILURE, EXIT_INVALID, EXIT_INTERRUPTED = 0, 1, 2, 130


#: error class -> (exit code, prefix of its one-line message). The most specific class of an
#: error's MRO found here decides; an error of no class here is a bug and propagates.
EXIT_CODES: dict[type[BaseException], tuple[int, str]] = {
    UserInputError: (EXIT_INVALID, ""),  # its lines already say where: FILE:LINE or hotmem:
    ValidationError: (EXIT_INVALID, "hotmem: "),
    HotmemError: (EXIT_FAILURE, "hotmem: "),
    KeyboardInterrupt: (EXIT_INTERRUPTED, "hotmem: "),
}


def exit_code(error: BaseException) -> tuple[int, str]:
    """``(code, prefix)`` of the most specific class of ``error`` in ``EXIT_CODES``.

    Raises:
        KeyError: no class of the error is in the table.
    """
    return exit_code_of(error, EXIT_CODES)


def _common(p: argparse.ArgumentParser, *, top: bool) -> None:
    """``--db`` and ``--busy-timeout``, accepted before the command and after it.

    After the command they default to SUPPRESS, so that an absent option does not hide the
    value given before the command; given in both places, the later one wins.
    """
    p.add_argument(
        "--db",
        type=store_path_value,
        default=None if top else argparse.SUPPRESS,
        help="the store file (default: $HOTMEM_HOME/hotmem.db, HOTMEM_HOME=~/.hotmem)",
    )
    p.add_argument(
        "--busy-timeout",
        type=seconds_value,
        default=BUSY_TIMEOUT if top else argparse.SUPPRESS,
        metavar="SECONDS",
        help=f"how long a write waits for another process's write lock (default {BUSY_TIMEOUT:g})",
    )


Handler = Callable[[argparse.Namespace], int]
# name -> (help, configure, handler): the command registry.
COMMANDS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None], Handler]] = {
    "add": ("add one memory", configure_add, cmd_add),
    "import": ("import memories from a JSONL file", configure_import, cmd_import),
    "search": ("search memories", configure_search, cmd_search),
    "explain": (
        "say why a memory ranks where it does for a query, or is missing",
        configure_explain,
        cmd_explain,
    ),
    "stats": ("show what the store holds", configure_stats, cmd_stats),
    "profiles": (
        "list the retrieval profiles; show or set the store's default",
        configure_profiles,
        cmd_profiles,
    ),
    "reindex": (
        "build, complete, rebuild or drop a vector space of the store",
        configure_reindex,
        cmd_reindex,
    ),
    "list": ("list the memories, by memory_id", configure_list, cmd_list),
    "get": ("print one memory", configure_get, cmd_get),
    "export": ("write the memories as JSON Lines that import reads", configure_export, cmd_export),
    "update": (
        "change a memory's fact, importance or tags (its vectors and indexes follow)",
        configure_update,
        cmd_update,
    ),
    "delete": ("delete one memory", configure_delete, cmd_delete),
    "snapshot": ("write the store to a portable package", configure_snapshot, cmd_snapshot),
    "verify": ("verify a package without trusting it", configure_verify, cmd_verify),
    "hydrate": (
        "create a store from a package (--db: the new store)",
        configure_hydrate,
        cmd_hydrate,
    ),
    "mcp": ("serve the store to agents over MCP (stdio)", configure_mcp, cmd_mcp),
}


def _options(parser: argparse.ArgumentParser) -> list[str]:
    """Every option string of ``parser`` and of its commands' parsers."""
    found = []
    for action in parser._actions:
        found += [o for o in action.option_strings if o.startswith("--")]
        if isinstance(action, argparse._SubParsersAction):
            for child in action.choices.values():
                found += _options(child)
    return sorted(set(found))


def _suggestion(parser: argparse.ArgumentParser, message: str) -> str:
    """``; did you mean '...'?`` for a misspelt command or option, else ``""``."""
    choice = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
    if choice is not None:
        known = re.findall(r"'([^']*)'", choice.group(2))
        close = difflib.get_close_matches(choice.group(1), known, n=1, cutoff=0.6)
        return f"; did you mean {close[0]!r}?" if close else ""
    unknown = re.search(r"unrecognized arguments: (.*)", message)
    if unknown is not None:
        options = _options(parser)
        for word in unknown.group(1).split():
            close = difflib.get_close_matches(word.split("=")[0], options, n=1, cutoff=0.75)
            if word.startswith("--") and close:
                return f"; did you mean {close[0]!r}?"
    return ""


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors suggest the closest command or option."""

    def error(self, message: str) -> NoReturn:
        super().error(message + _suggestion(self, message))


def _terminal_columns() -> int:
    """``shutil.get_terminal_size().columns``, without importing shutil (and with it bz2 and
    lzma: 3 ms a run), which argparse's help formatter imports for it: ``$COLUMNS`` when a
    positive integer, else the width of the terminal on stdout, else 80."""
    try:
        columns = int(os.environ["COLUMNS"])
    except (KeyError, ValueError):
        columns = 0
    if columns > 0:
        return columns
    stdout = sys.__stdout__
    try:
        return (stdout is not None and os.get_terminal_size(stdout.fileno()).columns) or 80
    except (AttributeError, ValueError, OSError):
        return 80


class _Formatter(argparse.HelpFormatter):
    """argparse's help formatter, as wide as the terminal (``_terminal_columns``)."""

    def __init__(
        self,
        prog: str,
        indent_increment: int = 2,
        max_help_position: int = 24,
        width: int | None = None,
    ) -> None:
        width = _terminal_columns() - 2 if width is None else width
        super().__init__(prog, indent_increment, max_help_position, width)


class _Retry(Exception):
    """A parser of one command found an error: the whole parser says it (``_parsed``)."""


class _OneCommandParser(_Parser):
    """The parser of one command's line, which leaves every error to the whole parser."""

    def error(self, message: str) -> NoReturn:
        raise _Retry(message)


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or of the command ``only`` alone (``main``'s, once the
    line names it: the others' 100 options cost about 3 ms to declare, every run)."""
    parser = (_Parser if only is None else _OneCommandParser)(
        prog="hotmem",
        description="HotMem: a local-first memory store for software agents.",
        formatter_class=_Formatter,
    )
    parser.add_argument("--version", action="version", version=f"hotmem {__version__}")
    _common(parser, top=True)
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (help_text, configure, handler) in COMMANDS.items():
        if only is not None and name != only:
            continue
        command = sub.add_parser(
            name, help=help_text, description=help_text, formatter_class=_Formatter
        )
        configure(command)
        _common(command, top=False)
        command.set_defaults(handler=handler)
    return parser


# The options the line may give before its command, and whether each takes a value.
_LEADING = {"--db": True, "--busy-timeout": True}


def _command_named(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names after the options before it, when those are spelt out in
    full; ``None`` for anything else (``--help``, ``--version``, an abbreviation, a typo)."""
    words = iter(argv)
    for word in words:
        if word in COMMANDS:
            return word
        if _LEADING.get(word):
            next(words, None)
        elif word.split("=", 1)[0] not in _LEADING or "=" not in word:
            return None
    return None


def _parsed(argv: Sequence[str] | None) -> argparse.Namespace:
    """``argv`` parsed by the parser of the command it names, or by the whole parser: for a
    line naming none, and for every error, so that each message is the whole parser's."""
    line = sys.argv[1:] if argv is None else list(argv)
    only = _command_named(line)
    if only is not None:
        with suppress(_Retry):
            return build_parser(only).parse_args(line)
    return build_parser().parse_args(line)


def _report(message: str) -> None:
    with suppress(OSError, ValueError):  # stderr closed too: nothing left to tell
        print(message, file=sys.stderr)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; return the exit code.

    Ctrl-C anywhere prints ``hotmem: interrupted`` and returns 130; a closed stdout (the
    reader of a pipe exited) ends quietly with the command's own exit code.
    """
    code = EXIT_OK
    try:
        if isinstance(sys.stdout, io.TextIOWrapper):
            # A path given as non-UTF-8 bytes is printed back as the same bytes, not a traceback.
            sys.stdout.reconfigure(errors="surrogateescape")
        args = _parsed(argv)
        try:
            code = args.handler(args)
        except tuple(EXIT_CODES) as exc:
            code, prefix = exit_code(exc)
            message = "interrupted" if isinstance(exc, KeyboardInterrupt) else str(exc)
            _report(f"{prefix}{message}")
        sys.stdout.flush()  # here, so that a closed pipe is seen while it can be handled
    except KeyboardInterrupt:
        _report("hotmem: interrupted")
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        quiet_stdout()
    return code


if __name__ == "__main__":
    sys.exit(main())
