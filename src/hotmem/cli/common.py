"""What both command lines share (``hotmem`` and ``hotmem-eval``): an error's exit code from a
table, bounded integer options, and a standard output whose reader went away.
"""

from __future__ import annotations

import argparse
import io
import os
import sys
from collections.abc import Callable, Mapping
from contextlib import suppress

__all__ = ["exit_code_of", "int_range", "quiet_stdout", "write_stdout"]


def exit_code_of(
    error: BaseException, table: Mapping[type[BaseException], tuple[int, str]]
) -> tuple[int, str]:
    """``(code, prefix)`` of the most specific class of ``error``'s MRO in ``table``.

    Raises:
        KeyError: no class of the error is in the table (a bug, not a user's mistake).
    """
    for cls in type(error).__mro__:
        if cls in table:
            return table[cls]
    raise KeyError(type(error).__name__)


def int_range(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: an integer in ``low..high``, else a one-line error saying so."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, found {text!r}") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"expected {low}..{high}, found {value}")
        return value

    return parse


def quiet_stdout() -> None:
    """After a closed pipe (``... | head``): send what is left of stdout to the null device,
    so that Python's final flush does not complain."""
    with suppress(OSError, ValueError, AttributeError, io.UnsupportedOperation):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)


def write_stdout(text: str) -> None:
    """Write ``text`` to stdout; a reader that went away is not an error."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        quiet_stdout()
