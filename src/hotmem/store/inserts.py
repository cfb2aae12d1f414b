"""Inserting memories batch by batch inside a write transaction the caller holds.

From the first batch of at least ``BULK_ROWS`` memories on, a row in ``hotmem_fts_deferred``
turns the per-row FTS trigger off for this transaction's rows alone
(``schema.CREATE_INSERT_TRIGGER``); every row inserted since is indexed at the end of the
write in one ``INSERT ... SELECT`` and the row deleted (:class:`Indexing`). One statement
makes one run of FTS5 segments: a statement a batch (196 for ``hotmem import`` of 100,000
lines) made as many small segments for FTS5 to merge as it went, 0.45 s against 0.30 s. A
smaller batch (a single ``add``) is inserted row by row, each row's rowid read from its cursor:
no statement but the inserts themselves. A refused batch names the clashing id before the
transaction is rolled back (see ``_rejected``).

A ``Tally`` carries an add's progress: (memories done, total) as each space's embedder
finishes a model run and as each batch is inserted.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterable, Iterator, Mapping
from itertools import islice

from hotmem.errors import DuplicateMemoryError, ValidationError
from hotmem.fields import shown
from hotmem.progress import ProgressCallback, monotonic
from hotmem.store import lexical_index, schema, spaces

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (hotmem.records)
if TYPE_CHECKING:
    from typing import TypeVar

    from hotmem.embedding.registry import Embedder
    from hotmem.models import Memory


__all__ = [
    "ADD_BATCH",
    "BULK_ROWS",
    "Indexing",
    "SpaceEmbedders",
    "SpaceRows",
    "Tally",
    "batches",
    "insert_batches",
    "memory_items",
    "rows_of",
    "space_rows_of",
]

if TYPE_CHECKING:
    T = TypeVar("T")
#: Memories validated, embedded and inserted at a time by ``add_many`` and ``add_stream``.
ADD_BATCH = 10_000
BULK_ROWS = lexical_index.BULK_ROWS  # batches at least this large: indexed in one statement
_INSERT_MEMORY = (
    "INSERT INTO memories (memory_id, identifier, fact, importance, tags, created_at, embedding) "
    "VALUES (?, ?, ?, ?, ?, ?, ?)"
)
Row = tuple[str, str, str, float, str, str, bytes]
#: ``(space name, embedder)`` of every space but hotmem-hash-v1.
SpaceEmbedders = tuple[tuple[str, "Embedder"], ...]
#: ``(space name, the batch's vectors in order)``.
SpaceRows = list[tuple[str, list[bytes]]]


class Tally:
    """The progress of one add: ``report`` (only ever forward, ``hotmem.progress.monotonic``)
    with (memories done, ``total``); ``done`` counts the memories of the batches inserted."""

    __slots__ = ("done", "report", "total")

    report: ProgressCallback
    total: int | None
    done: int

    def __init__(self, report: ProgressCallback, total: int | None, done: int = 0) -> None:
        self.report = report
        self.total = total
        self.done = done

    @classmethod
    def of(cls, progress: ProgressCallback | None, total: int | None) -> Tally:
        """A tally reporting to ``progress`` (``None``: nowhere), starting with (0, total)."""
        tally = cls(monotonic(progress), total)
        tally.report(0, total)
        return tally

    def within(self, size: int, space: int, spaces: int) -> ProgressCallback:
        """The embedder's progress on a batch of ``size`` memories in the ``space``-th of
        ``spaces`` spaces, as the add's: each space is an equal share of the batch."""

        def forward(embedded: int, _size: int | None) -> None:
            self.report(self.done + (space * size + embedded) // spaces, self.total)

        return forward

    def inserted(self, size: int) -> None:
        """A batch of ``size`` memories is in."""
        self.done += size
        self.report(self.done, self.total)


class Indexing:
    """The word index's share of one write transaction: ``after`` is the largest rowid before
    the first bulk batch (``None`` until one), past which every row waits for :meth:`finish`.

    Rows of this transaction only: only rows past ``after`` are inserted while the trigger is
    off, the transaction neither deletes nor rewrites them (an import refuses an id it has
    added already), and other connections never see ``hotmem_fts_deferred``'s row."""

    __slots__ = ("after",)

    after: int | None

    def __init__(self) -> None:
        self.after = None

    def defer(self, connection: sqlite3.Connection, after: int) -> None:
        """Turn the trigger off from rowid ``after`` on, unless it is off already."""
        if self.after is None:
            connection.execute(schema.DEFER_FTS, (after,))
            self.after = after

    def finish(self, connection: sqlite3.Connection) -> None:
        """Index every row past ``after`` in one statement and turn the trigger back on."""
        if self.after is not None:
            connection.execute(schema.INDEX_ROWS_AFTER, (self.after,))
            connection.execute(schema.RESUME_FTS)
            self.after = None


def memory_items(items: Iterable[T]) -> Iterable[T]:
    """``items`` when it is an iterable of memories (``add_many``, ``add_stream``).

    Raises:
        ValidationError: it is not iterable, or is text, bytes or one mapping (whose
            characters or keys would be taken for memories).
    """
    if isinstance(items, Mapping):
        found = "one mapping (add one memory with store.add, or pass a list of them)"
    elif isinstance(items, str | bytes | bytearray) or not isinstance(items, Iterable):
        found = f"{type(items).__name__} {shown(items)}"
    else:
        return items
    raise ValidationError(
        f"expected an iterable of memories (Memory objects or mappings), found {found}"
    )


def batches(items: Iterable[T], size: int) -> Iterator[list[T]]:
    """``items`` in lists of ``size`` (the last one shorter), read lazily."""
    iterator = iter(items)
    while batch := list(islice(iterator, size)):
        yield batch


def rows_of(batch: list[Memory]) -> list[Row]:
    """The rows of ``batch``, embedded (at once with numpy when imported: ``memory_rows``)."""
    from hotmem.store.rows import memory_row, memory_rows  # the embedding, with writes

    return [memory_row(batch[0])] if len(batch) == 1 else memory_rows(batch)


def space_rows_of(
    batch: list[Memory], embedders: SpaceEmbedders, tally: Tally | None = None
) -> SpaceRows:
    """The vectors of ``batch`` in every space of ``embedders`` (each embedder batches),
    reported to ``tally`` as the embedders go."""
    facts = [memory.fact for memory in batch]
    return [
        (
            name,
            embedder.embed_many(
                facts,
                progress=None if tally is None else tally.within(len(facts), k, len(embedders)),
            ),
        )
        for k, (name, embedder) in enumerate(embedders)
    ]


def insert_batches(
    connection: sqlite3.Connection,
    first: list[Memory],
    rows: list[Row],
    rest: Iterator[list[Memory]],
    *,
    embedders: SpaceEmbedders = (),
    vectors: SpaceRows | None = None,
    tally: Tally | None = None,
    indexing: Indexing | None = None,
) -> int:
    """Insert ``first`` (already embedded as ``rows``, and in the spaces of ``embedders`` as
    ``vectors``) and every batch of ``rest``, with their vectors in every space; return how
    many memories were inserted. ``tally`` is told as each batch is embedded and inserted.
    The caller has looked into the word index (``lexical_index.probe``). Without
    ``indexing``, the call is the whole write: it indexes its bulk rows at the end, and a
    bulk write that at least doubled the index merges it (``lexical_index.settle``); with
    one (an import's, over many calls), the caller does both once its write is done.

    Raises:
        DuplicateMemoryError: a memory_id already exists, or repeats within the call.
        ValidationError: the store refused a row for another constraint.
    """
    start: int | None = None  # the largest rowid before the call, once the first batch is in
    count = 0
    batch: list[Memory] | None = first
    whole = indexing is None
    indexing = Indexing() if indexing is None else indexing
    if vectors is None:
        vectors = space_rows_of(first, embedders, tally)
    while batch is not None:
        after = _insert_batch(connection, batch, rows, start, vectors, indexing)
        start = after if start is None else start
        count += len(rows)
        if tally is not None:
            tally.inserted(len(rows))
        batch = next(rest, None)
        rows = rows_of(batch) if batch is not None else []
        vectors = space_rows_of(batch, embedders, tally) if batch is not None else []
    if whole:
        indexing.finish(connection)
        if start is not None:
            lexical_index.settle(connection, count, start)
    return count


def _largest_rowid(connection: sqlite3.Connection) -> int:
    return int(connection.execute("SELECT coalesce(max(rowid), 0) FROM memories").fetchone()[0])


def _insert_rows(
    connection: sqlite3.Connection,
    batch: list[Memory],
    rows: list[Row],
    start: int | None,
    indexing: Indexing,
) -> int:
    """Insert ``rows``; return the largest rowid before them. Rows get consecutive rowids
    after the largest one (INTEGER PRIMARY KEY, no deletes inside the transaction): batch item
    k is rowid after + 1 + k."""
    if len(rows) >= BULK_ROWS:
        after = _largest_rowid(connection)
        indexing.defer(connection, after)
        try:
            connection.executemany(_INSERT_MEMORY, rows)
        except sqlite3.IntegrityError as exc:
            raise _rejected(connection, exc, batch, start, after) from None
        return after
    # Row by row, each rowid from its cursor (executemany leaves lastrowid unset): a single
    # add runs its INSERT and nothing else.
    before: int | None = None
    for row in rows:
        try:
            rowid = connection.execute(_INSERT_MEMORY, row).lastrowid
        except sqlite3.IntegrityError as exc:
            # A refused first row leaves nothing of this batch in: the largest is the one before.
            before = _largest_rowid(connection) if before is None else before
            raise _rejected(connection, exc, batch, start, before) from None
        if before is None and rowid is not None:
            before = rowid - 1
    return _largest_rowid(connection) - len(rows) if before is None else before


def _insert_batch(
    connection: sqlite3.Connection,
    batch: list[Memory],
    rows: list[Row],
    start: int | None,
    vectors: SpaceRows,
    indexing: Indexing,
) -> int:
    """Insert one batch with its CJK grams and its vectors in every space of ``vectors``;
    return the largest rowid before it."""
    after = _insert_rows(connection, batch, rows, start, indexing)
    lexical_index.index_grams(connection, ((m.memory_id, m.fact) for m in batch))
    for name, values in vectors:
        spaces.insert_vectors(
            connection, name, zip(range(after + 1, after + 1 + len(values)), values, strict=True)
        )
    return after


def _rejected(
    connection: sqlite3.Connection,
    exc: sqlite3.IntegrityError,
    batch: list[Memory],
    start: int | None,
    after: int,
) -> ValidationError:
    """Why the store refused ``batch``: the first id that clashes, or the constraint.

    Runs before the rollback (no savepoint: one per batch made bulk writes 40 % slower), so the
    batch's rows before the refused one are still there, each at rowid ``after + 1 + k``. The
    first item whose id belongs to another row clashes: with the store if that row's rowid is
    at most ``start`` (the largest before the call; ``None``: this is the call's first batch,
    so ``after``), else with an earlier item of this call.
    """
    start = after if start is None else start
    if "memories.memory_id" not in str(exc):
        return ValidationError(f"memory rejected by the store: {exc}")
    for k, memory in enumerate(batch):
        row = connection.execute(
            "SELECT rowid FROM memories WHERE memory_id = ?", (memory.memory_id,)
        ).fetchone()
        if row is None or row[0] == after + 1 + k:
            continue  # inserted as itself before the refused row
        if row[0] <= start:
            return DuplicateMemoryError(
                f"memory_id={memory.memory_id!r} already exists in the store"
            )
        return DuplicateMemoryError(
            f"memory_id={memory.memory_id!r} appears more than once in one batch"
        )
    return ValidationError(f"memory rejected by the store: {exc}")
