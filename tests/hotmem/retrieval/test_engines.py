"""The numpy engine equals the reference engine: ids, order, score bits, components, explain.

The reference engine (``accelerator="off"``) is the ranking's definition, computed plainly;
the numpy engine (``accelerator="numpy"``) prefilters cosines by a float32 matrix product and
confirms exactly (``hotmem/retrieval/cosines.py``). One property holds them equal on random
stores, queries, scopes, limits and profiles, with pinned degenerate cases.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import hotmem

pytest.importorskip("numpy")

WORDS = ["invoice", "invoices", "deploy", "tuesday", "badge", "coffee", "approve", "eur", "5"]
TEXTS = [*WORDS, "東京", "月曜日", "café", "!!!"]
IDENTIFIERS = ["acme", "beta", "gamma"]
GATED = hotmem.Profile(
    "gated",
    vector=hotmem.VectorChannel(weight=0.5, floor=0.3),
    lexical=hotmem.LexicalChannel(weight=0.3, gate=0.1),
    importance=0.2,
)
SHALLOW = hotmem.Profile(
    "rrf-shallow",
    vector=hotmem.VectorChannel(weight=0.7, floor=0.1),
    lexical=hotmem.LexicalChannel(weight=1.3),
    importance=0.0,
    fusion="rrf",
    rrf_k=5,
    depth=3,
)
PROFILES: list[str | hotmem.Profile] = [
    "default",
    "bm25-only",
    "cosine-only",
    "rrf",
    "default+mmr",
    GATED,
    SHALLOW,
]
Row = tuple[object, ...]


def _row(r: hotmem.SearchResult) -> Row:
    c = r.components
    return (
        r.memory_id,
        r.score.hex(),
        c.cosine.hex(),
        c.bm25_raw,
        c.bm25_normalised.hex(),
        r.fused_rank,
    )


def _explained(e: hotmem.Explanation) -> Row:
    return (e.score.hex(), e.passes_floor, e.in_scope, e.components, e.vector_rank, e.lexical_rank)


def both(
    path: Path,
    query: str,
    *,
    identifier: str | None,
    limit: int,
    profile: str | hotmem.Profile,
    min_similarity: float | None = None,
    explained: tuple[str, ...] = (),
) -> tuple[list[Row], list[Row]]:
    """Each engine's search rows then explain rows, reference first."""
    found = []
    for accelerator in ("off", "numpy"):
        with hotmem.open_store(path, accelerator=accelerator) as store:
            results = hotmem.search_memories(
                store,
                query,
                identifier=identifier,
                limit=limit,
                profile=profile,
                min_similarity=min_similarity,
            )
            rows = [_row(r) for r in results]
            for memory_id in explained:
                rows.append(
                    _explained(
                        hotmem.explain(
                            store, query, memory_id, identifier=identifier, profile=profile
                        )
                    )
                )
            found.append(rows)
    return found[0], found[1]


memories = st.lists(
    st.tuples(
        st.lists(st.sampled_from(TEXTS), max_size=6).map(" ".join),
        st.sampled_from(IDENTIFIERS),
        st.sampled_from([0.0, 0.25, 0.5, 0.5, 1.0]),
    ),
    max_size=30,
)


def _store(directory: str, rows: list[tuple[str, str, float]]) -> Path:
    path = Path(directory) / "s.db"
    with hotmem.open_store(path, clock=hotmem.fixed_clock("2026-01-01T00:00:00Z")) as store:
        store.add_many(
            {
                "fact": fact or "-",
                "identifier": identifier,
                "importance": importance,
                "memory_id": f"m-{(n * 7) % 100:02d}-{n}",
            }
            for n, (fact, identifier, importance) in enumerate(rows)
        )
    return path


@given(
    rows=memories,
    query=st.lists(st.sampled_from([*TEXTS, "the", "zzz"]), max_size=4).map(" ".join),
    identifier=st.sampled_from([None, *IDENTIFIERS, "nobody"]),
    limit=st.integers(1, 12),
    profile=st.sampled_from(PROFILES),
    floor=st.sampled_from([None, -1.0, 0.0, 0.2, 0.5]),
)
@example(  # an empty scope
    rows=[("invoice", "acme", 0.5)],
    query="invoice",
    identifier="nobody",
    limit=5,
    profile="default",
    floor=None,
)
@example(  # all-equal scores: memory_id alone orders them
    rows=[("invoice", "acme", 0.5)] * 8,
    query="invoice",
    identifier=None,
    limit=5,
    profile="default",
    floor=None,
)
@example(  # a term in every memory: FTS5's IDF clamp
    rows=[
        ("invoice deploy", "acme", 0.5),
        ("invoice", "beta", 0.2),
        ("invoice badge", "acme", 0.9),
    ],
    query="invoice",
    identifier=None,
    limit=3,
    profile="rrf",
    floor=None,
)
@example(  # every memory a candidate by the floor, zero vectors among them
    rows=[("!!!", "acme", 0.5), ("", "acme", 1.0), ("東京", "beta", 0.0)],
    query="!!!",
    identifier=None,
    limit=5,
    profile="default",
    floor=-1.0,
)
def test_the_numpy_engine_is_the_reference(
    rows: list[tuple[str, str, float]],
    query: str,
    identifier: str | None,
    limit: int,
    profile: str | hotmem.Profile,
    floor: float | None,
) -> None:
    if floor is not None and profile == "bm25-only":
        floor = None  # a profile without a vector channel takes no floor
    with tempfile.TemporaryDirectory() as directory:
        path = _store(directory, rows)
        explained = tuple(f"m-{(n * 7) % 100:02d}-{n}" for n in range(min(len(rows), 3)))
        reference, numpy = both(
            path,
            query,
            identifier=identifier,
            limit=limit,
            profile=profile,
            min_similarity=floor,
            explained=explained,
        )
    assert numpy == reference


def test_a_cosine_exactly_at_the_floor_is_a_candidate_in_both(tmp_path: Path) -> None:
    path = _store(
        str(tmp_path), [(w, "acme", 0.5) for w in ("invoice eur", "deploy badge", "coffee")]
    )
    with hotmem.open_store(path, accelerator="off") as store:
        cosines = sorted(
            hotmem.explain(store, "invoices", m.memory_id).components.cosine for m in store
        )
    for floor in cosines:
        reference, numpy = both(
            path, "invoices", identifier=None, limit=5, profile="cosine-only", min_similarity=floor
        )
        assert numpy == reference
        assert len(reference) == sum(c >= floor for c in cosines)


@given(
    rows=memories,
    query=st.lists(st.sampled_from([*TEXTS, "the", "zzz"]), max_size=4).map(" ".join),
    identifier=st.sampled_from([None, *IDENTIFIERS]),
    limit=st.integers(1, 4),
    profile=st.sampled_from(PROFILES),
)
@example(  # all-equal scores: the rank of a tie is its memory_id's place
    rows=[("invoice", "acme", 0.5)] * 8,
    query="invoice",
    identifier=None,
    limit=2,
    profile="default",
)
def test_a_diagnosed_rank_is_the_deep_search_rank_in_both_engines(
    rows: list[tuple[str, str, float]],
    query: str,
    identifier: str | None,
    limit: int,
    profile: str | hotmem.Profile,
) -> None:
    """diagnose_many finds a rank without ranking the whole scope (weighted fusion: only the
    candidates scoring at least the memory's score): it equals the memory's place in a search
    deep enough to hold every candidate, and each diagnosis equals diagnose's."""
    with tempfile.TemporaryDirectory() as directory:
        path = _store(directory, rows)
        ids = [f"m-{(n * 7) % 100:02d}-{n}" for n in range(len(rows))]
        found = []
        for accelerator in ("off", "numpy"):
            with hotmem.open_store(path, accelerator=accelerator) as store:
                deep = hotmem.search_memories(
                    store, query, identifier=identifier, limit=100, profile=profile
                )
                place = {r.memory_id: r.rank for r in deep}
                many = hotmem.diagnose_many(
                    store, query, ids, identifier=identifier, limit=limit, profile=profile
                )
                for memory_id, d in zip(ids, many, strict=True):
                    assert d == hotmem.diagnose(
                        store,
                        query,
                        memory_id,
                        identifier=identifier,
                        limit=limit,
                        profile=profile,
                    )
                    if d.verdict in {"returned", "outranked"}:
                        assert d.rank == place.get(memory_id)
                        assert list(d.above) == deep[: min(limit, (d.rank or limit + 1) - 1)]
                    else:
                        assert memory_id not in place
                found.append([(d.verdict, d.rank, d.detail) for d in many])
    assert found[0] == found[1]
