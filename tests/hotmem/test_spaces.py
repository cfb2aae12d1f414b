"""Vector spaces of a store: schema v4, the migration from v3, add_space, ingest, reindex,
drop_space, run with the real semantic model (the ``semantic`` extra is in the dev group)."""

from __future__ import annotations

import shutil
import sqlite3
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path

import pytest

import hotmem
from hotmem.embedding.registry import HASH_DIGEST, SEMANTIC_MODEL
from hotmem.store import schema, spaces

DATA = Path(__file__).with_name("data")
HASH = hotmem.VectorSpace("hotmem-hash-v1", "hotmem-hash-v1", HASH_DIGEST, 64, "float32-le")
FACTS = [
    ("Invoices above EUR 5,000 need two approvals.", "acme-finance"),
    ("The on-call engineer rotates every Monday at 09:00 UTC.", "acme-infra"),
    ("Production databases are backed up every night.", "acme-infra"),
    ("Expense claims must be filed within 30 days.", "acme-finance"),
    ("The Oslo office closes on Saturdays.", "fjord-analytics"),
]


def _memories(count: int = len(FACTS)) -> list[dict[str, object]]:
    return [
        {
            "memory_id": f"m-{i:02d}",
            "identifier": FACTS[i % len(FACTS)][1],
            "fact": f"{FACTS[i % len(FACTS)][0]} (#{i})" if i >= len(FACTS) else FACTS[i][0],
            "created_at": "2026-01-01T00:00:00Z",
        }
        for i in range(count)
    ]


@pytest.fixture(scope="module")
def semantic() -> hotmem.VectorSpace:
    return spaces.space_of(hotmem.get_embedder(SEMANTIC_MODEL))


def _vectors(store: hotmem.MemoryStore, name: str) -> dict[str, bytes]:
    rows = store.connection.execute(
        "SELECT m.memory_id, v.vector FROM space_vectors AS v "
        "JOIN memories AS m ON m.rowid = v.memory_rowid WHERE v.space = ?",
        (name,),
    )
    return dict(rows)


def test_a_new_store_has_the_hash_space_only(tmp_path: Path) -> None:
    with hotmem.open_store(tmp_path / "s.db") as store:
        assert store.spaces == (HASH,)
        assert store.vector_counts() == {"hotmem-hash-v1": 0}
        assert HASH.to_dict() == {
            "name": "hotmem-hash-v1",
            "model_id": "hotmem-hash-v1",
            "digest": HASH_DIGEST,
            "dimension": 64,
            "dtype": "float32-le",
        }


def _as_version_3(path: Path) -> None:
    """Turn a store of this version into one of schema version 3 (which had no spaces)."""
    connection = sqlite3.connect(path, isolation_level=None)
    for trigger in ("memories_changes_delete", "memories_changes_update", "hotmem_changes_prune"):
        connection.execute(f"DROP TRIGGER {trigger}")  # schema 5's change log
    connection.execute("DROP TABLE hotmem_changes")
    connection.execute("DROP TRIGGER memories_vectors_delete")
    connection.execute("DROP TABLE space_vectors")
    connection.execute("DROP TABLE vector_spaces")
    connection.execute("UPDATE hotmem_meta SET value = '3' WHERE key = 'schema_version'")
    connection.close()


def test_a_version_3_store_migrates_to_this_version(tmp_path: Path) -> None:
    path = tmp_path / "v3.db"
    with hotmem.open_store(path) as store:
        store.add_many(_memories())
        before = hotmem.search_memories(store, "invoice approvals")
    _as_version_3(path)
    with hotmem.open_store(path) as store:
        meta = dict(store.connection.execute("SELECT key, value FROM hotmem_meta"))
        assert meta["schema_version"] == "5" == str(schema.SCHEMA_VERSION)
        assert store.spaces == (HASH,)
        assert hotmem.search_memories(store, "invoice approvals") == before
        objects = {row[0] for row in store.connection.execute("SELECT name FROM sqlite_master")}
        assert {"vector_spaces", "space_vectors", "memories_vectors_delete"} <= objects
        assert {"hotmem_changes", "memories_changes_delete"} <= objects


def _pages_for_vectors(path: Path, count: int) -> int:
    """Pages of the store file that ``count`` vectors of 1,536 bytes add to ``space_vectors``."""
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        before = connection.execute("PRAGMA page_count").fetchone()[0]
        connection.execute("BEGIN")
        connection.executemany(
            "INSERT INTO space_vectors (space, memory_rowid, vector) VALUES (?, ?, ?)",
            ((SEMANTIC_MODEL, rowid, bytes([rowid]) * 1536) for rowid in range(1, count + 1)),
        )
        connection.execute("COMMIT")
        return int(connection.execute("PRAGMA page_count").fetchone()[0]) - before
    finally:
        connection.close()


@pytest.mark.parametrize("migrated", [False, True], ids=["new", "migrated-from-3"])
def test_space_vectors_fit_in_table_cells(tmp_path: Path, migrated: bool) -> None:
    # Two 1,536-byte vectors share a 4 KiB page of a rowid table; a WITHOUT ROWID table (as
    # schema 4 first was) put each on an overflow page of its own: 100 vectors took > 100 pages.
    path = tmp_path / "s.db"
    with hotmem.open_store(path) as store:
        store.add_many(_memories())
        new_sql = store.connection.execute(
            "SELECT sql FROM sqlite_master WHERE name = 'space_vectors'"
        ).fetchone()
    if migrated:
        _as_version_3(path)
        with hotmem.open_store(path) as store:
            found = store.connection.execute(
                "SELECT sql FROM sqlite_master WHERE name = 'space_vectors'"
            ).fetchone()
        assert found == new_sql == (schema.TABLES["space_vectors"],)
    assert 50 <= _pages_for_vectors(path, 100) <= 60


@pytest.mark.parametrize("name", ["store-v1.db"])
def test_the_committed_test_stores_still_open(tmp_path: Path, name: str) -> None:
    shutil.copy(DATA / name, tmp_path / name)
    with hotmem.open_store(tmp_path / name) as store:
        assert store.spaces == (HASH,)
        assert store.count() == 4
        assert store.check_integrity() == ()


def test_add_space_embeds_every_memory_and_adds_embed_it(
    tmp_path: Path, semantic: hotmem.VectorSpace
) -> None:
    embedder = hotmem.get_embedder(SEMANTIC_MODEL)
    seen: list[tuple[int, int | None]] = []
    with hotmem.open_store(tmp_path / "s.db") as store:
        store.add_many(_memories(3))
        assert store.add_space(SEMANTIC_MODEL, progress=lambda d, t: seen.append((d, t))) == (
            semantic
        )
        assert seen == [(0, 3), (1, 3), (2, 3), (3, 3)]  # three lengths: three model runs
        assert store.spaces == (HASH, semantic)
        assert semantic.dimension == 384
        assert semantic.dtype == "float32-le"
        store.add(FACTS[3][0], identifier=FACTS[3][1], memory_id="m-03")
        store.add_stream(_memories()[4:], batch_size=1)
        facts = {m.memory_id: m.fact for m in store}
        expected = dict(zip(facts, embedder.embed_many(list(facts.values())), strict=True))
        assert _vectors(store, SEMANTIC_MODEL) == expected
        assert store.vector_counts() == {"hotmem-hash-v1": 5, SEMANTIC_MODEL: 5}
        store.delete("m-01")  # the trigger deletes its vectors too
        assert set(_vectors(store, SEMANTIC_MODEL)) == {"m-00", "m-02", "m-03", "m-04"}
        assert store.add_space(SEMANTIC_MODEL) == semantic  # already there: nothing to do
        assert store.vector_counts()[SEMANTIC_MODEL] == 4


class _Killed(Exception):
    pass


def test_reindex_is_resumable_one_transaction_per_batch(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with hotmem.open_store(path) as store:
        store.add_many(_memories(7))
        done: list[int] = []

        def killed_in_the_third_batch(embedded: int, total: int | None) -> None:
            done.append(embedded)
            if embedded > 4:
                raise _Killed  # the process dies while the third batch is embedded

        with pytest.raises(_Killed):
            store.add_space(SEMANTIC_MODEL, progress=killed_in_the_third_batch, batch_size=2)
        assert done == [0, 1, 2, 3, 4, 5]
    with hotmem.open_store(path) as store:
        assert store.vector_counts()[SEMANTIC_MODEL] == 4  # two committed batches
        with pytest.raises(hotmem.StoreError, match=r"not built for 3 of 7 memories"):
            hotmem.search_memories(store, "invoices", profile="semantic")
        assert store.reindex(SEMANTIC_MODEL, batch_size=2) == 3
        assert store.reindex(SEMANTIC_MODEL) == 0
        resumed = _vectors(store, SEMANTIC_MODEL)
        assert store.reindex(SEMANTIC_MODEL, rebuild=True) == 7
        assert _vectors(store, SEMANTIC_MODEL) == resumed


def test_drop_space_removes_it_and_its_vectors(tmp_path: Path) -> None:
    with hotmem.open_store(tmp_path / "s.db") as store:
        store.add_many(_memories(2))
        store.add_space(SEMANTIC_MODEL)
        store.drop_space(SEMANTIC_MODEL)
        assert store.spaces == (HASH,)
        assert store.connection.execute("SELECT count(*) FROM space_vectors").fetchone() == (0,)
        with pytest.raises(hotmem.ValidationError, match="cannot be dropped"):
            store.drop_space("hotmem-hash-v1")
        with pytest.raises(hotmem.ValidationError, match=r"hotmem reindex --space nope"):
            store.drop_space("nope")
        with pytest.raises(hotmem.ValidationError, match=r"nothing to reindex"):
            store.reindex("hotmem-hash-v1")


def test_a_space_of_another_model_file_is_refused_until_rebuilt(
    tmp_path: Path, semantic: hotmem.VectorSpace
) -> None:
    with hotmem.open_store(tmp_path / "s.db") as store:
        store.add_many(_memories(2))
        store.add_space(SEMANTIC_MODEL)
        with store.connection:
            store.connection.execute(
                "UPDATE vector_spaces SET digest = 'ab' WHERE name = ?", (SEMANTIC_MODEL,)
            )
        with pytest.raises(hotmem.StoreError, match=r"--rebuild"):
            store.add("Another fact.", identifier="acme-finance")
        with pytest.raises(hotmem.StoreError, match=r"was built with digest=ab"):
            store.reindex(SEMANTIC_MODEL)
        assert store.reindex(SEMANTIC_MODEL, rebuild=True) == 2
        assert store.spaces == (HASH, semantic)
        store.add("Another fact.", identifier="acme-finance")
        assert store.vector_counts()[SEMANTIC_MODEL] == 3


def test_the_default_profile_and_its_spaces(tmp_path: Path) -> None:
    with hotmem.open_store(tmp_path / "s.db") as store:
        store.add_many(_memories())
        with pytest.raises(hotmem.ValidationError, match=r"hotmem reindex --space all-minilm"):
            hotmem.set_default_profile(store, "semantic")
        assert store.default_profile == "default"
        store.add_space(SEMANTIC_MODEL)
        hotmem.set_default_profile(store, "semantic")
        assert hotmem.PROFILES[store.default_profile].spaces == (SEMANTIC_MODEL,)
        [hit] = hotmem.search_memories(store, "When is the Norwegian branch shut?")
        assert hit.memory_id == "m-04"
        with pytest.raises(hotmem.ValidationError, match=r"default profile 'semantic' searches"):
            store.drop_space(SEMANTIC_MODEL)
        hotmem.set_default_profile(store, "default")
        store.drop_space(SEMANTIC_MODEL)
        assert store.spaces == (HASH,)


def test_check_integrity_reports_stray_and_malformed_vectors(tmp_path: Path) -> None:
    with hotmem.open_store(tmp_path / "s.db") as store:
        store.add_many(_memories(2))
        store.add_space(SEMANTIC_MODEL)
        assert store.check_integrity() == ()
        connection = store.connection
        connection.execute("INSERT INTO space_vectors VALUES ('gone', 1, x'00')")
        connection.execute(
            "INSERT INTO space_vectors VALUES (?, 99, zeroblob(1536))", (SEMANTIC_MODEL,)
        )
        connection.execute(
            "UPDATE space_vectors SET vector = x'0000' WHERE space = ? AND memory_rowid = 1",
            (SEMANTIC_MODEL,),
        )
        assert store.check_integrity() == (
            "vector space 'gone': 1 vectors of a space the store does not record",
            f"vector space {SEMANTIC_MODEL!r}: 1 vectors of no memory",
            f"vector space {SEMANTIC_MODEL!r}: 1 vectors not of its dimension",
        )


# 1,030 vectors: more than one statement's batch (spaces._PACKED_BATCH = 1,024).
@pytest.mark.parametrize("count", [0, 1, 3, 1030])
def test_insert_packed_splits_one_blob_into_consecutive_rowids(count: int) -> None:
    connection = sqlite3.connect(":memory:", isolation_level=None)
    connection.execute(schema.TABLES["space_vectors"])
    vectors = [i.to_bytes(8, "little") for i in range(1, count + 1)]
    connection.execute("INSERT INTO space_vectors VALUES ('s', 2, x'ff')")  # replaced
    spaces.insert_packed(connection, "s", 2, b"".join(vectors), 8)
    rows = connection.execute(
        "SELECT memory_rowid, vector, typeof(vector) FROM space_vectors ORDER BY memory_rowid"
    ).fetchall()
    expected = [(2 + i, vector, "blob") for i, vector in enumerate(vectors)]
    assert rows == (expected or [(2, b"\xff", "blob")])


@pytest.mark.parametrize(
    ("name", "packed", "width", "message"),
    [
        ("s", b"\x00" * 9, 8, "expected whole vectors of 8 bytes, found 9 bytes for the space 's'"),
        ("s", b"", 0, "expected whole vectors of 0 bytes, found 0 bytes for the space 's'"),
        (
            "hotmem-hash-v1",
            b"\x00" * 8,
            8,
            "the vectors of 'hotmem-hash-v1' are written with their memories",
        ),
    ],
)
def test_insert_packed_refuses(name: str, packed: bytes, width: int, message: str) -> None:
    connection = sqlite3.connect(":memory:", isolation_level=None)
    connection.execute(schema.TABLES["space_vectors"])
    with pytest.raises(hotmem.ValidationError) as raised:
        spaces.insert_packed(connection, name, 1, packed, width)
    assert str(raised.value) == message
    assert connection.execute("SELECT count(*) FROM space_vectors").fetchone() == (0,)


@pytest.mark.parametrize("rebuild", [False, True])
def test_a_reused_rowid_never_inherits_a_deleted_memorys_vector(
    tmp_path: Path, rebuild: bool
) -> None:
    """Issue 35: while a reindex embeds a batch, another process deletes the newest memory
    and adds one, which SQLite gives the same rowid; the batch's vector of the deleted memory
    must not be written for the new one."""
    path = tmp_path / "s.db"
    with hotmem.open_store(path) as store:
        store.add_many(_memories(3))
        if rebuild:
            store.add_space(SEMANTIC_MODEL)
        newest = store.connection.execute("SELECT max(rowid) FROM memories").fetchone()[0]
        raced: list[int] = []

        def meanwhile(embedded: int, total: int | None) -> None:
            if embedded and not raced:  # the batch has been read and is being embedded
                with hotmem.open_store(path) as other:
                    other.delete("m-02")
                    other.add("Deploys freeze on Fridays.", identifier="x", memory_id="new")
                    raced.append(
                        other.connection.execute(
                            "SELECT rowid FROM memories WHERE memory_id = 'new'"
                        ).fetchone()[0]
                    )

        if rebuild:
            store.reindex(SEMANTIC_MODEL, rebuild=True, progress=meanwhile)
        else:
            store.add_space(SEMANTIC_MODEL, progress=meanwhile)
        assert raced == [newest]  # the rowid was reused: the race happened
        embedder = hotmem.get_embedder(SEMANTIC_MODEL)
        expected = embedder.embed_many(["Deploys freeze on Fridays."])[0]
        assert _vectors(store, SEMANTIC_MODEL)["new"] == expected
        assert sorted(_vectors(store, SEMANTIC_MODEL)) == ["m-00", "m-01", "new"]
        assert store.check_integrity() == ()


def _before_next_write(
    monkeypatch: pytest.MonkeyPatch, store: hotmem.MemoryStore, meanwhile: Callable[[], None]
) -> None:
    """Run ``meanwhile`` (another process's write) once, just before ``store``'s next write
    transaction begins: after every check the store makes before it."""
    original = hotmem.MemoryStore._writing

    def writing(self: hotmem.MemoryStore) -> AbstractContextManager[sqlite3.Connection]:
        if self is store and not ran:
            ran.append(True)
            meanwhile()
        return original(self)

    ran: list[bool] = []
    monkeypatch.setattr(hotmem.MemoryStore, "_writing", writing)


def test_drop_space_sees_a_default_set_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.db"
    with hotmem.open_store(path) as store:
        store.add_many(_memories(2))
        store.add_space(SEMANTIC_MODEL)

        def set_default() -> None:
            with hotmem.open_store(path) as other:
                hotmem.set_default_profile(other, "semantic")

        _before_next_write(monkeypatch, store, set_default)
        with pytest.raises(hotmem.ValidationError) as raised:
            store.drop_space(SEMANTIC_MODEL)
        assert str(raised.value) == (
            "the store's default profile 'semantic' searches the vector space "
            f"{SEMANTIC_MODEL!r}; make another profile the default first "
            "(hotmem.set_default_profile(store, 'default'))"
        )
        assert [s.name for s in store.spaces] == ["hotmem-hash-v1", SEMANTIC_MODEL]
        assert [r.memory_id for r in hotmem.search_memories(store, "invoices")][:1] == ["m-00"]


def test_a_default_is_not_set_on_a_space_dropped_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.db"
    with hotmem.open_store(path) as store:
        store.add_many(_memories(2))
        store.add_space(SEMANTIC_MODEL)

        def drop() -> None:
            with hotmem.open_store(path) as other:
                other.drop_space(SEMANTIC_MODEL)

        _before_next_write(monkeypatch, store, drop)
        with pytest.raises(hotmem.ValidationError, match="has no vector space"):
            hotmem.set_default_profile(store, "semantic")
        assert store.default_profile == "default"
        assert hotmem.search_memories(store, "invoices")  # plain searches still run


def test_an_add_embeds_in_the_spaces_another_connection_added_or_dropped_since_its_last_write(
    tmp_path: Path, semantic: hotmem.VectorSpace
) -> None:
    embedder = hotmem.get_embedder(SEMANTIC_MODEL)
    path = tmp_path / "s.db"
    with hotmem.open_store(path) as writer, hotmem.open_store(path) as other:
        writer.add(FACTS[0][0], identifier=FACTS[0][1], memory_id="m-00")  # sees hash-v1 alone
        other.add_space(SEMANTIC_MODEL)
        writer.add(FACTS[1][0], identifier=FACTS[1][1], memory_id="m-01")  # embeds again, locked
        writer.add_many(_memories()[2:4])  # the space now known before the lock
        expected = {m.memory_id: m.fact for m in writer}
        vectors = dict(zip(expected, embedder.embed_many(list(expected.values())), strict=True))
        assert _vectors(writer, SEMANTIC_MODEL) == vectors
        other.drop_space(SEMANTIC_MODEL)
        writer.add(FACTS[4][0], identifier=FACTS[4][1], memory_id="m-04")  # not embedded there
        assert writer.spaces == (HASH,)
        assert writer.vector_counts() == {"hotmem-hash-v1": 5}
        assert writer.check_integrity() == ()
