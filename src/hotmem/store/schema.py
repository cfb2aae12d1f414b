"""The SQLite schema of a HotMem store, as SQL text kept apart from the code that runs it.

Statements are kept one by one (``CREATE_TABLES``, ``FTS_TRIGGERS``) because store setup runs
them inside one transaction, and ``sqlite3``'s ``executescript`` would commit first.

Primary data: ``hotmem_meta`` (what the store is) and ``memories``. Derived data, rebuilt from
them whenever in doubt: the vectors of each vector space (``vector_spaces`` says which spaces
the store keeps, ``space_vectors`` holds all but hotmem-hash-v1's, ``spaces.py``), the lexical
indexes (``memories_fts`` over the words, ``memories_cjk`` over CJK character grams,
``lexical_index.py``), their triggers and the secondary index.
``hotmem_fts_deferred`` is empty outside a bulk write (see ``CREATE_INSERT_TRIGGER``).
"""

from __future__ import annotations

from hotmem.embedding.hash_v1 import DIMENSION, MODEL_NAME
from hotmem.store.fts import CJK_TOKENIZER, FTS_TOKENIZER, LEXICAL_INDEX

__all__ = [
    "CHANGES_KEPT",
    "CHANGES_PRUNE",
    "CHECK_FTS_INTEGRITY",
    "CJK_SHADOW_TABLES",
    "CREATE_FTS_TRIGGERS",
    "CREATE_INSERT_TRIGGER",
    "CREATE_TABLES",
    "DEFER_FTS",
    "FTS_SHADOW_TABLES",
    "FTS_TRIGGERS",
    "HOTMEM_OBJECTS",
    "INDEX_ROWS_AFTER",
    "RESUME_FTS",
    "SCHEMA_VERSION",
    "TABLES",
    "TRIGGERS",
    "expected_meta",
]

#: Version 2: the FTS insert trigger defers to ``hotmem_fts_deferred`` during bulk writes.
#: Version 3: the porter stemmer in ``memories_fts`` and the CJK gram index ``memories_cjk``.
#: Version 4: named vector spaces (``vector_spaces``) and their vectors (``space_vectors``).
#: Version 5: the change log (``hotmem_changes``) search indexes refresh from.
SCHEMA_VERSION = 5

#: name -> CREATE statement of every table and index, in creation order.
TABLES = {
    "hotmem_meta": """CREATE TABLE hotmem_meta (
    key   TEXT PRIMARY KEY,
    value TEXT NOT NULL
) WITHOUT ROWID""",
    "memories": f"""CREATE TABLE memories (
    rowid      INTEGER PRIMARY KEY,
    memory_id  TEXT NOT NULL UNIQUE,
    identifier TEXT NOT NULL,
    fact       TEXT NOT NULL,
    importance REAL NOT NULL CHECK (importance BETWEEN 0.0 AND 1.0),
    tags       TEXT NOT NULL,          -- JSON array of strings
    created_at TEXT NOT NULL,          -- canonical ISO-8601 UTC
    embedding  BLOB NOT NULL CHECK (length(embedding) = {DIMENSION * 4})
)""",
    "memories_by_identifier": "CREATE INDEX memories_by_identifier ON memories (identifier)",
    # One row, only inside a bulk write's transaction: the rowid the batch starts after.
    "hotmem_fts_deferred": "CREATE TABLE hotmem_fts_deferred (after_rowid INTEGER NOT NULL)",
    # External-content index over memories.fact; the triggers below keep it in sync.
    "memories_fts": f"""CREATE VIRTUAL TABLE memories_fts USING fts5 (
    fact,
    content = 'memories',
    content_rowid = 'rowid',
    tokenize = '{FTS_TOKENIZER}'
)""",
    # One row per vector space, hotmem-hash-v1 included (its vectors are memories.embedding);
    # a space's name is its model id (spaces.py).
    "vector_spaces": """CREATE TABLE vector_spaces (
    name      TEXT PRIMARY KEY,
    model_id  TEXT NOT NULL,
    digest    TEXT NOT NULL,
    dimension INTEGER NOT NULL,
    dtype     TEXT NOT NULL
) WITHOUT ROWID""",
    # The vectors of every space but hotmem-hash-v1; a memory without a row in a space is not
    # yet indexed there (reindex fills it). Deleted with the memory (memories_vectors_delete).
    # A rowid table, its key an index beside it: a 1,536-byte vector fits in a table cell, but
    # not in a WITHOUT ROWID cell (at most ~1,000 bytes on a 4 KiB page), where each vector
    # took an overflow page of its own (inserts 2.4 times slower, the file 2.3 times larger).
    "space_vectors": """CREATE TABLE space_vectors (
    space         TEXT NOT NULL,
    memory_rowid  INTEGER NOT NULL,
    vector        BLOB NOT NULL,
    PRIMARY KEY (space, memory_rowid)
)""",
    # The CJK grams of the facts with CJK letters (fts.cjk_index_text), keyed by memory rowid:
    # written by the store with each batch, deleted by memories_fts_delete.
    "memories_cjk": (
        f"CREATE VIRTUAL TABLE memories_cjk USING fts5 (grams, tokenize = '{CJK_TOKENIZER}')"
    ),
    # What changed in the memories other than new rows (which have rowids past any reader's),
    # for search indexes to refresh from (``changes.py``): one row per memory deleted or
    # rewritten, or a NULL memory_rowid for a change to every memory (a rebuilt index).
    # Derived bookkeeping: never in a package; pruned to its last CHANGES_KEPT rows.
    "hotmem_changes": """CREATE TABLE hotmem_changes (
    seq           INTEGER PRIMARY KEY,
    memory_rowid  INTEGER
)""",
    # A search index's image at a mark of the change log (``image.py``), so that a new process
    # reads its columns and postings whole instead of computing them: derived data, never in
    # a package, rewritten whole, ignored when the log cannot bring it up to date.
    "hotmem_index": """CREATE TABLE hotmem_index (
    part  TEXT PRIMARY KEY,
    data  BLOB NOT NULL
)""",
    "hotmem_index_postings": """CREATE TABLE hotmem_index_postings (
    tab          INTEGER NOT NULL,
    token        TEXT NOT NULL,
    positions    BLOB NOT NULL,
    frequencies  BLOB NOT NULL,
    PRIMARY KEY (tab, token)
)""",
}
CREATE_TABLES = tuple(TABLES.values())

# Indexing one row per trigger call costs ~25 µs; one INSERT ... SELECT over a batch ~2 µs a
# row. A bulk write therefore writes a row into hotmem_fts_deferred inside its transaction,
# which turns this trigger off for its own rows alone, indexes them in one statement and
# deletes the row before committing: other connections never see the row, and the schema
# never changes (dropping the trigger instead broke readers in other processes).
CREATE_INSERT_TRIGGER = """CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories
WHEN NOT EXISTS (SELECT 1 FROM hotmem_fts_deferred) BEGIN
    INSERT INTO memories_fts (rowid, fact) VALUES (new.rowid, new.fact);
END"""
DEFER_FTS = "INSERT INTO hotmem_fts_deferred (after_rowid) VALUES (?)"
RESUME_FTS = "DELETE FROM hotmem_fts_deferred"
INDEX_ROWS_AFTER = (
    "INSERT INTO memories_fts (rowid, fact) SELECT rowid, fact FROM memories WHERE rowid > ?"
)

#: The change log keeps its last CHANGES_KEPT rows, pruned every CHANGES_PRUNE rows.
CHANGES_KEPT = 65_536
CHANGES_PRUNE = 4_096

#: name -> CREATE statement of every trigger (they keep ``memories_fts``, ``memories_cjk`` and
#: ``space_vectors`` in sync with the memories).
TRIGGERS = {
    "memories_fts_insert": CREATE_INSERT_TRIGGER,
    "memories_fts_delete": """CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, fact) VALUES ('delete', old.rowid, old.fact);
    DELETE FROM memories_cjk WHERE rowid = old.rowid;
END""",
    # IN over the spaces lets SQLite probe the primary key once per space.
    "memories_vectors_delete": """CREATE TRIGGER memories_vectors_delete AFTER DELETE ON memories
BEGIN
    DELETE FROM space_vectors
    WHERE space IN (SELECT name FROM vector_spaces) AND memory_rowid = old.rowid;
END""",
    "memories_fts_update": """CREATE TRIGGER memories_fts_update AFTER UPDATE OF fact ON memories
BEGIN
    INSERT INTO memories_fts (memories_fts, rowid, fact) VALUES ('delete', old.rowid, old.fact);
    INSERT INTO memories_fts (rowid, fact) VALUES (new.rowid, new.fact);
END""",
    "memories_changes_delete": """CREATE TRIGGER memories_changes_delete AFTER DELETE ON memories
BEGIN
    INSERT INTO hotmem_changes (memory_rowid) VALUES (old.rowid);
END""",
    "memories_changes_update": """CREATE TRIGGER memories_changes_update AFTER UPDATE ON memories
BEGIN
    INSERT INTO hotmem_changes (memory_rowid) VALUES (old.rowid);
    INSERT INTO hotmem_changes (memory_rowid) SELECT new.rowid WHERE new.rowid != old.rowid;
END""",
    # Every CHANGES_PRUNE rows, the rows older than the last CHANGES_KEPT go: a reader that far
    # behind reloads its index whole (``changes.changed_since`` says so).
    "hotmem_changes_prune": f"""CREATE TRIGGER hotmem_changes_prune AFTER INSERT ON hotmem_changes
WHEN new.seq % {CHANGES_PRUNE} = 0 BEGIN
    DELETE FROM hotmem_changes WHERE seq <= new.seq - {CHANGES_KEPT};
END""",
}
FTS_TRIGGERS = tuple(TRIGGERS.values())
# The triggers as one script (hydration creates them after its bulk load, outside a
# transaction).
CREATE_FTS_TRIGGERS = ";\n".join(FTS_TRIGGERS) + ";\n"

#: The FTS5 shadow tables ``CREATE VIRTUAL TABLE memories_fts`` creates with it.
FTS_SHADOW_TABLES = (
    "memories_fts_data",
    "memories_fts_idx",
    "memories_fts_docsize",
    "memories_fts_config",
)
#: Those of ``memories_cjk``, which holds its own content.
CJK_SHADOW_TABLES = (
    "memories_cjk_data",
    "memories_cjk_idx",
    "memories_cjk_content",
    "memories_cjk_docsize",
    "memories_cjk_config",
)
#: Every object a complete store of this version holds, as ``sqlite_master`` names them
#: (SQLite's own ``sqlite_autoindex_*`` left out).
HOTMEM_OBJECTS = frozenset((*TABLES, *FTS_SHADOW_TABLES, *CJK_SHADOW_TABLES, *TRIGGERS))

# With rank 1, FTS5 also compares the index with the content table (memories.fact).
CHECK_FTS_INTEGRITY = "INSERT INTO memories_fts (memories_fts, rank) VALUES ('integrity-check', 1)"


def expected_meta() -> dict[str, str]:
    """The metadata every store of this version records in ``hotmem_meta``."""
    return {
        "schema_version": str(SCHEMA_VERSION),
        "embedding_model": MODEL_NAME,
        "embedding_dimension": str(DIMENSION),
        "fts_tokenizer": LEXICAL_INDEX,
    }
