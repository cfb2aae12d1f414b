"""The derived lexical indexes: writing a memory's CJK grams, rebuilding, checking.

The word index ``memories_fts`` follows the facts through its triggers (``schema.TRIGGERS``).
The CJK gram index ``memories_cjk`` holds the grams ``fts.cjk_index_text`` derives from a
fact, which SQL cannot compute, so the store writes them with each batch of memories
(:func:`index_grams`) and the delete trigger removes them. Both are derived data: a
migration, a hydration or :func:`rebuild` re-derives them from the facts with this code.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Sequence

from hotmem.store.fts import cjk_index_text

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (hotmem.records)
if TYPE_CHECKING:
    from typing import Literal

    from hotmem.progress import ProgressCallback

__all__ = [
    "BULK_ROWS",
    "CHECK_CJK_INTEGRITY",
    "TABLES",
    "Table",
    "chunk_grams",
    "differences",
    "docsize_tokens",
    "index_grams",
    "probe",
    "rebuild",
    "settle",
    "varints",
]

#: The two lexical indexes: the words of every fact, the CJK grams of the facts with any.
if TYPE_CHECKING:
    Table = Literal["memories_fts", "memories_cjk"]
else:  # at run time, what the values are
    Table = str
TABLES: tuple[Table, ...] = ("memories_fts", "memories_cjk")

# The CJK grams of one memory, by memory_id (its rowid was assigned by the insert before).
_INSERT_BY_ID = (
    "INSERT INTO memories_cjk (rowid, grams) SELECT rowid, ? FROM memories WHERE memory_id = ?"
)
_INSERT = "INSERT INTO memories_cjk (rowid, grams) VALUES (?, ?)"
_FACTS = "SELECT rowid, fact FROM memories"
_FACTS_A_CHUNK = 4096  # facts read at a time (a progress call after each chunk)
#: A batch of at least this many memories is indexed in one statement (``inserts``).
BULK_ROWS = 32
_REBUILD_WORDS = "INSERT INTO memories_fts (memories_fts) VALUES ('rebuild')"
#: FTS5 merges the segments of an index into one ("optimize").
_OPTIMIZE = "INSERT INTO {0} ({0}) VALUES ('optimize')"
#: Looking a term up reads a leaf of each segment of an index, as every search does.
_PROBE = "SELECT rowid FROM {0} WHERE {0} MATCH '\"hotmem\"' LIMIT 1"
#: FTS5's own check of the CJK index (a write statement, like the word index's check).
CHECK_CJK_INTEGRITY = "INSERT INTO memories_cjk (memories_cjk) VALUES ('integrity-check')"


def _grams(fact: str) -> str | None:
    # Most facts are ASCII, and ASCII has no CJK letter: skip the regular expression.
    return None if fact.isascii() else cjk_index_text(fact)


def index_grams(connection: sqlite3.Connection, memories: Iterable[tuple[str, str]]) -> None:
    """Write the CJK grams of the ``(memory_id, fact)`` pairs just inserted that have any
    (no statement at all when none has)."""
    rows = [
        (grams, memory_id) for memory_id, fact in memories if (grams := _grams(fact)) is not None
    ]
    if rows:
        probe(connection, ("memories_cjk",))  # written only now: looked into only now
        connection.executemany(_INSERT_BY_ID, rows)


def _expected(
    connection: sqlite3.Connection, progress: ProgressCallback | None = None
) -> dict[int, str]:
    """The grams of every fact with any, by rowid; ``progress(facts read, facts)``."""
    total = None
    if progress is not None:
        total = int(connection.execute("SELECT count(*) FROM memories").fetchone()[0])
    cursor = connection.execute(_FACTS)
    expected: dict[int, str] = {}
    done = 0
    while rows := cursor.fetchmany(_FACTS_A_CHUNK):
        expected.update(
            (rowid, grams) for rowid, fact in rows if (grams := _grams(fact)) is not None
        )
        done += len(rows)
        if progress is not None:
            progress(done, total)
    return expected


def chunk_grams(first_rowid: int, facts: Sequence[str]) -> list[tuple[int, str]]:
    """``(rowid, grams)`` of the ``facts`` that have CJK grams, fact k at rowid ``first_rowid +
    k``: one check of the whole sequence when every fact is ASCII (most corpora)."""
    if all(map(str.isascii, facts)):
        return []
    return [
        (first_rowid + k, grams)
        for k, fact in enumerate(facts)
        if (grams := _grams(fact)) is not None
    ]


def rebuild(
    connection: sqlite3.Connection,
    grams: Iterable[tuple[int, str]] | None = None,
    *,
    progress: ProgressCallback | None = None,
) -> None:
    """Rebuild both lexical indexes from the facts, inside the caller's transaction; ``grams``
    are the ``(rowid, grams)`` of the facts with any, in rowid order, when the caller derived
    them already (``chunk_grams``), instead of reading every fact back (``progress`` is then
    called with the facts read and their number; the word index is one statement)."""
    connection.execute(_REBUILD_WORDS)
    connection.execute("DELETE FROM memories_cjk")
    connection.executemany(
        _INSERT, sorted(_expected(connection, progress).items()) if grams is None else grams
    )
    for table in TABLES:
        connection.execute(_OPTIMIZE.format(table))


def settle(connection: sqlite3.Connection, added: int, before: int) -> None:
    """After a bulk write of ``added`` memories into a store whose largest rowid was
    ``before``, merge the word index's segments into one when the write at least doubled it.

    FTS5 flushes a bulk write as segments of about a megabyte each and leaves them at the
    lowest levels of its index, some of them half merged. Its merges are counted in levels,
    not sizes: the next few hundred single adds, each a one-page segment, would merge those
    large segments again and again (hundreds of pages a commit). One merge of the whole index
    now (``optimize``: about 0.7 µs a memory) leaves one segment at the top level, which small
    segments reach only once they add up to its size. The condition bounds that merge to about
    twice the memories this write indexed itself.
    """
    if added >= BULK_ROWS and added >= before:
        connection.execute(_OPTIMIZE.format("memories_fts"))


def differences(connection: sqlite3.Connection) -> tuple[str, ...]:
    """How the CJK gram index differs from the grams of the facts, one line per kind."""
    try:
        found = dict(connection.execute("SELECT rowid, grams FROM memories_cjk"))
    except sqlite3.DatabaseError as exc:
        return (f"CJK index: {exc}",)
    expected = _expected(connection)
    kinds = (
        ("missing", sorted(expected.keys() - found.keys())),
        ("not memories", sorted(found.keys() - expected.keys())),
        (
            "other grams",
            sorted(r for r in expected.keys() & found.keys() if expected[r] != found[r]),
        ),
    )
    return tuple(
        f"CJK index: {len(rowids)} row(s) {kind} (first rowid {rowids[0]}); expected the grams "
        "of each fact with CJK letters (MemoryStore.rebuild_lexical_index() rebuilds them)"
        for kind, rowids in kinds
        if rowids
    )


def docsize_tokens(sz: bytes) -> int:
    """A docsize row's token count: one varint a column (one byte below 128 tokens)."""
    return sz[0] if len(sz) == 1 else sum(varints(sz))


def varints(blob: bytes) -> list[int]:
    """The SQLite varints of ``blob`` (big-endian groups of seven bits; a ninth byte of eight)."""
    values: list[int] = []
    i = 0
    while i < len(blob):
        value = 0
        for j in range(9):
            byte = blob[i]
            i += 1
            if j == 8:
                value = (value << 8) | byte
                break
            value = (value << 7) | (byte & 0x7F)
            if not byte & 0x80:
                break
        values.append(value)
    return values


def probe(connection: sqlite3.Connection, tables: Sequence[Table] = TABLES) -> None:
    """Look one term up in each lexical index of ``tables`` (a leaf of every segment read), so
    that a write to a damaged index fails as a search of it does, with SQLite's own error,
    instead of adding to it (FTS5 writes new segments without reading the old ones). A few tens
    of microseconds an index, before a write to it.

    Raises:
        sqlite3.DatabaseError: an index is damaged (the caller's ``sqlerrors`` words it).
    """
    for table in tables:
        connection.execute(_PROBE.format(table)).fetchall()
