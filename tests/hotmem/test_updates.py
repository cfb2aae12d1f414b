"""MemoryStore.update and import_stream: the row, the lexical indexes, the vectors of every
space and the search indexes of other readers follow, in one transaction."""

from __future__ import annotations

from pathlib import Path

import pytest

import hotmem
from hotmem.embedding.hash_v1 import embed_bytes
from hotmem.embedding.registry import SEMANTIC_MODEL
from hotmem.store import lexical_index

CLOCK = hotmem.fixed_clock("2026-01-02T03:04:05Z")


@pytest.fixture
def db(tmp_path: Path) -> Path:
    path = tmp_path / "s.db"
    with hotmem.open_store(path, clock=CLOCK) as store:
        store.add("Invoices need two approvals.", identifier="acme", memory_id="m-1", tags=["a"])
        store.add("Deploys happen on Tuesdays.", identifier="acme", memory_id="m-2")
    return path


def _vector(store: hotmem.MemoryStore, space: str, memory_id: str) -> bytes:
    row = store.connection.execute(
        "SELECT v.vector FROM space_vectors AS v JOIN memories AS m ON m.rowid = v.memory_rowid "
        "WHERE v.space = ? AND m.memory_id = ?",
        (space, memory_id),
    ).fetchone()
    return bytes(row[0])


def _ids(store: hotmem.MemoryStore, query: str) -> list[str]:
    return [r.memory_id for r in hotmem.search_memories(store, query, min_similarity=1.0)]


def test_update_changes_the_fact_and_everything_derived_from_it(db: Path) -> None:
    with hotmem.open_store(db) as store, hotmem.open_store(db) as reader:
        assert _ids(reader, "invoices") == ["m-1"]  # the reader's search index is loaded
        before = store.get("m-1")
        updated = store.update("m-1", fact="東京 receipts need one approval.")
        assert updated == hotmem.Memory(
            "m-1", "acme", "東京 receipts need one approval.", 0.5, ("a",), before.created_at
        )
        assert store.get("m-1") == updated
        assert _ids(reader, "invoices") == []  # its index re-read the memory
        assert _ids(reader, "receipts") == ["m-1"]
        assert _ids(reader, "東京") == ["m-1"]  # the CJK grams follow
        embedding = store.connection.execute(
            "SELECT embedding FROM memories WHERE memory_id = 'm-1'"
        ).fetchone()[0]
        assert embedding == embed_bytes("東京 receipts need one approval.")
        assert store.check_integrity() == ()


def test_update_keeps_what_is_not_given_and_validates(db: Path) -> None:
    with hotmem.open_store(db) as store:
        store.update("m-1", importance=0.9)
        store.update("m-1", tags=[])
        memory = store.get("m-1")
        assert (memory.fact, memory.importance, memory.tags) == (
            "Invoices need two approvals.",
            0.9,
            (),
        )
        with pytest.raises(hotmem.ValidationError, match=r"importance in \[0, 1\]"):
            store.update("m-1", importance=2.0)
        with pytest.raises(hotmem.ValidationError, match="fact not blank"):
            store.update("m-1", fact=" ")
        with pytest.raises(hotmem.MemoryNotFoundError, match="no memory with memory_id='nope'"):
            store.update("nope", importance=0.1)
        assert store.get("m-1") == memory  # nothing written by the refused updates
        assert store.check_integrity() == ()


def test_update_embeds_the_new_fact_in_every_space(db: Path) -> None:
    with hotmem.open_store(db) as store:
        store.add_space(SEMANTIC_MODEL)
        store.update("m-2", fact="Releases ship on Fridays.")
        embedder = hotmem.get_embedder(SEMANTIC_MODEL)
        [expected] = embedder.embed_many(["Releases ship on Fridays."])
        assert _vector(store, SEMANTIC_MODEL, "m-2") == bytes(expected)
        assert store.vector_counts() == {"hotmem-hash-v1": 2, SEMANTIC_MODEL: 2}
        results = hotmem.search_memories(store, "when do releases ship", profile="semantic")
        assert results[0].memory_id == "m-2"
        assert store.check_integrity() == ()


RECORDS = [
    {"memory_id": "m-1", "identifier": "acme", "fact": "Invoices need three approvals."},
    {"memory_id": "m-3", "identifier": "beta", "fact": "New memory."},
]


@pytest.mark.parametrize(
    ("existing", "counts", "m1"),
    [
        ("skip", hotmem.ImportCounts(added=1, skipped=1), "Invoices need two approvals."),
        ("update", hotmem.ImportCounts(added=1, updated=1), "Invoices need three approvals."),
    ],
)
def test_import_stream_skips_or_updates_stored_ids(
    db: Path, existing: str, counts: hotmem.ImportCounts, m1: str
) -> None:
    with hotmem.open_store(db) as store:
        created = store.get("m-1").created_at
        assert store.import_stream(RECORDS, existing=existing, batch_size=1) == counts  # type: ignore[arg-type]
        assert (store.get("m-1").fact, store.get("m-1").created_at) == (m1, created)
        assert store.count() == 3
        assert store.check_integrity() == ()
        assert lexical_index.differences(store.connection) == ()


def test_import_stream_refuses_a_stored_or_repeated_id_naming_its_position(db: Path) -> None:
    with hotmem.open_store(db) as store:
        with pytest.raises(hotmem.DuplicateMemoryError) as refused:
            store.import_stream([RECORDS[1], RECORDS[0]])
        assert (refused.value.position, str(refused.value)) == (
            1,
            "memory #1: memory_id='m-1' already exists in the store",
        )
        for batch_size in (1, 10):
            with pytest.raises(hotmem.DuplicateMemoryError) as repeated:
                store.import_stream(
                    [RECORDS[1], RECORDS[1]], existing="skip", batch_size=batch_size
                )
            assert repeated.value.reason == "memory_id='m-3' appears more than once in the input"
            assert repeated.value.position == 1
        with pytest.raises(hotmem.DuplicateMemoryError, match="more than once"):
            store.import_stream([RECORDS[0], RECORDS[0]], existing="update")
        with pytest.raises(hotmem.ValidationError, match="existing must be one of"):
            store.import_stream(RECORDS, existing="replace")  # type: ignore[arg-type]
        assert store.count() == 2  # every refused import rolled back
        assert store.get("m-1").fact == "Invoices need two approvals."


def test_import_stream_counts_id_less_facts_already_stored(db: Path) -> None:
    with hotmem.open_store(db) as store:
        counts = store.import_stream(
            [
                {"identifier": "acme", "fact": "Invoices need two approvals."},  # stored
                {"identifier": "beta", "fact": "Invoices need two approvals."},  # other scope
                {"identifier": "acme", "fact": "Something new."},
            ]
        )
        assert counts == hotmem.ImportCounts(added=3, repeated=1)
        assert store.import_stream([]) == hotmem.ImportCounts()


def test_an_upsert_re_embeds_a_changed_fact_in_every_space(db: Path) -> None:
    with hotmem.open_store(db) as store:
        store.add_space(SEMANTIC_MODEL)
        before = _vector(store, SEMANTIC_MODEL, "m-2")
        counts = store.import_stream(
            [
                {"memory_id": "m-1", "identifier": "acme", "fact": "Releases ship on Fridays."},
                {"memory_id": "m-2", "identifier": "acme", "fact": "Deploys happen on Tuesdays."},
            ],
            existing="update",
        )
        assert counts == hotmem.ImportCounts(updated=2)
        [expected] = hotmem.get_embedder(SEMANTIC_MODEL).embed_many(["Releases ship on Fridays."])
        assert _vector(store, SEMANTIC_MODEL, "m-1") == bytes(expected)
        assert _vector(store, SEMANTIC_MODEL, "m-2") == before  # the same fact: kept
        assert store.get("m-1").tags == ()  # every field from the line
        assert store.check_integrity() == ()
