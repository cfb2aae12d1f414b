"""The SQLite schema of a HotMem store, as SQL text kept apart from the code that runs it."""

from __future__ import annotations

from hotmem.embed import DIMENSION, MODEL_NAME
from hotmem.fts import FTS_TOKENIZER

__all__ = [
    "CHECK_FTS_INTEGRITY",
    "CREATE_FTS_TRIGGERS",
    "CREATE_INSERT_TRIGGER",
    "CREATE_TABLES",
    "DROP_INSERT_TRIGGER",
    "INDEX_ROWS_AFTER",
    "SCHEMA_VERSION",
    "expected_meta",
]

SCHEMA_VERSION = 1

CREATE_TABLES = f"""
CREATE TABLE hotmem_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID;

CREATE TABLE memories (
    rowid      INTEGER PRIMARY KEY,
    memory_id  TEXT NOT NULL UNIQUE,
    identifier TEXT NOT NULL,
    fact       TEXT NOT NULL,
    importance REAL NOT NULL CHECK (importance BETWEEN 0.0 AND 1.0),
    tags       TEXT NOT NULL,          -- JSON array of strings
    created_at TEXT NOT NULL,          -- canonical ISO-8601 UTC
    embedding  BLOB NOT NULL CHECK (length(embedding) = {DIMENSION * 4})
);

CREATE INDEX memories_by_identifier ON memories (identifier);

-- External-content index over memories.fact; the triggers below keep it in sync.
CREATE VIRTUAL TABLE memories_fts USING fts5 (
    fact,
    content = 'memories',
    content_rowid = 'rowid',
    tokenize = '{FTS_TOKENIZER}'
);
"""

# Indexing one row per trigger call costs ~17 µs; one INSERT ... SELECT over a batch ~2 µs a
# row. Bulk writes therefore drop this trigger inside their transaction, index the new rows in
# one statement and recreate it before committing (DDL is transactional in SQLite).
CREATE_INSERT_TRIGGER = """
CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
    INSERT INTO memories_fts (rowid, fact) VALUES (new.rowid, new.fact);
END
"""
DROP_INSERT_TRIGGER = "DROP TRIGGER memories_fts_insert"
INDEX_ROWS_AFTER = (
    "INSERT INTO memories_fts (rowid, fact) SELECT rowid, fact FROM memories WHERE rowid > ?"
)

# Created after a bulk load (hydration rebuilds the index once instead of row by row).
CREATE_FTS_TRIGGERS = (
    CREATE_INSERT_TRIGGER
    + """;

CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, fact) VALUES ('delete', old.rowid, old.fact);
END;

CREATE TRIGGER memories_fts_update AFTER UPDATE OF fact ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, fact) VALUES ('delete', old.rowid, old.fact);
    INSERT INTO memories_fts (rowid, fact) VALUES (new.rowid, new.fact);
END;
"""
)


# With rank 1, FTS5 also compares the index with the content table (memories.fact).
CHECK_FTS_INTEGRITY = "INSERT INTO memories_fts (memories_fts, rank) VALUES ('integrity-check', 1)"


def expected_meta() -> dict[str, str]:
    """The metadata every store of this version records in ``hotmem_meta``."""
    return {
        "schema_version": str(SCHEMA_VERSION),
        "embedding_model": MODEL_NAME,
        "embedding_dimension": str(DIMENSION),
        "fts_tokenizer": FTS_TOKENIZER,
    }
