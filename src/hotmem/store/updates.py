"""Changing memories in place: :meth:`Updates.update` one memory, and
:meth:`Updates.import_stream`, an import that says what to do with ids already stored.

A rewritten memory keeps its row (its rowid), so the change log's update trigger tells every
search index to re-read it (``changes.py``); the word index follows the fact through its
trigger, and this module rewrites what no trigger can: the CJK grams and the vectors of every
space of the store (hotmem-hash-v1's with the row). Each call is one write transaction.
"""

from __future__ import annotations

import json
import sqlite3
from collections import namedtuple
from collections.abc import Iterable, Iterator, Mapping
from contextlib import AbstractContextManager
from itertools import islice

from hotmem.embedding.hash_v1 import MODEL_NAME
from hotmem.errors import DuplicateMemoryError, MemoryNotFoundError, ValidationError
from hotmem.fields import lookup_text
from hotmem.records import record, replace
from hotmem.store import inserts, lexical_index, spaces
from hotmem.store.inserts import ADD_BATCH, SpaceEmbedders

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (hotmem.records)
if TYPE_CHECKING:
    from typing import Literal, NamedTuple

    from hotmem.models import Clock, Memory

__all__ = ["EXISTING", "Existing", "ImportCounts", "Item", "Updates", "rewrite", "validated"]

#: What ``import_stream`` does with a memory whose id the store already holds.
if TYPE_CHECKING:
    Existing = Literal["refuse", "skip", "update"]
else:  # at run time, what the values are
    Existing = str
#: Records of a bulk ingest checked a column at a time (``models.memories_from_mappings``).
CHECKED_BATCH = 512
EXISTING: tuple[Existing, ...] = ("refuse", "skip", "update")

_REWRITE = (
    "UPDATE memories SET identifier = ?, fact = ?, importance = ?, tags = ?, created_at = ?, "
    "embedding = ? WHERE rowid = ?"
)
_STORED = (
    "SELECT memory_id, rowid, created_at, fact FROM memories "
    "WHERE memory_id IN (SELECT value FROM json_each(?))"
)


if TYPE_CHECKING:

    class Item(NamedTuple):
        """A validated memory of an input: its position (from 0), and whether the input gave
        its ``memory_id`` and its ``created_at``."""

        position: int
        memory: Memory
        with_id: bool
        dated: bool

else:  # the same named tuple, without importing typing
    Item = namedtuple("Item", ("position", "memory", "with_id", "dated"))


def validated(
    items: Iterable[Memory | Mapping[str, object]], clock: Clock | None
) -> Iterator[Item]:
    """Each item validated (a :class:`Memory` again, a mapping by ``memory_from_mapping``):
    a list or tuple ``CHECKED_BATCH`` items at a time, column by column when they are plain
    dicts (``memories_from_mappings``); a stream one item at a time, none read before it is
    wanted. The same items and errors either way.

    Raises:
        ValidationError: an item is invalid (``memory #N: ...``, N from 0).
    """
    from hotmem.models import memories_from_mappings, system_clock

    clock = clock or system_clock
    if not isinstance(items, list | tuple):  # a stream: no item read before it is wanted
        yield from _one_by_one(items, 0, clock)
        return
    position = 0
    iterator = iter(items)
    while batch := list(islice(iterator, CHECKED_BATCH)):
        # a batch of mappings checked a column at a time, else (a Memory among them, or a
        # record that breaks a rule) one item at a time: the same items, the same errors
        memories = memories_from_mappings(batch, clock=clock)
        if memories is None:
            yield from _one_by_one(batch, position, clock)
        else:
            for i, (item, memory) in enumerate(zip(batch, memories, strict=True)):
                assert isinstance(item, dict)  # a batch checked as one holds dicts only
                given = (item.get("memory_id") is not None, item.get("created_at") is not None)
                yield Item(position + i, memory, *given)
        position += len(batch)


def _one_by_one(
    items: Iterable[Memory | Mapping[str, object]], start: int, clock: Clock
) -> Iterator[Item]:
    from hotmem.models import Memory, memory_from_mapping

    for position, item in enumerate(items, start):
        try:
            if isinstance(item, Memory):
                # Re-validate: a Memory can be built by hand with any values.
                yield Item(position, memory_from_mapping(item.to_dict()), True, True)
                continue
            memory = memory_from_mapping(item, clock=clock)
        except ValidationError as exc:
            raise type(exc)(f"memory #{position}: {exc}") from None
        given = (item.get("memory_id") is not None, item.get("created_at") is not None)
        yield Item(position, memory, *given)


def rewrite(
    connection: sqlite3.Connection,
    memories: list[tuple[int, Memory, bool]],
    embedders: SpaceEmbedders,
) -> None:
    """Write each ``(rowid, memory, fact changed)`` over its row, inside the caller's write
    transaction: the row and its hash-v1 vector, and for a new fact its CJK grams and its
    vector in every space of ``embedders``."""
    from hotmem.store.rows import memory_row  # the embedding, with writes

    connection.executemany(
        _REWRITE, ((*memory_row(memory)[1:], rowid) for rowid, memory, _ in memories)
    )
    refacted = [(rowid, memory) for rowid, memory, changed in memories if changed]
    if not refacted:
        return
    connection.executemany(
        "DELETE FROM memories_cjk WHERE rowid = ?", ((rowid,) for rowid, _ in refacted)
    )
    lexical_index.index_grams(connection, ((m.memory_id, m.fact) for _, m in refacted))
    facts = [memory.fact for _, memory in refacted]
    for name, embedder in embedders:
        vectors = embedder.embed_many(facts)
        spaces.insert_vectors(
            connection, name, zip((rowid for rowid, _ in refacted), vectors, strict=True)
        )


@record
class ImportCounts:
    """What :meth:`Updates.import_stream` did: memories added, skipped (their id was stored:
    ``existing="skip"``) and updated (``existing="update"``), and ``repeated``: the memories
    added without a ``memory_id`` whose identifier and fact the store already held (the same
    fact stored twice, under two derived ids)."""

    added: int = 0
    skipped: int = 0
    updated: int = 0
    repeated: int = 0


class _Merge:
    """One import's state inside its write transaction: ``start``, the largest rowid before
    the import (rows past it are the import's own); ``touched``, the stored ids skipped or
    updated; ``facts``, hashes of the stored (identifier, fact) pairs, read once;
    ``indexing``, the word index's share of the write (indexed once, at the end)."""

    __slots__ = (
        "connection",
        "counts",
        "embedders",
        "existing",
        "facts",
        "indexing",
        "start",
        "touched",
    )

    def __init__(
        self,
        connection: sqlite3.Connection,
        existing: Existing,
        embedders: SpaceEmbedders,
        start: int,
    ) -> None:
        self.connection = connection
        self.existing = existing
        self.embedders = embedders
        self.start = start
        self.touched: set[str] = set()
        self.facts: set[int] | None = None
        self.counts: dict[str, int] = {}
        self.indexing = inserts.Indexing()

    def count(self, name: str, n: int = 1) -> None:
        self.counts[name] = self.counts.get(name, 0) + n

    def stored_fact(self, memory: Memory) -> bool:
        if self.facts is None:
            rows = self.connection.execute(
                "SELECT identifier, fact FROM memories WHERE rowid <= ?", (self.start,)
            )
            self.facts = {hash((identifier, fact)) for identifier, fact in rows}
        return hash((memory.identifier, memory.fact)) in self.facts

    def batch(self, batch: list[Item]) -> None:
        ids = [item.memory.memory_id for item in batch]
        stored = {
            memory_id: (int(rowid), created_at, fact)
            for memory_id, rowid, created_at, fact in self.connection.execute(
                _STORED, (json.dumps(ids),)
            )
        }
        fresh: list[Memory] = []
        rewrites: list[tuple[int, Memory, bool]] = []
        seen: set[str] = set()
        for item in batch:
            memory_id = item.memory.memory_id
            found = stored.get(memory_id)
            if memory_id in seen or memory_id in self.touched or (found and found[0] > self.start):
                raise DuplicateMemoryError(
                    f"memory_id={memory_id!r} appears more than once in the input",
                    position=item.position,
                )
            seen.add(memory_id)
            if found is None:
                fresh.append(item.memory)
                if not item.with_id and self.stored_fact(item.memory):
                    self.count("repeated")
            elif self.existing == "refuse":
                raise DuplicateMemoryError(
                    f"memory_id={memory_id!r} already exists in the store", position=item.position
                )
            else:
                self.touched.add(memory_id)
                self.count("skipped" if self.existing == "skip" else "updated")
                if self.existing == "update":
                    new = self.dated(item, found[1])
                    rewrites.append((found[0], new, new.fact != found[2]))
        if fresh:
            added = inserts.insert_batches(
                self.connection,
                fresh,
                inserts.rows_of(fresh),
                iter(()),
                embedders=self.embedders,
                indexing=self.indexing,  # indexed once, for the whole import (_import_items)
            )
            self.count("added", added)
        rewrite(self.connection, rewrites, self.embedders)

    @staticmethod
    def dated(item: Item, stored_created_at: str) -> Memory:
        """The item's memory, with the stored ``created_at`` when the input gave none."""
        if item.dated:
            return item.memory
        from hotmem.models import parse_timestamp

        return replace(item.memory, created_at=parse_timestamp(stored_created_at))


class Updates:
    """Changing memories in place (mixed into ``MemoryStore``, which provides the rest)."""

    _path: str
    _model_dir: str | None
    _clock: Clock | None

    if TYPE_CHECKING:  # provided by MemoryStore

        def _space_embedders(self, connection: sqlite3.Connection) -> SpaceEmbedders: ...

        def reading(self) -> AbstractContextManager[sqlite3.Connection]: ...

        def _writing(self) -> AbstractContextManager[sqlite3.Connection]: ...

    def _embedders(
        self, connection: sqlite3.Connection, loaded: SpaceEmbedders | None = None
    ) -> SpaceEmbedders:
        """The embedders of the store's spaces: ``loaded`` while the spaces are theirs (another
        process may have added or dropped one since they were loaded), else loaded now."""
        names = [s.name for s in spaces.read_spaces(connection) if s.name != MODEL_NAME]
        if loaded is not None and [name for name, _ in loaded] == names:
            return loaded
        return self._space_embedders(connection)

    def update(
        self,
        memory_id: str,
        *,
        fact: str | None = None,
        importance: float | None = None,
        tags: list[str] | tuple[str, ...] | None = None,
    ) -> Memory:
        """Change a memory's fact, importance or tags (``None``: kept) and return it as stored.

        One write transaction: the row, the word and CJK indexes, and the fact's vector in
        every space of the store change together; search indexes in every process re-read
        the memory (its ``memory_id``, identifier and ``created_at`` stay).

        Raises:
            ValidationError: ``memory_id`` or a new value is invalid; nothing is written.
            MemoryNotFoundError: no memory has this id.
            StoreError: the store cannot be written.
        """
        from hotmem.models import make_memory
        from hotmem.store.rows import memory_from_row

        memory_id = lookup_text("memory_id", memory_id)
        with self.reading() as connection:
            embedders = self._embedders(connection)  # loaded before the write lock
        with self._writing() as connection:
            row = connection.execute(
                "SELECT rowid, memory_id, identifier, fact, importance, tags, created_at "
                "FROM memories WHERE memory_id = ?",
                (memory_id,),
            ).fetchone()
            if row is None:
                raise MemoryNotFoundError(f"no memory with memory_id={memory_id!r}")
            old = memory_from_row(row[1:], self._path)
            new = make_memory(
                old.fact if fact is None else fact,
                identifier=old.identifier,
                importance=old.importance if importance is None else importance,
                tags=old.tags if tags is None else tags,
                memory_id=old.memory_id,
                created_at=old.created_at,
            )
            embedders = self._embedders(connection, embedders)
            rewrite(connection, [(int(row[0]), new, new.fact != old.fact)], embedders)
        return new

    def import_stream(
        self,
        memories: Iterable[Memory | Mapping[str, object]],
        *,
        existing: Existing = "refuse",
        batch_size: int = ADD_BATCH,
    ) -> ImportCounts:
        """Add memories from any iterable in one transaction, all or none, like
        ``add_stream``; a memory whose id the store already holds is refused
        (``existing="refuse"``), left as stored (``"skip"``) or written over (``"update"``:
        every field from the input, ``created_at`` kept when the input has none).

        An id repeated within the input is refused whatever ``existing`` says. The counts
        also say how many memories without a ``memory_id`` repeat an identifier and fact
        the store held before (stored again, under a new derived id).

        Raises:
            ValidationError: an item is invalid, ``existing`` is not one of ``EXISTING`` or
                ``batch_size`` not a positive integer; nothing is written.
            DuplicateMemoryError: an id repeats, or is stored with ``existing="refuse"``;
                ``position`` says which item (from 0); nothing is written.
            StoreError: the store cannot be written; nothing is written.
        """
        if existing not in EXISTING:
            raise ValidationError(f"existing must be one of {EXISTING}; found {existing!r}")
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValidationError(f"batch_size must be a positive integer; found {batch_size!r}")
        return self._import_items(
            validated(memories, self._clock), existing=existing, batch_size=batch_size
        )

    def _import_items(
        self, items: Iterable[Item], *, existing: Existing = "refuse", batch_size: int = ADD_BATCH
    ) -> ImportCounts:
        """:meth:`import_stream` of items validated already: ``validated``'s, or those of
        ``hotmem import``, which validates each line once to list every problem of a file
        (``hotmem.cli.importing``). Arguments checked and errors as :meth:`import_stream`'s:
        not a public method, since an :class:`Item` vouches for its memory."""
        batches = inserts.batches(items, batch_size)
        first = next(batches, None)
        if first is None:
            return ImportCounts()
        with self.reading() as connection:
            embedders = self._embedders(connection)  # loaded before the write lock
        with self._writing() as connection:
            embedders = self._embedders(connection, embedders)
            # a damaged index refuses the import, as it refuses search
            lexical_index.probe(connection, ("memories_fts",))
            start = connection.execute("SELECT coalesce(max(rowid), 0) FROM memories")
            merge = _Merge(connection, existing, embedders, int(start.fetchone()[0]))
            merge.batch(first)
            for batch in batches:
                merge.batch(batch)
            merge.indexing.finish(connection)
            lexical_index.settle(connection, merge.counts.get("added", 0), merge.start)
            return ImportCounts(**merge.counts)
