"""The exact cosines search scores with: the definition both engines compute.

**hotmem-hash-v1.** Stored and query vectors are unit vectors rounded to float32, so the cosine
is ``1 - d² / 2`` with ``d = math.dist(memory, query)`` in double precision; 0 for a zero
vector (a text without letters or numbers). It differs from the textbook cosine of the stored
values by less than 1e-6, and the same vectors always give the same bits.

**Another space** (``all-minilm-l6-v2``): the float64 sum of products of the stored and query
vectors, both unit vectors rounded to float32, summed by numpy along the row (its pairwise sum,
the same bits for a row alone or among others): :func:`space_cosines`, which needs numpy (as
such a space's embedder does).

**Confirmation rule.** The numpy engine scores a scope with float32 matrix-vector products (up
to ``SPLIT_VALUES`` values, ``PRODUCT_VALUES`` at a time on the caller's thread). Each product
is within ``MARGIN`` (1e-4) of the exact cosine: for unit float32 vectors of at most 1,024
values, a float32 dot product is within ``d * 2**-24`` (6.1e-5) of the real one, and the real
one within 1e-6 of either definition above. A position gets its exact cosine whenever its
product, moved by ``MARGIN``, could change what it is compared with (a floor, a gate, the
k-th score): so every value a search returns or compares is exact.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Iterable, Sequence
from itertools import chain, repeat

from hotmem.embedding.hash_v1 import DIMENSION

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (hotmem.records)
if TYPE_CHECKING:
    from typing import Any

    from hotmem.retrieval.index import SearchIndex
    from hotmem.retrieval.rows import Rows

__all__ = [
    "MARGIN",
    "MAX_DIMENSION",
    "PRODUCT_VALUES",
    "SPLIT_VALUES",
    "every_hash_cosine",
    "hash_cosines",
    "matrix",
    "product_rows",
    "products",
    "space_cosines",
]

MARGIN = 1e-4
#: A scope's products of at most ``SPLIT_VALUES`` values (rows x dimension) are taken
#: ``PRODUCT_VALUES`` values at a time, on the caller's thread. OpenBLAS splits a larger
#: product over threads (numpy's wheels: one of more than 460,800 values, over every core):
#: on an idle machine that saves at most 0.07 ms at 2^21 values (5,000 rows of 384: 0.06 ms
#: against 0.13 ms), but whenever another process keeps a core busy such a product took
#: 0.7 to 9.5 ms instead of 0.2 to 0.6 ms (docs/benchmarks.md, the evaluator on a collection
#: of real size). A larger scope is one product, where the threads save more (100,000 rows
#: of 64: 0.47 ms against 1.31 ms on one thread). Speed only: a product is within ``MARGIN``
#: of the exact cosine however its rows are grouped.
PRODUCT_VALUES = 2**18
SPLIT_VALUES = 2**21
#: The largest dimension ``MARGIN`` is derived for.
MAX_DIMENSION = 1024
_VECTOR = struct.Struct(f"<{DIMENSION}f")
_CHUNK = 1024  # rows widened to float64 at a time (3 MB for 384 values)
_UNPACKED = 1024 * _VECTOR.size  # hash-v1 vectors unpacked at a time (2 MB as floats)


def _cosines(vectors: Iterable[tuple[float, ...]], query: tuple[float, ...]) -> list[float]:
    # At most 1 by its form, whatever the vectors; the load checked them (unit length).
    return [1.0 - d * d / 2.0 for d in map(math.dist, vectors, repeat(query))]


def _zeroed(index: SearchIndex, positions: Sequence[int], values: list[float]) -> list[float]:
    """``values`` with 0.0 at the zero vectors among ``positions``."""
    zero = index.zero
    if zero:
        for i, p in enumerate(positions):
            if p in zero:
                values[i] = 0.0
    return values


def hash_cosines(
    index: SearchIndex, positions: Sequence[int], query: tuple[float, ...]
) -> list[float]:
    """The exact hash cosine of each of ``positions`` (0.0 for a zero vector or query)."""
    if not any(query):
        return [0.0] * len(positions)
    rows = index.vectors
    if len(positions) == len(rows) and (not positions or positions[-1] == len(positions) - 1):
        # the whole index, in order
        vectors: Any = chain.from_iterable(_VECTOR.iter_unpack(s) for _, s in rows.segments())
    else:
        unpack = _VECTOR.unpack_from
        vectors = (unpack(*rows.row(p)) for p in positions)
    return _zeroed(index, positions, _cosines(vectors, query))


def every_hash_cosine(
    index: SearchIndex, queries: Sequence[tuple[float, ...]]
) -> list[list[float]]:
    """``hash_cosines`` of every position with each of ``queries``: the same values, each
    vector unpacked once for all the queries (an unpacking costs about what a distance does)."""
    found: list[list[float]] = [[] for _ in queries]
    asked = [(values, query) for values, query in zip(found, queries, strict=True) if any(query)]
    for _, segment in index.vectors.segments() if asked else ():
        view = memoryview(segment)
        for start in range(0, len(view), _UNPACKED):
            vectors = list(_VECTOR.iter_unpack(view[start : start + _UNPACKED]))
            for values, query in asked:
                values += _cosines(vectors, query)
    for values, query in zip(found, queries, strict=True):
        if not any(query):
            values += [0.0] * len(index.vectors)
        for p in index.zero:
            values[p] = 0.0
    return found


def matrix(rows: Rows, positions: Any = None) -> Any:
    """The float32 rows (``rows.width`` bytes each) of ``positions`` (distinct, ascending;
    every row for ``None``) as one numpy matrix."""
    import numpy as np  # the numpy engine's, or a space's embedder's

    dimension = rows.width // 4
    parts = [np.frombuffer(s, dtype="<f4").reshape(-1, dimension) for _, s in rows.segments()]
    if not parts or (positions is not None and not len(positions)):  # no row
        return np.empty((0, dimension), dtype=np.float32)
    if positions is None or (len(positions) == len(rows) and positions[-1] == len(rows) - 1):
        return parts[0] if len(parts) == 1 else np.concatenate(parts)  # every row, in order
    starts = np.fromiter((start for start, _ in rows.segments()), dtype=np.intp, count=len(parts))
    cuts = np.searchsorted(positions, starts[1:])
    chosen = [
        part[local - start]
        for part, start, local in zip(parts, starts, np.split(positions, cuts), strict=True)
    ]
    return np.concatenate(chosen) if chosen else np.empty((0, dimension), dtype=np.float32)


def product_rows(dimension: int, rows: int) -> int:
    """How many of ``rows`` rows of ``dimension`` values one matrix-vector product takes: all
    of them above ``SPLIT_VALUES`` values, else at most ``PRODUCT_VALUES`` values, a multiple
    of 16 rows (at least 16)."""
    if rows * dimension > SPLIT_VALUES:
        return max(1, rows)
    return max(16, PRODUCT_VALUES // max(1, dimension) // 16 * 16)


def _product(block: Any, query: Any, step: int) -> Any:
    """``block @ query``, ``step`` rows a product (each row's product is its own)."""
    import numpy as np

    if len(block) <= step:
        return block @ query
    return np.concatenate([block[s : s + step] @ query for s in range(0, len(block), step)])


def products(rows: Rows, query: Any, positions: Any = None) -> Any:
    """The float32 dot products of the rows of ``positions`` (every row for ``None``) with the
    float32 ``query``, as float64: a segment at a time, or the scope's rows gathered first when
    they are a quarter of the rows or fewer (a product costs about what a gather does); up to
    ``SPLIT_VALUES`` values, ``PRODUCT_VALUES`` values at a time (:func:`product_rows`)."""
    import numpy as np

    dimension = rows.width // 4
    if positions is not None and 4 * len(positions) <= len(rows):
        step = product_rows(dimension, len(positions))
        return _product(matrix(rows, positions), query, step).astype(np.float64)
    step = product_rows(dimension, len(rows))
    parts = [
        _product(np.frombuffer(s, dtype="<f4").reshape(-1, dimension), query, step)
        for _, s in rows.segments()
    ]
    found = np.concatenate(parts) if parts else np.empty(0, dtype=np.float32)
    return (found if positions is None else found[positions]).astype(np.float64)


def space_cosines(rows: Any, query: Any) -> Any:
    """The exact cosines of ``rows`` (an ``n x d`` float32 array of unit vectors) with
    ``query`` (float64), a chunk of rows at a time (each row's sum is its own: chunking changes
    no bit)."""
    import numpy as np  # a space other than hash-v1 has numpy with its embedder

    values = np.empty(len(rows), dtype=np.float64)
    for start in range(0, len(rows), _CHUNK):
        chunk = rows[start : start + _CHUNK]
        values[start : start + len(chunk)] = (chunk.astype(np.float64) * query).sum(axis=1)
    # Checked vectors (``hotmem.embedding.vectors``) keep a cosine within 2e-5 of [-1, 1];
    # rounding takes it past 1 only for a memory equal to the query: no channel exceeds 1.
    return np.clip(values, -1.0, 1.0, out=values)
