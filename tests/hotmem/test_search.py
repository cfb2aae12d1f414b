"""Weighted fusion, normalisation, floor, scoping and tie-breaking, with exact numbers."""

from __future__ import annotations

import math
import random
from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st

import hotmem
from hotmem import MIN_SIMILARITY, WEIGHTS, MemoryStore, ValidationError, explain, search_memories
from hotmem.embedding.hash_v1 import bucket_and_sign, trigrams

# The worked example of docs/ranking.md.
EXAMPLE = [
    ("m-invoice", "acme", "Acme invoices above EUR 5,000 need two approvals.", 0.5),
    ("m-paid", "acme", "Supplier bills are paid on the last Friday of the month.", 0.9),
    ("m-coffee", "acme", "The office coffee machine is descaled every Monday.", 0.5),
    ("m-beta-invoice", "beta", "Beta routes invoices above EUR 10,000 to the CFO.", 0.5),
    ("m-badge", "beta", "Visitor badges expire at midnight.", 0.5),
    ("m-deploy", "beta", "Production deploys happen on Tuesdays.", 0.5),
]
QUERY = "Who approves large invoices above EUR 5,000?"


@pytest.fixture
def example_store(store: MemoryStore) -> MemoryStore:
    for memory_id, identifier, fact, importance in EXAMPLE:
        store.add(fact, identifier=identifier, importance=importance, memory_id=memory_id)
    return store


def fts5_bm25(tf: int, dl: int, avgdl: float, n: int, total: int) -> float:
    """One term's FTS5 BM25 contribution (k1 = 1.2, b = 0.75, IDF clamped to 1e-6)."""
    idf = max(math.log((total - n + 0.5) / (n + 0.5)), 1e-6)
    return idf * tf * 2.2 / (tf + 1.2 * (0.25 + 0.75 * dl / avgdl))


def count_cosine(a: str, b: str) -> float:
    """Cosine of the exact integer trigram-count vectors (no float32 rounding)."""

    def counts(text: str) -> list[int]:
        vector = [0] * 64
        for gram in trigrams(text):
            bucket, sign = bucket_and_sign(gram)
            vector[bucket] += sign
        return vector

    x, y = counts(a), counts(b)
    dot = sum(p * q for p, q in zip(x, y, strict=True))
    return dot / math.sqrt(sum(p * p for p in x) * sum(q * q for q in y))


def test_worked_example_by_hand(example_store: MemoryStore) -> None:
    # Query terms after stopwords: approves, large, invoices, eur, 5, 000, stemmed by porter to
    # approv, larg, invoic, eur, 5, 000. Token counts of the six facts are 9, 11, 8, 10, 5, 5
    # (avgdl 8). "invoic", "eur" and "000" occur in 2 of 6 facts, "5" and "approv" (of
    # "approvals") in 1; "larg" in none.
    bm25_invoice = 3 * fts5_bm25(1, 9, 8.0, 2, 6) + 2 * fts5_bm25(1, 9, 8.0, 1, 6)
    bm25_beta = 3 * fts5_bm25(1, 10, 8.0, 2, 6)
    assert bm25_invoice == pytest.approx(4.149724, abs=1e-6)
    assert bm25_beta == pytest.approx(1.599749, abs=1e-6)

    results = search_memories(example_store, QUERY, limit=6)
    assert [r.memory_id for r in results] == ["m-invoice", "m-beta-invoice"]
    first, second = results
    assert first.components.bm25_raw == pytest.approx(bm25_invoice, rel=1e-12)
    assert second.components.bm25_raw == pytest.approx(bm25_beta, rel=1e-12)
    assert first.components.bm25_normalised == 1.0
    assert second.components.bm25_normalised == pytest.approx(bm25_beta / bm25_invoice, rel=1e-12)
    facts = {memory_id: fact for memory_id, _, fact, _ in EXAMPLE}
    for result in results:
        exact = count_cosine(facts[result.memory_id], QUERY)
        assert result.components.cosine == pytest.approx(exact, abs=1e-6)
    # The numbers printed in docs/ranking.md.
    assert round(first.components.cosine, 4) == 0.7395
    assert round(second.components.cosine, 4) == 0.5874
    assert round(second.components.bm25_normalised, 4) == 0.3855
    assert round(first.score, 4) == 0.7437
    assert round(second.score, 4) == 0.5295
    # m-paid has the highest importance but no lexical match and cosine 0.1363 < floor.
    paid = explain(example_store, QUERY, "m-paid")
    assert round(paid.components.cosine, 4) == 0.1363
    assert not paid.passes_floor
    assert round(paid.score, 4) == 0.2618


def test_score_is_the_weighted_sum_of_its_components(example_store: MemoryStore) -> None:
    assert (WEIGHTS.cosine, WEIGHTS.bm25, WEIGHTS.importance) == (0.6, 0.2, 0.2)
    for query in [QUERY, "visitor badges", "coffee machine Monday", "deploys on Tuesdays"]:
        for result in search_memories(example_store, query, limit=10):
            c = result.components
            assert result.score == 0.6 * c.cosine + 0.2 * c.bm25_normalised + 0.2 * c.importance
            explained = explain(example_store, query, result.memory_id)
            assert (explained.score, explained.components) == (result.score, c)
            assert result.importance == c.importance


def test_scope_restricts_both_channels_and_renormalises(example_store: MemoryStore) -> None:
    results = search_memories(example_store, QUERY, identifier="beta")
    assert [r.memory_id for r in results] == ["m-beta-invoice"]
    only = results[0]
    assert only.components.bm25_normalised == 1.0  # the best match within the scope
    assert round(only.score, 4) == 0.6524
    assert search_memories(example_store, QUERY, identifier="nobody") == []
    assert all(
        r.identifier == "acme" for r in search_memories(example_store, QUERY, identifier="acme")
    )


def test_unrelated_question_returns_nothing(example_store: MemoryStore) -> None:
    assert search_memories(example_store, "What is the boiling point of tungsten?") == []
    assert search_memories(example_store, "") == []
    assert search_memories(example_store, "?!") == []


@pytest.mark.parametrize(
    ("facts", "query", "expected"),
    [
        # Single match: normalised 1.0.
        (["copper kettle", "silver spoon", "brass lamp"], "kettle", {"m-0": 1.0}),
        # All-equal matches: every one is the best, 1.0.
        (
            ["copper pan x", "copper pan y", "brass lamp", "iron gate"],
            "copper",
            {"m-0": 1.0, "m-1": 1.0},
        ),
    ],
)
def test_bm25_normalisation_edge_cases(
    store: MemoryStore, facts: list[str], query: str, expected: dict[str, float]
) -> None:
    store.add_many(
        [{"memory_id": f"m-{i}", "identifier": "a", "fact": f} for i, f in enumerate(facts)]
    )
    results = search_memories(store, query, limit=10)
    lexical = {
        r.memory_id: r.components.bm25_normalised for r in results if r.components.lexical_match
    }
    assert lexical == expected
    for r in results:
        if not r.components.lexical_match:
            assert (r.components.bm25_raw, r.components.bm25_normalised) == (None, 0.0)
            assert r.components.cosine >= MIN_SIMILARITY


def test_no_lexical_match_leaves_cosine_and_importance(store: MemoryStore) -> None:
    store.add("copper kettle", identifier="a", memory_id="m-1", importance=0.25)
    [result] = search_memories(store, "coppers kettles!")  # stems "copper" and "kettl" match
    assert result.components.bm25_raw is not None
    [result] = search_memories(store, "coper ketle")  # misspelt: no shared stem, close trigrams
    assert result.components.bm25_raw is None
    assert result.score == 0.6 * result.components.cosine + 0.2 * 0.0 + 0.2 * 0.25


def test_ties_break_by_memory_id_whatever_the_insertion_order() -> None:
    rows = [
        {"memory_id": memory_id, "identifier": "a", "fact": "Deploys happen on Tuesday."}
        for memory_id in ["m-c", "m-a", "m-b", "m-d"]
    ]
    rankings = set()
    for seed in range(5):
        random.Random(seed).shuffle(rows)
        with hotmem.open_store(":memory:") as store:
            store.add_many(rows)
            results = search_memories(store, "When do deploys happen?", limit=3)
            rankings.add(tuple((r.memory_id, r.score) for r in results))
    assert len(rankings) == 1
    [ranking] = rankings
    assert [memory_id for memory_id, _ in ranking] == ["m-a", "m-b", "m-c"]
    assert len({score for _, score in ranking}) == 1


@given(
    facts=st.lists(
        st.sampled_from(
            ["Deploys on Tuesday", "Invoices need approval", "Badges expire", "Backups at 02:00"]
        ),
        min_size=1,
        max_size=8,
    ),
    importances=st.lists(st.sampled_from([0.0, 0.5, 1.0]), min_size=8, max_size=8),
    seed=st.integers(0, 1000),
    query=st.sampled_from(["deploys tuesday", "invoice approval", "badges", "backups"]),
)
def test_insertion_order_never_changes_a_ranking(facts, importances, seed, query) -> None:
    rows = [
        {"memory_id": f"m-{i}", "identifier": "a", "fact": fact, "importance": importances[i]}
        for i, fact in enumerate(facts)
    ]
    shuffled = rows[:]
    random.Random(seed).shuffle(shuffled)
    outcomes = []
    for batch in (rows, shuffled):
        with hotmem.open_store(":memory:") as store:
            store.add_many(batch)
            outcomes.append(
                [
                    (r.memory_id, r.score, r.components)
                    for r in search_memories(store, query, limit=8)
                ]
            )
    assert outcomes[0] == outcomes[1]


def test_results_carry_the_memory(example_store: MemoryStore) -> None:
    example_store.add(
        "Tagged invoices fact", identifier="acme", tags=["finance"], memory_id="m-tag"
    )
    [result] = [
        r for r in search_memories(example_store, "tagged invoices") if r.memory_id == "m-tag"
    ]
    assert (result.rank, result.identifier, result.fact, result.tags) == (
        1,
        "acme",
        "Tagged invoices fact",
        ("finance",),
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"limit": 0}, r"limit must be an integer in 1..10000; found limit=0"),
        ({"limit": True}, "limit must be an integer"),
        ({"limit": 2.5}, "limit must be an integer"),
        ({"identifier": 3}, "identifier must be a string or None; found int"),
    ],
)
def test_invalid_arguments(example_store: MemoryStore, kwargs: dict, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        search_memories(example_store, QUERY, **kwargs)
    with pytest.raises(ValidationError, match="query must be a string; found NoneType"):
        search_memories(example_store, None)  # type: ignore[arg-type]


def test_explain_agrees_with_search_bit_for_bit(example_store: MemoryStore) -> None:
    for query in [QUERY, "visitor badges at midnight", "coffee"]:
        for identifier in [None, "acme", "beta"]:
            for result in search_memories(example_store, query, identifier=identifier, limit=10):
                explanation = explain(example_store, query, result.memory_id, identifier=identifier)
                assert explanation.components == result.components
                assert explanation.score == result.score
                assert explanation.passes_floor
                assert explanation.in_scope
    outside = explain(example_store, QUERY, "m-invoice", identifier="beta")
    assert not outside.in_scope
    assert not outside.passes_floor
    with pytest.raises(hotmem.MemoryNotFoundError):
        explain(example_store, QUERY, "missing")


def test_zero_vector_memories_have_zero_cosine(store: MemoryStore) -> None:
    store.add("!!! ???", identifier="a", memory_id="m-symbols")
    store.add("copper kettle", identifier="a", memory_id="m-1")
    assert explain(store, "copper", "m-symbols").components.cosine == 0.0
    assert [r.memory_id for r in search_memories(store, "copper kettle")] == ["m-1"]
    assert Counter(r.memory_id for r in search_memories(store, "!!!")) == Counter()


def test_floor_at_or_below_zero_admits_zero_cosines(store: MemoryStore) -> None:
    store.add("!!! ???", identifier="a", memory_id="m-symbols")
    store.add("copper kettle", identifier="a", memory_id="m-1")
    assert search_memories(store, "???", min_similarity=0.1) == []
    found = search_memories(store, "???", min_similarity=0.0)
    assert [(r.memory_id, r.components.cosine) for r in found] == [("m-1", 0.0), ("m-symbols", 0.0)]
    found = search_memories(store, "copper", min_similarity=-1.0, limit=2)
    assert [r.memory_id for r in found] == ["m-1", "m-symbols"]
    assert found[1].components.cosine == 0.0
