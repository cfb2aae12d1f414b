"""The store: add, add_many, get, delete, count, iterate, validation and atomicity."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from itertools import groupby
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import Bundle, RuleBasedStateMachine, consumes, invariant, rule

import hotmem
from hotmem import (
    DuplicateMemoryError,
    MemoryNotFoundError,
    MemoryStore,
    StoreError,
    ValidationError,
)
from hotmem.fields import MAX_TAGS


def test_add_returns_the_stored_memory(store: MemoryStore) -> None:
    memory = store.add(
        "Acme invoices need two approvals.",
        identifier="acme",
        importance=0.75,
        tags=["finance", "approval"],
        memory_id="m-1",
    )
    assert memory == hotmem.Memory(
        memory_id="m-1",
        identifier="acme",
        fact="Acme invoices need two approvals.",
        importance=0.75,
        tags=("finance", "approval"),
        created_at=datetime(2026, 1, 1, tzinfo=UTC),
    )
    assert store.get("m-1") == memory
    assert memory.to_dict()["created_at"] == "2026-01-01T00:00:00Z"


def test_generated_ids_are_derived_from_content(store: MemoryStore) -> None:
    first = store.add("A fact.", identifier="acme")
    assert first.memory_id == "mem-" + first.memory_id[4:]
    assert len(first.memory_id) == 24
    with pytest.raises(DuplicateMemoryError, match="already exists"):
        store.add("A fact.", identifier="acme")  # same content, same fixed clock
    assert store.add("A fact.", identifier="beta").memory_id != first.memory_id


def test_created_at_is_normalised_to_utc(store: MemoryStore) -> None:
    memory = store.add("x", identifier="a", created_at="2025-06-01T12:30:00.250000+02:00")
    assert memory.to_dict()["created_at"] == "2025-06-01T10:30:00.250000Z"
    assert store.get(memory.memory_id).created_at == datetime(2025, 6, 1, 10, 30, 0, 250000, UTC)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"fact": ""}, "expected fact not blank, found fact=''"),
        ({"fact": "   "}, "expected fact not blank, found fact=' {3}'"),
        ({"fact": 3}, "expected fact as a string, found a number 3"),
        ({"identifier": ""}, "expected identifier not blank"),
        ({"identifier": None}, "expected identifier as a string, found null"),
        ({"importance": 1.5}, r"expected importance in \[0, 1\], found importance=1.5"),
        ({"importance": -0.1}, r"expected importance in \[0, 1\], found importance=-0.1"),
        ({"importance": float("nan")}, r"expected importance in \[0, 1\], found importance=nan"),
        ({"importance": True}, r"importance as a number in \[0, 1\], found a boolean True"),
        ({"importance": "0.5"}, r"importance as a number in \[0, 1\], found a string '0.5'"),
        ({"tags": "finance"}, "expected tags as a list of strings, found a string 'finance'"),
        ({"tags": {"a": 1}}, "expected tags as a list of strings, found an object"),
        ({"importance": 10**400}, r"expected importance in \[0, 1\], found importance=1000"),
        ({"importance": 2}, r"expected importance in \[0, 1\], found importance=2"),
        ({"tags": ["ok", 3]}, "expected every tag a non-blank string, found tag=3"),
        # One limit wherever a memory enters (a package's too), so every store snapshots.
        ({"tags": ["t"] * 70_000}, "expected at most 65536 tags, found 70000 tags"),
        ({"memory_id": ""}, "expected memory_id not blank"),
        ({"memory_id": 7}, "expected memory_id as a string, found a number 7"),
        (
            {"created_at": "yesterday"},
            "expected created_at as ISO-8601 text such as '2025-01-31T09:00:00Z', "
            "found created_at='yesterday'",
        ),
        (
            {"created_at": "2025-01-01T00:00:00"},
            "expected created_at with a timezone such as '2025-01-31T09:00:00Z', "
            "found created_at='2025-01-01T00:00:00' \\(no timezone\\)",
        ),
    ],
)
def test_invalid_memories_are_refused(store: MemoryStore, fields: dict, message: str) -> None:
    arguments = {"fact": "A fact.", "identifier": "acme", **fields}
    fact = arguments.pop("fact")
    with pytest.raises(ValidationError, match=message):
        store.add(fact, **arguments)
    assert store.count() == 0


def test_boundaries_of_importance_are_accepted(store: MemoryStore) -> None:
    assert store.add("low", identifier="a", importance=0).importance == 0.0
    assert store.add("high", identifier="a", importance=1).importance == 1.0


def test_add_many_is_all_or_nothing(store: MemoryStore) -> None:
    store.add("existing", identifier="a", memory_id="m-0")
    batch = [
        {"memory_id": "m-1", "identifier": "a", "fact": "one"},
        {"memory_id": "m-2", "identifier": "a", "fact": "two"},
        {"memory_id": "m-0", "identifier": "a", "fact": "clashes with an existing id"},
    ]
    with pytest.raises(DuplicateMemoryError, match="memory_id='m-0' already exists"):
        store.add_many(batch)
    assert [m.memory_id for m in store] == ["m-0"]

    message = r"memory #1: expected importance in \[0, 1\], found importance=9"
    with pytest.raises(ValidationError, match=message):
        store.add_many(
            [
                {"memory_id": "m-1", "identifier": "a", "fact": "one"},
                {"memory_id": "m-2", "identifier": "a", "fact": "two", "importance": 9},
            ]
        )
    with pytest.raises(DuplicateMemoryError, match="appears more than once in one batch"):
        store.add_many(
            [
                {"memory_id": "m-1", "identifier": "a", "fact": "one"},
                {"memory_id": "m-1", "identifier": "a", "fact": "again"},
            ]
        )
    with pytest.raises(ValidationError, match="unknown memory field"):
        store.add_many([{"identifier": "a", "fact": "one", "namespace": "x"}])
    assert store.count() == 1
    fts_rows = store.connection.execute("SELECT count(*) FROM memories_fts_docsize").fetchone()[0]
    assert fts_rows == 1


def test_add_many_accepts_memories_and_mappings(store: MemoryStore) -> None:
    memory = store.add("first", identifier="a", memory_id="m-1")
    store.delete("m-1")
    added = store.add_many([memory, {"memory_id": "m-2", "identifier": "b", "fact": "second"}])
    assert [m.memory_id for m in added] == ["m-1", "m-2"]
    assert store.count() == 2
    assert store.count("a") == 1
    assert store.identifiers() == {"a": 1, "b": 1}


def test_get_and_delete_unknown_ids(store: MemoryStore) -> None:
    with pytest.raises(MemoryNotFoundError, match="no memory with memory_id='nope'"):
        store.get("nope")
    with pytest.raises(MemoryNotFoundError):
        store.delete("nope")


def test_iteration_is_ordered_by_memory_id(store: MemoryStore) -> None:
    for memory_id in ["m-3", "m-1", "m-2"]:
        store.add(
            f"fact {memory_id}", identifier="b" if memory_id == "m-2" else "a", memory_id=memory_id
        )
    assert [m.memory_id for m in store] == ["m-1", "m-2", "m-3"]
    assert [m.memory_id for m in store.iter_memories("a")] == ["m-1", "m-3"]
    assert len(store) == 3


def test_fts_index_follows_inserts_updates_and_deletes(store: MemoryStore) -> None:
    store.add("copper kettle", identifier="a", memory_id="m-1")
    store.add("silver spoon", identifier="a", memory_id="m-2")

    def matches(term: str) -> list[int]:
        sql = "SELECT rowid FROM memories_fts WHERE memories_fts MATCH ? ORDER BY rowid"
        return [row[0] for row in store.connection.execute(sql, (term,))]

    assert matches("copper") == [1]
    store.connection.execute("UPDATE memories SET fact = 'golden kettle' WHERE rowid = 1")
    assert matches("copper") == []
    assert matches("golden") == [1]
    store.delete("m-1")
    assert matches("golden") == []
    store.connection.execute("INSERT INTO memories_fts(memories_fts) VALUES('integrity-check')")


def test_open_store_on_disk_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    with hotmem.open_store(path) as store:
        store.add("persisted", identifier="a", memory_id="m-1")
    with hotmem.open_store(str(path)) as store:
        assert store.get("m-1").fact == "persisted"
        assert store.path == str(path)


def test_open_store_refuses_foreign_and_missing_locations(tmp_path: Path) -> None:
    foreign = tmp_path / "other.db"
    connection = sqlite3.connect(foreign)
    connection.execute("CREATE TABLE something (x)")
    connection.close()
    with pytest.raises(StoreError, match="is a SQLite database but not a HotMem store"):
        hotmem.open_store(foreign)
    with pytest.raises(StoreError, match="does not exist"):
        hotmem.open_store(tmp_path / "missing" / "store.db")
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(b"this is not a database at all" * 100)
    with pytest.raises(StoreError, match="cannot open store"):
        hotmem.open_store(garbage)


def test_open_store_refuses_another_embedding_model(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    hotmem.open_store(path).close()
    connection = sqlite3.connect(path)
    connection.execute("UPDATE hotmem_meta SET value = 'other-model' WHERE key = 'embedding_model'")
    connection.commit()
    connection.close()
    with pytest.raises(StoreError, match="expected embedding_model='hotmem-hash-v1'"):
        hotmem.open_store(path)


def test_index_is_refreshed_after_another_connection_writes(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    with hotmem.open_store(path) as reader, hotmem.open_store(path) as writer:
        writer.add("copper kettle", identifier="a", memory_id="m-1")
        assert [r.memory_id for r in hotmem.search_memories(reader, "copper kettle")] == ["m-1"]
        writer.add("copper kettle lid", identifier="a", memory_id="m-2")
        found = [r.memory_id for r in hotmem.search_memories(reader, "copper kettle")]
        assert sorted(found) == ["m-1", "m-2"]


class StoreMachine(RuleBasedStateMachine):
    """The store behaves like a dict of memory_id -> (identifier, fact)."""

    ids = Bundle("ids")

    def __init__(self) -> None:
        super().__init__()
        self.store = hotmem.open_store(":memory:", clock=hotmem.fixed_clock("2026-01-01T00:00:00Z"))
        self.model: dict[str, tuple[str, str]] = {}

    @rule(
        target=ids,
        memory_id=st.text(alphabet="abcdef-", min_size=1, max_size=4).filter(str.strip),
        identifier=st.sampled_from(["acme", "beta"]),
        fact=st.text(min_size=1, max_size=20).filter(lambda t: t.strip() and "\x00" not in t),
    )
    def add(self, memory_id: str, identifier: str, fact: str) -> str:
        if memory_id in self.model:
            with pytest.raises(DuplicateMemoryError):
                self.store.add(fact, identifier=identifier, memory_id=memory_id)
        else:
            self.store.add(fact, identifier=identifier, memory_id=memory_id)
            self.model[memory_id] = (identifier, fact)
        return memory_id

    @rule(memory_id=consumes(ids))
    def delete(self, memory_id: str) -> None:
        if memory_id in self.model:
            self.store.delete(memory_id)
            del self.model[memory_id]
        else:
            with pytest.raises(MemoryNotFoundError):
                self.store.delete(memory_id)

    @rule(memory_id=ids)
    def get(self, memory_id: str) -> None:
        if memory_id in self.model:
            memory = self.store.get(memory_id)
            assert (memory.identifier, memory.fact) == self.model[memory_id]
        else:
            with pytest.raises(MemoryNotFoundError):
                self.store.get(memory_id)

    @invariant()
    def counts_agree(self) -> None:
        assert self.store.count() == len(self.model)
        assert self.store.count("acme") == sum(1 for i, _ in self.model.values() if i == "acme")
        assert [m.memory_id for m in self.store] == sorted(self.model)
        fts_rows = self.store.connection.execute(
            "SELECT count(*) FROM memories_fts_docsize"
        ).fetchone()
        assert fts_rows[0] == len(self.model)

    def teardown(self) -> None:
        self.store.close()


TestStoreMachine = StoreMachine.TestCase
TestStoreMachine.settings = settings(max_examples=40, stateful_step_count=25, deadline=None)


def _triggers(store: MemoryStore) -> list[str]:
    sql = "SELECT name FROM sqlite_master WHERE type = 'trigger' ORDER BY name"
    return [row[0] for row in store.connection.execute(sql)]


def test_bulk_batches_index_fts_and_keep_the_trigger(store: MemoryStore) -> None:
    triggers = _triggers(store)
    assert triggers == [
        "hotmem_changes_prune",
        "memories_changes_delete",
        "memories_changes_update",
        "memories_fts_delete",
        "memories_fts_insert",
        "memories_fts_update",
        "memories_vectors_delete",
    ]
    store.add("copper kettle", identifier="a", memory_id="m-first")
    batch = [
        {"memory_id": f"m-{i:03d}", "identifier": "a", "fact": f"silver spoon {i}"}
        for i in range(40)
    ]
    store.add_many(batch)
    assert _triggers(store) == triggers
    docs = store.connection.execute("SELECT count(*) FROM memories_fts_docsize").fetchone()[0]
    assert docs == 41
    store.connection.execute("INSERT INTO memories_fts(memories_fts) VALUES('integrity-check')")
    matches = store.connection.execute(
        "SELECT count(*) FROM memories_fts WHERE memories_fts MATCH 'spoon'"
    ).fetchone()[0]
    assert matches == 40
    # A failing bulk batch rolls back the rows and the index alike; the trigger never changes.
    clash = [*batch[:1], {"memory_id": "m-new", "identifier": "a", "fact": "x"}] * 20
    clash = [{**row, "memory_id": f"m-new-{i}"} for i, row in enumerate(clash)] + [batch[0]]
    with pytest.raises(DuplicateMemoryError, match="memory_id='m-000' already exists"):
        store.add_many(clash)
    assert _triggers(store) == triggers
    assert store.count() == 41
    store.connection.execute("INSERT INTO memories_fts(memories_fts) VALUES('integrity-check')")
    store.add("one more spoon", identifier="a", memory_id="m-after")
    docs = store.connection.execute("SELECT count(*) FROM memories_fts_docsize").fetchone()[0]
    assert docs == 42


def test_check_integrity_finds_a_memory_missing_from_the_index(store: MemoryStore) -> None:
    store.add("Deploys happen on Tuesdays.", identifier="acme")
    assert store.check_integrity() == ()
    # A row written behind the trigger's back: the index no longer matches the memories.
    store.connection.execute("DROP TRIGGER memories_fts_insert")
    store.add("Badges expire at midnight.", identifier="acme")
    assert store.check_integrity() == ("full-text index: database disk image is malformed",)


def _memories(count: int, *, start: int = 0) -> list[dict[str, object]]:
    return [
        {"memory_id": f"s-{i:03d}", "identifier": "a", "fact": f"Silver spoon number {i}."}
        for i in range(start, start + count)
    ]


def test_add_stream_inserts_batch_by_batch_and_returns_the_count(store: MemoryStore) -> None:
    drawn: list[int] = []

    def items():
        for position, memory in enumerate(_memories(100)):
            drawn.append(position)
            yield memory

    assert store.add_stream(items(), batch_size=40) == 100  # bulk batches and a short one
    assert drawn == list(range(100))
    assert store.count() == 100
    assert store.check_integrity() == ()
    docs = store.connection.execute("SELECT count(*) FROM memories_fts_docsize").fetchone()[0]
    assert docs == 100
    assert store.add_stream(iter(())) == 0
    store.add("one more spoon", identifier="a", memory_id="m-after")  # single adds still index
    assert [r.memory_id for r in hotmem.search_memories(store, "one more spoon", limit=1)] == [
        "m-after"
    ]


def test_add_stream_is_lazy_and_all_or_nothing_across_batches(store: MemoryStore) -> None:
    drawn: list[int] = []

    def items():
        for position, memory in enumerate(_memories(10)):
            drawn.append(position)
            yield {**memory, "importance": 7} if position == 7 else memory

    with pytest.raises(ValidationError, match=r"memory #7: expected importance in \[0, 1\]"):
        store.add_stream(items(), batch_size=3)
    assert drawn == list(range(8))  # nothing after #7 was read
    assert store.count() == 0
    assert store.check_integrity() == ()


@pytest.mark.parametrize(
    ("batch", "message"),
    [
        (
            [*_memories(5), _memories(1, start=1)[0]],
            "memory_id='s-001' appears more than once in one batch",
        ),
        (
            [*_memories(5), {**_memories(1)[0], "memory_id": "m-0"}],
            "memory_id='m-0' already exists",
        ),
    ],
)
@pytest.mark.parametrize("batch_size", [1, 2, 3, 40])
def test_add_stream_names_the_clashing_id_whatever_the_batch(
    store: MemoryStore, batch: list[dict[str, object]], message: str, batch_size: int
) -> None:
    store.add("existing", identifier="a", memory_id="m-0")
    with pytest.raises(DuplicateMemoryError, match=message):
        store.add_stream(batch * (8 if batch_size == 40 else 1), batch_size=batch_size)
    assert [m.memory_id for m in store] == ["m-0"]
    assert store.check_integrity() == ()


def test_an_error_raised_by_the_input_rolls_the_stream_back(store: MemoryStore) -> None:
    def items():
        yield from _memories(50)
        raise RuntimeError("the source failed")

    with pytest.raises(RuntimeError, match="the source failed"):
        store.add_stream(items(), batch_size=20)
    assert store.count() == 0
    assert store.connection.execute("SELECT count(*) FROM hotmem_fts_deferred").fetchone() == (0,)


@pytest.mark.parametrize("batch_size", [0, -1, True, 2.5])
def test_add_stream_needs_a_positive_batch_size(store: MemoryStore, batch_size: object) -> None:
    with pytest.raises(ValidationError, match="batch_size must be a positive integer"):
        store.add_stream(_memories(1), batch_size=batch_size)  # type: ignore[arg-type]


def test_add_many_streams_its_input_but_still_returns_every_memory(store: MemoryStore) -> None:
    added = store.add_many(iter(_memories(25)))
    assert [m.memory_id for m in added] == [f"s-{i:03d}" for i in range(25)]
    assert added[3] == store.get("s-003")


def test_the_most_tags_a_memory_may_hold_are_snapshotted_and_hydrated(tmp_path: Path) -> None:
    tags = [f"t{i}" for i in range(MAX_TAGS)]
    with hotmem.open_store(tmp_path / "s.db") as store:
        store.add("A fact.", identifier="a", memory_id="m", tags=tags)
        store.snapshot(tmp_path / "p.zip")
    hotmem.hydrate(tmp_path / "p.zip", tmp_path / "t.db")
    with hotmem.open_store(tmp_path / "t.db") as store:
        assert list(store.get("m").tags) == tags


def test_an_empty_path_is_refused_not_opened_as_a_temporary_store() -> None:
    with pytest.raises(hotmem.StoreError) as raised:
        hotmem.open_store("")
    assert str(raised.value) == (
        "cannot open store '': expected a path (or ':memory:'), found an empty string"
    )


@pytest.mark.parametrize(
    ("items", "found"),
    [
        (5, "int 5"),
        (None, "NoneType None"),
        ("a fact", "str 'a fact'"),
        (b"xy", "bytes b'xy'"),
        (
            {"fact": "x", "identifier": "a"},
            "one mapping (add one memory with store.add, or pass a list of them)",
        ),
    ],
)
def test_add_many_and_add_stream_refuse_what_is_no_iterable_of_memories(
    store: MemoryStore, items: object, found: str
) -> None:
    for add in (store.add_many, store.add_stream):
        with pytest.raises(ValidationError) as raised:
            add(items)  # type: ignore[arg-type]
        assert str(raised.value) == (
            f"expected an iterable of memories (Memory objects or mappings), found {found}"
        )
    assert store.count() == 0


def _statements(store: MemoryStore, write: Callable[[], object]) -> list[str]:
    """The statements ``write`` runs on the store's connection, each once (a trigger's and
    FTS5's own, which SQLite reports as ``--`` lines or the outer statement again, left out)."""
    seen: list[str] = []
    store.connection.set_trace_callback(seen.append)
    try:
        write()
    finally:
        store.connection.set_trace_callback(None)
    return [key for key, _ in groupby(s.split(" (")[0] for s in seen if not s.startswith("--"))]


def test_one_add_is_one_write_transaction_with_only_the_statements_it_needs(
    tmp_path: Path,
) -> None:
    with hotmem.open_store(tmp_path / "s.db") as store:
        _one_add_statements(store)


def _one_add_statements(store: MemoryStore) -> None:
    store.add("the first add reads the spaces before it", identifier="a", memory_id="m-0")
    spaces = "SELECT name, model_id, digest, dimension, dtype FROM vector_spaces ORDER BY name"
    # issue 35: one term looked up in the lexical index a write adds to, so that a damaged one
    # refuses the add as it refuses search (the CJK index only for a fact with CJK grams)
    words, grams = (
        f"SELECT rowid FROM {table} WHERE {table} MATCH '\"hotmem\"' LIMIT 1"
        for table in ("memories_fts", "memories_cjk")
    )
    insert, version = "INSERT INTO memories", "PRAGMA data_version"
    # the add after the first: nothing else wrote since, so no spaces read and no look-up
    plain = _statements(store, lambda: store.add("copper spoon", identifier="a", memory_id="m-1"))
    assert plain == ["BEGIN IMMEDIATE", version, insert, "COMMIT"]
    store.delete("m-1")  # any other write of the store: the next add reads and looks again
    again = _statements(store, lambda: store.add("copper spoon", identifier="a", memory_id="m-1"))
    assert again == ["BEGIN IMMEDIATE", version, spaces, words, insert, "COMMIT"]
    cjk = _statements(store, lambda: store.add("東京の天気", identifier="a", memory_id="m-2"))
    assert cjk == [
        "BEGIN IMMEDIATE",
        version,
        insert,
        grams,
        "INSERT INTO memories_cjk",
        "COMMIT",
    ]
    with sqlite3.connect(store.path) as other:  # another connection's commit: read and look
        other.execute("INSERT INTO hotmem_meta (key, value) VALUES ('x', 'y')")
    later = _statements(store, lambda: store.add("tin cup", identifier="a", memory_id="m-3"))
    assert later == ["BEGIN IMMEDIATE", version, spaces, words, insert, "COMMIT"]
    store.delete("m-3")
    assert store.check_integrity() == ()
    assert [r.memory_id for r in hotmem.search_memories(store, "東京", limit=1)] == ["m-2"]
    with pytest.raises(DuplicateMemoryError, match="memory_id='m-1' already exists"):
        store.add("again", identifier="a", memory_id="m-1")
    with pytest.raises(ValidationError, match="fact"):
        store.add("", identifier="a")
    assert [m.memory_id for m in store] == ["m-0", "m-1", "m-2"]
    assert store.check_integrity() == ()


def test_with_numpy_imported_a_bulk_add_embeds_each_batch_at_once_with_the_same_bytes(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("numpy")  # imported: the batch path is taken
    from hotmem.embedding import hash_v1

    batched: list[int] = []
    numpy_embed = hash_v1._embed_many_numpy

    def counted(texts: list[str], np: object) -> list[bytes]:
        batched.append(len(texts))
        return numpy_embed(texts, np)

    monkeypatch.setattr(hash_v1, "_embed_many_numpy", counted)
    facts = ["Invoices need two approvals.", "東京の会議", "😀 party", "...", "a b c d"] * 4
    memories = [
        {"memory_id": f"m-{i:02d}", "identifier": "a", "fact": fact} for i, fact in enumerate(facts)
    ]
    assert store.add_stream(memories, batch_size=4) == 20
    assert batched == [4] * 5
    stored = dict(store.connection.execute("SELECT memory_id, embedding FROM memories"))
    assert stored == {m["memory_id"]: hash_v1.embed_bytes(m["fact"]) for m in memories}
    assert store.check_integrity() == ()
