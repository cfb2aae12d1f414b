"""Reading a snapshot's ZIP container strictly, one member at a time, never extracting.

The end record, the central directory and every local header must be byte for byte what the
writer produces for the same members (``format``); a field that differs is reported
with its expected and found value. A member is read only after its declared sizes passed the
limits, and deflate output stops one byte past the declared size, so a decompression bomb
costs at most that much memory and a lying size is caught without reading on.
"""

from __future__ import annotations

import hashlib
import zlib
from collections.abc import Iterator
from typing import BinaryIO

from hotmem.records import record, replace
from hotmem.snapshot import format as fmt
from hotmem.snapshot.format import CentralEntry, SnapshotProblem

__all__ = ["BLOCK_BYTES", "LoadedMember", "MemberStream", "load_member", "read_directory"]

MAX_NAME_BYTES = 255
#: Bytes a streamed member is read and inflated in at a time.
BLOCK_BYTES = 2**20


@record
class LoadedMember:
    """A member's uncompressed bytes and SHA-256, or ``None`` when it could not be read."""

    data: bytes | None
    sha256: str | None
    problems: tuple[SnapshotProblem, ...] = ()


def _field_diff(
    names: tuple[str, ...], expected: tuple[object, ...], found: tuple[object, ...]
) -> tuple[str, str]:
    pairs = [(n, e, f) for n, e, f in zip(names, expected, found, strict=True) if e != f]
    wanted = ", ".join(f"{n}={e!r}" for n, e, _ in pairs)
    return wanted, ", ".join(f"{n}={f!r}" for n, _, f in pairs)


def _read_at(file: BinaryIO, offset: int, size: int) -> bytes:
    file.seek(offset)
    return file.read(size)


def read_directory(
    file: BinaryIO, size: int
) -> tuple[list[CentralEntry] | None, list[SnapshotProblem]]:
    """Parse and check the end record, central directory and local headers.

    Returns:
        The entries in file order (``None`` when the directory cannot be read at all) and the
        problems found.
    """
    problems: list[SnapshotProblem] = []
    end_size = fmt.END_STRUCT.size
    if size < end_size:
        problems.append(SnapshotProblem("package", "container", "a ZIP file", f"{size} bytes"))
        return None, problems
    end = _read_at(file, size - end_size, end_size)
    fields = fmt.END_STRUCT.unpack(end)
    count, directory_size, directory_offset = fields[4], fields[5], fields[6]
    # The directory must end where the end record starts.
    expected_offset = min(max(size - end_size - directory_size, 0), fmt.MAX_OFFSET)
    expected_end = fmt.end_record(count, directory_size, expected_offset)
    if end != expected_end or expected_offset + directory_size + end_size != size:
        expected, found = _field_diff(fmt.END_FIELDS, fmt.END_STRUCT.unpack(expected_end), fields)
        if not expected:
            expected, found = f"a {size}-byte file", f"directory_size={directory_size}"
        expected += " in the end record of a complete package"
        problems.append(SnapshotProblem("package", "container", expected, found))
        return None, problems
    if directory_size > count * (fmt.CENTRAL_STRUCT.size + MAX_NAME_BYTES):
        expected = f"a central directory of at most {MAX_NAME_BYTES}-byte names"
        problems.append(SnapshotProblem("package", "limit", expected, f"{directory_size} bytes"))
        return None, problems
    directory = _read_at(file, directory_offset, directory_size)
    entries: list[CentralEntry] = []
    position, offset = 0, 0
    for _ in range(count):
        entry, position = _central_entry(directory, position, offset, problems)
        if entry is None:
            return None, problems
        entries.append(entry)
        offset = entry.next_offset
    if position != len(directory) or offset != directory_offset:
        expected = f"members up to offset {directory_offset}, then {len(directory)} bytes"
        found = f"members up to offset {offset}, then {position} bytes"
        problems.append(SnapshotProblem("package", "container", expected, found))
    for entry in entries:
        _check_local_header(file, entry, problems)
    return entries, problems


def _central_entry(
    directory: bytes, position: int, offset: int, problems: list[SnapshotProblem]
) -> tuple[CentralEntry | None, int]:
    size = fmt.CENTRAL_STRUCT.size
    header = directory[position : position + size]
    if len(header) < size:
        problems.append(
            SnapshotProblem("package", "container", "a complete central directory", "it ends early")
        )
        return None, position
    fields = fmt.CENTRAL_STRUCT.unpack(header)
    start = position + size
    end = start + fields[10] + fields[11] + fields[12]  # name, extra and comment lengths
    raw_name = directory[start : start + fields[10]]
    try:
        name = raw_name.decode("utf-8")
    except UnicodeDecodeError:
        name = repr(raw_name)
    entry = CentralEntry(name, fields[4], fields[7], fields[8], fields[9], fields[16])
    # Rebuilt with the offset the previous members imply, so a wrong offset is a difference.
    expected = fmt.central_header(replace(entry, offset=offset))
    if directory[position:end] != expected:
        names = (*fmt.CENTRAL_FIELDS, "name", "extra and comment")
        want = (*fmt.CENTRAL_STRUCT.unpack(expected[:size]), expected[size:], b"")
        have = (*fields, raw_name, directory[start + fields[10] : end])
        problems.append(SnapshotProblem(name, "container", *_field_diff(names, want, have)))
    return entry, end


def _check_local_header(
    file: BinaryIO, entry: CentralEntry, problems: list[SnapshotProblem]
) -> None:
    expected = fmt.local_header(entry)
    found = _read_at(file, entry.offset, len(expected))
    if found == expected:
        return
    if len(found) < len(expected):
        problems.append(
            SnapshotProblem(entry.name, "container", "a complete local header", "end of file")
        )
        return
    size = fmt.LOCAL_STRUCT.size
    names = (*fmt.LOCAL_FIELDS, "name")
    want = (*fmt.LOCAL_STRUCT.unpack(expected[:size]), expected[size:])
    have = (*fmt.LOCAL_STRUCT.unpack(found[:size]), found[size:])
    problems.append(SnapshotProblem(entry.name, "container", *_field_diff(names, want, have)))


def _refuse(entry: CentralEntry, limit: int) -> SnapshotProblem | None:
    name = entry.name
    if entry.size > limit:
        return SnapshotProblem(name, "limit", f"at most {limit} bytes", f"{entry.size} declared")
    if entry.method == fmt.STORED and entry.compressed_size != entry.size:
        expected, found = f"{entry.size} bytes stored", f"{entry.compressed_size} bytes"
        return SnapshotProblem(name, "size", expected, found)
    if entry.method not in (fmt.STORED, fmt.DEFLATED):
        expected, found = "method 0 (stored) or 8 (deflate)", f"method {entry.method}"
        return SnapshotProblem(name, "compression", expected, found)
    if entry.compressed_size > fmt.MAX_COMPRESSED_BYTES:
        expected = f"at most {fmt.MAX_COMPRESSED_BYTES} compressed bytes"
        return SnapshotProblem(name, "limit", expected, f"{entry.compressed_size} declared")
    return None


class MemberStream:
    """One member's uncompressed bytes, block by block, checked as they pass.

    Iterate it once. The blocks hold at most ``block`` bytes each; the declared sizes are
    checked against ``limit`` before anything is read, and deflate output stops one byte past
    the declared size. Afterwards ``complete`` says whether the member was read whole, exactly
    as declared; then ``sha256`` is its digest. ``problems`` says what went wrong (a CRC-32
    mismatch leaves the member complete: its bytes were read and can still be checked).
    A consumer that keeps anything from the blocks must drop it unless ``complete``.
    """

    def __init__(
        self, file: BinaryIO, entry: CentralEntry, limit: int, *, block: int = BLOCK_BYTES
    ) -> None:
        self._file, self.entry, self._limit, self._block = file, entry, limit, block
        self.complete = False
        self.sha256: str | None = None
        self.problems: list[SnapshotProblem] = []

    def __iter__(self) -> Iterator[bytes]:
        entry = self.entry
        refusal = _refuse(entry, self._limit)
        if refusal is not None:
            self.problems.append(refusal)
            return
        self._file.seek(entry.data_offset)
        blocks = self._inflated() if entry.method == fmt.DEFLATED else self._raw()
        crc, hasher = 0, hashlib.sha256()
        for data in blocks:
            crc = zlib.crc32(data, crc)
            hasher.update(data)
            yield data
        if self.problems:
            return
        self.complete, self.sha256 = True, hasher.hexdigest()
        if crc != entry.crc32:
            self.problems.append(
                SnapshotProblem(entry.name, "crc32", f"{entry.crc32:08x}", f"{crc:08x}")
            )

    def _truncated(self, read: int) -> None:
        expected = f"{self.entry.compressed_size} bytes of data"
        self.problems.append(
            SnapshotProblem(self.entry.name, "container", expected, f"{read} (truncated)")
        )

    def _raw(self) -> Iterator[bytes]:
        left = self.entry.compressed_size
        while left:
            data = self._file.read(min(left, self._block))
            if not data:
                self._truncated(self.entry.compressed_size - left)
                return
            left -= len(data)
            yield data

    def _inflated(self) -> Iterator[bytes]:
        """Inflate block by block, stopping at ``size + 1`` bytes: a bomb or a lying size costs
        one block."""
        name, size = self.entry.name, self.entry.size
        raw = self._raw()
        inflater = zlib.decompressobj(-15)
        produced, tail, exhausted = 0, b"", False
        while not inflater.eof:
            if not tail and not exhausted:
                tail = next(raw, b"")
                exhausted = not tail
                if self.problems:  # truncated
                    return
            try:
                data = inflater.decompress(tail, min(self._block, size + 1 - produced))
            except zlib.error as exc:
                self.problems.append(
                    SnapshotProblem(name, "compression", "a valid deflate stream", str(exc))
                )
                return
            tail = inflater.unconsumed_tail
            produced += len(data)
            if produced > size:
                found = f"more than {size} bytes (reading stopped)"
                self.problems.append(
                    SnapshotProblem(name, "size", f"{size} bytes uncompressed", found)
                )
                return
            if data:
                yield data
            elif not tail and exhausted:
                break
        if not inflater.eof:
            found = "a stream that ends early"
            self.problems.append(
                SnapshotProblem(name, "compression", "a complete deflate stream", found)
            )
            return
        after = len(inflater.unused_data) + sum(map(len, raw))
        if after:
            found = f"{after} bytes after the stream"
            self.problems.append(
                SnapshotProblem(name, "compression", "nothing after the stream", found)
            )
            return
        if produced < size:
            self.problems.append(
                SnapshotProblem(name, "size", f"{size} bytes uncompressed", f"{produced} bytes")
            )


def load_member(file: BinaryIO, entry: CentralEntry, limit: int) -> LoadedMember:
    """Read, decompress, CRC-check and hash one member, refusing it above ``limit`` bytes."""
    stream = MemberStream(file, entry, limit, block=max(1, min(entry.size, limit)))
    blocks = list(stream)
    if not stream.complete:
        return LoadedMember(None, None, tuple(stream.problems))
    data = blocks[0] if len(blocks) == 1 else b"".join(blocks)
    return LoadedMember(data, stream.sha256, tuple(stream.problems))
