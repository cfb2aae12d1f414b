"""The exact cosines the pre-filtering scans (``packed_scan.py``, ``accelerator.py``) confirm
their positions with: those of ``vectors.Scan``, bit for bit."""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Iterable

from hotmem.embedding.hash_v1 import DIMENSION, VECTOR_BYTES

__all__ = ["at_least", "cosine_at"]

_FORMAT = struct.Struct(f"<{DIMENSION}f")


def cosine_at(
    vectors: bytes, query: tuple[float, ...], zero: frozenset[int], position: int
) -> float:
    """The exact cosine between ``query`` and the vector at ``position`` of ``vectors``:
    ``1 - |a - q|² / 2`` from ``math.dist`` in double precision, 0 for a zero vector."""
    if position in zero:
        return 0.0
    distance = math.dist(_FORMAT.unpack_from(vectors, position * VECTOR_BYTES), query)
    return 1.0 - distance * distance / 2.0


def at_least(
    cosine: Callable[[int], float], start: int, offsets: Iterable[int], floor: float
) -> dict[int, float]:
    """The positions ``start + offset`` (pre-filtered ``offsets``) whose exact ``cosine`` is
    ``>= floor``, with it."""
    found = {}
    for offset in offsets:
        p = start + offset
        value = cosine(p)
        if value >= floor:
            found[p] = value
    return found
