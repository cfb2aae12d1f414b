"""numpy's form of what a query has read (``reads.py``): read shares and members as arrays.

The numpy bounds pass (``accelerator.MatrixScan.finalists``) works on whole columns, so the
read shares go to it as the arrays they are made as: a term's occurrence list is parsed whole
(one ``group_concat`` string), counted by memory, its shares computed by ``bm25``'s expression
element by element, and added to the others by position. Loaded with the accelerator only.

The values and their order are those of ``reads.DICTS``: the same expression on the same
doubles (numpy's ``+``, ``*`` and ``/`` round as Python's do), the same additions in the same
order, keys in the order of their first occurrence, then of their first addition. The
containers are still a ``Mapping`` and a ``Set``, so any code reading them one by one gets
the same answers, only slower.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Iterator, Mapping
from collections.abc import Set as AbstractSet
from typing import TypeVar

import numpy as np
import numpy.typing as npt

from hotmem.lexical import Joined
from hotmem.reads import Keys, ShareOf, Shares, whole

__all__ = ["ARRAYS", "Arrays", "MemberArray", "ShareArrays"]

_S = TypeVar("_S")
Integers = npt.NDArray[np.int64]
Floats = npt.NDArray[np.float64]


class ShareArrays(Mapping[int, float]):
    """Read shares as two arrays: the keys (``int64``) and their shares (``float64``)."""

    __slots__ = ("_lookup", "keys_array", "values_array")

    def __init__(self, keys: Integers, values: Floats) -> None:
        self.keys_array = keys
        self.values_array = values
        self._lookup: dict[int, float] | None = None

    def __getitem__(self, key: int) -> float:
        if self._lookup is None:
            keys, values = self.keys_array.tolist(), self.values_array.tolist()
            self._lookup = dict(zip(keys, values, strict=True))
        return self._lookup[key]

    def __iter__(self) -> Iterator[int]:
        return iter(self.keys_array.tolist())

    def __len__(self) -> int:
        return len(self.keys_array)


class MemberArray(AbstractSet[int]):
    """The positions of a deferred term's members, as an ``int64`` array (each once)."""

    __slots__ = ("_lookup", "positions")

    def __init__(self, positions: Integers) -> None:
        self.positions = positions
        self._lookup: frozenset[int] | None = None

    def __contains__(self, position: object) -> bool:
        if self._lookup is None:
            self._lookup = frozenset(self.positions.tolist())
        return position in self._lookup

    def __iter__(self) -> Iterator[int]:
        return iter(self.positions.tolist())

    def __len__(self) -> int:
        return len(self.positions)

    @classmethod
    def _from_iterable(cls, values: Iterable[_S]) -> AbstractSet[_S]:
        """What ``Set``'s operators make: a frozenset."""
        return frozenset(values)


class Arrays:
    """The form (``reads.ReadForm``) of :class:`ShareArrays` and :class:`MemberArray`."""

    #: 0.73 µs a match against 0.198 µs an entry walked, 3.7 entries (``fts_costs.py`` on
    #: 100,000 heavy memories, 2026-12-03: 64.2 ms for `beko`'s 87,511 matches, 192.9 ms in
    #: dicts). Rounded down, as the dicts' 11.4 is.
    match_entries = 3

    def shares(self, docs: Joined, lengths: Keys, keys: Keys | None, share: ShareOf) -> ShareArrays:
        """``reads.ReadForm.shares``: the memories and their occurrences in the order of their
        first occurrence (that of ``collections.Counter``), and every share at once."""
        rowids = _integers(docs)
        if not len(rowids):
            return self.scores({})
        if bool((rowids[1:] >= rowids[:-1]).all()):
            # As the index lists them, by rowid: a memory's occurrences are one run.
            starts = np.flatnonzero(np.concatenate(([True], rowids[1:] != rowids[:-1])))
            memories = rowids[starts]
            occurrences = np.diff(np.append(starts, len(rowids)))
        else:
            unique, first, counted = np.unique(rowids, return_index=True, return_counts=True)
            order = np.argsort(first, kind="stable")
            memories, occurrences = unique[order], counted[order]
        tokens = _looked_up(lengths, memories)
        values = share(occurrences.astype(np.float64), tokens.astype(np.float64))
        at = memories if keys is None else _looked_up(keys, memories)
        return ShareArrays(at, np.asarray(values, dtype=np.float64))

    def scores(self, found: Shares) -> ShareArrays:
        """``reads.ReadForm.scores``."""
        if isinstance(found, ShareArrays):
            return found
        return ShareArrays(
            np.fromiter(found.keys(), dtype=np.int64, count=len(found)),
            np.fromiter(found.values(), dtype=np.float64, count=len(found)),
        )

    def added(self, earlier: Shares, later: Shares) -> ShareArrays:
        """``reads.ReadForm.added``: the keys of ``later`` found in ``earlier`` get their sum,
        the others ``0.0 + share`` after ``earlier``'s, as ``dict.get(key, 0.0) + share``."""
        old, new = self.scores(earlier), self.scores(later)
        if not len(old):
            return new
        index = _index_of(old.keys_array, new.keys_array)
        known = index >= 0
        values = old.values_array.copy()
        values[index[known]] += new.values_array[known]  # each key once: one addition each
        fresh = ~known
        return ShareArrays(
            np.concatenate((old.keys_array, new.keys_array[fresh])),
            np.concatenate((values, 0.0 + new.values_array[fresh])),
        )

    def within(self, found: Shares, scope: range, size: int) -> ShareArrays:
        """``reads.ReadForm.within``."""
        shares = self.scores(found)
        if whole(scope, size):
            return shares
        keys = shares.keys_array
        kept = (keys >= scope.start) & (keys < scope.stop)
        return ShareArrays(keys[kept], shares.values_array[kept])

    def largest(self, found: Shares) -> float:
        """``reads.ReadForm.largest``."""
        values = self.scores(found).values_array
        return float(values.max()) if len(values) else 0.0

    def members(self, rowids: Joined, keys: Keys, scope: range, size: int) -> MemberArray:
        """``reads.ReadForm.members`` (``rowids`` each once, as ``lexical.phrase_members``
        gives them)."""
        positions = _looked_up(keys, _integers(rowids))
        if not whole(scope, size):
            positions = positions[(positions >= scope.start) & (positions < scope.stop)]
        return MemberArray(positions)


ARRAYS = Arrays()


def _integers(column: Joined) -> Integers:
    """The integers of a ``lexical.Joined`` column, parsed whole."""
    if not isinstance(column, str):
        return np.asarray(column, dtype=np.int64).reshape(-1)
    try:
        found = np.fromstring(column, dtype=np.int64, sep=",")
    except ValueError:  # not only integers, and numpy's warning raised as an error
        found = None
    if found is None or len(found) != column.count(",") + 1:  # parsed as Python does, or fails
        return np.asarray(list(map(int, column.split(","))), dtype=np.int64)
    return found


def _looked_up(table: Keys, at: Integers) -> Integers:
    """``table[i]`` for each ``i`` of ``at``: read from the array's own bytes when ``table`` is
    an ``array.array``, one lookup a value otherwise (a dict, for sparse rowids)."""
    if isinstance(table, array):
        values: Integers = np.frombuffer(table, dtype=table.typecode)[at].astype(np.int64)
        return values
    return np.fromiter(map(table.__getitem__, at.tolist()), dtype=np.int64, count=len(at))


#: Keys up to this many times the keys looked up are indexed by a dense array.
_DENSE = 8


def _index_of(keys: Integers, wanted: Integers) -> Integers:
    """The index in ``keys`` (distinct) of each of ``wanted``, -1 where it is not there."""
    if not len(wanted):
        return np.empty(0, dtype=np.int64)
    low = min(int(keys.min()), int(wanted.min()))
    top = max(int(keys.max()), int(wanted.max()))
    if low >= 0 and top < _DENSE * (len(keys) + len(wanted)) + 65_536:
        where = np.full(top + 1, -1, dtype=np.int64)
        where[keys] = np.arange(len(keys), dtype=np.int64)
        found: Integers = where[wanted]
        return found
    order = np.argsort(keys, kind="stable")
    ranked = keys[order]
    at = np.minimum(np.searchsorted(ranked, wanted), len(keys) - 1)
    return np.where(ranked[at] == wanted, order[at], -1)
