"""The change log and the typed reads a search index refreshes from (``hotmem.store.changes``)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hotmem
from hotmem.errors import StoreError
from hotmem.store import changes, schema
from hotmem.store.changes import Mark

WORDS = ["invoice", "invoices", "deploy", "東京", "月曜日", "badge"]


def _mark(store: hotmem.MemoryStore) -> Mark:
    with store.reading() as connection:
        return changes.current_mark(connection)


def _since(store: hotmem.MemoryStore, mark: Mark) -> frozenset[int] | None:
    with store.reading() as connection:
        return changes.changed_since(connection, mark)


def _rowid(store: hotmem.MemoryStore, memory_id: str) -> int:
    with store.reading() as connection:
        row = connection.execute(
            "SELECT rowid FROM memories WHERE memory_id = ?", (memory_id,)
        ).fetchone()
        return int(row[0])


def test_adds_move_the_rowid_and_deletes_and_rewrites_are_logged(
    store: hotmem.MemoryStore,
) -> None:
    assert _mark(store) == Mark(0, 0)
    store.add_many({"fact": f"fact {i}", "identifier": "a", "memory_id": f"m{i}"} for i in range(3))
    start = _mark(store)
    assert start == Mark(3, 0)
    assert _since(store, start) == frozenset()
    store.delete("m1")
    with store._writing() as connection:  # behind the store's API, as a tool would
        connection.execute("UPDATE memories SET importance = 0.9 WHERE memory_id = 'm2'")
    assert _mark(store) == Mark(3, 2)
    assert _since(store, start) == frozenset({2, 3})
    assert _since(store, Mark(3, 1)) == frozenset({3})
    store.add("fact 4", identifier="a", memory_id="m4")
    assert _mark(store) == Mark(4, 2)


def test_a_change_to_every_memory_says_reload(store: hotmem.MemoryStore) -> None:
    store.add("fact", identifier="a", memory_id="m")
    before = _mark(store)
    store.rebuild_lexical_index()
    assert _since(store, before) is None
    assert _since(store, _mark(store)) == frozenset()


def test_a_log_pruned_past_a_mark_says_reload(store: hotmem.MemoryStore) -> None:
    store.add("fact", identifier="a", memory_id="m")
    with store._writing() as connection:
        changes.log_changed(connection, [1] * (schema.CHANGES_KEPT + schema.CHANGES_PRUNE))
        kept = connection.execute("SELECT count(*), min(seq) FROM hotmem_changes").fetchone()
    total = schema.CHANGES_KEPT + schema.CHANGES_PRUNE
    assert kept == (schema.CHANGES_KEPT, total - schema.CHANGES_KEPT + 1)
    assert _since(store, Mark(1, 0)) is None
    assert _since(store, Mark(1, total - schema.CHANGES_KEPT)) == frozenset({1})


#: token -> the words of WORDS it is indexed from (porter stems; CJK grams).
TOKENS = {
    ("memories_fts", "invoic"): {"invoice", "invoices"},
    ("memories_fts", "deploi"): {"deploy"},
    ("memories_cjk", "東京"): {"東京"},
    ("memories_cjk", "曜"): {"月曜日"},
    ("memories_cjk", "月曜"): {"月曜日"},
}


@settings(max_examples=40, deadline=None)
@given(st.lists(st.lists(st.sampled_from(WORDS), min_size=1, max_size=6), max_size=25))
def test_token_occurrences_list_every_occurrence_in_rowid_order(facts: list[list[str]]) -> None:
    with hotmem.open_store(":memory:") as store:
        store.add_many(
            {"fact": " ".join(words), "identifier": "a", "memory_id": f"m{i}"}
            for i, words in enumerate(facts)
        )
        with store.reading() as connection:
            for (table, token), sources in TOKENS.items():
                found = changes.token_occurrences(connection, table, token)  # type: ignore[arg-type]
                expected = [i + 1 for i, words in enumerate(facts) for w in words if w in sources]
                assert list(found) == expected


def test_token_occurrences_count_every_occurrence(store: hotmem.MemoryStore) -> None:
    store.add("invoice invoices invoice", identifier="a", memory_id="three")
    store.add("deploy", identifier="a", memory_id="none")
    store.add("an invoice", identifier="a", memory_id="one")
    with store.reading() as connection:
        found = changes.token_occurrences(connection, "memories_fts", "invoic")
        assert list(found) == [1, 1, 1, 3]
        assert list(changes.token_occurrences(connection, "memories_fts", "absent")) == []


def test_result_rows_and_space_vectors(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with hotmem.open_store(path) as store:
        store.add("invoice", identifier="a", memory_id="m1", tags=["x"], importance=0.25)
        store.add("deploy", identifier="b", memory_id="m2")
        with store.reading() as connection:
            rows = changes.result_rows(connection, str(path), [2, 1])
            assert rows == {
                1: ("m1", "a", "invoice", '["x"]', 0.25),
                2: ("m2", "b", "deploy", "[]", 0.5),
            }
    connection = sqlite3.connect(path)
    connection.execute(
        "INSERT INTO space_vectors (space, memory_rowid, vector) VALUES "
        "('s', 2, x'0000803f'), ('s', 1, x'00'), ('t', 1, x'000080bf'), ('u', 2, x'00000040')"
    )
    rowids, vectors = changes.space_vectors(connection, "s", 4, target="s.db")
    assert (list(rowids), vectors) == ([2], b"\x00\x00\x80\x3f")
    assert list(changes.space_vectors(connection, "t", 4, [1, 2], target="s.db")[0]) == [1]
    # A vector of norm 2 was not written by HotMem: refused, naming its memory.
    with pytest.raises(StoreError) as raised:
        changes.space_vectors(connection, "u", 4, target="s.db")
    assert str(raised.value) == (
        "store 's.db' holds a damaged memory, memory_id='m2': expected its u vector finite "
        "and of unit length, found a norm of 2"
    )
    connection.close()
