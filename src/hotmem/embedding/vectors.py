"""Checking a vector read from a package or a store: finite float32 values of unit length.

Every vector HotMem writes, ``hotmem-hash-v1``'s and a model's alike, is an L2-normalised
embedding (in double precision) rounded to float32, or the zero vector (a text without letters
or numbers). Rounding moves a unit vector's norm by less than 1e-7 (measured: at most 4.6e-8
over 100,000 hash vectors). A vector whose L2 norm differs from 1 by more than
``NORM_TOLERANCE`` (1e-5), other than the zero vector, or that holds a NaN or an infinity, was
not written by HotMem: every reader refuses it (``verify``, ``hydrate``, ``check_integrity()``
and the search index's load), so the cosine of two checked vectors lies within
``[-(1 + 1e-5)², (1 + 1e-5)²]`` and one memory's vector channel can never outweigh another's.

Values are little-endian float32, ``width`` bytes a vector. Norms are computed in double
precision by ``math.hypot``, or by numpy when the process has loaded it already (a semantic
space's search): the same verdict either way but for a norm within a few ulps of the bound.
"""

from __future__ import annotations

import math
import struct
import sys
from array import array
from itertools import starmap

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (hotmem.records)
if TYPE_CHECKING:
    from typing import Any

__all__ = [
    "NORM_TOLERANCE",
    "all_finite",
    "first_non_finite",
    "first_not_unit",
    "floats",
    "vector_breach",
]

#: How far a stored vector's L2 norm may be from 1 (the zero vector aside).
NORM_TOLERANCE = 1e-5
#: Rows widened to float64 at a time by the numpy path (2 MB of 64 values: faster than
#: widening a million rows at once, which also takes 512 MB).
_WIDENED = 4096


def floats(vectors: bytes) -> array[float]:
    """The little-endian float32 values of ``vectors``."""
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
    return all(map(math.isfinite, floats(vectors)))


def first_non_finite(vectors: bytes, width: int) -> str:
    """The first NaN or infinity of ``vectors`` and the (1-based) vector holding it."""
    values = floats(vectors)
    position = next(i for i, value in enumerate(values) if not math.isfinite(value))
    return f"{values[position]} in vector {position // (width // 4) + 1}"


def _sound(norm: float) -> bool:
    return norm == 0.0 or abs(norm - 1.0) <= NORM_TOLERANCE


def _first_unsound_numpy(vectors: bytes, dimension: int, np: Any) -> int | None:
    """``first_not_unit``'s answer by numpy: norms in double precision, a few MB widened at a
    time (faster, and no copy of the whole as float64). A NaN or an infinity makes its
    vector's norm NaN or infinite, which the test of the norm refuses."""
    rows = np.frombuffer(vectors, dtype="<f4").reshape(-1, dimension)
    with np.errstate(all="ignore"):
        for start in range(0, len(rows), _WIDENED):
            wide = rows[start : start + _WIDENED].astype(np.float64)
            norms = np.sqrt(np.einsum("ij,ij->i", wide, wide))
            bad = np.flatnonzero((norms != 0.0) & ~(np.abs(norms - 1.0) <= NORM_TOLERANCE))
            if len(bad):
                return start + int(bad[0])
    return None


def first_not_unit(vectors: bytes, width: int) -> int | None:
    """The 0-based position of the first vector of ``vectors`` (``width`` bytes each) holding
    a NaN or infinity or whose norm is neither 0 nor within ``NORM_TOLERANCE`` of 1; ``None``
    when every one is sound. (``len(vectors)`` is a multiple of ``width``: callers check the
    size first.)"""
    if not vectors:
        return None
    dimension = width // 4
    numpy = sys.modules.get("numpy")
    if numpy is not None and len(vectors) >= 64 * width:
        return _first_unsound_numpy(vectors, dimension, numpy)
    # math.hypot of a vector holding a NaN or an infinity is NaN or infinite: not sound. The
    # bounds of the norms tell when all are sound, provided none is NaN (all_finite).
    norms = list(starmap(math.hypot, struct.Struct(f"<{dimension}f").iter_unpack(vectors)))
    bounded = min(norms) >= 1.0 - NORM_TOLERANCE and max(norms) <= 1.0 + NORM_TOLERANCE
    if bounded and all_finite(vectors):
        return None
    return next((i for i, norm in enumerate(norms) if not _sound(norm)), None)


def vector_breach(vector: bytes) -> str:
    """What is wrong with one vector ``first_not_unit`` refused, as a message says it."""
    values = floats(vector)
    bad = next((value for value in values if not math.isfinite(value)), None)
    if bad is not None:
        return f"{bad} among its values"
    return f"a norm of {math.hypot(*values):.6g}"
