"""The bounded top k equals exhaustive scoring: ids, order and score bits (issue 13)."""

from __future__ import annotations

import importlib.util
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import hotmem
from hotmem import bm25, lexical, topk, vectors
from hotmem.embedding.hash_v1 import embed
from hotmem.fusion import Weights
from hotmem.packed_scan import PackedScan
from hotmem.store.fts import lexical_query
from hotmem.topk import Ranked, Rule, Search, exhaustive_top_k, top_k
from hotmem.vectors import CosineScan, VectorIndex

NUMPY = importlib.util.find_spec("numpy") is not None
#: The vector scans a search may take: measuring every distance, the packed pre-filter of the
#: standard library (``packed_scan.py``) and numpy's (``accelerator.py``).
SCANS = ["distances", "packed", *(["numpy"] if NUMPY else [])]


@pytest.fixture(autouse=True, scope="module")
def _accelerate_small_scopes() -> Iterator[None]:
    """Scan with numpy whatever the scope's size: these stores are small."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(vectors, "_ACCELERATE_FROM", 0)
        yield


# A small vocabulary, so that terms collide; "common" is in most facts (its IDF is clamped).
WORDS = [
    "common",
    "invoice",
    "deploy",
    "tuesday",
    "badge",
    "kettle",
    "copper",
    "atlas",
    "雪",
    "東京",
]


def _search(
    store: hotmem.MemoryStore,
    query: str,
    identifier: str | None,
    rule: Rule,
    limit: int,
    *,
    scan_with: str = "distances",
) -> tuple[Ranked, Ranked]:
    index = store.vector_index()
    scope = index.scope(identifier)
    scan = None
    if rule.floor is not None:
        with pytest.MonkeyPatch.context() as patch:
            if scan_with == "packed":  # packed at once, whatever the scope's size
                patch.setattr(vectors, "_PACK_FROM", 0)
                patch.setattr(vectors, "_PACK_AFTER", 0)
                patch.setattr(vectors, "_PACK_SHARE", 10**9)
            vector = embed(query)
            scan = index.scan(vector, scope, accelerated=scan_with == "numpy")
        if scan_with == "packed" and any(vector) and scope:  # a zero vector: every cosine 0
            assert isinstance(scan, PackedScan)
    return both_rankings(store.connection, index, scan, scope, query, rule, limit)


def both_rankings(
    connection: sqlite3.Connection,
    index: VectorIndex,
    scan: CosineScan | None,
    scope: range,
    query: str,
    rule: Rule,
    limit: int,
) -> tuple[Ranked, Ranked]:
    """The bounded and the exhaustive top ``limit`` of ``query`` over ``scan`` in ``scope``."""
    search = Search(
        scan,
        scope,
        index.position,
        index.rowids,
        index.importances,
        index.memory_ids,
        rule,
        limit,
        index.top_importance(scope),
        by_rowid=index.positions_by_rowid(),
    )
    lexical = lexical_query(query)
    return top_k(connection, lexical, search), exhaustive_top_k(connection, lexical, search)


def _same(bounded: Ranked, exhaustive: Ranked) -> None:
    assert bounded.top == exhaustive.top  # positions, order and score bits
    assert bounded.best == exhaustive.best
    for _, p in bounded.top:
        assert bounded.cosines[p] == exhaustive.cosines[p]
        assert bounded.raws.get(p) == exhaustive.raws.get(p)


facts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join)
memories = st.lists(
    st.tuples(facts, st.sampled_from(["a", "b", "c"]), st.sampled_from([0.0, 0.25, 0.5, 1.0])),
    min_size=1,
    max_size=40,
)
rules = st.builds(
    Rule,
    weights=st.builds(
        Weights,
        cosine=st.sampled_from([0.0, 0.3, 0.6, 1.0]),
        bm25=st.sampled_from([0.0, 0.2, 0.5, 1.0]),
        importance=st.sampled_from([0.0, 0.2]),
    ),
    floor=st.sampled_from([None, -1.0, 0.0, 0.2, 0.4, 0.9]),
    gate=st.sampled_from([None, 0.1, 0.25]),
)


#: The arguments of the exactness properties.
SEARCHES = {
    "memories": memories,
    "query": st.lists(st.sampled_from([*WORDS, "zzz", "the"]), min_size=1, max_size=4).map(
        " ".join
    ),
    "identifier": st.sampled_from([None, "a"]),
    "rule": rules,
    "limit": st.sampled_from([1, 2, 5, 50]),
    "scan_with": st.sampled_from(SCANS),
}


@given(**SEARCHES)
@example(
    memories=[("common", "a", 0.5)],
    query="common",
    identifier=None,
    rule=Rule(Weights(), 0.4),
    limit=5,
    scan_with=SCANS[-1],
)
@example(
    memories=[("invoice", "a", 0.5)] * 3,
    query="invoice",
    identifier=None,
    rule=Rule(Weights(), 0.4),
    limit=1,
    scan_with="distances",
)
def test_bounded_top_k_is_exhaustive_scoring(
    memories: list[tuple[str, str, float]],
    query: str,
    identifier: str | None,
    rule: Rule,
    limit: int,
    scan_with: str,
) -> None:
    _check(memories, query, identifier, rule, limit, scan_with)


def _check(
    memories: list[tuple[str, str, float]],
    query: str,
    identifier: str | None,
    rule: Rule,
    limit: int,
    scan_with: str,
) -> None:
    with hotmem.open_store(":memory:") as store:
        store.add_many(
            [
                {
                    "fact": fact,
                    "identifier": ident,
                    "importance": importance,
                    "memory_id": f"m-{i:03d}",
                }
                for i, (fact, ident, importance) in enumerate(memories)
            ]
        )
        _same(*_search(store, query, identifier, rule, limit, scan_with=scan_with))


@contextmanager
def _small_thresholds() -> Iterator[None]:
    """The bounded path's thresholds shrunk, so that stores of 40 memories take the paths that
    stores of 100,000 take: no term read at once unless it is the rarest, the members of a
    deferred term read (crowded), finalists scored in many batches."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(topk, "_CHEAP_ROWS", 0)
        patch.setattr(topk, "_CHEAP_SHARE", 10**9)
        patch.setattr(topk, "_CROWD", 1)
        patch.setattr(topk, "_FIRST_BATCH", 1)
        yield


@given(**SEARCHES)
@example(  # a memory matching a deferred term whose members are known holds the answer
    memories=[("common", "a", 0.0)] * 4
    + [("invoice", "a", 0.0)] * 2
    + [
        ("common common common deploy", "a", 0.0),
        ("common common common invoice deploy", "a", 0.0),
        ("invoice", "a", 0.0),
    ],
    query="invoice deploy",
    identifier=None,
    rule=Rule(Weights(cosine=0.0, bm25=0.2, importance=0.0), None),
    limit=1,
    scan_with="distances",
)
@example(  # the answer matches the known deferred term only
    memories=[("common", "a", 0.0)] * 3
    + [("invoice", "a", 0.0)] * 2
    + [("common common common deploy", "a", 0.0), ("invoice", "a", 0.0)],
    query="invoice deploy",
    identifier=None,
    rule=Rule(Weights(cosine=0.3, bm25=0.2, importance=0.0), -1.0),
    limit=1,
    scan_with="distances",
)
@example(  # best is held by a contender whose bound is not the highest
    memories=[("common", "a", 0.0)] * 4
    + [("tuesday", "a", 0.0)] * 2
    + [("deploy tuesday", "a", 0.0), ("common invoice deploy", "a", 0.0)],
    query="invoice deploy tuesday",
    identifier=None,
    rule=Rule(Weights(cosine=0.3, bm25=0.0, importance=0.0), -1.0),
    limit=1,
    scan_with="distances",
)
def test_bounded_top_k_is_exhaustive_scoring_on_every_path(
    memories: list[tuple[str, str, float]],
    query: str,
    identifier: str | None,
    rule: Rule,
    limit: int,
    scan_with: str,
) -> None:
    with _small_thresholds():
        _check(memories, query, identifier, rule, limit, scan_with)


@contextmanager
def _bm25_computed_here() -> Iterator[None]:
    """Every restricted query's BM25 computed by ``bm25.py``, however few entries FTS5 would
    walk (the small stores here would otherwise always take FTS5's)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bm25, "WALK_PER_TEXT", 0)
        yield


@given(**SEARCHES)
def test_bounded_top_k_computing_bm25_itself_is_exhaustive_scoring(
    memories: list[tuple[str, str, float]],
    query: str,
    identifier: str | None,
    rule: Rule,
    limit: int,
    scan_with: str,
) -> None:
    with _small_thresholds(), _bm25_computed_here():
        _check(memories, query, identifier, rule, limit, scan_with)


@given(
    memories=memories,
    small=st.lists(st.tuples(facts, st.just("d"), st.sampled_from([0.0, 0.5])), max_size=4),
    query=SEARCHES["query"],
    rule=rules,
    limit=SEARCHES["limit"],
    whole=st.booleans(),
    here=st.booleans(),
)
def test_a_small_scope_is_exhaustive_scoring_either_way(
    memories: list[tuple[str, str, float]],
    small: list[tuple[str, str, float]],
    query: str,
    rule: Rule,
    limit: int,
    whole: bool,
    here: bool,
) -> None:
    # A scope of at most an eighth of the store reads its own matches whole or takes the
    # bounds, by cost (topk._scope_budget): both ways give exhaustive scoring's answer, with
    # its BM25 from FTS5 or computed by bm25.py.
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(topk, "_scope_budget", lambda *_: 0.0 if whole else None)
        patch.setattr(bm25, "WALK_PER_TEXT", 0 if here else 10**9)
        _check([*memories * 8, *small], query, "d", rule, limit, False)


def test_the_cost_decides_how_a_small_scope_is_read() -> None:
    # A scope of 4 of 64 memories: with a term in every memory (read whole store-wide first),
    # its own matches cost less and are read whole; with a rare term, the bounds cost less.
    rows = [
        {
            "fact": "common" + " invoice" * (i % 16 == 0),
            "identifier": "a" if i < 60 else "b",
            "memory_id": f"m-{i:03d}",
        }
        for i in range(64)
    ]
    whole: list[str] = []
    scope_top_k = topk._scope_top_k

    def recorded(connection: sqlite3.Connection, query: Any, search: Search) -> Ranked:
        whole.append(" ".join(query.words))
        return scope_top_k(connection, query, search)

    with hotmem.open_store(":memory:") as store, pytest.MonkeyPatch.context() as patch:
        store.add_many(rows)
        patch.setattr(topk, "_scope_top_k", recorded)
        patch.setattr(topk, "_CHEAP_ROWS", 0)
        patch.setattr(topk, "_CHEAP_SHARE", 10**9)
        for query in ("common", "invoice"):  # a store this small: the bounds' own cost decides
            _same(*_search(store, query, "b", Rule(Weights(), 0.4), 5))
        assert whole == ["common", "invoice"]
        patch.setattr(bm25, "BOUNDED_ENTRIES", 0)  # as if the store were large: the reads decide
        for query in ("common", "invoice"):
            _same(*_search(store, query, "b", Rule(Weights(), 0.4), 5))
    assert whole == ["common", "invoice", "common"]


def test_bm25_computed_here_answers_the_restricted_queries() -> None:
    # What the property above relies on: the BM25 of the finalists, and of a small scope's
    # matches, is computed by bm25.py, not by an FTS5 query.
    answered: list[bool] = []
    scores_among = bm25.scores_among

    def counted(*args: Any) -> dict[int, float] | None:
        found = scores_among(*args)
        answered.append(found is not None)
        return found

    rows = [
        {
            "fact": " ".join(["common"] + ["invoice"] * (i % 4 == 0) + ["deploy"] * (i % 3 == 0)),
            "identifier": "a" if i < 60 else "b",
            "importance": (i % 5) / 5,
            "memory_id": f"m-{i:03d}",
        }
        for i in range(64)
    ]
    with hotmem.open_store(":memory:") as store, _small_thresholds(), _bm25_computed_here():
        store.add_many(rows)
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(bm25, "scores_among", counted)
            for identifier in (None, "b"):  # "b" is a scope of 4 of 64: its own matches only
                _same(*_search(store, "invoice deploy", identifier, Rule(Weights(), 0.4), 5))
    assert len(answered) >= 2
    assert all(answered)


@pytest.mark.parametrize("scan_with", SCANS)
def test_small_thresholds_take_the_crowded_and_batched_paths(scan_with: str) -> None:
    # What the property above relies on: with the thresholds shrunk, a small store does read
    # the members of a deferred term and does score its finalists in more than one batch.
    calls = {"members": 0, "among": 0}
    rows = [
        {
            "fact": " ".join(
                ["common"]
                + ["invoice"] * (i % 8 == 0)
                + ["deploy"] * (i % 3 == 0)
                + ["tuesday"] * (i % 5 == 0)
            ),
            "identifier": "a",
            "importance": (i % 5) / 5,
            "memory_id": f"m-{i:03d}",
        }
        for i in range(64)
    ]
    with hotmem.open_store(":memory:") as store, _small_thresholds():
        store.add_many(rows)
        members, among = lexical.phrase_members, lexical.matches_among

        def counted_members(*args: Any) -> list[int]:
            calls["members"] += 1
            return members(*args)

        def counted_among(*args: Any) -> dict[int, float]:
            calls["among"] += 1
            return among(*args)

        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(lexical, "phrase_members", counted_members)
            patch.setattr(lexical, "matches_among", counted_among)
            for query in ("invoice deploy", "invoice deploy tuesday common"):
                _same(*_search(store, query, None, Rule(Weights(), 0.4), 5, scan_with=scan_with))
    assert calls["members"] >= 1
    assert calls["among"] >= 3


def test_a_word_in_every_memory_is_not_scored_everywhere() -> None:
    # 2,000 memories all holding "common"; 20 also hold "invoice". The query matches every
    # memory lexically, but only a few memories need their exact BM25.
    rows = [
        {
            "fact": f"common note {i} "
            + ("invoice approval" if i % 100 == 0 else f"topic{i % 37}"),
            "identifier": f"org-{i % 3}",
            "importance": (i % 10) / 10,
            "memory_id": f"m-{i:05d}",
        }
        for i in range(2_000)
    ]
    with hotmem.open_store(":memory:") as store:
        store.add_many(rows)
        for identifier in (None, "org-0"):
            for limit in (1, 5, 10):
                bounded, exhaustive = _search(
                    store, "common invoice", identifier, Rule(Weights(), 0.4), limit
                )
                _same(bounded, exhaustive)
                assert exhaustive.bm25_rows == 2_000
                assert bounded.bm25_rows < 100
        assert [store.get(store.vector_index().memory_ids[p]).memory_id for _, p in bounded.top]


@pytest.mark.parametrize("limit", [1, 5])
def test_a_query_of_common_words_only_falls_back_exactly(limit: int) -> None:
    with hotmem.open_store(":memory:") as store:
        store.add_many(
            [
                {"fact": f"common word {i % 7}", "identifier": "a", "memory_id": f"m-{i}"}
                for i in range(300)
            ]
        )
        bounded, exhaustive = _search(store, "common word", None, Rule(Weights(), 0.4), limit)
        _same(bounded, exhaustive)


@pytest.mark.parametrize("query", ["common invoice", "deploy tuesday 東京", "copper kettle", "zzz"])
def test_a_small_scope_reads_only_its_own_matches_exactly(query: str) -> None:
    # 20 identifiers: a scope is 1/20 of the store, read by one restricted query.
    rows = [
        {
            "fact": " ".join(WORDS[j] for j in range(len(WORDS)) if (i >> j) % 2) or "common",
            "identifier": f"org-{i % 20:02d}",
            "importance": (i % 7) / 7,
            "memory_id": f"m-{i:04d}",
        }
        for i in range(400)
    ]
    with hotmem.open_store(":memory:") as store:
        store.add_many(rows)
        for limit in (1, 5, 30):
            bounded, exhaustive = _search(store, query, "org-03", Rule(Weights(), 0.4), limit)
            _same(bounded, exhaustive)
            if query != "zzz":
                assert bounded.bm25_rows < exhaustive.bm25_rows


def test_term_counts_are_kept_for_one_state_of_the_store(tmp_path: Path) -> None:
    # The counts behind the bounds are read once per state: a write by this store or by
    # another process starts them again, so a search never bounds with a stale count.
    path = tmp_path / "counts.db"
    rows = [
        {
            "fact": f"common note {i} " + ("invoice" if i % 100 == 0 else f"topic{i % 37}"),
            "identifier": "org",
            "memory_id": f"m-{i:05d}",
        }
        for i in range(2_000)
    ]
    common, invoice = lexical.phrases(lexical_query("common invoice"))
    with hotmem.open_store(path) as store, hotmem.open_store(path) as other:
        store.add_many(rows)
        hotmem.search_memories(store, "common invoice")
        counts = store.vector_index().lexical_counts
        assert counts.phrases == {common: 2_000, invoice: 20}
        assert counts.rows == {"memories_fts": 2_000}
        hotmem.search_memories(store, "invoice common")
        assert store.vector_index().lexical_counts is counts  # nothing counted again

        other.add_many(
            [
                {"fact": "invoice approval", "identifier": "org", "memory_id": f"o-{i}"}
                for i in range(30)
            ]
        )
        hotmem.search_memories(store, "common invoice")
        assert store.vector_index().lexical_counts.phrases == {common: 2_000, invoice: 50}
        _same(*_search(store, "common invoice", None, Rule(Weights(), 0.4), 5))

        store.add("invoice due", identifier="org", memory_id="s-1")
        hotmem.search_memories(store, "common invoice")
        assert store.vector_index().lexical_counts.phrases == {common: 2_000, invoice: 51}
        assert store.vector_index().lexical_counts.rows == {"memories_fts": 2_031}


def test_term_counts_start_again_past_their_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    with hotmem.open_store(":memory:") as store:
        store.add_many(
            [
                {"fact": f"alpha beta gamma {i}", "identifier": "a", "memory_id": f"m-{i}"}
                for i in range(3)
            ]
        )
        counts = lexical.Counts()
        monkeypatch.setattr(lexical.Counts, "LIMIT", 2)
        alpha, beta, gamma = lexical.phrases(lexical_query("alpha beta gamma"))
        assert counts.phrase_counts(store.connection, [alpha, beta]) == [3, 3]
        assert counts.phrase_counts(store.connection, [gamma, gamma]) == [3, 3]
        assert counts.phrases == {gamma: 3}
