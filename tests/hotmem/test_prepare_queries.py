"""hotmem.prepare_queries: query texts embedded in one batch before their searches, the same
bytes as a search's own embedding, so the same results, and no embedding left to the search."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

import hotmem
from hotmem.embedding.registry import SEMANTIC_MODEL

pytest.importorskip("onnxruntime")

from hotmem.embedding.semantic.onnx_embedder import OnnxEmbedder
from hotmem.retrieval import prepared

FACTS = {
    "m0": ("Invoices above EUR 5,000 need two approvals.", "acme-finance"),
    "m1": ("The Oslo office closes on Saturdays.", "fjord-analytics"),
    "m2": ("Production databases are backed up every night.", "acme-infra"),
    "m3": ("The on-call engineer rotates every Monday at 09:00 UTC.", "acme-infra"),
}
# Texts of several token counts (several model runs), one twice.
QUERIES = [
    "When is the Norwegian branch shut?",
    "who approves invoices",
    "backups",
    "Which engineer is on call at the start of the week, and from what time?",
    "who approves invoices",
    "nightly database backup schedule",
]


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[hotmem.MemoryStore]:
    path = tmp_path_factory.mktemp("prepare") / "s.db"
    with hotmem.open_store(path, clock=hotmem.fixed_clock("2026-01-01T00:00:00Z")) as opened:
        opened.add_space(SEMANTIC_MODEL)
        opened.add_many(
            {"memory_id": m, "fact": fact, "identifier": ident}
            for m, (fact, ident) in FACTS.items()
        )
        yield opened


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> OnnxEmbedder:
    """The search's embedder, with no query vector kept yet (for this test only)."""
    monkeypatch.setattr(prepared, "_QUERY_VECTORS", type(prepared._QUERY_VECTORS)())
    embedder = hotmem.get_embedder(SEMANTIC_MODEL)
    assert isinstance(embedder, OnnxEmbedder)
    return embedder


@pytest.fixture
def embedded(monkeypatch: pytest.MonkeyPatch) -> list[list[str]]:
    """Each ``embed_many`` call of the semantic embedder, by its texts."""
    calls: list[list[str]] = []
    original = OnnxEmbedder.embed_many

    def recorded(self: OnnxEmbedder, texts: list[str], **options: object) -> list[bytes]:
        calls.append(list(texts))
        return original(self, texts, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(OnnxEmbedder, "embed_many", recorded)
    return calls


def _rows(store: hotmem.MemoryStore, query: str) -> list[tuple[str, str, str]]:
    found = hotmem.search_memories(store, query, limit=4, profile="semantic")
    return [(r.memory_id, r.score.hex(), r.components.cosine.hex()) for r in found]


def test_prepared_vectors_are_the_vectors_of_one_text_at_a_time(
    store: hotmem.MemoryStore, fresh: OnnxEmbedder, embedded: list[list[str]]
) -> None:
    assert hotmem.prepare_queries(store, QUERIES, profile="semantic") == 5
    distinct = list(dict.fromkeys(QUERIES))
    assert embedded == [distinct]  # one batch, each text once
    kept = prepared._QUERY_VECTORS[fresh]
    assert list(kept) == distinct
    for text in distinct:
        assert kept[text] == fresh.embed_many([text])[0]  # bit for bit


def test_searches_after_prepare_embed_nothing_and_return_the_same_results(
    store: hotmem.MemoryStore,
    fresh: OnnxEmbedder,
    embedded: list[list[str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    alone = {query: _rows(store, query) for query in QUERIES}  # each search embeds its query
    assert embedded == [[q] for q in dict.fromkeys(QUERIES)]
    monkeypatch.setattr(prepared, "_QUERY_VECTORS", type(prepared._QUERY_VECTORS)())
    embedded.clear()
    assert hotmem.prepare_queries(store, QUERIES, profile="semantic") == 5
    assert {query: _rows(store, query) for query in QUERIES} == alone
    assert len(embedded) == 1
    diagnosis = hotmem.diagnose(store, QUERIES[0], "m1", profile="semantic")
    assert (diagnosis.verdict, diagnosis.rank) == ("returned", 1)
    assert len(embedded) == 1
    assert alone[QUERIES[0]][0][0] == "m1"


def test_only_the_texts_not_kept_are_embedded(
    store: hotmem.MemoryStore, fresh: OnnxEmbedder, embedded: list[list[str]]
) -> None:
    hotmem.search_memories(store, "backups", profile="semantic")
    assert hotmem.prepare_queries(store, ["backups", "deploy window"], profile="semantic") == 1
    assert embedded == [["backups"], ["deploy window"]]
    assert hotmem.prepare_queries(store, ["deploy window", "backups"], profile="semantic") == 0
    assert hotmem.prepare_queries(store, [], profile="semantic") == 0
    assert list(prepared._QUERY_VECTORS[fresh]) == ["deploy window", "backups"]


def test_the_kept_vectors_are_bounded(
    store: hotmem.MemoryStore,
    fresh: OnnxEmbedder,
    embedded: list[list[str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(prepared, "QUERY_VECTORS", 3)
    monkeypatch.setattr("hotmem.retrieval.search.QUERY_VECTORS", 3)
    assert hotmem.prepare_queries(store, ["a", "b", "c"], profile="semantic") == 3
    assert hotmem.prepare_queries(store, ["d"], profile="semantic") == 1  # "a" is dropped
    assert list(prepared._QUERY_VECTORS[fresh]) == ["b", "c", "d"]
    with pytest.raises(hotmem.ValidationError) as raised:
        hotmem.prepare_queries(store, ["a", "b", "c", "d", "a"], profile="semantic")
    assert str(raised.value) == (
        "at most 3 distinct queries a call (the query vectors a search keeps); found 4: "
        "prepare them in several calls"
    )
    assert len(embedded) == 2


def test_a_profile_without_a_model_embeds_nothing(
    store: hotmem.MemoryStore, embedded: list[list[str]]
) -> None:
    for profile in ("default", "bm25-only", None):
        assert hotmem.prepare_queries(store, QUERIES, profile=profile) == 0
    assert embedded == []


@pytest.mark.parametrize(
    ("queries", "profile", "message"),
    [
        ("backups", "semantic", "queries must be a sequence of strings; found str"),
        (["backups", 3], "semantic", "query must be a string; found int"),
        (["backups"], "nope", "unknown profile 'nope'"),
    ],
)
def test_bad_arguments_are_validation_errors(
    store: hotmem.MemoryStore, queries: object, profile: str, message: str
) -> None:
    with pytest.raises(hotmem.ValidationError, match=message):
        hotmem.prepare_queries(store, queries, profile=profile)  # type: ignore[arg-type]


def test_a_space_the_store_lacks_is_named(tmp_path: Path) -> None:
    with (
        hotmem.open_store(tmp_path / "plain.db") as plain,
        pytest.raises(hotmem.ValidationError, match="needs the vector space"),
    ):
        hotmem.prepare_queries(plain, ["backups"], profile="semantic")
