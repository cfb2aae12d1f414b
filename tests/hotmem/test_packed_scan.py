"""The packed scan of the standard library: fixed point by bitwise operations, dot products
within their margin, and the exact cosines of the distance scan (issue 13)."""

from __future__ import annotations

import math
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

import hotmem
from hotmem import packed_scan, vectors
from hotmem.embedding.hash_v1 import DIMENSION, embed, embed_bytes
from hotmem.packed_scan import SCALE, PackedScan, pack

_FLOAT32 = struct.Struct("<f")


def _fixed(value: float) -> int:
    """The stored slot of ``value``, by the definition: round half up of ``|v| * SCALE``,
    signed, plus ``SCALE``."""
    magnitude = math.floor(abs(value) * SCALE + 0.5)
    return SCALE + (-magnitude if math.copysign(1.0, value) < 0 else magnitude)


def _slot(column: int, i: int) -> int:
    return (column >> (32 * i)) & 0xFFFFFFFF


components = st.floats(min_value=-1.0, max_value=1.0, width=32) | st.sampled_from(
    [0.0, -0.0, 1.0, -1.0, 0.5 / SCALE, -0.5 / SCALE, 1.5 / SCALE, 2.5 / SCALE, 2.0**-15, 1e-40]
)


@given(st.lists(components, min_size=1, max_size=50))
def test_the_columns_hold_each_component_in_fixed_point(values: list[float]) -> None:
    # Vector i repeats values[i] in every dimension; column d's slot i is its fixed point.
    buffer = b"".join(_FLOAT32.pack(v) * DIMENSION for v in values)
    packed = pack(buffer)
    assert packed is not None
    assert packed.size == len(values)
    for d in (0, DIMENSION - 1):
        assert [_slot(packed.columns[d], i) for i in range(len(values))] == [
            _fixed(v) for v in values
        ]


@pytest.mark.parametrize("bad", [1.0000001, -1.5, 2.0, math.inf, -math.inf, math.nan])
def test_a_component_out_of_range_is_refused(bad: float) -> None:
    good = embed_bytes("copper kettle")
    broken = _FLOAT32.pack(bad) + good[4:]
    assert pack(good * 3) is not None
    assert pack(good + broken + good) is None


texts = st.lists(
    st.sampled_from(["copper", "kettle", "invoice", "tuesday", "雪", "東京", "!", "badge"]),
    min_size=1,
    max_size=5,
).map(" ".join)


@given(facts=st.lists(texts, min_size=1, max_size=40), query=texts)
def test_packed_dot_products_are_within_the_margin_of_the_exact_cosines(
    facts: list[str], query: str
) -> None:
    with hotmem.open_store(":memory:") as store:
        store.add_many([{"fact": f, "identifier": "a"} for f in facts])
        index = store.vector_index()
        vector = embed(query)
        if not any(vector):
            return  # a zero query is never packed: every cosine is 0
        packed = pack(index.vectors)
        assert packed is not None
        scope = index.scope(None)
        scanned = packed_scan.scan(
            packed, index.vectors, vector, scope, index.zero, index.importances, 1.0
        )
        exact = index.scan(vector, scope)  # the distance scan (below _PACK_FROM)
        assert not isinstance(exact, PackedScan)
        margin = packed_scan.margin(vector)
        assert scanned.margin == margin
        assert margin < 2e-3
        for p, value in zip(scope, scanned.approximations(scope), strict=True):
            assert abs(value - exact.cosine(p)) <= margin
            assert scanned.cosine(p) == exact.cosine(p)  # the same bits


@given(
    facts=st.lists(texts, min_size=1, max_size=40),
    query=texts,
    identifier=st.sampled_from([None, "b"]),
    data=st.data(),
)
def test_the_offsets_from_a_value_are_those_whose_dot_product_reaches_it(
    facts: list[str], query: str, identifier: str | None, data: st.DataObject
) -> None:
    # Found by comparing slots as integers, they are what comparing the floats gives: at a
    # value equal to a dot product and the floats either side of it too.
    with hotmem.open_store(":memory:") as store:
        store.add_many([{"fact": f, "identifier": "ab"[i % 2]} for i, f in enumerate(facts)])
        index = store.vector_index()
        vector = embed(query)
        packed = pack(index.vectors)
        scope = index.scope(identifier)
        if not any(vector) or packed is None or not scope:
            return
        scanned = packed_scan.scan(
            packed, index.vectors, vector, scope, index.zero, index.importances, 1.0
        )
        values = scanned.approximations(scope)
        some = data.draw(st.sampled_from(values))
        low = data.draw(
            st.sampled_from([some, math.nextafter(some, -2.0), math.nextafter(some, 2.0)])
            | st.floats(allow_nan=True, allow_infinity=True)
            | st.sampled_from([-1.0, 0.0, 1.0, 1e300, -1e300, 5e-324])
        )
        expected = [i for i, value in enumerate(values) if low <= value]
        assert scanned._offsets_from(low) == expected


def test_the_index_packs_on_its_second_wide_scan_only() -> None:
    rows = [
        {
            "fact": f"copper kettle {i} badge",
            "identifier": "a" if i < 4500 else "b",
            "memory_id": f"m-{i:04d}",
        }
        for i in range(5000)
    ]
    with hotmem.open_store(":memory:", accelerator="off") as store:
        store.add_many(rows)
        index = store.vector_index()
        query = embed("copper kettles")
        first = index.scan(query, index.scope(None))
        assert not isinstance(first, PackedScan)
        assert index.packed is None
        small = index.scan(query, index.scope("b"))  # 500 memories: never packed
        assert not isinstance(small, PackedScan)
        assert index.packed is None
        second = index.scan(query, index.scope("a"))  # 4,500 of 5,000: wide
        assert isinstance(second, PackedScan)
        assert index.packed is not None
        assert index.packed.nbytes == len(index.vectors)
        for p in index.scope("a"):
            assert second.cosine(p) == first.cosine(p)
        floor = sorted(first.cosine(p) for p in index.scope("a"))[2000]
        assert second.at_least(floor) == {
            p: value for p, value in first.at_least(floor).items() if p in index.scope("a")
        }
        packed = hotmem.search_memories(store, "copper kettle badge", limit=10)
    with (
        pytest.MonkeyPatch.context() as patch,
        hotmem.open_store(":memory:", accelerator="off") as store,
    ):
        patch.setattr(vectors, "_PACK_FROM", 10**9)  # never packed
        store.add_many(rows)
        exact = hotmem.search_memories(store, "copper kettle badge", limit=10)
        assert store.vector_index().packed is None
    assert [r.to_dict() for r in packed] == [r.to_dict() for r in exact]


def test_a_store_whose_vectors_cannot_be_packed_keeps_the_distance_scan() -> None:
    with hotmem.open_store(":memory:", accelerator="off") as store:
        store.add_many([{"fact": f"copper kettle {i}", "identifier": "a"} for i in range(5000)])
        index = store.vector_index()
        index.vectors = _FLOAT32.pack(1.5) + index.vectors[4:]  # not a unit vector
        query = embed("copper kettles")
        for _ in range(3):
            assert not isinstance(index.scan(query, index.scope(None)), PackedScan)
        assert index.packed is False
