"""The target of a hydration: only a missing path or an empty store may be replaced
(``check_target``), checked before the new store is built and again before it is renamed
into place."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from hotmem.errors import HydrationError
from hotmem.models import count_of
from hotmem.snapshot._files import output_refusal
from hotmem.store import setup as storage

__all__ = ["SIDE_FILES", "check_target"]

#: The files SQLite keeps beside a store.
SIDE_FILES = ("-journal", "-wal", "-shm")


def _memories_in(target: Path) -> int:
    """Memories in an existing database file, opened read-only; refuse anything but HotMem."""
    try:
        # immutable: a read-only connection to a WAL store would leave -wal and -shm files
        # behind; check_target has made sure there is no WAL, so the file holds everything.
        uri = f"{target.absolute().as_uri()}?mode=ro&immutable=1"
        connection = sqlite3.connect(uri, uri=True)
    except sqlite3.Error as exc:
        raise HydrationError(f"cannot open target {str(target)!r}: {exc}") from None
    try:
        problem = storage.incompatibility(connection, str(target))
        if problem is not None:
            raise HydrationError(f"target {problem}")
        if connection.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0:
            return 0
        return int(connection.execute("SELECT count(*) FROM memories").fetchone()[0])
    except sqlite3.DatabaseError as exc:
        raise HydrationError(f"target {str(target)!r} is not a HotMem store: {exc}") from None
    finally:
        connection.close()


def check_target(target: Path) -> None:
    """Refuse a target that holds data: only a missing path or an empty store may be replaced.

    An existing file must be a regular file (not a symbolic link: the rename would replace the
    link, not the store it points to) holding a HotMem store without memories, an empty
    SQLite database, or nothing (which SQLite treats as an empty database). A leftover journal
    or WAL file beside it means a connection is open or a crash needs recovery, and is refused
    too.

    Raises:
        HydrationError: the target cannot be replaced.
    """
    if not target.absolute().parent.is_dir():
        raise HydrationError(f"cannot hydrate {str(target)!r}: its directory does not exist")
    for suffix in SIDE_FILES:
        side = Path(f"{target}{suffix}")
        if side.exists():
            raise HydrationError(
                f"cannot hydrate {str(target)!r}: {str(side)!r} exists (the store is open or "
                "needs recovery; open and close it with hotmem first)"
            )
    refusal = output_refusal(target)  # a directory, a symbolic link, a FIFO, a device...
    if refusal is not None:
        raise HydrationError(refusal.replace("cannot write", "cannot hydrate", 1))
    if not target.exists():
        return
    if target.stat().st_size == 0:
        return
    count = _memories_in(target)
    if count:
        raise HydrationError(
            f"target {str(target)!r} holds {count_of(count, 'memory', 'memories')}; hydrate needs "
            "a new or empty store"
        )
