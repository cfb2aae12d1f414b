"""Keeping a store sound: its snapshot, rebuilding its lexical indexes, checking its integrity.

The snapshot writer is a plug-in of the store, imported by name when a snapshot is written: the
writer depends on the store (``hotmem.snapshot``), not the reverse, so there is no import cycle.
"""

from __future__ import annotations

import importlib
import os
import sqlite3
from contextlib import AbstractContextManager

from hotmem.progress import ProgressCallback
from hotmem.store import changes, image, lexical_index, schema, spaces, sqlerrors
from hotmem.store.image import Produce

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (hotmem.records)
if TYPE_CHECKING:
    from hotmem.snapshot.writer import SnapshotReport

__all__ = ["Upkeep"]

_WRITER = "hotmem.snapshot.writer"


class Upkeep:
    """The upkeep of a store (mixed into ``MemoryStore``, which provides the rest)."""

    _path: str
    _busy_timeout: float
    _connection: sqlite3.Connection

    if TYPE_CHECKING:  # provided by MemoryStore

        def reading(self) -> AbstractContextManager[sqlite3.Connection]: ...

        def _writing(self) -> AbstractContextManager[sqlite3.Connection]: ...

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
        writer = importlib.import_module(_WRITER)  # a plug-in, by name (module docstring)
        report: SnapshotReport = writer.write_snapshot(
            self._connection, path, overwrite=overwrite, progress=progress
        )
        return report

    def write_index_image(self, produce: Produce, onto: bytes | None = None) -> bool:
        """Replace the search index's image the store keeps with what ``produce`` makes or,
        with ``onto``, add its postings to the image of that header (``image.py``), waiting
        for no other writer; whether it was written (``False``: the store was busy,
        read-only, or holds another image).

        Raises:
            StoreError: SQLite failed otherwise (the message says why).
        """
        with sqlerrors.translated(self._path, "write to", self._busy_timeout):
            return image.write_image(self._connection, produce, onto)

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

    def check_integrity(self, *, recompute_vectors: bool = False) -> tuple[str, ...]:
        """What is wrong with the store's file, its lexical indexes and its vector spaces' vectors;
        empty when sound.

        Runs SQLite's ``PRAGMA integrity_check``, FTS5's ``integrity-check`` of both lexical
        indexes (with content comparison for the word index, which also finds a memory
        missing from it or indexed with other text), compares the CJK gram index with the
        grams of every fact, and looks for vectors of no space, of no memory or of the wrong
        size (``spaces.problems``), and for vectors that are not finite and of unit length
        (``spaces.unit_problems``, naming each memory); with ``recompute_vectors`` also
        recomputes every ``hotmem-hash-v1`` vector (``spaces.hash_problems``: about 20 µs a
        memory: 2.4 s at 100,000, against 0.5 s for the rest). (FTS5's check is a write
        statement: it waits for other writers like a write does.)

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
            vectors = spaces.problems(connection) + spaces.unit_problems(connection)
            if recompute_vectors:
                vectors += spaces.hash_problems(connection)
        return problems + lexical_index.differences(self._connection) + vectors
