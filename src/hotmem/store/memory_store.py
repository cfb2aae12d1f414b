"""The HotMem store: a SQLite database of memories with their vectors and an FTS5 index.

A store is shared by processes (``docs/concurrency.md``): every write is one ``BEGIN
IMMEDIATE`` transaction, every read path runs in one read transaction (:meth:`reading`), and
every ``sqlite3.Error`` reaches the caller as a :class:`~hotmem.errors.StoreError`.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import sqlite3
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from types import TracebackType
from typing import TYPE_CHECKING, Literal, get_args

from hotmem.embedding.registry import install_hint
from hotmem.errors import MemoryNotFoundError, MissingExtraError, ValidationError
from hotmem.fields import lookup_text, shown
from hotmem.models import Clock, Memory, make_memory, memory_from_mapping, system_clock
from hotmem.progress import ProgressCallback
from hotmem.store import changes, inserts, lexical_index, schema, spaces, sqlerrors
from hotmem.store import reindex as reindexing
from hotmem.store import setup as storage
from hotmem.store.inserts import ADD_BATCH
from hotmem.store.rows import MEMORY_COLUMNS, memory_from_row
from hotmem.store.space_methods import VectorSpaces

if TYPE_CHECKING:
    from hotmem.snapshot.writer import SnapshotReport

__all__ = ["MemoryStore", "open_store"]

_SELECT_MEMORY = f"SELECT {MEMORY_COLUMNS} FROM memories"


def _checked_timeout(busy_timeout: object) -> float:
    if (
        isinstance(busy_timeout, bool)
        or not isinstance(busy_timeout, int | float)
        or not math.isfinite(busy_timeout)
        or not 0 <= busy_timeout <= 86_400
    ):
        raise ValidationError(
            f"busy_timeout must be a number of seconds in [0, 86400]; found {shown(busy_timeout)}"
        )
    return float(busy_timeout)


#: How a store scans vectors: ``"auto"`` uses numpy when it is importable (the ``fast`` extra),
#: ``"numpy"`` requires it, ``"off"`` never uses it. Results are identical either way.
Accelerator = Literal["auto", "numpy", "off"]
_ACCELERATORS = get_args(Accelerator)


def _accelerated(accelerator: object) -> bool:
    if accelerator not in _ACCELERATORS:
        raise ValidationError(
            f"accelerator must be one of {', '.join(map(repr, _ACCELERATORS))}; "
            f"found accelerator={shown(accelerator)}"
        )
    if accelerator == "off":
        return False
    available = importlib.util.find_spec("numpy") is not None  # found, not imported
    if accelerator == "numpy" and not available:
        raise MissingExtraError(
            "accelerator='numpy' needs the 'fast' extra, which is not installed (missing "
            f"module: numpy); install it with {install_hint('fast')}",
            extra="fast",
            missing=("numpy",),
        )
    return available


_DEFAULT_PROFILE_SQL = "SELECT value FROM hotmem_meta WHERE key = 'default_profile'"
_DEFAULT_SPACES_SQL = "SELECT value FROM hotmem_meta WHERE key = 'default_profile_spaces'"
#: The profile a store searches with until another is made its default.
DEFAULT_PROFILE = "default"


class MemoryStore(VectorSpaces):
    """A HotMem store. Use :func:`open_store` to get one; it is a context manager."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        clock: Clock = system_clock,
        busy_timeout: float = storage.BUSY_TIMEOUT,
        accelerator: Accelerator = "auto",
        model_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        self._path = os.fspath(path)
        self._model_dir = None if model_dir is None else os.fspath(model_dir)
        self._clock = clock
        self._busy_timeout = _checked_timeout(busy_timeout)
        self._accelerated = _accelerated(accelerator)
        self._accelerator: Accelerator = accelerator
        self._connection = storage.connect(self._path, busy_timeout=self._busy_timeout)
        try:
            storage.setup(self._connection, self._path, busy_timeout=self._busy_timeout)
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
        memory = make_memory(
            fact,
            identifier=identifier,
            importance=importance,
            tags=tags,
            memory_id=memory_id,
            created_at=created_at,
            clock=self._clock,
        )
        self._insert([memory], 1)
        return memory

    def add_many(self, memories: Iterable[Memory | Mapping[str, object]]) -> list[Memory]:
        """Add many memories in one transaction: all of them, or none; return them as stored.

        Each item is a :class:`Memory` or a mapping with the fields of one. Items are
        validated, embedded and inserted ``ADD_BATCH`` at a time, so only the returned list
        grows with the input; :meth:`add_stream` does not keep even that.

        Raises:
            ValidationError: an item is invalid (its position is named); nothing is written.
            DuplicateMemoryError: an id repeats or already exists; nothing is written.
            StoreError: the store cannot be written; nothing is written.
        """
        added: list[Memory] = []
        self._insert(self._validated(memories, added), ADD_BATCH)
        return added

    def add_stream(
        self, memories: Iterable[Memory | Mapping[str, object]], *, batch_size: int = ADD_BATCH
    ) -> int:
        """Add memories from any iterable in one transaction, all or none; return how many.

        Like :meth:`add_many`, but nothing is kept once inserted: memory stays flat whatever
        the number of memories (``hotmem import`` of a million lines uses it). The iterable is
        consumed ``batch_size`` items at a time; from the second batch on, validation and
        embedding run while the store's write lock is held, so other writers wait (up to their
        busy timeout) for a long stream to finish. An exception raised by the iterable rolls
        the whole stream back.

        Raises:
            ValidationError: an item is invalid (its position is named), or ``batch_size`` is
                not a positive integer; nothing is written.
            DuplicateMemoryError: an id repeats or already exists; nothing is written.
            StoreError: the store cannot be written; nothing is written.
        """
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ValidationError(f"batch_size must be a positive integer; found {batch_size!r}")
        return self._insert(self._validated(memories, None), batch_size)

    def _validated(
        self, items: Iterable[Memory | Mapping[str, object]], keep: list[Memory] | None
    ) -> Iterator[Memory]:
        for position, item in enumerate(items):
            try:
                if isinstance(item, Memory):
                    # Re-validate: a Memory can be built by hand with any values.
                    memory = memory_from_mapping(item.to_dict())
                else:
                    memory = memory_from_mapping(item, clock=self._clock)
            except ValidationError as exc:
                raise type(exc)(f"memory #{position}: {exc}") from None
            if keep is not None:
                keep.append(memory)
            yield memory

    def _insert(self, memories: Iterable[Memory], batch_size: int) -> int:
        """Insert every memory in one transaction; the first batch is embedded before it."""
        batches = inserts.batches(memories, batch_size)
        first = next(batches, None)
        if first is None:
            return 0
        with self.reading() as connection:
            embedders = reindexing.space_embedders(connection, self._path, self._model_dir)
        rows = inserts.rows_of(first)  # embed before taking the write lock
        vectors: inserts.SpaceRows | None = inserts.space_rows_of(first, embedders)
        with self._writing() as connection:
            now = reindexing.space_embedders(connection, self._path, self._model_dir)
            if [name for name, _ in now] != [name for name, _ in embedders]:
                vectors = None  # another process changed the spaces: embed again, locked
            return inserts.insert_batches(
                connection, first, rows, batches, embedders=now, vectors=vectors
            )

    def delete(self, memory_id: str) -> None:
        """Delete one memory.

        Raises:
            ValidationError: ``memory_id`` is not a string of valid Unicode.
            MemoryNotFoundError: no memory has this id.
            StoreError: the store cannot be written.
        """
        memory_id = lookup_text("memory_id", memory_id)
        with self._writing() as connection:
            cursor = connection.execute("DELETE FROM memories WHERE memory_id = ?", (memory_id,))
            if cursor.rowcount == 0:
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
            for row in self._connection.execute(sql, parameters):
                yield memory_from_row(row, self._path)

    def __iter__(self) -> Iterator[Memory]:
        return self.iter_memories()

    @property
    def default_profile(self) -> str:
        """The name of the profile a search runs when it names none (``"default"`` unless
        ``hotmem.set_default_profile`` chose another; kept in the store, not in its packages).

        Raises:
            StoreError: the store cannot be read.
        """
        with self.reading() as connection:
            row = connection.execute(_DEFAULT_PROFILE_SQL).fetchone()
        return DEFAULT_PROFILE if row is None else str(row[0])

    @property
    def default_profile_spaces(self) -> tuple[str, ...]:
        """The vector spaces the store's default profile searches (so that none is dropped).

        Raises:
            StoreError: the store cannot be read.
        """
        with self.reading() as connection:
            row = connection.execute(_DEFAULT_SPACES_SQL).fetchone()
        if row is None:
            return ()
        names = json.loads(row[0])
        return tuple(str(name) for name in names) if isinstance(names, list) else ()

    def record_default_profile(self, name: str, spaces: Sequence[str]) -> None:
        """Record ``name`` as the store's default profile, which searches ``spaces`` (each
        checked to be a space of the store). ``hotmem.set_default_profile`` checks the name
        and calls this; the store does not know the profiles.

        Raises:
            ValidationError: the store lacks one of ``spaces`` (the message says how to build
                it).
            StoreError: the store cannot be written.
        """
        for space in spaces:
            self.space(space)
        with self._writing() as connection:
            connection.executemany(
                "INSERT OR REPLACE INTO hotmem_meta (key, value) VALUES (?, ?)",
                (
                    ("default_profile", name),
                    ("default_profile_spaces", json.dumps(list(spaces))),
                ),
            )

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

    def snapshot(
        self,
        path: str | os.PathLike[str],
        *,
        overwrite: bool = False,
        progress: ProgressCallback | None = None,
    ) -> SnapshotReport:
        """Write the store to a portable snapshot v2 package (``docs/snapshot-v2.md``).

        The package is byte-identical for the same memories, whatever their insertion order.
        ``progress`` is called with (records written, records in the store) after each chunk
        (``hotmem.Progress`` shows it on a terminal).

        Raises:
            SnapshotError: ``path`` exists (without ``overwrite``) or cannot be written.
        """
        # Imported here: the writer depends on the store, not the reverse (no import cycle).
        from hotmem.snapshot.writer import write_snapshot

        return write_snapshot(self._connection, path, overwrite=overwrite, progress=progress)

    def rebuild_lexical_index(self) -> None:
        """Rebuild the word and CJK indexes from the facts, in one write transaction.

        The indexes are derived data; this repairs them when :meth:`check_integrity` reports a
        problem with either. Searches in other processes see the old or the new index.

        Raises:
            StoreError: the store cannot be written (locked, read-only).
        """
        with self._writing() as connection:
            lexical_index.rebuild(connection)
            connection.execute(changes.EVERY_MEMORY_CHANGED)

    def check_integrity(self) -> tuple[str, ...]:
        """What is wrong with the store's file, its lexical indexes and its vector spaces' vectors;
        empty when sound.

        Runs SQLite's ``PRAGMA integrity_check``, FTS5's ``integrity-check`` of both lexical
        indexes (with content comparison for the word index, which also finds a memory
        missing from it or indexed with other text), compares the CJK gram index with the
        grams of every fact, and looks for vectors of no space, of no memory or of the wrong
        size (``spaces.problems``). (FTS5's check is a write statement: it waits for other
        writers like a write does.)

        Raises:
            StoreError: the check itself cannot run (the store is locked or read-only).
        """
        problems: tuple[str, ...] = ()
        checks = (
            ("", "PRAGMA integrity_check"),
            ("full-text index: ", schema.CHECK_FTS_INTEGRITY),
            ("CJK index: ", lexical_index.CHECK_CJK_INTEGRITY),
        )
        for label, sql in checks:
            try:
                if label:
                    self._connection.execute(sql)
                else:
                    found = tuple(str(row[0]) for row in self._connection.execute(sql))
                    problems += () if found == ("ok",) else found
            except sqlite3.DatabaseError as exc:
                name = getattr(exc, "sqlite_errorname", "") or ""
                if name.startswith(("SQLITE_BUSY", "SQLITE_READONLY", "SQLITE_LOCKED")):
                    raise sqlerrors.store_error(
                        exc, self._path, "check", self._busy_timeout
                    ) from None
                problems += (f"{label}{exc}",)
        with self.reading() as connection:
            vectors = spaces.problems(connection)
        return problems + lexical_index.differences(self._connection) + vectors


def open_store(
    path: str | os.PathLike[str],
    *,
    clock: Clock = system_clock,
    busy_timeout: float = storage.BUSY_TIMEOUT,
    accelerator: Accelerator = "auto",
    model_dir: str | os.PathLike[str] | None = None,
) -> MemoryStore:
    """Open (creating if needed) the HotMem store at ``path``; ``":memory:"`` is allowed.

    Only ``path`` (and, beside it, SQLite's ``-wal`` and ``-shm`` files while the store is
    open) is touched. ``clock`` supplies ``created_at`` for memories added without one.
    ``busy_timeout`` is how many seconds a write waits for another connection's write lock.
    ``accelerator`` chooses the vector scan: ``"auto"`` (numpy when installed, the ``fast``
    extra), ``"numpy"`` or ``"off"``; search results are bit-identical whichever runs.
    ``model_dir`` is passed to every embedder the store loads (``hotmem.get_embedder``).
    Several processes may open one store at once (``docs/concurrency.md``); a store left
    half set up by a killed process is completed, and one of an older schema migrated.

    Raises:
        ValidationError: ``busy_timeout`` is not a number of seconds in [0, 86400], or
            ``accelerator`` is not one of the three.
        MissingExtraError: ``accelerator="numpy"`` without numpy installed.
        StoreError: the path cannot be opened or is not a compatible HotMem store.
    """
    return MemoryStore(
        path,
        clock=clock,
        busy_timeout=busy_timeout,
        accelerator=accelerator,
        model_dir=model_dir,
    )
