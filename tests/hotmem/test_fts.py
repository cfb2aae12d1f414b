"""User text never reaches FTS5 MATCH as syntax, and questions still match."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import hotmem
from hotmem.retrieval.query import MAX_QUERY_TERMS, match_expression, query_terms

ESCAPING = [
    # (query, terms, MATCH expression)
    ("invoice approval", ["invoice", "approval"], '"invoice" OR "approval"'),
    ("What is the boiling point of tungsten?", ["boiling", "point", "tungsten"], None),
    ('say "hello', ["say", "hello"], None),
    ("(invoice OR approval) AND NOT x", ["invoice", "approval", "x"], None),
    ("NEAR(a b, 2)", ["near", "b", "2"], '"near" OR "b" OR "2"'),
    ("invoice*", ["invoice"], '"invoice"'),
    ("^start -minus +plus", ["start", "minus", "plus"], None),
    ("fact:invoice", ["fact", "invoice"], '"fact" OR "invoice"'),
    ("col:value {a b}", ["col", "value", "b"], None),
    ("EUR 5,000", ["eur", "5", "000"], '"eur" OR "5" OR "000"'),
    ("Straße café", ["strasse", "café"], '"strasse" OR "café"'),
    ("東京タワー 😀", ["東京タワー"], '"東京タワー"'),
    ("😀🎉", [], None),
    ("", [], None),
    ("   \t\n ", [], None),
    ("the and or not", [], None),
    ("Invoice invoice INVOICE", ["invoice"], '"invoice"'),
    ("snake_case", ["snake", "case"], None),
    ("Northwind's terms? Don't!", ["northwind", "terms"], '"northwind" OR "terms"'),
]


@pytest.mark.parametrize(("query", "terms", "expression"), ESCAPING)
def test_query_terms_and_expression(query: str, terms: list[str], expression: str | None) -> None:
    assert query_terms(query) == terms
    built = match_expression(terms)
    if expression is not None or not terms:
        assert built == expression
    else:
        assert built == " OR ".join(f'"{t}"' for t in terms)


def test_embedded_quotes_are_doubled() -> None:
    assert match_expression(['a"b']) == '"a""b"'


def test_long_queries_keep_the_first_terms_only() -> None:
    query = " ".join(f"word{i}" for i in range(5000))
    assert len(query) > 10_000
    assert query_terms(query) == [f"word{i}" for i in range(MAX_QUERY_TERMS)]


@pytest.fixture(scope="module")
def small_store():
    with hotmem.open_store(":memory:") as store:
        store.add_many(
            [
                {"memory_id": "m-1", "identifier": "a", "fact": "Invoices need approval."},
                {"memory_id": "m-2", "identifier": "a", "fact": "Deploys happen on Tuesday."},
                {"memory_id": "m-3", "identifier": "b", "fact": "東京タワー is in Minato 😀."},
                {"memory_id": "m-4", "identifier": "b", "fact": 'A "quoted" (fact) with * and ^'},
            ]
        )
        yield store


@pytest.mark.parametrize(("query", "_terms", "_expression"), ESCAPING)
def test_search_never_raises_on_syntax(small_store, query: str, _terms, _expression) -> None:
    results = hotmem.search_memories(small_store, query)
    assert all(isinstance(r, hotmem.SearchResult) for r in results)


def test_questions_match_on_shared_words(small_store) -> None:
    results = hotmem.search_memories(small_store, "Which invoices need a second approval?")
    assert [r.memory_id for r in results][:1] == ["m-1"]
    assert results[0].components.lexical_match


def test_cjk_token_matches(small_store) -> None:
    results = hotmem.search_memories(small_store, "東京タワー")
    assert [r.memory_id for r in results] == ["m-3"]


@given(st.text(max_size=300))
@example("a" * 10_000)
@example('"' * 50)
@example("NEAR/3 AND OR NOT ( ) * ^ - : { }")
@example("\x00\x01\ud7ff")
def test_arbitrary_text_never_raises(small_store, text: str) -> None:
    results = hotmem.search_memories(small_store, text)
    assert len(results) <= 5
