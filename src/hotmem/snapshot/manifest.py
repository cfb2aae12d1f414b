"""The manifest of a snapshot package: writing it, and checking one read from a package.

The manifest is ``manifest.json``, the first member: the format and version, the record count,
the embedding and FTS configuration the records were indexed with, every data member's size,
SHA-256 and record count, and the content digest over the members.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from hotmem.embed import DIMENSION, MODEL_NAME, VECTOR_BYTES
from hotmem.fts import LEXICAL_INDEX
from hotmem.snapshot import format as fmt
from hotmem.snapshot.format import SnapshotProblem

__all__ = ["Manifest", "MemberMeta", "check_manifest", "content_digest", "manifest_bytes"]

_KEYS = frozenset(
    {"content_digest", "embedding", "format", "format_version", "fts", "members", "record_count"}
)
_MEMBER_KEYS = frozenset({"name", "records", "sha256", "size"})
_HEX = frozenset("0123456789abcdef")
_Add = Callable[..., None]
_MAX_TOKENIZER = 200


@dataclass(frozen=True, slots=True)
class MemberMeta:
    """What the manifest says about one data member."""

    name: str
    size: int
    sha256: str
    records: int

    def to_dict(self) -> dict[str, object]:
        """The member's entry in the manifest."""
        return {
            "name": self.name,
            "records": self.records,
            "sha256": self.sha256,
            "size": self.size,
        }


@dataclass(frozen=True, slots=True)
class Manifest:
    """A checked manifest, as much of it as can be used to read the members.

    Attributes:
        record_count: the declared total, ``None`` when malformed.
        content_digest: the declared digest, ``None`` when malformed.
        members: the data members in order, records and vectors alternating.
        vector_bytes: bytes per vector the declared embedding implies.
    """

    record_count: int | None
    content_digest: str | None
    members: list[MemberMeta]
    vector_bytes: int


def content_digest(members: Iterable[tuple[str, str]]) -> str:
    """SHA-256 of ``"<sha256>  <name>\\n"`` per data member, in manifest order.

    ``members`` yields ``(name, sha256 hex)``. The listing is exactly what ``sha256sum`` prints
    for the extracted members, so the digest can be recomputed with standard tools.
    """
    listing = "".join(f"{digest}  {name}\n" for name, digest in members)
    return hashlib.sha256(listing.encode("utf-8")).hexdigest()


def manifest_bytes(record_count: int, members: Sequence[MemberMeta]) -> bytes:
    """The manifest for these data members: sorted keys, two-space indent, final newline."""
    manifest = {
        "content_digest": content_digest((m.name, m.sha256) for m in members),
        "embedding": {"dimension": DIMENSION, "dtype": fmt.VECTOR_DTYPE, "model": MODEL_NAME},
        "format": fmt.FORMAT_NAME,
        "format_version": fmt.FORMAT_VERSION,
        "fts": {"columns": list(fmt.FTS_COLUMNS), "tokenizer": LEXICAL_INDEX},
        "members": [m.to_dict() for m in members],
        "record_count": record_count,
    }
    return (json.dumps(manifest, ensure_ascii=False, indent=2, sort_keys=True) + "\n").encode()


# -- checking ------------------------------------------------------------------------------------
def _is_count(value: object) -> bool:
    return type(value) is int and value >= 0


def _is_sha256(value: object) -> bool:
    return isinstance(value, str) and len(value) == 64 and set(value) <= _HEX


def _fields_found(missing: list[str], unknown: list[str]) -> str:
    labelled = (("missing", missing), ("unknown", unknown))
    return "; ".join(f"{label} {', '.join(keys)}" for label, keys in labelled if keys)


def check_manifest(value: object) -> tuple[Manifest | None, list[SnapshotProblem]]:
    """Check a parsed manifest; the manifest is ``None`` when the members cannot be read by it.

    An unknown format or version stops the check: nothing else can be interpreted.
    """
    problems: list[SnapshotProblem] = []

    def add(check: str, expected: str, found: str, location: str = fmt.MANIFEST_NAME) -> None:
        problems.append(SnapshotProblem(location, check, expected, found))

    if not isinstance(value, dict):
        add("manifest", "a JSON object", type(value).__name__)
        return None, problems
    if value.get("format") != fmt.FORMAT_NAME:
        add("format", repr(fmt.FORMAT_NAME), repr(value.get("format")))
        return None, problems
    version = value.get("format_version")
    if type(version) is not int or version != fmt.FORMAT_VERSION:
        expected = f"{fmt.FORMAT_VERSION} (the version this HotMem reads)"
        add("format-version", expected, repr(version))
        return None, problems
    missing, unknown = sorted(_KEYS - value.keys()), sorted(value.keys() - _KEYS)
    if missing or unknown:
        add("manifest", "the fields " + ", ".join(sorted(_KEYS)), _fields_found(missing, unknown))
        if missing:
            return None, problems
    width = _check_embedding(value["embedding"], add)
    _check_fts(value["fts"], add)
    record_count = value["record_count"]
    if not _is_count(record_count):
        add("manifest", "record_count as a non-negative integer", repr(record_count))
        record_count = None
    digest = value["content_digest"]
    if not _is_sha256(digest):
        add("manifest", "content_digest as 64 lowercase hex digits", repr(digest))
        digest = None
    members = _check_members(value["members"], width, add)
    if members is None:
        return None, problems
    total = sum(meta.records for meta in members[0::2])
    if record_count is not None and total != record_count:
        add("record-count", f"{record_count} records (record_count)", f"{total} in the members")
    return Manifest(record_count, digest, members, width), problems


def _check_embedding(value: object, add: _Add) -> int:
    """Check the embedding contract; return the bytes per vector the manifest implies."""
    if not isinstance(value, dict) or value.keys() != {"dimension", "dtype", "model"}:
        add("manifest", "embedding as {dimension, dtype, model}", repr(value)[:200])
        return VECTOR_BYTES
    if value["model"] != MODEL_NAME:
        add("embedding-model", f"{MODEL_NAME!r} (this HotMem's embedder)", repr(value["model"]))
    dimension = value["dimension"]
    if type(dimension) is not int or dimension != DIMENSION:
        add("embedding-dimension", f"{DIMENSION} (this HotMem's embedder)", repr(dimension))
    if value["dtype"] != fmt.VECTOR_DTYPE:
        add("embedding-dtype", repr(fmt.VECTOR_DTYPE), repr(value["dtype"]))
    return 4 * dimension if type(dimension) is int and 0 < dimension <= 2**16 else VECTOR_BYTES


def _check_fts(value: object, add: _Add) -> None:
    if not isinstance(value, dict) or value.keys() != {"columns", "tokenizer"}:
        add("manifest", "fts as {columns, tokenizer}", repr(value)[:200])
        return
    # Any name is accepted: the index is derived data, rebuilt by the target's own code
    # (docs/snapshot-v2.md, "Derived indexes"); the name only says what the source built.
    tokenizer = value["tokenizer"]
    if not isinstance(tokenizer, str) or not 0 < len(tokenizer) <= _MAX_TOKENIZER:
        expected = f"the name of the source's lexical index (text of 1..{_MAX_TOKENIZER} chars)"
        add("fts-tokenizer", expected, repr(tokenizer)[:200])
    if value["columns"] != list(fmt.FTS_COLUMNS):
        add("fts-columns", repr(list(fmt.FTS_COLUMNS)), repr(value["columns"]))


def _member(item: object) -> MemberMeta | None:
    if not isinstance(item, dict) or item.keys() != _MEMBER_KEYS:
        return None
    name, size, digest, records = item["name"], item["size"], item["sha256"], item["records"]
    valid = isinstance(name, str) and _is_count(size) and _is_count(records)
    return MemberMeta(name, size, digest, records) if valid and _is_sha256(digest) else None


def _check_members(value: object, width: int, add: _Add) -> list[MemberMeta] | None:
    if not isinstance(value, list):
        add("manifest", "members as an array", type(value).__name__)
        return None
    members: list[MemberMeta] = []
    for index, item in enumerate(value):
        meta = _member(item)
        if meta is None:
            expected = f"members[{index}] as {{name, records, sha256 (hex), size}}"
            add("manifest", expected, repr(item)[:200])
            return None
        expected_name = fmt.expected_names(index // 2)[index % 2]
        if meta.name != expected_name:
            add("member-name", f"members[{index}] named {expected_name!r}", repr(meta.name))
        members.append(meta)
    if len(members) % 2:
        expected = f"{fmt.expected_names(len(members) // 2)[1]!r} after {members[-1].name!r}"
        add("member-missing", expected, "the end of the member list")
        members.pop()
    for records, vectors in zip(members[0::2], members[1::2], strict=True):
        if not 1 <= records.records <= fmt.CHUNK_RECORDS:
            expected = f"1 to {fmt.CHUNK_RECORDS} records"
            add("record-count", expected, str(records.records), records.name)
        if vectors.records != records.records:
            expected = f"{records.records} records (as {records.name})"
            add("record-count", expected, str(vectors.records), vectors.name)
        if vectors.size != records.records * width:
            expected = f"{records.records * width} bytes ({records.records} vectors of {width})"
            add("size", expected, f"{vectors.size} bytes", vectors.name)
        for meta in (records, vectors):
            if meta.size > fmt.MAX_MEMBER_BYTES:
                expected = f"at most {fmt.MAX_MEMBER_BYTES} bytes"
                add("limit", expected, f"{meta.size} bytes declared", meta.name)
    return members
