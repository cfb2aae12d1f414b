"""BM25 as FTS5's ``bm25()`` computes it, from postings held in memory.

FTS5 (``fts5_aux.c``, ``fts5Bm25Function``) scores a memory for a query of phrases
``p1 .. pn`` as

    score = 0.0 + sum over phrases, in query order, of
            idf(p) * (f * (k1 + 1)) / (f + k1 * (1 - b + b * D / avgdl))

with ``k1 = 1.2``, ``b = 0.75``, ``f`` the phrase's occurrences in the memory, ``D`` the
memory's token count, ``avgdl`` the index's tokens a row and ``idf(p) = log((N - n + 0.5) /
(n + 0.5))``, at least 1e-6, from the index's row count ``N`` and the number of rows matching
the phrase ``n``. A phrase absent from a memory adds exactly 0.0, so it is skipped. This module
holds the same expression, operation for operation in IEEE doubles (:func:`share` takes floats
or numpy arrays alike), and what it reads: a token's postings (the memories it occurs in and
how often, :class:`Postings`) and each memory's token count (:class:`LexicalColumn`). A CI
property checks the bits against FTS5's ``bm25()`` (``tests/hotmem/retrieval/test_bm25.py``).
"""

from __future__ import annotations

import math
import sys
from array import array
from collections import Counter
from collections.abc import Iterable, Sequence

from hotmem.store.lexical_index import Table

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (hotmem.records)
if TYPE_CHECKING:
    from typing import Any

__all__ = ["K1", "B", "LexicalColumn", "Postings", "extended", "idf", "share"]

K1 = 1.2
B = 0.75


def idf(rows: int, hits: int) -> float:
    """FTS5's IDF: ``log((N - n + 0.5) / (n + 0.5))``, at least 1e-6."""
    value = math.log((rows - hits + 0.5) / (hits + 0.5))
    return value if value > 0.0 else 1e-6


def share(weight: float, avgdl: float, frequency: Any, length: Any) -> Any:
    """One phrase's addition to a memory's BM25: ``idf * (f * (k1 + 1)) / (f + k1 * (1 - b +
    b * D / avgdl))``, for floats ``f`` and ``D`` or, element by element, numpy arrays."""
    return weight * ((frequency * (K1 + 1.0)) / (frequency + K1 * (1 - B + B * length / avgdl)))


def extended(column: Any, values: Iterable[Any]) -> Any:
    """``column`` (an ``array`` or ``bytearray``) with ``values`` appended: in place, or in a
    copy while something still holds a view of its buffer (a numpy array made from it), which
    a resize would pull the memory from under."""
    try:
        column.extend(values)
    except BufferError:
        column = column[:]  # a copy, whose buffer nothing views
        column.extend(values)
    return column


class Postings:
    """One token's postings: the positions of the memories it occurs in (each once) and how
    often, appended as the index grows; deleted memories stay until the index reloads.

    Positions are 64-bit integers and frequencies doubles, so that the numpy engine reads
    both as they are (an array of numpy's index type, an array of the floats the arithmetic
    takes), without a conversion a search."""

    __slots__ = ("_deaths", "_hits", "frequencies", "positions")

    positions: array[int]
    frequencies: array[float]
    _hits: int
    _deaths: int

    def __init__(
        self,
        positions: array[int] | None = None,
        frequencies: array[float] | None = None,
        _hits: int = -1,
        _deaths: int = -1,
    ) -> None:
        self.positions = array("q") if positions is None else positions
        self.frequencies = array("d") if frequencies is None else frequencies
        self._hits = _hits
        self._deaths = _deaths

    @classmethod
    def of_occurrences(cls, positions: Sequence[int]) -> Postings:
        """The postings of a token from the position of every occurrence (a memory's
        occurrences next to each other, as an index lists them), counted by runs: with numpy
        when the process has loaded it."""
        numpy = sys.modules.get("numpy")
        if numpy is None or not positions:
            counted = Counter(positions)
            return cls(array("q", counted.keys()), array("d", map(float, counted.values())))
        at = numpy.asarray(positions, dtype=numpy.int64)
        starts = numpy.flatnonzero(numpy.concatenate(([True], at[1:] != at[:-1])))
        runs = numpy.diff(numpy.append(starts, len(at))).astype(numpy.float64)
        return cls(array("q", at[starts].tobytes()), array("d", runs.tobytes()))

    def append(self, position: int, frequency: int) -> None:
        """Add a memory where the token occurs ``frequency`` times."""
        self.positions = extended(self.positions, (position,))
        self.frequencies = extended(self.frequencies, (float(frequency),))
        self._deaths = -1  # one more hit: count again

    def hits(self, live: bytearray, deaths: int) -> int:
        """How many live memories the token occurs in (FTS5's ``n``), counted again only
        after a memory died (``deaths`` is the index's count of them)."""
        if self._deaths != deaths:
            self._hits = (
                sum(map(live.__getitem__, self.positions)) if deaths else len(self.positions)
            )
            self._deaths = deaths
        return self._hits


class LexicalColumn:
    """One lexical index's part of a search index: each memory's token count in it (as a
    double, BM25's ``D``; -1 for a memory without a row there: only facts with CJK have one in
    ``memories_cjk``), the row and token totals of the live memories, and the postings of the
    tokens asked for so far."""

    __slots__ = ("lengths", "postings", "rows", "table", "tokens")

    table: Table
    lengths: array[float]
    rows: int
    tokens: int
    postings: dict[str, Postings]

    def __init__(
        self,
        table: Table,
        lengths: array[float] | None = None,
        rows: int = 0,
        tokens: int = 0,
        postings: dict[str, Postings] | None = None,
    ) -> None:
        self.table = table
        self.lengths = array("d") if lengths is None else lengths
        self.rows = rows
        self.tokens = tokens
        self.postings = {} if postings is None else postings

    @property
    def avgdl(self) -> float:
        """Tokens a row, as FTS5 computes it (``(double) nToken / (double) nRow``)."""
        return float(self.tokens) / float(self.rows) if self.rows else 0.0

    def extend(self, lengths: array[float]) -> None:
        """Count memories appended with these token counts (-1: no row)."""
        self.lengths = extended(self.lengths, lengths)
        absent = lengths.count(-1.0)
        self.rows += len(lengths) - absent
        self.tokens += int(sum(lengths)) + absent  # integers below 2**53: exact

    def kill(self, position: int) -> None:
        """Take a memory that died out of the totals."""
        length = self.lengths[position]
        if length >= 0:
            self.rows -= 1
            self.tokens -= int(length)
