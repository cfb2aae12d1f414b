"""Stores as HotMem with schema version 1 wrote them, whole or interrupted part-way.

The SQL is version 1's, written out (``git show <v1>:src/hotmem/schema.py``): its first open
ran these statements one by one in autocommit mode, so a process killed during it left any
prefix of them behind. ``build`` reproduces such a prefix.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from hotmem.embedding.hash_v1 import embed_bytes

TABLES = (
    """CREATE TABLE hotmem_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID""",
    """CREATE TABLE memories (
    rowid      INTEGER PRIMARY KEY,
    memory_id  TEXT NOT NULL UNIQUE,
    identifier TEXT NOT NULL,
    fact       TEXT NOT NULL,
    importance REAL NOT NULL CHECK (importance BETWEEN 0.0 AND 1.0),
    tags       TEXT NOT NULL,          -- JSON array of strings
    created_at TEXT NOT NULL,          -- canonical ISO-8601 UTC
    embedding  BLOB NOT NULL CHECK (length(embedding) = 256)
)""",
    "CREATE INDEX memories_by_identifier ON memories (identifier)",
    """CREATE VIRTUAL TABLE memories_fts USING fts5 (
    fact,
    content = 'memories',
    content_rowid = 'rowid',
    tokenize = 'unicode61 remove_diacritics 2'
)""",
)
META = (
    ("embedding_dimension", "64"),
    ("embedding_model", "hotmem-hash-v1"),
    ("fts_tokenizer", "unicode61 remove_diacritics 2"),
    ("schema_version", "1"),
)
TRIGGERS = (
    """CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts (rowid, fact) VALUES (new.rowid, new.fact);
END""",
    """CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, fact) VALUES ('delete', old.rowid, old.fact);
END""",
    """CREATE TRIGGER memories_fts_update AFTER UPDATE OF fact ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, fact) VALUES ('delete', old.rowid, old.fact);
    INSERT INTO memories_fts (rowid, fact) VALUES (new.rowid, new.fact);
END""",
)
#: Version 1's first open, statement by statement (the meta rows are one statement).
STEPS = (*TABLES, "META", *TRIGGERS)


def insert(connection: sqlite3.Connection, memory_id: str, fact: str) -> None:
    """Add a memory as version 1 did (its triggers, whichever exist, index it)."""
    connection.execute(
        "INSERT INTO memories (memory_id, identifier, fact, importance, tags, created_at, "
        "embedding) VALUES (?, 'acme', ?, 0.5, ?, '2026-01-01T00:00:00Z', ?)",
        (memory_id, fact, json.dumps(["v1"]), embed_bytes(fact)),
    )


def build(path: Path, steps: int = len(STEPS), facts: dict[str, str] | None = None) -> None:
    """A version-1 store at ``path`` after the first ``steps`` steps of its first open, then
    ``facts`` (memory_id -> fact) added as version 1 added them."""
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        for step in STEPS[:steps]:
            if step == "META":
                connection.executemany("INSERT INTO hotmem_meta VALUES (?, ?)", META)
            else:
                connection.execute(step)
        for memory_id, fact in (facts or {}).items():
            insert(connection, memory_id, fact)
    finally:
        connection.close()
