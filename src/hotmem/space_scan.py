"""The cosine scan of a vector space other than hotmem-hash-v1, with numpy (the space's extra).

A space's vectors are loaded once per state of the store into an ``n x d`` float32 matrix in
the order of the store's vector index (``vectors.VectorIndex``: by identifier, then rowid), so
a scope is a slice of rows. A query scores its whole scope with one float32 matrix product,
used only as a pre-filter and for bounds (``accelerator.MatrixScan``); the cosine search ranks
with is exact, computed for the survivors alone:

    cosine(memory, query) = sum_i float64(m_i) * float64(q_i)

a float64 sum of products (numpy's pairwise sum along the row, which gives the same bits for a
row alone or among others), of the stored and query vectors, both unit vectors rounded to
float32. Results are therefore deterministic, whatever the scope or the batch of survivors.

Why ``accelerator.MARGIN`` (1e-4) bounds the float32 product's error here too: for unit
vectors the absolute products sum to at most 1, so a float32 dot product of ``d`` terms is
within ``d * 2**-24`` of the real one, 2.3e-5 for 384 values, and the float64 sum is within
1e-13 of it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from hotmem.accelerator import MARGIN, MatrixScan
from hotmem.errors import StoreError
from hotmem.store.spaces import VectorSpace
from hotmem.vectors import VectorIndex

__all__ = ["SpaceMatrix", "SpaceScan", "exact_cosines", "load_matrix", "scan"]

Floats = npt.NDArray[np.float64]
# Rows widened to float64 at a time: 3 MB, so the products stay in cache.
_CHUNK = 1024


@dataclass(frozen=True, slots=True)
class SpaceMatrix:
    """A space's vectors by vector-index position, and the index's importances."""

    space: VectorSpace
    matrix: npt.NDArray[np.float32]
    importances: Floats


def _incomplete(path: str, space: VectorSpace, missing: int, total: int) -> StoreError:
    return StoreError(
        f"store {path!r}: the vector space {space.name!r} is not built for {missing} of "
        f"{total} memories (an interrupted reindex); complete it with "
        f"`hotmem reindex --space {space.name}`"
    )


def load_matrix(
    connection: sqlite3.Connection, space: VectorSpace, index: VectorIndex, path: str
) -> SpaceMatrix:
    """Read every vector of ``space`` into index order (run it in the index's transaction).

    Raises:
        StoreError: a memory lacks a vector in the space, or a row is damaged.
    """
    rows = connection.execute(
        "SELECT memory_rowid, vector FROM space_vectors WHERE space = ?", (space.name,)
    ).fetchall()
    size = len(index)
    if len(rows) != size:
        raise _incomplete(path, space, size - len(rows), size)
    width = space.vector_bytes
    if rows and set(map(len, (vector for _, vector in rows))) != {width}:
        rowid = next(
            r for r, vector in rows if not isinstance(vector, bytes) or len(vector) != width
        )
        raise StoreError(
            f"store {path!r} is damaged: expected vectors of {width} bytes in the space "
            f"{space.name!r}, found another value for rowid={rowid}"
        )
    try:
        positions = np.fromiter(
            (index.position[rowid] for rowid, _ in rows), dtype=np.int64, count=len(rows)
        )
    except KeyError as exc:
        raise StoreError(
            f"store {path!r} is damaged: the space {space.name!r} holds a vector of "
            f"rowid={exc.args[0]}, which is no memory"
        ) from None
    matrix = np.empty((size, space.dimension), dtype=np.float32)
    if rows:
        stored = np.frombuffer(b"".join(vector for _, vector in rows), dtype="<f4")
        matrix[positions] = stored.reshape(size, space.dimension)
    return SpaceMatrix(space, matrix, np.asarray(index.importances, dtype=np.float64))


def exact_cosines(rows: npt.NDArray[np.float32], query: Floats) -> Floats:
    """The exact cosines of ``rows`` (float32 unit vectors) with ``query`` (float64), a chunk
    of ``_CHUNK`` rows at a time (each row's sum is its own: chunking changes no bit)."""
    values: Floats = np.empty(len(rows), dtype=np.float64)
    for start in range(0, len(rows), _CHUNK):
        chunk = rows[start : start + _CHUNK]
        values[start : start + len(chunk)] = (chunk.astype(np.float64) * query).sum(axis=1)
    return values


@dataclass(frozen=True, slots=True)
class SpaceScan(MatrixScan):
    """``accelerator.MatrixScan`` over a space's matrix, with this module's exact cosine.

    Exact cosines are computed at most once a position (``known``), since the floor's hits are
    scored again by fusion.
    """

    rows: Any = None  # the matrix of the scan's scope
    query64: Any = None
    known: dict[int, float] = field(default_factory=dict)

    def _compute(self, positions: list[int]) -> None:
        offsets = np.fromiter(positions, dtype=np.int64, count=len(positions)) - self.start
        self.known.update(
            zip(positions, exact_cosines(self.rows[offsets], self.query64).tolist(), strict=True)
        )

    def cosine(self, position: int) -> float:
        """The exact cosine between the query and the vector at ``position``."""
        if position not in self.known:
            self._compute([position])
        return self.known[position]

    def cosines(self, positions: Sequence[int]) -> list[float]:
        """The exact cosines of ``positions``, in order."""
        known = self.known
        missing = [p for p in positions if p not in known]
        if missing:
            self._compute(missing)
        return [known[p] for p in positions]

    def at_least(self, floor: float) -> dict[int, float]:
        """Positions whose exact cosine is ``>= floor``, with their cosine."""
        kept = (np.flatnonzero(self.products >= floor - MARGIN) + self.start).tolist()
        values = self.cosines(kept)
        return {p: value for p, value in zip(kept, values, strict=True) if value >= floor}


def scan(space_matrix: SpaceMatrix, query: bytes, positions: range) -> SpaceScan:
    """Score every vector of ``positions`` against the packed ``query`` vector with one matrix
    product (exact cosines on demand)."""
    window = slice(positions.start, positions.stop)
    rows = space_matrix.matrix[window]
    vector = np.frombuffer(query, dtype="<f4")
    product = rows @ vector.astype(np.float32)
    return SpaceScan(
        start=positions.start,
        products=product.astype(np.float64),
        importances=space_matrix.importances[window],
        vectors=b"",
        query=(),
        zero=frozenset(),
        rows=rows,
        query64=vector.astype(np.float64),
    )
