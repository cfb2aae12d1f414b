"""A search index's map from a memory's rowid to its position in the index's columns."""

from __future__ import annotations

import sys
from array import array
from collections.abc import Sequence

from hotmem.retrieval.postings import extended

__all__ = ["Positions"]


class Positions:
    """rowid -> position: an array by rowid (-1: none) while rowids are dense, as SQLite hands
    them out, else a dict."""

    def __init__(self) -> None:
        self._dense: array[int] | None = array("q")
        self._sparse: dict[int, int] = {}
        self._count = 0

    def add(self, rowids: Sequence[int], start: int) -> None:
        """Give ``rowids`` the positions ``start``, ``start + 1``, ..."""
        self._count += len(rowids)
        dense = self._dense
        top = max(rowids, default=-1)
        if dense is not None and top > 4 * self._count + 65_536:  # sparse: a dict from now on
            self._sparse = {r: p for r, p in enumerate(dense) if p >= 0}
            self._dense = dense = None
        if dense is None:
            self._sparse.update(zip(rowids, range(start, start + len(rowids)), strict=True))
            return
        if top >= len(dense):
            self._dense = dense = extended(dense, array("q", [-1]) * (top + 1 - len(dense)))
        numpy = sys.modules.get("numpy")
        if numpy is not None and len(rowids) > 1:
            keys = numpy.asarray(rowids, dtype=numpy.int64)
            numpy.frombuffer(dense, dtype=numpy.int64)[keys] = numpy.arange(
                start, start + len(keys)
            )
            return
        for p, rowid in enumerate(rowids, start):
            dense[rowid] = p

    def remove(self, rowid: int) -> None:
        """Forget ``rowid``."""
        self._count -= 1
        if self._dense is None:
            del self._sparse[rowid]
        else:
            self._dense[rowid] = -1

    def get(self, rowid: int) -> int | None:
        """The position of ``rowid``, ``None`` when it has none."""
        if self._dense is None:
            return self._sparse.get(rowid)
        found = self._dense[rowid] if 0 <= rowid < len(self._dense) else -1
        return None if found < 0 else found

    def __contains__(self, rowid: object) -> bool:
        return isinstance(rowid, int) and self.get(rowid) is not None

    def many(self, rowids: array[int]) -> Sequence[int] | None:
        """The positions of ``rowids`` in order; ``None`` when one has none."""
        dense = self._dense
        numpy = sys.modules.get("numpy")
        if dense is not None and numpy is not None and rowids:
            keys = numpy.frombuffer(rowids, dtype=numpy.int64)
            if keys.min() < 0 or keys.max() >= len(dense):
                return None
            found = numpy.frombuffer(dense, dtype=numpy.int64)[keys]
            return None if (found < 0).any() else array("q", found.tobytes())
        try:
            if dense is not None:  # in C: a rowid past the array, or below 0, has no position
                found = array("q", map(dense.__getitem__, rowids))
                return None if min(rowids, default=0) < 0 or min(found, default=0) < 0 else found
            return list(map(self._sparse.__getitem__, rowids))
        except (IndexError, KeyError):
            return None
