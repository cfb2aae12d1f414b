"""Typed reads for a search index: what changed since it read the store, and the columns,
occurrences and ids it reads.

An index remembers a :class:`Mark`: the largest memory rowid it has read and the last entry
of the change log (``hotmem_changes``) it has applied. New memories have rowids past the mark
(SQLite gives a new row the largest rowid plus one); a memory deleted or rewritten is logged
by a trigger, a change to every memory (a rebuilt index, a dropped space) as a NULL rowid.
:func:`changed_since` answers from the log, or says to reload when it cannot (the log was
pruned past the mark, or every memory changed).

Everything here runs inside the caller's read transaction, so an index and its reads see one
state of the store. A read of every memory is aggregated in SQLite (``group_concat``), a
chunk of rowids at a time: a Python object a row and column would cost more than the column.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field

from hotmem.embedding.hash_v1 import VECTOR_BYTES
from hotmem.errors import StoreError
from hotmem.fields import shown
from hotmem.store.lexical_index import Table, varints

__all__ = [
    "EVERY_MEMORY_CHANGED",
    "Mark",
    "MemoryColumns",
    "changed_since",
    "current_mark",
    "log_changed",
    "memory_columns",
    "memory_ids",
    "phrase_scores",
    "space_vectors",
    "token_occurrences",
]

#: A change to every memory: every index reloads (a rebuilt lexical index, a dropped space).
EVERY_MEMORY_CHANGED = "INSERT INTO hotmem_changes (memory_rowid) VALUES (NULL)"
_CHUNK = 65_536  # rowids aggregated a statement: about 16 MB of vectors
_IN = "IN (SELECT value FROM json_each(?))"
# An importance in [0, 1] times 2**62 is an integer when its last bit is worth at least 2**-62
# (every importance from 2**-10 up, and most below): read as that integer, it crosses SQLite's
# text exactly. The others are read as floats, one row each.
_SCALE = 2.0**62
_SCALED = f"CAST(importance * {_SCALE!r} AS INTEGER)"
_BAD_VECTOR = f"typeof(embedding) != 'blob' OR length(embedding) != {VECTOR_BYTES}"
_BAD_IMPORTANCE = "typeof(importance) != 'real' OR NOT importance BETWEEN 0.0 AND 1.0"
_COLUMNS_SQL = (
    "SELECT group_concat(rowid), CAST(group_concat(embedding, '') AS BLOB), "
    f"json_group_array(identifier), group_concat({_SCALED}), sum({_BAD_VECTOR}), "
    f"sum({_BAD_IMPORTANCE} OR importance * {_SCALE!r} != {_SCALED}) "
    "FROM memories WHERE rowid BETWEEN ? AND ?"
)


@dataclass(frozen=True, slots=True)
class Mark:
    """Where an index stands: the largest memory rowid and change-log entry it has read."""

    rowid: int
    change: int


def current_mark(connection: sqlite3.Connection) -> Mark:
    """The store's mark now (two lookups at the ends of two B-trees)."""
    rowid, change = connection.execute(
        "SELECT (SELECT coalesce(max(rowid), 0) FROM memories), "
        "(SELECT coalesce(max(seq), 0) FROM hotmem_changes)"
    ).fetchone()
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


@dataclass(slots=True)
class MemoryColumns:
    """Some memories' ranking fields, in ascending rowid order.

    Attributes:
        rowids: the memories' rowids.
        identifiers: each one's identifier.
        importances: each one's importance.
        vectors: their ``hotmem-hash-v1`` vectors, 256 bytes each (little-endian float32).
        words: each one's token count in the word index (its docsize row; 0 without one).
        grams: each one's token count in the CJK index, -1 without a row there.
        facts: each one's fact, when read (``None``: not read).
    """

    rowids: list[int] = field(default_factory=list)
    identifiers: list[str] = field(default_factory=list)
    importances: list[float] = field(default_factory=list)
    vectors: bytes = b""
    words: list[int] = field(default_factory=list)
    grams: list[int] = field(default_factory=list)
    facts: list[str] | None = None


def _found(column: str, value: object) -> str:
    """What a damaged column holds, as a breach message says it."""
    if column == "embedding":
        return f"{len(value)} bytes" if isinstance(value, bytes) else type(value).__name__
    return repr(value)


#: column -> what the store writes there (a damaged value breaks it).
_EXPECTED = {
    "identifier": "expected identifier as text",
    "importance": "expected importance in [0, 1]",
    "embedding": f"expected an embedding of {VECTOR_BYTES} bytes",
}


def _damaged(
    connection: sqlite3.Connection, target: str, where: str, args: tuple[object, ...], column: str
) -> StoreError:
    sql = f"SELECT memory_id, {column} FROM memories WHERE {where} ORDER BY rowid LIMIT 1"
    row = connection.execute(sql, args).fetchone()
    memory_id, value = row if row is not None else ("unknown", None)
    breach = f"{_EXPECTED[column]}, found {_found(column, value)}"
    return StoreError(
        f"store {target!r} holds a damaged memory, memory_id={shown(memory_id)}: {breach}"
    )


def _chunks(connection: sqlite3.Connection, table: str, key: str) -> Iterator[tuple[int, int]]:
    low, high = connection.execute(f"SELECT min({key}), max({key}) FROM {table}").fetchone()
    if low is None:
        return
    for start in range(int(low), int(high) + 1, _CHUNK):
        yield start, start + _CHUNK - 1


def _sizes(
    connection: sqlite3.Connection, table: Table, where: str, args: tuple[object, ...]
) -> dict[int, int]:
    """rowid -> token count of the docsize rows of ``table`` matching ``where``."""
    sql = f"SELECT group_concat(id), CAST(group_concat(sz, '') AS BLOB) FROM {table}_docsize "
    ids, blob = connection.execute(sql + where, args).fetchone()
    if ids is None:
        return {}
    # One varint a row (the tables have one column): one byte each below 128 tokens.
    counts = list(blob) if max(blob) < 0x80 else varints(blob)
    return dict(zip(map(int, ids.split(",")), counts, strict=True))


def _every_size(connection: sqlite3.Connection, table: Table) -> dict[int, int]:
    found: dict[int, int] = {}
    for start, stop in _chunks(connection, f"{table}_docsize", "id"):
        found.update(_sizes(connection, table, "WHERE id BETWEEN ? AND ?", (start, stop)))
    return found


def _identifiers(
    values: list[object], connection: sqlite3.Connection, target: str, span: tuple[int, int]
) -> list[str]:
    if any(not isinstance(v, str) for v in values):
        raise _damaged(
            connection,
            target,
            "rowid BETWEEN ? AND ? AND typeof(identifier) != 'text'",
            span,
            "expected identifier as text",
        )
    return values  # type: ignore[return-value]  # checked: every value is a str


def _importances(
    connection: sqlite3.Connection, target: str, span: tuple[int, int], scaled: str, odd: int
) -> list[float]:
    if not odd:
        return [int(n) / _SCALE for n in scaled.split(",")]
    rows = connection.execute(
        "SELECT importance FROM memories WHERE rowid BETWEEN ? AND ? ORDER BY rowid", span
    ).fetchall()
    values = [row[0] for row in rows]
    if any(not isinstance(v, float) or not 0.0 <= v <= 1.0 for v in values):
        where = f"rowid BETWEEN ? AND ? AND ({_BAD_IMPORTANCE})"
        raise _damaged(connection, target, where, span, "importance")
    return values


def _every_memory(connection: sqlite3.Connection, target: str) -> MemoryColumns:
    encoding = connection.execute("PRAGMA encoding").fetchone()[0]
    if encoding != "UTF-8":  # group_concat would transcode the vectors' bytes as text
        rowids = [int(r[0]) for r in connection.execute("SELECT rowid FROM memories")]
        return memory_columns(connection, target, rowids)
    found = MemoryColumns()
    vectors: list[bytes] = []
    for span in _chunks(connection, "memories", "rowid"):
        rowids, blob, identifiers, scaled, bad, odd = connection.execute(
            _COLUMNS_SQL, span
        ).fetchone()
        if rowids is None:
            continue
        if bad:
            where = f"rowid BETWEEN ? AND ? AND ({_BAD_VECTOR})"
            raise _damaged(connection, target, where, span, "embedding")
        found.rowids.extend(map(int, rowids.split(",")))
        vectors.append(blob)
        found.identifiers.extend(_identifiers(json.loads(identifiers), connection, target, span))
        found.importances.extend(_importances(connection, target, span, scaled, odd))
    found.vectors = b"".join(vectors)
    words, grams = _every_size(connection, "memories_fts"), _every_size(connection, "memories_cjk")
    found.words = [words.get(r, 0) for r in found.rowids]
    found.grams = [grams.get(r, -1) for r in found.rowids]
    return found


def memory_columns(
    connection: sqlite3.Connection,
    target: str,
    rowids: Collection[int] | None = None,
    *,
    after: int | None = None,
) -> MemoryColumns:
    """The columns of every memory (neither ``rowids`` nor ``after`` given), or of those of
    ``rowids`` that exist and of every one with a rowid past ``after``, in ascending rowid
    order; the second form also gives their facts (``MemoryColumns.facts``).

    Raises:
        StoreError: a memory's identifier, importance or vector is not of the store's kind
            (the message names the first one).
    """
    if rowids is None and after is None:
        return _every_memory(connection, target)
    where = f"(rowid {_IN} OR rowid > ?)"
    chosen = (json.dumps(sorted(rowids or ())), after if after is not None else 2**63 - 1)
    rows = connection.execute(
        f"SELECT rowid, identifier, importance, embedding, fact FROM memories WHERE {where} "
        "ORDER BY rowid",
        chosen,
    ).fetchall()
    checks = (
        (lambda r: isinstance(r[1], str), "typeof(identifier) != 'text'", "identifier"),
        (
            lambda r: isinstance(r[2], float) and 0.0 <= r[2] <= 1.0,
            _BAD_IMPORTANCE,
            "importance",
        ),
        (
            lambda r: isinstance(r[3], bytes) and len(r[3]) == VECTOR_BYTES,
            _BAD_VECTOR,
            "embedding",
        ),
    )
    for ok, test, column in checks:
        if not all(map(ok, rows)):
            raise _damaged(connection, target, f"{where} AND ({test})", chosen, column)
    sizes = f"WHERE (id {_IN} OR id > ?)"
    words = _sizes(connection, "memories_fts", sizes, chosen)
    grams = _sizes(connection, "memories_cjk", sizes, chosen)
    present = [int(r[0]) for r in rows]
    return MemoryColumns(
        rowids=present,
        identifiers=[r[1] for r in rows],
        importances=[r[2] for r in rows],
        vectors=b"".join(r[3] for r in rows),
        words=[words.get(r, 0) for r in present],
        grams=[grams.get(r, -1) for r in present],
        facts=[str(r[4]) for r in rows],
    )


def _vocabulary(connection: sqlite3.Connection, table: Table) -> str:
    """An ``fts5vocab`` instance table over ``table`` in the connection's temporary schema."""
    name = f"temp.hotmem_{table}_instances"
    connection.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {name} USING fts5vocab (main, {table}, instance)"
    )
    return name


def token_occurrences(connection: sqlite3.Connection, table: Table, token: str) -> list[int]:
    """The rowid of every occurrence of ``token`` in the index ``table``, in rowid order (a
    memory where it occurs three times, three times): the index's own list, read whole."""
    sql = f"SELECT group_concat(doc) FROM {_vocabulary(connection, table)} WHERE term = ?"
    try:
        text = connection.execute(sql, (token,)).fetchone()[0]
    except sqlite3.DataError:  # past SQLite's length limit: row by row
        sql = f"SELECT doc FROM {_vocabulary(connection, table)} WHERE term = ?"
        return [int(row[0]) for row in connection.execute(sql, (token,))]
    return [] if text is None else list(map(int, text.split(",")))


def phrase_scores(
    connection: sqlite3.Connection, table: Table, expression: str
) -> dict[int, float]:
    """rowid -> FTS5's ``bm25()`` (negated: higher is better) of every memory matching the
    ``MATCH`` expression ``expression`` in ``table``."""
    sql = f"SELECT rowid, -bm25({table}) FROM {table} WHERE {table} MATCH ?"
    return {int(rowid): float(raw) for rowid, raw in connection.execute(sql, (expression,))}


def memory_ids(
    connection: sqlite3.Connection, target: str, rowids: Collection[int]
) -> dict[int, str]:
    """rowid -> memory_id of the memories of ``rowids``.

    Raises:
        StoreError: a memory_id is not text.
    """
    rows = connection.execute(
        f"SELECT rowid, memory_id FROM memories WHERE rowid {_IN}", (json.dumps(sorted(rowids)),)
    ).fetchall()
    for _, memory_id in rows:
        if not isinstance(memory_id, str):
            breach = "expected memory_id as text"
            raise StoreError(
                f"store {target!r} holds a damaged memory, memory_id={shown(memory_id)}: {breach}"
            )
    return {int(rowid): memory_id for rowid, memory_id in rows}


def space_vectors(
    connection: sqlite3.Connection, space: str, width: int, rowids: Collection[int] | None = None
) -> tuple[list[int], bytes]:
    """The vectors of ``space``, of every memory or of those of ``rowids``: the rowids of the
    memories that have one of ``width`` bytes, and their vectors joined in the same order (a
    value of another kind is left out, as a missing vector)."""
    sql = (
        "SELECT group_concat(memory_rowid), CAST(group_concat(vector, '') AS BLOB) "
        "FROM space_vectors WHERE space = ? AND {where} "
        f"AND typeof(vector) = 'blob' AND length(vector) = {width}"
    )
    if rowids is None:
        spans: list[tuple[str, tuple[object, ...]]] = [
            ("memory_rowid BETWEEN ? AND ?", span)
            for span in _chunks(connection, "memories", "rowid")
        ]
    else:
        spans = [(f"memory_rowid {_IN}", (json.dumps(sorted(rowids)),))]
    found: list[int] = []
    blobs: list[bytes] = []
    for where, args in spans:
        ids, blob = connection.execute(sql.format(where=where), (space, *args)).fetchone()
        if ids is not None:
            found.extend(map(int, ids.split(",")))
            blobs.append(blob)
    return found, b"".join(blobs)
