"""The memories' ranking fields as columns, read for a search index (``hotmem.retrieval``).

A read of every memory is aggregated in SQLite, a chunk of rowids at a time: the rowids, the
hash-v1 vectors (one blob, their bytes in order), the importances (each an exact integer times
2**-62, read as text), and checks that every value is of the store's kind, in one statement;
the identifiers' memberships and the lexical indexes' token counts (their docsize rows) in
others. A Python object a row and column would cost more than the column itself. Integers
joined by commas are parsed by numpy when the caller has loaded it already (the numpy
engine), else by the standard library: the same values either way.

A read of some memories (the delta a refreshing index asks for) reads their rows.
"""

from __future__ import annotations

import json
import sqlite3
import sys
from array import array
from bisect import bisect_left
from collections.abc import Collection, Iterator
from itertools import repeat
from operator import truediv

from hotmem.embedding.hash_v1 import VECTOR_BYTES
from hotmem.errors import StoreError
from hotmem.fields import shown
from hotmem.store.lexical_index import varints
from hotmem.store.rows import unit_breach

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (hotmem.records)
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "MARK_SQL",
    "Job",
    "MemoryColumns",
    "integers",
    "memory_columns",
    "rowid_spans",
    "vectors_upto",
]

_CHUNK = 65_536  # rowids aggregated a statement: about 16 MB of vectors
_IN = "IN (SELECT value FROM json_each(?))"
# An importance in [0, 1] times 2**62 is an integer when its last bit is worth at least 2**-62
# (every importance from 2**-10 up, and most below): read as that integer, it crosses SQLite's
# text exactly. A chunk holding another is read as floats, one row each.
_SCALE = 2.0**62
_SCALED = f"CAST(importance * {_SCALE!r} AS INTEGER)"
_BAD_VECTOR = f"typeof(embedding) != 'blob' OR length(embedding) != {VECTOR_BYTES}"
_BAD_IMPORTANCE = "typeof(importance) != 'real' OR NOT importance BETWEEN 0.0 AND 1.0"
_COLUMNS_SQL = (
    "SELECT group_concat(rowid), CAST(group_concat(embedding, '') AS BLOB), "
    f"group_concat({_SCALED}), sum({_BAD_VECTOR}), "
    f"sum({_BAD_IMPORTANCE} OR importance * {_SCALE!r} != {_SCALED}) "
    "FROM memories WHERE rowid BETWEEN ? AND ?"
)

_SCOPES_SQL = "SELECT identifier, group_concat(rowid) FROM memories GROUP BY identifier"
#: The largest memory rowid and change-log entry (``changes.Mark``).
MARK_SQL = (
    "SELECT (SELECT coalesce(max(rowid), 0) FROM memories), "
    "(SELECT coalesce(max(seq), 0) FROM hotmem_changes)"
)
#: A statement and its parameters, returning one row.
Job = tuple[str, tuple[object, ...]]
#: column -> what the store writes there (a damaged value breaks it).
_EXPECTED = {
    "identifier": "expected identifier as text",
    "importance": "expected importance in [0, 1]",
    "embedding": f"expected an embedding of {VECTOR_BYTES} bytes",
}


class MemoryColumns:
    """Some memories' ranking fields, in ascending rowid order.

    Attributes:
        rowids: the memories' rowids.
        scopes: identifier -> the rowids of its memories among them, ascending.
        importances: each one's importance.
        vectors: their ``hotmem-hash-v1`` vectors, 256 bytes each (little-endian float32),
            in blobs of whole vectors (the chunks read, not copied into one).
        words: each one's token count in the word index (its docsize row; 0 without one).
        grams: each one's token count in the CJK index, -1 without a row there.
        facts: each one's fact, when read (``None``: not read).
    """

    __slots__ = ("facts", "grams", "importances", "rowids", "scopes", "vectors", "words")

    rowids: array[int]
    scopes: dict[str, array[int]]
    importances: array[float]
    vectors: list[bytes]
    words: array[float]
    grams: array[float]
    facts: list[str] | None

    def __init__(
        self,
        rowids: array[int] | None = None,
        scopes: dict[str, array[int]] | None = None,
        importances: array[float] | None = None,
        vectors: list[bytes] | None = None,
        words: array[float] | None = None,
        grams: array[float] | None = None,
        facts: list[str] | None = None,
    ) -> None:
        self.rowids = array("q") if rowids is None else rowids
        self.scopes = {} if scopes is None else scopes
        self.importances = array("d") if importances is None else importances
        self.vectors = [] if vectors is None else vectors
        self.words = array("d") if words is None else words
        self.grams = array("d") if grams is None else grams
        self.facts = facts


def integers(text: str) -> array[int]:
    """The integers of ``text`` (joined by commas), parsed in C by numpy when the process has
    loaded it, else by the standard library."""
    numpy = sys.modules.get("numpy")
    found = array("q")
    if numpy is not None:
        found.frombytes(numpy.fromstring(text, dtype=numpy.int64, sep=",").tobytes())
    else:
        found.extend(map(int, text.split(",")))
    return found


def _scaled(text: str) -> array[float]:
    """The importances of ``text``: integers joined by commas, each an importance times 2**62
    (exact: the integer has at most 53 significant bits, and 2**62 is a power of two)."""
    numpy = sys.modules.get("numpy")
    if numpy is not None:
        return array("d", (numpy.fromstring(text, dtype=numpy.int64, sep=",") / _SCALE).tobytes())
    return array("d", map(truediv, map(int, text.split(",")), repeat(_SCALE)))


def _found(column: str, value: object) -> str:
    """What a damaged column holds, as a breach message says it."""
    if column == "embedding":
        return f"{len(value)} bytes" if isinstance(value, bytes) else type(value).__name__
    return repr(value)


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


def rowid_spans(connection: sqlite3.Connection, table: str, key: str) -> Iterator[tuple[int, int]]:
    """Spans of ``key`` values covering ``table``, ``_CHUNK`` values each."""
    # Two subqueries: SQLite finds a lone min() or max() of a key in its b-tree, but scans
    # every row for both at once (0.8 ms at 10,000 memories).
    sql = f"SELECT (SELECT min({key}) FROM {table}), (SELECT max({key}) FROM {table})"
    low, high = connection.execute(sql).fetchone()
    if low is None:
        return
    for start in range(int(low), int(high) + 1, _CHUNK):
        yield start, start + _CHUNK - 1


def _token_counts(rows: list[Any], rowids: array[int], missing: float) -> array[float]:
    """Each of ``rowids``' token count in a lexical index from its docsize ``rows`` (the ids
    and the varints joined; one varint a row, the tables having one column), ``missing`` for a
    memory without one."""
    ids: array[int] = array("q")
    counts: list[int] = []
    for joined, blob in rows:
        if joined is not None:
            ids.extend(integers(joined))
            counts.extend(blob if max(blob) < 0x80 else varints(blob))  # a byte below 128
    if ids == rowids:  # every memory has a row, in the same order: no lookup
        return array("d", counts)
    found = array("d", [missing]) * len(rowids)
    for rowid, count in zip(ids, counts, strict=True):  # both ascending: a few rows, placed
        at = bisect_left(rowids, rowid)
        if at < len(rowids) and rowids[at] == rowid:
            found[at] = count
    return found


def _importances(
    connection: sqlite3.Connection, target: str, span: tuple[int, int], scaled: str, odd: int
) -> array[float]:
    if not odd:
        return _scaled(scaled)
    rows = connection.execute(
        "SELECT importance FROM memories WHERE rowid BETWEEN ? AND ? ORDER BY rowid", span
    ).fetchall()
    values = [row[0] for row in rows]
    if any(not isinstance(v, float) or not 0.0 <= v <= 1.0 for v in values):
        where = f"rowid BETWEEN ? AND ? AND ({_BAD_IMPORTANCE})"
        raise _damaged(connection, target, where, span, "importance")
    return array("d", values)


def _mark(connection: sqlite3.Connection) -> tuple[int, int]:
    rowid, change = connection.execute(MARK_SQL).fetchone()
    return int(rowid), int(change)


def _helper(path: str, mark: tuple[int, int], jobs: list[Job], out: list[object]) -> None:
    """Run ``jobs`` on a connection of this thread's own, when it sees the state ``mark``
    (else leave ``out`` empty: the caller runs them)."""
    from pathlib import Path  # a second connection, for a store of several chunks only

    try:
        helper = sqlite3.connect(f"{Path(path).resolve().as_uri()}?mode=ro", uri=True)
    except sqlite3.Error:
        return
    try:
        helper.execute("BEGIN")
        if _mark(helper) == mark:
            out.extend(helper.execute(sql, args).fetchone() for sql, args in jobs)
    except sqlite3.Error:
        out.clear()
    finally:
        helper.close()


def _rows(
    connection: sqlite3.Connection, path: str | None, jobs: list[Job], parallel: bool
) -> list[Any]:
    """The one row each of ``jobs`` returns, in the caller's read transaction's state. For a
    store file and ``parallel``, every other job runs on a second
    connection, in a thread of its own, when it sees the same state (the same mark): SQLite
    computes the aggregates on both cores. (A thread and a connection cost about a chunk's
    read: a store of one chunk is read on one.)"""
    found: list[Any] = [None] * len(jobs)
    helped: list[object] = []
    thread = None
    if path not in (None, "", ":memory:") and parallel:
        import threading

        args = (path, _mark(connection), jobs[1::2], helped)
        thread = threading.Thread(target=_helper, args=args, daemon=True)
        thread.start()
    for i in range(0, len(jobs), 2 if thread else 1):
        found[i] = connection.execute(*jobs[i]).fetchone()
    if thread is not None:
        thread.join()
        if len(helped) == len(jobs[1::2]):
            found[1::2] = helped
        else:
            for i in range(1, len(jobs), 2):
                found[i] = connection.execute(*jobs[i]).fetchone()
    return found


def _every_memory(
    connection: sqlite3.Connection, target: str, path: str | None = None
) -> MemoryColumns:
    encoding = connection.execute("PRAGMA encoding").fetchone()[0]
    if encoding != "UTF-8":  # group_concat would transcode the vectors' bytes as text
        rowids = [int(r[0]) for r in connection.execute("SELECT rowid FROM memories")]
        return memory_columns(connection, target, rowids)
    found = MemoryColumns()
    spans = list(rowid_spans(connection, "memories", "rowid"))
    sizes: list[Job] = [
        (
            f"SELECT group_concat(id), CAST(group_concat(sz, '') AS BLOB) FROM {table}_docsize "
            "WHERE id BETWEEN ? AND ?",
            span,
        )
        for table in ("memories_fts", "memories_cjk")
        for span in spans
    ]
    jobs: list[Job] = [(_COLUMNS_SQL, span) for span in spans] + sizes
    rows = _rows(connection, path, jobs, parallel=len(spans) > 1)
    for span, (rowids, blob, scaled, bad, odd) in zip(spans, rows, strict=False):
        if rowids is None:
            continue
        if bad:
            where = f"rowid BETWEEN ? AND ? AND ({_BAD_VECTOR})"
            raise _damaged(connection, target, where, span, "embedding")
        read = integers(rowids)
        breach = unit_breach(connection, target, read, blob, VECTOR_BYTES)
        if breach is not None:
            raise breach
        found.rowids.extend(read)
        found.vectors.append(blob)
        found.importances.extend(_importances(connection, target, span, scaled, odd))
    for identifier, ids in connection.execute(_SCOPES_SQL):
        if not isinstance(identifier, str):
            raise _damaged(connection, target, "typeof(identifier) != 'text'", (), "identifier")
        found.scopes[identifier] = integers(ids)
    words, grams = rows[len(spans) : 2 * len(spans)], rows[2 * len(spans) :]
    found.words = _token_counts(words, found.rowids, 0.0)
    found.grams = _token_counts(grams, found.rowids, -1.0)
    return found


def memory_columns(
    connection: sqlite3.Connection,
    target: str,
    rowids: Collection[int] | None = None,
    *,
    after: int | None = None,
    path: str | None = None,
) -> MemoryColumns:
    """The columns of every memory (neither ``rowids`` nor ``after`` given), or of those of
    ``rowids`` that exist and of every one with a rowid past ``after``, in ascending rowid
    order; the second form also gives their facts (``MemoryColumns.facts``). ``path``, the
    store's file, lets a read of every memory use a second connection (``_rows``).

    Raises:
        StoreError: a memory's identifier, importance or vector is not of the store's kind,
            or its vector is not finite and of unit length (the message names the first one).
    """
    if rowids is None and after is None:
        return _every_memory(connection, target, path)
    return _some_memories(connection, target, rowids or (), after)


#: (is the row sound, the SQL test of a damaged one, the column) of a delta's row.
_ROW_CHECKS: tuple[tuple[Any, str, str], ...] = (
    (lambda r: isinstance(r[1], str), "typeof(identifier) != 'text'", "identifier"),
    (lambda r: isinstance(r[2], float) and 0.0 <= r[2] <= 1.0, _BAD_IMPORTANCE, "importance"),
    (lambda r: isinstance(r[3], bytes) and len(r[3]) == VECTOR_BYTES, _BAD_VECTOR, "embedding"),
)


def vectors_upto(
    connection: sqlite3.Connection, last: int, *, rowids: bool = True
) -> tuple[array[int] | None, list[bytes]]:
    """The rowids of the memories up to rowid ``last``, ascending (``None`` when not asked
    for: reading them costs twice what the vectors do), and their hash-v1 vectors in the same
    order (blobs of whole vectors), as they are: for the rows a search index's image vouches
    for (``hotmem.retrieval.image``), whose values it checked when it read them."""
    found: array[int] = array("q")
    blobs: list[bytes] = []
    ids = "group_concat(rowid)" if rowids else "NULL"
    sql = (
        f"SELECT {ids}, CAST(group_concat(embedding, '') AS BLOB) FROM memories "
        "WHERE rowid BETWEEN ? AND ?"
    )
    for start, stop in rowid_spans(connection, "memories", "rowid"):
        if start > last:
            break
        text, blob = connection.execute(sql, (start, min(stop, last))).fetchone()
        if text is not None:
            found.extend(integers(text))
        if blob is not None:
            blobs.append(blob)
    return (found if rowids else None), blobs


def _some_memories(
    connection: sqlite3.Connection, target: str, rowids: Collection[int], after: int | None
) -> MemoryColumns:
    chosen = (json.dumps(sorted(rowids)), after if after is not None else 2**63 - 1)
    select = "SELECT rowid, identifier, importance, embedding, fact FROM memories WHERE "
    # Two statements: SQLite reads "rowid IN (...) OR rowid > ?" as a scan of every row.
    read = {
        int(row[0]): row
        for where, args in ((f"rowid {_IN}", chosen[:1]), ("rowid > ?", chosen[1:]))
        for row in connection.execute(select + where, args)
    }
    rows = [read[rowid] for rowid in sorted(read)]
    for ok, test, column in _ROW_CHECKS:
        if not all(map(ok, rows)):
            where = f"(rowid {_IN} OR rowid > ?) AND ({test})"
            raise _damaged(connection, target, where, chosen, column)
    found = MemoryColumns(facts=[str(r[4]) for r in rows])
    found.rowids.extend(r[0] for r in rows)
    for row in rows:
        found.scopes.setdefault(row[1], array("q")).append(row[0])
    found.importances.extend(r[2] for r in rows)
    found.vectors = [b"".join(r[3] for r in rows)]
    breach = unit_breach(connection, target, found.rowids, found.vectors[0], VECTOR_BYTES)
    if breach is not None:
        raise breach
    ids = (json.dumps(list(found.rowids)),)
    sizes = "SELECT group_concat(id), CAST(group_concat(sz, '') AS BLOB) FROM {}_docsize WHERE id "
    words = connection.execute(sizes.format("memories_fts") + _IN, ids).fetchone()
    grams = connection.execute(sizes.format("memories_cjk") + _IN, ids).fetchone()
    found.words = _token_counts([words], found.rowids, 0.0)
    found.grams = _token_counts([grams], found.rowids, -1.0)
    return found
