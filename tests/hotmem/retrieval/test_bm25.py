"""The BM25 HotMem computes from its postings is FTS5's ``bm25()``, bit for bit.

The definition (``docs/ranking.md``) is ``-bm25(memories_fts)`` plus ``-bm25(memories_cjk)``
over the query's phrases; both engines compute it from the search index's postings and token
counts (``hotmem/retrieval/postings.py``). This property compares every match's value with
FTS5's own on random stores and queries: inflections (the porter stemmer), accents, CJK grams,
a term in every memory (the IDF clamp), facts of more than 127 tokens (two-byte docsize), a
term FTS5 splits in two (a phrase of two tokens), and a store changed after the index was read.
"""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import hotmem
from hotmem.retrieval.query import lexical_query

WORDS = [
    "deploy",
    "deploys",
    "deployed",
    "invoice",
    "invoices",
    "café",
    "cafe",
    "naïve",
    "tungsten",
    "a\u0305b",  # U+0305 is a letter to the query's terms, a separator to FTS5: two tokens
    "東京",
    "月曜日",
    "曜日",
    "5",
]


def fts5_raw(connection: sqlite3.Connection, query: str) -> dict[str, float]:
    """memory_id -> FTS5's raw BM25 of every match: the word index's, plus the CJK index's."""
    terms = lexical_query(query)
    found: dict[str, float] = {}
    for table, expression in (
        ("memories_fts", terms.words_expression),
        ("memories_cjk", terms.grams_expression),
    ):
        if expression is None:
            continue
        rows = connection.execute(
            f"SELECT m.memory_id, -bm25({table}) FROM {table} JOIN memories AS m "
            f"ON m.rowid = {table}.rowid WHERE {table} MATCH ?",
            (expression,),
        )
        for memory_id, raw in rows:
            found[memory_id] = found[memory_id] + raw if memory_id in found else raw
    return found


def engine_raw(store: hotmem.MemoryStore, query: str) -> dict[str, float]:
    """memory_id -> the raw BM25 search reports for every match (``bm25-only`` ranks them all)."""
    results = hotmem.search_memories(store, query, profile="bm25-only", limit=hotmem.MAX_LIMIT)
    return {r.memory_id: r.components.bm25_raw for r in results}  # type: ignore[misc]


facts = st.lists(
    st.lists(st.sampled_from(WORDS), min_size=1, max_size=8).map(" ".join), max_size=25
)
queries = st.lists(st.sampled_from(WORDS), min_size=1, max_size=4).map(" ".join)


@given(facts=facts, query=queries, later=facts)
@example(facts=["deploy"] * 5, query="deploys", later=[])  # a term in every memory
@example(facts=[" ".join(["tungsten"] * 200), "tungsten deploy"], query="tungsten", later=[])
@example(facts=["a\u0305b x", "a b", "ab"], query="a\u0305b", later=["a b"])
def test_bm25_is_fts5s(facts: list[str], query: str, later: list[str]) -> None:
    engines = ["off"] + (["numpy"] if _has_numpy() else [])
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "s.db"
        with hotmem.open_store(path) as writer:
            writer.add_many(
                {"fact": f, "identifier": "a", "memory_id": f"m{i}"} for i, f in enumerate(facts)
            )
            readers = [hotmem.open_store(path, accelerator=a) for a in engines]  # type: ignore[arg-type]
            try:
                for reader in readers:
                    assert engine_raw(reader, query) == fts5_raw(writer.connection, query)
                for i, fact in enumerate(later):  # another connection writes: readers refresh
                    writer.add(fact, identifier="b", memory_id=f"n{i}")
                if facts:
                    writer.delete("m0")
                expected = fts5_raw(writer.connection, query)
                for reader in readers:
                    assert engine_raw(reader, query) == expected
            finally:
                for reader in readers:
                    reader.close()


def _has_numpy() -> bool:
    try:
        import numpy  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.parametrize("fact", ["x " * 127 + "x", "x " * 128 + "y", "y " * 20000 + "x"])
def test_token_counts_past_one_byte(tmp_path: Path, fact: str) -> None:
    path = tmp_path / "s.db"
    with hotmem.open_store(path) as store:
        store.add(fact, identifier="a", memory_id="long")
        store.add("x y", identifier="a", memory_id="short")
        assert engine_raw(store, "x") == fts5_raw(store.connection, "x")
