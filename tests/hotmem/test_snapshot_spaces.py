"""Packages with vector spaces beyond hotmem-hash-v1, built byte by byte: verification,
hostile manifests and members, and what hydration does with a space it cannot carry.

The packages here carry a space of a model this HotMem does not have (``other-model-v1``), so
no model is needed; the round trip with the real semantic model is in
``test_snapshot_semantic.py``.
"""

from __future__ import annotations

import hashlib
import math
import os
import struct
from pathlib import Path

import pytest

import hotmem
from hotmem.embedding.hash_v1 import embed_bytes
from tests.hotmem.packages import (
    MANIFEST,
    R0,
    V0,
    Space,
    build_space_package,
    record_line,
)

SPACE = "other-model-v1"
S0, S1 = f"spaces/{SPACE}/000000.f32", f"spaces/{SPACE}/000001.f32"
R1, V1 = "records/000001.jsonl", "vectors/000001.f32"
DIGEST = "ab" * 32
FACTS = [["Invoices need two approvals.", "Backups run nightly."], ["Deploys freeze on Fridays."]]


def _unit(*values: float) -> bytes:
    norm = math.hypot(*values)
    return struct.pack(f"<{len(values)}f", *(value / norm for value in values))


def _vectors(count: int, start: float) -> bytes:
    """Distinct unit vectors (a package's vectors must be: ``hotmem.embedding.vectors``)."""
    return b"".join(_unit(start + i, 1.0, -0.5, 0.25) for i in range(count))


def _chunks() -> list[tuple[bytes, bytes]]:
    chunks = []
    number = 0
    for facts in FACTS:
        lines = b""
        for fact in facts:
            number += 1
            lines += record_line(f"m-{number}", fact)
        chunks.append((lines, b"".join(map(embed_bytes, facts))))
    return chunks


def _space(**changes: object) -> Space:
    space = Space(SPACE, DIGEST, 4, [_vectors(2, 0.0), _vectors(1, 2.0)])
    for key, value in changes.items():
        setattr(space, key, value)
    return space


def build(path: Path, *spaces: Space, **options: object) -> Path:
    return build_space_package(path, _chunks(), list(spaces or [_space()]), **options)  # type: ignore[arg-type]


def _edit_space(**fields: object):
    def edit(manifest: dict) -> dict:
        manifest["spaces"][0].update(fields)
        return manifest

    return edit


def _edit_member(index: int, **fields: object):
    def edit(manifest: dict) -> dict:
        manifest["spaces"][0]["members"][index].update(fields)
        return manifest

    return edit


def _duplicate(manifest: dict) -> dict:
    manifest["spaces"] = manifest["spaces"] * 2
    return manifest


def _unsorted(manifest: dict) -> dict:
    second = {**manifest["spaces"][0], "name": "aaa-model", "model_id": "aaa-model"}
    second["members"] = [
        {**member, "name": member["name"].replace(SPACE, "aaa-model")}
        for member in second["members"]
    ]
    manifest["spaces"].append(second)
    return manifest


def _drop(name: str):
    return lambda members: [member for member in members if member.name != name]


def _swap(first: str, second: str):
    def swap(members: list) -> list:
        names = [member.name for member in members]
        i, j = names.index(first), names.index(second)
        members[i], members[j] = members[j], members[i]
        return members

    return swap


def _extra(members: list) -> list:
    from tests.hotmem.packages import Member

    return [*members, Member(f"spaces/{SPACE}/000002.f32", _vectors(1, 0.0))]


def _deflated(name: str):
    def deflate(members: list) -> list:
        for member in members:
            if member.name == name:
                member.method = 8
        return members

    return deflate


NAN = struct.pack("<4f", 0.0, float("nan"), 0.0, 0.0)

# case -> (spaces, build options, the (location, check) of every problem, in order)
HOSTILE: dict[str, tuple[list[Space], dict, list[tuple[str, str]]]] = {
    "wrong dimension": (
        [_space()],
        {"edit": _edit_space(dimension=5)},
        [(S0, "size"), (S1, "size"), (S0, "vector"), (S1, "vector")],
    ),
    "dimension not a number": (
        [_space()],
        {"edit": _edit_space(dimension="384")},
        [(MANIFEST, "space-dimension")],
    ),
    "count mismatch": (
        [_space()],
        {"edit": _edit_member(0, records=1)},
        [(S0, "record-count")],
    ),
    "truncated member, manifest refreshed": (
        [_space(vectors=[_vectors(2, 0.0)[:-4], _vectors(1, 2.0)])],
        {},
        [(S0, "size"), (S0, "vector")],
    ),
    "a member shorter than its manifest entry": (
        [_space()],
        {"edit": _edit_member(1, size=12)},
        [(S1, "size"), (S1, "size")],
    ),
    "duplicate space": ([_space()], {"edit": _duplicate}, [(MANIFEST, "space-name")]),
    "spaces out of order": ([_space()], {"edit": _unsorted}, [(MANIFEST, "space-name")]),
    "unknown dtype": (
        [_space()],
        {"edit": _edit_space(dtype="float16-le")},
        [(MANIFEST, "space-dtype")],
    ),
    "hash-v1 as a further space": (
        [_space()],
        {"edit": _edit_space(name="hotmem-hash-v1", model_id="hotmem-hash-v1")},
        [(MANIFEST, "space-name")],
    ),
    "a name that climbs out": (
        [_space()],
        {"edit": _edit_space(name="../vectors", model_id="../vectors")},
        [(MANIFEST, "space-name")],
    ),
    "model id other than the name": (
        [_space()],
        {"edit": _edit_space(model_id="another-model")},
        [(MANIFEST, "space-name")],
    ),
    "digest not hex": (
        [_space()],
        {"edit": _edit_space(digest="xyz")},
        [(MANIFEST, "space-digest")],
    ),
    "empty spaces": ([_space()], {"edit": lambda m: {**m, "spaces": []}}, [(MANIFEST, "manifest")]),
    "unknown field in a space": (
        [_space()],
        {"edit": _edit_space(license="MIT")},
        [(MANIFEST, "manifest")],
    ),
    "fewer members than chunks": (
        [_space()],
        {"edit": lambda m: (m["spaces"][0]["members"].pop(), m)[1]},
        [(MANIFEST, "member-missing")],
    ),
    "member misnamed in the manifest": (
        [_space()],
        {"edit": _edit_member(1, name=f"spaces/{SPACE}/000007.f32")},
        [
            (MANIFEST, "member-name"),
            (S1, "member-extra"),
            (f"spaces/{SPACE}/000007.f32", "member-missing"),
        ],
    ),
    "member missing from the zip": (
        [_space()],
        {"members": _drop(S1)},
        [(S1, "member-missing")],
    ),
    "an extra member": (
        [_space()],
        {"members": _extra},
        [(f"spaces/{SPACE}/000002.f32", "member-extra")],
    ),
    "members out of package order": (
        [_space()],
        {"members": _swap(V0, S0)},
        [("package", "member-order")],
    ),
    "a space member that inflates to 64 MiB": (
        [_space(vectors=[bytes(64 * 2**20), _vectors(1, 2.0)])],
        {"members": _deflated(S0)},
        [(S0, "size"), (S0, "limit")],
    ),
    "more spaces than the format allows": (
        [_space(name=f"model-{i:02d}") for i in range(17)],
        {},
        [(MANIFEST, "limit")],
    ),
    "a NaN": (
        [_space(vectors=[_vectors(1, 0.0) + NAN, _vectors(1, 2.0)])],
        {},
        [(S0, "vector")],
    ),
}


@pytest.fixture
def good(tmp_path: Path) -> Path:
    return build(tmp_path / "good.zip")


def test_a_package_with_a_further_space_verifies(good: Path) -> None:
    report = hotmem.verify_snapshot(good)
    assert report.problems == ()
    assert report.record_count == 3
    assert report.spaces == (hotmem.VectorSpace(SPACE, SPACE, DIGEST, 4, "float32-le"),)
    assert report.to_dict()["spaces"] == [
        {"name": SPACE, "model_id": SPACE, "digest": DIGEST, "dimension": 4, "dtype": "float32-le"}
    ]
    assert report.not_recomputed == ()


def test_members_interleave_chunk_by_chunk(good: Path) -> None:
    import zipfile

    with zipfile.ZipFile(good) as archive:
        assert archive.namelist() == [MANIFEST, R0, V0, S0, R1, V1, S1]
        assert archive.getinfo(S0).compress_type == zipfile.ZIP_STORED
    members = [R0, V0, S0, R1, V1, S1]
    with zipfile.ZipFile(good) as archive:
        listing = "".join(
            f"{hashlib.sha256(archive.read(name)).hexdigest()}  {name}\n" for name in members
        )
    digest = hashlib.sha256(listing.encode()).hexdigest()
    assert hotmem.verify_snapshot(good).content_digest == digest


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_spaces_are_reported(tmp_path: Path, case: str) -> None:
    spaces, options, expected = HOSTILE[case]
    package = build(tmp_path / "bad.zip", *spaces, **options)
    report = hotmem.verify_snapshot(package)
    assert [(p.location, p.check) for p in report.problems] == expected
    for problem in report.problems:
        assert problem.expected
        assert problem.found


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_digests_only_reports_every_problem_of_a_hostile_space_but_its_vectors_values(
    tmp_path: Path, case: str
) -> None:
    # --digests-only parses no record, so a space's vectors are not matched to records nor
    # checked for finite unit values: the rest it reports as the full verify does.
    spaces, options, expected = HOSTILE[case]
    package = build(tmp_path / "bad.zip", *spaces, **options)
    report = hotmem.verify_snapshot(package, digests_only=True)
    of_the_bytes = [(location, check) for location, check in expected if check != "vector"]
    assert [(p.location, p.check) for p in report.problems] == of_the_bytes
    assert report.ok == (not of_the_bytes)


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hydration_refuses_a_hostile_space_and_writes_nothing(tmp_path: Path, case: str) -> None:
    spaces, options, _ = HOSTILE[case]
    package = build(tmp_path / "bad.zip", *spaces, **options)
    target = tmp_path / "target.db"
    with pytest.raises((hotmem.VerificationError, hotmem.HydrationError)):
        hotmem.hydrate(package, target, drop_spaces=[SPACE] if case == "a NaN" else ())
    assert sorted(os.listdir(tmp_path)) == ["bad.zip"]


def test_recompute_says_which_spaces_it_could_not(good: Path, tmp_path: Path) -> None:
    report = hotmem.verify_snapshot(good, recompute_vectors=True)
    assert report.problems == ()
    assert report.not_recomputed == (
        (SPACE, f"this HotMem has no embedder {SPACE!r} (it has hotmem-hash-v1, all-minilm-l6-v2)"),
    )


def test_recompute_still_checks_the_hash_vectors(tmp_path: Path) -> None:
    chunks = _chunks()
    forged = chunks[0][1][:256] + embed_bytes("where is the bonus wired")
    chunks[0] = (chunks[0][0], forged)
    package = build_space_package(tmp_path / "p.zip", chunks, [_space()])
    assert hotmem.verify_snapshot(package).problems == ()
    report = hotmem.verify_snapshot(package, recompute_vectors=True)
    assert [(p.location, p.check, p.expected) for p in report.problems] == [
        (f"{R0}:2", "vector", "the hotmem-hash-v1 vector")
    ]


def test_hydration_refuses_a_space_it_cannot_carry_before_writing(
    good: Path, tmp_path: Path
) -> None:
    target = tmp_path / "target.db"
    with pytest.raises(hotmem.HydrationError) as caught:
        hotmem.hydrate(good, target)
    message = str(caught.value)
    assert message == (
        f"the package's vector space {SPACE!r} (digest abababababab...) cannot be used as it is: "
        f"this HotMem has no embedder {SPACE!r} (it has hotmem-hash-v1, all-minilm-l6-v2); pass "
        f"--reindex {SPACE} to rebuild it with this HotMem's embedder, or --drop-space {SPACE} "
        "to hydrate without it (hydrate(..., reindex=[...], drop_spaces=[...])); nothing was "
        "written"
    )
    assert sorted(os.listdir(tmp_path)) == ["good.zip"]


def test_a_space_of_an_unknown_model_cannot_be_reindexed(good: Path, tmp_path: Path) -> None:
    with pytest.raises(
        hotmem.HydrationError, match=f"cannot reindex the package's space {SPACE!r}"
    ):
        hotmem.hydrate(good, tmp_path / "target.db", reindex=[SPACE])
    assert not (tmp_path / "target.db").exists()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"reindex": ["nope"]}, "--reindex nope: the package holds no space 'nope'"),
        ({"drop_spaces": ["nope"]}, "--drop-space nope: the package holds no space 'nope'"),
        ({"drop_spaces": ["hotmem-hash-v1"]}, "'hotmem-hash-v1' is not a further space"),
        ({"reindex": [SPACE], "drop_spaces": [SPACE]}, "given to both --reindex and --drop-space"),
    ],
)
def test_space_options_must_name_a_further_space(
    good: Path, tmp_path: Path, options: dict, message: str
) -> None:
    with pytest.raises(
        hotmem.HydrationError, match=message.replace("(", r"\(").replace(")", r"\)")
    ):
        hotmem.hydrate(good, tmp_path / "target.db", **options)
    assert not (tmp_path / "target.db").exists()


def test_a_dropped_space_is_left_out(good: Path, tmp_path: Path) -> None:
    report = hotmem.hydrate(good, tmp_path / "target.db", drop_spaces=[SPACE])
    assert (report.record_count, report.spaces) == (3, ((SPACE, "drop"),))
    assert report.content_digest == hotmem.verify_snapshot(good).content_digest
    with hotmem.open_store(tmp_path / "target.db") as store:
        assert [space.name for space in store.spaces] == ["hotmem-hash-v1"]
        assert store.count() == 3


def test_a_package_from_before_spaces_hydrates_with_the_hash_space_alone(tmp_path: Path) -> None:
    package = Path(__file__).parent / "data" / "unicode61-v1.hotmem"
    report = hotmem.verify_snapshot(package, recompute_vectors=True)
    assert (report.problems, report.spaces, report.not_recomputed) == ((), (), ())
    hydrated = hotmem.hydrate(package, tmp_path / "t.db")
    assert (hydrated.record_count, hydrated.spaces) == (4, ())
    with hotmem.open_store(tmp_path / "t.db") as store:
        assert store.spaces == (
            hotmem.VectorSpace(
                *(["hotmem-hash-v1"] * 2), hotmem.embedding.registry.HASH_DIGEST, 64, "float32-le"
            ),
        )
