"""Fixture ingest builds the vector spaces the profiles of a run need."""

from __future__ import annotations

from pathlib import Path

import hotmem
from hotmem_eval.fixtures import load_fixture
from hotmem_eval.ingest import open_fixture_store, spaces_needed

KGH = Path(__file__).resolve().parents[2] / "benchmarks/retrieval/external/kgh-retrieval"


def test_spaces_needed_lists_each_space_once_in_order_of_use() -> None:
    profiles = [hotmem.PROFILES[name] for name in ("bm25-only", "semantic", "default", "rrf")]
    assert spaces_needed(profiles) == ("all-minilm-l6-v2", "hotmem-hash-v1")
    assert spaces_needed([]) == ()


def test_a_fixture_store_has_the_spaces_asked_for() -> None:
    fixture = load_fixture(KGH / "corpus.jsonl", KGH / "queries.jsonl")
    with open_fixture_store(":memory:", fixture.corpus) as plain:
        assert [s.name for s in plain.spaces] == ["hotmem-hash-v1"]
    wanted = spaces_needed([hotmem.PROFILES["default"], hotmem.PROFILES["semantic"]])
    with open_fixture_store(":memory:", fixture.corpus, spaces=wanted) as store:
        assert [s.name for s in store.spaces] == ["hotmem-hash-v1", "all-minilm-l6-v2"]
        assert store.vector_counts() == {
            "hotmem-hash-v1": fixture.corpus.num_rows,
            "all-minilm-l6-v2": fixture.corpus.num_rows,
        }
        query = fixture.queries.to_pylist()[0]
        results = hotmem.search_memories(
            store, query["query"], identifier=query["identifier"], profile="semantic"
        )
        assert results
        assert results == hotmem.search_memories(
            store, query["query"], identifier=query["identifier"], profile="semantic"
        )
