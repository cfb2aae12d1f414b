"""The runner embeds a batch of queries before searching them (``hotmem.prepare_queries``):
the same results as each search embedding its own query, no query embedded during the
searches, and the batch's time a stage of its own."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import hotmem
from hotmem_eval import runner
from hotmem_eval.evaluate import evaluate_profiles
from hotmem_eval.fixtures import Fixture, load_fixture
from hotmem_eval.ingest import open_fixture_store

pytest.importorskip("onnxruntime")

from hotmem.embedding.semantic.onnx_embedder import OnnxEmbedder
from hotmem.retrieval import prepared

ROOT = Path(__file__).resolve().parents[2]
SEMANTIC = hotmem.PROFILES["semantic"]


@pytest.fixture(scope="module")
def fixture() -> Fixture:
    folder = ROOT / "benchmarks" / "retrieval"
    return load_fixture(folder / "corpus.jsonl", folder / "queries.jsonl")


@pytest.fixture(scope="module")
def store(fixture: Fixture) -> Any:
    with open_fixture_store(":memory:", fixture.corpus, spaces=[hotmem.SEMANTIC_MODEL]) as opened:
        yield opened


@pytest.fixture
def embedded(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Each ``embed_many`` call of the semantic embedder (its texts), from a fresh start: no
    query vector kept."""
    monkeypatch.setattr(prepared, "_QUERY_VECTORS", type(prepared._QUERY_VECTORS)())
    calls: list[list[str]] = []
    original = OnnxEmbedder.embed_many

    def recorded(self: OnnxEmbedder, texts: list[str], **options: Any) -> list[bytes]:
        calls.append(list(texts))
        return original(self, texts, **options)

    monkeypatch.setattr(OnnxEmbedder, "embed_many", recorded)
    return calls


def test_each_batch_is_embedded_before_its_searches(
    store: hotmem.MemoryStore,
    fixture: Fixture,
    embedded: list[list[str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    events: list[tuple[str, int]] = []
    prepare, search = hotmem.prepare_queries, hotmem.search_memories

    def preparing(store: hotmem.MemoryStore, queries: list[str], **options: Any) -> int:
        events.append(("prepare", len(queries)))
        return prepare(store, queries, **options)

    def searching(*arguments: Any, **options: Any) -> list[hotmem.SearchResult]:
        events.append(("search", len(embedded)))  # the embedding calls made so far
        return search(*arguments, **options)

    monkeypatch.setattr(hotmem, "prepare_queries", preparing)
    monkeypatch.setattr(hotmem, "search_memories", searching)
    monkeypatch.setattr(runner, "PREPARED_QUERIES", 40)
    run = runner.run_queries(store, fixture.queries, top_k=10, profile=SEMANTIC)
    texts = fixture.queries.column("query").to_pylist()
    assert len(texts) == 98
    assert events == [
        ("prepare", 40),
        *[("search", 1)] * 40,
        ("prepare", 40),
        *[("search", 2)] * 40,
        ("prepare", 18),
        *[("search", 3)] * 18,
    ]
    assert embedded == [list(dict.fromkeys(texts[s : s + 40])) for s in (0, 40, 80)]
    assert len(run.latencies_ms) == 98
    assert run.embedding_s > 0.0


def test_the_results_are_those_of_searches_embedding_their_own_query(
    store: hotmem.MemoryStore,
    fixture: Fixture,
    embedded: list[list[str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    batched = runner.run_queries(store, fixture.queries, top_k=20, profile=SEMANTIC)
    assert len(embedded) == 1
    monkeypatch.setattr(prepared, "_QUERY_VECTORS", type(prepared._QUERY_VECTORS)())
    monkeypatch.setattr(hotmem, "prepare_queries", lambda *a, **k: 0)
    alone = runner.run_queries(store, fixture.queries, top_k=20, profile=SEMANTIC)
    assert len(embedded) == 1 + len(set(fixture.queries.column("query").to_pylist()))
    assert batched.results.num_rows == alone.results.num_rows > 0
    assert batched.results.equals(alone.results)


def test_the_query_embedding_is_a_stage_of_its_own(
    fixture: Fixture, embedded: list[list[str]], tmp_path: Path
) -> None:
    runs, _, _ = evaluate_profiles(
        fixture, tmp_path, [hotmem.PROFILES["default"], SEMANTIC], cutoffs=(5, 10)
    )
    for run in runs:
        assert list(run.stages_s) == ["query_embedding", "search", "misses", "transfer", "metrics"]
        assert min(run.stages_s.values()) >= 0.0
    texts = list(dict.fromkeys(fixture.queries.column("query").to_pylist()))
    queries = set(texts)
    asked = [call for call in embedded if set(call) & queries]
    assert asked == [texts]  # the search, the misses and the transfer re-run embed none again
