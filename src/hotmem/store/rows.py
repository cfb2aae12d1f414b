"""Memories as rows of the store's ``memories`` table, written and read back with checks.

``memory_row`` is what the store inserts; ``memory_from_row`` and ``tags_from_text`` read a
row back and check every value, so that a row altered behind the store's back (by another
program, a bad restore, a tampered file) is a :class:`~hotmem.errors.StoreError` saying which
memory, what was expected and what was found, never a raw ``json`` or ``datetime`` error.

The read checks are what the store itself guarantees (types, ranges, canonical forms); the
input rules of ``fields.FIELD_RULES`` (lengths, blanks) are not re-applied, so a store written
under older, looser rules still reads.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Sequence
from datetime import datetime

from hotmem.embedding.hash_v1 import MODEL_NAME, embed_bytes, embed_many_bytes
from hotmem.embedding.vectors import first_not_unit, vector_breach
from hotmem.errors import StoreError
from hotmem.fields import canonical_timestamp_breach, format_timestamp, shown, timestamp_or_breach
from hotmem.store import lexical_index

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (hotmem.records)
if TYPE_CHECKING:
    from typing import Any

    from hotmem.models import Memory

__all__ = [
    "MEMORY_COLUMNS",
    "damaged",
    "delete_row",
    "memory_from_row",
    "memory_row",
    "memory_rows",
    "tags_from_text",
    "unit_breach",
]

#: The columns ``memory_from_row`` reads, in its order.
MEMORY_COLUMNS = "memory_id, identifier, fact, importance, tags, created_at"


def damaged(target: str, memory_id: object, breach: str) -> StoreError:
    """The error for a stored memory whose value breaks what the store guarantees."""
    return StoreError(
        f"store {target!r} holds a damaged memory, memory_id={shown(memory_id)}: {breach}"
    )


def unit_breach(
    connection: sqlite3.Connection,
    target: str,
    rowids: Sequence[int],
    blob: bytes,
    width: int,
    space: str = MODEL_NAME,
) -> StoreError | None:
    """The error naming the first memory of ``rowids`` whose vector in ``blob`` (``width``
    bytes each, in the same order) is not finite and of unit length
    (``hotmem.embedding.vectors``); ``None`` when every one is."""
    bad = first_not_unit(blob, width)
    if bad is None:
        return None
    row = connection.execute(
        "SELECT memory_id FROM memories WHERE rowid = ?", (rowids[bad],)
    ).fetchone()
    memory_id = row[0] if row is not None else f"rowid {rowids[bad]}"
    found = vector_breach(blob[bad * width : (bad + 1) * width])
    return damaged(
        target, memory_id, f"expected its {space} vector finite and of unit length, found {found}"
    )


def memory_row(
    memory: Memory, vector: bytes | None = None
) -> tuple[str, str, str, float, str, str, bytes]:
    """The row the store inserts for ``memory`` (its vector computed here unless given)."""
    return (
        memory.memory_id,
        memory.identifier,
        memory.fact,
        memory.importance,
        json.dumps(list(memory.tags), ensure_ascii=False) if memory.tags else "[]",
        format_timestamp(memory.created_at),
        embed_bytes(memory.fact) if vector is None else vector,
    )


def delete_row(connection: sqlite3.Connection, memory_id: str) -> bool:
    """Delete the memory ``memory_id`` in the caller's write transaction; whether it existed.
    The lexical indexes are looked into first (``lexical_index.probe``): a damaged one
    refuses the delete as it refuses a search, instead of taking more writes.

    Raises:
        sqlite3.DatabaseError: a lexical index is damaged (the caller's ``sqlerrors`` words it).
    """
    lexical_index.probe(connection)
    cursor = connection.execute("DELETE FROM memories WHERE memory_id = ?", (memory_id,))
    return cursor.rowcount > 0


def memory_rows(batch: Sequence[Memory]) -> list[tuple[str, str, str, float, str, str, bytes]]:
    """The rows of ``batch``, its facts embedded in one call (``embed_many_bytes``: at once
    with numpy when the process has it imported; the same bytes either way)."""
    vectors = embed_many_bytes([memory.fact for memory in batch])
    return list(map(memory_row, batch, vectors))


def tags_from_text(text: object, memory_id: object, target: str) -> tuple[str, ...]:
    """The tags stored as ``text`` (a JSON array of strings).

    Raises:
        StoreError: ``text`` is not a JSON array of strings.
    """
    if text == "[]":  # most memories: no JSON to parse
        return ()
    try:
        tags = json.loads(text) if isinstance(text, str) else None
    except (ValueError, RecursionError):
        tags = None
    if not isinstance(tags, list) or not all(isinstance(tag, str) for tag in tags):
        raise damaged(
            target, memory_id, f"expected tags as a JSON array of strings, found tags={shown(text)}"
        )
    return tuple(tags)


def _text(value: object, name: str, memory_id: object, target: str) -> str:
    if not isinstance(value, str):
        raise damaged(target, memory_id, f"expected {name} as text, found {shown(value)}")
    return value


def memory_from_row(row: sqlite3.Row | tuple[Any, ...], target: str) -> Memory:
    """The memory in ``row`` (the columns of :data:`MEMORY_COLUMNS`).

    Raises:
        StoreError: a value is not what the store writes.
    """
    from hotmem.models import Memory

    memory_id, identifier, fact, importance, tags, created_at = row
    _text(memory_id, "memory_id", memory_id, target)
    if not isinstance(importance, float) or not 0.0 <= importance <= 1.0:
        raise damaged(
            target, memory_id, f"expected importance in [0, 1], found {shown(importance)}"
        )
    breach = canonical_timestamp_breach(created_at)
    moment = timestamp_or_breach(created_at)
    if breach is not None or not isinstance(moment, datetime):
        raise damaged(target, memory_id, str(breach or moment))
    return Memory(
        memory_id=memory_id,
        identifier=_text(identifier, "identifier", memory_id, target),
        fact=_text(fact, "fact", memory_id, target),
        importance=importance,
        tags=tags_from_text(tags, memory_id, target),
        created_at=moment,
    )
