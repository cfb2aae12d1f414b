"""A profile's ranking fused from the channel table equals hotmem.search_memories: ids, order
and score bits, with floors, gates, RRF depths and ties by memory_id; the table refuses a
profile whose candidates it might not hold."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import polars as pl
import pyarrow as pa
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

import hotmem
from hotmem_eval.channel_frame import channel_table, fused_ranking
from hotmem_eval.errors import EvalError
from hotmem_eval.fixtures import load_fixture
from hotmem_eval.ingest import open_fixture_store

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = [
    ROOT / "benchmarks" / "retrieval",
    ROOT / "benchmarks" / "retrieval" / "external" / "kgh-retrieval",
]
SEMANTIC = hotmem.SEMANTIC_MODEL
Row = tuple[str, int, str, str]


def searched(
    store: hotmem.MemoryStore, queries: pa.Table, profile: hotmem.Profile, limit: int
) -> list[Row]:
    rows = []
    for query in queries.select(["query_id", "query", "identifier"]).to_pylist():
        for r in hotmem.search_memories(
            store, query["query"], identifier=query["identifier"], limit=limit, profile=profile
        ):
            rows.append((str(query["query_id"]), r.rank, r.memory_id, r.score.hex()))
    return sorted(rows)


def fused(table: pa.Table, profile: hotmem.Profile, limit: int) -> list[Row]:
    frame = fused_ranking(table, profile, limit=limit)
    return sorted((q, rank, m, score.hex()) for q, rank, m, score in frame.rows())


@pytest.mark.slow
@pytest.mark.parametrize("directory", FIXTURES, ids=["committed", "kgh-retrieval"])
def test_every_profile_on_both_fixtures_equals_the_search(directory: Path) -> None:
    pytest.importorskip("onnxruntime")
    fixture = load_fixture(directory / "corpus.jsonl", directory / "queries.jsonl")
    with open_fixture_store(":memory:", fixture.corpus, spaces=[SEMANTIC]) as store:
        table = channel_table(store, fixture.queries, spaces=(hotmem.MODEL_NAME, SEMANTIC))
        names = [name for name, p in hotmem.PROFILES.items() if p.reranker is None]
        assert names == ["default", "cosine-only", "bm25-only", "rrf", "semantic", "semantic-only"]
        for name in names:
            profile = hotmem.PROFILES[name]
            for limit in (1, 5, 20):
                assert fused(table, profile, limit) == searched(
                    store, fixture.queries, profile, limit
                ), (name, limit)


WORDS = ["invoice", "invoices", "deploy", "tuesday", "badge", "coffee", "approve", "eur", "5"]
IDENTIFIERS = ["acme", "beta"]

vectors = st.one_of(
    st.none(),
    st.builds(
        hotmem.VectorChannel,
        weight=st.sampled_from([0.0, 0.3, 0.6, 1.0]),
        floor=st.sampled_from([-1.0, 0.0, 0.2, 0.4, 0.7]),
    ),
)
lexicals = st.one_of(
    st.none(),
    st.builds(
        hotmem.LexicalChannel,
        weight=st.sampled_from([0.0, 0.2, 1.0]),
        gate=st.sampled_from([None, 0.1, 0.3]),
    ),
)


@st.composite
def profiles(draw: st.DrawFn) -> hotmem.Profile:
    vector, lexical = draw(vectors), draw(lexicals)
    if vector is None and lexical is None:
        lexical = hotmem.LexicalChannel()
    if vector is None and lexical is not None and lexical.gate is not None:
        lexical = hotmem.LexicalChannel(weight=lexical.weight)  # a gate needs the vector
    return hotmem.Profile(
        "drawn",
        vector=vector,
        lexical=lexical,
        importance=draw(st.sampled_from([0.0, 0.2, 1.0])),
        fusion=draw(st.sampled_from(["weighted", "rrf"])),
        rrf_k=draw(st.sampled_from([1, 60])),
        depth=draw(st.integers(1, 6)),
    )


@settings(max_examples=60, deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            st.lists(st.sampled_from(WORDS), max_size=5).map(" ".join),
            st.sampled_from(IDENTIFIERS),
            st.sampled_from([0.0, 0.5, 0.5, 1.0]),
        ),
        min_size=1,
        max_size=20,
    ),
    texts=st.lists(
        st.lists(st.sampled_from([*WORDS, "zzz"]), max_size=4).map(" ".join), min_size=1, max_size=3
    ),
    identifier=st.sampled_from([None, *IDENTIFIERS]),
    profile=profiles(),
    limit=st.integers(1, 12),
    accelerator=st.sampled_from(["off", "numpy"]),
)
@example(  # all-equal scores: memory_id alone orders them
    rows=[("invoice", "acme", 0.5)] * 6,
    texts=["invoice"],
    identifier=None,
    profile=hotmem.PROFILES["default"],
    limit=3,
    accelerator="off",
)
@example(  # reciprocal-rank ties at a shallow depth
    rows=[("invoice deploy", "acme", 0.5), ("invoice", "beta", 0.2), ("deploy", "acme", 0.9)],
    texts=["invoice deploy"],
    identifier=None,
    profile=hotmem.Profile("shallow", fusion="rrf", rrf_k=1, depth=1),
    limit=5,
    accelerator="off",
)
def test_a_fused_ranking_is_the_search_for_any_profile(
    rows: list[tuple[str, str, float]],
    texts: list[str],
    identifier: str | None,
    profile: hotmem.Profile,
    limit: int,
    accelerator: str,
) -> None:
    queries = pa.table(
        {
            "query_id": [f"q{n}" for n in range(len(texts))],
            "query": texts,
            "identifier": [identifier] * len(texts),
        }
    )
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "s.db"
        with hotmem.open_store(path, accelerator=accelerator) as store:  # type: ignore[arg-type]
            store.add_many(
                {
                    "fact": fact or "-",
                    "identifier": where,
                    "importance": importance,
                    "memory_id": f"m-{(n * 7) % 10}-{n}",
                }
                for n, (fact, where, importance) in enumerate(rows)
            )
            table = channel_table(store, queries)
            assert fused(table, profile, limit) == searched(store, queries, profile, limit)


def test_the_table_holds_only_candidates_from_its_floor(tmp_path: Path) -> None:
    queries = pa.table({"query_id": ["q"], "query": ["invoice"], "identifier": [None]})
    with hotmem.open_store(tmp_path / "s.db") as store:
        store.add("Invoices need two approvals.", identifier="a", memory_id="m-match")
        store.add("Coffee on Mondays.", identifier="a", memory_id="m-far")
        full = channel_table(store, queries)
        floored = channel_table(store, queries, min_cosine=0.9)
    assert full.column("memory_id").to_pylist() == ["m-match", "m-far"]
    assert floored.column("memory_id").to_pylist() == ["m-match"]  # the lexical match stays
    low = hotmem.Profile("low", vector=hotmem.VectorChannel(floor=0.1))
    with pytest.raises(EvalError, match=re.escape("floor 0.1, below the table's min_cosine 0.9")):
        fused_ranking(floored, low, limit=5)
    with pytest.raises(EvalError, match="reranks with MMR"):
        fused_ranking(full, hotmem.PROFILES["default+mmr"], limit=5)
    with pytest.raises(EvalError, match="does not hold"):
        fused_ranking(full, hotmem.PROFILES["semantic"], limit=5)


@settings(max_examples=40, deadline=None)
@given(
    rows=st.lists(
        st.tuples(
            st.lists(st.sampled_from(WORDS), max_size=5).map(" ".join),
            st.sampled_from(IDENTIFIERS),
        ),
        min_size=1,
        max_size=20,
    ),
    texts=st.lists(
        st.lists(st.sampled_from([*WORDS, "zzz"]), max_size=4).map(" ".join), min_size=1, max_size=3
    ),
    identifier=st.sampled_from([None, *IDENTIFIERS]),
    at=st.integers(0, 10**6),
    accelerator=st.sampled_from(["off", "numpy"]),
)
@example(  # one memory, whose cosine is the floor exactly
    rows=[("invoice deploy", "acme")], texts=["invoice"], identifier=None, at=0, accelerator="numpy"
)
def test_a_table_from_a_floor_is_the_whole_table_cut_there(
    rows: list[tuple[str, str]], texts: list[str], identifier: str | None, at: int, accelerator: str
) -> None:
    """The candidates from a floor (each engine's prefilter) are the rows of the table of
    every memory with a lexical match or a cosine at the floor: the floor is one of the
    table's own cosines, so a row sits on it exactly."""
    queries = pa.table(
        {
            "query_id": [f"q{n}" for n in range(len(texts))],
            "query": texts,
            "identifier": [identifier] * len(texts),
        }
    )
    with (
        tempfile.TemporaryDirectory() as directory,
        hotmem.open_store(Path(directory) / "s.db", accelerator=accelerator) as store,  # type: ignore[arg-type]
    ):
        store.add_many(
            {"fact": fact or "-", "identifier": where, "memory_id": f"m{n}"}
            for n, (fact, where) in enumerate(rows)
        )
        whole = pl.from_arrow(channel_table(store, queries))
        assert isinstance(whole, pl.DataFrame)
        cosines = sorted(whole["cosine:hotmem-hash-v1"].to_list()) or [0.5]
        floor = max(cosines[at % len(cosines)], -1.0)
        cut = pl.from_arrow(channel_table(store, queries, min_cosine=floor))
    kept = pl.col("bm25_raw").is_not_null() | (pl.col("cosine:hotmem-hash-v1") >= floor)
    assert isinstance(cut, pl.DataFrame)
    assert cut.equals(whole.filter(kept))
