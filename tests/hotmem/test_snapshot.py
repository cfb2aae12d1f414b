"""Writing snapshot packages: layout, determinism, chunking and refusals."""

from __future__ import annotations

import hashlib
import json
import os
import random
import zipfile
from pathlib import Path

import pytest

import hotmem
from hotmem.embedding.hash_v1 import embed_bytes
from hotmem.snapshot import format as fmt
from hotmem.snapshot.manifest import content_digest

MEMORIES = [
    {
        "memory_id": f"m-{i:02d}",
        "identifier": ("acme", "globex", "initech")[i % 3],
        "fact": fact,
        "importance": (0.5, 0.25, 1.0)[i % 3],
        "tags": [["finance"], [], ["ops", "été"]][i % 3],
        "created_at": f"2026-01-0{1 + i % 9}T09:30:00{'.250000' if i % 4 == 0 else ''}Z",
    }
    for i, fact in enumerate(
        [
            "Invoices above EUR 5,000 need two approvals.",
            "Le café est servi à 9h ☕ dans la salle «Atlas».",
            "Backups run nightly at 02:00 UTC.",
            "Invoices above EUR 5,000 need two approvals.",
            'Quotes " and back\\slashes and\ttabs stay exact.',
            "東京オフィスの会議室は三階にあります。",
            "Deploys freeze on Fridays after 15:00.",
        ]
    )
]


def make_store(path: Path, memories: list[dict] = MEMORIES) -> hotmem.MemoryStore:
    store = hotmem.open_store(path)
    store.add_many(memories)
    return store


def test_package_layout_and_manifest(tmp_path: Path) -> None:
    with make_store(tmp_path / "s.db") as store:
        report = store.snapshot(tmp_path / "p.zip")
    package = tmp_path / "p.zip"
    assert report.record_count == 7
    assert report.size == package.stat().st_size
    with zipfile.ZipFile(package) as archive:
        assert archive.testzip() is None
        assert archive.namelist() == ["manifest.json", "records/000000.jsonl", "vectors/000000.f32"]
        for info in archive.infolist():
            assert info.date_time == (1980, 1, 1, 0, 0, 0)
            assert (info.extra, info.comment, info.flag_bits) == (b"", b"", 0)
            assert info.external_attr == 0o100644 << 16
            assert info.create_system == 3
        methods = [info.compress_type for info in archive.infolist()]
        assert methods == [zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED, zipfile.ZIP_STORED]
        raw_manifest = archive.read("manifest.json")
        records = archive.read("records/000000.jsonl")
        vectors = archive.read("vectors/000000.f32")
    manifest = json.loads(raw_manifest)
    assert raw_manifest == (json.dumps(manifest, indent=2, sort_keys=True) + "\n").encode()
    members = [
        {
            "name": "records/000000.jsonl",
            "records": 7,
            "sha256": hashlib.sha256(records).hexdigest(),
            "size": len(records),
        },
        {
            "name": "vectors/000000.f32",
            "records": 7,
            "sha256": hashlib.sha256(vectors).hexdigest(),
            "size": 7 * 256,
        },
    ]
    listing = "".join(f"{m['sha256']}  {m['name']}\n" for m in members)
    assert manifest == {
        "content_digest": hashlib.sha256(listing.encode()).hexdigest(),
        "embedding": {"dimension": 64, "dtype": "float32-le", "model": "hotmem-hash-v1"},
        "format": "hotmem-snapshot",
        "format_version": 2,
        "fts": {"columns": ["fact"], "tokenizer": hotmem.LEXICAL_INDEX},
        "members": members,
        "record_count": 7,
    }
    assert report.content_digest == manifest["content_digest"]
    ordered = sorted(MEMORIES, key=lambda m: m["memory_id"])
    expected_lines = [
        json.dumps(m, sort_keys=True, ensure_ascii=False, separators=(",", ":")) for m in ordered
    ]
    assert records.decode("utf-8").split("\n") == [*expected_lines, ""]
    assert vectors == b"".join(embed_bytes(m["fact"]) for m in ordered)


def test_same_content_gives_byte_identical_packages(tmp_path: Path) -> None:
    packages = []
    for seed in range(4):
        shuffled = MEMORIES[:]
        random.Random(seed).shuffle(shuffled)
        with hotmem.open_store(tmp_path / f"s{seed}.db") as store:
            for memory in shuffled:  # one by one: a different rowid order each time
                store.add_many([memory])
            store.snapshot(tmp_path / f"p{seed}.zip")
        packages.append((tmp_path / f"p{seed}.zip").read_bytes())
    assert len(set(packages)) == 1


def test_deleted_memories_leave_no_trace(tmp_path: Path) -> None:
    with make_store(tmp_path / "a.db", [*MEMORIES, {**MEMORIES[0], "memory_id": "zz"}]) as store:
        store.delete("zz")
        store.snapshot(tmp_path / "a.zip")
    with make_store(tmp_path / "b.db") as store:
        store.snapshot(tmp_path / "b.zip")
    assert (tmp_path / "a.zip").read_bytes() == (tmp_path / "b.zip").read_bytes()


def test_chunks_split_by_record_count(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fmt, "CHUNK_RECORDS", 3)
    with make_store(tmp_path / "s.db") as store:
        store.snapshot(tmp_path / "p.zip")
    with zipfile.ZipFile(tmp_path / "p.zip") as archive:
        manifest = json.loads(archive.read("manifest.json"))
        lines = [archive.read(f"records/00000{i}.jsonl").count(b"\n") for i in range(3)]
    assert [m["name"] for m in manifest["members"]] == [
        "records/000000.jsonl",
        "vectors/000000.f32",
        "records/000001.jsonl",
        "vectors/000001.f32",
        "records/000002.jsonl",
        "vectors/000002.f32",
    ]
    assert [m["records"] for m in manifest["members"]] == [3, 3, 3, 3, 1, 1]
    assert lines == [3, 3, 1]
    assert hotmem.verify_snapshot(tmp_path / "p.zip").ok


def reference_chunks(sizes: list[int], max_records: int, max_chars: int) -> list[int]:
    """The chunking rule, naively: records per chunk for line sizes (newline included)."""
    counts: list[int] = []
    records = chars = 0
    for size in sizes:
        if records and (records == max_records or chars + size > max_chars):
            counts.append(records)
            records = chars = 0
        records, chars = records + 1, chars + size
    return [*counts, records] if records else counts


@pytest.mark.parametrize("max_records", [2, 3, 10_000])
def test_chunks_split_by_characters(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, max_records: int
) -> None:
    with make_store(tmp_path / "s.db") as store:
        store.snapshot(tmp_path / "whole.zip")
        with zipfile.ZipFile(tmp_path / "whole.zip") as archive:
            text = archive.read("records/000000.jsonl").decode()
        sizes = [len(line) + 1 for line in text.split("\n")[:-1]]
        monkeypatch.setattr(fmt, "CHUNK_RECORDS", max_records)
        for limit in sorted({1, *sizes, sum(sizes[:2]), sum(sizes[1:4]), sum(sizes), 10**9}):
            monkeypatch.setattr(fmt, "CHUNK_CHARS", limit)
            store.snapshot(tmp_path / "split.zip", overwrite=True)
            with zipfile.ZipFile(tmp_path / "split.zip") as archive:
                manifest = json.loads(archive.read("manifest.json"))
                joined = "".join(
                    archive.read(m["name"]).decode() for m in manifest["members"][0::2]
                )
            counts = [m["records"] for m in manifest["members"][0::2]]
            assert counts == reference_chunks(sizes, max_records, limit), limit
            assert joined == text
            assert hotmem.verify_snapshot(tmp_path / "split.zip").ok


def test_a_line_longer_than_the_limit_gets_its_own_chunk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fmt, "CHUNK_CHARS", 10)
    with make_store(tmp_path / "s.db") as store:
        store.snapshot(tmp_path / "p.zip")
    with zipfile.ZipFile(tmp_path / "p.zip") as archive:
        manifest = json.loads(archive.read("manifest.json"))
    assert [m["records"] for m in manifest["members"]] == [1] * 14


def test_empty_store(tmp_path: Path) -> None:
    with hotmem.open_store(tmp_path / "s.db") as store:
        report = store.snapshot(tmp_path / "p.zip")
    assert report.record_count == 0
    assert report.content_digest == content_digest([]) == hashlib.sha256(b"").hexdigest()
    with zipfile.ZipFile(tmp_path / "p.zip") as archive:
        assert archive.namelist() == ["manifest.json"]
        assert json.loads(archive.read("manifest.json"))["members"] == []
    verified = hotmem.verify_snapshot(tmp_path / "p.zip")
    assert (verified.ok, verified.record_count) == (True, 0)


def test_refuses_to_overwrite_unless_asked(tmp_path: Path) -> None:
    package = tmp_path / "p.zip"
    package.write_bytes(b"precious")
    with make_store(tmp_path / "s.db") as store:
        with pytest.raises(hotmem.SnapshotError, match="already exists; pass overwrite=True"):
            store.snapshot(package)
        assert package.read_bytes() == b"precious"
        store.snapshot(package, overwrite=True)
    assert hotmem.verify_snapshot(package).ok


@pytest.mark.parametrize(
    ("name", "message"),
    [("missing/p.zip", "directory .* is missing"), (".", "it is a directory")],
)
def test_refuses_unwritable_paths(tmp_path: Path, name: str, message: str) -> None:
    with make_store(tmp_path / "s.db") as store, pytest.raises(hotmem.SnapshotError, match=message):
        store.snapshot(tmp_path / name)


def test_failure_leaves_no_partial_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(*args: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr("hotmem.snapshot.writer._assemble", interrupted)
    with make_store(tmp_path / "s.db") as store, pytest.raises(KeyboardInterrupt):
        store.snapshot(tmp_path / "p.zip")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.db"]


def test_snapshot_leaves_the_store_usable(tmp_path: Path) -> None:
    with make_store(tmp_path / "s.db") as store:
        store.snapshot(tmp_path / "p.zip")
        assert not store.connection.in_transaction
        store.add("Another fact.", identifier="acme")
        assert len(store) == 8


def test_a_failed_write_is_a_snapshot_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full(*args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    with (
        make_store(tmp_path / "s.db") as store,
        pytest.raises(hotmem.SnapshotError, match="No space left on device"),
    ):
        store.snapshot(tmp_path / "p.zip")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.db"]


def test_a_memory_with_more_tags_than_a_record_may_hold_is_refused(tmp_path: Path) -> None:
    with hotmem.open_store(tmp_path / "s.db") as store:
        store.add("At the limit.", identifier="acme", memory_id="m-1", tags=["t"] * fmt.MAX_TAGS)
        store.snapshot(tmp_path / "limit.zip")
        past = ["t"] * (fmt.MAX_TAGS + 1)
        with pytest.raises(hotmem.ValidationError, match="expected at most 65536 tags"):
            store.add("Past it.", identifier="acme", memory_id="m-2", tags=past)  # issue 35
        # Only a row written behind the store's back can hold more; the snapshot refuses it.
        copy = store.get("m-1")
        with store.connection:
            store.connection.execute(
                "INSERT INTO memories (memory_id, identifier, fact, importance, tags, "
                "created_at, embedding) SELECT 'm-2', identifier, 'Past it.', importance, ?, "
                "created_at, embedding FROM memories WHERE memory_id = ?",
                (json.dumps(past), copy.memory_id),
            )
        with pytest.raises(hotmem.SnapshotError) as raised:
            store.snapshot(tmp_path / "past.zip")
    assert str(raised.value) == (
        f"memory_id='m-2' holds {fmt.MAX_TAGS + 1} tags; the format allows {fmt.MAX_TAGS} "
        "(a memory with this many tags cannot be snapshotted)"
    )
    assert hotmem.verify_snapshot(tmp_path / "limit.zip").ok
    assert sorted(p.name for p in tmp_path.iterdir()) == ["limit.zip", "s.db"]


# Written by the code before vector spaces (commit 4c2f45f) from MEMORIES: a store without
# further spaces must still give exactly this package. The manifest is stored, so its bytes do
# not depend on the zlib build; they hold every member's digest.
BEFORE_SPACES_CONTENT_DIGEST = "b476750e532dc58600dabe605b84adfad61ee790c9bb514e46dd413139ff0ea1"
BEFORE_SPACES_MANIFEST_SHA256 = "0ec874abce88d7461f3a06c0e3e9ecab598255dc24054e49135fb3e025ac0fc8"


def test_a_store_without_further_spaces_writes_the_package_it_always_did(tmp_path: Path) -> None:
    with make_store(tmp_path / "s.db") as store:
        assert [space.name for space in store.spaces] == ["hotmem-hash-v1"]
        report = store.snapshot(tmp_path / "p.zip")
    with zipfile.ZipFile(tmp_path / "p.zip") as archive:
        manifest = archive.read("manifest.json")
    assert report.content_digest == BEFORE_SPACES_CONTENT_DIGEST
    assert hashlib.sha256(manifest).hexdigest() == BEFORE_SPACES_MANIFEST_SHA256
    assert "spaces" not in json.loads(manifest)
