"""Fixture ingest builds the vector spaces the profiles of a run need."""

from __future__ import annotations

from pathlib import Path

import pytest

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


def test_ingest_with_progress_hands_the_store_its_list_checked_by_columns(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import hotmem.models

    fixture = load_fixture(KGH / "corpus.jsonl", KGH / "queries.jsonl")
    batches: list[int] = []
    by_columns = hotmem.models.memories_from_mappings

    def spied(batch: list[object], **options: object) -> object:
        batches.append(len(batch))
        return by_columns(batch, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(hotmem.models, "memories_from_mappings", spied)
    seen: list[tuple[int, int | None]] = []
    rows = fixture.corpus.num_rows
    with open_fixture_store(":memory:", fixture.corpus, progress=lambda d, t: seen.append((d, t))):
        pass
    assert sum(batches) == rows  # every record checked a batch of columns at a time
    assert (seen[0], seen[-1]) == ((0, rows), (rows, rows))
