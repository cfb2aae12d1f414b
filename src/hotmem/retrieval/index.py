"""The search index: a store's memories as columns, refreshed after writes, never reloaded
for them.

A memory has a *position*, its place in every column: its rowid, identifier, importance,
``hotmem-hash-v1`` vector (``vectors``, 64 float32 a position), its token count in each lexical
index (``postings.LexicalColumn``) and, once a profile asks for another space, its vector
there (:class:`SpaceColumn`). Positions follow rowids at a load and grow by appending.

**Refreshing** (:meth:`SearchIndex.refresh`, at the start of every search, in its read
transaction): the store's mark (``store.changes``) says whether anything changed. New memories
(rowids past the mark) and memories the change log names are read, the latter killed at their
old position first; what they add to the postings already read is tokenized by FTS5 itself
(``tokens.py``), or those postings are dropped and read again on demand when the delta holds
more tokens than they do. A position killed stays (``live`` is 0) until the index reloads, when
the dead reach a quarter of the live or the log cannot say what changed.

**Postings** of a token are read on first use from the store's own index (its occurrence list,
``store.changes.token_occurrences``) and kept, appended to, with the index.

The columns are standard-library arrays: the reference engine reads them as they are, the
numpy engine through zero-copy views made for one search (``vectorized.py``).
"""

from __future__ import annotations

import sqlite3
import sys
from array import array
from bisect import bisect_left, bisect_right
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from hotmem.embedding.hash_v1 import DIMENSION, VECTOR_BYTES
from hotmem.errors import StoreError
from hotmem.retrieval.postings import LexicalColumn, Postings, extended
from hotmem.retrieval.tokens import tokenizer
from hotmem.store import changes
from hotmem.store.changes import Mark, MemoryColumns
from hotmem.store.fts import cjk_index_text
from hotmem.store.lexical_index import TABLES, Table

__all__ = ["SearchIndex", "SpaceColumn"]

_ZERO = bytes(VECTOR_BYTES)
_BIG_ENDIAN = sys.byteorder == "big"
#: The index reloads once the dead positions reach this share of the live ones.
_DEAD_SHARE = 4


def _zero_vectors(blob: bytes) -> list[int]:
    """The offsets (in vectors) of the zero vectors of ``blob``, found by a search in C."""
    found: list[int] = []
    at = blob.find(_ZERO)
    while at >= 0:
        if at % VECTOR_BYTES:  # zeros ending one vector and starting the next
            at = blob.find(_ZERO, at + 1)
            continue
        found.append(at // VECTOR_BYTES)
        at = blob.find(_ZERO, at + VECTOR_BYTES)
    return found


def _floats(blob: bytes) -> array[float]:
    """Little-endian float32 bytes as a native array of floats."""
    values = array("f", blob)
    if _BIG_ENDIAN:
        values.byteswap()
    return values


@dataclass(slots=True)
class SpaceColumn:
    """A vector space's vectors by position (zeros where a memory has none: ``missing``)."""

    name: str
    dimension: int
    values: array[float] = field(default_factory=lambda: array("f"))
    missing: set[int] = field(default_factory=set)

    def vector(self, position: int) -> tuple[float, ...]:
        """The vector at ``position``, as floats."""
        start = position * self.dimension
        return tuple(self.values[start : start + self.dimension])

    def extend(
        self, positions: Sequence[int], rowids: Sequence[int], found: tuple[list[int], bytes]
    ) -> None:
        """Append the vectors of the memories appended at ``positions`` (their ``rowids``)
        from ``found`` (``changes.space_vectors``)."""
        have, blob = found
        width = self.dimension
        if list(have) == list(rowids):
            self.values = extended(self.values, _floats(blob))
            return
        vectors = _floats(blob)
        at = {rowid: i for i, rowid in enumerate(have)}
        added = array("f")
        for position, rowid in zip(positions, rowids, strict=True):
            i = at.get(rowid)
            if i is None:
                added.extend(array("f", bytes(4 * width)))
                self.missing.add(position)
            else:
                added.extend(vectors[i * width : (i + 1) * width])
        self.values = extended(self.values, added)


class SearchIndex:
    """A store's memories as columns (the module docstring), for one store's connection."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.mark = Mark(0, 0)
        self.rowids: array[int] = array("q")
        self.position: dict[int, int] = {}
        self.live = bytearray()
        self.deaths = 0
        self.identifiers: list[str] = []
        self.code_of: dict[str, int] = {}
        self.codes: array[int] = array("i")
        self.scopes: list[array[int]] = []
        self.importances: array[float] = array("d")
        self.vectors: array[float] = array("f")
        self.zero: set[int] = set()
        self.lexical: dict[Table, LexicalColumn] = {t: LexicalColumn(t) for t in TABLES}
        self.spaces: dict[str, SpaceColumn] = {}

    # -- building --------------------------------------------------------------------------------
    @classmethod
    def load(cls, connection: sqlite3.Connection, target: str) -> SearchIndex:
        """Every memory of the store, read in the caller's read transaction.

        Raises:
            StoreError: a memory's row is damaged (named).
        """
        index = cls(target)
        index.mark = changes.current_mark(connection)
        index._append(changes.memory_columns(connection, target), connection)
        return index

    def __len__(self) -> int:
        return len(self.rowids)

    @property
    def size(self) -> int:
        """How many memories are live."""
        return len(self.rowids) - self.deaths

    def refresh(self, connection: sqlite3.Connection) -> SearchIndex:
        """This index brought to the store's state in the caller's read transaction: itself,
        updated, or a new one loaded when that is the way (module docstring).

        Raises:
            StoreError: a memory read is damaged.
        """
        now = changes.current_mark(connection)
        if now == self.mark:
            return self
        changed = changes.changed_since(connection, self.mark)
        if changed is None:
            return SearchIndex.load(connection, self.target)
        gone = [self.position[rowid] for rowid in changed if rowid in self.position]
        if (self.deaths + len(gone)) * _DEAD_SHARE > max(self.size, 1024):
            return SearchIndex.load(connection, self.target)
        for position in gone:
            self._kill(position)
        fresh = changes.memory_columns(connection, self.target, changed, after=self.mark.rowid)
        self._append(fresh, connection)
        self.mark = now
        return self

    def _kill(self, position: int) -> None:
        if not self.live[position]:
            return
        self.live[position] = 0
        self.deaths += 1
        del self.position[self.rowids[position]]
        for column in self.lexical.values():
            column.kill(position)
        for space in self.spaces.values():
            space.missing.discard(position)

    def _append(self, columns: MemoryColumns, connection: sqlite3.Connection) -> None:
        start = len(self.rowids)
        positions = range(start, start + len(columns.rowids))
        self.rowids = extended(self.rowids, columns.rowids)
        self.position.update(zip(columns.rowids, positions, strict=True))
        self.live = extended(self.live, b"\x01" * len(positions))
        self.importances = extended(self.importances, columns.importances)
        self.vectors = extended(self.vectors, _floats(columns.vectors))
        self.zero.update(start + i for i in _zero_vectors(columns.vectors))
        self._append_scopes(columns.identifiers, start)
        self.lexical["memories_fts"].extend(columns.words)
        self.lexical["memories_cjk"].extend(columns.grams)
        if columns.facts is not None:
            self._index_tokens(columns, positions)
        for space in self.spaces.values():
            width = 4 * space.dimension
            found = changes.space_vectors(connection, space.name, width, columns.rowids)
            space.extend(positions, columns.rowids, found)

    def _append_scopes(self, identifiers: list[str], start: int) -> None:
        """Give the memories appended from ``start`` their identifiers' codes and scopes."""
        code_of = self.code_of
        for identifier in dict.fromkeys(identifiers):
            if identifier not in code_of:
                code_of[identifier] = len(self.identifiers)
                self.identifiers.append(identifier)
                self.scopes.append(array("i"))
        codes = list(map(code_of.__getitem__, identifiers))
        self.codes = extended(self.codes, codes)
        order = sorted(range(len(codes)), key=codes.__getitem__)  # stable: positions ascend
        ordered = [codes[i] for i in order]
        for code in dict.fromkeys(ordered):
            low, high = bisect_left(ordered, code), bisect_right(ordered, code)
            added = [start + i for i in order[low:high]]
            self.scopes[code] = extended(self.scopes[code], added)

    def _index_tokens(self, columns: MemoryColumns, positions: range) -> None:
        """Add the appended memories to the postings read so far, tokenized by FTS5; or drop
        those postings when the memories hold more tokens than they do, or a token count
        differs from the store's (another tokenizer indexed the store)."""
        assert columns.facts is not None
        texts = {
            "memories_fts": (columns.facts, columns.words),
            "memories_cjk": (
                [cjk_index_text(fact) or "" for fact in columns.facts],
                columns.grams,
            ),
        }
        for table, (facts, lengths) in texts.items():
            column = self.lexical[table]  # type: ignore[index]
            if not column.postings:
                continue
            held = sum(len(p.positions) for p in column.postings.values())
            if sum(n for n in lengths if n > 0) > held:
                column.postings.clear()
                continue
            counted = tokenizer(table).counts(facts)  # type: ignore[arg-type]
            if [sum(c.values()) for c in counted] != [max(n, 0) for n in lengths]:
                column.postings.clear()
                continue
            for p, counts in zip(positions, counted, strict=True):
                for token, frequency in counts.items():
                    postings = column.postings.get(token)
                    if postings is not None:
                        postings.append(p, frequency)

    # -- reading ---------------------------------------------------------------------------------
    def scope(self, identifier: str | None) -> list[int]:
        """The live positions of ``identifier``'s memories (of every memory for ``None``)."""
        live = self.live
        if identifier is None:
            return (
                [p for p in range(len(live)) if live[p]] if self.deaths else list(range(len(live)))
            )
        code = self.code_of.get(identifier)
        if code is None:
            return []
        return [p for p in self.scopes[code] if live[p]]

    def postings(self, connection: sqlite3.Connection, table: Table, token: str) -> Postings:
        """The postings of ``token`` in ``table``, read from the store's index on first use.

        Raises:
            StoreError: the store's index names a memory that does not exist (it is damaged).
        """
        column = self.lexical[table]
        found = column.postings.get(token)
        if found is None:
            occurrences = changes.token_occurrences(connection, table, token)
            try:
                positions = list(map(self.position.__getitem__, occurrences))
            except KeyError as exc:
                raise StoreError(
                    f"store {self.target!r} is damaged: expected every full-text index entry "
                    f"to belong to a memory, found rowid={exc.args[0]} in the index only; "
                    "check_integrity() lists the problems"
                ) from None
            found = column.postings[token] = Postings.of_occurrences(positions)
        return found

    def vector(self, position: int) -> tuple[float, ...]:
        """The ``hotmem-hash-v1`` vector at ``position``, as floats."""
        start = position * DIMENSION
        return tuple(self.vectors[start : start + DIMENSION])

    def space(self, connection: sqlite3.Connection, name: str, dimension: int) -> SpaceColumn:
        """The vectors of the space ``name`` by position, read on first use."""
        found = self.spaces.get(name)
        if found is None or found.dimension != dimension:
            found = SpaceColumn(name, dimension)
            vectors = changes.space_vectors(connection, name, 4 * dimension)
            found.extend(range(len(self.rowids)), list(self.rowids), vectors)
            found.missing.difference_update(p for p in range(len(self.live)) if not self.live[p])
            self.spaces[name] = found
        return found

    def names(self, connection: sqlite3.Connection, positions: Collection[int]) -> dict[int, str]:
        """position -> memory_id of ``positions``.

        Raises:
            StoreError: a memory_id is damaged.
        """
        rowids = self.rowids
        by_rowid = changes.memory_ids(connection, self.target, [rowids[p] for p in positions])
        return {p: by_rowid[rowids[p]] for p in positions}
