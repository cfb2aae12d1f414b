"""Verifying packages without trusting them: one case per way a package can be wrong.

Each case edits a known-good package and names the exact problems verification must report.
Edits that "refresh" rewrite the manifest's sizes, digests and content digest to match the
edited members, as a careful forger would, so only the deeper check can catch them (the
builders are in ``packages.py``; ``test_snapshot_hostile.py`` has the packages built to exhaust
memory or the stack).
"""

from __future__ import annotations

import hashlib
import json
import math
import struct
import tracemalloc
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest

import hotmem
from hotmem.snapshot import format as fmt
from hotmem.snapshot.verify import DIGEST_BLOCK
from tests.hotmem.packages import (
    MANIFEST,
    R0,
    R1,
    V0,
    V1,
    Member,
    Members,
    manifest_of,
    read_members,
    refreshed,
    with_manifest,
    write_members,
    write_zip,
)

MEMORIES = [
    {
        "memory_id": f"m-{i}",
        "identifier": "acme" if i % 2 else "globex",
        "fact": fact,
        "importance": 0.5,
        "tags": ["t"],
        "created_at": "2026-01-01T00:00:00Z",
    }
    for i, fact in enumerate(
        [
            "Invoices above EUR 5,000 need two approvals.",
            "Backups run nightly at 02:00 UTC.",
            "Le café est servi à 9h.",
            "Deploys freeze on Fridays.",
            "Expense claims are filed within 30 days.",
            "東京オフィスは三階です。",
            "Passwords rotate every 90 days.",
        ]
    )
]


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A valid package of 7 memories in two chunks (4 + 3)."""
    directory = tmp_path_factory.mktemp("good")
    with pytest.MonkeyPatch.context() as patch, hotmem.open_store(directory / "s.db") as store:
        patch.setattr(fmt, "CHUNK_RECORDS", 4)
        store.add_many(MEMORIES)
        store.snapshot(directory / "good.zip")
    return directory / "good.zip"


def edit_lines(members: Members, name: str, edit: Callable[[list[str]], list[str]]) -> Members:
    lines = members[name].decode().split("\n")[:-1]
    return {**members, name: ("\n".join(edit(lines)) + "\n").encode()}


def edit_record(index: int, **fields: object) -> Callable[[list[str]], list[str]]:
    def edit(lines: list[str]) -> list[str]:
        record = json.loads(lines[index])
        record.update(fields)
        lines[index] = json.dumps(record, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return lines

    return edit


def edit_manifest(**changes: object) -> Callable[[Members], Members]:
    def edit(members: Members) -> Members:
        manifest = manifest_of(members)
        for dotted, value in changes.items():
            *path, last = dotted.split("__")
            target = manifest
            for key in path:
                target = target[int(key)] if isinstance(target, list) else target[key]
            target[int(last) if isinstance(target, list) else last] = value
        return with_manifest(members, manifest)

    return edit


def nan_vector(members: Members) -> Members:
    vectors = bytearray(members["vectors/000000.f32"])
    vectors[256 + 8 : 256 + 12] = struct.pack("<f", math.nan)
    return refreshed({**members, "vectors/000000.f32": bytes(vectors)})


def reorder(*names: str) -> Callable[[Members], Members]:
    def edit(members: Members) -> Members:
        return {name: members[name] for name in names} | members

    return edit


# id -> (edit of the members, [(location, check), ...] expected, in order)
CASES: dict[str, tuple[Callable[[Members], Members], list[tuple[str, str]]]] = {
    "edited record": (
        lambda m: edit_lines(m, R0, edit_record(1, fact="Backups run nightly at 03:00 UTC.")),
        [(R0, "sha256"), (MANIFEST, "content-digest")],
    ),
    "edited record, manifest forged to match": (
        lambda m: refreshed(edit_lines(m, R0, edit_record(1, importance=1.5))),
        [(f"{R0}:2", "record")],
    ),
    "missing member": (
        lambda m: {k: v for k, v in m.items() if k != V1},
        [(V1, "member-missing")],
    ),
    "missing member, left out of the manifest too": (
        lambda m: edit_manifest(members=manifest_of(m)["members"][:3])(
            {k: v for k, v in m.items() if k != V1}
        ),
        [
            (MANIFEST, "member-missing"),
            (MANIFEST, "record-count"),
            (R1, "member-extra"),
            (MANIFEST, "content-digest"),
        ],
    ),
    "extra member with a format name": (
        lambda m: {**m, "records/000002.jsonl": m[R1]},
        [("records/000002.jsonl", "member-extra")],
    ),
    "extra member with a foreign name": (
        lambda m: {**m, "README.txt": b"hello"},
        [("README.txt", "member-name")],
    ),
    "duplicate memory_id in a chunk": (
        lambda m: refreshed(edit_lines(m, R0, edit_record(1, memory_id="m-0"))),
        [(f"{R0}:2", "duplicate-id")],
    ),
    "duplicate memory_id across chunks": (
        lambda m: refreshed(edit_lines(m, R1, edit_record(0, memory_id="m-3"))),
        [(R1, "duplicate-id")],
    ),
    "records out of order": (
        lambda m: refreshed(edit_lines(m, R0, lambda lines: [lines[1], lines[0], *lines[2:]])),
        [(f"{R0}:2", "order")],
    ),
    "malformed JSON": (
        lambda m: refreshed(
            edit_lines(m, R0, lambda lines: [lines[0], '{"memory_id":', *lines[2:]])
        ),
        [(f"{R0}:2", "json")],
    ),
    "a line that is not an object": (
        lambda m: refreshed(edit_lines(m, R0, lambda lines: [lines[0], "[1, 2]", *lines[2:]])),
        [(f"{R0}:2", "record")],
    ),
    "wrong record count": (
        edit_manifest(record_count=8),
        [(MANIFEST, "record-count")],
    ),
    "wrong record count of a member": (
        edit_manifest(members__2__records=2, members__3__records=2, members__3__size=512),
        [(MANIFEST, "record-count"), (V1, "size"), (R1, "record-count")],
    ),
    "manifest lies about a digest": (
        edit_manifest(members__0__sha256="0" * 64),
        [(R0, "sha256")],
    ),
    "manifest lies about the content digest": (
        edit_manifest(content_digest="f" * 64),
        [(MANIFEST, "content-digest")],
    ),
    "manifest lies about a size": (
        edit_manifest(members__0__size=10),
        [(R0, "size")],
    ),
    "unknown version": (edit_manifest(format_version=3), [(MANIFEST, "format-version")]),
    "version as text": (edit_manifest(format_version="2"), [(MANIFEST, "format-version")]),
    "unknown format": (edit_manifest(format="hotmem-snapshot-x"), [(MANIFEST, "format")]),
    "incompatible embedding model": (
        edit_manifest(embedding__model="all-MiniLM-L6-v2"),
        [(MANIFEST, "embedding-model")],
    ),
    "incompatible embedding dimension": (
        edit_manifest(embedding__dimension=384),
        [
            (MANIFEST, "embedding-dimension"),
            (V0, "size"),
            (V1, "size"),
            (V0, "vector"),
            (V1, "vector"),
        ],
    ),
    "incompatible vector dtype": (
        edit_manifest(embedding__dtype="float16-le"),
        [(MANIFEST, "embedding-dtype")],
    ),
    "FTS tokenizer not a name": (
        edit_manifest(fts__tokenizer=["porter"]),
        [(MANIFEST, "fts-tokenizer")],
    ),
    "FTS tokenizer empty": (
        edit_manifest(fts__tokenizer=""),
        [(MANIFEST, "fts-tokenizer")],
    ),
    "incompatible FTS columns": (
        edit_manifest(fts__columns=["fact", "tags"]),
        [(MANIFEST, "fts-columns")],
    ),
    "manifest not JSON": (
        lambda m: {**m, MANIFEST: m[MANIFEST][:-20]},
        [(MANIFEST, "manifest")],
    ),
    "manifest without a field": (
        lambda m: with_manifest(m, {k: v for k, v in manifest_of(m).items() if k != "fts"}),
        [(MANIFEST, "manifest")],
    ),
    "manifest with an unknown field": (
        edit_manifest(created_by="someone"),
        [(MANIFEST, "manifest")],
    ),
    "manifest not first": (reorder(R0, V0, MANIFEST, R1, V1), [("package", "member-order")]),
    "members out of order": (reorder(MANIFEST, V0, R0, R1, V1), [("package", "member-order")]),
    "a vector that is not a number": (nan_vector, [(V0, "vector")]),
    "vectors of the wrong size": (
        lambda m: refreshed({**m, V0: m[V0][:-4]}),
        [(V0, "size"), (V0, "vector")],
    ),
}


@pytest.mark.parametrize("case", CASES)
def test_verification_catches(good: Path, tmp_path: Path, case: str) -> None:
    edit, expected = CASES[case]
    package = write_members(tmp_path / "bad.zip", edit(read_members(good)))
    report = hotmem.verify_snapshot(package)
    assert not report.ok
    assert [(p.location, p.check) for p in report.problems] == expected
    with pytest.raises(hotmem.VerificationError) as raised:
        hotmem.hydrate(package, tmp_path / "target.db")
    assert raised.value.report == report
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.zip"]


def test_the_helpers_rebuild_the_package_byte_for_byte(good: Path, tmp_path: Path) -> None:
    rebuilt = write_members(tmp_path / "same.zip", refreshed(read_members(good)))
    assert rebuilt.read_bytes() == good.read_bytes()
    assert hotmem.verify_snapshot(good).ok


@pytest.mark.parametrize(
    ("case", "expected", "found"),
    [
        ("edited record", "(manifest)", None),
        ("manifest lies about a digest", "0" * 64 + " (manifest)", None),
        ("wrong record count", "8 records (record_count)", "7 in the members"),
        ("unknown version", "2 (the version this HotMem reads)", "3"),
        ("incompatible embedding model", "'hotmem-hash-v1' (this HotMem's embedder)", None),
        ("duplicate memory_id in a chunk", "memory_id after 'm-0' (ascending, unique)", None),
        (
            "duplicate memory_id across chunks",
            "memory_id after 'm-3' (the last of records/000000.jsonl)",
            "memory_id='m-3'",
        ),
        ("edited record, manifest forged to match", "importance in [0, 1]", "importance=1.5"),
    ],
)
def test_problems_say_what_was_expected_and_found(
    good: Path, tmp_path: Path, case: str, expected: str, found: str | None
) -> None:
    edit, _ = CASES[case]
    package = write_members(tmp_path / "bad.zip", edit(read_members(good)))
    problem = hotmem.verify_snapshot(package).problems[0]
    assert problem.expected.endswith(expected)
    if found is not None:
        assert problem.found == found
    assert str(problem) == (
        f"{problem.location}: {problem.check}: expected {problem.expected}; found {problem.found}"
    )


def test_a_lie_about_the_digest_names_both_digests(good: Path, tmp_path: Path) -> None:
    members = read_members(good)
    package = write_members(
        tmp_path / "bad.zip", edit_manifest(members__0__sha256="0" * 64)(members)
    )
    [problem] = hotmem.verify_snapshot(package).problems
    assert problem.found == hashlib.sha256(members[R0]).hexdigest()


# The checks that need the records or vectors parsed, which ``digests_only`` leaves out (with
# a member's record count, which needs its lines counted; the manifest's own sum stays).
PARSED_CHECKS = {"record", "json", "duplicate-id", "order", "vector", "limit", "more-problems"}


@pytest.mark.parametrize("case", CASES)
def test_digests_only_reports_every_problem_but_those_of_the_parsed_records(
    good: Path, tmp_path: Path, case: str
) -> None:
    edit, expected = CASES[case]
    package = write_members(tmp_path / "bad.zip", edit(read_members(good)))
    report = hotmem.verify_snapshot(package, digests_only=True)
    of_the_bytes = [
        (location, check)
        for location, check in expected
        if check not in PARSED_CHECKS and not (check == "record-count" and location != MANIFEST)
    ]
    assert [(p.location, p.check) for p in report.problems] == of_the_bytes
    assert report.digests_only
    assert report.ok == (not of_the_bytes)  # a forged manifest of invalid records passes


def test_digests_only_checks_the_bytes_of_a_good_package(good: Path) -> None:
    full, quick = hotmem.verify_snapshot(good), hotmem.verify_snapshot(good, digests_only=True)
    assert quick.ok
    assert (quick.record_count, quick.content_digest) == (7, full.content_digest)
    assert quick.to_dict() == {**full.to_dict(), "digests_only": True}
    with pytest.raises(hotmem.ValidationError, match="not with digests_only"):
        hotmem.verify_snapshot(good, digests_only=True, recompute_vectors=True)


@pytest.mark.parametrize("digests_only", [False, True])
def test_every_flipped_byte_is_caught(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, digests_only: bool
) -> None:
    monkeypatch.setattr(fmt, "CHUNK_RECORDS", 2)
    with hotmem.open_store(tmp_path / "s.db") as store:
        store.add_many(MEMORIES[:3])
        store.snapshot(tmp_path / "p.zip")
    data = (tmp_path / "p.zip").read_bytes()
    bad = tmp_path / "bad.zip"
    missed = []
    for position in range(len(data)):
        flipped = bytearray(data)
        flipped[position] ^= 0xFF
        bad.write_bytes(flipped)
        if hotmem.verify_snapshot(bad, digests_only=digests_only).ok:
            missed.append(position)
    assert missed == []


def test_digests_only_reads_members_longer_than_its_block(tmp_path: Path) -> None:
    # --digests-only reads a member a DIGEST_BLOCK at a time (64 KiB): a member of several
    # blocks, deflated or stored, is checked whole, and a byte flipped past its first block
    # is caught by its CRC-32 and SHA-256 alike.
    with hotmem.open_store(tmp_path / "s.db") as store:
        store.add_many(
            {"fact": f"Fact {n}: the copper kettle number {n} sits on shelf {n % 97}.",
             "identifier": "acme", "memory_id": f"m-{n:05d}"}
            for n in range(1200)
        )  # fmt: skip
        store.snapshot(tmp_path / "p.zip")
    good = tmp_path / "p.zip"
    vectors = "vectors/000000.f32"
    with zipfile.ZipFile(good) as archive:
        sizes = {info.filename: info.file_size for info in archive.infolist()}
        offset = archive.getinfo(vectors).header_offset
    assert sizes[vectors] == 1200 * 256 > 4 * DIGEST_BLOCK
    assert sizes["records/000000.jsonl"] > DIGEST_BLOCK
    full, quick = hotmem.verify_snapshot(good), hotmem.verify_snapshot(good, digests_only=True)
    assert quick.ok
    assert full.ok
    assert (quick.record_count, quick.content_digest) == (1200, full.content_digest)
    data = bytearray(good.read_bytes())
    data[offset + 30 + len(vectors) + 3 * DIGEST_BLOCK + 5] ^= 0x01  # a stored member's byte
    bad = tmp_path / "bad.zip"
    bad.write_bytes(bytes(data))
    report = hotmem.verify_snapshot(bad, digests_only=True)
    assert [(p.location, p.check) for p in report.problems] == [
        (vectors, "crc32"),
        (vectors, "sha256"),
        ("manifest.json", "content-digest"),
    ]


@pytest.mark.parametrize("keep", [0, 1, 21, 22, 100, -1, -21, -22, -23])
def test_truncation_is_caught(good: Path, tmp_path: Path, keep: int) -> None:
    data = good.read_bytes()
    package = tmp_path / "cut.zip"
    package.write_bytes(data[:keep])
    report = hotmem.verify_snapshot(package)
    assert [(p.location, p.check) for p in report.problems] == [("package", "container")]


def test_a_file_that_is_not_a_zip(tmp_path: Path) -> None:
    package = tmp_path / "notes.txt"
    package.write_text("just some text that is long enough to hold an end record\n" * 3)
    [problem] = hotmem.verify_snapshot(package).problems
    assert (problem.location, problem.check) == ("package", "container")
    assert "signature=101010256" in problem.expected


@pytest.mark.parametrize(
    "name",
    [
        "../escape.jsonl",
        "/etc/passwd",
        "records/../../escape.jsonl",
        "records\\000000.jsonl",
        "C:/records/000000.jsonl",
        "records/000000.jsonl/",
        "./manifest.json",
        "records/0000001.jsonl",
    ],
)
def test_member_names_cannot_escape(good: Path, tmp_path: Path, name: str) -> None:
    members = {**read_members(good), name: b'{"memory_id":"x"}\n'}
    work = tmp_path / "work"
    work.mkdir()
    package = write_members(work / "bad.zip", members)
    report = hotmem.verify_snapshot(package)
    assert [(p.location, p.check, p.found) for p in report.problems] == [
        (name, "member-name", repr(name))
    ]
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["bad.zip", "work"]


def test_a_duplicate_member_name(good: Path, tmp_path: Path) -> None:
    members = read_members(good)
    entries = [Member(name, data) for name, data in members.items()]
    package = write_zip(tmp_path / "bad.zip", [*entries, Member(R0, members[R0])])
    report = hotmem.verify_snapshot(package)
    assert [(p.location, p.check, p.expected) for p in report.problems] == [
        (R0, "member-name", "each name once")
    ]


def test_a_decompression_bomb_stops_at_the_declared_size(good: Path, tmp_path: Path) -> None:
    members = read_members(good)
    bomb = b"{" * (64 * 2**20)  # 64 MiB that deflate squeezes to 64 KiB
    entries = [
        Member(name, bomb, declared_size=len(data)) if name == R0 else Member(name, data)
        for name, data in members.items()
    ]
    package = write_zip(tmp_path / "bomb.zip", entries)
    del bomb
    assert package.stat().st_size < 200_000
    tracemalloc.start()
    report = hotmem.verify_snapshot(package)
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert [(p.location, p.check) for p in report.problems] == [(R0, "size")]
    assert report.problems[0].found == f"more than {len(members[R0])} bytes (reading stopped)"
    assert peak < 2 * 2**20


def test_a_declared_size_above_the_limit_is_never_decompressed(good: Path, tmp_path: Path) -> None:
    members = read_members(good)
    entries = [
        Member(name, data, declared_size=fmt.MAX_MEMBER_BYTES + 1)
        if name == R0
        else Member(name, data)
        for name, data in members.items()
    ]
    report = hotmem.verify_snapshot(write_zip(tmp_path / "big.zip", entries))
    assert [(p.location, p.check, p.found) for p in report.problems] == [
        (R0, "limit", f"{fmt.MAX_MEMBER_BYTES + 1} declared")
    ]


@pytest.mark.parametrize("method", [fmt.STORED, fmt.DEFLATED])
def test_either_method_is_accepted_for_any_member(good: Path, tmp_path: Path, method: int) -> None:
    entries = [Member(name, data, method=method) for name, data in read_members(good).items()]
    report = hotmem.verify_snapshot(write_zip(tmp_path / "other.zip", entries))
    assert (report.ok, report.problems) == (True, ())
    assert report.content_digest == hotmem.verify_snapshot(good).content_digest


def test_an_unknown_compression_method(good: Path, tmp_path: Path) -> None:
    members = read_members(good)
    entries = [Member(n, d, method=12 if n == R0 else None) for n, d in members.items()]
    report = hotmem.verify_snapshot(write_zip(tmp_path / "bz.zip", entries))
    assert [(p.location, p.check) for p in report.problems] == [(R0, "compression")]


def test_every_bad_line_is_reported(good: Path, tmp_path: Path) -> None:
    def edit(lines: list[str]) -> list[str]:
        for index in (0, 2):
            lines = edit_record(index, tags="not a list")(lines)
        return [*lines[:3], "nope", lines[3]]

    members = refreshed(edit_lines(read_members(good), R0, edit))
    report = hotmem.verify_snapshot(write_members(tmp_path / "bad.zip", members))
    assert [(p.location, p.check) for p in report.problems] == [
        (f"{R0}:1", "record"),
        (f"{R0}:3", "record"),
        (f"{R0}:4", "json"),
        (R0, "record-count"),
        (V0, "vector"),
    ]


def test_recompute_vectors_proves_the_derived_index(good: Path, tmp_path: Path) -> None:
    assert hotmem.verify_snapshot(good, recompute_vectors=True).ok
    members = read_members(good)
    vectors = bytearray(members[V1])
    vectors[256:512] = members[V1][:256]  # the second vector is a copy of the first
    package = write_members(tmp_path / "bad.zip", refreshed({**members, V1: bytes(vectors)}))
    assert hotmem.verify_snapshot(package).ok  # well-formed, so only recomputing can tell
    report = hotmem.verify_snapshot(package, recompute_vectors=True)
    assert [(p.location, p.check) for p in report.problems] == [(f"{R1}:2", "vector")]


@pytest.mark.parametrize("path", ["missing.zip", "."])
def test_a_package_that_cannot_be_opened(tmp_path: Path, path: str) -> None:
    with pytest.raises(hotmem.SnapshotError, match="cannot read package"):
        hotmem.verify_snapshot(tmp_path / path)


def test_report_as_dict(good: Path, tmp_path: Path) -> None:
    report = hotmem.verify_snapshot(good)
    assert report.to_dict() == {
        "path": str(good),
        "ok": True,
        "record_count": 7,
        "content_digest": manifest_of(read_members(good))["content_digest"],
        "problems": [],
        "spaces": [],
        "not_recomputed": [],
        "digests_only": False,
    }
