"""Checking the vectors of a package: finite float32 values, and (on request) that they are
the embeddings of their facts.

``hotmem-hash-v1`` is computed the same way on every machine, so its vectors must match bit for
bit. A model's vectors can differ in the last bits between CPUs (their float rounding), so a
vector of a further space that is not bit for bit the recomputed one must still lie within
``MODEL_COSINE`` of it: a forged vector (another text's embedding) is far outside that.
"""

from __future__ import annotations

import math
import sys
from array import array

__all__ = ["MODEL_COSINE", "all_finite", "first_non_finite", "mismatches"]

#: The least cosine between a carried model vector and the one this HotMem computes.
MODEL_COSINE = 0.999


def _floats(vectors: bytes) -> array[float]:
    values = array("f")
    values.frombytes(vectors)
    if sys.byteorder == "big":
        values.byteswap()
    return values


def all_finite(vectors: bytes) -> bool:
    """Whether every little-endian float32 is finite, without a Python loop per value.

    A NaN or infinity has all eight exponent bits set, so its high byte is 0x7F or 0xFF. Only
    when such a byte occurs (in finite values, from magnitude 2**127 on) is each value tested.
    """
    high = vectors[3::4]
    if b"\x7f" not in high and b"\xff" not in high:
        return True
    return all(map(math.isfinite, _floats(vectors)))


def first_non_finite(vectors: bytes, width: int) -> str:
    """The first NaN or infinity of ``vectors`` and the (1-based) vector holding it."""
    values = _floats(vectors)
    position = next(i for i, value in enumerate(values) if not math.isfinite(value))
    return f"{values[position]} in vector {position // (width // 4) + 1}"


def _cosine(left: array[float], right: array[float]) -> float:
    dot = math.fsum(map(float.__mul__, left, right))
    norms = math.sqrt(math.fsum(x * x for x in left) * math.fsum(y * y for y in right))
    return dot / norms if norms else (1.0 if left == right else 0.0)


def mismatches(expected: bytes, found: bytes, width: int, *, exact: bool) -> list[int]:
    """0-based positions of the vectors of ``found`` that are not those of ``expected``.

    Both hold vectors of ``width`` bytes in the same order. With ``exact`` a vector must match
    bit for bit; otherwise within a cosine of ``MODEL_COSINE``.
    """
    if expected == found:
        return []
    count = len(expected) // width
    differing = [
        position
        for position in range(count)
        if expected[position * width : (position + 1) * width]
        != found[position * width : (position + 1) * width]
    ]
    if exact:
        return differing
    far = []
    for position in differing:
        window = slice(position * width, (position + 1) * width)
        if _cosine(_floats(expected[window]), _floats(found[window])) < MODEL_COSINE:
            far.append(position)
    return far
