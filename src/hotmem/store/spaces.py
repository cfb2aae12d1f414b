"""Vector spaces: which spaces a store keeps, and the vectors of each, as rows of SQLite.

A store holds one or more named vector spaces (``docs/semantic.md``). ``hotmem-hash-v1`` is
always one: its vectors are ``memories.embedding``. Every other space has its vectors in
``space_vectors`` (one row per space and memory, keyed by the memory's rowid). ``vector_spaces``
records each space, hash-v1 included: its model id, the sha256 digest of what defines its
vectors, their dimension and dtype. A space's name is its model id.

A memory without a row in a space is *not yet indexed* there: an add that a process was
killed in never leaves one (an add writes every space in its transaction), but an interrupted
reindex does, and the next reindex fills the gap.

These functions run inside the caller's transaction; they read and write rows only (the
snapshot package code uses them too). ``VectorSpace`` is public (``hotmem.VectorSpace``).
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable, Iterator

from hotmem.embedding.hash_v1 import DIMENSION, DTYPE, HASH_DIGEST, MODEL_NAME, embed_bytes
from hotmem.embedding.vectors import first_not_unit, vector_breach
from hotmem.errors import StoreError, ValidationError
from hotmem.fields import shown
from hotmem.records import record

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (hotmem.records)
if TYPE_CHECKING:
    from hotmem.embedding.registry import Embedder

__all__ = [
    "HASH_SPACE",
    "REINDEX_BATCH",
    "SPACE_NAME",
    "VectorSpace",
    "delete_space",
    "hash_problems",
    "insert_packed",
    "insert_vectors",
    "problems",
    "read_spaces",
    "space_of",
    "space_vectors",
    "unit_problems",
    "vector_count",
    "write_space",
]


#: What a space's name (its model id) may be: lower-case letters, digits, ``.``, ``_`` and
#: ``-``, starting with a letter or digit, at most 64 characters. A package names its
#: members after it, and a profile names it: never a path (``../../etc/passwd``).
SPACE_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,63}")


@record
class VectorSpace:
    """One vector space of a store.

    Attributes:
        name: the space's name, which is its model id (``hotmem.EMBEDDERS``).
        model_id: the embedder that makes its vectors.
        digest: sha256 (hex) of what defines the vectors (``hotmem.embedding.registry``).
        dimension: values a vector.
        dtype: how a value is stored (``"float32-le"``).
    """

    name: str
    model_id: str
    digest: str
    dimension: int
    dtype: str

    @property
    def vector_bytes(self) -> int:
        """Bytes a stored vector."""
        return self.dimension * 4

    def to_dict(self) -> dict[str, object]:
        """The space as JSON-ready data."""
        return {
            "name": self.name,
            "model_id": self.model_id,
            "digest": self.digest,
            "dimension": self.dimension,
            "dtype": self.dtype,
        }


#: Memories embedded and written a transaction by a reindex (about 3 s of the semantic model on
#: one core: a killed reindex loses at most that much work).
REINDEX_BATCH = 256

#: ``hotmem-hash-v1``, the space of ``memories.embedding``.
HASH_SPACE = VectorSpace(MODEL_NAME, MODEL_NAME, HASH_DIGEST, DIMENSION, DTYPE)


def space_of(embedder: Embedder) -> VectorSpace:
    """The space an embedder's vectors belong to (its name is the model id)."""
    return VectorSpace(
        embedder.model_id, embedder.model_id, embedder.digest, embedder.dimension, embedder.dtype
    )


def read_spaces(connection: sqlite3.Connection) -> tuple[VectorSpace, ...]:
    """Every space of the store: hotmem-hash-v1 first, then by name.

    Raises:
        StoreError: a row is not of the store's kind (the message names it).
    """
    spaces = []
    for row in connection.execute(
        "SELECT name, model_id, digest, dimension, dtype FROM vector_spaces ORDER BY name"
    ):
        name, model_id, digest, dimension, dtype = row
        if not (
            all(isinstance(value, str) and value for value in (name, model_id, digest, dtype))
            and isinstance(dimension, int)
            and dimension > 0
        ):
            raise StoreError(
                f"vector space row {row!r} is damaged: expected text name, model_id, digest, "
                "dtype and a positive integer dimension"
            )
        spaces.append(VectorSpace(name, model_id, digest, dimension, dtype))
    spaces.sort(key=lambda space: (space.name != MODEL_NAME, space.name))
    return tuple(spaces)


def write_space(connection: sqlite3.Connection, space: VectorSpace) -> None:
    """Record ``space`` (replacing the row of the same name; its vectors are kept)."""
    connection.execute(
        "INSERT OR REPLACE INTO vector_spaces (name, model_id, digest, dimension, dtype) "
        "VALUES (?, ?, ?, ?, ?)",
        (space.name, space.model_id, space.digest, space.dimension, space.dtype),
    )


def delete_space(connection: sqlite3.Connection, name: str) -> None:
    """Remove the space ``name`` and its vectors.

    Raises:
        ValidationError: ``name`` is hotmem-hash-v1, which every store keeps.
    """
    if name == MODEL_NAME:
        raise ValidationError(f"the vector space {MODEL_NAME!r} cannot be dropped")
    connection.execute("DELETE FROM space_vectors WHERE space = ?", (name,))
    connection.execute("DELETE FROM vector_spaces WHERE name = ?", (name,))


def space_vectors(connection: sqlite3.Connection, name: str) -> Iterator[tuple[int, bytes]]:
    """``(memory_rowid, vector)`` of every vector of the space ``name``, in rowid order
    (``memories.embedding`` for hotmem-hash-v1)."""
    if name == MODEL_NAME:
        rows = connection.execute("SELECT rowid, embedding FROM memories ORDER BY rowid")
    else:
        rows = connection.execute(
            "SELECT memory_rowid, vector FROM space_vectors WHERE space = ? ORDER BY memory_rowid",
            (name,),
        )
    for rowid, vector in rows:
        yield int(rowid), vector


def insert_vectors(
    connection: sqlite3.Connection, name: str, rows: Iterable[tuple[int, bytes]]
) -> None:
    """Write ``(memory_rowid, vector)`` rows of the space ``name`` (replacing existing ones).

    Raises:
        ValidationError: ``name`` is hotmem-hash-v1 (its vectors live in ``memories``).
    """
    if name == MODEL_NAME:
        raise ValidationError(f"the vectors of {MODEL_NAME!r} are written with their memories")
    connection.executemany(
        "INSERT OR REPLACE INTO space_vectors (space, memory_rowid, vector) VALUES (?, ?, ?)",
        ((name, rowid, vector) for rowid, vector in rows),
    )


# Row i of the batch (0-based) is rowid first + i, its vector the i-th run of width bytes of
# one packed blob: SQLite splits the blob (substr counts bytes in a blob), so no Python object
# is made a vector. Measured inserting 100,000 vectors of 1,536 bytes: 190k rows/s, against
# 115k for executemany over (space, rowid, vector) tuples. sqlite3 copies a bound blob, so a
# statement takes at most _PACKED_BATCH vectors (1.5 MB of 384 float32), not a whole chunk.
_PACKED_BATCH = 1024
_INSERT_PACKED = (
    "WITH RECURSIVE batch(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM batch WHERE i + 1 < ?) "
    "INSERT OR REPLACE INTO space_vectors (space, memory_rowid, vector) "
    "SELECT ?, ? + i, substr(?, i * ? + 1, ?) FROM batch"
)


def insert_packed(
    connection: sqlite3.Connection, name: str, first_rowid: int, packed: bytes, width: int
) -> None:
    """Write the vectors of the space ``name`` for the rowids ``first_rowid``, ``first_rowid +
    1``, ..., one every ``width`` bytes of ``packed`` (replacing existing ones), in one statement.

    Raises:
        ValidationError: ``name`` is hotmem-hash-v1, or ``packed`` is not a whole number of
            vectors of ``width`` bytes.
    """
    if name == MODEL_NAME:
        raise ValidationError(f"the vectors of {MODEL_NAME!r} are written with their memories")
    if width < 1 or len(packed) % width:
        raise ValidationError(
            f"expected whole vectors of {width} bytes, found {len(packed)} bytes "
            f"for the space {name!r}"
        )
    view = memoryview(packed)
    step = _PACKED_BATCH * width
    for start in range(0, len(packed), step):
        batch = view[start : start + step]
        rowid = first_rowid + start // width
        connection.execute(_INSERT_PACKED, (len(batch) // width, name, rowid, batch, width, width))


def vector_count(connection: sqlite3.Connection, name: str) -> int:
    """How many memories have a vector in the space ``name``."""
    if name == MODEL_NAME:
        return int(connection.execute("SELECT count(*) FROM memories").fetchone()[0])
    sql = "SELECT count(*) FROM space_vectors WHERE space = ?"
    return int(connection.execute(sql, (name,)).fetchone()[0])


def problems(connection: sqlite3.Connection) -> tuple[str, ...]:
    """What is wrong with the stored vectors of the spaces: vectors of no recorded space, of
    no memory, or of the wrong size (a memory without a vector is not yet indexed: no problem).
    """
    found = []
    checks = (
        (
            "SELECT space, count(*) FROM space_vectors WHERE space NOT IN "
            "(SELECT name FROM vector_spaces) GROUP BY space ORDER BY space",
            "vector space {0!r}: {1} vectors of a space the store does not record",
        ),
        (
            "SELECT space, count(*) FROM space_vectors WHERE memory_rowid NOT IN "
            "(SELECT rowid FROM memories) GROUP BY space ORDER BY space",
            "vector space {0!r}: {1} vectors of no memory",
        ),
        (
            "SELECT v.space, count(*) FROM space_vectors AS v JOIN vector_spaces AS s "
            "ON s.name = v.space WHERE typeof(v.vector) != 'blob' OR "
            "length(v.vector) != 4 * s.dimension GROUP BY v.space ORDER BY v.space",
            "vector space {0!r}: {1} vectors not of its dimension",
        ),
    )
    for sql, message in checks:
        found += [message.format(*row) for row in connection.execute(sql)]
    return tuple(found)


_UNIT_BATCH = 4096
_SPACE_ROWS = (
    "SELECT m.memory_id, v.vector FROM space_vectors AS v JOIN memories AS m "
    "ON m.rowid = v.memory_rowid WHERE v.space = ? AND typeof(v.vector) = 'blob' "
    "AND length(v.vector) = ? ORDER BY v.memory_rowid"
)
_HASH_ROWS = (
    "SELECT memory_id, embedding FROM memories WHERE typeof(embedding) = 'blob' "
    "AND length(embedding) = ? ORDER BY rowid"
)


def hash_problems(connection: sqlite3.Connection) -> tuple[str, ...]:
    """One line for each memory whose ``hotmem-hash-v1`` vector, finite and of unit length, is
    not its fact's embedding (recomputed: about 20 µs a memory). Such a vector was written
    behind the store's back (a unit vector of another text ranks its memory for that text),
    and a package of the store would not hydrate (hydration recomputes these vectors)."""
    found = []
    cursor = connection.execute(
        "SELECT memory_id, fact, embedding FROM memories WHERE typeof(fact) = 'text' AND "
        "typeof(embedding) = 'blob' AND length(embedding) = ? ORDER BY rowid",
        (4 * DIMENSION,),
    )
    while batch := cursor.fetchmany(_UNIT_BATCH):
        for memory_id, fact, vector in batch:
            if vector != embed_bytes(fact) and first_not_unit(vector, 4 * DIMENSION) is None:
                found.append(
                    f"vector space {MODEL_NAME!r}: memory_id={shown(memory_id)} has a vector "
                    "that is not its fact's embedding"
                )
    return tuple(found)


def unit_problems(connection: sqlite3.Connection) -> tuple[str, ...]:
    """One line for each memory whose vector in a space (``hotmem-hash-v1`` included) is not
    finite and of unit length (``hotmem.embedding.vectors``), naming the memory and the space.
    A batch of vectors is checked at once; only a batch holding a bad one is looked into."""
    found = []
    for space in read_spaces(connection):
        width = 4 * space.dimension
        if space.name == MODEL_NAME:
            cursor = connection.execute(_HASH_ROWS, (width,))
        else:
            cursor = connection.execute(_SPACE_ROWS, (space.name, width))
        while batch := cursor.fetchmany(_UNIT_BATCH):
            if first_not_unit(b"".join(row[1] for row in batch), width) is None:
                continue
            found += [
                f"vector space {space.name!r}: memory_id={shown(memory_id)} has a vector not "
                f"finite and of unit length ({vector_breach(vector)})"
                for memory_id, vector in batch
                if first_not_unit(vector, width) is not None
            ]
    return tuple(found)
