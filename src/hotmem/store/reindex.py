"""Building the vectors of a space: the embedders a store's spaces need, and reindexing.

An add embeds every space of the store (``MemoryStore._insert`` with :func:`space_embedders`);
:func:`reindex` fills a space for the memories that lack a vector in it, a batch at a time:
each batch is read in one read transaction, embedded outside any lock, and written in one
write transaction, so a reindex killed between batches keeps the batches already written and
the next reindex goes on from there (resumable). A rebuild first removes the space's vectors
and records the embedder's digest, in one transaction, then fills the space the same way.
Progress is reported as the embedder's model runs finish, not only per batch: a batch of long
texts takes seconds.
"""

from __future__ import annotations

import os
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager

from hotmem.embedding.hash_v1 import MODEL_NAME
from hotmem.embedding.registry import Embedder, check_threads, get_embedder, install_hint
from hotmem.errors import MissingExtraError, StoreError, ValidationError
from hotmem.progress import ProgressCallback, monotonic
from hotmem.store import changes, spaces
from hotmem.store.spaces import REINDEX_BATCH, VectorSpace

__all__ = ["REINDEX_BATCH", "embedder_for", "reindex", "space_embedders"]


Transaction = Callable[[], AbstractContextManager[sqlite3.Connection]]
ModelDir = str | os.PathLike[str] | None


def _how_to_rebuild(name: str) -> str:
    return (
        f"rebuild it with `hotmem reindex --space {name} --rebuild`, or drop it with "
        f"`hotmem reindex --space {name} --drop`"
    )


def embedder_for(
    space: VectorSpace, store: str, model_dir: ModelDir, *, threads: int | None = None
) -> Embedder:
    """The embedder that makes the vectors of ``space``, checked against what it records;
    ``threads`` as ``get_embedder``'s (``None``: every CPU of the process).

    Raises:
        ValidationError: ``threads`` is not a positive integer.
        MissingExtraError: the embedder needs an extra that is not installed.
        StoreError: the space's model is unknown to this HotMem, or the embedder's digest,
            dimension or dtype differ from the space's.
        EmbedderError: the model files are missing or fail their digest check.
    """
    check_threads(threads)  # a bad count is the caller's error, not an unknown model
    try:
        embedder = get_embedder(space.model_id, model_dir=model_dir, threads=threads)
    except ValidationError:
        raise StoreError(
            f"store {store!r} keeps the vector space {space.name!r} of model "
            f"{space.model_id!r}, which this HotMem does not know; {_how_to_rebuild(space.name)}"
        ) from None
    except MissingExtraError as exc:
        raise MissingExtraError(
            f"store {store!r} keeps the vector space {space.name!r}, whose embedder needs the "
            f"{exc.extra!r} extra, which is not installed (missing modules: "
            f"{', '.join(exc.missing)}); install it with {install_hint(exc.extra)}, or drop "
            f"the space with `hotmem reindex --space {space.name} --drop`",
            extra=exc.extra,
            missing=exc.missing,
        ) from None
    found = spaces.space_of(embedder)
    if found != space:
        raise StoreError(
            f"store {store!r}: the vector space {space.name!r} was built with digest="
            f"{space.digest[:16]}... dimension={space.dimension} dtype={space.dtype!r}, "
            f"but this HotMem's embedder has digest={found.digest[:16]}... "
            f"dimension={found.dimension} dtype={found.dtype!r}; {_how_to_rebuild(space.name)}"
        )
    return embedder


def space_embedders(
    connection: sqlite3.Connection, store: str, model_dir: ModelDir
) -> tuple[tuple[str, Embedder], ...]:
    """``(space name, embedder)`` of every space of the store but hotmem-hash-v1 (whose
    vectors are written with the memories), by name.

    Raises:
        MissingExtraError, StoreError, EmbedderError: as :func:`embedder_for`.
    """
    return tuple(
        (space.name, embedder_for(space, store, model_dir))
        for space in spaces.read_spaces(connection)
        if space.name != MODEL_NAME
    )


#: A batch's memories as read: rowid -> (memory_id, fact).
Batch = dict[int, tuple[object, object]]


def _pending(reading: Transaction, name: str, batch_size: int) -> Iterator[Batch]:
    """Batches of the memories lacking a vector in the space ``name``, each read in its own
    read transaction, rowids ascending (each batch starts after the last one)."""
    after = 0
    while True:
        with reading() as connection:
            rows = connection.execute(
                "SELECT rowid, memory_id, fact FROM memories AS m WHERE rowid > ? AND NOT "
                "EXISTS (SELECT 1 FROM space_vectors AS v WHERE v.space = ? AND "
                "v.memory_rowid = m.rowid) ORDER BY rowid LIMIT ?",
                (after, name, batch_size),
            ).fetchall()
        if not rows:
            return
        after = rows[-1][0]
        yield {int(rowid): (memory_id, fact) for rowid, memory_id, fact in rows}


def _still_theirs(connection: sqlite3.Connection, batch: Batch) -> set[int]:
    """The rowids of ``batch`` that still hold the memory and fact that were embedded.

    A memory deleted since the batch was read gets no vector; nor does one added meanwhile
    under its rowid (SQLite gives the newest memory's rowid again once it is deleted), which
    has its own vector already, written by its add: a vector is written for its memory only.
    """
    rowids = list(batch)
    rows = connection.execute(
        "SELECT rowid, memory_id, fact FROM memories "
        f"WHERE rowid IN ({','.join('?' * len(rowids))})",
        rowids,
    )
    return {int(rowid) for rowid, *kept in rows if tuple(kept) == batch[int(rowid)]}


def _count_missing(connection: sqlite3.Connection, name: str) -> int:
    total = int(connection.execute("SELECT count(*) FROM memories").fetchone()[0])
    return total - spaces.vector_count(connection, name)


def reindex(
    reading: Transaction,
    writing: Transaction,
    space: VectorSpace,
    embedder: Embedder,
    *,
    store: str,
    rebuild: bool = False,
    batch_size: int = REINDEX_BATCH,
    progress: ProgressCallback | None = None,
) -> int:
    """Write the vectors of ``space`` that are missing (all of them with ``rebuild``); return
    how many were written.

    ``progress`` is called with (embedded, to embed): (0, to embed) first, then as the
    embedder's model runs finish; a batch's vectors are written right after its last run. Both
    counts only grow (a memory added meanwhile is embedded too, and counted in both; one
    deleted meanwhile is counted, not written), and the last call has them equal.

    Raises:
        ValidationError: ``batch_size`` is not a positive integer.
        StoreError: the space was dropped or rebuilt by another process meanwhile, or the
            store cannot be written.
    """
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ValidationError(f"batch_size must be a positive integer; found {batch_size!r}")
    if rebuild:
        with writing() as connection:
            connection.execute("DELETE FROM space_vectors WHERE space = ?", (space.name,))
            spaces.write_space(connection, space)
            connection.execute(changes.EVERY_MEMORY_CHANGED)
    with reading() as connection:
        total = _count_missing(connection, space.name)
    written = embedded = 0
    report = monotonic(progress)
    report(0, total)
    for batch in _pending(reading, space.name, batch_size):
        facts = [str(fact) for _, fact in batch.values()]
        vectors = embedder.embed_many(facts, progress=_shifted(report, embedded, total))
        embedded += len(facts)
        report(embedded, max(total, embedded))
        with writing() as connection:
            now = {found.name: found for found in spaces.read_spaces(connection)}
            if now.get(space.name) != space:
                raise StoreError(
                    f"store {store!r}: the vector space {space.name!r} was dropped or rebuilt "
                    "by another process during this reindex"
                )
            alive = _still_theirs(connection, batch)
            rows = [(r, v) for r, v in zip(batch, vectors, strict=True) if r in alive]
            spaces.insert_vectors(connection, space.name, rows)
            changes.log_changed(connection, [rowid for rowid, _ in rows])
        written += len(rows)
    return written


def _shifted(report: ProgressCallback, before: int, total: int) -> ProgressCallback:
    """``report`` of the whole reindex, fed by the embedder's progress within one batch."""

    def within(done: int, _batch: int | None) -> None:
        report(before + done, max(total, before + done))

    return within
