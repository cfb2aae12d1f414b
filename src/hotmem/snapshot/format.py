"""The snapshot v2 package format: member names, limits, compression and the ZIP layout.

Shared by the writer (``writer.py``) and the reader (``container.py``,
``reader.py``), so both agree on every byte. ``docs/snapshot-v2.md`` is the contract.

The container is a plain ZIP file whose every header field is fixed: the reader rebuilds the
headers it expects from (name, method, CRC-32, sizes, offset) and compares them byte for byte,
so a changed byte anywhere in the file is noticed, even in fields ZIP tools ignore.
"""

from __future__ import annotations

import re
import struct
import zlib
from typing import Literal

from hotmem.fields import MAX_TAGS as _STORE_MAX_TAGS
from hotmem.records import record
from hotmem.store.spaces import SPACE_NAME as _STORE_SPACE_NAME

__all__ = [
    "CENTRAL_FIELDS",
    "CENTRAL_STRUCT",
    "CHUNK_CHARS",
    "CHUNK_RECORDS",
    "DEFLATED",
    "END_FIELDS",
    "END_STRUCT",
    "FORMAT_NAME",
    "FORMAT_VERSION",
    "FTS_COLUMNS",
    "LOCAL_FIELDS",
    "LOCAL_STRUCT",
    "MANIFEST_NAME",
    "MAX_COMPRESSED_BYTES",
    "MAX_DIMENSION",
    "MAX_MANIFEST_BYTES",
    "MAX_MEMBERS",
    "MAX_MEMBER_BYTES",
    "MAX_OFFSET",
    "MAX_SPACES",
    "MAX_TAGS",
    "SPACE_NAME",
    "STORED",
    "VECTOR_DTYPE",
    "CentralEntry",
    "MemberKind",
    "SnapshotProblem",
    "central_header",
    "compress",
    "compression_for",
    "end_record",
    "expected_names",
    "local_header",
    "member_kind",
    "space_member_name",
]

FORMAT_NAME = "hotmem-snapshot"
FORMAT_VERSION = 2
MANIFEST_NAME = "manifest.json"
VECTOR_DTYPE = "float32-le"
FTS_COLUMNS = ("fact",)

# A chunk ends after CHUNK_RECORDS records, or before a line that would take it past
# CHUNK_CHARS characters (a longer line gets a chunk of its own). Four UTF-8 bytes at most per
# character keep a chunk within MAX_MEMBER_BYTES unless one memory alone is larger.
CHUNK_RECORDS = 10_000
CHUNK_CHARS = 16 * 2**20

# Tags one record may hold: a record's values bound what reading its line can cost. The
# store's own limit (``fields.MAX_TAGS``), so any memory it accepts can be snapshotted.
MAX_TAGS = _STORE_MAX_TAGS

# Limits the reader enforces before it decompresses anything.
MAX_MEMBER_BYTES = 64 * 2**20
MAX_MANIFEST_BYTES = 4 * 2**20
# Deflate can expand incompressible input by 5 bytes per 16 KiB block (plus a little).
MAX_COMPRESSED_BYTES = MAX_MEMBER_BYTES + MAX_MEMBER_BYTES // 1024 + 1024
# A ZIP without the ZIP64 extension holds at most 65,535 members and 4 GiB.
MAX_MEMBERS = 0xFFFF
MAX_OFFSET = 0xFFFFFFFF

# Values a vector of a space may hold (a chunk then holds fewer records: ``writer``).
MAX_DIMENSION = 2**16
# Further vector spaces one package may carry: what verifying a chunk reads is bounded by it.
MAX_SPACES = 16

STORED, DEFLATED = 0, 8
MemberKind = Literal["manifest", "records", "vectors", "space"]
#: A vector space's name (its model id) as it may appear in a member name.
SPACE_NAME = _STORE_SPACE_NAME
_MEMBER_NAME = re.compile(
    r"(records)/([0-9]{6})\.jsonl|(vectors)/([0-9]{6})\.f32"
    r"|(spaces)/([a-z0-9][a-z0-9._-]{0,63})/([0-9]{6})\.f32"
)
# (method, deflate level) per kind, chosen by measurement (docs/snapshot-v2.md, "Compression").
_COMPRESSION: dict[MemberKind, tuple[int, int]] = {
    "manifest": (STORED, 0),
    "records": (DEFLATED, 6),
    "vectors": (STORED, 0),
    "space": (STORED, 0),
}


@record
class SnapshotProblem:
    """One thing wrong with a package.

    Attributes:
        location: ``"package"``, a member name, or ``"<member>:<line>"`` for a record line.
        check: which check failed (the list is in ``docs/snapshot-v2.md``), e.g. ``"sha256"``.
        expected: what the format or the manifest requires.
        found: what the package holds.
    """

    location: str
    check: str
    expected: str
    found: str

    def __str__(self) -> str:
        return f"{self.location}: {self.check}: expected {self.expected}; found {self.found}"


def member_kind(name: str) -> MemberKind | None:
    """The kind of a well-formed member name, ``None`` for any other name."""
    if name == MANIFEST_NAME:
        return "manifest"
    match = _MEMBER_NAME.fullmatch(name)
    if match is None:
        return None
    if match.group(5):
        return "space"
    return "records" if match.group(1) else "vectors"


def expected_names(chunk: int) -> tuple[str, str]:
    """The records and vectors member names of chunk number ``chunk`` (0-based)."""
    return f"records/{chunk:06d}.jsonl", f"vectors/{chunk:06d}.f32"


def space_member_name(space: str, chunk: int) -> str:
    """The member holding the vectors of space ``space`` for chunk number ``chunk``."""
    return f"spaces/{space}/{chunk:06d}.f32"


def compression_for(kind: MemberKind) -> tuple[int, int]:
    """``(method, level)`` the writer uses for a member of this kind."""
    return _COMPRESSION[kind]


def compress(data: bytes, level: int) -> bytes:
    """Raw deflate (wbits -15, memLevel 8, default strategy), as ZIP stores it."""
    compressor = zlib.compressobj(level, zlib.DEFLATED, -15, 8)
    return compressor.compress(data) + compressor.flush()


# -- ZIP layout (PKWARE APPNOTE 6.3; no ZIP64, no data descriptors, no extra fields) -------------
LOCAL_FIELDS = (
    "signature", "version_needed", "flags", "method", "time", "date",
    "crc32", "compressed_size", "size", "name_length", "extra_length",
)  # fmt: skip
CENTRAL_FIELDS = (
    "signature", "version_made_by", "version_needed", "flags", "method", "time", "date",
    "crc32", "compressed_size", "size", "name_length", "extra_length", "comment_length",
    "disk", "internal_attributes", "external_attributes", "offset",
)  # fmt: skip
END_FIELDS = (
    "signature", "disk", "directory_disk", "disk_entries", "entries",
    "directory_size", "directory_offset", "comment_length",
)  # fmt: skip
LOCAL_STRUCT = struct.Struct("<IHHHHHIIIHH")
CENTRAL_STRUCT = struct.Struct("<IHHHHHHIIIHHHHHII")
END_STRUCT = struct.Struct("<IHHHHIIH")
_VERSION_NEEDED = 20  # 2.0: deflate
_VERSION_MADE_BY = (3 << 8) | _VERSION_NEEDED  # Unix, 2.0
_FLAGS = 0
_DOS_TIME, _DOS_DATE = 0, (0 << 9) | (1 << 5) | 1  # 1980-01-01 00:00:00, the earliest DOS date
_EXTERNAL_ATTR = 0o100644 << 16  # a regular file, rw-r--r--


@record
class CentralEntry:
    """A member as the ZIP central directory describes it."""

    name: str
    method: int
    crc32: int
    compressed_size: int
    size: int
    offset: int

    @property
    def data_offset(self) -> int:
        """Where the member's (compressed) bytes start."""
        return self.offset + LOCAL_STRUCT.size + len(self.name.encode("utf-8"))

    @property
    def next_offset(self) -> int:
        """Where the next member's local header starts."""
        return self.data_offset + self.compressed_size


def local_header(entry: CentralEntry) -> bytes:
    """The 30-byte local file header of ``entry``, followed by its name."""
    encoded = entry.name.encode("utf-8")
    fixed = LOCAL_STRUCT.pack(
        0x04034B50, _VERSION_NEEDED, _FLAGS, entry.method, _DOS_TIME, _DOS_DATE,
        entry.crc32, entry.compressed_size, entry.size, len(encoded), 0,
    )  # fmt: skip
    return fixed + encoded


def central_header(entry: CentralEntry) -> bytes:
    """The 46-byte central directory header of ``entry``, followed by its name."""
    encoded = entry.name.encode("utf-8")
    fixed = CENTRAL_STRUCT.pack(
        0x02014B50, _VERSION_MADE_BY, _VERSION_NEEDED, _FLAGS, entry.method, _DOS_TIME, _DOS_DATE,
        entry.crc32, entry.compressed_size, entry.size, len(encoded), 0, 0, 0, 0,
        _EXTERNAL_ATTR, entry.offset,
    )  # fmt: skip
    return fixed + encoded


def end_record(count: int, directory_size: int, directory_offset: int) -> bytes:
    """The 22-byte end-of-central-directory record (no archive comment)."""
    return END_STRUCT.pack(0x06054B50, 0, 0, count, count, directory_size, directory_offset, 0)
