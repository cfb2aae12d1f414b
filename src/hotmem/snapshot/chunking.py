"""A store's rows for a snapshot, cut into chunks: record lines, hash vectors, each further
space's vectors (``writer.py`` packs each chunk into its members).

The memories are read in ``memory_id`` order in one statement, with one join a further space;
a store without further spaces runs exactly the query it always did.

**Damage is reported, never packaged.** Each batch of rows is checked with the rules
``verify`` applies before anything of it is written: its record lines go through the
package reader's own decoder (``decoding.decode_records``), its vectors through the same
size and unit-length checks (``hotmem.embedding.vectors``). A row the encoder cannot even read
(tags that are not a JSON array of strings, an importance that is not a number) is explained
by the store's own read checks (``store.rows.memory_from_row``). Either way the snapshot
stops with a :class:`~hotmem.errors.SnapshotError` naming the memory and the field, before the
package is renamed into place.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from hotmem.embedding.hash_v1 import MODEL_NAME, VECTOR_BYTES
from hotmem.embedding.vectors import first_not_unit, vector_breach
from hotmem.errors import SnapshotError, StoreError
from hotmem.fields import shown
from hotmem.snapshot import format as fmt
from hotmem.snapshot.decoding import decode_records
from hotmem.snapshot.records import record_line
from hotmem.store import spaces as store_spaces
from hotmem.store.rows import damaged, memory_from_row

__all__ = ["Chunk", "chunks", "further_spaces", "select_sql"]

#: A chunk: its record lines, its hash-v1 vectors, each further space's vectors.
Chunk = tuple[list[str], list[bytes], list[list[bytes]]]

_SELECT = (
    "SELECT memory_id, identifier, fact, importance, tags, created_at, embedding "
    "FROM memories ORDER BY memory_id"
)
_EMBEDDING = itemgetter(6)
_FIRST_SPACE = 7  # the column of the first further space's vector
_BLOCK = 1 << 16  # bytes of record lines fed to the decoder at a time


def select_sql(space_count: int) -> str:
    """The query of the memories, in ``memory_id`` order, with one vector column a space
    (``_SELECT`` itself without spaces); the space names are bound in order."""
    if not space_count:
        return _SELECT
    columns = "".join(f", s{i}.vector" for i in range(space_count))
    joins = "".join(
        f" LEFT JOIN space_vectors AS s{i} ON s{i}.space = ? AND s{i}.memory_rowid = m.rowid"
        for i in range(space_count)
    )
    return (
        "SELECT m.memory_id, m.identifier, m.fact, m.importance, m.tags, m.created_at, "
        f"m.embedding{columns} FROM memories AS m{joins} ORDER BY m.memory_id"
    )


def further_spaces(connection: sqlite3.Connection) -> tuple[store_spaces.VectorSpace, ...]:
    """The store's spaces beyond hotmem-hash-v1, by name.

    Raises:
        SnapshotError: the store has more than the format allows, or one it cannot carry.
    """
    further = tuple(s for s in store_spaces.read_spaces(connection) if s.name != MODEL_NAME)
    if len(further) > fmt.MAX_SPACES:
        raise SnapshotError(
            f"the store has {len(further)} vector spaces beyond {MODEL_NAME!r}; the format "
            f"allows {fmt.MAX_SPACES} (drop some with store.drop_space)"
        )
    for space in further:
        if not fmt.SPACE_NAME.fullmatch(space.name) or space.model_id != space.name:
            raise SnapshotError(
                f"vector space {space.name!r} (model {space.model_id!r}) cannot be carried: a "
                f"package names a space by its model id ({fmt.SPACE_NAME.pattern})"
            )
        if space.dtype != fmt.VECTOR_DTYPE or not 0 < space.dimension <= fmt.MAX_DIMENSION:
            raise SnapshotError(
                f"vector space {space.name!r} holds {space.dimension} values of {space.dtype!r}; "
                f"a package carries 1 to {fmt.MAX_DIMENSION} values of {fmt.VECTOR_DTYPE!r}"
            )
    return further


def _refused(damage: StoreError) -> SnapshotError:
    return SnapshotError(f"cannot snapshot: {damage}; nothing was written")


def _damaged(target: str, memory_id: object, expected: str, found: str) -> SnapshotError:
    return _refused(damaged(target, memory_id, f"expected {expected}, found {found}"))


def _unit_vectors(
    target: str, batch: list[Any], column: int, space: str, width: int
) -> list[bytes]:
    """The vectors of ``batch``'s ``column``, each ``width`` bytes, finite, of unit length.

    Raises:
        SnapshotError: one is not (the message names its memory).
    """
    vectors = [row[column] for row in batch]
    for row, vector in zip(batch, vectors, strict=True):
        if not isinstance(vector, bytes) or len(vector) != width:
            found = f"{len(vector)} bytes" if isinstance(vector, bytes) else shown(vector)
            raise _damaged(target, row[0], f"its {space} vector of {width} bytes", found)
    bad = first_not_unit(b"".join(vectors), width)
    if bad is not None:
        expected = f"its {space} vector finite and of unit length"
        raise _damaged(target, batch[bad][0], expected, vector_breach(vectors[bad]))
    return vectors


def _checked_vectors(
    target: str, batch: list[Any], spaces: Sequence[store_spaces.VectorSpace]
) -> list[list[bytes]]:
    """Each space's vectors of ``batch``, in order.

    Raises:
        SnapshotError: a memory has no vector in a space (not yet indexed), one of another
            size than the space's dimension, or one not finite and of unit length.
    """
    columns: list[list[bytes]] = []
    for offset, space in enumerate(spaces):
        vectors = [row[_FIRST_SPACE + offset] for row in batch]
        width = space.vector_bytes
        for row, vector in zip(batch, vectors, strict=True):
            if not isinstance(vector, bytes) or len(vector) != width:
                found = "no vector" if vector is None else f"a vector of {len(vector)} bytes"
                raise SnapshotError(
                    f"memory_id={row[0]!r} has {found} in the space {space.name!r} (expected "
                    f"{width} bytes); build the space first: hotmem reindex --space {space.name}"
                )
        columns.append(_unit_vectors(target, batch, _FIRST_SPACE + offset, space.name, width))
    return columns


def _lines(target: str, batch: list[Any]) -> list[str]:
    """The record lines of ``batch``, checked as ``verify`` checks a package's.

    Raises:
        SnapshotError: a row cannot be encoded, or its line breaks a rule of the format.
    """
    try:
        lines = list(map(record_line, batch))
    except (ValueError, TypeError, RecursionError):
        for row in batch:
            try:
                record_line(row)
            except (ValueError, TypeError, RecursionError) as exc:
                try:
                    memory_from_row(row[:6], target)
                except StoreError as damage:
                    raise _refused(damage) from None
                raise _damaged(target, row[0], "a row the store writes", str(exc)) from None
        raise  # never: some row failed
    text = "".join(f"{line}\n" for line in lines).encode()
    # In blocks, as the reader streams a member: the decoder groups whole lines (fast path).
    blocks = (text[at : at + _BLOCK] for at in range(0, len(text), _BLOCK))
    decoded = decode_records(blocks, keep=None)
    if decoded.problems:
        line, _, expected, found = decoded.problems[0]
        raise _damaged(target, batch[line - 1][0], expected, found)
    _unit_vectors(target, batch, 6, MODEL_NAME, VECTOR_BYTES)
    return lines


def chunks(
    connection: sqlite3.Connection, spaces: Sequence[store_spaces.VectorSpace], target: str
) -> Iterator[Chunk]:
    """Record lines, hash vectors and each further space's vectors, chunk by chunk.

    A chunk ends after ``CHUNK_RECORDS`` records (fewer when a space's vectors are so wide
    that a full chunk's would pass ``MAX_MEMBER_BYTES``), or before a line that would take its
    text (lines and their newlines) past ``CHUNK_CHARS`` characters. A batch of rows that fits
    in one chunk is taken whole; only a batch that crosses the character limit goes row by row.
    ``target`` names the store in messages.

    Raises:
        SnapshotError: a memory is damaged (module docstring), or lacks a space's vector.
    """
    widest = max((space.vector_bytes for space in spaces), default=0)
    limit = min(fmt.CHUNK_RECORDS, fmt.MAX_MEMBER_BYTES // widest) if widest else fmt.CHUNK_RECORDS
    cursor = connection.execute(select_sql(len(spaces)), [space.name for space in spaces])
    filling = _Filling.empty(len(spaces))
    while batch := cursor.fetchmany(limit - len(filling.lines)):
        lines = _lines(target, batch)
        chars = sum(map(len, lines)) + len(lines)
        further = _checked_vectors(target, batch, spaces)
        if filling.chars + chars <= fmt.CHUNK_CHARS:
            filling.lines += lines
            filling.blobs += map(_EMBEDDING, batch)
            for column, vectors in zip(filling.further, further, strict=True):
                column += vectors
            filling.chars += chars
        else:
            for position, (line, row) in enumerate(zip(lines, batch, strict=True)):
                if filling.lines and filling.chars + len(line) + 1 > fmt.CHUNK_CHARS:
                    yield filling.chunk()
                    filling = _Filling.empty(len(spaces))
                filling.add(line, row[6], [vectors[position] for vectors in further])
        if len(filling.lines) == limit:
            yield filling.chunk()
            filling = _Filling.empty(len(spaces))
    if filling.lines:
        yield filling.chunk()


@dataclass(slots=True)
class _Filling:
    """The chunk being filled: its record lines, hash vectors, each further space's vectors,
    and the characters its lines take (with their newlines)."""

    lines: list[str]
    blobs: list[bytes]
    further: list[list[bytes]]
    chars: int = 0

    @classmethod
    def empty(cls, spaces: int) -> _Filling:
        return cls([], [], [[] for _ in range(spaces)])

    def add(self, line: str, blob: bytes, vectors: list[bytes]) -> None:
        """Add one record's line, hash vector and further vectors."""
        self.lines.append(line)
        self.blobs.append(blob)
        for column, vector in zip(self.further, vectors, strict=True):
            column.append(vector)
        self.chars += len(line) + 1

    def chunk(self) -> Chunk:
        return self.lines, self.blobs, self.further
