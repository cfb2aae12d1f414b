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

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

from hotmem import exact
from hotmem.bounds import ABSOLUTE, RELATIVE, Crowded, Finalists, Problem
from hotmem.embedding.hash_v1 import DIMENSION
from hotmem.reads import ReadForm
from hotmem.share_arrays import ARRAYS, MemberArray, ShareArrays

__all__ = ["MARGIN", "Arrays", "MatrixScan", "arrays_of", "scan"]

MARGIN = 1e-4
Floats = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class Arrays:
    """An index's vectors as an ``n x 64`` float32 matrix sharing their bytes, and its
    importances as float64."""

    matrix: npt.NDArray[np.float32]
    importances: Floats


def arrays_of(vectors: bytes, importances: Sequence[float]) -> Arrays:
    """The arrays of an index (the matrix is a view of ``vectors``: no copy)."""
    matrix = np.frombuffer(vectors, dtype="<f4").reshape(-1, DIMENSION)
    return Arrays(matrix, np.asarray(importances, dtype=np.float64))


@dataclass(frozen=True, slots=True)
class MatrixScan:
    """Approximate cosines of a whole scope, exact on demand (``vectors.CosineScan``)."""

    start: int
    products: Floats  # the float32 cosines of the matrix product, widened
    importances: Floats  # the scope's
    vectors: bytes
    query: tuple[float, ...]
    zero: frozenset[int]
    margin: float = MARGIN
    #: Arrays made from the collections a query's bounds passes hand over, by their identity:
    #: the read shares and a deferred term's members stay the same objects from one pass to
    #: the next, and converting tens of thousands of them again was most of a pass.
    arrays: dict[int, tuple[object, npt.NDArray[Any]]] = field(
        default_factory=dict, compare=False, repr=False
    )

    @property
    def reads(self) -> ReadForm:
        """The form the bounds pass takes its reads in: arrays (``share_arrays.py``)."""
        return ARRAYS

    def _converted(self, source: Collection[int], values: bool = False) -> npt.NDArray[Any]:
        """The offsets in scope of the positions ``source`` holds (or, with ``values``, the
        values of the mapping ``source``, in the same order), made once per object: from its
        arrays when it is in the form of :attr:`reads`."""
        key = id(source) * 2 + values
        hit = self.arrays.get(key)
        if hit is not None and hit[0] is source:
            return hit[1]
        made: npt.NDArray[Any]
        if isinstance(source, ShareArrays):
            made = source.values_array if values else source.keys_array - self.start
        elif isinstance(source, MemberArray):
            made = source.positions - self.start
        elif values:
            assert isinstance(source, Mapping)
            made = np.fromiter(source.values(), dtype=np.float64, count=len(source))
        else:
            made = np.fromiter(source, dtype=np.int64, count=len(source)) - self.start
        self.arrays[key] = (source, made)
        return made

    def cosine(self, position: int) -> float:
        """The exact cosine between the query and the vector at ``position``."""
        return exact.cosine_at(self.vectors, self.query, self.zero, position)

    def cosines(self, positions: Sequence[int]) -> list[float]:
        """The exact cosines of ``positions``, in order."""
        return [self.cosine(p) for p in positions]

    def approximations(self, positions: Sequence[int]) -> list[float]:
        """The matrix product's cosines of ``positions`` (each within ``MARGIN``)."""
        offsets = np.fromiter(positions, dtype=np.int64, count=len(positions)) - self.start
        values: list[float] = self.products[offsets].tolist()
        return values

    def at_least(self, floor: float) -> dict[int, float]:
        """Positions whose exact cosine is ``>= floor``, with their cosine."""
        kept = np.flatnonzero(self.products >= floor - MARGIN)
        return exact.at_least(self.cosine, self.start, kept.tolist(), floor)

    def top_bases(
        self, floor: float, weights: tuple[float, float], exclude: Collection[int], k: int
    ) -> list[float]:
        """Lower bounds of the ``k`` largest bases of positions surely at ``cosine >= floor``
        (their approximate cosine at least ``floor + MARGIN``), ``exclude`` left out."""
        wv, wi = weights
        sure = self.products >= floor + MARGIN
        if exclude:
            offsets = self._converted(exclude)
            sure[offsets[(offsets >= 0) & (offsets < len(sure))]] = False
        bases = wv * (self.products[sure] - MARGIN) + wi * self.importances[sure]
        if len(bases) > k:
            bases = np.partition(bases, len(bases) - k)[len(bases) - k :]
        return sorted(bases.tolist(), reverse=True)

    def reaching(self, threshold: float, weights: tuple[float, float]) -> list[tuple[int, float]]:
        """Every position whose base's upper bound reaches ``threshold``, with its
        approximate cosine."""
        wv, wi = weights
        upper = wv * (self.products + MARGIN) + wi * self.importances
        offsets = np.flatnonzero(upper >= threshold)
        values = self.products[offsets].tolist()
        return list(zip((offsets + self.start).tolist(), values, strict=True))

    def finalists(self, problem: Problem) -> Finalists | Crowded | Literal["loose"]:
        """``bounds.finalists`` of ``problem``, every memory of the scope at once (with the
        threshold handed over when there is one, and without making the lists of a crowded
        pass)."""
        wv, wl, wi = problem.weights.cosine, problem.weights.bm25, problem.weights.importance
        products, importances, start = self.products, self.importances, self.start
        partial, deferred, floor, gate = (
            problem.partial,
            problem.deferred,
            problem.floor,
            problem.gate,
        )
        offsets = self._converted(partial)
        shares = self._converted(partial, values=True)
        threshold = problem.threshold
        if threshold is None:
            found = self._threshold(problem, offsets, shares)
            if found is None:
                return "loose"
            threshold = found

        bonus = np.full(len(products), deferred.unknown, dtype=np.float64)
        for ceiling, members in deferred.known:
            bonus[self._converted(members)] += ceiling
        most = bonus.copy()
        most[offsets] += shares
        in_partial = np.zeros(len(products), dtype=bool)
        in_partial[offsets] = True
        lifted = products + MARGIN
        slack = wl * (1 + RELATIVE) / problem.best_low
        upper = wv * lifted + most * slack + wi * importances + ABSOLUTE
        possible = in_partial | (bonus > 0.0 if gate is None else (bonus > 0.0) & (lifted >= gate))
        if floor is not None:
            possible |= lifted >= floor
        chosen = np.flatnonzero((upper >= threshold) & possible)
        mosts = shares + bonus[offsets]
        rich = np.flatnonzero(mosts * (1 + RELATIVE) >= problem.best_low)
        if problem.crowd is not None and max(len(chosen), len(rich)) > problem.crowd:
            return Crowded(problem, threshold)
        chosen = chosen[np.argsort(-upper[chosen], kind="stable")]
        ranked = list(zip(upper[chosen].tolist(), (chosen + start).tolist(), strict=True))
        rich = rich[np.argsort(-mosts[rich], kind="stable")]
        return Finalists(threshold, ranked, (offsets[rich] + start).tolist(), mosts[rich].tolist())

    def _threshold(
        self, problem: Problem, offsets: npt.NDArray[Any], shares: Floats
    ) -> float | None:
        """The ``limit``-th largest lower bound of the memories sure to be candidates, less
        ``ABSOLUTE`` (``None``: fewer than ``limit`` are sure)."""
        wv, wl, wi = problem.weights.cosine, problem.weights.bm25, problem.weights.importance
        floor, gate, limit = problem.floor, problem.gate, problem.limit
        low = self.products[offsets] - MARGIN
        admitted = np.ones(len(offsets), dtype=bool) if gate is None else low >= gate
        if floor is not None:
            admitted |= low >= floor
        share_low = wl * (1 - RELATIVE) / problem.best_high
        lows = (wv * low + shares * share_low + self.importances[offsets] * wi)[admitted]
        floor_lows = (
            [] if floor is None else self.top_bases(floor, (wv, wi), problem.partial, limit)
        )
        if len(lows) + len(floor_lows) < limit:
            return None
        best = np.concatenate([lows, np.asarray(floor_lows, dtype=np.float64)])
        return float(np.partition(best, len(best) - limit)[len(best) - limit]) - ABSOLUTE


def scan(
    vectors: bytes,
    arrays: Arrays,
    query: tuple[float, ...],
    positions: range,
    zero: frozenset[int],
) -> MatrixScan:
    """Score every vector of ``positions`` against ``query`` (not the zero vector) with one
    matrix product."""
    window = slice(positions.start, positions.stop)
    product = arrays.matrix[window] @ np.asarray(query, dtype=np.float32)
    return MatrixScan(
        positions.start,
        product.astype(np.float64),
        arrays.importances[window],
        vectors,
        query,
        zero,
    )
