"""search_memories against a naive reference ranking, and the fusion functions by hand.

The reference scores every memory in scope by the documented formula (docs/ranking.md), one
at a time, with no vector index, no scan, no pre-filter and no cut-off: cosine of the two
hash vectors, BM25 from one FTS5 query over the whole index, importance; candidates are the
lexical matches and the memories at or above the floor; sort by (-score, memory_id); cut.
"""

from __future__ import annotations

import math

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import hotmem
from hotmem import Weights
from hotmem.retrieval.fusion import Rule, normalise_bm25, rrf, top, weighted
from hotmem.retrieval.query import match_expression, query_terms

WORDS = ["invoice", "invoices", "deploy", "tuesday", "badge", "coffee", "approve", "eur", "5"]
IDENTIFIERS = ["acme", "beta", "gamma"]


def reference_ranking(
    store: hotmem.MemoryStore,
    query: str,
    *,
    identifier: str | None,
    limit: int,
    floor: float,
    weights: Weights,
) -> list[tuple[str, float]]:
    """(memory_id, score) of the top ``limit``, by the formula, scoring every memory."""
    memories = [m for m in store if identifier is None or m.identifier == identifier]
    expression = match_expression(query_terms(query))
    raw: dict[str, float] = {}
    if expression is not None:
        rows = store.connection.execute(
            "SELECT m.memory_id, -bm25(memories_fts) FROM memories_fts "
            "JOIN memories AS m ON m.rowid = memories_fts.rowid WHERE memories_fts MATCH ?",
            (expression,),
        )
        ids_in_scope = {m.memory_id for m in memories}
        raw = {memory_id: value for memory_id, value in rows if memory_id in ids_in_scope}
    best = max(raw.values(), default=0.0)
    q = hotmem.embed(query)
    zero = (0.0,) * hotmem.DIMENSION
    scored = []
    for memory in memories:
        v = hotmem.embed(memory.fact)
        cosine = 0.0 if zero in (q, v) else 1.0 - math.dist(q, v) ** 2 / 2.0
        lexical = raw.get(memory.memory_id)
        if lexical is None and cosine < floor:
            continue
        bm25 = 0.0 if lexical is None else lexical / best
        score = (
            weights.cosine * cosine + weights.bm25 * bm25 + weights.importance * memory.importance
        )
        scored.append((-score, memory.memory_id))
    scored.sort()
    return [(memory_id, -negated) for negated, memory_id in scored[:limit]]


memory_rows = st.lists(
    st.tuples(
        st.lists(st.sampled_from(WORDS), min_size=0, max_size=6).map(" ".join),
        st.sampled_from(IDENTIFIERS),
        st.sampled_from([0.0, 0.25, 0.5, 0.5, 1.0]),
    ),
    min_size=0,
    max_size=25,
)
queries = st.lists(st.sampled_from([*WORDS, "the", "what", "zzz"]), max_size=4).map(" ".join)


@given(
    rows=memory_rows,
    query=queries,
    identifier=st.sampled_from([None, *IDENTIFIERS]),
    limit=st.integers(1, 30),
    floor=st.sampled_from([-1.0, 0.0, 0.2, 0.4, 0.9]),
    weights=st.sampled_from([Weights(), Weights(1.0, 0.0, 0.0), Weights(0.3, 0.5, 0.2)]),
)
@example(rows=[], query="invoice", identifier=None, limit=5, floor=0.4, weights=Weights())
@example(  # all-equal scores: the order is memory_id's alone
    rows=[("invoice", "acme", 0.5)] * 6,
    query="invoice",
    identifier="acme",
    limit=4,
    floor=0.4,
    weights=Weights(),
)
@example(
    rows=[("", "acme", 0.5), ("5", "acme", 1.0)],
    query="",
    identifier=None,
    limit=3,
    floor=-1.0,
    weights=Weights(),
)
def test_search_equals_the_naive_reference_ranking(
    rows: list[tuple[str, str, float]],
    query: str,
    identifier: str | None,
    limit: int,
    floor: float,
    weights: Weights,
) -> None:
    with hotmem.open_store(":memory:", clock=hotmem.fixed_clock("2026-01-01T00:00:00Z")) as store:
        for number, (fact, scope, importance) in enumerate(rows):
            store.add(
                fact or "-",  # "-" has no letter: a zero vector and no lexical term
                identifier=scope,
                importance=importance,
                memory_id=f"m-{(number * 7) % 100:02d}-{number}",
            )
        found = hotmem.search_memories(
            store, query, identifier=identifier, limit=limit, min_similarity=floor, weights=weights
        )
        expected = reference_ranking(
            store, query, identifier=identifier, limit=limit, floor=floor, weights=weights
        )
        assert [(r.memory_id, r.score) for r in found] == expected
        assert [r.rank for r in found] == list(range(1, len(found) + 1))
        for result in found:
            explained = hotmem.explain(
                store, query, result.memory_id, identifier=identifier, weights=weights
            )
            assert (explained.score, explained.components) == (result.score, result.components)


def test_weighted_by_hand() -> None:
    assert weighted(Weights(), 0.5, 0.5, 0.5) == 0.6 * 0.5 + 0.2 * 0.5 + 0.2 * 0.5
    assert weighted(Weights(), 0.25, 1.0, 1.0) == 0.6 * 0.25 + 0.2 * 1.0 + 0.2 * 1.0
    assert weighted(Weights(1.0, 0.0, 0.0), -0.5, 1.0, 1.0) == -0.5


def test_weighted_on_arrays_gives_the_bits_of_floats() -> None:
    np = pytest.importorskip("numpy")
    cosines, bm25, importances = [0.1, -0.3, 0.7], [0.0, 1.0, 1 / 3], [0.5, 0.9, 0.123]
    w = Weights(0.3, 0.5, 0.2)
    arrays = weighted(w, np.array(cosines), np.array(bm25), np.array(importances)).tolist()
    assert arrays == [
        weighted(w, *values) for values in zip(cosines, bm25, importances, strict=True)
    ]


def test_rrf_by_hand() -> None:
    assert rrf((1.0, 1.0), 60, (1, 3)) == 1.0 / 61 + 1.0 / 63
    assert rrf((0.5, 2.0), 10, (None, 2)) == 2.0 / 12
    assert rrf((1.0, 1.0), 60, (None, None)) == 0.0


@pytest.mark.parametrize(
    ("raw", "best", "expected"),
    [(None, 0.0, 0.0), (None, 3.0, 0.0), (3.0, 3.0, 1.0), (1.5, 3.0, 0.5)],
)
def test_normalise_bm25(raw: float | None, best: float, expected: float) -> None:
    assert normalise_bm25(raw, best) == expected


@pytest.mark.parametrize(
    ("cosine", "matched", "rule", "expected"),
    [
        (0.39, False, Rule(Weights(), 0.4), False),
        (0.4, False, Rule(Weights(), 0.4), True),
        (-1.0, True, Rule(Weights(), 0.4), True),
        (0.0, False, Rule(Weights(), 0.0), True),
        (0.9, False, Rule(Weights(), None), False),  # no vector channel: matches only
        (0.2, True, Rule(Weights(), 0.4, gate=0.25), False),  # a match below the gate
        (0.25, True, Rule(Weights(), 0.4, gate=0.25), True),
    ],
)
def test_admits(cosine: float, matched: bool, rule: Rule, expected: bool) -> None:
    assert rule.admits(cosine, matched) is expected


def test_top_orders_by_score_then_memory_id() -> None:
    ids = {0: "m-c", 1: "m-a", 2: "m-b", 3: "m-d"}
    asked: list[list[int]] = []

    def names(positions: object) -> dict[int, str]:
        asked.append(sorted(positions))  # type: ignore[call-overload]
        return {p: ids[p] for p in positions}  # type: ignore[attr-defined]

    scored = [(0.5, 0), (0.5, 1), (0.9, 2), (0.1, 3)]
    assert top(scored, 3, names) == [(0.9, 2), (0.5, 1), (0.5, 0)]
    assert top(scored, 2, names) == [(0.9, 2), (0.5, 1)]
    assert top(scored, 10, names) == [(0.9, 2), (0.5, 1), (0.5, 0), (0.1, 3)]
    assert top(scored, 1, names) == [(0.9, 2)]
    assert top([], 3, names) == []
    # only the memories that can be in the answer and share their score with another are named
    assert asked == [[0, 1], [0, 1], [0, 1]]
    assert top([(0.3, 5), (0.7, 6), (0.5, 7)], 3, names) == [(0.7, 6), (0.5, 7), (0.3, 5)]
    assert len(asked) == 3  # distinct scores: no memory_id is read
    many = [(0.5, 0), (0.9, 2), (0.5, 1), (0.1, 3), (0.9, 4)]
    ids[4] = "m-0"
    assert top(many, 3, names) == [(0.9, 4), (0.9, 2), (0.5, 1)]
    assert asked[-1] == [0, 1, 2, 4]
