"""The standard library's fast vector scan: every dot product of a scope in 64 big-integer
multiplications, used as a pre-filter with exact cosines on demand (``vectors.CosineScan``).

Measuring the distance to 100,000 vectors with ``math.dist`` makes 6.4 million Python floats
(about 100 ms a query). Here each of the 64 dimensions is one Python integer, a *column*,
holding every vector's component in its own 32-bit *slot* as a fixed-point number:
``a = round(v * 2**13)``, stored as ``a + 2**13`` so that every slot is non-negative. A query's
components are fixed point too (``b = round(q * t)``, ``t`` chosen per query), and
``sum(b[d] * column[d])`` (64 multiplications of a big integer by a small one, and 64
additions, all in C) is an integer whose slot ``i`` is vector ``i``'s dot product with the
query, in fixed point: no slot overflows into the next, because ``t`` keeps every slot's sum
below ``2**31`` in size and a bias of ``2**31`` makes each one non-negative. The slots are then
read back with ``array``.

Those dot products are only a *pre-filter*, as in ``accelerator.py``: the bounds of
``bounds.finalists`` widen them by :attr:`PackedScan.margin`, and every cosine search scores
with is the exact one (``1 - |a - q|² / 2`` from ``math.dist``, that of ``vectors.Scan``), so
results are bit-identical to the exhaustive scan.

Why the margin holds, for a query ``q`` and a stored vector ``v`` (both float32 unit vectors,
as the store writes them; :func:`pack` refuses components outside [-1, 1]). With
``q[d] = b[d] / t + e[d]`` (``|e[d]| <= 1/2t``) and ``v[d] = a[d] / s + f[d]``
(``|f[d]| <= 1/2s``, ``s = 2**13``), ``q·v - sum(b·a) / (t s) = sum(e[d] a[d] / s) +
sum(q[d] f[d])``, at most ``(|v|₁ + 32/s) / 2t + |q|₁ / 2s`` in size, where ``|v|₁ <= 8`` for
a unit vector of 64 dimensions. The exact cosine differs from ``q·v`` by
``|2 - |q|² - |v|²| / 2 < 1e-6`` (norms within 1e-7 of 1), and the float arithmetic of the
conversion adds a relative 1e-15. :func:`margin` is their sum, plus 1e-6 to spare: 1.2e-4 times
``|q|₁`` (at most 8), about 5e-4 for a typical query (the numpy scan's is 1e-4).

Building the columns (:func:`pack`) costs about five scans (0.5 s at 100,000 memories): the
float32 bits are turned into fixed point with bitwise operations on whole columns (no Python
float is made), and ``vectors.VectorIndex`` builds them only on the second scan of one state of
the store, so a store that changes between every search never pays for it.
"""

from __future__ import annotations

import heapq
import math
import sys
from array import array
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from itertools import compress, repeat
from operator import mul, sub
from typing import Literal

from hotmem import bounds, exact
from hotmem.bounds import Crowded, Finalists, Problem
from hotmem.embedding.hash_v1 import DIMENSION, VECTOR_BYTES
from hotmem.reads import DICTS, ReadForm

__all__ = ["SCALE", "Packed", "PackedScan", "margin", "pack", "scan"]

#: The stored components' fixed-point scale, ``s``: a power of two, so the float32 bits become
#: fixed point by shifting.
SCALE = 1 << 13
_SCALE_BITS = 13
#: Each slot's sum stays within ``[-2**31, 2**31)``; the bias makes it non-negative.
_BIAS = 1 << 31
#: The query's fixed-point scale keeps ``sum(|b|) * 2s`` at most ``2**30`` (and the rounding of
#: 64 components adds at most ``64 s``): half the room a slot has.
_QUERY_ROOM = float(1 << 30)
# A 4-byte unsigned array type (``I`` on every platform CPython supports, checked here).
_UINT32 = next(code for code in "IL" if array(code).itemsize == 4)
_INT32 = next(code for code in "il" if array(code).itemsize == 4)
_ONE = (1).to_bytes(4, "little")


@dataclass(frozen=True, slots=True)
class Packed:
    """An index's vectors as 64 columns of 32-bit fixed-point slots (see the module).

    Attributes:
        columns: one integer a dimension; slot ``i`` (bits ``32i`` to ``32i + 31``) holds
            ``round(v[i][d] * SCALE) + SCALE``.
        size: how many vectors (slots a column).
        bias: ``2**31`` in every slot.
    """

    columns: tuple[int, ...]
    size: int
    bias: int

    @property
    def nbytes(self) -> int:
        """The columns' size in bytes (as many as the float32 vectors)."""
        return 4 * self.size * len(self.columns)


def pack(vectors: bytes) -> Packed | None:
    """The columns of ``vectors`` (little-endian float32, 64 a vector); ``None`` when a
    component is outside [-1, 1] or not a number (never in vectors the store wrote), so that
    the caller keeps the exact scan.

    Every step works on a whole column: for a float32 of exponent field ``e`` and mantissa
    ``N`` (the implicit bit included), ``|v| * 2**13 = N / 2**(137 - e)``, rounded half up by
    shifting ``N`` right by ``136 - e`` and then by one more with 1 added; the shift is split
    into its binary digits, each applied to the slots whose digit is set.
    """
    size = len(vectors) // VECTOR_BYTES
    # Items of 4 bytes, only sliced: their bytes stay little-endian whatever the platform's order.
    bits = array(_UINT32)
    bits.frombytes(vectors)
    ones = int.from_bytes(b"\x01\x00\x00\x00" * size, "little")
    low16 = ones * 0xFFFF
    columns = []
    for d in range(DIMENSION):
        x = int.from_bytes(bits[d::DIMENSION].tobytes(), "little")  # slot i: vector i's bits
        # |v| > 1 or not a number: the magnitude's bits exceed those of 1.0 (0x3F800000), so
        # adding 0x80000000 - 0x3F800001 sets the slot's top bit.
        if ((x & (ones * 0x7FFFFFFF)) + ones * 0x407FFFFF) & (ones << 31):
            return None
        shift = ones * 127 - ((x >> 23) & (ones * 0xFF))  # 127 - e, from 0 (|v| = 1) up
        # N >> 9 (shifting by 136 - e = 9 + shift): below 2**15, so 16 bits hold it.
        fixed = (((x & (ones * 0x7FFFFF)) | (ones << 23)) >> 9) & low16
        for k in range(4):  # shift by the low four bits of ``shift``
            chosen = ((shift >> k) & ones) * 0xFFFFFFFF
            fixed = (fixed - (fixed & chosen)) | ((fixed >> (1 << k)) & chosen & low16)
        # A shift of 16 or more leaves nothing (|v| < 2**-15, or zero and subnormals).
        vanishing = ((((shift >> 4) & (ones * 0x7)) + ones * 0x7) >> 3) & ones
        fixed -= fixed & (vanishing * 0xFFFFFFFF)
        magnitude = ((fixed + ones) >> 1) & low16  # round half up: at most SCALE
        negative = ((x >> 31) & ones) * 0xFFFFFFFF
        above, below = ones * SCALE + magnitude, ones * SCALE - magnitude
        columns.append(above - (above & negative) + (below & negative))
    return Packed(tuple(columns), size, ones << 31)


def _scales(query: Sequence[float]) -> tuple[float, float]:
    """``t`` for ``query`` (not the zero vector), and the margin it gives (module)."""
    norm = sum(map(abs, query))  # |q|₁
    t = _QUERY_ROOM / (2 * SCALE * norm)
    return t, (8.000001 + 32 / SCALE) / (2 * t) + norm / (2 * SCALE) + 2e-6


def margin(query: Sequence[float]) -> float:
    """How far a packed dot product may be from the exact cosine, for ``query`` (module)."""
    return _scales(query)[1]


@dataclass(frozen=True, slots=True)
class PackedScan:
    """Approximate cosines of a whole scope, exact on demand (``vectors.CosineScan``).

    The dot products stay integers: ``dots[i]`` is the fixed-point dot product of offset ``i``
    in scope, the float ``dots[i] * unit`` made only for the memories the bounds ask about;
    ``lanes`` holds every ``dots[i] + 2**31`` in 32 bits (bits ``32i`` to ``32i + 31``), so that
    those reaching a value are found by comparing every lane with one integer at once
    (:meth:`_offsets_from`). Making a float of every slot cost more than the 64
    multiplications.
    """

    start: int
    dots: array[int]  # signed 32-bit, by offset in scope
    lanes: int
    ones: int  # 1 in every lane
    unit: float
    margin: float
    vectors: bytes
    query: tuple[float, ...]
    zero: frozenset[int]
    importances: Sequence[float]  # the index's, by position
    top_importance: float  # the scope's largest

    def cosine(self, position: int) -> float:
        """The exact cosine between the query and the vector at ``position``."""
        return exact.cosine_at(self.vectors, self.query, self.zero, position)

    def cosines(self, positions: Sequence[int]) -> list[float]:
        """The exact cosines of ``positions``, in order."""
        cosine = self.cosine
        return [cosine(p) for p in positions]

    def _values(self, offsets: Iterable[int]) -> list[float]:
        """The packed dot products at ``offsets`` in scope, in order."""
        return list(map(mul, map(self.dots.__getitem__, offsets), repeat(self.unit)))

    def approximations(self, positions: Sequence[int]) -> list[float]:
        """The packed dot products of ``positions`` (each within ``margin``)."""
        start = self.start
        return self._values(map(sub, positions, repeat(start)) if start else positions)

    def _least_lane(self, low: float) -> int:
        """The least lane whose dot product is at least ``low`` (``2**32``: none is): the dot
        product grows with the lane, so this is where the float comparison turns true."""
        unit = self.unit
        if not low <= (_BIAS - 1) * unit:  # the largest; NaN too
            return 1 << 32
        if low <= -_BIAS * unit:
            return 0
        least = math.ceil(low / unit)  # within one or two of it
        while least * unit < low:
            least += 1
        while (least - 1) * unit >= low:
            least -= 1
        return least + _BIAS

    def _offsets_from(self, low: float) -> list[int]:
        """The offsets whose dot product is at least ``low``: every lane compared with the
        least lane reaching it at once, by integer operations on all lanes (each lane's top
        bit of ``reached`` is set where the lane is at least ``least``)."""
        size, least = len(self.dots), self._least_lane(low)
        if least == 0 or least >> 32:
            return list(range(size)) if least == 0 else []
        lanes, ones = self.lanes, self.ones
        top = ones << 31
        # Lane by lane: the top bit of (x | 2**31) - (least mod 2**31) tells whether x mod 2**31
        # is at least least mod 2**31 (no lane borrows from the next); with the top bits of x
        # and of least, whether x >= least.
        below = (lanes | top) - (least & 0x7FFFFFFF) * ones
        reached = lanes & below & top if least >> 31 else (lanes | below) & top
        return list(compress(range(size), (reached >> 31).to_bytes(4 * size, "little")[::4]))

    def at_least(self, floor: float) -> dict[int, float]:
        """Positions whose exact cosine is ``>= floor``, with their cosine."""
        return exact.at_least(
            self.cosine, self.start, self._offsets_from(floor - self.margin), floor
        )

    def top_bases(
        self, floor: float, weights: tuple[float, float], exclude: Collection[int], k: int
    ) -> list[float]:
        """Lower bounds of the ``k`` largest bases of positions surely at ``cosine >= floor``
        (their dot product at least ``floor + margin``), ``exclude`` left out: weighed
        nearest first until no farther one can beat the ``k``-th found."""
        wv, wi = weights
        start, importances, spare = self.start, self.importances, self.margin
        near = self._offsets_from(floor + spare)
        values = self._values(near)
        order = sorted(range(len(near)), key=values.__getitem__, reverse=True)
        top_importance = self.top_importance
        found: list[float] = []  # a min-heap of the k largest lower bounds so far
        for i in order:
            low = wv * (values[i] - spare)
            if len(found) == k and low + wi * top_importance < found[0]:
                break  # every later position has a smaller dot product
            p = start + near[i]
            if p in exclude:
                continue
            base = low + wi * importances[p]
            if len(found) < k:
                heapq.heappush(found, base)
            elif base > found[0]:
                heapq.heapreplace(found, base)
        return sorted(found, reverse=True)

    def reaching(self, threshold: float, weights: tuple[float, float]) -> list[tuple[int, float]]:
        """Every position whose base's upper bound reaches ``threshold``, with its dot
        product."""
        wv, wi = weights
        start, importances, spare = self.start, self.importances, self.margin
        weakest = (threshold - wi * self.top_importance) / wv - spare
        if weakest > 1.0:
            return []
        offsets = self._offsets_from(weakest)
        found = []
        for offset, value in zip(offsets, self._values(offsets), strict=True):
            if wv * (value + spare) + wi * importances[start + offset] >= threshold:
                found.append((start + offset, value))
        return found

    @property
    def reads(self) -> ReadForm:
        """Dicts and frozensets: the bounds pass looks memories up one by one."""
        return DICTS

    def finalists(self, problem: Problem) -> Finalists | Crowded | Literal["loose"]:
        """``bounds.finalists`` of ``problem``, one memory at a time."""
        return bounds.finalists(problem, self, self.importances, self.top_importance)


def scan(
    packed: Packed,
    vectors: bytes,
    query: tuple[float, ...],
    positions: range,
    zero: frozenset[int],
    importances: Sequence[float],
    top_importance: float,
) -> PackedScan:
    """The packed dot products of every vector of ``positions`` with ``query`` (not the zero
    vector): the whole index's, of which the scope's slots are read."""
    t, spare = _scales(query)
    scaled = [round(value * t) for value in query]
    total = packed.bias
    for b, column in zip(scaled, packed.columns, strict=True):
        if b:
            total += b * column
    # slot - bias = sum(b * (a + s)) = sum(b * a) + s * sum(b): taking s * sum(b) from every
    # slot leaves the dot product plus 2**31, in [0, 2**32) (the sums are linear, so it does
    # not matter that a slot crossed its bounds on the way).
    total -= SCALE * sum(scaled) * (packed.bias >> 31)
    size = len(positions)
    window = total.to_bytes(4 * packed.size, "little")[4 * positions.start : 4 * positions.stop]
    lanes, ones = int.from_bytes(window, "little"), int.from_bytes(_ONE * size, "little")
    dots = array(_INT32)  # flipping each lane's top bit makes it the signed dot product
    dots.frombytes((lanes ^ (ones << 31)).to_bytes(4 * size, "little"))
    if sys.byteorder == "big":
        dots.byteswap()
    return PackedScan(
        positions.start,
        dots,
        lanes,
        ones,
        1.0 / (SCALE * t),
        spare,
        vectors,
        query,
        zero,
        importances,
        top_importance,
    )
