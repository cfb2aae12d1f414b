"""FTS5's bm25() computed by HotMem for chosen memories: FTS5's bits, or no answer (issue 13)."""

from __future__ import annotations

import sqlite3
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import hotmem
from hotmem import bm25, lexical
from hotmem.share_arrays import ARRAYS, ShareArrays
from hotmem.store.fts import LexicalQuery, lexical_query

# Inflections the porter stemmer joins, accents unicode61 removes, a word in most facts, CJK.
WORDS = [
    "common",
    "deploy",
    "deploys",
    "deployed",
    "invoice",
    "invoices",
    "running",
    "runs",
    "café",
    "cafe",
    "naïve",
    "quartz",
    "東京オフィス",
    "月曜日に休み",
]

texts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=30).map(" ".join)


def _store(facts: list[str]) -> hotmem.MemoryStore:
    store = hotmem.open_store(":memory:")
    store.add_many(
        [
            {"fact": fact, "identifier": "a", "memory_id": f"m-{i:03d}"}
            for i, fact in enumerate(facts)
        ]
    )
    return store


@given(
    facts=st.lists(texts, min_size=1, max_size=30),
    query=st.lists(st.sampled_from([*WORDS, "absent"]), min_size=1, max_size=6).map(" ".join),
    chosen=st.sets(st.integers(min_value=1, max_value=40), max_size=40),
)
def test_scores_among_are_fts5_bits(facts: list[str], query: str, chosen: set[int]) -> None:
    with _store(facts) as store:
        terms = lexical_query(query)
        expected = lexical.matches_among(store.connection, terms, chosen)
        got = bm25.scores_among(store.connection, terms, chosen, lexical.Counts())
        assert got == expected
        assert got is not None
        assert [v.hex() for _, v in sorted(got.items())] == [
            v.hex() for _, v in sorted(expected.items())
        ]


@given(
    facts=st.lists(texts, min_size=1, max_size=30),
    query=st.lists(st.sampled_from([*WORDS, "absent"]), min_size=1, max_size=6).map(" ".join),
)
def test_term_shares_are_fts5_bits(facts: list[str], query: str) -> None:
    with _store(facts) as store:
        group = lexical.phrases(lexical_query(query))
        expected = lexical.phrase_scores(store.connection, group)
        got = bm25.term_shares(store.connection, group, lexical.Counts())
        assert got is not None
        assert [(r, v.hex()) for r, v in sorted(got.items())] == [
            (r, v.hex()) for r, v in sorted(expected.items())
        ]
        # numpy's form: the same keys, in the same order, with the same bits.
        arrays = bm25.term_shares(store.connection, group, lexical.Counts(), None, ARRAYS)
        assert isinstance(arrays, ShareArrays)
        assert [(r, v.hex()) for r, v in arrays.items()] == [(r, v.hex()) for r, v in got.items()]


def test_term_shares_by_other_keys() -> None:
    with _store(["common deploy", "common", "deploys deploy"]) as store:
        group = lexical.phrases(lexical_query("deploy common"))
        by_rowid = bm25.term_shares(store.connection, group, lexical.Counts())
        keys = {1: 10, 2: 20, 3: 30}
        by_key = bm25.term_shares(store.connection, group, lexical.Counts(), keys)
        assert by_rowid is not None
        assert by_key == {keys[r]: v for r, v in by_rowid.items()}
        assert sorted(by_rowid) == [1, 2, 3]


def test_term_shares_without_a_temporary_table_get_no_answer() -> None:
    # The occurrence lists are read through an fts5vocab table in the connection's temporary
    # schema; a connection that may not make one gets no answer (the caller asks FTS5).
    with _store(["common deploy", "common"]) as store:
        store.connection.execute("PRAGMA query_only = ON")
        group = lexical.phrases(lexical_query("deploy"))
        assert bm25.term_shares(store.connection, group, lexical.Counts()) is None
        assert lexical.phrase_scores(store.connection, group).keys() == {1}


def test_a_word_in_every_memory_and_its_inflections() -> None:
    # "deploys" and "deploy" are one token to the index: both phrases count every occurrence.
    facts = ["common deploy", "common deploys deployed", "common", "common invoice deploy deploy"]
    with _store(facts) as store:
        terms = LexicalQuery(("deploys", "common", "deploy"), ())
        got = bm25.scores_among(store.connection, terms, [1, 2, 3, 4], lexical.Counts())
        assert got == lexical.matches_among(store.connection, terms, [1, 2, 3, 4])
        assert got is not None
        assert sorted(got) == [1, 2, 3, 4]
        assert got[2] > got[1] > got[3]  # two occurrences beat one, one beats "common" alone


def test_a_term_of_several_tokens_gets_no_answer() -> None:
    # FTS5 matches "a.b" as a phrase of two tokens; only one-token terms are computed here.
    with _store(["a b", "b a"]) as store:
        terms = LexicalQuery(("a.b",), ())
        assert bm25.scores_among(store.connection, terms, [1, 2], lexical.Counts()) is None
        assert lexical.matches_among(store.connection, terms, [1, 2]).keys() == {1}


def test_a_text_tokenized_otherwise_than_indexed_gets_no_answer() -> None:
    # The index recorded 5 tokens for the first fact, which has 2: its text is not what was
    # indexed (a tokenizer that changed, say), so its frequencies cannot be trusted.
    with _store(["common deploy", "common"]) as store:
        store.connection.execute("UPDATE memories_fts_docsize SET sz = X'05' WHERE id = 1")
        terms = lexical_query("deploy")
        assert bm25.scores_among(store.connection, terms, [1, 2], lexical.Counts()) is None
        assert bm25.scores_among(store.connection, terms, [2], lexical.Counts()) == {}


def test_no_rowids_no_scores() -> None:
    with _store(["common"]) as store:
        assert (
            bm25.scores_among(store.connection, lexical_query("common"), [], lexical.Counts()) == {}
        )


def test_this_sqlite_is_verified() -> None:
    assert bm25.verified()


@pytest.fixture
def _unverified() -> Iterator[None]:
    bm25.verified.cache_clear()
    yield
    bm25.verified.cache_clear()


@pytest.mark.usefixtures("_unverified")
def test_the_self_check_catches_other_arithmetic() -> None:
    # A library computing another formula (here another k1) fails the check, and nothing is
    # then computed here.
    with _store(["common deploy", "common"]) as store, pytest.MonkeyPatch.context() as patch:
        patch.setattr(bm25, "_K1", 1.25)
        assert not bm25.verified()
        terms = lexical_query("deploy")
        assert bm25.scores_among(store.connection, terms, [1, 2], lexical.Counts()) is None


def test_computing_here_reads_less_than_fts5_on_a_crowded_query() -> None:
    # A question whose words are in every memory: FTS5 computes no bm25() at all for the
    # chosen memories when HotMem computes them, and the answer is FTS5's.
    facts = [f"common deploy {'invoice ' * (i % 3)}note {i}" for i in range(300)]
    with _store(facts) as store:
        terms = lexical_query("common deploy invoice")
        calls: list[str] = []
        store.connection.set_trace_callback(calls.append)
        got = bm25.scores_among(store.connection, terms, [5, 6, 7], lexical.Counts())
        store.connection.set_trace_callback(None)
        assert got == lexical.matches_among(store.connection, terms, [5, 6, 7])
        assert not [sql for sql in calls if "bm25(" in sql]


def test_threads_tokenize_apart() -> None:
    # sqlite3 connections stay in their thread: each thread has its own tokenizing table.
    results: list[dict[int, float] | None] = []
    path_facts = ["common deploy", "common deploys invoice"]

    def search(path: str) -> None:
        connection = sqlite3.connect(path)
        results.append(
            bm25.scores_among(connection, lexical_query("deploy"), [1, 2], lexical.Counts())
        )
        connection.close()

    with tempfile.TemporaryDirectory() as tmp:
        path = str(Path(tmp) / "s.db")
        with hotmem.open_store(path) as store:
            store.add_many(
                [
                    {"fact": f, "identifier": "a", "memory_id": f"m-{i}"}
                    for i, f in enumerate(path_facts)
                ]
            )
            expected = lexical.matches_among(store.connection, lexical_query("deploy"), [1, 2])
        threads = [threading.Thread(target=search, args=(path,)) for _ in range(3)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    assert results == [expected] * 3


def _lexical_tables() -> sqlite3.Connection:
    """The store's two lexical indexes over a content table of facts only."""
    connection = sqlite3.connect(":memory:")
    for statement in bm25._CHECK_SCHEMA:
        connection.execute(statement)
    return connection


def test_token_counts_by_rowid_dense_and_sparse() -> None:
    # An array of 4 bytes a rowid while rowids are dense; a dict once they are sparse (more
    # than twice as many rowids as rows, past 65,536), so a store of few memories with a large
    # rowid does not cost an array up to it.
    connection = _lexical_tables()
    for rowid, fact in ((1, "one two three"), (3, "one")):
        connection.execute("INSERT INTO memories (rowid, fact) VALUES (?, ?)", (rowid, fact))
        connection.execute("INSERT INTO memories_fts (rowid, fact) VALUES (?, ?)", (rowid, fact))
    dense = lexical.token_counts(connection, "memories_fts")
    assert list(dense) == [0, 3, 0, 1]
    connection.execute("INSERT INTO memories (rowid, fact) VALUES (200000, 'far away words')")
    connection.execute("INSERT INTO memories_fts (rowid, fact) VALUES (200000, 'far away words')")
    assert lexical.token_counts(connection, "memories_fts") == {1: 3, 3: 1, 200000: 3}
    assert lexical.token_counts(connection, "memories_cjk") == {}


def test_a_fact_of_more_than_127_tokens() -> None:
    # Its token count takes two bytes in the docsize table (a varint).
    facts = ["common " + "deploy invoice " * 150, "common deploy"]
    with _store(facts) as store:
        assert lexical.token_counts(store.connection, "memories_fts")[1] == 301
        terms = lexical_query("deploy invoice")
        group = lexical.phrases(terms)
        assert bm25.term_shares(store.connection, group, lexical.Counts()) == (
            lexical.phrase_scores(store.connection, group)
        )
        assert bm25.scores_among(store.connection, terms, [1, 2], lexical.Counts()) == (
            lexical.matches_among(store.connection, terms, [1, 2])
        )
