"""The search index refreshes instead of reloading, and a refreshed index is a fresh one.

A rule-based state machine interleaves writes through the searching store and through another
connection (adds, bulk adds, streams, deletes, rewrites behind the store's back, a rebuilt
lexical index) with searches, and after every step checks that the index the searching store
refreshed holds what a fresh load holds (every live memory's columns, the lexical totals, the
postings it has read) and that its results equal a freshly opened store's.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

import hotmem
from hotmem.embedding.hash_v1 import embed_bytes
from hotmem.retrieval import image_writes
from hotmem.retrieval.index import SearchIndex
from hotmem.retrieval.search import index_of

WORDS = ["invoice", "invoices", "deploy", "badge", "coffee", "東京", "月曜日", "5", "!!!"]
QUERIES = ["invoice", "deploy badge", "東京 coffee", "!!!", "月曜日 invoices"]
facts = st.lists(st.sampled_from(WORDS), min_size=0, max_size=5).map(" ".join)


def view(index: SearchIndex) -> dict[str, object]:
    """What an index holds, by rowid (positions differ between a refreshed and a fresh one)."""
    live = [p for p in range(len(index.rowids)) if index.live[p]]
    memories = {
        index.rowids[p]: (
            index.importances[p],
            index.vector(p),
            index.lexical["memories_fts"].lengths[p],
            index.lexical["memories_cjk"].lengths[p],
            p in index.zero,
        )
        for p in live
    }
    scopes = {
        identifier: sorted(index.rowids[p] for p in index.scope(identifier))
        for identifier in index.scopes
    }
    totals = {t: (c.rows, c.tokens) for t, c in index.lexical.items()}
    return {
        "memories": memories,
        "scopes": {k: v for k, v in scopes.items() if v},
        "totals": totals,
    }


def postings(index: SearchIndex, table: str, token: str) -> dict[int, int]:
    """rowid -> frequency of the live memories in ``token``'s postings, as ``index`` holds them."""
    found = index.lexical[table].postings[token]  # type: ignore[index]
    return {
        index.rowids[p]: f
        for p, f in zip(found.positions, found.frequencies, strict=True)
        if index.live[p]
    }


class Refreshing(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.directory = tempfile.TemporaryDirectory()
        self.path = Path(self.directory.name) / "s.db"
        clock = hotmem.fixed_clock("2026-01-01T00:00:00Z")
        self.searcher = hotmem.open_store(self.path, clock=clock, accelerator="off")
        self.other = hotmem.open_store(self.path, clock=clock)
        self.count = 0

    def _memory(self, fact: str, identifier: str) -> dict[str, object]:
        self.count += 1
        return {"fact": fact or "-", "identifier": identifier, "memory_id": f"m{self.count:03d}"}

    def _ids(self) -> list[str]:
        return [m.memory_id for m in self.other]

    @rule(fact=facts, identifier=st.sampled_from("ab"), mine=st.booleans())
    def add(self, fact: str, identifier: str, mine: bool) -> None:
        store = self.searcher if mine else self.other
        store.add_many([self._memory(fact, identifier)])

    @rule(batch=st.lists(st.tuples(facts, st.sampled_from("abc")), min_size=1, max_size=40))
    def add_many(self, batch: list[tuple[str, str]]) -> None:
        self.other.add_stream(self._memory(f, i) for f, i in batch)

    @precondition(lambda self: self.count > 0)
    @rule(data=st.data(), mine=st.booleans())
    def delete(self, data: st.DataObject, mine: bool) -> None:
        ids = self._ids()
        if ids:
            (self.searcher if mine else self.other).delete(data.draw(st.sampled_from(ids)))

    @precondition(lambda self: self.count > 0)
    @rule(data=st.data(), fact=facts, importance=st.sampled_from([0.0, 0.3, 1.0]))
    def rewrite(self, data: st.DataObject, fact: str, importance: float) -> None:
        ids = self._ids()
        if ids:
            with self.other._writing() as connection:  # behind the store's API, as a tool would
                connection.execute(
                    "UPDATE memories SET fact = ?, importance = ?, embedding = ? "
                    "WHERE memory_id = ?",
                    (
                        fact or "-",
                        importance,
                        embed_bytes(fact or "-"),
                        data.draw(st.sampled_from(ids)),
                    ),
                )

    @rule()
    def rebuild(self) -> None:
        self.other.rebuild_lexical_index()

    @rule(query=st.sampled_from(QUERIES), identifier=st.sampled_from([None, "a"]))
    def search(self, query: str, identifier: str | None) -> None:
        hotmem.search_memories(self.searcher, query, identifier=identifier, limit=50)

    @invariant()
    def refreshed_is_fresh(self) -> None:
        with self.searcher.reading() as connection:
            refreshed = index_of(self.searcher, connection)
            fresh = SearchIndex.load(connection, str(self.path))
            assert view(refreshed) == view(fresh)
            for table, column in refreshed.lexical.items():
                for token in list(column.postings):
                    fresh.postings(connection, table, token)
                    assert postings(refreshed, table, token) == postings(fresh, table, token)

    @invariant()
    def results_are_a_fresh_stores(self) -> None:
        with hotmem.open_store(self.path, accelerator="off") as fresh:
            for query in QUERIES[:3]:
                found = hotmem.search_memories(self.searcher, query, limit=50)
                expected = hotmem.search_memories(fresh, query, limit=50)
                assert found == expected

    def teardown(self) -> None:
        self.searcher.close()
        self.other.close()
        self.directory.cleanup()


TestRefreshing = Refreshing.TestCase
TestRefreshing.settings = settings(stateful_step_count=30, max_examples=50, deadline=None)


class RefreshingBehind(Refreshing):
    """The same interleavings, every whole image written behind its search by a thread
    (``image_writes.BEHIND_FROM`` of 1), while the next steps write and search."""

    def __init__(self) -> None:
        super().__init__()
        self.behind_from = image_writes.BEHIND_FROM
        image_writes.BEHIND_FROM = 1

    def teardown(self) -> None:
        image_writes.wait()
        image_writes.BEHIND_FROM = self.behind_from
        super().teardown()


TestRefreshingBehind = RefreshingBehind.TestCase
TestRefreshingBehind.settings = settings(stateful_step_count=30, max_examples=25, deadline=None)


@pytest.mark.slow
def test_another_processs_writes_are_seen_by_a_refresh(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    with hotmem.open_store(path) as store:
        store.add_many(
            {"fact": f"invoice {i}", "identifier": "a", "memory_id": f"m{i}"} for i in range(50)
        )
        before = hotmem.search_memories(store, "invoice", limit=100)
        index = index_of_store(store)
        writer = (
            "import hotmem, sys\n"
            "with hotmem.open_store(sys.argv[1]) as s:\n"
            "    s.add('invoice deploy', identifier='b', memory_id='new')\n"
            "    s.delete('m3')\n"
        )
        subprocess.run([sys.executable, "-c", writer, str(path)], check=True)
        after = hotmem.search_memories(store, "invoice", limit=100)
        assert index_of_store(store) is index  # refreshed in place, not reloaded
        with hotmem.open_store(path) as fresh:
            assert after == hotmem.search_memories(fresh, "invoice", limit=100)
    assert {r.memory_id for r in after} == {r.memory_id for r in before} - {"m3"} | {"new"}


def index_of_store(store: hotmem.MemoryStore) -> SearchIndex:
    with store.reading() as connection:
        return index_of(store, connection)


def test_a_rowid_handed_out_again_is_seen_as_new(tmp_path: Path) -> None:
    """SQLite gives a new row the largest rowid plus one: once the newest memories are deleted,
    their rowids (and lower ones deleted earlier) come back for new memories."""
    path = tmp_path / "s.db"
    with hotmem.open_store(path, accelerator="off") as store:
        store.add_many(
            {"fact": f"coffee {i}", "identifier": "a", "memory_id": f"m{i}"} for i in range(4)
        )
        store.delete("m1")
        assert len(hotmem.search_memories(store, "coffee", limit=10)) == 3  # mark: rowid 4
        store.delete("m3")
        store.delete("m2")  # rowids 2 (deleted before the mark), 3 and 4 are free again
        store.add("invoice coffee", identifier="a", memory_id="new-2")
        store.add("invoice coffee", identifier="a", memory_id="new-3")
        with store.reading() as connection:
            rowids = connection.execute("SELECT rowid FROM memories ORDER BY rowid").fetchall()
        assert rowids == [(1,), (2,), (3,)]
        found = hotmem.search_memories(store, "invoice", limit=10, profile="bm25-only")
        assert sorted(r.memory_id for r in found) == ["new-2", "new-3"]
        with store.reading() as connection:
            assert view(index_of(store, connection)) == view(
                SearchIndex.load(connection, str(path))
            )
