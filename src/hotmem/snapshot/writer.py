"""Writing a store into a portable snapshot v2 package (``store.snapshot(path)``).

The memories are read in ``memory_id`` order inside one read transaction and streamed in
chunks: each chunk's members are compressed and hashed into an anonymous spool file, then the
package is assembled with the manifest first. It is written to a temporary file beside
``path`` and renamed into place, so an interrupted snapshot leaves no partial package (a
process killed outright leaves its temporary file, which the next snapshot to ``path``
removes: ``_files``). Memory use is one chunk.

The vectors of each further space of the store (``hotmem.spaces``) are read with the memories
(one join a space) and written after the chunk's ``hotmem-hash-v1`` vectors; a store without
further spaces runs exactly the query, and writes exactly the package, it always did.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import zlib
from collections.abc import Iterator, Sequence
from contextlib import suppress
from dataclasses import dataclass, replace
from operator import itemgetter
from pathlib import Path
from typing import Any, BinaryIO

from hotmem.embedding.hash_v1 import MODEL_NAME
from hotmem.errors import SnapshotError
from hotmem.progress import ProgressCallback
from hotmem.snapshot import format as fmt
from hotmem.snapshot._files import (
    RENAMES_OPEN_FILES,
    create_beside,
    gc_paused,
    output_refusal,
    remove_leftovers,
    store_file_names,
    temporary_file,
)
from hotmem.snapshot.format import CentralEntry, MemberKind
from hotmem.snapshot.manifest import MemberMeta, SpaceMeta, content_digest, manifest_bytes
from hotmem.snapshot.records import record_line
from hotmem.store import spaces as store_spaces

__all__ = ["SnapshotReport", "store_files", "write_snapshot"]

_SELECT = (
    "SELECT memory_id, identifier, fact, importance, tags, created_at, embedding "
    "FROM memories ORDER BY memory_id"
)
_COPY_BLOCK = 1 << 20
_EMBEDDING = itemgetter(6)
_FIRST_SPACE = 7  # the column of the first further space's vector


def select_sql(space_count: int) -> str:
    """The query of the memories, in ``memory_id`` order, with one vector column a space
    (``_SELECT`` itself without spaces); the space names are bound in order."""
    if not space_count:
        return _SELECT
    columns = "".join(f", s{i}.vector" for i in range(space_count))
    joins = "".join(
        f" LEFT JOIN space_vectors AS s{i} ON s{i}.space = ? AND s{i}.memory_rowid = m.rowid"
        for i in range(space_count)
    )
    return (
        "SELECT m.memory_id, m.identifier, m.fact, m.importance, m.tags, m.created_at, "
        f"m.embedding{columns} FROM memories AS m{joins} ORDER BY m.memory_id"
    )


def _further_spaces(connection: sqlite3.Connection) -> tuple[store_spaces.VectorSpace, ...]:
    """The store's spaces beyond hotmem-hash-v1, by name.

    Raises:
        SnapshotError: the store has more than the format allows, or one it cannot carry.
    """
    further = tuple(s for s in store_spaces.read_spaces(connection) if s.name != MODEL_NAME)
    if len(further) > fmt.MAX_SPACES:
        raise SnapshotError(
            f"the store has {len(further)} vector spaces beyond {MODEL_NAME!r}; the format "
            f"allows {fmt.MAX_SPACES} (drop some with store.drop_space)"
        )
    for space in further:
        if not fmt.SPACE_NAME.fullmatch(space.name) or space.model_id != space.name:
            raise SnapshotError(
                f"vector space {space.name!r} (model {space.model_id!r}) cannot be carried: a "
                f"package names a space by its model id ({fmt.SPACE_NAME.pattern})"
            )
        if space.dtype != fmt.VECTOR_DTYPE or not 0 < space.dimension <= fmt.MAX_DIMENSION:
            raise SnapshotError(
                f"vector space {space.name!r} holds {space.dimension} values of {space.dtype!r}; "
                f"a package carries 1 to {fmt.MAX_DIMENSION} values of {fmt.VECTOR_DTYPE!r}"
            )
    return further


def _checked_vectors(
    batch: list[Any], spaces: Sequence[store_spaces.VectorSpace]
) -> list[list[bytes]]:
    """Each space's vectors of ``batch``, in order.

    Raises:
        SnapshotError: a memory has no vector in a space (not yet indexed), or one of another
            size than the space's dimension.
    """
    columns: list[list[bytes]] = []
    for offset, space in enumerate(spaces):
        vectors = [row[_FIRST_SPACE + offset] for row in batch]
        width = space.vector_bytes
        for row, vector in zip(batch, vectors, strict=True):
            if vector is None or len(vector) != width:
                found = "no vector" if vector is None else f"a vector of {len(vector)} bytes"
                raise SnapshotError(
                    f"memory_id={row[0]!r} has {found} in the space {space.name!r} (expected "
                    f"{width} bytes); build the space first: hotmem reindex --space {space.name}"
                )
        columns.append(vectors)
    return columns


@dataclass(frozen=True, slots=True)
class SnapshotReport:
    """A package written by ``store.snapshot``.

    Attributes:
        path: the package file.
        record_count: memories in the package.
        size: bytes of the package file.
        content_digest: SHA-256 over the members' digests (``docs/snapshot-v2.md``).
    """

    path: str
    record_count: int
    size: int
    content_digest: str


@dataclass(frozen=True, slots=True)
class _Spooled:
    meta: MemberMeta
    method: int
    crc32: int
    compressed_size: int
    spool_offset: int


Chunk = tuple[list[str], list[bytes], list[list[bytes]]]


def _chunks(
    connection: sqlite3.Connection, spaces: Sequence[store_spaces.VectorSpace]
) -> Iterator[Chunk]:
    """Record lines, hash vectors and each further space's vectors, chunk by chunk.

    A chunk ends after ``CHUNK_RECORDS`` records (fewer when a space's vectors are so wide
    that a full chunk's would pass ``MAX_MEMBER_BYTES``), or before a line that would take its
    text (lines and their newlines) past ``CHUNK_CHARS`` characters. A batch of rows that fits
    in one chunk is taken whole; only a batch that crosses the character limit goes row by row.
    """
    widest = max((space.vector_bytes for space in spaces), default=0)
    limit = min(fmt.CHUNK_RECORDS, fmt.MAX_MEMBER_BYTES // widest) if widest else fmt.CHUNK_RECORDS
    cursor = connection.execute(select_sql(len(spaces)), [space.name for space in spaces])
    lines: list[str] = []
    blobs: list[bytes] = []
    further: list[list[bytes]] = [[] for _ in spaces]
    chars = 0
    while batch := cursor.fetchmany(limit - len(lines)):
        batch_lines = list(map(record_line, batch))
        batch_chars = sum(map(len, batch_lines)) + len(batch_lines)
        batch_further = _checked_vectors(batch, spaces)
        if chars + batch_chars <= fmt.CHUNK_CHARS:
            lines += batch_lines
            blobs += map(_EMBEDDING, batch)
            for column, vectors in zip(further, batch_further, strict=True):
                column += vectors
            chars += batch_chars
        else:
            for position, (line, row) in enumerate(zip(batch_lines, batch, strict=True)):
                if lines and chars + len(line) + 1 > fmt.CHUNK_CHARS:
                    yield lines, blobs, further
                    lines, blobs, chars = [], [], 0
                    further = [[] for _ in spaces]
                lines.append(line)
                blobs.append(row[6])
                for column, vectors in zip(further, batch_further, strict=True):
                    column.append(vectors[position])
                chars += len(line) + 1
        if len(lines) == limit:
            yield lines, blobs, further
            lines, blobs, chars = [], [], 0
            further = [[] for _ in spaces]
    if lines:
        yield lines, blobs, further


def _pack(name: str, kind: MemberKind, data: bytes, records: int) -> tuple[_Spooled, bytes]:
    """Compress and hash one member; the spool offset is filled in when it is written."""
    if len(data) > fmt.MAX_MEMBER_BYTES:
        raise SnapshotError(
            f"{name} would hold {len(data)} bytes; the format allows {fmt.MAX_MEMBER_BYTES} "
            "(a single memory this large cannot be snapshotted)"
        )
    method, level = fmt.compression_for(kind)
    packed = fmt.compress(data, level) if method == fmt.DEFLATED else data
    meta = MemberMeta(name, len(data), hashlib.sha256(data).hexdigest(), records)
    return _Spooled(meta, method, zlib.crc32(data), len(packed), 0), packed


def _spool(
    connection: sqlite3.Connection,
    spool: BinaryIO,
    spaces: Sequence[store_spaces.VectorSpace],
    progress: ProgressCallback | None,
) -> tuple[list[_Spooled], int]:
    """Write every compressed data member to ``spool`` in package order; return them and the
    record count."""
    spooled: list[_Spooled] = []
    record_count = 0
    total = connection.execute("SELECT count(*) FROM memories").fetchone()[0] if progress else 0
    for index, (lines, blobs, further) in enumerate(_chunks(connection, spaces)):
        records_name, vectors_name = fmt.expected_names(index)
        text = ("\n".join(lines) + "\n").encode("utf-8")
        members = [
            _pack(records_name, "records", text, len(lines)),
            _pack(vectors_name, "vectors", b"".join(blobs), len(lines)),
        ]
        members += [
            _pack(fmt.space_member_name(space.name, index), "space", b"".join(vectors), len(lines))
            for space, vectors in zip(spaces, further, strict=True)
        ]
        for item, packed in members:
            spooled.append(replace(item, spool_offset=spool.tell()))
            spool.write(packed)
        record_count += len(lines)
        if progress is not None:
            progress(record_count, total)
    return spooled, record_count


def _manifest_parts(
    spooled: list[_Spooled], spaces: Sequence[store_spaces.VectorSpace]
) -> tuple[list[MemberMeta], list[SpaceMeta]]:
    """The manifest's ``members`` and ``spaces`` of members spooled in package order."""
    per_chunk = 2 + len(spaces)
    metas = [item.meta for item in spooled]
    members = [meta for i, meta in enumerate(metas) if i % per_chunk < 2]
    described = [
        SpaceMeta(
            space.name,
            space.model_id,
            space.digest,
            space.dimension,
            space.dtype,
            tuple(metas[2 + offset :: per_chunk]),
        )
        for offset, space in enumerate(spaces)
    ]
    return members, described


def _assemble(
    out: BinaryIO,
    spool: BinaryIO,
    spooled: list[_Spooled],
    record_count: int,
    spaces: Sequence[store_spaces.VectorSpace],
) -> None:
    """Write the package: manifest, data members, central directory, end record."""
    manifest = manifest_bytes(record_count, *_manifest_parts(spooled, spaces))
    size = len(manifest)
    entries = [CentralEntry(fmt.MANIFEST_NAME, fmt.STORED, zlib.crc32(manifest), size, size, 0)]
    out.write(fmt.local_header(entries[0]))
    out.write(manifest)
    for item in spooled:
        entry = CentralEntry(
            item.meta.name, item.method, item.crc32, item.compressed_size, item.meta.size,
            out.tell(),
        )  # fmt: skip
        entries.append(entry)
        out.write(fmt.local_header(entry))
        spool.seek(item.spool_offset)
        remaining = item.compressed_size
        while remaining:
            block = spool.read(min(remaining, _COPY_BLOCK))
            out.write(block)
            remaining -= len(block)
    directory = b"".join(map(fmt.central_header, entries))
    directory_offset = out.tell()
    if len(entries) > fmt.MAX_MEMBERS or directory_offset + len(directory) > fmt.MAX_OFFSET:
        raise SnapshotError(
            f"the package would need {len(entries)} members and "
            f"{directory_offset + len(directory)} bytes; format v2 allows {fmt.MAX_MEMBERS} "
            f"members and {fmt.MAX_OFFSET} bytes (a ZIP without ZIP64)"
        )
    out.write(directory)
    out.write(fmt.end_record(len(entries), len(directory), directory_offset))


def store_files(connection: sqlite3.Connection) -> list[Path]:
    """The files of the store behind ``connection``: its database and SQLite's side files."""
    rows = connection.execute("PRAGMA database_list").fetchall()
    database = next((row[2] for row in rows if row[1] == "main"), "")
    return store_file_names(database) if database else []  # nothing for an in-memory store


def write_snapshot(
    connection: sqlite3.Connection,
    path: str | os.PathLike[str],
    *,
    overwrite: bool = False,
    progress: ProgressCallback | None = None,
) -> SnapshotReport:
    """Write the store behind ``connection`` to the package file ``path``.

    Args:
        connection: an open HotMem store's connection (``MemoryStore.connection``).
        path: the package to write; its directory must exist.
        overwrite: replace an existing file at ``path`` (refused otherwise).
        progress: called with (records written, records in the store) after each chunk.

    A temporary package another snapshot to ``path`` left behind when it was killed is
    removed first (``_files.remove_leftovers``).

    Raises:
        SnapshotError: ``path`` exists (without ``overwrite``), exists and is not a regular
            file (a directory, symbolic link, FIFO, socket or device), is the store itself or
            one of its SQLite files (under any name), its directory is missing or cannot be
            written, a memory holds more than ``format.MAX_TAGS`` tags, a memory has no vector
            in a space of the store (build it first: ``store.reindex``), or the store is too
            large for the format.
    """
    target = Path(path)
    parent = target.absolute().parent
    if not parent.is_dir():
        raise SnapshotError(f"cannot write {str(target)!r}: directory {str(parent)!r} is missing")
    protected = store_files(connection)
    refusal = output_refusal(target, protected)
    if refusal is not None:
        raise SnapshotError(refusal)
    if target.exists() and not overwrite:
        raise SnapshotError(f"{str(target)!r} already exists; pass overwrite=True to replace it")
    remove_leftovers(target, ".partial")
    try:
        descriptor, temporary = create_beside(target, ".partial")
    except OSError as exc:
        raise SnapshotError(f"cannot write {str(target)!r}: {exc}") from None
    began = not connection.in_transaction
    try:
        with (
            gc_paused(),
            os.fdopen(descriptor, "w+b") as out,
            temporary_file(parent) as spool,
        ):
            if began:
                # One read transaction: the package is one consistent state of the store.
                connection.execute("BEGIN")
            try:
                spaces = _further_spaces(connection)
                spooled, record_count = _spool(connection, spool, spaces, progress)
            finally:
                if began:
                    connection.execute("COMMIT")
            _assemble(out, spool, spooled, record_count, spaces)
            out.flush()
            os.fsync(out.fileno())
            size = out.tell()
            # Again, just before the rename: nothing may have taken the name meanwhile.
            refusal = output_refusal(target, protected)
            if refusal is not None:
                raise SnapshotError(refusal)
            if RENAMES_OPEN_FILES:  # renamed while still locked (see _files)
                os.replace(temporary, target)
        if not RENAMES_OPEN_FILES:
            os.replace(temporary, target)
    except OSError as exc:  # a full disk, a read-only directory
        with suppress(FileNotFoundError):
            os.unlink(temporary)
        raise SnapshotError(f"cannot write {str(target)!r}: {exc}") from None
    except BaseException:
        with suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    # ``spooled`` is in package order, the order of the content digest.
    digest = content_digest((item.meta.name, item.meta.sha256) for item in spooled)
    return SnapshotReport(str(target), record_count, size, digest)
