"""What the ``hotmem`` commands share: the store they act on, option types, JSON output."""

from __future__ import annotations

import argparse
import json
import math
import os
from pathlib import Path

from hotmem.cli.common import int_range
from hotmem.retrieval.request import MAX_LIMIT
from hotmem.store.memory_store import MemoryStore, open_store

__all__ = [
    "UserInputError",
    "created_store",
    "db_path",
    "default_db_path",
    "existing_store",
    "limit_value",
    "print_json",
    "seconds_value",
    "similarity_value",
    "store_path_value",
]


class UserInputError(Exception):
    """Invalid input from the command line or a file; every line is one problem."""


def default_db_path(environ: os._Environ[str] | dict[str, str] = os.environ) -> Path:
    """``$HOTMEM_HOME/hotmem.db``, with ``HOTMEM_HOME`` defaulting to ``~/.hotmem``."""
    home = environ.get("HOTMEM_HOME") or str(Path("~/.hotmem").expanduser())
    return Path(home) / "hotmem.db"


def db_path(args: argparse.Namespace) -> Path:
    """The store path a command acts on: ``--db``, else :func:`default_db_path`."""
    return Path(args.db) if args.db is not None else default_db_path()


def created_store(args: argparse.Namespace) -> MemoryStore:
    """The store of ``--db``, created when missing (``add``, ``import``)."""
    path = db_path(args)
    if args.db is None:
        path.parent.mkdir(parents=True, exist_ok=True)
    return open_store(path, busy_timeout=args.busy_timeout)


def existing_store(args: argparse.Namespace, *, check_default_profile: bool = True) -> MemoryStore:
    """The store of ``--db`` for a command that reads one: never created here (with
    ``check_default_profile`` false, opened even when its default profile needs an extra
    that is not installed, as ``hotmem profiles`` must, to change it).

    Raises:
        UserInputError: nothing exists at the path.
    """
    path = db_path(args)
    if not path.exists() or (path.is_file() and path.stat().st_size == 0):
        # An empty file is no store either: SQLite would make one of it (issue 35).
        found = "an empty file" if path.exists() else "no store"
        raise UserInputError(
            f"hotmem: {found} at {str(path)!r} (add, import or hydrate creates one)"
        )
    return open_store(
        path, busy_timeout=args.busy_timeout, check_default_profile=check_default_profile
    )


def print_json(payload: object) -> None:
    """Print ``payload`` as indented JSON with sorted keys, non-ASCII kept as is."""
    print(json.dumps(payload, ensure_ascii=False, indent=2, sort_keys=True))


#: ``--limit``: an integer in 1..``MAX_LIMIT``.
limit_value = int_range(1, MAX_LIMIT)


def seconds_value(text: str) -> float:
    """``--busy-timeout``: a finite number of seconds in 0..86,400."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, found {text!r}") from None
    if not math.isfinite(value) or not 0 <= value <= 86_400:
        raise argparse.ArgumentTypeError(f"expected 0..86400 seconds, found {text!r}")
    return value


def store_path_value(text: str) -> str:
    """``--db``: a path, never empty (an empty one named no file: SQLite would open a private
    temporary database, and the command line once fell back to the default store)."""
    if not text:
        raise argparse.ArgumentTypeError("expected a store file path, found an empty string")
    return text


def similarity_value(text: str) -> float:
    """``--min-similarity``: a finite cosine in -1..1."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, found {text!r}") from None
    if not math.isfinite(value) or not -1 <= value <= 1:
        raise argparse.ArgumentTypeError(f"expected a cosine in -1..1, found {text!r}")
    return value
