"""The ``hotmem mcp`` command: an MCP server over one store, on stdio (the ``mcp`` extra)."""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

from hotmem.cli.support import UserInputError, db_path

__all__ = ["cmd_mcp", "configure_mcp"]


def configure_mcp(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--files",
        type=Path,
        metavar="DIR",
        help="the only directory the snapshot, verify_snapshot and hydrate tools may read and "
        "write (default: those tools are off)",
    )


def cmd_mcp(args: argparse.Namespace) -> int:
    if importlib.util.find_spec("mcp") is None:
        from hotmem.embedding.registry import install_hint

        raise UserInputError(
            f"hotmem: the MCP server needs the 'mcp' extra, which is not installed; install it "
            f"with {install_hint('mcp')}"
        )
    files = args.files
    if files is not None and not files.is_dir():
        raise UserInputError(f"hotmem: --files {str(files)!r} is not a directory")
    path = db_path(args)
    if not path.exists():
        raise UserInputError(
            f"hotmem: no store at {str(path)!r} (add, import or hydrate creates one)"
        )
    from hotmem.mcp.server import build_server  # the extra's modules load here

    server, store = build_server(path, files, busy_timeout=args.busy_timeout)
    try:
        server.run("stdio")
    finally:
        store.close()
    return 0
