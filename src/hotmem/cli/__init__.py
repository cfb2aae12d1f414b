"""The ``hotmem`` command line (``hotmem.cli.app``), and what it shares with ``hotmem-eval``
(``hotmem.cli.common``). Names load from their module on first use."""

from __future__ import annotations

import importlib as _importlib

_ORIGIN = {
    "COMMANDS": "hotmem.cli.app",
    "EXIT_CODES": "hotmem.cli.app",
    "build_parser": "hotmem.cli.app",
    "exit_code": "hotmem.cli.app",
    "exit_code_of": "hotmem.cli.common",
    "int_range": "hotmem.cli.common",
    "main": "hotmem.cli.app",
    "quiet_stdout": "hotmem.cli.common",
    "write_stdout": "hotmem.cli.common",
}

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (hotmem.records)
if TYPE_CHECKING:
    import typing as _typing

    from hotmem.cli.app import COMMANDS, EXIT_CODES, build_parser, exit_code, main
    from hotmem.cli.common import exit_code_of, int_range, quiet_stdout, write_stdout
del TYPE_CHECKING  # not a public name

__all__ = [
    "COMMANDS",
    "EXIT_CODES",
    "build_parser",
    "exit_code",
    "exit_code_of",
    "int_range",
    "main",
    "quiet_stdout",
    "write_stdout",
]


def __getattr__(name: str) -> _typing.Any:
    """A name of ``__all__``, imported from its module on first use."""
    module = _ORIGIN.get(name)
    if module is None:
        raise AttributeError(f"module 'hotmem.cli' has no attribute {name!r}")
    value = getattr(_importlib.import_module(module), name)
    globals()[name] = value
    return value
