"""The optional numpy vector scan (``pip install 'hotmem[fast]'``): the same cosines, faster.

Imported only when a store uses it (``open_store(..., accelerator=...)``), so ``import hotmem``
never loads numpy. The whole scope is scored by one float32 matrix product, which is only a
*pre-filter*: a position is kept when its approximate cosine is within ``MARGIN`` of the
threshold asked, and the kept positions get the exact cosine of ``vectors.Scan``
(``1 - |a - q|² / 2`` from ``math.dist`` in double precision). Every cosine search uses is
therefore the exact one, and results are bit-identical with and without numpy.

Why ``MARGIN`` is safe: stored and query vectors are float32 unit vectors (norms within 1e-7
of 1), so the exact value differs from their dot product by less than 1e-6, and a float32 dot
product of 64 terms whose absolute products sum to at most 1 is within 64 * 2**-24 < 4e-6 of
the real one. ``MARGIN`` is 25 times their sum.
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from hotmem.embed import DIMENSION, VECTOR_BYTES

__all__ = ["MARGIN", "MatrixScan", "matrix_of", "scan"]

MARGIN = 1e-4
_FORMAT = struct.Struct(f"<{DIMENSION}f")


def matrix_of(vectors: bytes) -> npt.NDArray[np.float32]:
    """The index's vectors as an ``n x 64`` float32 matrix, sharing their bytes (no copy)."""
    return np.frombuffer(vectors, dtype="<f4").reshape(-1, DIMENSION)


@dataclass(frozen=True, slots=True)
class MatrixScan:
    """Approximate cosines of a whole scope, exact on demand (``vectors.Scan``'s interface)."""

    start: int
    approximate: npt.NDArray[np.float32]
    vectors: bytes
    query: tuple[float, ...]
    zero: frozenset[int]

    def cosine(self, position: int) -> float:
        """The exact cosine between the query and the vector at ``position``."""
        if position in self.zero:
            return 0.0
        stored = _FORMAT.unpack_from(self.vectors, position * VECTOR_BYTES)
        distance = math.dist(stored, self.query)
        return 1.0 - distance * distance / 2.0

    def at_least(self, floor: float) -> dict[int, float]:
        """Positions whose exact cosine is ``>= floor``, with their cosine."""
        kept = np.flatnonzero(self.approximate >= floor - MARGIN)
        found = {}
        for offset in kept.tolist():
            p = self.start + offset
            value = self.cosine(p)
            if value >= floor:
                found[p] = value
        return found


def scan(
    vectors: bytes,
    matrix: npt.NDArray[np.float32],
    query: tuple[float, ...],
    positions: range,
    zero: frozenset[int],
) -> MatrixScan:
    """Score every vector of ``positions`` against ``query`` (not the zero vector) with one
    matrix product."""
    approximate = matrix[positions.start : positions.stop] @ np.asarray(query, dtype=np.float32)
    return MatrixScan(positions.start, approximate, vectors, query, zero)
