"""Writing a store into a portable snapshot v2 package (``store.snapshot(path)``).

The memories are read in ``memory_id`` order inside one read transaction and streamed in
chunks: each chunk's members are compressed and hashed into an anonymous spool file, then the
package is assembled with the manifest first. It is written to a temporary file beside
``path`` and renamed into place, so an interrupted snapshot leaves no partial package (a
process killed outright leaves its temporary file, which the next snapshot to ``path``
removes: ``_files``). Memory use is one chunk.

The vectors of each further space of the store (``hotmem.store.spaces``) are read with the memories
(one join a space) and written after the chunk's ``hotmem-hash-v1`` vectors; a store without
further spaces runs exactly the query, and writes exactly the package, it always did.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import zlib
from collections.abc import Sequence
from contextlib import suppress
from pathlib import Path
from typing import BinaryIO

from hotmem.errors import SnapshotError
from hotmem.progress import ProgressCallback
from hotmem.records import record, replace
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
from hotmem.snapshot.chunking import chunks, further_spaces
from hotmem.snapshot.format import CentralEntry, MemberKind
from hotmem.snapshot.manifest import MemberMeta, SpaceMeta, content_digest, manifest_bytes
from hotmem.snapshot.profiles import ProfileSettings, profiles_of
from hotmem.store import spaces as store_spaces

__all__ = ["SnapshotReport", "store_files", "write_snapshot"]

_COPY_BLOCK = 1 << 20


@record
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


@record
class _Spooled:
    meta: MemberMeta
    method: int
    crc32: int
    compressed_size: int
    spool_offset: int


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
    files = store_files(connection)
    target = str(files[0]) if files else ":memory:"
    for index, (lines, blobs, further) in enumerate(chunks(connection, spaces, target)):
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
    profiles: ProfileSettings | None,
) -> None:
    """Write the package: manifest, data members, central directory, end record."""
    manifest = manifest_bytes(record_count, *_manifest_parts(spooled, spaces), profiles)
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
                spaces = further_spaces(connection)
                profiles = profiles_of(connection)
                spooled, record_count = _spool(connection, spool, spaces, progress)
            finally:
                if began:
                    connection.execute("COMMIT")
            _assemble(out, spool, spooled, record_count, spaces, profiles)
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
