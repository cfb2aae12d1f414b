"""A store's rows for a snapshot, cut into chunks: record lines, hash vectors, each further
space's vectors (``writer.py`` packs each chunk into its members).

The memories are read in ``memory_id`` order in one statement, with one join a further space;
a store without further spaces runs exactly the query it always did.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from hotmem.embedding.hash_v1 import MODEL_NAME
from hotmem.errors import SnapshotError
from hotmem.snapshot import format as fmt
from hotmem.snapshot.records import record_line
from hotmem.store import spaces as store_spaces

__all__ = ["Chunk", "chunks", "further_spaces", "select_sql"]

#: A chunk: its record lines, its hash-v1 vectors, each further space's vectors.
Chunk = tuple[list[str], list[bytes], list[list[bytes]]]

_SELECT = (
    "SELECT memory_id, identifier, fact, importance, tags, created_at, embedding "
    "FROM memories ORDER BY memory_id"
)
_EMBEDDING = itemgetter(6)
_FIRST_SPACE = 7  # the column of the first further space's vector


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


def _checked_vectors(
    batch: list[Any], spaces: Sequence[store_spaces.VectorSpace]
) -> list[list[bytes]]:
    """Each space's vectors of ``batch``, in order.

    Raises:
        SnapshotError: a memory has no vector in a space (not yet indexed), or one of another
            size than the space's dimension.
    """
    columns: list[list[bytes]] = []
    for offset, space in enumerate(spaces):
        vectors = [row[_FIRST_SPACE + offset] for row in batch]
        width = space.vector_bytes
        for row, vector in zip(batch, vectors, strict=True):
            if vector is None or len(vector) != width:
                found = "no vector" if vector is None else f"a vector of {len(vector)} bytes"
                raise SnapshotError(
                    f"memory_id={row[0]!r} has {found} in the space {space.name!r} (expected "
                    f"{width} bytes); build the space first: hotmem reindex --space {space.name}"
                )
        columns.append(vectors)
    return columns


def chunks(
    connection: sqlite3.Connection, spaces: Sequence[store_spaces.VectorSpace]
) -> Iterator[Chunk]:
    """Record lines, hash vectors and each further space's vectors, chunk by chunk.

    A chunk ends after ``CHUNK_RECORDS`` records (fewer when a space's vectors are so wide
    that a full chunk's would pass ``MAX_MEMBER_BYTES``), or before a line that would take its
    text (lines and their newlines) past ``CHUNK_CHARS`` characters. A batch of rows that fits
    in one chunk is taken whole; only a batch that crosses the character limit goes row by row.
    """
    widest = max((space.vector_bytes for space in spaces), default=0)
    limit = min(fmt.CHUNK_RECORDS, fmt.MAX_MEMBER_BYTES // widest) if widest else fmt.CHUNK_RECORDS
    cursor = connection.execute(select_sql(len(spaces)), [space.name for space in spaces])
    filling = _Filling.empty(len(spaces))
    while batch := cursor.fetchmany(limit - len(filling.lines)):
        lines = list(map(record_line, batch))
        chars = sum(map(len, lines)) + len(lines)
        further = _checked_vectors(batch, spaces)
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
