"""Schema migrations: how a store written by an earlier HotMem is brought to this version.

A migration is a function from one schema version to the next, run inside the transaction that
opens the store, so a store is migrated completely or not at all (a crash leaves the old
version, migrated again on the next open). ``MIGRATIONS`` maps the version a migration starts
from to it; :func:`upgrade` runs every step from the version found to ``SCHEMA_VERSION``.

Version 1 → 2 changes only derived data (docs/snapshot-v2.md, "Derived indexes"): the word index
gains the porter stemmer and CJK facts gain their character-gram index, so the migration drops
the full-text index, creates the new ones and rebuilds them from the facts.
"""

from __future__ import annotations

import sqlite3
import sys
from collections.abc import Callable

from hotmem import schema

__all__ = ["MIGRATIONS", "upgrade"]

# Stores at least this large announce the rebuild on stderr (when it is a terminal).
_ANNOUNCE_ROWS = 10_000


def _v1_to_v2(connection: sqlite3.Connection) -> None:
    """unicode61 → porter unicode61 for words, plus the CJK gram index (``memories_cjk``)."""
    from hotmem.db import rebuild_lexical_index  # the store's module; imported when needed

    connection.execute("DROP TRIGGER IF EXISTS memories_fts_insert")
    connection.execute("DROP TRIGGER IF EXISTS memories_fts_delete")
    connection.execute("DROP TRIGGER IF EXISTS memories_fts_update")
    connection.execute("DROP TABLE IF EXISTS memories_fts")
    for statement in schema.LEXICAL_TABLES:
        connection.execute(statement)
    rebuild_lexical_index(connection)
    for statement in schema.FTS_TRIGGERS:
        connection.execute(statement)


#: version a migration starts from -> the migration to the next version.
MIGRATIONS: dict[int, Callable[[sqlite3.Connection], None]] = {1: _v1_to_v2}


def upgrade(connection: sqlite3.Connection, found: int, *, label: str) -> None:
    """Migrate the store behind ``connection`` from version ``found`` to ``SCHEMA_VERSION``,
    inside the caller's transaction, and record the new metadata.

    Raises:
        KeyError: no migration starts from some version on the way (the caller refuses it).
    """
    rows = int(connection.execute("SELECT count(*) FROM memories").fetchone()[0])
    announce = rows >= _ANNOUNCE_ROWS and sys.stderr.isatty()
    for version in range(found, schema.SCHEMA_VERSION):
        step = MIGRATIONS[version]
        if announce:
            print(
                f"hotmem: migrating {label} from schema {version} to {version + 1} "
                f"(rebuilding the full-text index of {rows} memories)...",
                file=sys.stderr,
                flush=True,
            )
        step(connection)
    connection.executemany(
        "INSERT OR REPLACE INTO hotmem_meta (key, value) VALUES (?, ?)",
        sorted(schema.expected_meta().items()),
    )
    if announce:
        print(f"hotmem: {label} migrated to schema {schema.SCHEMA_VERSION}", file=sys.stderr)
