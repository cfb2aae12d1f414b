"""The store file: settings, setup in one transaction, completion of interrupted first opens,
migrations, and refusals that change nothing."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

import hotmem
from hotmem.store import schema
from hotmem.store import setup as storage
from hotmem.store.migrations import MIGRATIONS
from tests.hotmem import v1_store


def objects(path: Path) -> list[tuple[str, str, str]]:
    """Every schema object of a store file: (type, name, SQL with whitespace collapsed)."""
    connection = sqlite3.connect(path)
    try:
        rows = connection.execute(
            "SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL ORDER BY name"
        ).fetchall()
    finally:
        connection.close()
    return [(kind, name, " ".join(sql.split())) for kind, name, sql in rows]


def meta(path: Path) -> dict[str, str]:
    connection = sqlite3.connect(path)
    try:
        return dict(connection.execute("SELECT key, value FROM hotmem_meta"))
    finally:
        connection.close()


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture
def fresh(tmp_path: Path) -> list[tuple[str, str, str]]:
    """The schema of a store created by this version."""
    path = tmp_path / "fresh.db"
    hotmem.open_store(path).close()
    return objects(path)


def test_a_store_file_uses_wal_normal_sync_and_the_busy_timeout(tmp_path: Path) -> None:
    with hotmem.open_store(tmp_path / "s.db", busy_timeout=2.5) as store:
        pragma = store.connection.execute
        assert pragma("PRAGMA journal_mode").fetchone() == ("wal",)
        assert pragma("PRAGMA synchronous").fetchone() == (1,)  # NORMAL
        assert pragma("PRAGMA busy_timeout").fetchone() == (2500,)
        assert pragma("PRAGMA journal_size_limit").fetchone() == (64 * 2**20,)
    with hotmem.open_store(tmp_path / "t.db") as store:
        assert store.connection.execute("PRAGMA busy_timeout").fetchone() == (10_000,)
    assert hotmem.BUSY_TIMEOUT == 10.0


def test_an_in_memory_store_still_works() -> None:
    with hotmem.open_store(":memory:") as store:
        assert store.connection.execute("PRAGMA journal_mode").fetchone() == ("memory",)
        store.add_many([{"memory_id": f"m-{i}", "identifier": "a", "fact": "x"} for i in range(40)])
        store.add("copper kettle", identifier="a", memory_id="m-k")
        assert [r.memory_id for r in hotmem.search_memories(store, "copper kettle")] == ["m-k"]
        assert store.check_integrity() == ()


@pytest.mark.parametrize("value", [-1, float("nan"), float("inf"), 86_401, True, "5", None])
def test_the_busy_timeout_is_a_number_of_seconds(tmp_path: Path, value: object) -> None:
    with pytest.raises(hotmem.ValidationError, match=r"busy_timeout must be a number of seconds"):
        hotmem.open_store(tmp_path / "s.db", busy_timeout=value)  # type: ignore[arg-type]
    assert not (tmp_path / "s.db").exists()


def test_every_schema_version_below_this_one_has_a_migration() -> None:
    assert sorted(MIGRATIONS) == list(range(1, schema.SCHEMA_VERSION))


def test_a_version_1_store_is_migrated_and_then_equals_a_new_store(
    tmp_path: Path, fresh: list[tuple[str, str, str]]
) -> None:
    path = tmp_path / "v1.db"
    v1_store.build(path, facts={"m-1": "Copper kettles boil fast.", "m-2": "Iron pans rust."})
    assert meta(path)["schema_version"] == "1"
    with hotmem.open_store(path) as store:
        assert store.connection.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        assert [r.memory_id for r in hotmem.search_memories(store, "copper kettle")] == ["m-1"]
        store.add_many(
            {"memory_id": f"b-{i}", "identifier": "acme", "fact": f"Copper spoon {i}."}
            for i in range(40)
        )
        store.delete("m-2")
        assert store.check_integrity() == ()
        assert store.count() == 41
    assert meta(path) == schema.expected_meta()
    assert objects(path) == fresh


@pytest.mark.parametrize("steps", range(len(v1_store.STEPS)))
def test_an_interrupted_version_1_first_open_is_set_up_again(
    tmp_path: Path, fresh: list[tuple[str, str, str]], steps: int
) -> None:
    path = tmp_path / "half.db"
    v1_store.build(path, steps)
    with hotmem.open_store(path) as store:
        store.add("Copper kettles boil fast.", identifier="acme", memory_id="m-1")
        assert [r.memory_id for r in hotmem.search_memories(store, "copper kettle")] == ["m-1"]
        assert store.check_integrity() == ()
    assert objects(path) == fresh
    assert meta(path) == schema.expected_meta()


@pytest.mark.parametrize("steps", range(v1_store.STEPS.index("META") + 1, len(v1_store.STEPS)))
def test_memories_added_without_some_triggers_are_indexed_by_the_next_open(
    tmp_path: Path, fresh: list[tuple[str, str, str]], steps: int
) -> None:
    # Version 1 opened a store whose first open stopped after the meta rows, never created
    # the missing triggers, and went on adding (unindexed) and deleting (index left stale).
    path = tmp_path / "half.db"
    v1_store.build(path, steps, facts={"m-1": "Copper kettles boil fast.", "m-2": "Iron pans."})
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("DELETE FROM memories WHERE memory_id = 'm-2'")
    connection.close()
    with hotmem.open_store(path) as store:
        assert store.check_integrity() == ()
        assert [r.memory_id for r in hotmem.search_memories(store, "copper kettle")] == ["m-1"]
        assert hotmem.search_memories(store, "iron pans") == []
        store.add("Copper pots too.", identifier="acme", memory_id="m-3")
        store.delete("m-1")
        assert [r.memory_id for r in hotmem.search_memories(store, "copper")] == ["m-3"]
        assert store.check_integrity() == ()
    assert objects(path) == fresh


def test_a_deferral_row_left_behind_is_cleared_and_the_index_rebuilt(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    hotmem.open_store(path).close()
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute(schema.DEFER_FTS, (0,))  # as if a writer had committed mid-bulk-write
    v1_store.insert(connection, "m-1", "Copper kettles boil fast.")  # not indexed
    connection.close()
    with hotmem.open_store(path) as store:
        assert store.connection.execute("SELECT count(*) FROM hotmem_fts_deferred").fetchone() == (
            0,
        )
        store.add("Copper pots too.", identifier="acme", memory_id="m-2")
        found = {r.memory_id for r in hotmem.search_memories(store, "copper")}
        assert found == {"m-1", "m-2"}
        assert store.check_integrity() == ()


def _newer(path: Path) -> None:
    hotmem.open_store(path).close()
    connection = sqlite3.connect(path)
    newer = str(schema.SCHEMA_VERSION + 1)
    connection.execute("UPDATE hotmem_meta SET value = ? WHERE key = 'schema_version'", (newer,))
    connection.commit()
    connection.close()


def _huge_version(path: Path) -> None:
    hotmem.open_store(path).close()
    connection = sqlite3.connect(path)
    huge = "9" * 5000  # past Python's int() limit of 4,300 digits: a ValueError traceback once
    connection.execute("UPDATE hotmem_meta SET value = ? WHERE key = 'schema_version'", (huge,))
    connection.commit()
    connection.close()


def _foreign_beside_half_store(path: Path) -> None:
    connection = sqlite3.connect(path)
    connection.execute("CREATE TABLE theirs (x)")
    connection.execute(v1_store.TABLES[0])
    connection.close()


def _memories_without_meta(path: Path) -> None:
    v1_store.build(path, v1_store.STEPS.index("META"), facts={"m-1": "A fact."})


@pytest.mark.parametrize(
    ("prepare", "message"),
    [
        (
            _newer,
            "was written by a newer HotMem: expected schema_version at most "
            f"{schema.SCHEMA_VERSION}, found schema_version='{schema.SCHEMA_VERSION + 1}'",
        ),
        (
            _huge_version,
            f"is incompatible: expected schema_version='{schema.SCHEMA_VERSION}', found "
            f"schema_version='{'9' * 76}\\.\\.\\.$",
        ),
        (_foreign_beside_half_store, "is a SQLite database but not a HotMem store"),
        (
            _memories_without_meta,
            f"is incompatible: expected schema_version='{schema.SCHEMA_VERSION}', "
            "found schema_version=None",
        ),
    ],
)
def test_a_refused_database_is_left_exactly_as_it_was(
    tmp_path: Path, prepare, message: str
) -> None:
    path = tmp_path / "s.db"
    prepare(path)
    before = digest(path)
    with pytest.raises(hotmem.StoreError, match=message):
        hotmem.open_store(path)
    assert digest(path) == before


def _inspection(**changes: object) -> storage.Inspection:
    complete = {
        "objects": schema.HOTMEM_OBJECTS,
        "triggers": {name: " ".join(sql.split()) for name, sql in schema.TRIGGERS.items()},
        "meta": schema.expected_meta(),
        "has_memories": True,
        "deferred": False,
    }
    return storage.Inspection(**{**complete, **changes})  # type: ignore[arg-type]


v1_meta = {**schema.expected_meta(), "schema_version": "1"}


@pytest.mark.parametrize(
    ("found", "action"),
    [
        (_inspection(objects=frozenset(), meta=None, has_memories=False), "create"),
        (_inspection(), "ready"),
        (_inspection(has_memories=False), "ready"),
        (_inspection(meta=v1_meta), "complete"),
        (_inspection(meta=v1_meta, has_memories=False), "reinitialise"),
        (_inspection(deferred=True), "complete"),
        (_inspection(triggers={}), "complete"),
        (_inspection(triggers={}, has_memories=False), "reinitialise"),
        (_inspection(objects=schema.HOTMEM_OBJECTS | {"theirs"}), "ready"),
        (
            _inspection(
                objects=schema.HOTMEM_OBJECTS | {"theirs"}, triggers={}, has_memories=False
            ),
            "complete",
        ),
        (
            _inspection(objects=frozenset({"hotmem_meta"}), meta={}, has_memories=False),
            "reinitialise",
        ),
        (_inspection(meta={**schema.expected_meta(), "extra": "kept"}), "ready"),
    ],
)
def test_plan_decides_what_setup_does(found: storage.Inspection, action: str) -> None:
    assert storage.plan(found, "s.db") == action


@pytest.mark.parametrize(
    ("found", "message"),
    [
        (_inspection(objects=frozenset({"theirs"}), meta=None), "not a HotMem store"),
        (
            _inspection(meta={**schema.expected_meta(), "embedding_model": "other"}),
            "expected embedding_model='hotmem-hash-v1', found embedding_model='other'",
        ),
        (
            _inspection(meta={**v1_meta, "embedding_dimension": "32"}),
            "expected embedding_dimension='64', found embedding_dimension='32'",
        ),
        (
            _inspection(meta={**schema.expected_meta(), "schema_version": "two"}),
            f"expected schema_version='{schema.SCHEMA_VERSION}', found schema_version='two'",
        ),
        (
            _inspection(meta={"schema_version": "1"}, triggers={}),
            "expected embedding_model='hotmem-hash-v1', found embedding_model=None",
        ),
    ],
)
def test_plan_refuses_what_this_version_cannot_use(found: storage.Inspection, message: str) -> None:
    with pytest.raises(hotmem.StoreError, match=message):
        storage.plan(found, "s.db")


def test_a_store_another_process_is_migrating_says_so(tmp_path: Path) -> None:
    # Issue 35: other processes failed after the busy timeout with a message about "another
    # connection's write lock", and looked for a writer that was not there.
    path = tmp_path / "v1.db"
    v1_store.build(path, facts={"m-1": "A copper kettle."})
    migrating = sqlite3.connect(path, isolation_level=None)
    migrating.execute("PRAGMA journal_mode = WAL")
    migrating.execute("BEGIN IMMEDIATE")  # as the migration's own transaction holds it
    before = digest(path)
    try:
        with pytest.raises(hotmem.StoreError) as raised:
            hotmem.open_store(path, busy_timeout=0.1)
    finally:
        migrating.execute("ROLLBACK")
        migrating.close()
    assert str(raised.value) == (
        f"cannot open store {str(path)!r}: it needs a migration from schema_version=1 to "
        f"{schema.SCHEMA_VERSION}, and another process held the store's write lock past the "
        "busy timeout (0.1 s), most likely doing exactly that (about 20 s for 200,000 "
        "memories, announced on its stderr); retry when it is done, or open the store with a "
        "longer busy_timeout"
    )
    assert digest(path) == before
    with hotmem.open_store(path) as store:  # once it is free, the migration runs
        assert store.get("m-1").fact == "A copper kettle."
