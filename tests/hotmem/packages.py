"""Building snapshot packages byte by byte: edited copies of real ones, and hostile ones.

Every builder here writes the format's exact ZIP layout (the writer's own header functions)
and, unless told otherwise, a manifest that agrees with every byte it lists: sizes, SHA-256s,
record counts and the content digest are recomputed, as a careful forger would. So only the
reader's deeper checks (and its memory and recursion bounds) stand between such a package and
a store. Used by the snapshot tests and by ``benchmarks/hostile_packages.py``.
"""

from __future__ import annotations

import hashlib
import json
import zipfile
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hotmem.embedding.hash_v1 import DIMENSION, MODEL_NAME
from hotmem.snapshot import format as fmt
from hotmem.snapshot.format import CentralEntry
from hotmem.snapshot.manifest import content_digest
from hotmem.store.fts import FTS_TOKENIZER

Members = dict[str, bytes]

R0, V0, R1, V1, MANIFEST = (
    "records/000000.jsonl",
    "vectors/000000.f32",
    "records/000001.jsonl",
    "vectors/000001.f32",
    "manifest.json",
)


@dataclass
class Member:
    """A member to write, optionally with lying headers."""

    name: str
    data: bytes
    method: int | None = None
    declared_size: int | None = None


def read_members(path: Path) -> Members:
    with zipfile.ZipFile(path) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def write_zip(path: Path, members: list[Member]) -> Path:
    """Write members with the format's exact layout (the writer's own header functions)."""
    with open(path, "wb") as out:
        entries = []
        offset = 0
        for member in members:
            kind = fmt.member_kind(member.name) or "records"
            method, level = fmt.compression_for(kind)
            if member.method is not None and member.method != method:
                method, level = member.method, 6
            packed = fmt.compress(member.data, level) if method == fmt.DEFLATED else member.data
            size = len(member.data) if member.declared_size is None else member.declared_size
            entry = CentralEntry(
                member.name, method, zlib.crc32(member.data), len(packed), size, offset
            )
            header = fmt.local_header(entry)
            out.write(header)
            out.write(packed)
            offset += len(header) + len(packed)
            entries.append(entry)
        directory = b"".join(map(fmt.central_header, entries))
        out.write(directory + fmt.end_record(len(entries), len(directory), offset))
    return path


def write_members(path: Path, members: Members) -> Path:
    return write_zip(path, [Member(name, data) for name, data in members.items()])


def manifest_of(members: Members) -> dict:
    return json.loads(members[MANIFEST])


def manifest_text(manifest: object) -> bytes:
    return (json.dumps(manifest, ensure_ascii=False, indent=2, sort_keys=True) + "\n").encode()


def with_manifest(members: Members, manifest: dict) -> Members:
    return {**members, MANIFEST: manifest_text(manifest)}


def refreshed(members: Members) -> Members:
    """Make the manifest agree with the members' actual bytes (sizes, digests, counts)."""
    manifest = manifest_of(members)
    for meta in manifest["members"]:
        data = members.get(meta["name"])
        if data is not None:
            meta["size"], meta["sha256"] = len(data), hashlib.sha256(data).hexdigest()
    manifest["content_digest"] = content_digest(
        (m["name"], m["sha256"]) for m in manifest["members"]
    )
    return with_manifest(members, manifest)


def line_count(data: bytes) -> int:
    """Lines as the reader counts them: newlines, plus an unterminated last line."""
    return data.count(b"\n") + (1 if data and not data.endswith(b"\n") else 0)


def honest_manifest(chunks: list[tuple[bytes, bytes]]) -> dict:
    """The manifest a writer would give these chunks' (records, vectors) bytes."""
    members = []
    for index, (records, vectors) in enumerate(chunks):
        count = line_count(records)
        for name, data in zip(fmt.expected_names(index), (records, vectors), strict=True):
            sha256 = hashlib.sha256(data).hexdigest()
            members.append({"name": name, "records": count, "sha256": sha256, "size": len(data)})
    return {
        "content_digest": content_digest((m["name"], m["sha256"]) for m in members),
        "embedding": {"dimension": DIMENSION, "dtype": fmt.VECTOR_DTYPE, "model": MODEL_NAME},
        "format": fmt.FORMAT_NAME,
        "format_version": fmt.FORMAT_VERSION,
        "fts": {"columns": list(fmt.FTS_COLUMNS), "tokenizer": FTS_TOKENIZER},
        "members": members,
        "record_count": sum(m["records"] for m in members[0::2]),
    }


def build_package(
    path: Path,
    chunks: list[tuple[bytes, bytes]],
    *,
    manifest: bytes | None = None,
    edit: Callable[[dict], object] | None = None,
) -> Path:
    """A package of these chunks whose manifest agrees with every byte of them.

    ``edit`` may change the honest manifest (its return value replaces it); ``manifest`` gives
    the manifest's bytes outright.
    """
    if manifest is None:
        value: object = honest_manifest(chunks)
        if edit is not None:
            value = edit(value)  # type: ignore[arg-type]
        manifest = manifest_text(value)
    members = [Member(MANIFEST, manifest)]
    for index, (records, vectors) in enumerate(chunks):
        records_name, vectors_name = fmt.expected_names(index)
        members += [Member(records_name, records), Member(vectors_name, vectors)]
    return write_zip(path, members)


def record_line(memory_id: str, fact: str = "A fact.", **fields: object) -> bytes:
    """One canonical record line (with its newline)."""
    record = {
        "created_at": "2026-01-01T00:00:00Z",
        "fact": fact,
        "identifier": "acme",
        "importance": 0.5,
        "memory_id": memory_id,
        "tags": [],
        **fields,
    }
    text = json.dumps(record, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return text.encode() + b"\n"


@dataclass
class Space:
    """A further vector space to put in a built package: its vectors, one bytes a chunk."""

    name: str
    digest: str
    dimension: int
    vectors: list[bytes]
    dtype: str = fmt.VECTOR_DTYPE


def honest_space_manifest(chunks: list[tuple[bytes, bytes]], spaces: list[Space]) -> dict:
    """The manifest a writer would give these chunks and spaces (package-order digest)."""
    manifest = honest_manifest(chunks)
    listing = []
    entries = []
    for space in spaces:
        members = []
        for index, data in enumerate(space.vectors):
            members.append(
                {
                    "name": fmt.space_member_name(space.name, index),
                    "records": line_count(chunks[index][0]),
                    "sha256": hashlib.sha256(data).hexdigest(),
                    "size": len(data),
                }
            )
        entries.append(
            {
                "digest": space.digest,
                "dimension": space.dimension,
                "dtype": space.dtype,
                "members": members,
                "model_id": space.name,
                "name": space.name,
            }
        )
    for index in range(len(chunks)):
        listing += manifest["members"][2 * index : 2 * index + 2]
        listing += [entry["members"][index] for entry in entries if index < len(entry["members"])]
    manifest["spaces"] = entries
    manifest["content_digest"] = content_digest((m["name"], m["sha256"]) for m in listing)
    return manifest


def build_space_package(
    path: Path,
    chunks: list[tuple[bytes, bytes]],
    spaces: list[Space],
    *,
    edit: Callable[[dict], object] | None = None,
    members: Callable[[list[Member]], list[Member]] | None = None,
) -> Path:
    """A package of these chunks and spaces, its manifest agreeing with every byte of them.

    ``edit`` may change the manifest (its return value replaces it); ``members`` may change the
    list of members written (in package order, the manifest first).
    """
    value: object = honest_space_manifest(chunks, spaces)
    if edit is not None:
        value = edit(value)  # type: ignore[arg-type]
    written = [Member(MANIFEST, manifest_text(value))]
    for index, (records, vectors) in enumerate(chunks):
        records_name, vectors_name = fmt.expected_names(index)
        written += [Member(records_name, records), Member(vectors_name, vectors)]
        written += [
            Member(fmt.space_member_name(space.name, index), space.vectors[index])
            for space in spaces
            if index < len(space.vectors)
        ]
    if members is not None:
        written = members(written)
    return write_zip(path, written)
