"""Hydrating packages: an identical store, atomically, and only into a clean target."""

from __future__ import annotations

import importlib
import os
import sqlite3
from pathlib import Path

import pytest

import hotmem
from hotmem.snapshot import format as fmt

# The module, not the function ``hotmem.snapshot.hydrate`` that the package exports.
hydration = importlib.import_module("hotmem.snapshot.hydrate")

MEMORIES = [
    {
        "memory_id": f"m-{i:02d}",
        "identifier": ("acme", "globex")[i % 2],
        "fact": fact,
        "importance": (0.5, 0.9)[i % 2],
        "tags": [["finance", "approval"], []][i % 2],
        "created_at": f"2026-02-0{1 + i}T08:00:00.{i + 1:06d}Z",
    }
    for i, fact in enumerate(
        [
            "Invoices above EUR 5,000 need two approvals.",
            "Backups run nightly at 02:00 UTC.",
            "Le café est servi à 9h dans la salle Atlas.",
            "Invoices above EUR 5,000 need two approvals.",
            "Deploys freeze on Fridays after 15:00.",
        ]
    )
]


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A valid package of 5 memories in three chunks."""
    with monkeypatch.context() as patch, hotmem.open_store(tmp_path / "source.db") as store:
        patch.setattr(fmt, "CHUNK_RECORDS", 2)
        store.add_many(MEMORIES)
        store.delete("m-04")
        store.add_many([MEMORIES[4]])
        store.snapshot(tmp_path / "p.zip")
    return tmp_path / "p.zip"


def dump(path: Path) -> dict[str, list]:
    """Everything a store holds except rowids: rows, metadata and schema."""
    connection = sqlite3.connect(path)
    try:
        return {
            "memories": connection.execute(
                "SELECT memory_id, identifier, fact, importance, tags, created_at, embedding "
                "FROM memories ORDER BY memory_id"
            ).fetchall(),
            "meta": connection.execute("SELECT * FROM hotmem_meta ORDER BY key").fetchall(),
            "schema": connection.execute(
                "SELECT type, name, tbl_name, sql FROM sqlite_master ORDER BY name"
            ).fetchall(),
            "fts": connection.execute(
                "SELECT rowid, fact FROM memories_fts ORDER BY rowid"
            ).fetchall(),
        }
    finally:
        connection.close()


def test_hydrated_store_holds_exactly_the_source(package: Path, tmp_path: Path) -> None:
    report = hotmem.hydrate(package, tmp_path / "target.db")
    verified = hotmem.verify_snapshot(package)
    assert report == hotmem.HydrationReport(
        str(package), str(tmp_path / "target.db"), 5, verified.content_digest or ""
    )
    source, target = dump(tmp_path / "source.db"), dump(tmp_path / "target.db")
    assert target["memories"] == source["memories"]
    assert target["meta"] == source["meta"]
    assert target["schema"] == source["schema"]
    assert sorted(fact for _, fact in target["fts"]) == sorted(fact for _, fact in source["fts"])
    connection = sqlite3.connect(tmp_path / "target.db")
    connection.execute("INSERT INTO memories_fts (memories_fts) VALUES ('integrity-check')")
    connection.close()
    with hotmem.open_store(tmp_path / "target.db") as store:
        assert [m.to_dict() for m in store] == sorted(MEMORIES, key=lambda m: m["memory_id"])


def test_fts_index_holds_exactly_the_rows(package: Path, tmp_path: Path) -> None:
    hotmem.hydrate(package, tmp_path / "target.db")
    connection = sqlite3.connect(tmp_path / "target.db")
    try:
        rows = connection.execute("SELECT count(*) FROM memories_fts_docsize").fetchone()[0]
        assert rows == 5
        matches = connection.execute(
            "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH 'invoices'"
        ).fetchone()[0]
        assert matches == 2
        connection.execute("INSERT INTO memories_fts (memories_fts) VALUES ('integrity-check')")
    finally:
        connection.close()


def test_hydrated_store_keeps_its_index_in_sync(package: Path, tmp_path: Path) -> None:
    hotmem.hydrate(package, tmp_path / "target.db")
    with hotmem.open_store(tmp_path / "target.db") as store:
        store.add("Tungsten boils at 5,555 °C.", identifier="acme", memory_id="m-new")
        store.delete("m-00")
        [hit] = hotmem.search_memories(store, "tungsten boiling", limit=1)
        assert hit.memory_id == "m-new"
        assert all(r.memory_id != "m-00" for r in hotmem.search_memories(store, "invoices"))
        store.connection.execute(
            "INSERT INTO memories_fts (memories_fts) VALUES ('integrity-check')"
        )


def test_rehydrated_package_is_byte_identical(package: Path, tmp_path: Path) -> None:
    hotmem.hydrate(package, tmp_path / "target.db")
    with hotmem.open_store(tmp_path / "target.db") as store:
        store.snapshot(tmp_path / "again.zip")
    with hotmem.open_store(tmp_path / "source.db") as store:
        store.snapshot(tmp_path / "plain.zip")  # the default chunk size
    assert (tmp_path / "again.zip").read_bytes() == (tmp_path / "plain.zip").read_bytes()


def test_hydrated_file_has_ordinary_permissions(package: Path, tmp_path: Path) -> None:
    hotmem.hydrate(package, tmp_path / "target.db")
    assert (tmp_path / "target.db").stat().st_mode & 0o777 == (
        (tmp_path / "source.db").stat().st_mode & 0o777
    )


def empty_store(path: Path) -> None:
    hotmem.open_store(path).close()


def emptied_store(path: Path) -> None:
    with hotmem.open_store(path) as store:
        store.add("Gone soon.", identifier="acme", memory_id="x")
        store.delete("x")


def empty_sqlite(path: Path) -> None:
    sqlite3.connect(path).close()
    assert path.exists()


@pytest.mark.parametrize(
    "prepare",
    [
        pytest.param(lambda path: None, id="missing"),
        pytest.param(lambda path: path.write_bytes(b""), id="zero-byte file"),
        pytest.param(empty_sqlite, id="empty SQLite file"),
        pytest.param(empty_store, id="empty store"),
        pytest.param(emptied_store, id="store whose memories were deleted"),
    ],
)
def test_accepts_a_clean_target(package: Path, tmp_path: Path, prepare) -> None:
    target = tmp_path / "target.db"
    prepare(target)
    assert hotmem.hydrate(package, target).record_count == 5
    with hotmem.open_store(target) as store:
        assert len(store) == 5


def full_store(path: Path) -> None:
    with hotmem.open_store(path) as store:
        store.add("Already here.", identifier="acme")


def other_sqlite(path: Path) -> None:
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE notes (body TEXT)")
    connection.close()


def incompatible_store(path: Path) -> None:
    empty_store(path)
    connection = sqlite3.connect(path)
    connection.execute("UPDATE hotmem_meta SET value = 'other-model' WHERE key = 'embedding_model'")
    connection.commit()
    connection.close()


def leftover_journal(path: Path) -> None:
    empty_store(path)
    Path(f"{path}-journal").write_bytes(b"")


@pytest.mark.parametrize(
    ("prepare", "message"),
    [
        (full_store, "holds 1 memory; hydrate needs a new or empty store"),
        (other_sqlite, "is a SQLite database but not a HotMem store"),
        (lambda path: path.write_text("my notes\n" * 100), "is not a HotMem store"),
        (lambda path: path.mkdir(), "it is a directory, not a regular file"),
        (incompatible_store, "expected embedding_model='hotmem-hash-v1', found .*'other-model'"),
        (leftover_journal, "-journal' exists"),
    ],
)
def test_refuses_a_target_that_holds_data(
    package: Path, tmp_path: Path, prepare, message: str
) -> None:
    target = tmp_path / "target.db"
    prepare(target)
    before = sorted((p.name, p.stat().st_mtime_ns, p.stat().st_size) for p in tmp_path.iterdir())
    with pytest.raises(hotmem.HydrationError, match=message):
        hotmem.hydrate(package, target)
    after = sorted((p.name, p.stat().st_mtime_ns, p.stat().st_size) for p in tmp_path.iterdir())
    assert after == before


def test_refuses_a_target_in_a_missing_directory(package: Path, tmp_path: Path) -> None:
    with pytest.raises(hotmem.HydrationError, match="its directory does not exist"):
        hotmem.hydrate(package, tmp_path / "nowhere" / "target.db")


def names(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


@pytest.mark.parametrize(
    ("target", "found"),
    [(":memory:", "SQLite's name of an in-memory database"), ("", "an empty string")],
)
def test_refuses_a_target_that_names_no_file(
    package: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, target: str, found: str
) -> None:
    monkeypatch.chdir(tmp_path)  # where a file named ':memory:' would appear
    before = names(tmp_path)
    with pytest.raises(hotmem.HydrationError) as raised:
        hotmem.hydrate(package, target)
    assert str(raised.value) == (
        f"cannot hydrate {target!r}: expected a store file path, found {found}"
    )
    assert names(tmp_path) == before


@pytest.mark.parametrize(
    ("exception", "raised"),
    [
        (KeyboardInterrupt, KeyboardInterrupt),
        (MemoryError, MemoryError),
        (OSError, hotmem.HydrationError),
    ],
)
def test_an_interrupted_hydration_leaves_nothing_behind(
    package: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, exception: type, raised: type
) -> None:
    calls = []

    def rows_then_interrupt(chunk: object) -> list[tuple]:
        calls.append(chunk)
        if len(calls) == 2:
            raise exception
        return original(chunk)

    original = hydration._rows
    monkeypatch.setattr(hydration, "_rows", rows_then_interrupt)
    before = names(tmp_path)
    with pytest.raises(raised):
        hotmem.hydrate(package, tmp_path / "target.db")
    assert len(calls) == 2
    assert names(tmp_path) == before


def test_a_failed_rename_leaves_the_target_untouched(
    package: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "target.db"
    empty_store(target)
    content = target.read_bytes()

    def refuse(*args: object) -> None:
        raise PermissionError("read-only directory")

    monkeypatch.setattr(os, "replace", refuse)
    before = names(tmp_path)
    with pytest.raises(hotmem.HydrationError, match=r"cannot hydrate .*: read-only directory"):
        hotmem.hydrate(package, target)
    assert names(tmp_path) == before
    assert target.read_bytes() == content


def test_a_bad_package_leaves_the_target_untouched(package: Path, tmp_path: Path) -> None:
    data = bytearray(package.read_bytes())
    data[len(data) // 2] ^= 0xFF
    package.write_bytes(data)
    target = tmp_path / "target.db"
    empty_store(target)
    content = target.read_bytes()
    before = names(tmp_path)
    with pytest.raises(hotmem.VerificationError, match="failed verification with") as raised:
        hotmem.hydrate(package, target)
    assert not raised.value.report.ok
    assert names(tmp_path) == before
    assert target.read_bytes() == content


def test_an_empty_package_makes_an_empty_store(tmp_path: Path) -> None:
    with hotmem.open_store(tmp_path / "empty.db") as store:
        store.snapshot(tmp_path / "empty.zip")
    assert hotmem.hydrate(tmp_path / "empty.zip", tmp_path / "target.db").record_count == 0
    assert dump(tmp_path / "target.db") == dump(tmp_path / "empty.db")


def test_a_missing_package(tmp_path: Path) -> None:
    with pytest.raises(hotmem.SnapshotError, match="cannot read package"):
        hotmem.hydrate(tmp_path / "missing.zip", tmp_path / "target.db")
    assert names(tmp_path) == []


@pytest.mark.parametrize("name", ["with space.db", "hash#and?query.db", "ünï%20cödé.db"])
def test_targets_with_unusual_names(package: Path, tmp_path: Path, name: str) -> None:
    target = tmp_path / name
    empty_store(target)
    assert hotmem.hydrate(package, target).record_count == 5
    with pytest.raises(hotmem.HydrationError, match="holds 5 memories"):
        hotmem.hydrate(package, target)


def test_an_integer_importance_is_stored_as_the_store_would(package: Path, tmp_path: Path) -> None:
    from tests.hotmem.packages import read_members, refreshed, write_members

    members = read_members(package)
    text = members["records/000000.jsonl"].decode()
    members["records/000000.jsonl"] = text.replace('"importance":0.5', '"importance":0').encode()
    edited = write_members(tmp_path / "edited.zip", refreshed(members))
    hotmem.hydrate(edited, tmp_path / "target.db")
    with hotmem.open_store(tmp_path / "target.db") as store:
        stored = store.get("m-00").importance
        store.snapshot(tmp_path / "again.zip")
    assert (type(stored), stored) == (float, 0.0)
    again = read_members(tmp_path / "again.zip")["records/000000.jsonl"]
    assert b'"importance":0.0,"memory_id":"m-00"' in again


def forged(package: Path, tmp_path: Path, query: str) -> Path:
    """The package with one memory's vector replaced by the query's embedding (digests
    recomputed): the memory is unrelated to the query, but its vector says otherwise."""
    from hotmem.embedding.hash_v1 import embed_bytes
    from tests.hotmem.packages import V0, read_members, refreshed, write_members

    members = read_members(package)
    vectors = bytearray(members[V0])
    vectors[256:512] = embed_bytes(query)  # the second record, m-01: "Backups run nightly"
    return write_members(tmp_path / "forged.zip", refreshed({**members, V0: bytes(vectors)}))


def test_a_forged_hash_vector_is_refused_by_every_hydration(
    package: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # (Hydration used to carry it, and m-01 then ranked first for the query: issue 35.)
    query = "where should the quarterly bonus be wired"
    bad = forged(package, tmp_path, query)
    assert hotmem.verify_snapshot(bad).ok  # well formed: the manifest proves integrity only
    with hotmem.open_store(tmp_path / "source.db") as store:
        assert "m-01" not in [r.memory_id for r in hotmem.search_memories(store, query)]
    before = names(tmp_path)
    for target, recompute in (("trusting.db", False), ("careful.db", True)):
        with pytest.raises(hotmem.VerificationError) as raised:
            hotmem.hydrate(bad, tmp_path / target, recompute_vectors=recompute)
        assert [(p.location, p.check, p.found) for p in raised.value.report.problems] == [
            ("records/000000.jsonl:2", "vector", "another vector for memory_id='m-01'")
        ]
        assert names(tmp_path) == before
    from hotmem.cli import main

    code = main(["hydrate", str(bad), "--db", str(tmp_path / "careful.db"), "--recompute-vectors"])
    err = capsys.readouterr().err
    assert code == 1
    assert err.startswith(f"hotmem: package {str(bad)!r} failed verification with 1 problem")
    assert err.endswith("found another vector for memory_id='m-01'\n")
    assert names(tmp_path) == before


def test_recomputing_vectors_hydrates_an_honest_package_the_same(
    package: Path, tmp_path: Path
) -> None:
    hotmem.hydrate(package, tmp_path / "plain.db")
    report = hotmem.hydrate(package, tmp_path / "recomputed.db", recompute_vectors=True)
    assert report.record_count == 5
    assert dump(tmp_path / "recomputed.db") == dump(tmp_path / "plain.db")


def test_cjk_grams_are_derived_chunk_by_chunk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hotmem.store import lexical_index
    from hotmem.store.fts import cjk_index_text

    facts = [
        "Plain ASCII, no grams.",
        "Another plain fact.",  # an all-ASCII chunk: checked once, no gram derived
        "東京の会議は九時です。",
        "Le café est servi à 9h.",  # not ASCII, but no CJK letter
        "Deploys freeze on Fridays.",
        "北京 office notes",
    ]
    with monkeypatch.context() as patch, hotmem.open_store(tmp_path / "source.db") as store:
        patch.setattr(fmt, "CHUNK_RECORDS", 2)
        store.add_many(
            {"memory_id": f"m-{i}", "identifier": "acme", "fact": fact}
            for i, fact in enumerate(facts)
        )
        store.snapshot(tmp_path / "p.zip")
    hotmem.hydrate(tmp_path / "p.zip", tmp_path / "target.db")
    with hotmem.open_store(tmp_path / "target.db") as store, store.reading() as connection:
        grams = connection.execute("SELECT rowid, grams FROM memories_cjk ORDER BY rowid")
        assert grams.fetchall() == [(3, cjk_index_text(facts[2])), (6, cjk_index_text(facts[5]))]
        assert lexical_index.differences(connection) == ()
        assert store.check_integrity() == ()
        assert [r.memory_id for r in hotmem.search_memories(store, "東京", limit=1)] == ["m-2"]
        assert [r.memory_id for r in hotmem.search_memories(store, "北京", limit=1)] == ["m-5"]
    assert lexical_index.chunk_grams(7, ["ascii", "only"]) == []
    assert lexical_index.chunk_grams(7, ["ascii", "東京"]) == [(8, cjk_index_text("東京"))]
