"""An in-memory copy of a store's vectors, for exhaustive cosine scoring.

Stored vectors and query vectors are unit vectors (L2-normalised, then rounded to float32), so
the cosine is computed as ``1 - |a - q|² / 2`` from the Euclidean distance. For exact unit
vectors this is the cosine; float32 rounding leaves the norms within 1e-7 of 1, so it differs
from the textbook cosine of the stored values by less than 1e-6, and the same vectors always
give bit-identical values. A zero vector (text without letters or numbers) has cosine 0.

The vectors are one contiguous buffer of little-endian float32 (256 bytes a memory, ordered
by identifier so a scope is one slice). A query measures every distance in C
(``struct.iter_unpack`` and ``math.dist``) and keeps, still in C, only the positions close enough
to pass the floor; Python arithmetic runs for those candidates alone. A wide scope (at least
``_PACK_FROM`` memories and a fifth of the index) is scanned instead by ``packed_scan.py``: every
dot product at once in big-integer arithmetic, a pre-filter within a margin, with the same
exact cosines on demand; the numpy accelerator (``accelerator.py``) does the same with a matrix
product.
"""

from __future__ import annotations

import heapq
import math
import sqlite3
import struct
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import compress, repeat
from operator import itemgetter, le
from typing import Any, Literal, Protocol

from hotmem import bounds, packed_scan
from hotmem.bounds import Crowded, Finalists, Problem
from hotmem.embedding.hash_v1 import DIMENSION, VECTOR_BYTES
from hotmem.lexical import Counts
from hotmem.reads import DICTS, ReadForm

__all__ = ["CosineScan", "DamagedRowError", "Scan", "VectorIndex", "cosine"]

_FORMAT = struct.Struct(f"<{DIMENSION}f")
_ZERO_BLOB = bytes(VECTOR_BYTES)
_ZERO = (0.0,) * DIMENSION
_dist = math.dist
# Slack on the distance pre-filter, so rounding can never drop a position the exact test keeps.
_SLACK = 1e-9
# Smaller scopes are scanned in C even with numpy: the matrix product's fixed costs, and
# exact cosines computed one by one, outweigh what it saves on a few thousand vectors.
_ACCELERATE_FROM = 4096
# Without numpy, a scope of at least this many memories and a fifth of the index is scanned
# packed (``packed_scan.py``): the packed scan computes the whole index's dot products, about a
# fifth of the cost of measuring every distance (18 against 100 ms at 100,000 memories).
_PACK_FROM = 4096
_PACK_SHARE = 5
# The packed columns are built on the wide scan after this many of one state of the store:
# building costs about five scans, so a store that changes between every search never pays.
_PACK_AFTER = 1


def _cosine_from_distance(distance: float) -> float:
    return 1.0 - distance * distance / 2.0


def cosine(a: tuple[float, ...], b: tuple[float, ...]) -> float:
    """Cosine of two hash vectors as search computes it: ``1 - |a - b|² / 2``, 0 for a zero
    vector."""
    if a == _ZERO or b == _ZERO:
        return 0.0
    return _cosine_from_distance(_dist(a, b))


class DamagedRowError(ValueError):
    """A stored row holds a value the store never writes.

    Attributes:
        memory_id: the row's memory_id.
        breach: what was expected and what was found.
    """

    def __init__(self, memory_id: object, breach: str) -> None:
        super().__init__(f"memory_id={memory_id!r}: {breach}")
        self.memory_id = memory_id
        self.breach = breach


def _column_breach(column: int, value: object) -> str | None:
    if column == 1 and not isinstance(value, str):
        return f"expected memory_id as text, found {value!r}"
    if column == 2 and not isinstance(value, str):
        return f"expected identifier as text, found {value!r}"
    if column == 3 and (not isinstance(value, float) or not 0.0 <= value <= 1.0):
        return f"expected importance in [0, 1], found {value!r}"
    if column == 4 and (not isinstance(value, bytes) or len(value) != VECTOR_BYTES):
        found = f"{len(value)} bytes" if isinstance(value, bytes) else type(value).__name__
        return f"expected an embedding of {VECTOR_BYTES} bytes, found {found}"
    return None


def _sound(
    memory_ids: Sequence[Any],
    identifiers: Sequence[Any],
    importances: Sequence[Any],
    blobs: Sequence[Any],
) -> bool:
    """Whether every value is of the store's kind, checked column-wise in C (a few ms at 100k)."""
    return (
        set(map(type, memory_ids)) == {str}
        and set(map(type, identifiers)) == {str}
        and set(map(type, importances)) == {float}
        and min(importances) >= 0.0
        and max(importances) <= 1.0
        and set(map(type, blobs)) == {bytes}
        and set(map(len, blobs)) == {VECTOR_BYTES}
    )


def _first_breach(rows: list[tuple[object, ...]]) -> None:
    """Raise for the first row whose ids, importance or embedding are not the store's."""
    for row in rows:
        for column in (1, 2, 3, 4):
            breach = _column_breach(column, row[column])
            if breach is not None:
                raise DamagedRowError(row[1], breach)
    raise DamagedRowError(None, "expected rows of the store's kind")  # not reached


@dataclass(slots=True)
class VectorIndex:
    """Every memory's vector and ranking fields, ordered by (identifier, rowid).

    The memory_ids are kept so that ranking breaks ties without going back to the database.
    """

    rowids: tuple[int, ...]
    memory_ids: tuple[str, ...]
    identifiers: tuple[str, ...]
    importances: tuple[float, ...]
    vectors: bytes
    zero: frozenset[int]
    position: dict[int, int]
    #: The vectors (sharing their bytes) and importances as numpy arrays, made on the first
    #: accelerated scan (``accelerator.Arrays``).
    arrays: Any = field(default=None, repr=False)
    _top_importance: dict[tuple[int, int], float] = field(default_factory=dict, repr=False)
    #: The lexical indexes' counts in the same state of the store (``lexical.Counts``).
    lexical_counts: Counts = field(default_factory=Counts, repr=False)
    _by_rowid: array[int] | None = field(default=None, repr=False)
    #: The vectors as ``packed_scan.Packed`` columns (``None``: not built yet; ``False``: they
    #: cannot be, a component is out of range), and how many wide scans ran without them.
    packed: packed_scan.Packed | Literal[False] | None = field(default=None, repr=False)
    _wide_scans: int = field(default=0, repr=False)

    def positions_by_rowid(self) -> Sequence[int] | Mapping[int, int]:
        """rowid -> position, as :attr:`position`, but an array of 4 bytes a rowid while rowids
        are dense (at most twice as many as memories, past 65,536), made on first use: mapping
        tens of thousands of matches to positions is a random read each, and the array stays
        in the CPU's caches where the dict does not (a quarter less time at 100,000)."""
        if self._by_rowid is None:
            top = max(self.rowids, default=0)
            if top > 2 * len(self.rowids) + 65_536:
                return self.position
            found = array("i", bytes(4 * (top + 1)))
            for rowid, p in self.position.items():
                found[rowid] = p
            self._by_rowid = found
        return self._by_rowid

    @classmethod
    def load(cls, connection: sqlite3.Connection) -> VectorIndex:
        """Read every stored vector (one pass over the memories table).

        Run it inside a read transaction, with the queries that use it, so that both see one
        state of the store.

        Raises:
            DamagedRowError: a row holds a value the store never writes (the message names
                the first such row).
        """
        rows = connection.execute(
            "SELECT rowid, memory_id, identifier, importance, embedding FROM memories"
        ).fetchall()
        # Sorting here is twice as fast as ORDER BY identifier, which reads through the index.
        try:
            rows.sort(key=itemgetter(2))
        except TypeError:  # an identifier that is not text cannot be ordered with the others
            _first_breach(rows)
        # Tuples, not lists: a tuple of numbers or strings leaves the garbage collector's lists
        # after its first collection, while a list of 100,000 is walked again by every full
        # collection (13 ms at 100,000 memories, during whichever search triggers it).
        rowids, memory_ids, identifiers, importances, blobs = (
            tuple(zip(*rows, strict=True)) if rows else ((), (), (), (), ())
        )
        if rows and not _sound(memory_ids, identifiers, importances, blobs):
            _first_breach(rows)
        return cls(
            rowids=rowids,
            memory_ids=memory_ids,
            identifiers=identifiers,
            importances=importances,
            vectors=b"".join(blobs),
            zero=frozenset(compress(range(len(blobs)), map(_ZERO_BLOB.__eq__, blobs))),
            position={rowid: i for i, rowid in enumerate(rowids)},
        )

    def __len__(self) -> int:
        return len(self.rowids)

    def scope(self, identifier: str | None) -> range:
        """Positions of the memories in ``identifier`` (every memory when ``None``)."""
        if identifier is None:
            return range(len(self.rowids))
        return range(
            bisect_left(self.identifiers, identifier), bisect_right(self.identifiers, identifier)
        )

    def top_importance(self, positions: range) -> float:
        """The largest importance of ``positions`` (0.0 when empty), kept for the next query."""
        key = (positions.start, positions.stop)
        found = self._top_importance.get(key)
        if found is None:
            found = max(self.importances[positions.start : positions.stop], default=0.0)
            self._top_importance[key] = found
        return found

    def _packed(self) -> packed_scan.Packed | None:
        """The packed columns, built on the wide scan after ``_PACK_AFTER`` of this index."""
        if self.packed is None:
            if self._wide_scans < _PACK_AFTER:
                self._wide_scans += 1
                return None
            self.packed = packed_scan.pack(self.vectors) or False
        return self.packed or None

    def scan(
        self, query: tuple[float, ...], positions: range, *, accelerated: bool = False
    ) -> CosineScan:
        """The cosines from ``query`` to every vector in ``positions``: distances measured in C;
        for a wide scope, a packed pre-filter (``packed_scan.py``) or, ``accelerated``, a numpy
        one (``accelerator.py``), with exact cosines on demand (the same values)."""
        top = self.top_importance(positions)
        if query == _ZERO:
            return Scan(positions.start, len(positions), None, self.zero, self.importances, top)
        if accelerated and len(positions) >= _ACCELERATE_FROM:
            from hotmem import accelerator  # numpy loads on first use

            if self.arrays is None:
                self.arrays = accelerator.arrays_of(self.vectors, self.importances)
            return accelerator.scan(self.vectors, self.arrays, query, positions, self.zero)
        if len(positions) >= _PACK_FROM and _PACK_SHARE * len(positions) >= len(self.rowids):
            packed = self._packed()
            if packed is not None:
                return packed_scan.scan(
                    packed, self.vectors, query, positions, self.zero, self.importances, top
                )
        window = memoryview(self.vectors)[
            positions.start * VECTOR_BYTES : positions.stop * VECTOR_BYTES
        ]
        distances = list(map(_dist, _FORMAT.iter_unpack(window), repeat(query)))
        return Scan(positions.start, len(positions), distances, self.zero, self.importances, top)


class CosineScan(Protocol):
    """The cosines from one query to the vectors of a scope (``Scan``, ``PackedScan``,
    ``MatrixScan``).

    ``cosine`` and ``at_least`` give exact cosines, the values search scores with.
    ``approximations`` and the two bound queries may use cosines within ``margin`` of the exact
    ones (0 for the distance scan, ``Scan``): ``topk.py`` only bounds with them. A *base* is
    ``w_vector * cosine + w_importance * importance``, the part of a fused score that is not
    lexical.
    """

    @property
    def margin(self) -> float:
        """How far an approximation may be from the exact cosine."""
        ...

    @property
    def reads(self) -> ReadForm:
        """The form :meth:`finalists` takes a query's read shares and members in
        (``reads.py``)."""
        ...

    def cosine(self, position: int) -> float:
        """The exact cosine of the vector at ``position`` (inside the scope)."""
        ...

    def cosines(self, positions: Sequence[int]) -> list[float]:
        """The exact cosines of ``positions``, in order (those of ``cosine``, bit for bit)."""
        ...

    def approximations(self, positions: Sequence[int]) -> list[float]:
        """The cosines of ``positions``, each within ``margin`` of the exact one."""
        ...

    def at_least(self, floor: float) -> dict[int, float]:
        """Positions whose exact cosine is ``>= floor``, with their cosine."""
        ...

    def top_bases(
        self, floor: float, weights: tuple[float, float], exclude: Collection[int], k: int
    ) -> list[float]:
        """Lower bounds of the ``k`` largest bases (``weights`` = (w_vector, w_importance)) of
        positions surely at ``cosine >= floor``, ``exclude`` left out; fewer when fewer are."""
        ...

    def reaching(self, threshold: float, weights: tuple[float, float]) -> list[tuple[int, float]]:
        """Every position whose base may reach ``threshold`` (a superset: upper bounds are
        compared), with its approximate cosine; ``weights[0]`` must be positive."""
        ...

    def finalists(self, problem: Problem) -> Finalists | Crowded | Literal["loose"]:
        """``bounds.finalists`` of ``problem`` over this scan."""
        ...


@dataclass(frozen=True, slots=True)
class Scan:
    """The distances from one query to every vector of a scope, measured in C: exact cosines
    for every position (``margin`` 0)."""

    start: int
    size: int
    distances: list[float] | None  # None for a zero query vector: every cosine is 0
    zero: frozenset[int]
    importances: Sequence[float]  # the index's, by position
    top_importance: float  # the scope's largest
    margin: float = 0.0

    def approximations(self, positions: Sequence[int]) -> list[float]:
        """The exact cosines (this scan has nothing less exact)."""
        return self.cosines(positions)

    def cosines(self, positions: Sequence[int]) -> list[float]:
        """The exact cosines of ``positions``, in order (the values of :meth:`cosine`, without
        a method call each: the bounds ask for tens of thousands)."""
        distances, start, zero = self.distances, self.start, self.zero
        if distances is None:
            return [0.0] * len(positions)
        found = [
            1.0 - d * d / 2.0 for d in map(distances.__getitem__, [p - start for p in positions])
        ]
        if zero:
            for i, p in enumerate(positions):
                if p in zero:
                    found[i] = 0.0
        return found

    def top_bases(
        self, floor: float, weights: tuple[float, float], exclude: Collection[int], k: int
    ) -> list[float]:
        """The ``k`` largest bases of positions at ``cosine >= floor`` outside ``exclude``.

        The positions within the floor's distance are sorted by distance in C, then weighed
        nearest first until no farther one can beat the ``k``-th base found, so a floor that
        a fifth of the store passes costs a sort, not a Python loop over a fifth of the store.
        """
        wv, wi = weights
        importances, start, distances = self.importances, self.start, self.distances
        if distances is None or floor <= 0.0:
            hits = self.at_least(floor).items()
            bases = (wv * c + wi * importances[p] for p, c in hits if p not in exclude)
            return heapq.nlargest(k, bases)
        limit = math.sqrt(2.0 * (1.0 - floor)) + _SLACK
        near = list(compress(range(len(distances)), map(le, distances, repeat(limit))))
        near.sort(key=distances.__getitem__)
        top_importance = self.top_importance
        found: list[float] = []  # a min-heap of the k largest bases so far
        for offset in near:
            value = _cosine_from_distance(distances[offset])
            if len(found) == k and wv * value + wi * top_importance < found[0]:
                break  # every farther position has a smaller cosine
            p = start + offset
            if value < floor or p in self.zero or p in exclude:
                continue
            base = wv * value + wi * importances[p]
            if len(found) < k:
                heapq.heappush(found, base)
            elif base > found[0]:
                heapq.heapreplace(found, base)
        return sorted(found, reverse=True)

    @property
    def reads(self) -> ReadForm:
        """Dicts and frozensets: the bounds pass looks memories up one by one."""
        return DICTS

    def finalists(self, problem: Problem) -> Finalists | Crowded | Literal["loose"]:
        """``bounds.finalists`` of ``problem``, one memory at a time."""
        return bounds.finalists(problem, self, self.importances, self.top_importance)

    def reaching(self, threshold: float, weights: tuple[float, float]) -> list[tuple[int, float]]:
        """Every position whose base reaches ``threshold``, with its cosine."""
        wv, wi = weights
        importances = self.importances
        weakest = (
            threshold - wi * self.top_importance
        ) / wv  # no position of a smaller cosine can reach it
        if weakest > 1.0:
            return []
        hits = self.at_least(max(weakest, -1.0))
        return [(p, c) for p, c in hits.items() if wv * c + wi * importances[p] >= threshold]

    def cosine(self, position: int) -> float:
        """Cosine between the query and the vector at ``position`` (inside the scope)."""
        if self.distances is None or position in self.zero:
            return 0.0
        return _cosine_from_distance(self.distances[position - self.start])

    def at_least(self, floor: float) -> dict[int, float]:
        """Positions whose cosine is ``>= floor``, with their cosine."""
        distances, start = self.distances, self.start
        if distances is None or floor <= 0.0:
            found = {start + i: self.cosine(start + i) for i in range(self.size)}
            return {p: value for p, value in found.items() if value >= floor}
        # cosine >= floor  <=>  distance <= sqrt(2 (1 - floor)); filtered in C, then exact.
        limit = math.sqrt(2.0 * (1.0 - floor)) + _SLACK
        found = {}
        for offset in compress(range(len(distances)), map(le, distances, repeat(limit))):
            value = _cosine_from_distance(distances[offset])
            if value >= floor and start + offset not in self.zero:
                found[start + offset] = value
        return found
