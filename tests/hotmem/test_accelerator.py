"""The numpy vector scan gives the stdlib scan's exact cosines: the same results, bit for bit."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import hotmem
from hotmem import vectors
from hotmem.accelerator import MatrixScan
from hotmem.embedding.hash_v1 import embed


@pytest.fixture(autouse=True, scope="module")
def _accelerate_small_scopes() -> Iterator[None]:
    """Scan with numpy whatever the scope's size: these stores are small."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(vectors, "_ACCELERATE_FROM", 0)
        yield


WORDS = ["invoice", "approval", "deploy", "tuesday", "badge", "kettle", "copper", "雪", "東京", "!"]
facts = st.lists(st.sampled_from(WORDS), min_size=1, max_size=6).map(" ".join)


def _results(
    path: Path, accelerator: str, query: str, **options: object
) -> list[dict[str, object]]:
    with hotmem.open_store(path, accelerator=accelerator) as store:  # type: ignore[arg-type]
        assert store.accelerated == (accelerator == "numpy")
        return [r.to_dict() for r in hotmem.search_memories(store, query, **options)]


@given(
    rows=st.lists(st.tuples(facts, st.sampled_from(["a", "b"])), min_size=1, max_size=30),
    query=st.lists(st.sampled_from([*WORDS, "zzz"]), min_size=1, max_size=3).map(" ".join),
    identifier=st.sampled_from([None, "a"]),
    limit=st.sampled_from([1, 5, 40]),
    floor=st.sampled_from([-1.0, 0.0, 0.2, 0.4, 1.0]),
)
@example(rows=[("!", "a")], query="!", identifier=None, limit=5, floor=-1.0)  # zero vectors
def test_both_scans_rank_alike_to_the_bit(
    tmp_path_factory: pytest.TempPathFactory,
    rows: list[tuple[str, str]],
    query: str,
    identifier: str | None,
    limit: int,
    floor: float,
) -> None:
    path = tmp_path_factory.mktemp("store") / "s.db"
    with hotmem.open_store(path, accelerator="off") as store:
        store.add_many(
            [
                {"fact": f, "identifier": i, "memory_id": f"m-{n:03d}"}
                for n, (f, i) in enumerate(rows)
            ]
        )
    options = {"identifier": identifier, "limit": limit, "min_similarity": floor}
    assert _results(path, "numpy", query, **options) == _results(path, "off", query, **options)


def test_the_numpy_scan_keeps_exactly_the_stdlib_positions(tmp_path: Path) -> None:
    # Thresholds at the exact cosines of stored vectors: the pre-filter's margin must keep them.
    with hotmem.open_store(":memory:", accelerator="numpy") as store:
        store.add_many(
            [{"fact": f"copper kettle number {i}", "identifier": "a"} for i in range(300)]
        )
        index = store.vector_index()
        query = embed("copper kettles")
        stdlib = index.scan(query, index.scope(None))
        accelerated = index.scan(query, index.scope(None), accelerated=True)
        assert isinstance(accelerated, MatrixScan)
        cosines = sorted({stdlib.cosine(p) for p in range(len(index))})
        for floor in [-1.0, 0.0, *cosines[:: len(cosines) // 20 or 1], cosines[-1], 1.0]:
            assert accelerated.at_least(floor) == stdlib.at_least(floor)
        for p in range(len(index)):
            assert accelerated.cosine(p) == stdlib.cosine(p)


def test_an_unknown_accelerator_is_refused() -> None:
    with pytest.raises(hotmem.ValidationError, match="accelerator must be one of 'auto'"):
        hotmem.open_store(":memory:", accelerator="gpu")  # type: ignore[arg-type]


def test_the_index_is_not_walked_by_full_garbage_collections() -> None:
    # Its per-memory columns are tuples of numbers and strings, which leave the collector's
    # lists after one collection; lists of the same would be walked by every full collection,
    # during whichever search triggers it (13 ms at 100,000 memories).
    with hotmem.open_store(":memory:") as store:
        store.add_many(
            [{"fact": f"fact {i}", "identifier": "a", "memory_id": f"m-{i}"} for i in range(50)]
        )
        index = store.vector_index()
        gc.collect()
        columns = (index.rowids, index.memory_ids, index.identifiers, index.importances)
        assert [gc.is_tracked(column) for column in columns] == [False] * 4
        assert not gc.is_tracked(index.position)


def test_positions_by_rowid_are_the_index_positions() -> None:
    # An array by rowid while rowids are dense (what the lexical reads map matches with), the
    # dict itself once they are sparse; the same values either way.
    with hotmem.open_store(":memory:") as store:
        store.add_many(
            [
                {"fact": f"fact {i}", "identifier": "ab"[i % 2], "memory_id": f"m-{i}"}
                for i in range(20)
            ]
        )
        index = store.vector_index()
        by_rowid = index.positions_by_rowid()
        assert not isinstance(by_rowid, dict)
        assert {r: by_rowid[r] for r in index.position} == index.position
        assert index.positions_by_rowid() is by_rowid  # made once
        sparse = vectors.VectorIndex(
            rowids=(1, 10**6),
            memory_ids=("a", "b"),
            identifiers=("x", "x"),
            importances=(0.0, 0.0),
            vectors=bytes(2 * 256),
            zero=frozenset({0, 1}),
            position={1: 0, 10**6: 1},
        )
        assert sparse.positions_by_rowid() is sparse.position
