"""Schema migrations: a registry of functions keyed by the schema version they migrate from.

``MIGRATIONS[v]`` turns a store of schema version ``v`` into one of version ``v + 1``. Store
setup (``setup.setup``) runs every migration from the store's version up to
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
tokenizer) writes the new value itself and adds the key to ``setup._MIGRATED_KEYS``, so that
an older store's value is not refused before the migration runs; a migration that changes how
the full-text index tokenizes rebuilds it (``lexical_index.rebuild``).
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

from hotmem.progress import Progress

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (hotmem.records)
if TYPE_CHECKING:
    from hotmem.store.migration_progress import Publisher

__all__ = ["MIGRATIONS", "Migration", "migrate"]

Migration = Callable[[sqlite3.Connection], None]
# Stores at least this large say on stderr that they are migrating (when it is a terminal).
_ANNOUNCE_ROWS = 10_000


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


def _stemmed_words_and_cjk_grams(connection: sqlite3.Connection) -> None:
    """2 -> 3: the word index gains the porter stemmer, CJK facts a character-gram index.

    Only derived data changes (docs/snapshot-v2.md, "Derived indexes"): the full-text index is
    dropped with its triggers, ``memories_fts`` (``porter unicode61 remove_diacritics 2``) and
    ``memories_cjk`` are created, both are filled from the facts by this HotMem's rule
    (``lexical_index.rebuild``), and the triggers are created again, the delete trigger now
    also removing a memory's grams. Setup records the new ``fts_tokenizer`` afterwards.
    """
    from hotmem.store import lexical_index  # the index's contents are this HotMem's derivation

    for trigger in ("memories_fts_insert", "memories_fts_delete", "memories_fts_update"):
        connection.execute(f"DROP TRIGGER IF EXISTS {trigger}")
    connection.execute("DROP TABLE IF EXISTS memories_fts")
    connection.execute("DROP TABLE IF EXISTS memories_cjk")
    connection.execute(
        """CREATE VIRTUAL TABLE memories_fts USING fts5 (
    fact,
    content = 'memories',
    content_rowid = 'rowid',
    tokenize = 'porter unicode61 remove_diacritics 2'
)"""
    )
    connection.execute(
        "CREATE VIRTUAL TABLE memories_cjk USING fts5 (grams, tokenize = 'unicode61')"
    )
    lexical_index.rebuild(connection)
    connection.execute(
        """CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories
WHEN NOT EXISTS (SELECT 1 FROM hotmem_fts_deferred) BEGIN
    INSERT INTO memories_fts (rowid, fact) VALUES (new.rowid, new.fact);
END"""
    )
    connection.execute(
        """CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, fact) VALUES ('delete', old.rowid, old.fact);
    DELETE FROM memories_cjk WHERE rowid = old.rowid;
END"""
    )
    connection.execute(
        """CREATE TRIGGER memories_fts_update AFTER UPDATE OF fact ON memories
BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, fact) VALUES ('delete', old.rowid, old.fact);
    INSERT INTO memories_fts (rowid, fact) VALUES (new.rowid, new.fact);
END"""
    )


def _vector_spaces(connection: sqlite3.Connection) -> None:
    """3 -> 4: named vector spaces. ``vector_spaces`` records hotmem-hash-v1 (whose vectors
    stay in ``memories.embedding``); ``space_vectors`` starts empty, and a trigger deletes a
    memory's vectors with it. The digest is the sha256 of the model id, as
    ``embedders.HASH_DIGEST`` defines it."""
    connection.execute(
        """CREATE TABLE IF NOT EXISTS vector_spaces (
    name      TEXT PRIMARY KEY,
    model_id  TEXT NOT NULL,
    digest    TEXT NOT NULL,
    dimension INTEGER NOT NULL,
    dtype     TEXT NOT NULL
) WITHOUT ROWID"""
    )
    connection.execute(
        """CREATE TABLE IF NOT EXISTS space_vectors (
    space         TEXT NOT NULL,
    memory_rowid  INTEGER NOT NULL,
    vector        BLOB NOT NULL,
    PRIMARY KEY (space, memory_rowid)
)"""
    )
    name = "hotmem-hash-v1"
    connection.execute(
        "INSERT OR IGNORE INTO vector_spaces (name, model_id, digest, dimension, dtype) "
        "VALUES (?, ?, ?, 64, 'float32-le')",
        (name, name, _sha256(name)),
    )
    connection.execute("DROP TRIGGER IF EXISTS memories_vectors_delete")
    connection.execute(
        """CREATE TRIGGER memories_vectors_delete AFTER DELETE ON memories
BEGIN
    DELETE FROM space_vectors
    WHERE space IN (SELECT name FROM vector_spaces) AND memory_rowid = old.rowid;
END"""
    )


def _change_log(connection: sqlite3.Connection) -> None:
    """4 -> 5: the change log search indexes refresh from (``changes.py``), and the table of
    a search index's image (``image.py``). Deleting or rewriting a memory records its rowid;
    the log starts with a change to every memory, so an index made before the migration
    reloads. The default profile's spaces are recorded."""
    connection.execute(
        """CREATE TABLE IF NOT EXISTS hotmem_changes (
    seq           INTEGER PRIMARY KEY,
    memory_rowid  INTEGER
)"""
    )
    for trigger in ("memories_changes_delete", "memories_changes_update", "hotmem_changes_prune"):
        connection.execute(f"DROP TRIGGER IF EXISTS {trigger}")
    connection.execute(
        """CREATE TRIGGER memories_changes_delete AFTER DELETE ON memories
BEGIN
    INSERT INTO hotmem_changes (memory_rowid) VALUES (old.rowid);
END"""
    )
    connection.execute(
        """CREATE TRIGGER memories_changes_update AFTER UPDATE ON memories
BEGIN
    INSERT INTO hotmem_changes (memory_rowid) VALUES (old.rowid);
    INSERT INTO hotmem_changes (memory_rowid) SELECT new.rowid WHERE new.rowid != old.rowid;
END"""
    )
    connection.execute(
        """CREATE TRIGGER hotmem_changes_prune AFTER INSERT ON hotmem_changes
WHEN new.seq % 4096 = 0 BEGIN
    DELETE FROM hotmem_changes WHERE seq <= new.seq - 65536;
END"""
    )
    connection.execute("INSERT INTO hotmem_changes (memory_rowid) VALUES (NULL)")
    connection.execute(
        """CREATE TABLE IF NOT EXISTS hotmem_index (
    part  TEXT PRIMARY KEY,
    data  BLOB NOT NULL
)"""
    )
    connection.execute(
        """CREATE TABLE IF NOT EXISTS hotmem_index_postings (
    tab          INTEGER NOT NULL,
    token        TEXT NOT NULL,
    positions    BLOB NOT NULL,
    frequencies  BLOB NOT NULL,
    PRIMARY KEY (tab, token)
)"""
    )
    # The spaces of the store's default profile, recorded beside its name (the store no longer
    # knows the profiles): those of version 4's built-in semantic profiles.
    row = connection.execute(
        "SELECT value FROM hotmem_meta WHERE key = 'default_profile'"
    ).fetchone()
    if row is not None:
        semantic = row[0] in ("semantic", "semantic-only", "semantic+mmr")
        connection.execute(
            "INSERT OR REPLACE INTO hotmem_meta (key, value) VALUES ('default_profile_spaces', ?)",
            ('["all-minilm-l6-v2"]' if semantic else "[]",),
        )


def _sha256(text: str) -> str:
    import hashlib  # here: only a migration from version 3 needs it

    return hashlib.sha256(text.encode("utf-8")).hexdigest()


#: from-version -> the migration to the next version.
MIGRATIONS: dict[int, Migration] = {
    1: _defer_fts_during_bulk_writes,
    2: _stemmed_words_and_cjk_grams,
    3: _vector_spaces,
    4: _change_log,
}


def migrate(
    connection: sqlite3.Connection, found: int, to: int, status: Publisher | None = None
) -> None:
    """Run ``MIGRATIONS[found]`` .. ``MIGRATIONS[to - 1]`` inside the caller's transaction.

    A store of ``_ANNOUNCE_ROWS`` memories or more says so on stderr, when stderr is a
    terminal (``hotmem.Progress``): rebuilding its indexes takes a while (about a second per
    100,000 memories). Each migration is a step of ``status`` (the progress other processes
    read, ``migration_progress``).
    """
    if found >= to:
        return
    progress = Progress(
        f"hotmem: migrating the store from schema {found} to {to} "
        "(rebuilding its full-text indexes)..."
    )
    announce = progress.enabled and (
        connection.execute("SELECT count(*) FROM memories").fetchone()[0] >= _ANNOUNCE_ROWS
    )
    if announce:
        progress()
    for step in range(found, to):
        if status is not None:
            status.step(f"schema {step} to {step + 1}")
        MIGRATIONS[step](connection)
    if announce:
        progress.close(f"hotmem: store migrated to schema {to}")
