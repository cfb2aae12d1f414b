"""A bulk write leaves the word index as one FTS5 segment (``lexical_index.settle``).

FTS5 flushes each bulk statement as a segment of its own and merges by levels, so a bulk write
left several large segments at the lowest levels, which the next single adds merged again and
again. A write that at least doubles the index, and every rebuild (hydrate, migration,
``reindex --rebuild``), now merges it into one; smaller writes leave FTS5's own merging alone.
Rankings do not depend on the segments: the searches below equal those of a store built one
add at a time.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import hotmem
from hotmem.store import schema

FACTS = [
    f"{word} report number {k} about {other} and copper kettles"
    for k, (word, other) in enumerate(
        (w, o) for w in ("budget", "deploy", "invoice", "kitchen", "audit") for o in range(60)
    )
]
QUERIES = ["budget report", "copper kettles 17", "kitchen audit", "deploy invoice number 3"]


def _memories(facts: list[str], first: int = 0) -> list[dict[str, object]]:
    return [
        {"memory_id": f"m-{first + k:04d}", "identifier": "acme", "fact": fact}
        for k, fact in enumerate(facts)
    ]


def _segments(path: Path, table: str = "memories_fts") -> int:
    with sqlite3.connect(path) as connection:
        return int(
            connection.execute(f"SELECT count(DISTINCT segid) FROM {table}_idx").fetchone()[0]
        )


def _ranked(store: hotmem.MemoryStore) -> list[list[tuple[str, float]]]:
    return [
        [(r.memory_id, r.score) for r in hotmem.search_memories(store, q, limit=10)]
        for q in QUERIES
    ]


def _one_by_one(path: Path, memories: list[dict[str, object]]) -> list[list[tuple[str, float]]]:
    with hotmem.open_store(path, clock=hotmem.fixed_clock("2026-01-01T00:00:00Z")) as store:
        for m in memories:
            store.add(str(m["fact"]), identifier="acme", memory_id=str(m["memory_id"]))
        return _ranked(store)


def test_a_bulk_write_into_an_empty_store_leaves_one_segment(tmp_path: Path) -> None:
    memories = _memories(FACTS)
    path = tmp_path / "bulk.db"
    with hotmem.open_store(path, clock=hotmem.fixed_clock("2026-01-01T00:00:00Z")) as store:
        assert store.add_stream(memories, batch_size=40) == 300  # eight statements, 8 segments
        assert _segments(path) == 1
        assert store.check_integrity() == ()
        ranked = _ranked(store)
    assert ranked == _one_by_one(tmp_path / "one.db", memories)
    assert all(ranked)


def test_a_write_that_does_not_double_the_index_leaves_fts5_merging_alone(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.db"
    with hotmem.open_store(path) as store:
        store.add_stream(_memories(FACTS[:200]), batch_size=40)
        assert _segments(path) == 1
        store.add_stream(_memories(FACTS[200:], first=200), batch_size=40)  # 100 after 200
        assert _segments(path) > 1  # the new statements' segments, not merged into the old
        assert store.check_integrity() == ()


def test_an_import_into_an_empty_store_leaves_one_segment(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with hotmem.open_store(path) as store:
        counts = store.import_stream(_memories(FACTS), batch_size=50)
        assert counts.added == 300
        assert _segments(path) == 1
        assert store.check_integrity() == ()


def test_a_rebuild_and_a_hydration_leave_one_segment_in_each_index(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    facts = [*FACTS[:100], "東京の天気は晴れ", "大阪の会議は月曜日"]
    with hotmem.open_store(path) as store:
        for m in _memories(facts):  # one segment an add (merged by FTS5 four at a time)
            store.add(str(m["fact"]), identifier="acme", memory_id=str(m["memory_id"]))
        assert _segments(path) > 1
        before = _ranked(store)
        store.rebuild_lexical_index()  # what `hotmem reindex --rebuild` and migrations run
        assert (_segments(path), _segments(path, "memories_cjk")) == (1, 1)
        assert _ranked(store) == before
        store.snapshot(tmp_path / "s.hmpkg")
    hydrated = tmp_path / "h.db"
    hotmem.hydrate(tmp_path / "s.hmpkg", hydrated)
    assert (_segments(hydrated), _segments(hydrated, "memories_cjk")) == (1, 1)
    with hotmem.open_store(hydrated) as store:
        assert _ranked(store) == before
        assert store.check_integrity() == ()


def _indexing_statements(store: hotmem.MemoryStore, write: object) -> list[str]:
    seen: list[str] = []
    store.connection.set_trace_callback(seen.append)
    try:
        write()  # type: ignore[operator]
    finally:
        store.connection.set_trace_callback(None)
    return [s for s in seen if s.startswith("INSERT INTO memories_fts (rowid, fact) SELECT")]


def test_a_bulk_write_indexes_its_rows_once_at_its_end_whatever_its_batches(
    tmp_path: Path,
) -> None:
    # 7 batches of 40 and a last one of 20, inserted row by row while the trigger is off: the
    # one statement at the end indexes them all, each once.
    path = tmp_path / "s.db"
    with hotmem.open_store(path) as store:
        statements = _indexing_statements(
            store, lambda: store.add_stream(_memories(FACTS), batch_size=40)
        )
        assert statements == [schema.INDEX_ROWS_AFTER.replace("?", "0")]
        assert store.check_integrity() == ()
        for k in (0, 279, 280, 299):  # the first, the last of the bulk batches, the last batch
            assert hotmem.search_memories(store, f"number {k} ", limit=1)[0].memory_id == (
                f"m-{k:04d}"
            )


def test_an_import_that_rewrites_stored_memories_between_its_batches_keeps_the_index_sound(
    tmp_path: Path,
) -> None:
    path = tmp_path / "s.db"
    with hotmem.open_store(path) as store:
        store.add_many(_memories(FACTS[:100]))
        assert "m-0007" in _budget(store)
        rewritten = [
            {**m, "fact": f"rewritten pewter teapot {k}"}
            for k, m in enumerate(_memories(FACTS[:100]))
        ]
        items = (
            _memories(FACTS[100:200], first=100)
            + rewritten[:50]
            + _memories(FACTS[200:], first=200)
        )
        statements = _indexing_statements(
            store, lambda: store.import_stream(items, existing="update", batch_size=40)
        )
        assert len(statements) == 1
        assert store.check_integrity() == ()
        assert len(store) == 300
        found = hotmem.search_memories(store, "pewter teapot 7", limit=1)[0]
        assert (found.memory_id, found.fact) == ("m-0007", "rewritten pewter teapot 7")
        assert hotmem.search_memories(store, "number 250 ", limit=1)[0].memory_id == "m-0250"
        # the old fact's words left the index with it
        assert "m-0007" not in _budget(store)


def _budget(store: hotmem.MemoryStore) -> set[str]:
    return {r.memory_id for r in hotmem.search_memories(store, "budget", limit=300)}
