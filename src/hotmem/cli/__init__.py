"""The ``hotmem`` command line (``hotmem.cli.main``)."""

from __future__ import annotations

from hotmem.cli.main import COMMANDS, EXIT_CODES, build_parser, exit_code, main

__all__ = ["COMMANDS", "EXIT_CODES", "build_parser", "exit_code", "main"]
