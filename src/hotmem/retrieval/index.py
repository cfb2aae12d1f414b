"""The search index: a store's memories as columns, refreshed after writes, never reloaded
for them.

A memory has a *position*, its place in every column: its rowid, importance, ``hotmem-hash-v1``
vector (``vectors``, 256 bytes of little-endian float32 a position), its token count in each
lexical index (``postings.LexicalColumn``) and, once a profile asks for another space, its
vector there (:class:`SpaceColumn`); ``scopes`` lists each identifier's positions. Positions
follow rowids at a load and grow by appending.

**Refreshing** (:meth:`SearchIndex.refresh`, at the start of every search, in its read
transaction): the store's mark (``store.changes``) says whether anything changed. New memories
(rowids past the mark; past the largest rowid still live when the mark's own memory went, since
SQLite then hands its rowid out again) and memories the change log names are read, the latter
killed at their old position first; what they add to the postings already read is tokenized by
FTS5 itself (``tokens.py``), or those postings are dropped and read again on demand when the
delta holds more tokens than they do. A position killed stays (``live`` is 0) until the index
reloads, when the dead would pass a quarter of the live (and 256) or the log cannot say what
changed.

**Postings** of a token are read on first use from the store's own index (its occurrence list,
``store.changes.token_occurrences``) and kept, appended to, with the index.

The columns are standard-library arrays and byte arrays: the reference engine reads them as
they are, the numpy engine through zero-copy views made for one search (``vectorized.py``).
"""

from __future__ import annotations

import sqlite3
import struct
import sys
from array import array
from collections.abc import Collection, Iterable, Sequence
from itertools import compress

from hotmem.embedding.hash_v1 import DIMENSION, VECTOR_BYTES
from hotmem.errors import StoreError
from hotmem.retrieval.positions import Positions
from hotmem.retrieval.postings import LexicalColumn, Postings, extended
from hotmem.retrieval.rows import Rows
from hotmem.retrieval.tokens import tokenizer
from hotmem.store import changes
from hotmem.store.changes import Mark
from hotmem.store.columns import MemoryColumns, memory_columns
from hotmem.store.fts import cjk_index_text
from hotmem.store.image import image_part, image_postings
from hotmem.store.lexical_index import TABLES, Table

__all__ = ["Image", "SearchIndex", "SpaceColumn"]

_ZERO = bytes(VECTOR_BYTES)
_HASH = struct.Struct(f"<{DIMENSION}f")
_BIG_ENDIAN = sys.byteorder == "big"
#: The index reloads once the dead positions reach this share of the live ones.
_DEAD_SHARE = 4


def _zero_vectors(blob: bytes | bytearray) -> list[int]:
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


class SpaceColumn:
    """A vector space's vectors by position, little-endian float32 (zeros where a memory has
    none: ``missing``)."""

    __slots__ = ("dimension", "missing", "name", "values")

    name: str
    dimension: int
    values: Rows
    missing: set[int]

    def __init__(self, name: str, dimension: int, missing: set[int] | None = None) -> None:
        self.name = name
        self.dimension = dimension
        self.missing = set() if missing is None else missing
        self.values = Rows(4 * dimension)

    def vector(self, position: int) -> tuple[float, ...]:
        """The vector at ``position``, as floats."""
        segment, offset = self.values.row(position)
        return struct.unpack_from(f"<{self.dimension}f", segment, offset)

    def extend(
        self, positions: range, rowids: Sequence[int], found: tuple[array[int], bytes]
    ) -> None:
        """Append the vectors of the memories appended at ``positions`` (their ``rowids``)
        from ``found`` (``changes.space_vectors``)."""
        have, blob = found
        width = 4 * self.dimension
        if have == rowids:
            self.values.add(blob)
            return
        at = {rowid: i for i, rowid in enumerate(have)}
        added = bytearray()
        for position, rowid in zip(positions, rowids, strict=True):
            i = at.get(rowid)
            if i is None:
                added += bytes(width)
                self.missing.add(position)
            else:
                added += blob[i * width : (i + 1) * width]
        self.values.add(added)


class Image:
    """What an index knows of the image the store keeps of it (``image.py``).

    Attributes:
        mark: the image's mark.
        count: how many of the index's positions it covers.
        aligned: whether those are the image's positions too (no memory of the index was
            dead when it was written): only then are the image's postings the index's.
        tokens: the (table, token) pairs whose postings it holds.
        tried: the mark a write was last tried at (a busy or read-only store is not tried
            again before it changes).
        header: the image's header as the store holds it (postings are added to that image
            only while the store still holds it).
    """

    __slots__ = ("aligned", "count", "header", "mark", "tokens", "tried")

    mark: Mark
    count: int
    aligned: bool
    tokens: set[tuple[Table, str]]
    tried: Mark | None
    header: bytes

    def __init__(
        self,
        mark: Mark,
        count: int,
        aligned: bool,
        tokens: set[tuple[Table, str]],
        tried: Mark | None = None,
        header: bytes = b"",
    ) -> None:
        self.mark = mark
        self.count = count
        self.aligned = aligned
        self.tokens = tokens
        self.tried = tried
        self.header = header


class SearchIndex:
    """A store's memories as columns (the module docstring), for one store's connection."""

    def __init__(self, target: str) -> None:
        self.target = target
        self.mark = Mark(0, 0)
        self.rowids: array[int] = array("q")
        self.position = Positions()
        self.live = bytearray()
        self.deaths = 0
        self.scopes: dict[str, array[int]] = {}
        self.importances: array[float] = array("d")
        self.vectors = Rows(VECTOR_BYTES)
        self.zero: set[int] = set()
        self.lexical: dict[Table, LexicalColumn] = {t: LexicalColumn(t) for t in TABLES}
        self.spaces: dict[str, SpaceColumn] = {}
        self.image: Image | None = None

    # -- building --------------------------------------------------------------------------------
    @classmethod
    def load(cls, connection: sqlite3.Connection, target: str) -> SearchIndex:
        """Every memory of the store, read in the caller's read transaction.

        Raises:
            StoreError: a memory's row is damaged (named).
        """
        index = cls(target)
        index.mark = changes.current_mark(connection)
        index._append(memory_columns(connection, target, path=target), connection)
        return index

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
        gone = [p for p in map(self.position.get, changed) if p is not None]
        if (self.deaths + len(gone)) * _DEAD_SHARE > max(self.size, 1024):
            return SearchIndex.load(connection, self.target)
        for position in gone:
            self._kill(position)
        after = self.mark.rowid
        if after in changed:  # the newest memory went: SQLite may give its rowid, or lower
            # ones, to new memories; every rowid past the largest one still live may be new
            after = max(compress(self.rowids, self.live), default=0)
        self._append(memory_columns(connection, self.target, changed, after=after), connection)
        self.mark = now
        return self

    def _kill(self, position: int) -> None:
        self.live[position] = 0
        self.deaths += 1
        self.position.remove(self.rowids[position])
        for column in self.lexical.values():
            column.kill(position)
        for space in self.spaces.values():
            space.missing.discard(position)

    def _append(self, columns: MemoryColumns, connection: sqlite3.Connection) -> None:
        start = len(self.rowids)
        positions = range(start, start + len(columns.rowids))
        self.rowids = extended(self.rowids, columns.rowids)
        self.position.add(columns.rowids, start)
        self.live = extended(self.live, b"\x01" * len(positions))
        self.importances = extended(self.importances, columns.importances)
        self.append_vectors(columns.vectors)
        for identifier, rowids in columns.scopes.items():
            scope = self.scopes.get(identifier, array("q"))
            self.scopes[identifier] = extended(scope, self.position.many(rowids) or ())
        self.lexical["memories_fts"].extend(columns.words)
        self.lexical["memories_cjk"].extend(columns.grams)
        if columns.facts is not None:
            self._index_tokens(columns, positions)
        for space in self.spaces.values():
            width = 4 * space.dimension
            found = changes.space_vectors(
                connection, space.name, width, columns.rowids, target=self.target
            )
            space.extend(positions, columns.rowids, found)

    def append_vectors(self, blobs: Sequence[bytes]) -> None:
        """Append hash-v1 vectors (blobs of whole vectors), noting the zero ones."""
        for blob in blobs:
            first = len(self.vectors)
            self.vectors.add(blob)
            self.zero.update(first + i for i in _zero_vectors(blob))

    def _index_tokens(self, columns: MemoryColumns, positions: range) -> None:
        """Add the appended memories to the postings read so far, tokenized by FTS5; or drop
        those postings when the memories hold more tokens than they do, or a token count
        differs from the store's (another tokenizer indexed the store)."""
        assert columns.facts is not None
        texts: dict[Table, tuple[list[str], Iterable[float]]] = {
            "memories_fts": (columns.facts, columns.words),
            "memories_cjk": ([cjk_index_text(f) or "" for f in columns.facts], columns.grams),
        }
        for table, (facts, lengths) in texts.items():
            column = self.lexical[table]
            if not column.postings:
                continue
            counts = [int(n) if n > 0 else 0 for n in lengths]
            if sum(counts) > sum(len(p.positions) for p in column.postings.values()):
                column.postings.clear()
                continue
            counted = tokenizer(table).counts(facts)
            if [sum(c.values()) for c in counted] != counts:
                column.postings.clear()
                continue
            for p, found in zip(positions, counted, strict=True):
                for token, frequency in found.items():
                    postings = column.postings.get(token)
                    if postings is not None:
                        postings.append(p, frequency)

    # -- reading ---------------------------------------------------------------------------------
    def scope(self, identifier: str | None) -> Sequence[int]:
        """The live positions of ``identifier``'s memories (of every memory for ``None``),
        ascending: a ``range`` for every position, else an array."""
        live = self.live
        found: Sequence[int] = (
            range(len(live)) if identifier is None else self.scopes.get(identifier, array("q"))
        )
        if not self.deaths:
            return found
        return array("q", compress(found, map(live.__getitem__, found)))

    def postings(self, connection: sqlite3.Connection, table: Table, token: str) -> Postings:
        """The postings of ``token`` in ``table``, read from the store's index on first use.

        Raises:
            StoreError: the store's index names a memory that does not exist (it is damaged).
        """
        column = self.lexical[table]
        found = column.postings.get(token)
        if found is None:
            found = self._imaged(connection, table, token)
        if found is None:
            occurrences = changes.token_occurrences(connection, table, token)
            positions = self.position.many(occurrences)
            if positions is None:
                stray = next(r for r in occurrences if r not in self.position)
                raise StoreError(
                    f"store {self.target!r} is damaged: expected every full-text index entry "
                    f"to belong to a memory, found rowid={stray} in the index only; "
                    "check_integrity() lists the problems"
                )
            found = Postings.of_occurrences(positions)
        column.postings[token] = found
        return found

    def _imaged(self, connection: sqlite3.Connection, table: Table, token: str) -> Postings | None:
        """The postings of ``token`` from the store's image of this index, while it has added
        no memory since (the image's positions are then its own) and the store still holds
        that image; else ``None``. Another may have replaced it since: another process's, or
        an older one of this process written behind its search and finishing late, whose
        positions are its own index's, not this one's."""
        image = self.image
        if image is None or not image.aligned or len(self.rowids) != image.count:
            return None
        if image_part(connection, "header") != image.header:
            return None
        found = image_postings(connection, table, token)
        if found is None or len(found[0]) != len(found[1]) or len(found[0]) % 8:
            return None
        positions, frequencies = array("q"), array("d")
        positions.frombytes(found[0])
        frequencies.frombytes(found[1])
        if _BIG_ENDIAN:
            positions.byteswap()
            frequencies.byteswap()
        if positions and not 0 <= min(positions) <= max(positions) < image.count:
            return None
        image.tokens.add((table, token))
        return Postings(positions, frequencies)

    def vector(self, position: int) -> tuple[float, ...]:
        """The ``hotmem-hash-v1`` vector at ``position``, as floats."""
        return _HASH.unpack_from(*self.vectors.row(position))

    def space(self, connection: sqlite3.Connection, name: str, dimension: int) -> SpaceColumn:
        """The vectors of the space ``name`` by position, read on first use.

        Raises:
            StoreError: a vector is not finite and of unit length (its memory named).
        """
        found = self.spaces.get(name)
        if found is None or found.dimension != dimension:
            found = SpaceColumn(name, dimension)
            vectors = changes.space_vectors(connection, name, 4 * dimension, target=self.target)
            found.extend(range(len(self.rowids)), self.rowids, vectors)
            found.missing.difference_update(p for p in range(len(self.live)) if not self.live[p])
            self.spaces[name] = found
        return found

    def ids(self, connection: sqlite3.Connection, positions: Collection[int]) -> dict[int, str]:
        """position -> memory_id of each of ``positions``.

        Raises:
            StoreError: a memory_id is damaged.
        """
        rowids = self.rowids
        by_rowid = changes.memory_ids(connection, self.target, [rowids[p] for p in positions])
        return {p: by_rowid[rowids[p]] for p in positions}

    def rows(
        self, connection: sqlite3.Connection, positions: Collection[int]
    ) -> dict[int, changes.ResultRow]:
        """position -> the fields a search returns of each of ``positions``.

        Raises:
            StoreError: a memory_id is damaged.
        """
        rowids = self.rowids
        by_rowid = changes.result_rows(connection, self.target, [rowids[p] for p in positions])
        return {p: by_rowid[rowids[p]] for p in positions}
