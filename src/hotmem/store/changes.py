"""What changed in a store since a search index read it, and the postings and ids it reads.

An index remembers a :class:`Mark`: the largest memory rowid it has read and the last entry of
the change log (``hotmem_changes``) it has applied. SQLite gives a new row the largest rowid
plus one, so new memories have rowids past the mark, or, once the mark's own memory was deleted
(which the log says), past the largest rowid still there; a memory deleted or rewritten is
logged by a trigger, a change to every memory (a rebuilt index, a dropped space) as a NULL
rowid. :func:`changed_since` answers from the log, or says to reload when it cannot (the log
was pruned past the mark, or every memory changed).

Everything here runs inside the caller's read transaction, so an index and its reads see one
state of the store (``columns.py`` reads the memories' columns).
"""

from __future__ import annotations

import json
import sqlite3
from array import array
from collections.abc import Collection

from hotmem.errors import StoreError
from hotmem.fields import shown
from hotmem.store.columns import MARK_SQL, integers, rowid_spans
from hotmem.store.lexical_index import Table
from hotmem.store.rows import unit_breach

__all__ = [
    "EVERY_MEMORY_CHANGED",
    "Mark",
    "ResultRow",
    "changed_since",
    "current_mark",
    "log_changed",
    "memory_ids",
    "phrase_scores",
    "result_rows",
    "space_vectors",
    "token_occurrences",
]

#: A change to every memory: every index reloads (a rebuilt lexical index, a dropped space).
EVERY_MEMORY_CHANGED = "INSERT INTO hotmem_changes (memory_rowid) VALUES (NULL)"
_IN = "IN (SELECT value FROM json_each(?))"


class Mark:
    """Where an index stands: the largest memory rowid and change-log entry it has read."""

    __slots__ = ("change", "rowid")

    rowid: int
    change: int

    def __init__(self, rowid: int, change: int) -> None:
        self.rowid = rowid
        self.change = change

    def __eq__(self, other: object) -> bool:
        if type(other) is not Mark:
            return NotImplemented
        return self.rowid == other.rowid and self.change == other.change

    def __hash__(self) -> int:
        return hash((self.rowid, self.change))

    def __repr__(self) -> str:
        return f"Mark(rowid={self.rowid!r}, change={self.change!r})"


def current_mark(connection: sqlite3.Connection) -> Mark:
    """The store's mark now (two lookups at the ends of two B-trees)."""
    rowid, change = connection.execute(MARK_SQL).fetchone()
    return Mark(int(rowid), int(change))


def changed_since(connection: sqlite3.Connection, mark: Mark) -> frozenset[int] | None:
    """The rowids of memories deleted or rewritten since ``mark``; ``None`` when the log cannot
    say (every memory changed, or the entries after ``mark`` were pruned): reload."""
    rows = connection.execute(
        "SELECT seq, memory_rowid FROM hotmem_changes WHERE seq > ? ORDER BY seq", (mark.change,)
    ).fetchall()
    if not rows:
        return frozenset()
    if rows[0][0] != mark.change + 1 or any(rowid is None for _, rowid in rows):
        return None
    return frozenset(int(rowid) for _, rowid in rows)


def log_changed(connection: sqlite3.Connection, rowids: Collection[int]) -> None:
    """Record that the memories of ``rowids`` changed (their vectors in a space, say)."""
    connection.executemany(
        "INSERT INTO hotmem_changes (memory_rowid) VALUES (?)", ((r,) for r in sorted(rowids))
    )


def _vocabulary(connection: sqlite3.Connection, table: Table) -> str:
    """An ``fts5vocab`` instance table over ``table`` in the connection's temporary schema."""
    name = f"temp.hotmem_{table}_instances"
    connection.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {name} USING fts5vocab (main, {table}, instance)"
    )
    return name


def token_occurrences(connection: sqlite3.Connection, table: Table, token: str) -> array[int]:
    """The rowid of every occurrence of ``token`` in the index ``table``, in rowid order (a
    memory where it occurs three times, three times): the index's own list, read whole."""
    sql = f"SELECT group_concat(doc) FROM {_vocabulary(connection, table)} WHERE term = ?"
    try:
        text = connection.execute(sql, (token,)).fetchone()[0]
    except sqlite3.DataError:  # past SQLite's length limit: row by row
        sql = f"SELECT doc FROM {_vocabulary(connection, table)} WHERE term = ?"
        return array("q", (int(row[0]) for row in connection.execute(sql, (token,))))
    return array("q") if text is None else integers(text)


def phrase_scores(
    connection: sqlite3.Connection, table: Table, expression: str
) -> dict[int, float]:
    """rowid -> FTS5's ``bm25()`` (negated: higher is better) of every memory matching the
    ``MATCH`` expression ``expression`` in ``table``."""
    sql = f"SELECT rowid, -bm25({table}) FROM {table} WHERE {table} MATCH ?"
    return {int(rowid): float(raw) for rowid, raw in connection.execute(sql, (expression,))}


#: What a search returns of a memory: memory_id, identifier, fact, tags (JSON), importance.
ResultRow = tuple[str, str, str, str, float]


def result_rows(
    connection: sqlite3.Connection, target: str, rowids: Collection[int]
) -> dict[int, ResultRow]:
    """rowid -> the fields a search returns, of the memories of ``rowids`` (their memory_ids
    break ties, the rest is read with them: one statement for both).

    Raises:
        StoreError: a memory_id is not text.
    """
    rows = connection.execute(
        "SELECT rowid, memory_id, identifier, fact, tags, importance FROM memories "
        f"WHERE rowid {_IN}",
        (json.dumps(list(rowids)),),
    ).fetchall()
    for row in rows:
        if not isinstance(row[1], str):
            breach = "expected memory_id as text"
            raise StoreError(
                f"store {target!r} holds a damaged memory, memory_id={shown(row[1])}: {breach}"
            )
    return {int(row[0]): row[1:] for row in rows}


def memory_ids(
    connection: sqlite3.Connection, target: str, rowids: Collection[int]
) -> dict[int, str]:
    """rowid -> memory_id of the memories of ``rowids`` (what ties are broken by, read
    without the rest of their rows).

    Raises:
        StoreError: a memory_id is not text.
    """
    rows = connection.execute(
        f"SELECT rowid, memory_id FROM memories WHERE rowid {_IN}", (json.dumps(list(rowids)),)
    ).fetchall()
    for _, memory_id in rows:
        if not isinstance(memory_id, str):
            breach = "expected memory_id as text"
            raise StoreError(
                f"store {target!r} holds a damaged memory, memory_id={shown(memory_id)}: {breach}"
            )
    return {int(rowid): memory_id for rowid, memory_id in rows}


def space_vectors(
    connection: sqlite3.Connection,
    space: str,
    width: int,
    rowids: Collection[int] | None = None,
    *,
    target: str,
) -> tuple[array[int], bytes]:
    """The vectors of ``space``, of every memory or of those of ``rowids``: the rowids of the
    memories that have one of ``width`` bytes, ascending, and their vectors joined in the same
    order (a value of another kind is left out, as a missing vector).

    Raises:
        StoreError: a vector is not finite and of unit length (the message names its memory).
    """
    sql = (
        "SELECT group_concat(memory_rowid), CAST(group_concat(vector, '') AS BLOB) "
        "FROM space_vectors WHERE space = ? AND {where} "
        f"AND typeof(vector) = 'blob' AND length(vector) = {width}"
    )
    if rowids is None:
        spans: list[tuple[str, tuple[object, ...]]] = [
            ("memory_rowid BETWEEN ? AND ?", span)
            for span in rowid_spans(connection, "memories", "rowid")
        ]
    else:
        spans = [(f"memory_rowid {_IN}", (json.dumps(sorted(rowids)),))]
    found: array[int] = array("q")
    blobs: list[bytes] = []
    for where, args in spans:
        ids, blob = connection.execute(sql.format(where=where), (space, *args)).fetchone()
        if ids is not None:
            read = integers(ids)
            breach = unit_breach(connection, target, read, blob, width, space)
            if breach is not None:
                raise breach
            found.extend(read)
            blobs.append(blob)
    return found, b"".join(blobs)
