"""What one query has read of the lexical indexes, in the form its bounds pass works on.

``topk.top_k`` reads some terms whole, their share of every matching memory's raw BM25
(``bm25.term_shares``), and who matches some others (``lexical.phrase_members``), and hands
both to a bounds pass (``bounds.py``). A *form* holds them:

- :data:`DICTS`: dicts and frozensets, for the pass in Python, which looks memories up one
  by one;
- ``share_arrays.ARRAYS``: numpy arrays, for the numpy pass (``accelerator.MatrixScan``),
  which works on whole columns. At 1,000,000 memories a term in 14 % of the store has
  150,997 occurrences: SQLite walks them in 47 ms, and making its dict took 136 ms more
  (which the numpy pass then turned into arrays again), against 10 ms for the arrays made
  straight from the index's list (``benchmarks/fts_costs.py`` prints both ways).

The scan of a search chooses its form (``vectors.CosineScan.reads``). Both forms hold the same
values, computed by the same expressions and added in the same order, in the same key order,
so the bits of every share are the same in either.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Hashable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from typing import Any, Protocol

from hotmem import lexical
from hotmem.lexical import Joined

__all__ = ["DICTS", "Dicts", "Keys", "ReadForm", "ShareOf", "Shares", "add_into", "whole"]

#: Read shares: key (a position, or a rowid) -> a share of the raw BM25.
Shares = Mapping[int, float]
#: rowid -> another key (a position): an array indexed by rowid, or a dict.
Keys = Sequence[int] | Mapping[int, int]
#: One phrase's share of a memory's raw BM25, from how often it occurs in the memory and the
#: memory's token count, both as floats; numpy's form calls it with arrays of them (the same
#: expression, element by element).
ShareOf = Callable[[Any, Any], Any]


class ReadForm(Hashable, Protocol):
    """How a query holds its read shares (key -> share, in a key order both forms keep) and
    the positions of a deferred term's members."""

    @property
    def match_entries(self) -> int:
        """What reading a term whole costs a match in this form, in the doclist entries walked
        that ``bm25.py``'s costs are counted in (``benchmarks/fts_costs.py`` measures both)."""
        ...

    def shares(self, docs: Joined, lengths: Keys, keys: Keys | None, share: ShareOf) -> Shares:
        """One phrase's share of every memory it occurs in, by ``keys[rowid]`` (or rowid),
        from ``docs``, the rowid of each of its occurrences (``lengths``: token counts by
        rowid); in the order of each memory's first occurrence."""
        ...

    def scores(self, found: Shares) -> Shares:
        """``found`` in this form, in its order."""
        ...

    def added(self, earlier: Shares, later: Shares) -> Shares:
        """``earlier`` with ``later`` added (``earlier.get(key, 0.0) + later[key]``): ``later``
        itself when ``earlier`` is empty, else a new object, ``earlier``'s keys first."""
        ...

    def within(self, found: Shares, scope: range, size: int) -> Shares:
        """The position-keyed values of ``found`` in ``scope`` (``found`` itself when ``scope``
        is the whole index of ``size`` positions)."""
        ...

    def largest(self, found: Shares) -> float:
        """The largest value of ``found`` (0.0 when it is empty)."""
        ...

    def members(self, rowids: Joined, keys: Keys, scope: range, size: int) -> AbstractSet[int]:
        """The positions (``keys[rowid]``) in ``scope`` of ``rowids``, each once."""
        ...


class Dicts:
    """The standard library's form: dicts and frozensets."""

    #: 0.8 µs a match against 0.07 µs an entry walked (``fts_costs.py`` on 100,000 heavy
    #: memories, 2026-12-02); 2.20 against 0.198 µs on a machine three times slower
    #: (2026-12-03: 192.9 ms for `beko`'s 87,511 matches). Rounded down.
    match_entries = 11

    def shares(
        self, docs: Joined, lengths: Keys, keys: Keys | None, share: ShareOf
    ) -> dict[int, float]:
        """:meth:`ReadForm.shares`. A share depends on the memory's occurrences and token count
        only, and few pairs of them occur: each pair's share is computed once, and the
        memories are mapped to theirs by ``map`` and ``zip``, without a Python frame a memory
        (tens of thousands for a common term)."""
        occurrences = Counter(lexical.parsed(docs))
        rowids = list(occurrences)
        pairs = list(zip(occurrences.values(), map(lengths.__getitem__, rowids), strict=True))
        memo = {pair: share(float(pair[0]), float(pair[1])) for pair in set(pairs)}
        at = rowids if keys is None else map(keys.__getitem__, rowids)
        return dict(zip(at, map(memo.__getitem__, pairs), strict=True))

    def scores(self, found: Shares) -> Shares:
        """:meth:`ReadForm.scores`."""
        return found

    def added(self, earlier: Shares, later: Shares) -> Shares:
        """:meth:`ReadForm.added`."""
        return add_into(dict(earlier), later) if earlier else later

    def within(self, found: Shares, scope: range, size: int) -> Shares:
        """:meth:`ReadForm.within`."""
        if whole(scope, size):
            return found
        return {p: value for p, value in found.items() if scope.start <= p < scope.stop}

    def largest(self, found: Shares) -> float:
        """:meth:`ReadForm.largest`."""
        return max(found.values(), default=0.0)

    def members(self, rowids: Joined, keys: Keys, scope: range, size: int) -> frozenset[int]:
        """:meth:`ReadForm.members`."""
        positions = map(keys.__getitem__, lexical.parsed(rowids))
        if whole(scope, size):
            return frozenset(positions)
        return frozenset(p for p in positions if p in scope)


DICTS = Dicts()


def whole(scope: range, size: int) -> bool:
    """Whether ``scope`` is the whole index of ``size`` positions."""
    return scope.start == 0 and scope.stop >= size


def add_into(found: dict[int, float], part: Shares) -> dict[int, float]:
    """``found``, with each value of ``part`` added to its own (or to 0.0)."""
    get = found.get
    for key, value in part.items():
        found[key] = get(key, 0.0) + value
    return found
