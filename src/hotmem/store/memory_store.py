"""The HotMem store: a SQLite database of memories with their vectors and an FTS5 index.

A store is shared by processes (``docs/concurrency.md``): every write is one ``BEGIN
IMMEDIATE`` transaction, every read path one read transaction (:meth:`reading`), every
``sqlite3.Error`` a :class:`~hotmem.errors.StoreError`; a damaged lexical index refuses writes.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sized
from contextlib import contextmanager
from types import TracebackType

from hotmem.errors import MemoryNotFoundError, ValidationError
from hotmem.fields import lookup_text
from hotmem.store import inserts, sqlerrors
from hotmem.store import setup as storage
from hotmem.store.inserts import ADD_BATCH
from hotmem.store.options import Accelerator, accelerated, checked_timeout
from hotmem.store.rows import delete_row
from hotmem.store.settings import Settings
from hotmem.store.space_methods import VectorSpaces
from hotmem.store.updates import Updates, validated
from hotmem.store.upkeep import Upkeep

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (hotmem.records)
if TYPE_CHECKING:
    from hotmem.models import Clock, Memory
    from hotmem.progress import ProgressCallback

__all__ = ["Accelerator", "MemoryStore", "open_store"]

# The columns hotmem.store.rows.memory_from_row reads, in its order (MEMORY_COLUMNS).
_SELECT_MEMORY = "SELECT memory_id, identifier, fact, importance, tags, created_at FROM memories"


class MemoryStore(VectorSpaces, Settings, Updates, Upkeep):
    """A HotMem store. Use :func:`open_store` to get one; it is a context manager."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        clock: Clock | None = None,
        busy_timeout: float = storage.BUSY_TIMEOUT,
        accelerator: Accelerator = "auto",
        model_dir: str | os.PathLike[str] | None = None,
        check_default_profile: bool = True,
    ) -> None:
        self._path = os.fspath(path)
        self._model_dir = None if model_dir is None else os.fspath(model_dir)
        self._clock = clock
        self._busy_timeout = checked_timeout(busy_timeout)
        self._accelerated = accelerated(accelerator)
        self._accelerator: Accelerator = accelerator
        self._connection = storage.connect(self._path, busy_timeout=self._busy_timeout)
        try:
            storage.setup(self._connection, self._path, busy_timeout=self._busy_timeout)
            if check_default_profile:
                self._check_default_extras()
        except BaseException:
            self._connection.close()
            raise

    # -- lifecycle -----------------------------------------------------------------------------
    @property
    def path(self) -> str:
        """The path this store was opened at (``":memory:"`` for an in-memory store)."""
        return self._path

    @property
    def accelerator(self) -> Accelerator:
        """How searches may use numpy: ``"auto"``, ``"numpy"`` or ``"off"`` (``open_store``)."""
        return self._accelerator

    @property
    def accelerated(self) -> bool:
        """Whether searches scan vectors with numpy (``open_store``'s ``accelerator``)."""
        return self._accelerated

    @property
    def model_dir(self) -> str | None:
        """The model directory given to ``open_store`` (``None``: the pinned model package,
        or ``$HOTMEM_MODEL_DIR``), used by every embedder the store loads."""
        return self._model_dir

    @property
    def connection(self) -> sqlite3.Connection:
        """The underlying SQLite connection (for read-only inspection)."""
        return self._connection

    def close(self) -> None:
        """Close the database connection. The store cannot be used afterwards."""
        with sqlerrors.translated(self._path, "close", self._busy_timeout):
            self._connection.close()

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """One read transaction: every read inside sees the same state of the store.

        Writers in other processes go on meanwhile; what they commit is seen by the next
        transaction. Nested use joins the open transaction. Yields the connection.

        Raises:
            StoreError: SQLite failed (the message says why).
        """
        connection = self._connection
        with sqlerrors.translated(self._path, "read", self._busy_timeout):
            if connection.in_transaction:
                yield connection
                return
            connection.execute("BEGIN")
            try:
                yield connection
            finally:
                if connection.in_transaction:
                    connection.execute("COMMIT")  # a read transaction: nothing to keep or lose

    @contextmanager
    def _writing(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, committed when the block ends, rolled back if it raises."""
        connection = self._connection
        self._seen_version = None  # any write may change the spaces: the next add reads them
        with sqlerrors.translated(self._path, "write to", self._busy_timeout):
            connection.execute("BEGIN IMMEDIATE")
            try:
                yield connection
                connection.execute("COMMIT")
            except BaseException:
                if connection.in_transaction:  # SQLite may have rolled back after an error
                    connection.execute("ROLLBACK")
                raise

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
            StoreError: the store cannot be written (locked past the busy timeout, read-only).
        """
        from hotmem.models import make_memory, system_clock

        memory = make_memory(
            fact,
            identifier=identifier,
            importance=importance,
            tags=tags,
            memory_id=memory_id,
            created_at=created_at,
            clock=self._clock or system_clock,
        )
        self._insert([memory], 1)
        return memory

    def add_many(
        self,
        memories: Iterable[Memory | Mapping[str, object]],
        *,
        progress: ProgressCallback | None = None,
    ) -> list[Memory]:
        """Add many memories in one transaction: all of them, or none; return them as stored.

        Each item is a :class:`Memory` or a mapping with the fields of one. Items are
        validated, embedded and inserted ``ADD_BATCH`` at a time, so only the returned list
        grows with the input; :meth:`add_stream` does not keep even that. ``progress`` is
        called with (memories done, ``len(memories)``, or ``None`` without a length): first
        with 0, then as the embedders of the store's spaces finish their model runs and as
        batches are inserted, only ever forward.

        Raises:
            ValidationError: an item is invalid (its position is named); nothing is written.
            DuplicateMemoryError: an id repeats or already exists; nothing is written.
            StoreError: the store cannot be written; nothing is written.
        """
        added: list[Memory] = []
        total = len(memories) if isinstance(memories, Sized) else None
        self._insert(self._validated(memories, added), ADD_BATCH, progress, total)
        return added

    def add_stream(
        self,
        memories: Iterable[Memory | Mapping[str, object]],
        *,
        batch_size: int = ADD_BATCH,
        progress: ProgressCallback | None = None,
    ) -> int:
        """Add memories from any iterable in one transaction, all or none; return how many.

        Like :meth:`add_many`, but nothing is kept once inserted: memory stays flat whatever
        the number of memories (``hotmem import`` of a million lines uses it). The iterable is
        consumed ``batch_size`` items at a time; from the second batch on, validation and
        embedding run while the store's write lock is held, so other writers wait (up to their
        busy timeout) for a long stream to finish. An exception raised by the iterable rolls
        the whole stream back. ``progress`` is called as :meth:`add_many` calls it.

        Raises:
            ValidationError: an item is invalid (its position is named), or ``batch_size`` is
                not a positive integer; nothing is written.
            DuplicateMemoryError: an id repeats or already exists; nothing is written.
            StoreError: the store cannot be written; nothing is written.
        """
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValidationError(f"batch_size must be a positive integer; found {batch_size!r}")
        total = len(memories) if isinstance(memories, Sized) else None
        return self._insert(self._validated(memories, None), batch_size, progress, total)

    def _validated(
        self, items: Iterable[Memory | Mapping[str, object]], keep: list[Memory] | None
    ) -> Iterator[Memory]:
        for item in validated(inserts.memory_items(items), self._clock):
            if keep is not None:
                keep.append(item.memory)
            yield item.memory

    def _insert(
        self,
        memories: Iterable[Memory],
        batch_size: int,
        progress: ProgressCallback | None = None,
        total: int | None = None,
    ) -> int:
        """Insert every memory in one transaction; the first batch is embedded before it."""
        tally = inserts.Tally.of(progress, total)
        batches = inserts.batches(memories, batch_size)
        first = next(batches, None)
        if first is None:
            return 0
        embedders = self._last_embedders()  # the spaces read in the last write transaction
        rows = inserts.rows_of(first)  # embed before taking the write lock
        vectors: inserts.SpaceRows | None = inserts.space_rows_of(first, embedders, tally)
        seen = self._seen_version  # cleared by _writing: read before it
        with self._writing() as connection:
            now, version = self._add_embedders(connection, seen)
            if [name for name, _ in now] != [name for name, _ in embedders]:
                vectors = None  # the spaces changed since: embed again, locked
            count = inserts.insert_batches(
                connection, first, rows, batches, embedders=now, vectors=vectors, tally=tally
            )
        self._seen_version = (version, connection.total_changes)
        return count

    def delete(self, memory_id: str) -> None:
        """Delete one memory.

        Raises:
            ValidationError: ``memory_id`` is not a string of valid Unicode.
            MemoryNotFoundError: no memory has this id.
            StoreError: the store cannot be written, or its lexical index is damaged.
        """
        memory_id = lookup_text("memory_id", memory_id)
        with self._writing() as connection:
            if not delete_row(connection, memory_id):
                raise MemoryNotFoundError(f"no memory with memory_id={memory_id!r}")

    # -- reads ---------------------------------------------------------------------------------
    def get(self, memory_id: str) -> Memory:
        """Return the memory with this id.

        Raises:
            ValidationError: ``memory_id`` is not a string of valid Unicode.
            MemoryNotFoundError: no memory has this id.
            StoreError: the store cannot be read, or the memory's row is damaged.
        """
        memory_id = lookup_text("memory_id", memory_id)
        with self.reading() as connection:
            row = connection.execute(
                f"{_SELECT_MEMORY} WHERE memory_id = ?", (memory_id,)
            ).fetchone()
        if row is None:
            raise MemoryNotFoundError(f"no memory with memory_id={memory_id!r}")
        from hotmem.store.rows import memory_from_row

        return memory_from_row(row, self._path)

    def count(self, identifier: str | None = None) -> int:
        """Number of memories, in one identifier or in the whole store.

        Raises:
            ValidationError: ``identifier`` is not a string of valid Unicode.
            StoreError: the store cannot be read.
        """
        with self.reading() as connection:
            if identifier is None:
                return int(connection.execute("SELECT count(*) FROM memories").fetchone()[0])
            identifier = lookup_text("identifier", identifier)
            sql = "SELECT count(*) FROM memories WHERE identifier = ?"
            return int(connection.execute(sql, (identifier,)).fetchone()[0])

    def __len__(self) -> int:
        return self.count()

    def iter_memories(self, identifier: str | None = None) -> Iterator[Memory]:
        """Iterate over memories ordered by ``memory_id`` (optionally one identifier's).

        The iteration is one SQL statement, so it sees one state of the store.

        Raises:
            ValidationError: ``identifier`` is not a string of valid Unicode (raised at once).
            StoreError: the store cannot be read, or a row is damaged (raised while iterating).
        """
        if identifier is None:
            return self._rows(f"{_SELECT_MEMORY} ORDER BY memory_id", ())
        identifier = lookup_text("identifier", identifier)
        return self._rows(
            f"{_SELECT_MEMORY} WHERE identifier = ? ORDER BY memory_id", (identifier,)
        )

    def _rows(self, sql: str, parameters: tuple[str, ...]) -> Iterator[Memory]:
        with sqlerrors.translated(self._path, "read", self._busy_timeout):
            from hotmem.store.rows import memory_from_row

            for row in self._connection.execute(sql, parameters):
                yield memory_from_row(row, self._path)

    def __iter__(self) -> Iterator[Memory]:
        return self.iter_memories()

    def identifiers(self) -> dict[str, int]:
        """Number of memories per identifier, ordered by identifier.

        Raises:
            StoreError: the store cannot be read.
        """
        with self.reading() as connection:
            return dict(
                connection.execute(
                    "SELECT identifier, count(*) FROM memories "
                    "GROUP BY identifier ORDER BY identifier"
                )
            )


def open_store(
    path: str | os.PathLike[str],
    *,
    clock: Clock | None = None,
    busy_timeout: float = storage.BUSY_TIMEOUT,
    accelerator: Accelerator = "auto",
    model_dir: str | os.PathLike[str] | None = None,
    check_default_profile: bool = True,
) -> MemoryStore:
    """Open (creating if needed) the HotMem store at ``path``; ``":memory:"`` is allowed.

    Only ``path`` (and, beside it, SQLite's ``-wal`` and ``-shm`` files while the store is
    open, and ``path.migrating`` while this process migrates it) is touched. ``clock``
    supplies ``created_at`` for memories added without one (the system clock when ``None``).
    ``busy_timeout`` is how many seconds a write waits for another connection's write lock.
    ``accelerator`` chooses the vector scan: ``"auto"`` (numpy when installed, the ``fast``
    extra), ``"numpy"`` or ``"off"``; search results are bit-identical whichever runs.
    ``model_dir`` is passed to every embedder the store loads (``hotmem.get_embedder``).
    Several processes may open one store at once (``docs/concurrency.md``); a store left
    half set up by a killed process is completed, and one of an older schema migrated; a
    process opening a store another is migrating waits for that migration while it is alive,
    saying so on stderr.
    A store whose default profile needs an extra that is not installed is refused with the
    install hint before any search (``check_default_profile=False``: opened anyway).

    Raises:
        ValidationError: ``busy_timeout`` is not a number of seconds in [0, 86400], or
            ``accelerator`` is not one of the three.
        MissingExtraError: ``accelerator="numpy"`` without numpy installed, or the default
            profile needs an extra that is not installed.
        StoreError: the path cannot be opened or is not a compatible HotMem store.
    """
    return MemoryStore(
        path,
        clock=clock,
        busy_timeout=busy_timeout,
        accelerator=accelerator,
        model_dir=model_dir,
        check_default_profile=check_default_profile,
    )
