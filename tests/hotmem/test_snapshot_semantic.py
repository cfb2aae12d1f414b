"""Packages of a store with the semantic space (the real model of the ``semantic`` extra, on a
handful of facts): the manifest's space, the round trip, recomputing, and a package whose
space this HotMem's model did not make.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

import hotmem
from hotmem.snapshot.vector_checks import SAMPLE_STRIDE
from tests.hotmem.packages import (
    MANIFEST,
    manifest_of,
    read_members,
    with_manifest,
    write_members,
)

MODEL = "all-minilm-l6-v2"
MEMBER = f"spaces/{MODEL}/000000.f32"
FACTS = [
    "Invoices above EUR 5,000 need two approvals.",
    "Backups run nightly at 02:00 UTC.",
    "Deploys freeze on Fridays after 15:00.",
    "The Orchard café in São Paulo opens at 07:30.",
    "東京オフィスの会議室は三階にあります。",
]
MEMORIES = [
    {
        "memory_id": f"m-{i}",
        "identifier": "acme",
        "fact": fact,
        "created_at": "2026-01-01T00:00:00Z",
        "importance": 0.5,
        "tags": [],
    }
    for i, fact in enumerate(FACTS)
]


@pytest.fixture(scope="module")
def embedder() -> hotmem.Embedder:
    return hotmem.get_embedder(MODEL)


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory, embedder: hotmem.Embedder) -> Path:
    directory = tmp_path_factory.mktemp("semantic")
    with hotmem.open_store(directory / "source.db") as store:
        store.add_many(MEMORIES)
        store.add_space(MODEL)
        store.snapshot(directory / "p.zip")
    return directory / "p.zip"


def space_vectors(path: Path) -> dict[str, bytes]:
    """memory_id -> its vector in the semantic space, read from the store file."""
    connection = sqlite3.connect(path)
    try:
        rows = connection.execute(
            "SELECT m.memory_id, v.vector FROM memories AS m JOIN space_vectors AS v "
            "ON v.memory_rowid = m.rowid AND v.space = ? ORDER BY m.memory_id",
            (MODEL,),
        )
        return dict(rows)
    finally:
        connection.close()


def test_the_manifest_records_the_space(package: Path, embedder: hotmem.Embedder) -> None:
    members = read_members(package)
    assert list(members) == [MANIFEST, "records/000000.jsonl", "vectors/000000.f32", MEMBER]
    vectors = members[MEMBER]
    assert vectors == b"".join(embedder.embed_many(FACTS))
    assert manifest_of(members)["spaces"] == [
        {
            "digest": embedder.digest,
            "dimension": 384,
            "dtype": "float32-le",
            "members": [
                {
                    "name": MEMBER,
                    "records": 5,
                    "sha256": hashlib.sha256(vectors).hexdigest(),
                    "size": 5 * 1536,
                }
            ],
            "model_id": MODEL,
            "name": MODEL,
        }
    ]


def test_same_store_same_bytes(package: Path, tmp_path: Path) -> None:
    with hotmem.open_store(package.parent / "source.db") as store:
        store.snapshot(tmp_path / "again.zip")
    assert (tmp_path / "again.zip").read_bytes() == package.read_bytes()


def test_round_trip_carries_the_vectors(package: Path, tmp_path: Path) -> None:
    verified = hotmem.verify_snapshot(package, recompute_vectors=True)
    assert (verified.problems, verified.not_recomputed) == ((), ())
    report = hotmem.hydrate(package, tmp_path / "copy.db")
    assert report.spaces == ((MODEL, "carry"),)
    assert report.content_digest == verified.content_digest
    assert space_vectors(tmp_path / "copy.db") == space_vectors(package.parent / "source.db")
    with (
        hotmem.open_store(tmp_path / "copy.db") as copy,
        hotmem.open_store(package.parent / "source.db") as source,
    ):
        assert copy.spaces == source.spaces
        assert copy.vector_counts() == {"hotmem-hash-v1": 5, MODEL: 5}
        assert copy.check_integrity() == ()
        queries = ("invoice approvals", "What time do backups run?", "café opening hours")
        for query in queries:
            for profile in ("semantic", "semantic-only"):
                found = hotmem.search_memories(copy, query, profile=profile)
                expected = hotmem.search_memories(source, query, profile=profile)
                assert [(r.memory_id, r.score) for r in found] == [
                    (r.memory_id, r.score) for r in expected
                ]
        found_ids = [
            [r.memory_id for r in hotmem.search_memories(copy, query, profile="semantic")]
            for query in queries
        ]
        assert found_ids == [["m-0"], ["m-1"], ["m-3"]]
        copy.snapshot(tmp_path / "again.zip")
    assert (tmp_path / "again.zip").read_bytes() == package.read_bytes()


def _forged(package: Path, path: Path, embedder: hotmem.Embedder, index: int = 1) -> Path:
    """The package with memory m-<index>'s semantic vector replaced by another text's (a unit
    vector: only recomputing finds it), digests recomputed."""
    members = read_members(package)
    forged = embedder.embed_many(["where should the quarterly bonus be wired"])[0]
    vectors = members[MEMBER]
    start = index * 1536
    members[MEMBER] = vectors[:start] + forged + vectors[start + 1536 :]
    manifest = manifest_of(members)
    space_member = manifest["spaces"][0]["members"][0]
    space_member["sha256"] = hashlib.sha256(members[MEMBER]).hexdigest()
    listing = [*manifest["members"], space_member]
    from hotmem.snapshot.manifest import content_digest

    manifest["content_digest"] = content_digest((m["name"], m["sha256"]) for m in listing)
    return write_members(path, with_manifest(members, manifest))


def test_recompute_catches_a_forged_semantic_vector(
    package: Path, tmp_path: Path, embedder: hotmem.Embedder
) -> None:
    forged = _forged(package, tmp_path / "forged.zip", embedder)
    assert hotmem.verify_snapshot(forged).ok
    report = hotmem.verify_snapshot(forged, recompute_vectors=True)
    assert [(p.location, p.check, p.expected, p.found) for p in report.problems] == [
        (
            "records/000000.jsonl:2",
            "vector",
            f"the {MODEL} vector",
            "another vector for memory_id='m-1'",
        )
    ]
    with pytest.raises(hotmem.VerificationError):
        hotmem.hydrate(forged, tmp_path / "t.db", recompute_vectors=True)
    assert not (tmp_path / "t.db").exists()


def _other_digest(package: Path, path: Path) -> Path:
    """The package as if another model file had made its semantic vectors."""
    members = read_members(package)
    manifest = manifest_of(members)
    manifest["spaces"][0]["digest"] = "0" * 64
    return write_members(path, with_manifest(members, manifest))  # no member changed


def test_a_space_of_another_model_file_is_refused(
    package: Path, tmp_path: Path, embedder: hotmem.Embedder
) -> None:
    other = _other_digest(package, tmp_path / "other.zip")
    assert hotmem.verify_snapshot(other).ok
    reason = (
        f"this HotMem's {MODEL} has digest {embedder.digest!r}, the package's digest "
        f"{'0' * 64!r} (another model made its vectors)"
    )
    report = hotmem.verify_snapshot(other, recompute_vectors=True)
    assert (report.problems, report.not_recomputed) == ((), ((MODEL, reason),))
    with pytest.raises(hotmem.HydrationError) as caught:
        hotmem.hydrate(other, tmp_path / "t.db")
    assert str(caught.value).startswith(
        f"the package's vector space {MODEL!r} (digest 000000000000...) cannot be used as it is: "
        f"{reason}; pass --reindex {MODEL} to rebuild it"
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.zip"]


def test_reindex_rebuilds_the_space_with_this_model(
    package: Path, tmp_path: Path, embedder: hotmem.Embedder
) -> None:
    other = _other_digest(package, tmp_path / "other.zip")
    report = hotmem.hydrate(other, tmp_path / "t.db", reindex=[MODEL])
    assert report.spaces == ((MODEL, "reindex"),)
    with hotmem.open_store(tmp_path / "t.db") as store:
        assert store.space(MODEL).digest == embedder.digest
    # The same model made the source's vectors: rebuilding gives them back exactly.
    assert space_vectors(tmp_path / "t.db") == space_vectors(package.parent / "source.db")


def test_drop_space_hydrates_without_it(package: Path, tmp_path: Path) -> None:
    other = _other_digest(package, tmp_path / "other.zip")
    report = hotmem.hydrate(other, tmp_path / "t.db", drop_spaces=[MODEL])
    assert report.spaces == ((MODEL, "drop"),)
    with hotmem.open_store(tmp_path / "t.db") as store:
        assert [space.name for space in store.spaces] == ["hotmem-hash-v1"]
        assert store.count() == 5
    assert space_vectors(tmp_path / "t.db") == {}


def test_a_model_that_cannot_load_is_named(package: Path, tmp_path: Path) -> None:
    report = hotmem.verify_snapshot(package, recompute_vectors=True, model_dir=tmp_path / "none")
    assert report.problems == ()
    [(space, reason)] = report.not_recomputed
    assert space == MODEL
    assert reason.startswith("expected a model directory holding model.onnx and tokenizer.json")


def test_hydrate_names_a_model_directory_it_cannot_read(package: Path, tmp_path: Path) -> None:
    with pytest.raises(hotmem.HydrationError) as caught:
        hotmem.hydrate(package, tmp_path / "t.db", model_dir=tmp_path / "none")
    assert str(caught.value).startswith(
        f"the package's vector space {MODEL!r} (digest {package_digest(package)[:12]}...) "
        "cannot be used as it is: expected a model directory holding model.onnx and "
        "tokenizer.json (model_dir or HOTMEM_MODEL_DIR), found no directory at "
    )
    assert not (tmp_path / "t.db").exists()


def package_digest(package: Path) -> str:
    return str(manifest_of(read_members(package))["spaces"][0]["digest"])


CARRY_PROBE = """
import sys
import hotmem
report = hotmem.hydrate(sys.argv[1], sys.argv[2])
print(report.spaces, "onnxruntime" in sys.modules)
"""


@pytest.mark.slow
def test_carrying_a_space_loads_the_model_to_check_a_sample(package: Path, tmp_path: Path) -> None:
    # The identity of the embedder (its files hashed) decides whether the space is carried;
    # the model is then loaded to recompute a sample of its vectors (issue 35).
    completed = subprocess.run(
        [sys.executable, "-c", CARRY_PROBE, str(package), str(tmp_path / "t.db")],
        capture_output=True,
        text=True,
        check=True,
        env={k: v for k, v in os.environ.items() if k != "HOTMEM_MODEL_DIR"},
    )
    assert completed.stdout.splitlines() == [f"(({MODEL!r}, 'carry'),) True"]
    assert space_vectors(tmp_path / "t.db") == space_vectors(package.parent / "source.db")


def test_a_hydration_recomputes_every_64th_vector_of_a_carried_space(
    package: Path, tmp_path: Path, embedder: hotmem.Embedder
) -> None:
    assert SAMPLE_STRIDE == 64
    sampled = _forged(package, tmp_path / "first.zip", embedder, index=0)  # records 0, 64, ...
    with pytest.raises(hotmem.VerificationError) as raised:
        hotmem.hydrate(sampled, tmp_path / "t.db")
    assert [(p.location, p.found) for p in raised.value.report.problems] == [
        ("records/000000.jsonl:1", "another vector for memory_id='m-0'")
    ]
    assert not (tmp_path / "t.db").exists()
    unsampled = _forged(package, tmp_path / "second.zip", embedder, index=1)
    hotmem.hydrate(unsampled, tmp_path / "u.db")  # a sample: the others are carried as they are
    with pytest.raises(hotmem.VerificationError):
        hotmem.hydrate(unsampled, tmp_path / "v.db", recompute_vectors=True)


def test_a_space_not_fully_built_is_refused(package: Path, tmp_path: Path) -> None:
    source = tmp_path / "partial.db"
    source.write_bytes((package.parent / "source.db").read_bytes())
    with hotmem.open_store(source) as store:
        store.connection.execute("DELETE FROM space_vectors WHERE memory_rowid = 2")
        with pytest.raises(hotmem.SnapshotError) as caught:
            store.snapshot(tmp_path / "p.zip")
    assert str(caught.value) == (
        f"memory_id='m-1' has no vector in the space {MODEL!r} (expected 1536 bytes); build the "
        f"space first: hotmem reindex --space {MODEL}"
    )
    assert not (tmp_path / "p.zip").exists()


def test_the_cli_refuses_and_offers_the_options(
    package: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from hotmem.cli import main

    other = _other_digest(package, tmp_path / "other.zip")
    assert main(["hydrate", str(other), "--db", str(tmp_path / "t.db")]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith(f"hotmem: the package's vector space {MODEL!r}")
    assert err.count("\n") == 1
    assert f"--drop-space {MODEL}" in err
    assert main(["hydrate", str(other), "--db", str(tmp_path / "t.db"), "--reindex", MODEL]) == 0
    out, _ = capsys.readouterr()
    assert out.splitlines()[1:] == [f"  space {MODEL!r}: rebuilt with this HotMem's embedder"]
    assert main(["verify", str(other), "--recompute-vectors"]) == 0
    out, _ = capsys.readouterr()
    assert out.splitlines()[1].startswith(
        f"  vectors of space {MODEL!r} not recomputed: this HotMem's"
    )
    assert main(["verify", str(other), "--json"]) == 0
    out, _ = capsys.readouterr()
    assert json.loads(out)["spaces"][0]["digest"] == "0" * 64
