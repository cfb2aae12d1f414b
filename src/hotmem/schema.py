"""The SQLite schema of a HotMem store, as SQL text kept apart from the code that runs it."""

from __future__ import annotations

from hotmem.embed import DIMENSION, MODEL_NAME
from hotmem.fts import CJK_TOKENIZER, FTS_TOKENIZER, LEXICAL_INDEX

__all__ = [
    "CHECK_CJK_INTEGRITY",
    "CHECK_FTS_INTEGRITY",
    "CLEAR_CJK",
    "CREATE_FTS_TRIGGERS",
    "CREATE_INSERT_TRIGGER",
    "CREATE_TABLES",
    "DROP_INSERT_TRIGGER",
    "FTS_TRIGGERS",
    "INDEX_ROWS_AFTER",
    "INSERT_CJK",
    "INSERT_CJK_ROW",
    "LEXICAL_TABLES",
    "REBUILD_FTS",
    "SCHEMA_VERSION",
    "SELECT_FACTS",
    "expected_meta",
]

SCHEMA_VERSION = 2

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
"""

# The lexical indexes are derived data: a migration or a hydration drops and rebuilds them.
# The words of every fact: an external-content index over memories.fact, kept in sync by the
# triggers below.
WORD_INDEX = f"""
CREATE VIRTUAL TABLE memories_fts USING fts5 (
    fact,
    content = 'memories',
    content_rowid = 'rowid',
    tokenize = '{FTS_TOKENIZER}'
)
"""
# The CJK grams (fts.cjk_index_text) of the facts that have CJK letters, keyed by memory rowid;
# written by the store with each memory, deleted by memories_fts_delete.
CJK_INDEX = f"CREATE VIRTUAL TABLE memories_cjk USING fts5 (grams, tokenize = '{CJK_TOKENIZER}')"
LEXICAL_TABLES = (WORD_INDEX, CJK_INDEX)
CREATE_TABLES += ";\n".join(LEXICAL_TABLES) + ";\n"

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

CREATE_DELETE_TRIGGER = """
CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, fact) VALUES ('delete', old.rowid, old.fact);
    DELETE FROM memories_cjk WHERE rowid = old.rowid;
END
"""
CREATE_UPDATE_TRIGGER = """
CREATE TRIGGER memories_fts_update AFTER UPDATE OF fact ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, fact) VALUES ('delete', old.rowid, old.fact);
    INSERT INTO memories_fts (rowid, fact) VALUES (new.rowid, new.fact);
END
"""
FTS_TRIGGERS = (CREATE_INSERT_TRIGGER, CREATE_DELETE_TRIGGER, CREATE_UPDATE_TRIGGER)
# Created after a bulk load (hydration rebuilds the index once instead of row by row).
CREATE_FTS_TRIGGERS = ";\n".join(FTS_TRIGGERS) + ";\n"


# The CJK grams of one memory, by memory_id (its rowid is assigned by the insert before).
INSERT_CJK = (
    "INSERT INTO memories_cjk (rowid, grams) SELECT rowid, ? FROM memories WHERE memory_id = ?"
)
# Rebuilding the derived lexical indexes from the facts (migrations and hydration).
REBUILD_FTS = "INSERT INTO memories_fts (memories_fts) VALUES ('rebuild')"
CLEAR_CJK = "DELETE FROM memories_cjk"
INSERT_CJK_ROW = "INSERT INTO memories_cjk (rowid, grams) VALUES (?, ?)"
SELECT_FACTS = "SELECT rowid, fact FROM memories"

# With rank 1, FTS5 also compares the index with the content table (memories.fact).
CHECK_FTS_INTEGRITY = "INSERT INTO memories_fts (memories_fts, rank) VALUES ('integrity-check', 1)"
CHECK_CJK_INTEGRITY = "INSERT INTO memories_cjk (memories_cjk) VALUES ('integrity-check')"


def expected_meta() -> dict[str, str]:
    """The metadata every store of this version records in ``hotmem_meta``."""
    return {
        "schema_version": str(SCHEMA_VERSION),
        "embedding_model": MODEL_NAME,
        "embedding_dimension": str(DIMENSION),
        "fts_tokenizer": LEXICAL_INDEX,
    }
