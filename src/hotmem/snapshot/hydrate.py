"""Hydrating a snapshot package into a clean target store, atomically.

Hydration is one streaming pass through :class:`~hotmem.snapshot.reader.PackageReader`, so it
applies exactly the checks of ``verify_snapshot``. Rows go into a new SQLite file beside the
target (bulk insert with the package's vectors, one transaction, no journal: the file is
discarded on any failure). Only when the whole package verified is the FTS index rebuilt from
the rows, the triggers created, the file synced and renamed onto the target. Each further vector
space is carried, rebuilt with this HotMem's embedder or left out, as decided from the manifest
before anything is written (``space_plan``). An interrupted or
failed hydration therefore leaves the target exactly as it was, and no temporary file behind
(a process killed outright leaves its file, which the next hydration of the same target
removes: ``_files``).
"""

from __future__ import annotations

import json
import os
import sqlite3
import struct
from collections.abc import Collection, Iterator, Sequence
from contextlib import suppress
from operator import itemgetter
from pathlib import Path
from typing import Any

from hotmem.embedding.hash_v1 import MODEL_NAME, VECTOR_BYTES, embed_many_bytes
from hotmem.errors import HydrationError, VerificationError
from hotmem.progress import ProgressCallback
from hotmem.records import record
from hotmem.snapshot._files import (
    RENAMES_OPEN_FILES,
    create_beside,
    gc_paused,
    remove_leftovers,
    sync_directory,
)
from hotmem.snapshot.profiles import ProfileSettings, hydrated_profiles, write_profiles
from hotmem.snapshot.reader import PackageReader
from hotmem.snapshot.records import Column
from hotmem.snapshot.report import Chunk, VerificationReport
from hotmem.snapshot.space_plan import SpaceChoice, plan_spaces
from hotmem.snapshot.target import SIDE_FILES, check_target
from hotmem.snapshot.vector_checks import SAMPLE_STRIDE, EmbedMany
from hotmem.store import lexical_index, schema
from hotmem.store import setup as storage
from hotmem.store import spaces as store_spaces
from hotmem.store.settings import DEFAULT_PROFILE

__all__ = ["HydrationReport", "hydrate"]

_INSERT = (
    "INSERT INTO memories (memory_id, identifier, fact, importance, tags, created_at, embedding) "
    "VALUES (?, ?, ?, ?, ?, ?, ?)"
)
# json.dumps' own C string encoder (no ASCII escaping).
_quote = json.encoder.encode_basestring
Gram = tuple[int, str]  # (rowid, the CJK grams of its fact)


@record
class HydrationReport:
    """A completed hydration.

    Attributes:
        path: the package read.
        target: the store written.
        record_count: memories hydrated.
        content_digest: the package's content digest, as verified.
        spaces: ``(space, action)`` for each further vector space of the package, in order:
            ``"carry"`` (its vectors loaded as they are), ``"reindex"`` (rebuilt with this
            HotMem's embedder) or ``"drop"`` (left out).
        default_profile: the store's default profile, the package's (``"default"`` for a
            package without one, or when the space it searches was dropped).
        kept_profiles: the names of the profiles of its own the package's store kept.
    """

    path: str
    target: str
    record_count: int
    content_digest: str
    spaces: tuple[tuple[str, str], ...] = ()
    default_profile: str = DEFAULT_PROFILE
    kept_profiles: tuple[str, ...] = ()


class _TagsText(dict[tuple[str, ...], str]):
    """tags -> the store's text for them, as ``db`` writes it: ``json.dumps(list(tags),
    ensure_ascii=False)``, from the same string encoder. Filled on a miss; tags repeat."""

    def __missing__(self, tags: tuple[str, ...]) -> str:
        text = "[" + ", ".join(map(_quote, tags)) + "]"
        self[tags] = text
        return text


_TAGS_TEXT = _TagsText()
_TAGS_CACHE_LIMIT = 1 << 16
_VECTOR = struct.Struct(f"{VECTOR_BYTES}s")


def _stored_columns(columns: list[Column]) -> list[Column]:
    """What hydration keeps of a decoded group: the six columns, ``tags`` as the store's text
    (one string a record, however many tags it holds)."""
    if len(_TAGS_TEXT) > _TAGS_CACHE_LIMIT:
        _TAGS_TEXT.clear()
    memory_ids, identifiers, facts, importances, tags, created = columns
    tags_text = tuple(map(_TAGS_TEXT.__getitem__, map(tuple, tags)))
    return [memory_ids, identifiers, facts, importances, tags_text, created]


def _rows(chunk: Chunk) -> Iterator[tuple[Any, ...]]:
    """The chunk's rows for ``_INSERT``, built column-wise by C-level ``map`` and ``zip``."""
    memory_ids, identifiers, facts, importances, tags_text, created = chunk.columns
    vectors = map(itemgetter(0), _VECTOR.iter_unpack(chunk.vectors))
    # REAL affinity stores an integer importance (JSON 1) as 1.0, exactly as the store does.
    return zip(
        memory_ids, identifiers, facts, importances, tags_text, created, vectors, strict=True
    )


def _failed(report: VerificationReport) -> VerificationError:
    count = len(report.problems)
    return VerificationError(
        f"package {report.path!r} failed verification with {count} problem"
        f"{'s' if count != 1 else ''}; nothing was written; first: {report.problems[0]}",
        report,
    )


# Secondary indexes are built once after the load, from a sort, instead of row by row.
_SECONDARY_INDEXES = (
    "SELECT name, sql FROM sqlite_master "
    "WHERE type = 'index' AND tbl_name = 'memories' AND sql IS NOT NULL ORDER BY name"
)


def _open_empty(temporary: Path) -> tuple[sqlite3.Connection, list[str]]:
    """A new store without triggers or secondary indexes, in a transaction; their SQL."""
    connection = storage.connect(temporary)
    # No journal and no syncs: this file is renamed into place only once complete.
    connection.execute("PRAGMA journal_mode = OFF")
    connection.execute("PRAGMA synchronous = OFF")
    storage.initialise(connection, with_triggers=False)
    connection.execute("BEGIN")
    indexes = connection.execute(_SECONDARY_INDEXES).fetchall()
    for name, _ in indexes:
        connection.execute(f'DROP INDEX "{name}"')
    return connection, [sql for _, sql in indexes]


def _finish(connection: sqlite3.Connection, indexes: list[str], grams: list[Gram]) -> None:
    for sql in indexes:  # the schema's own text, so the store's schema is unchanged
        connection.execute(sql)
    # The lexical indexes are derived: built by this code from the facts loaded, whatever
    # tokenizer the package's source used (docs/snapshot-v2.md, "Derived indexes"); the CJK
    # grams as each chunk was loaded.
    lexical_index.rebuild(connection, grams)
    connection.execute("COMMIT")
    connection.executescript(schema.CREATE_FTS_TRIGGERS)


def _hash_many(facts: Sequence[str]) -> list[bytes]:
    # at once with numpy when the process has it (the evaluator does): the same bytes
    return embed_many_bytes(facts)


def _recomputers(
    choices: list[SpaceChoice], *, every_space: bool
) -> tuple[list[tuple[str, EmbedMany] | None], list[int]]:
    """What hydration recomputes, and how many records apart: every hash-v1 vector (it costs
    about as much as the rest of a hydration: docs/benchmarks.md); every vector of each
    carried space with ``every_space``, else a sample (``SAMPLE_STRIDE``) of those whose
    embedder was loaded (``plan_spaces(sample=True)``: the model's extra is installed)."""
    recomputers: list[tuple[str, EmbedMany] | None] = [(MODEL_NAME, _hash_many)]
    strides = [1]
    for choice in choices:
        embedder = choice.embedder if choice.action == "carry" else None
        recomputers.append(
            None if embedder is None else (choice.space.model_id, embedder.embed_many)
        )
        strides.append(1 if every_space else SAMPLE_STRIDE)
    return recomputers, strides


def _load_spaces(
    connection: sqlite3.Connection, chunk: Chunk, first_rowid: int, choices: list[SpaceChoice]
) -> None:
    """Write the chunk's vectors of every kept space, keyed by the rows just inserted."""
    for choice, vectors in zip(choices, chunk.spaces, strict=True):
        if choice.action == "drop":
            continue
        width = choice.space.vector_bytes
        if choice.action == "reindex" and choice.embedder is not None:
            width = choice.embedder.dimension * 4
            vectors = b"".join(choice.embedder.embed_many(chunk.columns[2]))
        store_spaces.insert_packed(connection, choice.space.name, first_rowid, vectors, width)


def _register_spaces(connection: sqlite3.Connection, choices: list[SpaceChoice]) -> None:
    for choice in choices:
        if choice.action == "carry":
            store_spaces.write_space(connection, choice.space.space)
        elif choice.action == "reindex" and choice.embedder is not None:
            store_spaces.write_space(connection, store_spaces.space_of(choice.embedder))


def _build(
    temporary: Path,
    reader: PackageReader,
    choices: list[SpaceChoice],
    *,
    recompute_vectors: bool,
    profiles: ProfileSettings,
) -> VerificationReport:
    """Load every verified chunk into a new store at ``temporary``; raise if any check fails.

    Loading stops at the first problem, but reading goes on, so the report lists them all.
    (A writer thread for SQLite was measured and dropped: the sqlite3 module takes the GIL
    back for every row, so it overlapped nothing and cost a few percent.)
    """
    try:
        connection, indexes = _open_empty(temporary)
    except sqlite3.Error as exc:
        raise HydrationError(f"cannot create {str(temporary)!r}: {exc}") from None
    recomputers, strides = _recomputers(choices, every_space=recompute_vectors)
    loaded = 0
    grams: list[Gram] = []
    try:
        _register_spaces(connection, choices)
        carried = [i for i, choice in enumerate(choices) if choice.action == "carry"]
        for chunk in reader.chunks(keep=_stored_columns, keep_spaces=carried):
            reader.recompute_vectors(
                chunk, chunk.columns[0], chunk.columns[2], recomputers, strides
            )
            if reader.ok:
                connection.executemany(_INSERT, _rows(chunk))
                # Rows go into an empty table in order: their rowids are 1, 2, 3, ...
                _load_spaces(connection, chunk, loaded + 1, choices)
                grams += lexical_index.chunk_grams(loaded + 1, chunk.columns[2])
                loaded += len(chunk.columns[0])
            del chunk  # before the next chunk is read, and before the FTS index is built
        report = reader.report()
        if not report.ok:
            raise _failed(report)
        last = connection.execute("SELECT coalesce(max(rowid), 0) FROM memories").fetchone()[0]
        if last != loaded:  # never seen; the space vectors would be keyed wrongly
            raise HydrationError(f"expected rowids 1 to {loaded} in {temporary}, found {last}")
        write_profiles(connection, profiles)
        _finish(connection, indexes, grams)
    except sqlite3.Error as exc:
        raise HydrationError(f"cannot build the store from {reader.path!r}: {exc}") from None
    finally:
        connection.close()
    with open(temporary, "rb") as built:
        os.fsync(built.fileno())
    return report


def hydrate(
    path: str | os.PathLike[str],
    target: str | os.PathLike[str],
    *,
    recompute_vectors: bool = False,
    reindex: Collection[str] = (),
    drop_spaces: Collection[str] = (),
    model_dir: str | os.PathLike[str] | None = None,
    progress: ProgressCallback | None = None,
) -> HydrationReport:
    """Verify the package at ``path`` and hydrate it into the store file ``target``.

    The target must not exist, or be an empty store (see :func:`check_target`). The new store
    is built beside it and renamed onto it only when every check passed, so on any failure,
    interruption included, the target is untouched and no temporary file remains. (A process
    killed outright leaves its temporary file; the next hydration of the same target removes
    it, ``_files.remove_leftovers``.)

    Args:
        path: the package file.
        target: the store file to create.
        recompute_vectors: re-embed every fact and refuse the package unless each vector is
            its fact's embedding in every carried space too (slower). Its ``hotmem-hash-v1``
            vector is recomputed and compared bit for bit on every hydration, and every
            vector must be finite and of unit length (``hotmem.embedding.vectors``).
        reindex: further spaces to rebuild with this HotMem's embedder instead of carrying
            their vectors (needed when this HotMem's model differs from the package's).
        drop_spaces: further spaces to leave out of the target.
        model_dir: the model directory for a model embedder (``hotmem.get_embedder``).
        progress: called with (records loaded, records declared) after each chunk.

    A further space is carried as it is only when this HotMem's embedder of its model id has
    the package's digest, dimension and dtype (``hotmem.embedder_identity``: the model files
    hashed, the model itself loaded only with ``recompute_vectors`` or ``reindex``); otherwise
    hydration refuses the package before writing anything, unless the space is in ``reindex``
    or ``drop_spaces``.

    Raises:
        SnapshotError: the package cannot be opened.
        VerificationError: the package failed verification (``error.report`` lists why),
            including, with ``recompute_vectors``, a vector that is not its fact's embedding.
        HydrationError: the target holds data, cannot be written or is no file path (``""``,
            ``":memory:"``), or a further space cannot
            be carried, reindexed or dropped as asked (the message names the space and the
            options); nothing was changed.
    """
    named = os.fspath(target)
    if named in ("", ":memory:"):  # no file: Path("") is ".", and ":memory:" would be a file
        found = "an empty string" if not named else "SQLite's name of an in-memory database"
        raise HydrationError(f"cannot hydrate {named!r}: expected a store file path, found {found}")
    destination = Path(target)
    check_target(destination)
    with gc_paused(), PackageReader(path, progress=progress) as reader:
        try:
            manifest = reader.manifest()
        except OSError as exc:
            raise HydrationError(f"cannot read package {reader.path!r}: {exc}") from None
        # A manifest that cannot be read fails verification below, with every reason listed.
        choices = (
            []
            if manifest is None
            else plan_spaces(
                manifest.spaces,
                reindex=reindex,
                drop=drop_spaces,
                model_dir=model_dir,
                recompute_vectors=recompute_vectors,
                sample=True,
            )
        )
        profiles = hydrated_profiles(manifest, choices)
        remove_leftovers(destination, ".hydrating", SIDE_FILES)
        try:
            descriptor, temporary = create_beside(destination, ".hydrating")
        except OSError as exc:
            raise HydrationError(f"cannot write beside {str(destination)!r}: {exc}") from None
        locked = [descriptor]  # closed at the end, after the rename where the system allows
        try:
            try:
                report = _build(
                    temporary,
                    reader,
                    choices,
                    recompute_vectors=recompute_vectors,
                    profiles=profiles,
                )
                check_target(destination)  # again: nothing may have appeared meanwhile
                if not RENAMES_OPEN_FILES:
                    os.close(locked.pop())
                # Renamed while the lock on the file is still held (see _files).
                os.replace(temporary, destination)
            except OSError as exc:  # a full disk, a read-only directory, an unreadable package
                raise HydrationError(f"cannot hydrate {str(destination)!r}: {exc}") from None
        except BaseException:
            for leftover in (temporary, *(Path(f"{temporary}{s}") for s in SIDE_FILES)):
                with suppress(FileNotFoundError):
                    os.unlink(leftover)
            raise
        finally:
            for still_open in locked:
                os.close(still_open)
    sync_directory(destination.absolute().parent)
    digest = report.content_digest or ""  # a verified package always has its digest
    actions = tuple((choice.space.name, choice.action) for choice in choices)
    kept = tuple(sorted(profiles.kept))
    return HydrationReport(
        report.path, str(destination), report.record_count, digest, actions, profiles.default, kept
    )
