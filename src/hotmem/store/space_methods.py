"""The vector-space methods of the store (``MemoryStore`` inherits them; ``memory_store.py``).

A store keeps one or more vector spaces (``spaces.py``); these methods list, add, reindex and
drop them; a search index reads a space's vectors itself (``hotmem.retrieval.index``). Each
runs in the store's transactions: one read transaction per read, one write transaction per
write (per batch for a reindex, ``reindex.py``).
"""

from __future__ import annotations

import os
import sqlite3
from contextlib import AbstractContextManager

from hotmem.embedding.hash_v1 import MODEL_NAME
from hotmem.errors import ValidationError
from hotmem.progress import ProgressCallback
from hotmem.store import changes, lexical_index, spaces
from hotmem.store.settings import default_spaces
from hotmem.store.spaces import REINDEX_BATCH, VectorSpace

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing (hotmem.records)
if TYPE_CHECKING:
    from hotmem.store.inserts import SpaceEmbedders

__all__ = ["VectorSpaces"]


class VectorSpaces:
    """The vector spaces of a store (mixed into ``MemoryStore``, which provides the rest)."""

    _path: str
    _model_dir: str | None
    #: ``(space name, embedder)`` of the spaces but hotmem-hash-v1 that this store's last
    #: write saw (``None``: no write yet); an add embeds in them before taking the write lock.
    _written_embedders: SpaceEmbedders | None = None
    #: ``PRAGMA data_version`` and the connection's ``total_changes`` after this store's last
    #: add, which read the spaces and looked into the word index: while no other connection
    #: commits, nothing writes through this one (``store.connection``) and the store makes no
    #: other write (``MemoryStore._writing`` clears it), both stay and the next add skips the
    #: read and the look (SQLite changes ``data_version`` for each commit of another
    #: connection, never for its own; ``total_changes`` counts this connection's rows).
    _seen_version: tuple[int, int] | None = None

    if TYPE_CHECKING:  # provided by MemoryStore

        def reading(self) -> AbstractContextManager[sqlite3.Connection]: ...

        def _writing(self) -> AbstractContextManager[sqlite3.Connection]: ...

        @property
        def default_profile(self) -> str: ...

        @property
        def default_profile_spaces(self) -> tuple[str, ...]: ...

    @property
    def spaces(self) -> tuple[VectorSpace, ...]:
        """The store's vector spaces: ``hotmem-hash-v1`` first, then by name.

        Raises:
            StoreError: the store cannot be read.
        """
        with self.reading() as connection:
            return spaces.read_spaces(connection)

    def space(self, name: str) -> VectorSpace:
        """The vector space ``name`` of the store.

        Raises:
            ValidationError: the store has no such space (the message says how to build it).
            StoreError: the store cannot be read.
        """
        for found in self.spaces:
            if found.name == name:
                return found
        raise ValidationError(
            f"store {self._path!r} has no vector space {name!r} (it has "
            f"{', '.join(s.name for s in self.spaces)}); build it with "
            f"`hotmem reindex --space {name}` or store.add_space({name!r})"
        )

    def vector_counts(self) -> dict[str, int]:
        """How many memories have a vector in each space, by space name.

        Raises:
            StoreError: the store cannot be read.
        """
        with self.reading() as connection:
            return {
                found.name: spaces.vector_count(connection, found.name)
                for found in spaces.read_spaces(connection)
            }

    def _last_embedders(self) -> SpaceEmbedders:
        """The embedders of the spaces the last write saw: the ones an add embeds in before
        taking the write lock (before the store's first write, read in a read transaction).

        Raises:
            MissingExtraError, StoreError, EmbedderError: as ``reindex.space_embedders``.
        """
        if self._written_embedders is None:
            with self.reading() as connection:
                return self._space_embedders(connection)
        return self._written_embedders

    def _write_embedders(self, connection: sqlite3.Connection) -> SpaceEmbedders:
        """The embedders of the spaces, read inside the write transaction on ``connection``,
        kept for the next add.

        Raises:
            MissingExtraError, StoreError, EmbedderError: as ``reindex.space_embedders``.
        """
        self._written_embedders = self._space_embedders(connection)
        return self._written_embedders

    def _add_embedders(
        self, connection: sqlite3.Connection, seen: tuple[int, int] | None
    ) -> tuple[SpaceEmbedders, int]:
        """The embedders of the spaces an add writes in, inside its write transaction, and
        the ``data_version`` to keep once it is in: the last add's while the version and the
        connection's changes are still ``seen`` (after that add), else read again, after a
        look into the word index, since a damaged index refuses an add as it refuses search
        (the CJK index is looked into when a fact has grams).

        Raises:
            sqlite3.DatabaseError: the word index is damaged (the caller's ``sqlerrors``).
            MissingExtraError, StoreError, EmbedderError: as ``reindex.space_embedders``.
        """
        version = int(connection.execute("PRAGMA data_version").fetchone()[0])
        now = (version, connection.total_changes)
        if now == seen and self._written_embedders is not None:
            return self._written_embedders, version
        embedders = self._write_embedders(connection)
        lexical_index.probe(connection, ("memories_fts",))
        return embedders, version

    def _space_embedders(self, connection: sqlite3.Connection) -> SpaceEmbedders:
        """``reindex.space_embedders``: none, without loading the embedder registry, for a
        store of hotmem-hash-v1 alone (whose vectors are written with the memories)."""
        if all(space.name == MODEL_NAME for space in spaces.read_spaces(connection)):
            return ()
        from hotmem.store import reindex as reindexing

        return reindexing.space_embedders(connection, self._path, self._model_dir)

    def _model_dir_of(self, model_dir: str | os.PathLike[str] | None) -> str | None:
        return self._model_dir if model_dir is None else os.fspath(model_dir)

    def add_space(
        self,
        model_id: str,
        *,
        model_dir: str | os.PathLike[str] | None = None,
        progress: ProgressCallback | None = None,
        batch_size: int = REINDEX_BATCH,
        threads: int | None = None,
    ) -> VectorSpace:
        """Register the vector space of the embedder ``model_id`` and build it (embed every
        memory, :meth:`reindex`, with the same ``progress``, ``batch_size`` and ``threads``);
        a space already there is completed, not rebuilt.

        Raises:
            ValidationError: ``model_id`` is not a registered embedder, or is hotmem-hash-v1's;
                ``threads`` or ``batch_size`` is not a positive integer.
            MissingExtraError: the embedder needs an extra that is not installed.
            EmbedderError: the model files are missing or fail their digest check.
            StoreError: the store already has this space built by another model file
                (rebuild it with :meth:`reindex`), or cannot be written.
        """
        from hotmem.embedding.registry import get_embedder
        from hotmem.store import reindex as reindexing

        directory = self._model_dir_of(model_dir)
        if model_id == MODEL_NAME:
            raise ValidationError(f"every store has the vector space {MODEL_NAME!r} already")
        space = spaces.space_of(get_embedder(model_id, model_dir=directory, threads=threads))
        with self._writing() as connection:
            known = {found.name: found for found in spaces.read_spaces(connection)}
            if known.get(model_id, space) != space:
                reindexing.embedder_for(known[model_id], self._path, directory)  # raises
            spaces.write_space(connection, space)
        self.reindex(
            model_id,
            model_dir=directory,
            progress=progress,
            batch_size=batch_size,
            threads=threads,
        )
        return space

    def reindex(
        self,
        space: str,
        *,
        rebuild: bool = False,
        model_dir: str | os.PathLike[str] | None = None,
        progress: ProgressCallback | None = None,
        batch_size: int = REINDEX_BATCH,
        threads: int | None = None,
    ) -> int:
        """Embed the memories lacking a vector in ``space`` (every memory with ``rebuild``,
        which also records the embedder's digest), one write transaction per ``batch_size``
        memories; return how many vectors were written.

        Resumable: a reindex interrupted between batches keeps what it wrote, and the next one
        goes on from there. ``progress`` is called with (embedded, to embed) as the embedder's
        model runs finish, only ever forward, ending with both equal. The embedder runs on
        ``threads`` CPU threads (``None``: every CPU of the process); the vectors are the same
        bytes whatever the count.

        Raises:
            ValidationError: the store has no such space, it is hotmem-hash-v1 (whose vectors
                are written with the memories), or ``batch_size`` or ``threads`` is not a
                positive integer.
            MissingExtraError: the embedder needs an extra that is not installed.
            StoreError: without ``rebuild``, the space was built by another model file; or the
                store cannot be written.
        """
        from hotmem.embedding.registry import get_embedder
        from hotmem.store import reindex as reindexing

        found = self.space(space)
        if found.name == MODEL_NAME:
            raise ValidationError(
                f"the vectors of {MODEL_NAME!r} are written with their memories; "
                "there is nothing to reindex"
            )
        directory = self._model_dir_of(model_dir)
        if rebuild:
            embedder = get_embedder(found.model_id, model_dir=directory, threads=threads)
            found = spaces.space_of(embedder)
        else:
            embedder = reindexing.embedder_for(found, self._path, directory, threads=threads)
        return reindexing.reindex(
            self.reading,
            self._writing,
            found,
            embedder,
            store=self._path,
            rebuild=rebuild,
            batch_size=batch_size,
            progress=progress,
        )

    def drop_space(self, name: str) -> None:
        """Remove the vector space ``name`` and its vectors, in one transaction.

        Raises:
            ValidationError: the store has no such space, it is hotmem-hash-v1, or the store's
                default profile searches it.
            StoreError: the store cannot be written.
        """
        self.space(name)
        if name == MODEL_NAME:
            raise ValidationError(f"the vector space {MODEL_NAME!r} cannot be dropped")
        with self._writing() as connection:
            # Checked in the write transaction: a default set meanwhile is seen (issue 35).
            if name in default_spaces(connection):
                raise ValidationError(
                    f"the store's default profile {self.default_profile!r} searches the "
                    f"vector space {name!r}; make another profile the default first "
                    "(hotmem.set_default_profile(store, 'default'))"
                )
            spaces.delete_space(connection, name)
            connection.execute(changes.EVERY_MEMORY_CHANGED)
