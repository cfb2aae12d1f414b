"""The HotMem store: a SQLite database of memories with their vectors and an FTS5 index."""

from __future__ import annotations

import json
import os
import sqlite3
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from hotmem import migrations, schema
from hotmem.embed import embed_bytes
from hotmem.errors import DuplicateMemoryError, MemoryNotFoundError, StoreError, ValidationError
from hotmem.fields import format_timestamp
from hotmem.fts import cjk_index_text
from hotmem.models import (
    Clock,
    Memory,
    make_memory,
    memory_from_mapping,
    parse_timestamp,
    system_clock,
)
from hotmem.vectors import VectorIndex

if TYPE_CHECKING:
    from hotmem.snapshot.writer import SnapshotReport

__all__ = ["MemoryStore", "open_store"]

_SELECT_MEMORY = "SELECT memory_id, identifier, fact, importance, tags, created_at FROM memories"
# Batches at least this large index FTS in one statement (see schema.CREATE_INSERT_TRIGGER).
_BULK_ROWS = 32
_INSERT_MEMORY = (
    "INSERT INTO memories (memory_id, identifier, fact, importance, tags, created_at, embedding) "
    "VALUES (?, ?, ?, ?, ?, ?, ?)"
)


def _row_to_memory(row: tuple[Any, ...]) -> Memory:
    return Memory(
        memory_id=row[0],
        identifier=row[1],
        fact=row[2],
        importance=row[3],
        tags=tuple(json.loads(row[4])),
        created_at=parse_timestamp(row[5]),
    )


def _memory_row(memory: Memory) -> tuple[str, str, str, float, str, str, bytes]:
    return (
        memory.memory_id,
        memory.identifier,
        memory.fact,
        memory.importance,
        json.dumps(list(memory.tags), ensure_ascii=False) if memory.tags else "[]",
        format_timestamp(memory.created_at),
        embed_bytes(memory.fact),
    )


def _cjk_rows(memories: Iterable[Memory]) -> Iterator[tuple[str, str]]:
    """``(grams, memory_id)`` for the memories whose fact has CJK letters."""
    for memory in memories:
        if not memory.fact.isascii():
            grams = cjk_index_text(memory.fact)
            if grams is not None:
                yield grams, memory.memory_id


def rebuild_lexical_index(connection: sqlite3.Connection) -> None:
    """Rebuild both lexical indexes from the facts, inside the caller's transaction.

    The indexes are derived data (``docs/snapshot-v2.md``, "Derived indexes"): migrations and
    hydration call this so that every store is indexed by the code that reads it.
    """
    connection.execute(schema.REBUILD_FTS)
    connection.execute(schema.CLEAR_CJK)
    rows = (
        (rowid, grams)
        for rowid, fact in connection.execute(schema.SELECT_FACTS)
        if not fact.isascii() and (grams := cjk_index_text(fact)) is not None
    )
    connection.executemany(schema.INSERT_CJK_ROW, list(rows))


def _cjk_index_problems(connection: sqlite3.Connection) -> tuple[str, ...]:
    """How ``memories_cjk`` differs from the grams of the facts, one line per kind."""
    expected = {
        rowid: grams
        for rowid, fact in connection.execute(schema.SELECT_FACTS)
        if not fact.isascii() and (grams := cjk_index_text(fact)) is not None
    }
    try:
        found = dict(connection.execute("SELECT rowid, grams FROM memories_cjk"))
    except sqlite3.DatabaseError as exc:
        return (f"CJK index: cannot be read: {exc}",)
    kinds = (
        ("missing", sorted(expected.keys() - found.keys())),
        ("not memories", sorted(found.keys() - expected.keys())),
        (
            "other grams",
            sorted(r for r in expected.keys() & found.keys() if expected[r] != found[r]),
        ),
    )
    return tuple(
        f"CJK index: {len(rowids)} row(s) {kind} (first rowid {rowids[0]}); expected the grams "
        "of each fact with CJK letters (MemoryStore.rebuild_lexical_index() rebuilds them)"
        for kind, rowids in kinds
        if rowids
    )


def connect(path: str | os.PathLike[str]) -> sqlite3.Connection:
    """Open a SQLite connection with HotMem's settings (autocommit; explicit transactions)."""
    target = os.fspath(path)
    if target != ":memory:":
        parent = Path(target).resolve().parent
        if not parent.is_dir():
            raise StoreError(
                f"cannot open store {target!r}: directory {str(parent)!r} does not exist"
            )
    try:
        connection = sqlite3.connect(target, isolation_level=None)
        connection.execute("PRAGMA synchronous = NORMAL")
        connection.execute("PRAGMA foreign_keys = ON")
    except sqlite3.Error as exc:
        raise StoreError(f"cannot open store {target!r}: {exc}") from None
    return connection


def initialise(connection: sqlite3.Connection, *, with_triggers: bool = True) -> None:
    """Create HotMem's tables in an empty database (triggers may be added later)."""
    connection.executescript(schema.CREATE_TABLES)
    connection.executemany(
        "INSERT INTO hotmem_meta (key, value) VALUES (?, ?)", sorted(schema.expected_meta().items())
    )
    if with_triggers:
        connection.executescript(schema.CREATE_FTS_TRIGGERS)


def _stored_version(meta: Mapping[str, str]) -> int | None:
    text = meta.get("schema_version", "")
    return int(text) if text.isdigit() else None


def _migratable(meta: Mapping[str, str]) -> bool:
    """Whether ``migrations.upgrade`` can bring a store with this metadata to this version."""
    version = _stored_version(meta)
    if version is None or version >= schema.SCHEMA_VERSION:
        return False
    steps = range(version, schema.SCHEMA_VERSION)
    expected = schema.expected_meta()
    same_vectors = all(
        meta.get(k) == expected[k] for k in ("embedding_model", "embedding_dimension")
    )
    return same_vectors and all(step in migrations.MIGRATIONS for step in steps)


def incompatibility(connection: sqlite3.Connection, target: str) -> str | None:
    """Why the database behind ``connection`` cannot serve as a HotMem store, or None.

    An empty database is compatible (it can be initialised), and so is a store of an earlier
    schema version that ``migrations`` can upgrade.
    """
    tables = {row[0] for row in connection.execute("SELECT name FROM sqlite_master")}
    if not tables:
        return None
    if not {"hotmem_meta", "memories"} <= tables:
        return f"{target!r} is a SQLite database but not a HotMem store"
    meta = dict(connection.execute("SELECT key, value FROM hotmem_meta"))
    if _migratable(meta):
        return None
    for key, expected in schema.expected_meta().items():
        if meta.get(key) != expected:
            return (
                f"store {target!r} is incompatible: expected {key}={expected!r}, "
                f"found {key}={meta.get(key)!r}"
            )
    return None


def _check_compatible(connection: sqlite3.Connection, target: str) -> None:
    problem = incompatibility(connection, target)
    if problem is not None:
        raise StoreError(problem)
    if connection.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0:
        initialise(connection)
        return
    meta = dict(connection.execute("SELECT key, value FROM hotmem_meta"))
    if not _migratable(meta):
        return
    connection.execute("BEGIN IMMEDIATE")
    try:
        # Read again under the write lock: another process may have migrated meanwhile.
        meta = dict(connection.execute("SELECT key, value FROM hotmem_meta"))
        version = _stored_version(meta)
        if _migratable(meta) and version is not None:
            migrations.upgrade(connection, version, label=repr(target))
    except BaseException:
        connection.execute("ROLLBACK")
        raise
    connection.execute("COMMIT")


class MemoryStore:
    """A HotMem store. Use :func:`open_store` to get one; it is a context manager."""

    def __init__(self, path: str | os.PathLike[str], *, clock: Clock = system_clock) -> None:
        self._path = os.fspath(path)
        self._clock = clock
        self._connection = connect(self._path)
        self._index: VectorIndex | None = None
        self._index_version: int | None = None
        try:
            _check_compatible(self._connection, self._path)
        except sqlite3.DatabaseError as exc:
            self._connection.close()
            raise StoreError(f"cannot open store {self._path!r}: {exc}") from None
        except StoreError:
            self._connection.close()
            raise

    # -- lifecycle -----------------------------------------------------------------------------
    @property
    def path(self) -> str:
        """The path this store was opened at (``":memory:"`` for an in-memory store)."""
        return self._path

    @property
    def connection(self) -> sqlite3.Connection:
        """The underlying SQLite connection (for read-only inspection)."""
        return self._connection

    def close(self) -> None:
        """Close the database connection. The store cannot be used afterwards."""
        self._connection.close()
        self._index = None

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    # -- writes --------------------------------------------------------------------------------
    def add(
        self,
        fact: str,
        *,
        identifier: str,
        importance: float = 0.5,
        tags: list[str] | tuple[str, ...] = (),
        memory_id: str | None = None,
        created_at: object = None,
    ) -> Memory:
        """Add one memory and return it as stored.

        ``created_at`` defaults to the store's clock; ``memory_id`` to a derived id.

        Raises:
            ValidationError: a field is invalid.
            DuplicateMemoryError: ``memory_id`` already exists.
        """
        memory = make_memory(
            fact,
            identifier=identifier,
            importance=importance,
            tags=tags,
            memory_id=memory_id,
            created_at=created_at,
            clock=self._clock,
        )
        self._insert([memory])
        return memory

    def add_many(self, memories: Iterable[Memory | Mapping[str, object]]) -> list[Memory]:
        """Add many memories in one transaction: all of them, or none.

        Each item is a :class:`Memory` or a mapping with the fields of one.

        Raises:
            ValidationError: an item is invalid (its position is named); nothing is written.
            DuplicateMemoryError: an id repeats or already exists; nothing is written.
        """
        validated: list[Memory] = []
        for position, item in enumerate(memories):
            try:
                if isinstance(item, Memory):
                    # Re-validate: a Memory can be built by hand with any values.
                    item = memory_from_mapping(item.to_dict())
                else:
                    item = memory_from_mapping(item, clock=self._clock)
            except ValidationError as exc:
                raise type(exc)(f"memory #{position}: {exc}") from None
            validated.append(item)
        self._insert(validated)
        return validated

    def _insert(self, memories: list[Memory]) -> None:
        seen: set[str] = set()
        for memory in memories:
            if memory.memory_id in seen:
                raise DuplicateMemoryError(
                    f"memory_id={memory.memory_id!r} appears more than once in one batch"
                )
            seen.add(memory.memory_id)
        rows = list(map(_memory_row, memories))  # embed before taking the write lock
        connection = self._connection
        connection.execute("BEGIN IMMEDIATE")
        try:
            if len(rows) >= _BULK_ROWS:
                last = connection.execute("SELECT coalesce(max(rowid), 0) FROM memories")
                last_rowid = last.fetchone()[0]
                connection.execute(schema.DROP_INSERT_TRIGGER)
                connection.executemany(_INSERT_MEMORY, rows)
                connection.execute(schema.INDEX_ROWS_AFTER, (last_rowid,))
                connection.execute(schema.CREATE_INSERT_TRIGGER)
            else:
                connection.executemany(_INSERT_MEMORY, rows)
            connection.executemany(schema.INSERT_CJK, _cjk_rows(memories))
        except sqlite3.IntegrityError as exc:
            connection.execute("ROLLBACK")
            if "memories.memory_id" in str(exc):
                existing = self._first_existing(memories)
                raise DuplicateMemoryError(
                    f"memory_id={existing!r} already exists in the store"
                ) from None
            raise ValidationError(f"memory rejected by the store: {exc}") from None
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        connection.execute("COMMIT")
        self._index = None

    def _first_existing(self, memories: list[Memory]) -> str | None:
        for memory in memories:
            if self._connection.execute(
                "SELECT 1 FROM memories WHERE memory_id = ?", (memory.memory_id,)
            ).fetchone():
                return memory.memory_id
        return None

    def delete(self, memory_id: str) -> None:
        """Delete one memory.

        Raises:
            MemoryNotFoundError: no memory has this id.
        """
        cursor = self._connection.execute("DELETE FROM memories WHERE memory_id = ?", (memory_id,))
        if cursor.rowcount == 0:
            raise MemoryNotFoundError(f"no memory with memory_id={memory_id!r}")
        self._index = None

    # -- reads ---------------------------------------------------------------------------------
    def get(self, memory_id: str) -> Memory:
        """Return the memory with this id.

        Raises:
            MemoryNotFoundError: no memory has this id.
        """
        row = self._connection.execute(
            f"{_SELECT_MEMORY} WHERE memory_id = ?", (memory_id,)
        ).fetchone()
        if row is None:
            raise MemoryNotFoundError(f"no memory with memory_id={memory_id!r}")
        return _row_to_memory(row)

    def count(self, identifier: str | None = None) -> int:
        """Number of memories, in one identifier or in the whole store."""
        if identifier is None:
            return int(self._connection.execute("SELECT count(*) FROM memories").fetchone()[0])
        return int(
            self._connection.execute(
                "SELECT count(*) FROM memories WHERE identifier = ?", (identifier,)
            ).fetchone()[0]
        )

    def __len__(self) -> int:
        return self.count()

    def iter_memories(self, identifier: str | None = None) -> Iterator[Memory]:
        """Iterate over memories ordered by ``memory_id`` (optionally one identifier's)."""
        if identifier is None:
            cursor = self._connection.execute(f"{_SELECT_MEMORY} ORDER BY memory_id")
        else:
            cursor = self._connection.execute(
                f"{_SELECT_MEMORY} WHERE identifier = ? ORDER BY memory_id", (identifier,)
            )
        return map(_row_to_memory, cursor)

    def __iter__(self) -> Iterator[Memory]:
        return self.iter_memories()

    def identifiers(self) -> dict[str, int]:
        """Number of memories per identifier, ordered by identifier."""
        return dict(
            self._connection.execute(
                "SELECT identifier, count(*) FROM memories GROUP BY identifier ORDER BY identifier"
            )
        )

    def snapshot(self, path: str | os.PathLike[str], *, overwrite: bool = False) -> SnapshotReport:
        """Write the store to a portable snapshot v2 package (``docs/snapshot-v2.md``).

        The package is byte-identical for the same memories, whatever their insertion order.

        Raises:
            SnapshotError: ``path`` exists (without ``overwrite``) or cannot be written.
        """
        # Imported here: the writer depends on the store, not the reverse (no import cycle).
        from hotmem.snapshot.writer import write_snapshot

        return write_snapshot(self._connection, path, overwrite=overwrite)

    def rebuild_lexical_index(self) -> None:
        """Rebuild the word and CJK indexes from the facts, in one transaction.

        The indexes are derived data; this repairs them when :meth:`check_integrity` reports a
        problem with either. Searches in other processes see the old or the new index, never a
        mixture.
        """
        connection = self._connection
        connection.execute("BEGIN IMMEDIATE")
        try:
            rebuild_lexical_index(connection)
        except BaseException:
            connection.execute("ROLLBACK")
            raise
        connection.execute("COMMIT")

    def check_integrity(self) -> tuple[str, ...]:
        """What is wrong with the store's file and its lexical indexes; empty when sound.

        Runs SQLite's ``PRAGMA integrity_check``, FTS5's ``integrity-check`` of both lexical
        indexes (with content comparison for the word index, which also finds a memory missing
        from it or indexed with other text), and compares the CJK gram index with the grams of
        every fact (``fts.cjk_index_text``).
        """
        connection = self._connection
        problems = tuple(str(row[0]) for row in connection.execute("PRAGMA integrity_check"))
        problems = () if problems == ("ok",) else problems
        for label, check in (
            ("full-text index", schema.CHECK_FTS_INTEGRITY),
            ("CJK index", schema.CHECK_CJK_INTEGRITY),
        ):
            try:
                connection.execute(check)
            except sqlite3.DatabaseError as exc:
                problems += (f"{label}: {exc}",)
        return problems + _cjk_index_problems(connection)

    def vector_index(self) -> VectorIndex:
        """The in-memory vector index, reloaded when this or another connection wrote."""
        version = self._connection.execute("PRAGMA data_version").fetchone()[0]
        if self._index is None or version != self._index_version:
            self._index = VectorIndex.load(self._connection)
            self._index_version = version
        return self._index


def open_store(path: str | os.PathLike[str], *, clock: Clock = system_clock) -> MemoryStore:
    """Open (creating if needed) the HotMem store at ``path``; ``":memory:"`` is allowed.

    Only ``path`` is touched. ``clock`` supplies ``created_at`` for memories added without one.

    Raises:
        StoreError: the path cannot be opened or is not a compatible HotMem store.
    """
    return MemoryStore(path, clock=clock)
