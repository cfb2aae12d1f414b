"""Schema migrations: a registry of functions keyed by the schema version they migrate from.

``MIGRATIONS[v]`` turns a store of schema version ``v`` into one of version ``v + 1``. Store
setup (``storage.setup``) runs every migration from the store's version up to
``schema.SCHEMA_VERSION`` inside its one setup transaction, then records the new version, so a
migration either completes or leaves no trace (a process killed half-way leaves the old
version, migrated again on the next open). After the migrations, setup completes whatever
derived object is still missing (an index, a trigger) and rebuilds the full-text index when
it may be out of step with the memories.

A migration holds its own SQL, written out: what it does never changes, even when
``schema.py`` moves on. It may be slow on a large store (rebuilding the full-text index reads
every memory); it must be correct when run on a store whose derived objects are incomplete.

Adding a migration: bump ``schema.SCHEMA_VERSION`` to ``N + 1``, update the schema's SQL, and
register ``MIGRATIONS[N]``; a test opens a store built with version ``N``'s SQL and checks the
result equals a new store's (``tests/hotmem/test_storage.py`` does so for version 1). A
migration that changes a ``hotmem_meta`` value other than ``schema_version`` (a new FTS
tokenizer) writes the new value itself and adds the key to ``storage._MIGRATED_KEYS``, so that
an older store's value is not refused before the migration runs; a migration that changes how
the full-text index tokenizes rebuilds it (``schema.REBUILD_FTS``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

__all__ = ["MIGRATIONS", "Migration"]

Migration = Callable[[sqlite3.Connection], None]


def _defer_fts_during_bulk_writes(connection: sqlite3.Connection) -> None:
    """1 -> 2: bulk writes turn the FTS insert trigger off with a row, not by dropping it.

    Version 1 dropped and recreated ``memories_fts_insert`` inside each bulk write, which
    broke readers in other processes ("vtable constructor failed").
    """
    connection.execute(
        "CREATE TABLE IF NOT EXISTS hotmem_fts_deferred (after_rowid INTEGER NOT NULL)"
    )
    connection.execute("DROP TRIGGER IF EXISTS memories_fts_insert")
    connection.execute(
        """CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories
WHEN NOT EXISTS (SELECT 1 FROM hotmem_fts_deferred) BEGIN
    INSERT INTO memories_fts (rowid, fact) VALUES (new.rowid, new.fact);
END"""
    )


#: from-version -> the migration to the next version.
MIGRATIONS: dict[int, Migration] = {
    1: _defer_fts_during_bulk_writes,
}
