"""Writing a store into a portable snapshot v2 package (``store.snapshot(path)``).

The memories are read in ``memory_id`` order inside one read transaction and streamed in
chunks: each chunk's members are compressed and hashed into an anonymous spool file, then the
package is assembled with the manifest first. It is written to a temporary file beside
``path`` and renamed into place, so an interrupted snapshot leaves no partial package (a
process killed outright leaves its temporary file, which the next snapshot to ``path``
removes: ``_files``). Memory use is one chunk.
"""

from __future__ import annotations

import hashlib
import os
import sqlite3
import zlib
from collections.abc import Iterator
from contextlib import suppress
from dataclasses import dataclass, replace
from operator import itemgetter
from pathlib import Path
from typing import BinaryIO

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
from hotmem.snapshot.manifest import MemberMeta, content_digest, manifest_bytes
from hotmem.snapshot.records import record_line

__all__ = ["SnapshotReport", "store_files", "write_snapshot"]

_SELECT = (
    "SELECT memory_id, identifier, fact, importance, tags, created_at, embedding "
    "FROM memories ORDER BY memory_id"
)
_COPY_BLOCK = 1 << 20
_EMBEDDING = itemgetter(6)


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


def _chunks(connection: sqlite3.Connection) -> Iterator[tuple[list[str], list[bytes]]]:
    """Record lines and vectors, chunk by chunk.

    A chunk ends after ``CHUNK_RECORDS`` records, or before a line that would take its text
    (lines and their newlines) past ``CHUNK_CHARS`` characters. A batch of rows that fits in
    one chunk is taken whole; only a batch that crosses the character limit goes row by row.
    """
    cursor = connection.execute(_SELECT)
    lines: list[str] = []
    blobs: list[bytes] = []
    chars = 0
    while batch := cursor.fetchmany(fmt.CHUNK_RECORDS - len(lines)):
        batch_lines = list(map(record_line, batch))
        batch_chars = sum(map(len, batch_lines)) + len(batch_lines)
        if chars + batch_chars <= fmt.CHUNK_CHARS:
            lines += batch_lines
            blobs += map(_EMBEDDING, batch)
            chars += batch_chars
        else:
            for line, row in zip(batch_lines, batch, strict=True):
                if lines and chars + len(line) + 1 > fmt.CHUNK_CHARS:
                    yield lines, blobs
                    lines, blobs, chars = [], [], 0
                lines.append(line)
                blobs.append(row[6])
                chars += len(line) + 1
        if len(lines) == fmt.CHUNK_RECORDS:
            yield lines, blobs
            lines, blobs, chars = [], [], 0
    if lines:
        yield lines, blobs


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
    connection: sqlite3.Connection, spool: BinaryIO, progress: ProgressCallback | None
) -> tuple[list[_Spooled], int]:
    """Write every compressed data member to ``spool``; return them and the record count."""
    spooled: list[_Spooled] = []
    record_count = 0
    total = connection.execute("SELECT count(*) FROM memories").fetchone()[0] if progress else 0
    for index, (lines, blobs) in enumerate(_chunks(connection)):
        records_name, vectors_name = fmt.expected_names(index)
        text = ("\n".join(lines) + "\n").encode("utf-8")
        members = [
            _pack(records_name, "records", text, len(lines)),
            _pack(vectors_name, "vectors", b"".join(blobs), len(lines)),
        ]
        for item, packed in members:
            spooled.append(replace(item, spool_offset=spool.tell()))
            spool.write(packed)
        record_count += len(lines)
        if progress is not None:
            progress(record_count, total)
    return spooled, record_count


def _assemble(out: BinaryIO, spool: BinaryIO, spooled: list[_Spooled], record_count: int) -> None:
    """Write the package: manifest, data members, central directory, end record."""
    manifest = manifest_bytes(record_count, [item.meta for item in spooled])
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
            written, a memory holds more than ``format.MAX_TAGS`` tags, or the store is too
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
                spooled, record_count = _spool(connection, spool, progress)
            finally:
                if began:
                    connection.execute("COMMIT")
            _assemble(out, spool, spooled, record_count)
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
    digest = content_digest((item.meta.name, item.meta.sha256) for item in spooled)
    return SnapshotReport(str(target), record_count, size, digest)
